#include "exec/range_data.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "tensor/half.h"
#include "util/error.h"
#include "util/strings.h"

namespace onnxstream {

namespace {
std::string trim(std::string_view s) {
    size_t b = 0, e = s.size();
    while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
    while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
    return std::string(s.substr(b, e - b));
}

std::string format_float(float v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
    return buf;
}
} // namespace

RangeMap parse_range_data(const std::string &text, const std::string &source) {
    RangeMap ranges;
    int line_no = 0;
    for (std::string_view raw : split(text, '\n')) {
        ++line_no;
        std::string line = trim(raw);
        if (line.empty() || line[0] == '#') continue;
        auto parts = split(line, ',');
        if (parts.size() != 3)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, source, ":", line_no, ": expected `name,min,max`, got '", line, "'");
        std::string name = trim(parts[0]);
        double lo = 0, hi = 0;
        if (name.empty()) fail(ONNXSTREAM_ERR_INVALID_MODEL, source, ":", line_no, ": empty tensor name");
        if (!parse_double(trim(parts[1]), lo) || !parse_double(trim(parts[2]), hi))
            fail(ONNXSTREAM_ERR_INVALID_MODEL, source, ":", line_no, ": min and max of '", name,
                 "' must be decimal numbers, got '", trim(parts[1]), "' and '", trim(parts[2]), "'");
        if (!std::isfinite(lo) || !std::isfinite(hi) || std::fabs(lo) > 3e38 || std::fabs(hi) > 3e38)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, source, ":", line_no, ": the range of '", name, "' is not finite");
        if (lo > hi)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, source, ":", line_no, ": the range of '", name, "' has min ", lo,
                 " > max ", hi);
        if (ranges.count(name))
            fail(ONNXSTREAM_ERR_INVALID_MODEL, source, ":", line_no, ": '", name, "' has a second range");
        ranges[name] = ActivationRange{static_cast<float>(lo), static_cast<float>(hi)};
    }
    return ranges;
}

RangeMap read_range_data(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(ONNXSTREAM_ERR_IO, "cannot open range data ", path, ": ", std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) fail(ONNXSTREAM_ERR_IO, "cannot read range data ", path);
    return parse_range_data(text.str(), path);
}

void write_range_data(const std::string &path, const RangeMap &ranges) {
    std::string text;
    for (const auto &[name, r] : ranges) text += name + "," + format_float(r.min) + "," + format_float(r.max) + "\n";
    const std::string tmp = path + ".tmp" + std::to_string(static_cast<long>(::getpid()));
    FILE *f = std::fopen(tmp.c_str(), "wb");
    if (!f) fail(ONNXSTREAM_ERR_IO, "cannot create ", tmp, ": ", std::strerror(errno));
    bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    ok = std::fflush(f) == 0 && ok;
    ok = ::fsync(fileno(f)) == 0 && ok;
    ok = std::fclose(f) == 0 && ok;
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        int err = errno;
        std::remove(tmp.c_str());
        fail(ONNXSTREAM_ERR_IO, "cannot write range data ", path, ": ", std::strerror(err));
    }
}

std::string range_key(const Graph &graph, int value) {
    const Value &v = graph.values()[static_cast<size_t>(value)];
    if (v.producer < 0) return v.name;
    const Node &n = graph.nodes()[static_cast<size_t>(v.producer)];
    return !n.outputs.empty() && n.outputs[0] == value ? n.line->name : std::string();
}

bool is_w8a8_op_type(const std::string &type) { return type == "Conv" || type == "MatMul" || type == "Gemm"; }

std::vector<NodeActivationRanges> resolve_ranges(const Graph &graph, const RangeMap &ranges, const std::string &source) {
    std::map<std::string, int> known; // key -> 1
    for (int in : graph.inputs()) known[graph.values()[static_cast<size_t>(in)].name] = 1;
    for (const Node &n : graph.nodes()) known[n.line->name] = 1;
    for (const auto &[name, r] : ranges)
        if (!known.count(name))
            fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, source, ": '", name,
                 "' is neither an op nor a graph input of the model (range data of another model?)");
    std::vector<NodeActivationRanges> out(graph.nodes().size());
    for (const Node &n : graph.nodes()) {
        if (!is_w8a8_op_type(n.line->type) || n.inputs.empty() || n.inputs[0].kind != NodeInput::Value ||
            n.outputs.empty())
            continue;
        auto in = ranges.find(range_key(graph, n.inputs[0].value));
        auto o = ranges.find(range_key(graph, n.outputs[0]));
        if (in == ranges.end() || o == ranges.end()) continue;
        NodeActivationRanges &r = out[static_cast<size_t>(n.index)];
        r.present = true;
        r.input = in->second;
        r.output = o->second;
    }
    return out;
}

RangeRecorder::RangeRecorder(const Graph &graph) : keys_(graph.values().size()) {
    for (const Node &n : graph.nodes()) {
        if (!is_w8a8_op_type(n.line->type)) continue;
        if (!n.inputs.empty() && n.inputs[0].kind == NodeInput::Value)
            keys_[static_cast<size_t>(n.inputs[0].value)] = range_key(graph, n.inputs[0].value);
        if (!n.outputs.empty()) keys_[static_cast<size_t>(n.outputs[0])] = range_key(graph, n.outputs[0]);
    }
}

void RangeRecorder::observe(int value, const Tensor &t) {
    const std::string &key = keys_.at(static_cast<size_t>(value));
    if (key.empty() || t.empty() || (t.dtype() != DType::F32 && t.dtype() != DType::F16)) return;
    const size_t n = static_cast<size_t>(t.numel());
    constexpr size_t kMaxSamples = size_t(1) << 20;
    const size_t step = n > kMaxSamples ? (n + kMaxSamples - 1) / kMaxSamples : 1;
    std::vector<float> s;
    s.reserve(n / step + 1);
    for (size_t i = 0; i < n; i += step) {
        float v = t.dtype() == DType::F32 ? t.data<float>()[i] : half_to_float(t.data<uint16_t>()[i]);
        if (std::isfinite(v)) s.push_back(v);
    }
    if (s.empty()) return;
    const size_t lo_rank = static_cast<size_t>(static_cast<double>(s.size() - 1) * 1e-4);
    const size_t hi_rank = s.size() - 1 - lo_rank;
    std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(lo_rank), s.end());
    const float lo = s[lo_rank];
    std::nth_element(s.begin() + static_cast<std::ptrdiff_t>(lo_rank), s.begin() + static_cast<std::ptrdiff_t>(hi_rank), s.end());
    const float hi = s[hi_rank];
    auto it = ranges_.find(key);
    if (it == ranges_.end()) ranges_[key] = ActivationRange{lo, hi};
    else {
        it->second.min = std::min(it->second.min, lo);
        it->second.max = std::max(it->second.max, hi);
    }
}

} // namespace onnxstream

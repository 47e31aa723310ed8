#include "exec/profiler.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>

#include "exec/op_flops.h"
#include "util/strings.h"

namespace onnxstream {

namespace {

std::string json_string(const std::string &s) { return "\"" + json_escape(s) + "\""; }

// Trace timestamps are microseconds; keep nanosecond precision as decimals.
std::string us(uint64_t ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%" PRIu64 ".%03u", ns / 1000, static_cast<unsigned>(ns % 1000));
    return buf;
}

std::string u64(uint64_t v) { return std::to_string(v); }

std::string fixed(double v, int decimals) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string thread_name(int track) {
    return track == 0 ? "ops and synchronous weight reads (run thread)"
                      : "weight reads (read-ahead thread " + std::to_string(track) + ")";
}

std::string info_text(const TensorInfo &info, const char *prefix = "") {
    std::string s = prefix;
    s += dtype_name(info.dtype);
    s += '[';
    for (size_t i = 0; i < info.shape.size(); ++i) s += (i ? "," : "") + std::to_string(info.shape[i]);
    return s + ']';
}

uint64_t info_bytes(const TensorInfo &info) {
    double elements = 1;
    for (int64_t d : info.shape) elements *= static_cast<double>(d);
    return static_cast<uint64_t>(elements * static_cast<double>(dtype_size(info.dtype)));
}

} // namespace

void Profiler::prepare(const Graph &graph, const Plan &plan) {
    if (graph_ == &graph && plan_ == &plan) return;
    invalidate();
    const auto &nodes = graph.nodes();
    facts_.resize(nodes.size());
    for (const Node &node : nodes) {
        // Logical (NCHW) shapes, whatever layout the op runs in.
        OpFacts &f = facts_[static_cast<size_t>(node.index)];
        std::vector<Shape> in_shapes, out_shapes;
        for (const NodeInput &ni : node.inputs) {
            std::string text = "-";
            Shape shape;
            if (ni.kind == NodeInput::Value && plan.values[static_cast<size_t>(ni.value)]) {
                const TensorInfo &info = *plan.values[static_cast<size_t>(ni.value)];
                text = info_text(info);
                f.activation_bytes += info_bytes(info);
                shape = info.shape;
            } else if (ni.kind == NodeInput::Weight) {
                const TensorInfo info{ni.weight.dtype, ni.weight.shape, {}};
                text = info_text(info, "w:");
                f.weight_bytes += info_bytes(info);
                shape = ni.weight.info().shape; // an int4 weight's FLOPs follow its declared shape
                if (file_index_.emplace(ni.weight.file, static_cast<int>(files_.size())).second)
                    files_.push_back(ni.weight.file);
            }
            f.inputs += (f.inputs.empty() ? "" : ", ") + text;
            in_shapes.push_back(std::move(shape));
        }
        for (const TensorInfo &info : plan.node_outputs[static_cast<size_t>(node.index)]) {
            f.outputs += (f.outputs.empty() ? "" : ", ") + info_text(info);
            f.activation_bytes += info_bytes(info);
            out_shapes.push_back(info.shape);
        }
        f.flops = op_flops(node.line->type, node.attrs, in_shapes, out_shapes);
    }
    read_threads_.reserve(4);
    // Weights read in row chunks come once per chunk: room for a few per weight before any growth.
    for (Buffers *b : {&current_, &last_}) {
        b->ops.reserve(nodes.size());
        b->reads.reserve(plan.fetch_order.size() * 4 + 64);
    }
    graph_ = &graph;
    plan_ = &plan;
}

void Profiler::invalidate() {
    std::lock_guard<std::mutex> lock(reads_mutex_);
    graph_ = nullptr;
    plan_ = nullptr;
    facts_.clear();
    files_.clear();
    file_index_.clear();
    current_ = Buffers();
    last_ = Buffers();
}

void Profiler::begin_run() {
    std::lock_guard<std::mutex> lock(reads_mutex_);
    start_ = std::chrono::steady_clock::now();
    run_thread_ = std::this_thread::get_id();
    current_.ops.clear();
    current_.reads.clear();
    current_.dropped_reads = 0;
    current_.run_ns = 0;
    read_threads_.clear();
}

void Profiler::add_op(const OpTiming &timing) {
    if (current_.ops.size() < current_.ops.capacity()) current_.ops.push_back(timing);
}

void Profiler::commit() {
    std::lock_guard<std::mutex> lock(reads_mutex_);
    std::swap(current_, last_);
}

uint64_t Profiler::since_start(std::chrono::steady_clock::time_point t) const {
    if (t <= start_) return 0;
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t - start_).count());
}

void Profiler::weight_read(const std::string &file, std::chrono::steady_clock::time_point start,
                           uint64_t bytes) noexcept {
    const auto end = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(reads_mutex_);
    if (current_.reads.size() == current_.reads.capacity()) { // recording never allocates mid-run
        ++current_.dropped_reads;
        return;
    }
    const std::thread::id self = std::this_thread::get_id();
    int track = 0;
    if (self != run_thread_) {
        auto it = std::find(read_threads_.begin(), read_threads_.end(), self);
        if (it == read_threads_.end()) {
            if (read_threads_.size() == read_threads_.capacity()) return;
            it = read_threads_.insert(read_threads_.end(), self);
        }
        track = static_cast<int>(it - read_threads_.begin()) + 1;
    }
    auto known = file_index_.find(file);
    const uint64_t s = since_start(start);
    current_.reads.push_back(
        ReadRecord{known == file_index_.end() ? -1 : known->second, s, std::max(since_start(end), s) - s, bytes, track});
}

OpProfile Profiler::op(size_t i) const {
    const OpTiming &t = last_.ops.at(i);
    const Node &node = graph_->nodes()[t.node];
    const OpFacts &f = facts_[t.node];
    return OpProfile{&t, &node.line->name, &node.line->type, node.line->line, &f.inputs, &f.outputs,
                     f.weight_bytes, f.activation_bytes, f.flops};
}

std::string Profiler::trace_json() const {
    std::lock_guard<std::mutex> lock(reads_mutex_);
    std::string j = "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"onnxstream\",\"run_us\":" +
                    us(last_.run_ns) + "},\"traceEvents\":[\n";
    int tracks = 1;
    for (const ReadRecord &r : last_.reads) tracks = std::max(tracks, r.track + 1);
    j += "{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":\"onnxstream run\"}}";
    for (int t = 0; t < tracks; ++t)
        j += ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":" + std::to_string(t + 1) +
             ",\"name\":\"thread_name\",\"args\":{\"name\":" + json_string(thread_name(t)) + "}}";
    for (size_t i = 0; i < last_.ops.size(); ++i) {
        const OpProfile o = op(i);
        const OpTiming &t = *o.timing;
        j += ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"cat\":\"op\",\"name\":" + json_string(*o.type) +
             ",\"ts\":" + us(t.start_ns) + ",\"dur\":" + us(t.duration_ns) + ",\"args\":{\"op\":" +
             json_string(*o.name) + ",\"index\":" + u64(t.node) + ",\"line\":" + std::to_string(o.line) +
             ",\"inputs\":" + json_string(*o.inputs) + ",\"outputs\":" + json_string(*o.outputs) +
             ",\"flops\":" + u64(o.flops) + ",\"weight_bytes\":" + u64(o.weight_bytes) +
             ",\"activation_bytes\":" + u64(o.activation_bytes) + ",\"weight_wait_us\":" + us(t.weight_wait_ns) +
             ",\"kernel_prepare_us\":" + us(t.kernel_prepare_ns) + ",\"memory_bytes\":" + u64(t.memory_bytes) +
             "}}";
        j += ",\n{\"ph\":\"C\",\"pid\":1,\"name\":\"tracked memory\",\"ts\":" + us(t.start_ns + t.duration_ns) +
             ",\"args\":{\"MB\":" + fixed(static_cast<double>(t.memory_bytes) / 1e6, 3) + "}}";
    }
    for (const ReadRecord &r : last_.reads)
        j += ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":" + std::to_string(r.track + 1) +
             ",\"cat\":\"weight read\",\"name\":" +
             json_string(r.file >= 0 ? files_[static_cast<size_t>(r.file)] : std::string("?")) + ",\"ts\":" + us(r.start_ns) +
             ",\"dur\":" + us(r.duration_ns) + ",\"args\":{\"bytes\":" + u64(r.bytes) + "}}";
    return j + "\n]}\n";
}

std::string Profiler::summary(const Roofline &peak) const {
    struct Row {
        size_t count = 0;
        uint64_t ns = 0, flops = 0, weight_bytes = 0, activation_bytes = 0, prepare_ns = 0, wait_ns = 0;
    };
    std::map<std::string, Row> by_type;
    Row total;
    for (size_t i = 0; i < last_.ops.size(); ++i) {
        const OpProfile o = op(i);
        for (Row *r : {&by_type[*o.type], &total}) {
            r->count += 1;
            r->ns += o.timing->duration_ns;
            r->flops += o.flops;
            r->weight_bytes += o.weight_bytes;
            r->activation_bytes += o.activation_bytes;
            r->prepare_ns += o.timing->kernel_prepare_ns;
            r->wait_ns += o.timing->weight_wait_ns;
        }
    }
    std::vector<std::pair<std::string, Row>> rows(by_type.begin(), by_type.end());
    std::stable_sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) { return a.second.ns > b.second.ns; });
    rows.emplace_back("total", total);

    const bool with_peak = peak.flops_per_s > 0 && peak.bytes_per_s > 0;
    char line[256];
    std::string s;
    std::snprintf(line, sizeof line, "%-26s %6s %10s %6s %8s %9s %8s %8s %10s %8s%s\n", "op type", "count", "total ms",
                  "% run", "GFLOP/s", "weight MB", "wt GB/s", "act GB/s", "prepare ms", "wait ms",
                  with_peak ? "  % peak" : "");
    s += line;
    const double run_ms = static_cast<double>(last_.run_ns) / 1e6;
    for (const auto &[type, r] : rows) {
        const double sec = static_cast<double>(r.ns) / 1e9;
        const double gflops = sec > 0 ? static_cast<double>(r.flops) / sec / 1e9 : 0;
        const double wt_gbs = sec > 0 ? static_cast<double>(r.weight_bytes) / sec / 1e9 : 0;
        const double act_gbs = sec > 0 ? static_cast<double>(r.activation_bytes) / sec / 1e9 : 0;
        std::string peak_col;
        if (with_peak && sec > 0) {
            // Matrix ops against the GEMM peak; the others against bandwidth (bytes in and out).
            const double fraction = r.flops > 0 ? gflops * 1e9 / peak.flops_per_s
                                                : (act_gbs + wt_gbs) * 1e9 / peak.bytes_per_s;
            peak_col = "  " + fixed(100 * fraction, 1);
            peak_col = std::string(8 - std::min<size_t>(8, peak_col.size()), ' ') + peak_col;
        }
        std::snprintf(line, sizeof line, "%-26s %6zu %10.3f %6.1f %8s %9.2f %8.2f %8.2f %10.3f %8.3f%s\n",
                      type.substr(0, 26).c_str(), r.count, static_cast<double>(r.ns) / 1e6,
                      run_ms > 0 ? 100.0 * static_cast<double>(r.ns) / 1e6 / run_ms : 0.0,
                      r.flops > 0 ? fixed(gflops, 1).c_str() : "-", static_cast<double>(r.weight_bytes) / 1e6,
                      wt_gbs, act_gbs, static_cast<double>(r.prepare_ns) / 1e6, static_cast<double>(r.wait_ns) / 1e6,
                      peak_col.c_str());
        s += line;
    }
    std::lock_guard<std::mutex> lock(reads_mutex_);
    uint64_t read_bytes = 0, read_ns = 0, ahead = 0;
    for (const ReadRecord &r : last_.reads) {
        read_bytes += r.bytes;
        read_ns += r.duration_ns;
        ahead += r.track != 0;
    }
    s += "run " + fixed(run_ms, 3) + " ms; weight reads: " + std::to_string(last_.reads.size()) + " (" +
         std::to_string(ahead) + " on the read-ahead thread), " + fixed(static_cast<double>(read_bytes) / 1e6, 2) +
         " MB in " + fixed(static_cast<double>(read_ns) / 1e6, 3) + " ms" +
         (last_.dropped_reads ? " (" + std::to_string(last_.dropped_reads) + " more not recorded)" : "") + "\n";
    if (with_peak)
        s += "peak: " + fixed(peak.flops_per_s / 1e9, 1) + " GFLOP/s (float32 GEMM), " +
             fixed(peak.bytes_per_s / 1e9, 2) + " GB/s (memory)\n";
    return s;
}

} // namespace onnxstream

#include "tools/sd_graphs.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "util/checked.h"
#include "util/error.h"
#include "util/paths.h"
#include "util/strings.h"
#include "weights/safetensors.h"

namespace onnxstream::tools {

namespace fs = std::filesystem;

namespace {

std::string bracketed(const Shape &shape) { return "[" + join_ints(shape) + "]"; }

// The file's type as a reader sees it: "float16 [320,3,3,4]", or "N bytes" for a constant.
std::string made_as(const GraphWeight &w) {
    if (w.constant) return cat(w.bytes.size(), " bytes");
    return cat(dtype_name(w.dtype), " ", bracketed(w.shape));
}

// A file name weights.tsv may write: one plain name inside the model folder, and not one of the folder's
// own files.
bool plain_file_name(const std::string &name) {
    return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
           name.find('\\') == std::string::npos && name.find('\0') == std::string::npos && name != "model.txt" &&
           name != "weights.tsv" && name != kWeightStoreFile;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

} // namespace

std::string listed_problems(const std::vector<std::string> &problems, size_t max) {
    std::string text;
    for (size_t i = 0; i < problems.size() && i < max; ++i) text += "\n  " + problems[i];
    if (problems.size() > max) text += cat("\n  ... and ", problems.size() - max, " more");
    return text;
}

const char *transform_name(WeightTransform transform) {
    switch (transform) {
    case WeightTransform::AsIs: return "as_is";
    case WeightTransform::Transpose: return "transpose";
    case WeightTransform::Ohwi: return "ohwi";
    }
    return "?";
}

std::vector<GraphWeight> parse_weights_tsv(const std::string &text, const std::string &source) {
    std::vector<GraphWeight> weights;
    std::map<std::string, int> lines_of;
    int line_no = 0;
    for (std::string_view line : split(text, '\n')) {
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty() || line[0] == '#') continue;
        const std::string where = cat(source, ":", line_no, ": ");
        const std::vector<std::string_view> fields = split(line, '\t');
        GraphWeight w;
        w.line = line_no;
        w.file = std::string(fields[0]);
        if (!plain_file_name(w.file))
            fail(ONNXSTREAM_ERR_INVALID_MODEL, where, "'", w.file,
                 "' is not a plain file name for the model folder (no '/', not '..', not model.txt)");
        if (fields.size() == 3 && fields[1] == "=") {
            const std::string_view hex = fields[2];
            if (hex.size() % 2 != 0) fail(ONNXSTREAM_ERR_INVALID_MODEL, where, "the constant's hex has an odd length");
            w.constant = true;
            for (size_t i = 0; i < hex.size(); i += 2) {
                const int hi = hex_digit(hex[i]), lo = hex_digit(hex[i + 1]);
                if (hi < 0 || lo < 0)
                    fail(ONNXSTREAM_ERR_INVALID_MODEL, where, "the constant is not lowercase hex at character ", i + 1);
                w.bytes.push_back(static_cast<char>(hi * 16 + lo));
            }
        } else if (fields.size() == 5) {
            const std::string_view key = fields[1];
            const size_t colon = key.find(':');
            const std::string_view component = key.substr(0, colon);
            if (colon == std::string_view::npos || colon + 1 == key.size() ||
                (component != "text_encoder" && component != "unet" && component != "vae"))
                fail(ONNXSTREAM_ERR_INVALID_MODEL, where, "'", key,
                     "' is not <component>:<key> with component text_encoder, unet or vae");
            w.key = std::string(key);
            if (fields[2] == "as_is") w.transform = WeightTransform::AsIs;
            else if (fields[2] == "transpose") w.transform = WeightTransform::Transpose;
            else if (fields[2] == "ohwi") w.transform = WeightTransform::Ohwi;
            else fail(ONNXSTREAM_ERR_INVALID_MODEL, where, "unknown transform '", fields[2], "' (as_is, transpose, ohwi)");
            if (!parse_dtype(fields[3], w.dtype) || !is_float(w.dtype))
                fail(ONNXSTREAM_ERR_INVALID_MODEL, where, "dtype '", fields[3], "' is not float32 or float16");
            for (std::string_view d : split(fields[4], ',')) {
                int64_t v = 0;
                if (!parse_int64(d, v) || v < 1)
                    fail(ONNXSTREAM_ERR_INVALID_MODEL, where, "shape '", fields[4],
                         "' is not a comma-separated list of positive dimensions");
                w.shape.push_back(v);
            }
            uint64_t bytes = 0;
            if (w.shape.size() > 8 || !checked::byte_count(w.shape, dtype_size(w.dtype), bytes) ||
                !checked::fits_size(bytes))
                fail(ONNXSTREAM_ERR_INVALID_MODEL, where, "shape '", fields[4], "' is too large");
            const size_t rank = w.transform == WeightTransform::Transpose ? 2 : w.transform == WeightTransform::Ohwi ? 4 : 0;
            if (rank && w.shape.size() != rank)
                fail(ONNXSTREAM_ERR_INVALID_MODEL, where, transform_name(w.transform), " needs a ", rank,
                     "-D shape, not ", bracketed(w.shape));
        } else {
            fail(ONNXSTREAM_ERR_INVALID_MODEL, where, "expected 5 TAB-separated fields (file, component:key, transform, ",
                 "dtype, shape) or 3 (file, =, hex), found ", fields.size());
        }
        const auto [it, added] = lines_of.emplace(w.file, line_no);
        if (!added) fail(ONNXSTREAM_ERR_INVALID_MODEL, where, w.file, " is already made on line ", it->second);
        weights.push_back(std::move(w));
    }
    return weights;
}

void check_weights_match_model(const std::vector<GraphWeight> &weights, const std::string &tsv_source,
                               const ModelText &model, const std::string &model_source) {
    std::map<std::string, const GraphWeight *> made;
    for (const GraphWeight &w : weights) made.emplace(w.file, &w);
    std::set<std::string> referenced;
    std::vector<std::string> problems;

    // The file `name` as model.txt reads it; false when weights.tsv does not make it.
    auto check = [&](const std::string &name, DType dtype, const Shape &shape, bool quantized, const std::string &where) {
        auto it = made.find(name);
        if (it == made.end()) return false;
        referenced.insert(name);
        const GraphWeight &w = *it->second;
        const bool fits = w.constant ? w.bytes.size() == checked::bytes_or_fail(shape, dtype_size(dtype), name)
                                     : !quantized && w.dtype == dtype && w.shape == shape;
        if (!fits)
            problems.push_back(cat(tsv_source, ":", w.line, ": ", name, " is made as ", made_as(w), " but ", where,
                                   " reads it as ", dtype_name(dtype), quantized ? " (quantized) " : " ",
                                   bracketed(shape)));
        return true;
    };
    for (const OpLine &op : model.ops)
        for (const TensorRef &ref : op.inputs) {
            if (!ref.present || !ref.is_weight) continue;
            const std::string where = cat(model_source, ":", op.line);
            const bool quantized = ref.quant.present;
            if (ref.shape.size() == 4 && ends_with(ref.name, "_nchw.bin")) {
                // The engine reads a Conv weight from either file: OIHW, or its OHWI twin "_nhwc.bin".
                const std::string twin = ref.name.substr(0, ref.name.size() - 9) + "_nhwc.bin";
                const bool plain = check(ref.name, ref.dtype, ref.shape, quantized, where);
                const Shape ohwi = {ref.shape[0], ref.shape[2], ref.shape[3], ref.shape[1]};
                if (!check(twin, ref.dtype, ohwi, quantized, where) && !plain)
                    problems.push_back(cat(where, ": weights.tsv makes neither ", ref.name, " nor ", twin));
            } else if (!check(ref.name, ref.dtype, ref.shape, quantized, where)) {
                problems.push_back(cat(where, ": weights.tsv does not make ", ref.name));
            }
            if (!ref.scales_file.empty()) {
                const Shape channels = {ref.shape[static_cast<size_t>(ref.quant.axis)]};
                if (!check(ref.scales_file, DType::F32, channels, false, where))
                    problems.push_back(cat(where, ": weights.tsv does not make the scales file ", ref.scales_file));
            }
        }
    for (const GraphWeight &w : weights)
        if (!referenced.count(w.file))
            problems.push_back(cat(tsv_source, ":", w.line, ": ", w.file, " is not a weight file of model.txt"));
    if (!problems.empty())
        fail(ONNXSTREAM_ERR_INVALID_MODEL, tsv_source, " does not fit ", model_source, " (", problems.size(),
             " problem(s)):", listed_problems(problems));
}

std::vector<GraphModel> read_graphs(const std::string &dir) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) fail(ONNXSTREAM_ERR_IO, "graphs folder ", dir, " is not a folder");
    std::vector<std::string> names;
    fs::directory_iterator it(dir, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
        const fs::path sub = it->path();
        std::error_code e1, e2;
        if (fs::is_regular_file(sub / "model.txt", e1) && fs::is_regular_file(sub / "weights.tsv", e2))
            names.push_back(sub.filename().string());
    }
    if (ec) fail(ONNXSTREAM_ERR_IO, "cannot list graphs folder ", dir, ": ", ec.message());
    if (names.empty())
        fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "graphs folder ", dir,
             " holds no model folder (a subfolder with model.txt and weights.tsv)");
    std::sort(names.begin(), names.end());
    std::vector<GraphModel> models;
    for (const std::string &name : names) {
        GraphModel m;
        m.name = name;
        m.dir = (fs::path(dir) / name).string();
        const std::string model_path = m.dir + "/model.txt", tsv_path = m.dir + "/weights.tsv";
        const ModelText model = parse_model_txt(read_text_file(model_path), model_path);
        m.weights = parse_weights_tsv(read_text_file(tsv_path), tsv_path);
        check_weights_match_model(m.weights, tsv_path, model, model_path);
        models.push_back(std::move(m));
    }
    return models;
}

} // namespace onnxstream::tools

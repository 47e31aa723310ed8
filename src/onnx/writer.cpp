#include "onnx/writer.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fnmatch.h>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <sys/stat.h>
#include <unordered_map>
#include <unordered_set>

#include "graph/graph.h"
#include "graph/planner.h"
#include "onnx/attr_text.h"
#include "onnx/engine_shapes.h"
#include "onnx/quantize_export.h"
#include "ops/registry.h"
#include "tensor/half.h"
#include "tensor/int4_blocks.h"
#include "util/error.h"
#include "util/strings.h"
#include "weights/safetensors_pack.h"
#include "weights/weight_files.h"

namespace onnxstream::importer {

namespace {

constexpr size_t kChunkBytes = 16u << 20;
constexpr size_t kMaxFileBase = 200; // leaves room for "_nhwc.bin" under the usual 255-byte limit
constexpr size_t kPlanConstantBytes = 1u << 20;

std::string strip_trailing_slashes(std::string p) {
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    return p;
}

std::string parent_of(const std::string &path) {
    size_t slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

// Ops whose trailing outputs are optional extras: leaving unused ones out does not change the result.
bool trailing_outputs_optional(const std::string &op) {
    return op == "Dropout" || op == "MaxPool" || op == "LayerNormalization" || op == "BatchNormalization" ||
           op == "LSTM" || op == "GRU" || op == "RNN" || op == "Unique";
}

// A 4-D weight the reading op prefers in OHWI order (Conv's W): written as OnnxStream does, referenced as
// "<name>_nchw.bin" and stored as "<name>_nhwc.bin", which the engine's providers read without a transpose.
bool wants_ohwi(const Node &n, size_t input, const ConstantData &c) {
    if (!n.default_domain() || c.shape().size() != 4) return false;
    const OpDef *def = Registry::builtin().find(n.op_type);
    return def && def->ohwi_weight_input == static_cast<int>(input);
}

std::string op_name_text(const Node &n, size_t index) {
    std::string name = n.name.empty() ? cat(n.op_type, "_", index) : n.name;
    for (unsigned char c : name)
        if (c == '*' || c < 0x20 || c == 0x7F) return escape_name(name);
    return name;
}

struct WeightPlan {
    const ConstantData *data = nullptr;
    std::string base;
    DType stored = DType::F32;
    bool plain = false;     // "<base>.bin"
    bool ohwi = false;      // "<base>_nhwc.bin", referenced as "<base>_nchw.bin" by Conv
    bool keep_fp32 = false; // a --keep-fp32 pattern matches
    int w8_axis = -1;       // >= 0: stored as per-channel int8 along this axis (--quantize w8)
    int w4_axis = -1;       // >= 0: stored as blockwise int4 with K along this axis (--quantize w4)
    bool u8 = false;        // stored as per-tensor uint8 (--quantize w8a8)
    float u8_scale = 1;
    int64_t u8_zero_point = 0;
};

class OutFile {
public:
    explicit OutFile(std::string path) : path_(std::move(path)), f_(std::fopen(path_.c_str(), "wb")) {
        if (!f_) fail(ONNXSTREAM_ERR_IO, "cannot create ", path_, ": ", std::strerror(errno));
    }
    ~OutFile() {
        if (f_) std::fclose(f_);
    }
    void write(const void *data, size_t n) {
        if (n && std::fwrite(data, 1, n, f_) != n)
            fail(ONNXSTREAM_ERR_IO, "cannot write ", path_, ": ", std::strerror(errno));
    }
    void close() {
        int rc = std::fclose(f_);
        f_ = nullptr;
        if (rc != 0) fail(ONNXSTREAM_ERR_IO, "cannot write ", path_, ": ", std::strerror(errno));
    }

private:
    std::string path_;
    FILE *f_;
};

// float32 -> float16, clamping finite values beyond the float16 range instead of turning them into inf.
void to_half(const float *src, uint16_t *dst, size_t n, uint64_t &clamped) {
    std::vector<float> tmp(src, src + n);
    for (float &v : tmp)
        if (std::isfinite(v) && std::fabs(v) > 65504.0f) {
            v = v < 0 ? -65504.0f : 65504.0f;
            ++clamped;
        }
    float_to_half_n(tmp.data(), dst, n);
}

// Bytes as stored on disk: the source bytes, or float32 turned into float16.
std::string convert(const char *src, size_t n_bytes, int32_t from, DType to, uint64_t &clamped) {
    if (from == kOnnxFloat && to == DType::F16) {
        size_t n = n_bytes / 4;
        std::string out(n * 2, '\0');
        std::vector<float> f(n);
        std::memcpy(f.data(), src, n * 4);
        to_half(f.data(), reinterpret_cast<uint16_t *>(out.data()), n, clamped);
        return out;
    }
    return std::string(src, n_bytes);
}

void write_plain(const std::string &path, const ConstantData &c, DType stored, uint64_t &clamped) {
    OutFile out(path);
    const uint64_t total = c.byte_size();
    const size_t esize = onnx_type_size(c.type());
    std::string buf;
    for (uint64_t off = 0; off < total;) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(total - off, kChunkBytes / esize * esize));
        buf.resize(n);
        c.read(off, buf.data(), n);
        std::string stored_bytes = convert(buf.data(), n, c.type(), stored, clamped);
        out.write(stored_bytes.data(), stored_bytes.size());
        off += n;
    }
    out.close();
}

void write_ohwi(const std::string &path, const ConstantData &c, DType stored, uint64_t &clamped) {
    const Shape &s = c.shape();
    const size_t O = static_cast<size_t>(s[0]), I = static_cast<size_t>(s[1]);
    const size_t H = static_cast<size_t>(s[2]), W = static_cast<size_t>(s[3]);
    const size_t es = onnx_type_size(c.type());
    auto src = c.bytes();
    std::string ohwi(src->size(), '\0');
    for (size_t o = 0; o < O; ++o)
        for (size_t i = 0; i < I; ++i)
            for (size_t h = 0; h < H; ++h)
                for (size_t w = 0; w < W; ++w)
                    std::memcpy(&ohwi[(((o * H + h) * W + w) * I + i) * es],
                                src->data() + (((o * I + i) * H + h) * W + w) * es, es);
    std::string stored_bytes = convert(ohwi.data(), ohwi.size(), c.type(), stored, clamped);
    OutFile out(path);
    out.write(stored_bytes.data(), stored_bytes.size());
    out.close();
}

// Removes the temporary folder unless the conversion got as far as renaming it into place.
struct TempFolder {
    std::string path;
    bool committed = false;
    ~TempFolder() {
        if (committed || path.empty()) return;
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

bool matches_any(const std::vector<std::string> &patterns, const std::string &name, const std::string &file) {
    for (const auto &p : patterns)
        if (::fnmatch(p.c_str(), name.c_str(), 0) == 0 || ::fnmatch(p.c_str(), file.c_str(), 0) == 0) return true;
    return false;
}

} // namespace

std::string weight_file_base(const std::string &constant_name) {
    std::string base = escape_name(constant_name);
    if (base.size() <= kMaxFileBase) return base;
    char hash[24];
    std::snprintf(hash, sizeof(hash), "_%016zx", std::hash<std::string>()(constant_name));
    return base.substr(0, kMaxFileBase - 17) + hash;
}

void check_output_dir(const std::string &out_dir_arg) {
    if (out_dir_arg.empty()) fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "the output folder path is empty");
    std::string out_dir = strip_trailing_slashes(out_dir_arg);
    struct stat st;
    std::string parent = parent_of(out_dir);
    if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        fail(ONNXSTREAM_ERR_IO, "cannot create output folder ", out_dir, ": its parent folder ", parent,
             " does not exist");
    if (::stat(out_dir.c_str(), &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "output path ", out_dir, " exists and is not a folder");
        std::error_code ec;
        if (!std::filesystem::is_empty(out_dir, ec) || ec)
            fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "output folder ", out_dir,
                 " already exists and is not empty; remove it or choose another folder");
    }
}

namespace {

// ": <why>" for a node whose outputs have no static shape, when the engine's inference can say why.
std::string unresolved_reason(const IrGraph &g, const Node &n) {
    const std::string why = why_no_static_shape(g, n);
    return why.empty() ? why : cat(" (", why, ")");
}

struct OutputPlan {
    std::map<std::string, WeightPlan> weights; // by constant name; ordered for deterministic output
    ModelText text;
    // outputs.txt: the ONNX graph's outputs in order, escaped, when model.txt alone cannot say them (a
    // declared output is also read inside the graph); empty otherwise.
    std::string declared_outputs;
};

// Whether the engine's infer for `line` accepts these input dtypes and still gives the outputs the dtypes
// ONNX says they have (a float16 weight must not turn a float32 activation into float16).
bool engine_accepts(const IrGraph &g, const Node &n, const OpLine &line, const std::vector<DType> &dtypes) {
    const OpDef *def = Registry::builtin().find(line.type);
    if (!def) return false;
    const std::string where = cat("float16 check of ", n.describe());
    Attributes attrs(&line.attrs, where);
    NodeView view{line.name, line.type, where, attrs};
    std::vector<std::optional<TensorInfo>> infos;
    std::vector<Tensor> constants(line.inputs.size());
    Allocator alloc;
    for (size_t k = 0; k < line.inputs.size(); ++k) {
        const TensorRef &ref = line.inputs[k];
        if (!ref.present) {
            infos.push_back(std::nullopt);
            continue;
        }
        infos.push_back(TensorInfo{dtypes[k], ref.shape, ref.is_weight ? ref.quant : QuantParams{}});
        // Small integer weights (shapes, axes) are what infer reads as constants.
        auto it = g.constants.find(n.inputs[k]);
        // (A quantized weight's bytes are written later from the float source: not readable here.)
        if (ref.is_weight && it != g.constants.end() && dtypes[k] != DType::F16 && dtypes[k] != DType::F32 &&
            !ref.quant.present && it->second.byte_size() <= kPlanConstantBytes) {
            constants[k] = make_tensor(alloc, dtypes[k], ref.shape);
            auto bytes = it->second.bytes();
            if (!bytes->empty()) std::memcpy(constants[k].raw(), bytes->data(), bytes->size());
        }
    }
    std::vector<Shape> declared;
    for (const auto &out : line.outputs) declared.push_back(out.shape);
    InferContext ctx(view, std::move(infos), std::move(declared),
                     [&](size_t i) -> const Tensor * { return constants[i].empty() ? nullptr : &constants[i]; });
    std::vector<TensorInfo> outs;
    try {
        outs = def->infer(ctx);
    } catch (const Error &) {
        return false;
    }
    if (outs.size() != line.outputs.size()) return false;
    for (size_t k = 0; k < outs.size(); ++k) {
        const ValueType *t = g.type_of(n.outputs[k]);
        DType want;
        if (!t || !dtype_of(t->elem_type, want) || outs[k].dtype != want) return false;
    }
    return true;
}

// --fp16 picked every float32 weight not kept by a pattern. Keep float16 only where the engine runs the
// reading op with it: kernels that widen weights as they pack them take a float16 weight beside float32
// activations, ops that need matching input dtypes do not (and their parameters, normalization scales
// and biases, are the precision-sensitive ones anyway). Asking each op's own infer keeps this in step
// with the engine. A weight shared by ops goes back to float32 if any of them refuses it.
void keep_fp16_where_engine_runs(const IrGraph &g, const ModelText &text, std::map<std::string, WeightPlan> &weights) {
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t i = 0; i < g.nodes.size(); ++i) {
            const Node &n = g.nodes[i];
            const OpLine &line = text.ops[i];
            std::vector<DType> dtypes(line.inputs.size(), DType::F32);
            bool has_fp16 = false, known = true;
            for (size_t k = 0; k < line.inputs.size(); ++k) {
                if (!line.inputs[k].present) continue;
                if (line.inputs[k].is_weight) {
                    dtypes[k] = weights.at(n.inputs[k]).stored;
                    has_fp16 |= dtypes[k] == DType::F16 && weights.at(n.inputs[k]).data->type() == kOnnxFloat;
                } else {
                    const ValueType *t = g.type_of(n.inputs[k]);
                    known = known && t && dtype_of(t->elem_type, dtypes[k]);
                }
            }
            if (!has_fp16 || (known && engine_accepts(g, n, line, dtypes))) continue;
            for (size_t k = 0; k < line.inputs.size(); ++k) {
                if (!line.inputs[k].is_weight) continue;
                WeightPlan &w = weights.at(n.inputs[k]);
                if (w.stored == DType::F16 && w.data->type() == kOnnxFloat) {
                    w.stored = DType::F32;
                    changed = true;
                }
            }
        }
    }
}

// Every graph output must be computed by an op. model.txt's outputs are the tensors nothing reads; the
// listing for outputs.txt is returned, and `consumed` says whether a declared output is also read inside
// the graph (so model.txt alone cannot say it is an output).
std::string check_graph_outputs(const IrGraph &g, const GraphIndex &idx, WriteSummary &summary, bool &consumed) {
    consumed = false;
    std::string listing;
    for (const auto &out : g.outputs) {
        if (g.is_constant(out))
            fail(ONNXSTREAM_ERR_UNSUPPORTED, g.source, ": graph output '", out,
                 "' is a constant after simplification; model.txt can only output values that ops compute");
        if (!idx.producer.count(out))
            fail(ONNXSTREAM_ERR_UNSUPPORTED, g.source, ": graph output '", out,
                 "' is a graph input passed straight through; model.txt can only output values that ops compute");
        if (idx.consumers.count(out)) {
            consumed = true;
            summary.notes.push_back(cat("graph output '", out,
                                        "' is also read inside the graph: outputs.txt declares it beside model.txt"));
        }
        listing += escape_name(out) + "\n";
    }
    return listing;
}

// The weight files: one per constant, plus the OHWI twin of 4-D Conv weights, stored as the options ask.
void plan_weights(const IrGraph &g, const WriteOptions &options, std::map<std::string, WeightPlan> &weights) {
    for (const Node &n : g.nodes)
        for (size_t k = 0; k < n.inputs.size(); ++k) {
            auto it = g.constants.find(n.inputs[k]);
            if (n.inputs[k].empty() || it == g.constants.end()) continue;
            const ConstantData &c = it->second;
            WeightPlan &w = weights[it->first];
            if (!w.data) {
                w.data = &c;
                w.base = weight_file_base(it->first);
                if (!dtype_of(c.type(), w.stored))
                    fail(ONNXSTREAM_ERR_UNSUPPORTED, g.source, ": constant '", it->first, "' (read by ", n.describe(),
                         ") is a ", onnx_type_name(c.type()), " tensor, which model.txt cannot store");
                w.keep_fp32 = matches_any(options.keep_fp32, it->first, w.base + ".bin");
            }
            (wants_ohwi(n, k, c) ? w.ohwi : w.plain) = true;
        }
    if (options.fp16)
        for (auto &kv : weights)
            if (kv.second.data->type() == kOnnxFloat && !kv.second.keep_fp32) kv.second.stored = DType::F16;
    if (options.quantize_w8 || options.quantize_w4)
        for (const auto &kv : plan_w8_weights(g)) {
            WeightPlan &w = weights.at(kv.first);
            w.w8_axis = kv.second;
            w.stored = DType::I8;
        }
    if (options.quantize_w4)
        for (const auto &kv : plan_w4_weights(g)) {
            WeightPlan &w = weights.at(kv.first);
            w.w8_axis = -1;
            w.w4_axis = kv.second;
            w.stored = DType::I4;
        }
    if (options.quantize_u8)
        for (const auto &kv : plan_w8_weights(g)) {
            WeightPlan &w = weights.at(kv.first);
            w.u8 = true;
            w.stored = DType::U8;
            u8_weight_params(*w.data, w.u8_scale, w.u8_zero_point);
        }
}

// Weight files and model.txt lines for g; throws for anything model.txt cannot express.
OutputPlan plan_output(const IrGraph &g, const WriteOptions &options, WriteSummary &summary) {
    OutputPlan plan;
    auto &weights = plan.weights;
    auto &text = plan.text;
    GraphIndex idx(g);
    bool declared_consumed = false, unused_kept = false;
    const std::string listing = check_graph_outputs(g, idx, summary, declared_consumed);
    plan_weights(g, options, weights);

    // model.txt
    auto activation_ref = [&](const std::string &name, const Node &n) {
        const ValueType *t = g.type_of(name);
        if (!t || !t->is_static())
            fail(ONNXSTREAM_ERR_UNSUPPORTED, g.source, ": ", n.describe(), ": tensor '", name, "' has no static shape ",
                 t ? t->shape_text() : std::string("(unknown)"), " after shape inference and constant folding",
                 unresolved_reason(g, n), n.guard.empty() ? ""
                                 : "; the node is in a branch of an If decided at run time, which must have static "
                                   "shapes for the model's input shapes too: --input-value can pin the input the If "
                                   "tests, keeping only the branch it takes");
        TensorRef ref;
        ref.name = escape_name(name);
        ref.shape = t->dims;
        return ref;
    };
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        const Node &n = g.nodes[i];
        OpLine line;
        line.line = static_cast<int>(i + 1);
        line.name = op_name_text(n, i);
        line.type = n.engine_type();
        line.attrs = attributes_text(n, g.model_dir);
        if (!n.guard.empty()) line.attrs.push_back({kGuardAttribute, escape_name(n.guard), 0});
        line.has_attr_section = !line.attrs.empty();
        size_t n_inputs = n.inputs.size();
        while (n_inputs > 0 && n.inputs[n_inputs - 1].empty()) --n_inputs;
        for (size_t k = 0; k < n_inputs; ++k) {
            const std::string &in = n.inputs[k];
            TensorRef ref;
            if (in.empty()) {
                ref.present = false;
            } else if (g.is_constant(in)) {
                const WeightPlan &w = weights.at(in);
                ref.is_weight = true;
                ref.name = w.base + (wants_ohwi(n, k, *w.data) ? "_nchw.bin" : ".bin");
                ref.dtype = w.stored;
                ref.shape = w.data->shape();
                if (w.w8_axis >= 0) {
                    ref.scales_file = w8_scales_file(w.base);
                    ref.quant.present = true;
                    ref.quant.axis = w.w8_axis;
                    ref.quant_text = cat("@", ref.scales_file, ",", w.w8_axis);
                }
                if (w.w4_axis >= 0) {
                    ref.quant.present = true;
                    ref.quant.block = int4::kDefaultBlock;
                    ref.quant.axis = w.w4_axis;
                    ref.quant_text = cat(int4::kDefaultBlock, ",", w.w4_axis);
                }
                if (w.u8) {
                    char scale[32];
                    std::snprintf(scale, sizeof scale, "%.9g", static_cast<double>(w.u8_scale));
                    ref.quant.present = true;
                    ref.quant.scale = w.u8_scale;
                    ref.quant.zero_point = w.u8_zero_point;
                    ref.quant_text = cat(scale, ",", w.u8_zero_point);
                }
            } else {
                ref = activation_ref(in, n);
            }
            line.inputs.push_back(std::move(ref));
        }
        if (n.outputs.empty()) fail(ONNXSTREAM_ERR_INVALID_MODEL, g.source, ": ", n.describe(), " has no outputs");
        size_t n_outputs = n.outputs.size();
        while (n_outputs > 0 && (n.outputs[n_outputs - 1].empty() ||
                                 (trailing_outputs_optional(n.op_type) && !idx.is_used(n.outputs[n_outputs - 1]))))
            --n_outputs;
        n_outputs = std::max<size_t>(n_outputs, 1); // model.txt lines need an output even if nothing reads it
        for (size_t k = 0; k < n_outputs; ++k) {
            if (n.outputs[k].empty())
                fail(ONNXSTREAM_ERR_UNSUPPORTED, g.source, ": ", n.describe(), ": output ", k,
                     " is omitted but a later one is used; model.txt cannot leave out a middle output");
            // An unused output model.txt cannot leave out: outputs.txt keeps it from becoming a model output.
            unused_kept = unused_kept || !idx.is_used(n.outputs[k]);
            line.outputs.push_back(activation_ref(n.outputs[k], n));
        }
        text.ops.push_back(std::move(line));
    }
    if (declared_consumed || unused_kept) plan.declared_outputs = listing;

    if (options.fp16) keep_fp16_where_engine_runs(g, text, weights);
    for (size_t i = 0; i < g.nodes.size(); ++i)
        for (size_t k = 0; k < text.ops[i].inputs.size(); ++k) {
            TensorRef &ref = text.ops[i].inputs[k];
            if (ref.is_weight) ref.dtype = weights.at(g.nodes[i].inputs[k]).stored;
        }
    for (const auto &kv : weights)
        summary.fp16_weights += kv.second.stored == DType::F16 && kv.second.data->type() == kOnnxFloat;
    // A resizable model's '?' dimensions, written last: the choices above check ops at the declared size.
    if (!options.any_dims.empty()) {
        std::unordered_map<std::string, const std::vector<bool> *> any;
        for (const auto &[name, flags] : options.any_dims) any[escape_name(name)] = &flags;
        for (OpLine &line : text.ops)
            for (auto *refs : {&line.inputs, &line.outputs})
                for (TensorRef &ref : *refs) {
                    auto it = ref.present && !ref.is_weight ? any.find(ref.name) : any.end();
                    if (it == any.end()) continue;
                    for (size_t d = 0; d < ref.shape.size() && d < it->second->size(); ++d)
                        if ((*it->second)[d]) ref.shape[d] = kAnyDim;
                }
    }
    return plan;
}

// A resizable model whose probe size does not plan (kept apart from the engine's own check failures).
struct ResizableError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::string describe_inputs(const std::unordered_map<std::string, Shape> &inputs) {
    std::string out;
    for (const auto &[name, shape] : inputs) out += cat(out.empty() ? "" : ", ", name, " ", shape_str(shape));
    return out.empty() ? "(declared)" : out;
}

} // namespace

WriteSummary write_model(const IrGraph &g, const std::string &out_dir_arg, const WriteOptions &options) {
    check_output_dir(out_dir_arg);
    const std::string out_dir = strip_trailing_slashes(out_dir_arg);
    WriteSummary summary;
    OutputPlan plan = plan_output(g, options, summary);
    const auto &weights = plan.weights;
    const std::string model_txt = write_model_txt(plan.text);

    // Everything goes to a fresh sibling folder that is renamed into place at the very end.
    TempFolder tmp;
    {
        std::string templ = out_dir + ".tmp-XXXXXX";
        if (!::mkdtemp(templ.data()))
            fail(ONNXSTREAM_ERR_IO, "cannot create a temporary folder next to ", out_dir, ": ", std::strerror(errno));
        tmp.path = templ;
        ::chmod(tmp.path.c_str(), 0755);
    }
    {
        OutFile f(tmp.path + "/model.txt");
        f.write(model_txt.data(), model_txt.size());
        f.close();
    }
    if (!plan.declared_outputs.empty()) {
        OutFile f(tmp.path + "/outputs.txt");
        f.write(plan.declared_outputs.data(), plan.declared_outputs.size());
        f.close();
    }
    for (const auto &kv : weights) {
        const WeightPlan &w = kv.second;
        uint64_t clamped = 0;
        int4::RowLayout int4_rows;
        if (w.w4_axis >= 0) int4::layout_of(w.data->shape(), w.w4_axis, int4::kDefaultBlock, int4_rows);
        const uint64_t stored_bytes = w.w4_axis >= 0 ? static_cast<uint64_t>(int4_rows.n * int4_rows.row_bytes())
                                                     : static_cast<uint64_t>(w.data->numel()) * dtype_size(w.stored);
        auto count = [&](const std::string &file) {
            ++summary.weight_files;
            summary.weight_bytes += stored_bytes;
            if (stored_bytes > summary.largest_bytes || summary.largest_weight.empty()) {
                summary.largest_bytes = stored_bytes;
                summary.largest_weight = file;
            }
        };
        if (w.w8_axis >= 0) {
            const std::string scales = w8_scales_file(w.base);
            write_w8_weight(*w.data, w.w8_axis, w.plain ? tmp.path + "/" + w.base + ".bin" : "",
                            w.ohwi ? tmp.path + "/" + w.base + "_nhwc.bin" : "", tmp.path + "/" + scales);
            const uint64_t scale_bytes = static_cast<uint64_t>(w.data->shape()[static_cast<size_t>(w.w8_axis)]) * 4;
            const size_t unquantized = options.fp16 && !w.keep_fp32 ? 2 : 4;
            if (w.plain) count(w.base + ".bin");
            if (w.ohwi) count(w.base + "_nhwc.bin");
            ++summary.weight_files;
            summary.weight_bytes += scale_bytes;
            ++summary.w8_weights;
            const uint64_t files = (w.plain ? 1u : 0u) + (w.ohwi ? 1u : 0u);
            summary.w8_saved_bytes += files * static_cast<uint64_t>(w.data->numel()) * (unquantized - 1) - scale_bytes;
            continue;
        }
        if (w.w4_axis >= 0) {
            write_w4_weight(*w.data, w.w4_axis, int4::kDefaultBlock, tmp.path + "/" + w.base + ".bin");
            count(w.base + ".bin");
            ++summary.w4_weights;
            const uint64_t unquantized = options.fp16 && !w.keep_fp32 ? 2 : 4;
            summary.w4_saved_bytes += static_cast<uint64_t>(w.data->numel()) * unquantized - stored_bytes;
            continue;
        }
        if (w.u8) {
            write_u8_weight(*w.data, w.u8_scale, w.u8_zero_point, w.plain ? tmp.path + "/" + w.base + ".bin" : "",
                            w.ohwi ? tmp.path + "/" + w.base + "_nhwc.bin" : "");
            if (w.plain) count(w.base + ".bin");
            if (w.ohwi) count(w.base + "_nhwc.bin");
            continue;
        }
        if (w.plain) {
            write_plain(tmp.path + "/" + w.base + ".bin", *w.data, w.stored, clamped);
            count(w.base + ".bin");
        }
        if (w.ohwi) {
            write_ohwi(tmp.path + "/" + w.base + "_nhwc.bin", *w.data, w.stored, clamped);
            count(w.base + "_nhwc.bin");
        }
        if (clamped)
            summary.notes.push_back(cat(clamped, " values of '", kv.first,
                                        "' exceed the float16 range and were clamped "
                                        "to +-65504 (keep it float32 with --keep-fp32)"));
    }

    if (options.safetensors) {
        pack_weight_folder(tmp.path, true);
        summary.packed = true;
    }

    // Load the result back the way the engine will, and plan it, so a model the engine would reject is
    // never left behind.
    try {
        Graph graph(parse_model_txt(model_txt, "model.txt"), "model.txt");
        load_quant_scales(graph, tmp.path);
        std::unordered_map<std::string, const ValueType *> input_types;
        for (const auto &name : g.inputs) input_types[escape_name(name)] = g.type_of(name);
        std::vector<WriteOptions::SizeCheck> checks = options.size_checks;
        if (checks.empty()) checks.emplace_back(); // the declared shapes
        Allocator alloc;
        auto load = [&](const WeightSpec &spec) -> Tensor {
            if (spec.byte_size() > kPlanConstantBytes) return Tensor();
            return read_weight_file(resolve_weight_file(tmp.path, spec), spec, alloc);
        };
        for (const WriteOptions::SizeCheck &check : checks) {
            std::vector<TensorInfo> infos;
            for (int v : graph.inputs()) {
                const std::string &name = graph.values()[static_cast<size_t>(v)].name;
                auto it = input_types.find(name);
                DType dtype = DType::F32;
                if (it == input_types.end() || !it->second || !dtype_of(it->second->elem_type, dtype))
                    fail(ONNXSTREAM_ERR_UNSUPPORTED, "graph input '", unescape_name(name), "' has type ",
                         it == input_types.end() || !it->second ? "(unknown)" : onnx_type_name(it->second->elem_type),
                         ", which onnxstream cannot take as an input");
                auto given = check.inputs.find(unescape_name(name));
                infos.push_back(TensorInfo{dtype, given != check.inputs.end() ? given->second
                                                                              : graph.values()[static_cast<size_t>(v)].declared_shape, {}});
            }
            Plan plan;
            try {
                plan = make_plan(graph, infos, load);
            } catch (const Error &e) {
                if (&check == &checks.front()) throw;
                // The probe size plans the model only when every shape that follows the input size was found.
                throw ResizableError(cat(g.source, ": cannot be made resizable: at ", describe_inputs(check.inputs),
                                         " ", e.what(), " (a constant of the ONNX file itself fixes a size)"));
            }
            for (size_t v = 0; v < graph.values().size(); ++v) {
                auto want = check.expected.find(unescape_name(graph.values()[v].name));
                if (want == check.expected.end() || !plan.values[v] || plan.values[v]->shape == want->second) continue;
                fail(ONNXSTREAM_ERR_INTERNAL, "at input shapes ", describe_inputs(check.inputs), " '", graph.values()[v].name,
                     "' comes out ", shape_str(plan.values[v]->shape), " instead of ", shape_str(want->second));
            }
        }
        summary.ops = graph.nodes().size();
    } catch (const ResizableError &e) {
        throw Error(ONNXSTREAM_ERR_UNSUPPORTED, e.what());
    } catch (const Error &e) {
        throw Error(e.status(), cat("the converted model does not pass the engine's checks: ", e.what()));
    }

    if (::rename(tmp.path.c_str(), out_dir.c_str()) != 0)
        fail(ONNXSTREAM_ERR_IO, "cannot move the converted model into ", out_dir, ": ", std::strerror(errno));
    tmp.committed = true;
    return summary;
}

} // namespace onnxstream::importer

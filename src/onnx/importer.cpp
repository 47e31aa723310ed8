#include "onnx/importer.h"
#include "onnx/input_values.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <set>
#include <unordered_set>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/defs/schema.h>
#include <onnx/version_converter/convert.h>

#include "ops/registry.h"
#include "onnx/passes/passes.h"
#include "onnx/inference_guard.h"
#include "onnx/opset_downgrade.h"
#include "onnx/resizable.h"
#include "onnx/shapes.h"
#include "onnx/validate.h"
#include "util/error.h"
#include "util/strings.h"

namespace onnxstream::importer {

namespace {

constexpr int64_t kMinOpset = 11;
constexpr int kMaxFunctionDepth = 16;
constexpr int kMaxRounds = 32;

int64_t newest_known_opset() {
    const auto &map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    auto it = map.find(onnx::ONNX_DOMAIN);
    return it == map.end() ? 0 : it->second.second;
}

// `what` names the data in messages (the file's path).
onnx::ModelProto parse_model_proto(google::protobuf::io::ZeroCopyInputStream &stream, const std::string &what) {
    onnx::ModelProto m;
    bool ok;
    {
        google::protobuf::io::CodedInputStream in(&stream);
        in.SetTotalBytesLimit(INT_MAX);
        ok = m.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
    }
    if (!ok)
        fail(ONNXSTREAM_ERR_INVALID_MODEL, "cannot parse ", what,
             " as an ONNX model: the file is truncated, corrupt or not an ONNX protobuf");
    if (!m.has_graph() || m.graph().node_size() == 0)
        fail(ONNXSTREAM_ERR_INVALID_MODEL, what,
             " holds no ONNX graph (no nodes): it is truncated or not an ONNX model");
    return m;
}

onnx::ModelProto read_model_proto(const std::string &path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(ONNXSTREAM_ERR_IO, "cannot open ", path, ": ", std::strerror(errno));
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        fail(ONNXSTREAM_ERR_IO, path, " is not a regular file");
    }
    if (st.st_size == 0) {
        ::close(fd);
        fail(ONNXSTREAM_ERR_INVALID_MODEL, path, " is empty");
    }
    if (static_cast<uint64_t>(st.st_size) >= (1ull << 31)) {
        ::close(fd);
        fail(ONNXSTREAM_ERR_INVALID_MODEL, path, " is ", st.st_size,
             " bytes; a protobuf file cannot exceed 2 GB, so models this big must keep their weights in external data");
    }
    try {
        google::protobuf::io::FileInputStream file(fd);
        onnx::ModelProto m = parse_model_proto(file, path);
        ::close(fd);
        return m;
    } catch (...) {
        ::close(fd);
        throw;
    }
}

int64_t default_opset(const onnx::ModelProto &m) {
    for (const auto &op : m.opset_import())
        if (op.domain().empty() || op.domain() == "ai.onnx") return op.version();
    return 0;
}

// Opsets older than 11 are upgraded with ONNX's version converter; 18 to 22 are read as opset 17
// (opset_downgrade.h), whatever this ONNX library knows. The graph is validated here, before any ONNX pass
// reads it.
void check_opset(onnx::ModelProto &m, const std::string &path, const std::string &model_dir,
                 const std::vector<std::string> &input_values) {
    install_inference_guards();
    int64_t opset = default_opset(m);
    const int64_t newest = std::max(newest_known_opset(), kNewestReadableOpset);
    if (opset == 0)
        fail(ONNXSTREAM_ERR_INVALID_MODEL, path, ": the model imports no version of the default ONNX opset");
    if (opset > newest)
        fail(ONNXSTREAM_ERR_UNSUPPORTED, path, ": opset ", opset, " is newer than the newest onnxstream reads (",
             newest, "); re-export the model with opset ", kMinOpset, "..", newest);
    if (opset > kReadAsOpset) opset = downgrade_to_opset17(m, path, model_dir, input_values) > 0 ? kReadAsOpset : opset;
    // The version converter trusts the graph as much as shape inference does: it only ever sees a model
    // validate_model() accepted, and what it returns is validated again before the passes read it.
    validate_model(m, path);
    if (opset >= kMinOpset) return;
    try {
        m = onnx::version_conversion::ConvertVersion(m, static_cast<int>(kMinOpset));
    } catch (const Error &) {
        throw;
    } catch (const std::exception &e) {
        fail(ONNXSTREAM_ERR_UNSUPPORTED, path, ": opset ", opset, " is older than ", kMinOpset,
             " and ONNX's version converter could not upgrade it: ", e.what());
    }
    validate_model(m, cat(path, " (upgraded to opset ", kMinOpset, ")"));
}

Node node_from_proto(const onnx::NodeProto &p) {
    Node n;
    n.name = p.name();
    n.op_type = p.op_type();
    n.domain = p.domain() == "ai.onnx" ? std::string() : p.domain();
    n.inputs.assign(p.input().begin(), p.input().end());
    n.outputs.assign(p.output().begin(), p.output().end());
    n.attrs.assign(p.attribute().begin(), p.attribute().end());
    set_captures(n);
    return n;
}

using FunctionMap = std::map<std::pair<std::string, std::string>, const onnx::FunctionProto *>;

// Replace calls of model-local functions by their bodies: formal inputs/outputs become the call's values,
// internal values get a per-call prefix, attribute references take the call's attribute values.
void inline_functions(std::vector<Node> &nodes, const FunctionMap &functions, int depth, int &call_counter) {
    if (functions.empty()) return;
    std::vector<Node> out;
    out.reserve(nodes.size());
    for (Node &n : nodes) {
        std::string domain = n.domain;
        auto it = functions.find({domain, n.op_type});
        if (it == functions.end()) {
            out.push_back(std::move(n));
            continue;
        }
        if (depth >= kMaxFunctionDepth)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, "function ", n.op_type, " is nested more than ", kMaxFunctionDepth,
                 " levels deep (recursive functions are not allowed)");
        const onnx::FunctionProto &f = *it->second;
        std::string prefix = cat(n.name.empty() ? f.name() : n.name, "/", call_counter++, "/");
        std::unordered_map<std::string, std::string> rename;
        for (int i = 0; i < f.input_size(); ++i)
            rename[f.input(i)] = static_cast<size_t>(i) < n.inputs.size() ? n.inputs[static_cast<size_t>(i)] : "";
        for (int i = 0; i < f.output_size(); ++i) {
            size_t k = static_cast<size_t>(i);
            rename[f.output(i)] = k < n.outputs.size() && !n.outputs[k].empty() ? n.outputs[k] : prefix + f.output(i);
        }
        auto map_name = [&](const std::string &v) -> std::string {
            if (v.empty()) return v;
            auto r = rename.find(v);
            return r != rename.end() ? r->second : prefix + v;
        };
        std::vector<Node> body;
        for (int j = 0; j < f.node_size(); ++j) {
            Node b = node_from_proto(f.node(j));
            b.name = prefix + (b.name.empty() ? cat(b.op_type, "_", j) : b.name);
            for (auto &v : b.inputs) v = map_name(v);
            for (auto &v : b.outputs) v = map_name(v);
            std::vector<onnx::AttributeProto> attrs;
            for (auto &a : b.attrs) {
                if (a.ref_attr_name().empty()) {
                    attrs.push_back(std::move(a));
                    continue;
                }
                if (const onnx::AttributeProto *given = n.attr(a.ref_attr_name())) {
                    onnx::AttributeProto copy = *given;
                    copy.set_name(a.name());
                    attrs.push_back(std::move(copy));
                }
            }
            b.attrs = std::move(attrs);
            body.push_back(std::move(b));
        }
        inline_functions(body, functions, depth + 1, call_counter);
        for (Node &b : body) out.push_back(std::move(b));
    }
    nodes = std::move(out);
}

std::string list_names(const std::vector<std::string> &names) {
    std::string out;
    for (const auto &n : names) out += cat(out.empty() ? "" : ", ", "'", n, "'");
    return out.empty() ? "none" : out;
}

void apply_input_shape(IrGraph &g, const std::string &name, const Shape &dims) {
    bool is_input = std::find(g.inputs.begin(), g.inputs.end(), name) != g.inputs.end();
    if (!is_input) {
        if (g.is_constant(name))
            fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "--input-shape ", name, ": '", name,
                 "' is an initializer, not a graph input");
        fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "--input-shape ", name, ": the model has no input '", name,
             "' (inputs: ", list_names(g.inputs), ")");
    }
    ValueType &t = g.types[name];
    if (t.has_shape) {
        if (t.dims.size() != dims.size())
            fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "--input-shape ", name, ": the model declares rank ", t.dims.size(),
                 " ", t.shape_text(), " but ", shape_str(dims), " has rank ", dims.size());
        for (size_t i = 0; i < dims.size(); ++i)
            if (t.dims[i] >= 0 && t.dims[i] != dims[i])
                fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "--input-shape ", name, ": dimension ", i, " is fixed to ",
                     t.dims[i], " by the model ", t.shape_text(), " but ", shape_str(dims), " asks for ", dims[i]);
    }
    t.has_shape = true;
    t.dims = dims;
    t.dim_params.assign(dims.size(), std::string());
}

std::map<std::string, size_t> count_ops(const IrGraph &g) {
    std::map<std::string, size_t> counts;
    for (const Node &n : g.nodes) ++counts[n.engine_type()];
    return counts;
}

} // namespace

void check_input_shapes(const IrGraph &g) {
    GraphIndex idx(g);
    for (const auto &name : g.inputs) {
        if (!idx.is_used(name)) continue;
        const ValueType *t = g.type_of(name);
        if (!t || t->elem_type == 0)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, g.source, ": graph input '", name, "' has no tensor type");
        if (!t->is_static()) {
            std::string example;
            for (size_t i = 0; t->has_shape && i < t->dims.size(); ++i)
                example += cat(i ? "," : "", t->dims[i] >= 0 ? t->dims[i] : 1);
            fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, g.source, ": input '", name, "' has the symbolic shape ",
                 t->shape_text(), "; fix it with --input-shape ", name, "=",
                 t->has_shape ? example : std::string("d0,d1,..."));
        }
    }
}

namespace {

std::string parent_dir(std::string path) {
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    size_t slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string human_bytes(uint64_t b) {
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(b);
    int u = 0;
    while (v >= 1024 && u < 4) v /= 1024, ++u;
    char buf[32];
    std::snprintf(buf, sizeof(buf), u ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

} // namespace

std::pair<std::string, Shape> parse_input_shape(const std::string &text) {
    size_t eq = text.rfind('=');
    if (eq == std::string::npos || eq == 0)
        fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "--input-shape expects NAME=d0,d1,... but got '", text, "'");
    Shape dims;
    std::string list = text.substr(eq + 1);
    if (!list.empty())
        for (auto part : split(list, ',')) {
            int64_t d = 0;
            if (!parse_int64(part, d) || d < 0)
                fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "--input-shape ", text, ": '", part,
                     "' is not a non-negative dimension");
            dims.push_back(d);
        }
    return {text.substr(0, eq), dims};
}

namespace {
// model.txt lists an op's outputs by position and cannot leave one out before a later one (LSTM's Y when
// only Y_h is wanted): such an output gets a name, which nothing reads (outputs.txt keeps it from becoming
// a model output).
void name_middle_outputs(IrGraph &g) {
    std::unordered_set<std::string> taken;
    for (const Node &n : g.nodes) taken.insert(n.outputs.begin(), n.outputs.end());
    for (Node &n : g.nodes) {
        size_t last = n.outputs.size();
        while (last > 0 && n.outputs[last - 1].empty()) --last;
        for (size_t k = 0; k < last; ++k) {
            if (!n.outputs[k].empty()) continue;
            std::string name = cat(n.name, "/unused_output_", k);
            for (int i = 1; taken.count(name) || g.is_constant(name); ++i) name = cat(n.name, "/unused_output_", k, "_", i);
            taken.insert(name);
            n.outputs[k] = name;
        }
    }
}

IrGraph load_model_proto(onnx::ModelProto &m, const std::string &path, const std::string &model_dir,
                         const std::vector<std::pair<std::string, Shape>> &input_shapes,
                         const std::vector<std::string> &input_values = {}) {
    check_opset(m, path, model_dir, input_values);

    IrGraph g;
    g.source = path;
    g.model_dir = model_dir;
    g.ir_version = m.ir_version();
    g.opset = default_opset(m);
    g.opset_imports.assign(m.opset_import().begin(), m.opset_import().end());

    onnx::GraphProto *graph = m.mutable_graph();
    for (auto &t : *graph->mutable_initializer()) {
        if (t.name().empty()) fail(ONNXSTREAM_ERR_INVALID_MODEL, path, ": an initializer has no name");
        if (g.constants.count(t.name()))
            fail(ONNXSTREAM_ERR_INVALID_MODEL, path, ": two initializers are named '", t.name(), "'");
        std::string what = cat(path, ": initializer '", t.name(), "'");
        g.constants.emplace(t.name(), constant_from_proto(t, g.model_dir, what));
    }
    for (const auto &sparse : graph->sparse_initializer())
        fail(ONNXSTREAM_ERR_UNSUPPORTED, path, ": sparse initializer '", sparse.values().name(), "' is not supported");
    for (const auto &vi : graph->input()) {
        if (g.is_constant(vi.name())) continue; // an initializer listed as input (IR < 4 style): a constant
        if (vi.type().has_sequence_type() || vi.type().has_map_type() || vi.type().has_optional_type())
            fail(ONNXSTREAM_ERR_UNSUPPORTED, path, ": input '", vi.name(), "' is not a tensor");
        g.inputs.push_back(vi.name());
        g.types[vi.name()] = value_type_from_proto(vi.type());
    }
    for (const auto &vi : graph->output()) g.outputs.push_back(vi.name());

    FunctionMap functions;
    for (const auto &f : m.functions()) functions[{f.domain() == "ai.onnx" ? "" : f.domain(), f.name()}] = &f;
    std::vector<Node> nodes;
    nodes.reserve(static_cast<size_t>(graph->node_size()));
    for (const auto &p : graph->node()) nodes.push_back(node_from_proto(p));
    int calls = 0;
    inline_functions(nodes, functions, 0, calls);
    std::unordered_map<std::string, int> seen_names;
    for (size_t i = 0; i < nodes.size(); ++i) {
        Node &n = nodes[i];
        if (n.name.empty()) n.name = cat(n.op_type, "_", i);
        if (seen_names[n.name]++) n.name = cat(n.name, "_", i); // duplicate names would confuse every message
    }
    g.nodes = std::move(nodes);
    name_middle_outputs(g);

    for (const auto &[name, dims] : input_shapes) apply_input_shape(g, name, dims);
    topo_sort(g);
    return g;
}
} // namespace

IrGraph load_onnx(const std::string &path, const std::vector<std::pair<std::string, Shape>> &input_shapes,
                  const std::vector<std::string> &input_values) {
    onnx::ModelProto m = read_model_proto(path);
    size_t slash = path.rfind('/');
    return load_model_proto(m, path, slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash)),
                            input_shapes, input_values);
}

IrGraph load_onnx_bytes(const std::string &bytes, const std::string &source, const std::string &model_dir,
                        const std::vector<std::pair<std::string, Shape>> &input_shapes) {
    if (bytes.empty()) fail(ONNXSTREAM_ERR_INVALID_MODEL, source, " is empty");
    if (bytes.size() >= (1ull << 31))
        fail(ONNXSTREAM_ERR_INVALID_MODEL, source, " is ", bytes.size(), " bytes; a protobuf cannot exceed 2 GB");
    google::protobuf::io::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
    onnx::ModelProto m = parse_model_proto(stream, source);
    return load_model_proto(m, source, model_dir, input_shapes);
}

int simplify(IrGraph &g, ConstantEvaluator &evaluator, const FoldLimits &limits,
             const std::shared_ptr<SpillFile> &spill) {
    for (int round = 1; round <= kMaxRounds; ++round) {
        infer_types(g);
        bool changed = fold_constants(g, evaluator, limits, spill);
        changed |= inline_constant_ifs(g);
        changed |= unroll_loops(g);
        changed |= unroll_scans(g);
        changed |= eliminate_noops(g);
        changed |= fuse_batchnorm_into_conv(g);
        changed |= dedup_constants(g);
        changed |= fuse_chains(g);
        changed |= fuse_pad(g);
        changed |= matmul_add_to_gemm(g);
        changed |= conv1d_to_conv2d(g);
        changed |= fuse_groupnorm(g);
        changed |= fuse_layernorm(g);
        changed |= fuse_gelu(g);
        changed |= fuse_swish(g);
        changed |= fuse_groupnorm_swish(g);
        changed |= fuse_geglu_ffn(g);
        changed |= fuse_attention(g);
        changed |= eliminate_dead_code(g);
        changed |= settle_guards(g);
        // Only Ifs that no folding can decide are left: run them in the engine, branches guarded, and
        // simplify the branches' nodes with the rest of the graph.
        if (!changed && !flatten_ifs(g)) {
            fuse_matmul_bias(g); // after the fusions that match MatMul + Add (GEGLU, LayerNorm's users)
            return round;
        }
    }
    infer_types(g);
    fuse_matmul_bias(g); // keeps every value's type: the fused MatMul's output is the Add's
    return kMaxRounds;
}

// The graph inputs a value is computed from (in graph input order), found by walking its producers.
std::vector<std::string> graph_inputs_feeding(const IrGraph &g, const std::string &value) {
    GraphIndex index(g);
    std::set<std::string> seen, found;
    std::vector<std::string> todo{value};
    while (!todo.empty()) {
        const std::string v = todo.back();
        todo.pop_back();
        if (v.empty() || !seen.insert(v).second || g.is_constant(v)) continue;
        auto p = index.producer.find(v);
        if (p == index.producer.end()) {
            found.insert(v);
            continue;
        }
        const Node &n = g.nodes[static_cast<size_t>(p->second)];
        todo.insert(todo.end(), n.inputs.begin(), n.inputs.end());
    }
    std::vector<std::string> ordered;
    for (const std::string &in : g.inputs)
        if (found.count(in)) ordered.push_back(in);
    return ordered;
}

// "; a Loop converts when ...", naming the graph inputs a remaining Loop's trip count comes from, which
// --input-value can fix.
std::string loop_hint(const IrGraph &g) {
    std::vector<std::string> inputs;
    for (const Node &n : g.nodes)
        if (n.default_domain() && n.op_type == "Loop" && !n.inputs.empty())
            for (const std::string &in : graph_inputs_feeding(g, n.inputs[0]))
                if (std::find(inputs.begin(), inputs.end(), in) == inputs.end()) inputs.push_back(in);
    std::string hint = "; a Loop converts when its trip count is known at conversion (at most 1024) and its "
                       "condition stays true";
    if (inputs.empty()) return hint;
    std::string list;
    for (size_t i = 0; i < inputs.size(); ++i)
        list += cat(i == 0 ? "" : i + 1 == inputs.size() ? " and " : ", ", "'", inputs[i], "'");
    return cat(hint, ": its trip count comes from the values of ", list,
               ", which are computed at run time; fix them with --input-value");
}

void check_supported(const IrGraph &g) {
    const Registry &registry = Registry::builtin();
    std::map<std::string, std::pair<size_t, std::string>> missing; // type -> (count, first node)
    for (const Node &n : g.nodes) {
        if (n.default_domain() && registry.find(n.op_type)) continue;
        auto &m = missing[n.engine_type()];
        if (m.first++ == 0) m.second = n.name;
    }
    if (missing.empty()) return;
    std::string list;
    for (const auto &kv : missing)
        list += cat(list.empty() ? "" : "; ", kv.first, " x", kv.second.first, " (first: '", kv.second.second, "')");
    const std::string loop = missing.count("Loop") ? loop_hint(g) : "";
    const char *scan_hint = missing.count("Scan") ? "; a Scan converts when its scan inputs have static shapes "
                                                    "(at most 1024 steps)"
                                                  : "";
    fail(ONNXSTREAM_ERR_UNSUPPORTED, g.source, ": ", missing.size(), " operator type", missing.size() == 1 ? "" : "s",
         " cannot run in onnxstream: ", list, loop, scan_hint);
}

ConvertReport convert_onnx(const std::string &onnx_path, const std::string &out_dir, const ConvertOptions &options) {
    check_output_dir(out_dir);
    ConvertReport report;
    report.source = onnx_path;
    IrGraph g = load_onnx(onnx_path, options.input_shapes, options.input_values);
    pin_input_values(g, options.input_values);
    report.opset = g.opset;
    report.nodes_before = g.nodes.size();
    report.ops_before = count_ops(g);
    check_input_shapes(g);

    // Folded weights spill next to the output (where there is room for the model anyway), not to RAM.
    auto spill = std::make_shared<SpillFile>(parent_dir(out_dir));
    ConstantEvaluator evaluator;
    report.rounds = simplify(g, evaluator, options.fold, spill);
    report.nodes_after = g.nodes.size();
    report.ops_after = count_ops(g);
    check_supported(g);

    WriteOptions w;
    if (!options.resizable.empty()) {
        // The same conversion for the probe size: the differences say what follows the input size.
        std::vector<std::pair<std::string, Shape>> probe_shapes = options.input_shapes;
        for (const auto &entry : options.resizable) {
            auto it = std::find_if(probe_shapes.begin(), probe_shapes.end(),
                                   [&](const auto &e) { return e.first == entry.first; });
            if (it != probe_shapes.end()) it->second = entry.second;
            else probe_shapes.push_back(entry);
        }
        IrGraph probe = load_onnx(onnx_path, probe_shapes, options.input_values);
        pin_input_values(probe, options.input_values);
        check_input_shapes(probe);
        ConstantEvaluator probe_evaluator;
        simplify(probe, probe_evaluator, options.fold, spill);
        WriteOptions::SizeCheck declared, probed;
        for (const auto &name : g.inputs)
            if (const ValueType *t = g.type_of(name); t && t->is_static()) declared.inputs[name] = t->dims;
        for (const auto &name : probe.inputs)
            if (const ValueType *t = probe.type_of(name); t && t->is_static()) probed.inputs[name] = t->dims;
        for (const auto &[name, type] : probe.types)
            if (type.is_static()) probed.expected[name] = type.dims;
        make_resizable(g, probe, options.resizable, w.any_dims);
        w.size_checks = {declared, probed};
    }
    w.fp16 = options.fp16;
    w.keep_fp32 = options.keep_fp32;
    w.quantize_w8 = options.quantize_w8;
    w.quantize_w4 = options.quantize_w4;
    w.quantize_u8 = options.quantize_u8;
    w.safetensors = options.safetensors;
    report.written = write_model(g, out_dir, w);
    return report;
}

std::string ConvertReport::text() const {
    std::string out = cat("onnxstream-convert report: ", source, "\n");
    out += cat("  opset ", opset, "; ", nodes_before, " nodes before simplification, ", nodes_after, " after (", rounds,
               " round", rounds == 1 ? "" : "s", ")\n");
    std::map<std::string, std::pair<size_t, size_t>> rows;
    for (const auto &kv : ops_before) rows[kv.first].first = kv.second;
    for (const auto &kv : ops_after) rows[kv.first].second = kv.second;
    size_t width = 7;
    for (const auto &kv : rows) width = std::max(width, kv.first.size());
    char buf[256];
    std::snprintf(buf, sizeof(buf), "  %-*s %8s %8s\n", static_cast<int>(width), "op type", "before", "after");
    out += buf;
    for (const auto &kv : rows) {
        std::snprintf(buf, sizeof(buf), "  %-*s %8zu %8zu\n", static_cast<int>(width), kv.first.c_str(),
                      kv.second.first, kv.second.second);
        out += buf;
    }
    out += cat("  weights: ", written.weight_files, written.packed ? " tensors in model.safetensors, " : " files, ",
               written.weight_bytes, " bytes (", human_bytes(written.weight_bytes), ")");
    if (written.fp16_weights) out += cat(", ", written.fp16_weights, " stored as float16");
    out += "\n";
    if (written.w4_weights)
        out += cat("  int4 blockwise weights: ", written.w4_weights, ", saving ", written.w4_saved_bytes, " bytes (",
                   human_bytes(written.w4_saved_bytes), ")\n");
    if (written.w8_weights)
        out += cat("  int8 per-channel weights: ", written.w8_weights, ", saving ", written.w8_saved_bytes, " bytes (",
                   human_bytes(written.w8_saved_bytes), ")\n");
    if (!written.largest_weight.empty())
        out += cat("  largest weight: ", written.largest_weight, " (", written.largest_bytes, " bytes, ",
                   human_bytes(written.largest_bytes), ")\n");
    for (const auto &note : written.notes) out += cat("  note: ", note, "\n");
    return out;
}

} // namespace onnxstream::importer

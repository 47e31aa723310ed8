#include "onnx/validate.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <onnx/defs/schema.h>

#include "onnx/ir.h"
#include "ops/registry.h"
#include "util/checked.h"
#include "util/error.h"
#include "util/strings.h"

namespace onnxstream::importer {

namespace {

// Subgraphs nest through If/Loop/Scan attributes; deeper than this is an attack on the stack, not a model.
constexpr int kMaxGraphDepth = 32;

using Scope = std::unordered_set<std::string>;

std::string domain_key(const std::string &d) { return d == "ai.onnx" ? std::string() : d; }

struct Context {
    std::string path;
    // A graph's or a function's imports: domain ("" for ONNX) -> version.
    std::map<std::string, int64_t> opsets;
    // Model-local functions (domain, name): their calls are checked against the function, not a schema.
    const std::map<std::pair<std::string, std::string>, const onnx::FunctionProto *> *functions = nullptr;
    bool in_function = false;
};

std::string node_text(const onnx::NodeProto &n, int index) {
    const std::string type = domain_key(n.domain()).empty() ? n.op_type() : n.domain() + ":" + n.op_type();
    return n.name().empty() ? cat("node #", index, " (", type, ")") : cat("node '", n.name(), "' (", type, ")");
}

const char *plural(size_t n, const char *one, const char *many) { return n == 1 ? one : many; }

// How many values the typed field for `type` holds, in elements.
int64_t typed_count(const onnx::TensorProto &t) {
    switch (t.data_type()) {
    case onnx::TensorProto::FLOAT: return t.float_data_size();
    case onnx::TensorProto::COMPLEX64: return t.float_data_size() / 2;
    case onnx::TensorProto::DOUBLE: return t.double_data_size();
    case onnx::TensorProto::COMPLEX128: return t.double_data_size() / 2;
    case onnx::TensorProto::INT64: return t.int64_data_size();
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64: return t.uint64_data_size();
    case onnx::TensorProto::STRING: return t.string_data_size();
    default: return t.int32_data_size();
    }
}

const char *attr_type_name(int type) {
    return onnx::AttributeProto_AttributeType_IsValid(type)
               ? onnx::AttributeProto_AttributeType_Name(static_cast<onnx::AttributeProto_AttributeType>(type)).c_str()
               : "an unknown type";
}

void check_attribute_tensors(const onnx::AttributeProto &a, const std::string &what) {
    if (a.type() == onnx::AttributeProto::TENSOR) validate_tensor(a.t(), cat(what, " attribute '", a.name(), "'"));
    if (a.type() == onnx::AttributeProto::TENSORS)
        for (int i = 0; i < a.tensors_size(); ++i)
            validate_tensor(a.tensors(i), cat(what, " attribute '", a.name(), "' tensor ", i));
}

void validate_graph(const onnx::GraphProto &g, Context &ctx, std::vector<const Scope *> &outer, int depth,
                    const std::string &where);

// What opsets after the one the model is read as added to an ONNX operator and the engine implements
// (opset_downgrade.h): the schema the node is checked against does not know them.
bool newer_attribute(const std::string &op, const std::string &name) {
    if (op == "Resize") return name == "antialias" || name == "axes" || name == "keep_aspect_ratio_policy";
    if (op == "AveragePool") return name == "dilations";
    if (op == "Cast" || op == "CastLike") return name == "saturate";
    if (op == "DequantizeLinear") return name == "saturate" || name == "block_size";
    if (op == "QuantizeLinear") return name == "saturate" || name == "output_dtype" || name == "block_size";
    return false;
}
int newer_max_inputs(const std::string &op) { return op == "Pad" ? 4 : 0; } // Pad-18's axes

// Counts, required inputs/outputs and attributes of one node against its operator's schema.
void check_against_schema(const onnx::NodeProto &n, const std::string &what, const Context &ctx) {
    const std::string domain = domain_key(n.domain());
    if (ctx.functions && ctx.functions->count({domain, n.op_type()})) return; // checked as a function body
    auto imported = ctx.opsets.find(domain);
    if (imported == ctx.opsets.end())
        fail(ONNXSTREAM_ERR_INVALID_MODEL, ctx.path, ": ", what, " belongs to the domain '", n.domain(),
             "', which the model does not import");
    const onnx::OpSchema *schema =
        onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(imported->second), domain);
    if (!schema) {
        // Operators of other domains the ONNX library has no schema for are reported by the supported-op
        // check; no ONNX pass looks inside them. Nor inside operators newer than the opset the model is read
        // as (Gelu, GroupNormalization: opset_downgrade.h) that the engine runs: its own checks apply.
        if (!domain.empty() || Registry::builtin().find(n.op_type())) return;
        fail(ONNXSTREAM_ERR_INVALID_MODEL, ctx.path, ": ", what, ": ONNX opset ", imported->second,
             " has no operator '", n.op_type(), "'");
    }
    const std::string op = cat(n.op_type(), "-", schema->SinceVersion());
    const int ins = n.input_size(), outs = n.output_size();
    auto range = [](int lo, int hi) {
        return lo == hi ? cat(lo) : hi == std::numeric_limits<int>::max() ? cat(lo, " or more") : cat(lo, " to ", hi);
    };
    const int max_in = std::max(schema->max_input(), domain.empty() ? newer_max_inputs(n.op_type()) : 0);
    if (ins < schema->min_input() || ins > max_in)
        fail(ONNXSTREAM_ERR_INVALID_MODEL, ctx.path, ": ", what, " has ", ins, plural(size_t(ins), " input", " inputs"),
             " but ", op, " takes ", range(schema->min_input(), max_in));
    if (outs < schema->min_output() || outs > schema->max_output())
        fail(ONNXSTREAM_ERR_INVALID_MODEL, ctx.path, ": ", what, " has ", outs,
             plural(size_t(outs), " output", " outputs"), " but ", op, " produces ",
             range(schema->min_output(), schema->max_output()));
    const auto &formal_in = schema->inputs();
    for (int i = 0; i < ins && !formal_in.empty(); ++i) {
        const auto &p = formal_in[std::min(static_cast<size_t>(i), formal_in.size() - 1)];
        if (n.input(i).empty() && p.GetOption() != onnx::OpSchema::Optional)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, ctx.path, ": ", what, " leaves input ", i, " ('", p.GetName(),
                 "') empty, but ", op, " requires it");
    }
    const auto &formal_out = schema->outputs();
    for (int i = 0; i < outs && !formal_out.empty(); ++i) {
        const auto &p = formal_out[std::min(static_cast<size_t>(i), formal_out.size() - 1)];
        if (n.output(i).empty() && p.GetOption() != onnx::OpSchema::Optional)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, ctx.path, ": ", what, " leaves output ", i, " ('", p.GetName(),
                 "') unnamed, but ", op, " always produces it");
    }
    const auto &declared = schema->attributes();
    for (const auto &a : n.attribute()) {
        auto it = declared.find(a.name());
        if (it == declared.end()) {
            if (domain.empty() && newer_attribute(n.op_type(), a.name())) continue;
            if (domain.empty())
                fail(ONNXSTREAM_ERR_INVALID_MODEL, ctx.path, ": ", what, " has the attribute '", a.name(), "', which ",
                     op, " does not define");
            continue;
        }
        if (!a.ref_attr_name().empty()) continue; // a function's attribute reference: typed at the call
        if (a.type() != it->second.type)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, ctx.path, ": ", what, " attribute '", a.name(), "' is ",
                 attr_type_name(a.type()), " but ", op, " wants ", attr_type_name(it->second.type));
    }
    for (const auto &kv : declared) {
        if (!kv.second.required) continue;
        bool given = false;
        for (const auto &a : n.attribute()) given |= a.name() == kv.first;
        if (!given)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, ctx.path, ": ", what, " lacks the attribute '", kv.first, "', which ",
                 op, " requires");
    }
}

bool defined_in(const std::string &name, const Scope &local, const std::vector<const Scope *> &outer) {
    if (local.count(name)) return true;
    for (const Scope *s : outer)
        if (s->count(name)) return true;
    return false;
}

// The node list shared by graphs and function bodies. `local` holds the names the enclosing graph or
// function defines besides these nodes' outputs (inputs, initializers).
void validate_nodes(const google::protobuf::RepeatedPtrField<onnx::NodeProto> &nodes, Scope &local, Context &ctx,
                    std::vector<const Scope *> &outer, int depth, const std::string &where) {
    // Outputs first: ONNX files need not list nodes in order (the importer sorts them), so a name may be
    // read before the node producing it appears.
    std::unordered_map<std::string, int> producer;
    for (int i = 0; i < nodes.size(); ++i) {
        const onnx::NodeProto &n = nodes.Get(i);
        for (const auto &out : n.output()) {
            if (out.empty()) continue;
            if (local.count(out))
                fail(ONNXSTREAM_ERR_INVALID_MODEL, ctx.path, ": ", where, node_text(n, i), " writes '", out,
                     "', which ", producer.count(out) ? cat(node_text(nodes.Get(producer[out]), producer[out]), " also writes")
                                                      : std::string("is already a graph input or initializer"));
            local.insert(out);
            producer[out] = i;
        }
    }
    for (int i = 0; i < nodes.size(); ++i) {
        const onnx::NodeProto &n = nodes.Get(i);
        const std::string what = where + node_text(n, i);
        if (n.op_type().empty()) fail(ONNXSTREAM_ERR_INVALID_MODEL, ctx.path, ": ", what, " has no operator type");
        for (const auto &in : n.input())
            if (!in.empty() && !defined_in(in, local, outer))
                fail(ONNXSTREAM_ERR_INVALID_MODEL, ctx.path, ": ", what, " reads '", in,
                     "', which no node, graph input or initializer defines");
        std::unordered_set<std::string> attr_names;
        for (const auto &a : n.attribute()) {
            if (a.name().empty()) fail(ONNXSTREAM_ERR_INVALID_MODEL, ctx.path, ": ", what, " has an attribute with no name");
            if (!attr_names.insert(a.name()).second)
                fail(ONNXSTREAM_ERR_INVALID_MODEL, ctx.path, ": ", what, " has two attributes named '", a.name(), "'");
            if (!a.ref_attr_name().empty() && !ctx.in_function)
                fail(ONNXSTREAM_ERR_INVALID_MODEL, ctx.path, ": ", what, " attribute '", a.name(),
                     "' refers to a function attribute outside a function");
        }
        check_against_schema(n, what, ctx);
        for (const auto &a : n.attribute()) {
            check_attribute_tensors(a, cat(ctx.path, ": ", what));
            if (a.type() != onnx::AttributeProto::GRAPH && a.type() != onnx::AttributeProto::GRAPHS) continue;
            outer.push_back(&local);
            if (a.type() == onnx::AttributeProto::GRAPH)
                validate_graph(a.g(), ctx, outer, depth + 1, cat(what, " attribute '", a.name(), "': "));
            for (int k = 0; k < a.graphs_size(); ++k)
                validate_graph(a.graphs(k), ctx, outer, depth + 1, cat(what, " attribute '", a.name(), "' graph ", k, ": "));
            outer.pop_back();
        }
    }

    // Kahn's algorithm over the edges between these nodes: whatever is left over lies on a cycle.
    std::vector<int> pending(static_cast<size_t>(nodes.size()), 0);
    std::unordered_map<int, std::vector<int>> readers;
    for (int i = 0; i < nodes.size(); ++i)
        for (const auto &in : nodes.Get(i).input()) {
            auto p = producer.find(in);
            if (in.empty() || p == producer.end()) continue;
            ++pending[static_cast<size_t>(i)];
            readers[p->second].push_back(i);
        }
    std::vector<int> ready;
    for (int i = 0; i < nodes.size(); ++i)
        if (pending[static_cast<size_t>(i)] == 0) ready.push_back(i);
    size_t done = 0;
    while (!ready.empty()) {
        const int i = ready.back();
        ready.pop_back();
        ++done;
        for (int r : readers[i])
            if (--pending[static_cast<size_t>(r)] == 0) ready.push_back(r);
    }
    if (done != static_cast<size_t>(nodes.size())) {
        // The leftovers are the cycles plus everything downstream of them; peel off the leftovers no other
        // leftover reads until only the cycles remain.
        std::vector<bool> left(pending.size());
        std::vector<int> reads_left(pending.size(), 0); // how many leftover nodes read each leftover node
        for (size_t i = 0; i < pending.size(); ++i) left[i] = pending[i] > 0;
        for (int i = 0; i < nodes.size(); ++i)
            for (int r : readers[i]) reads_left[static_cast<size_t>(i)] += left[static_cast<size_t>(i)] && left[static_cast<size_t>(r)];
        std::vector<int> sinks;
        for (int i = 0; i < nodes.size(); ++i)
            if (left[static_cast<size_t>(i)] && reads_left[static_cast<size_t>(i)] == 0) sinks.push_back(i);
        while (!sinks.empty()) {
            const int i = sinks.back();
            sinks.pop_back();
            left[static_cast<size_t>(i)] = false;
            for (const auto &in : nodes.Get(i).input()) {
                auto p = producer.find(in);
                if (in.empty() || p == producer.end() || !left[static_cast<size_t>(p->second)]) continue;
                if (--reads_left[static_cast<size_t>(p->second)] == 0) sinks.push_back(p->second);
            }
        }
        std::string names;
        int listed = 0;
        for (int i = 0; i < nodes.size() && listed < 4; ++i)
            if (left[static_cast<size_t>(i)]) names += cat(listed++ ? ", " : "", node_text(nodes.Get(i), i));
        fail(ONNXSTREAM_ERR_INVALID_MODEL, ctx.path, ": ", where, "the nodes form a cycle: ", names,
             listed == 4 ? ", ..." : "", " wait on each other's outputs");
    }
}

void validate_graph(const onnx::GraphProto &g, Context &ctx, std::vector<const Scope *> &outer, int depth,
                    const std::string &where) {
    if (depth > kMaxGraphDepth)
        fail(ONNXSTREAM_ERR_INVALID_MODEL, ctx.path, ": ", where, "subgraphs are nested more than ", kMaxGraphDepth,
             " levels deep");
    Scope local;
    for (const auto &vi : g.input()) {
        if (vi.name().empty()) fail(ONNXSTREAM_ERR_INVALID_MODEL, ctx.path, ": ", where, "a graph input has no name");
        local.insert(vi.name());
    }
    std::unordered_set<std::string> initializers;
    for (const auto &t : g.initializer()) {
        if (t.name().empty()) fail(ONNXSTREAM_ERR_INVALID_MODEL, ctx.path, ": ", where, "an initializer has no name");
        if (!initializers.insert(t.name()).second)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, ctx.path, ": ", where, "two initializers are named '", t.name(), "'");
        validate_tensor(t, cat(ctx.path, ": ", where, "initializer '", t.name(), "'"));
        local.insert(t.name());
    }
    for (const auto &s : g.sparse_initializer()) local.insert(s.values().name());
    validate_nodes(g.node(), local, ctx, outer, depth, where);
    for (const auto &vi : g.output())
        if (vi.name().empty() || !defined_in(vi.name(), local, outer))
            fail(ONNXSTREAM_ERR_INVALID_MODEL, ctx.path, ": ", where, "graph output '", vi.name(),
                 "' is not produced by any node, input or initializer");
}

} // namespace

void validate_tensor(const onnx::TensorProto &t, const std::string &what) {
    const int type = t.data_type();
    if (type == onnx::TensorProto::UNDEFINED || !onnx::TensorProto_DataType_IsValid(type))
        fail(ONNXSTREAM_ERR_INVALID_MODEL, what, " has data type ", type, ", which is not an ONNX data type");
    const Shape dims(t.dims().begin(), t.dims().end());
    const int64_t numel = checked::numel_or_fail(dims, what);
    if (t.data_location() == onnx::TensorProto::EXTERNAL) return;
    if (type == onnx::TensorProto::STRING) {
        if (t.string_data_size() != numel)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, what, " holds ", t.string_data_size(), " strings but its shape ",
                 shape_str(dims), " needs ", numel);
        return;
    }
    const size_t esize = onnx_type_size(type);
    if (esize == 0) return; // a type the importer does not read: rejected with its name where it is used
    if (t.has_raw_data()) {
        const uint64_t bytes = onnx_stored_bytes(type, dims, what);
        if (t.raw_data().size() != bytes)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, what, " holds ", t.raw_data().size(), " bytes of data but ",
                 onnx_type_name(type), " ", shape_str(dims), " needs ", bytes);
        return;
    }
    const int64_t count = typed_count(t) * (onnx_4bit_type(type) ? 2 : 1); // 4-bit: two per int32
    if (count != numel && !(onnx_4bit_type(type) && count == numel + 1))
        fail(ONNXSTREAM_ERR_INVALID_MODEL, what, " holds ", count, " values but ", onnx_type_name(type), " ",
             shape_str(dims), " needs ", numel);
}

void validate_model(const onnx::ModelProto &m, const std::string &path) {
    Context ctx;
    ctx.path = path;
    for (const auto &op : m.opset_import()) ctx.opsets[domain_key(op.domain())] = op.version();
    std::map<std::pair<std::string, std::string>, const onnx::FunctionProto *> functions;
    for (const auto &f : m.functions()) functions[{domain_key(f.domain()), f.name()}] = &f;
    ctx.functions = &functions;

    std::vector<const Scope *> outer;
    validate_graph(m.graph(), ctx, outer, 0, "");

    for (const auto &f : m.functions()) {
        Context fctx = ctx;
        fctx.in_function = true;
        // A function imports its own opsets; those it leaves out come from the model.
        for (const auto &op : f.opset_import()) fctx.opsets[domain_key(op.domain())] = op.version();
        Scope local(f.input().begin(), f.input().end());
        const std::string where = cat("function '", f.name(), "': ");
        validate_nodes(f.node(), local, fctx, outer, 1, where);
        for (const auto &out : f.output())
            if (!local.count(out))
                fail(ONNXSTREAM_ERR_INVALID_MODEL, path, ": ", where, "output '", out, "' is not produced by any node");
    }
}

} // namespace onnxstream::importer

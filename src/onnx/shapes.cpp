#include "onnx/shapes.h"

#include "onnx/engine_shapes.h"

#include <cstring>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "onnx/engine_shapes.h"
#include "onnx/inference_guard.h"
#include "util/error.h"

namespace onnxstream::importer {

namespace {

// Constants up to this size carry their data into shape inference (shape tensors, axes, scales).
constexpr uint64_t kInferenceDataBytes = 64 << 10;

bool more_informative(const ValueType &fresh, const ValueType &old) {
    if (fresh.elem_type == 0) return false;
    if (old.elem_type == 0 || !old.has_shape) return true;
    if (!fresh.has_shape) return false;
    if (fresh.dims.size() != old.dims.size()) return true;
    size_t known_fresh = 0, known_old = 0;
    for (size_t i = 0; i < fresh.dims.size(); ++i) {
        known_fresh += fresh.dims[i] >= 0;
        known_old += old.dims[i] >= 0;
    }
    return known_fresh >= known_old;
}

// A guard's message ("Conv: the input has rank ...") with the failing node named in front, when the graph
// is flat (subgraph nodes are inferred in the middle of their parent's turn, which breaks the count).
std::string name_failing_node(const IrGraph &g, const std::string &message) {
    size_t seen = 0;
    for (const Node &n : g.nodes)
        for (const auto &a : n.attrs)
            if (a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS) return message;
    for (const Node &n : g.nodes) {
        if (!n.default_domain() || !is_guarded_op(n.op_type) || ++seen != guarded_calls()) continue;
        const std::string prefix = n.op_type + ": ";
        return cat(n.describe(), ": ", message.compare(0, prefix.size(), prefix) == 0 ? message.substr(prefix.size()) : message);
    }
    return message;
}

} // namespace

// ONNX's OneHot inference leaves the depth dimension unknown even when depth is a constant: fill it in.
// True when it resolved a dimension (the ops after the OneHot then need another inference round).
static bool resolve_one_hot_depth(IrGraph &g) {
    bool changed = false;
    for (const Node &n : g.nodes) {
        if (n.op_type != "OneHot" || !n.default_domain() || n.inputs.size() < 2 || n.outputs.empty()) continue;
        auto c = g.constants.find(n.inputs[1]);
        auto t = g.types.find(n.outputs[0]);
        if (c == g.constants.end() || t == g.types.end() || !t->second.has_shape) continue;
        auto bytes = c->second.bytes();
        int64_t depth = 0;
        if (c->second.type() == kOnnxInt64 && bytes->size() == 8) {
            std::memcpy(&depth, bytes->data(), 8);
        } else if (c->second.type() == kOnnxInt32 && bytes->size() == 4) {
            int32_t v;
            std::memcpy(&v, bytes->data(), 4);
            depth = v;
        } else if (c->second.type() == kOnnxFloat && bytes->size() == 4) {
            float v;
            std::memcpy(&v, bytes->data(), 4);
            if (!(v >= 1 && v < 9.0e15f)) continue;
            depth = static_cast<int64_t>(v);
        } else {
            continue;
        }
        ValueType &out = t->second;
        int64_t rank = static_cast<int64_t>(out.dims.size()), axis = n.attr_int("axis", -1);
        if (axis < 0) axis += rank;
        if (depth < 1 || axis < 0 || axis >= rank || out.dims[static_cast<size_t>(axis)] >= 0) continue;
        out.dims[static_cast<size_t>(axis)] = depth;
        if (static_cast<size_t>(axis) < out.dim_params.size()) out.dim_params[static_cast<size_t>(axis)].clear();
        changed = true;
    }
    return changed;
}

// ONNX cannot see through IfMerge (the run-time If's outputs, an engine op): an output whose two branch
// values have the same static type gets it. True when that resolved an output (the ops after it then need
// another inference round).
static bool resolve_if_merge_types(IrGraph &g) {
    bool changed = false;
    for (const Node &n : g.nodes) {
        if (n.op_type != "IfMerge" || n.inputs.size() != 1 + 2 * n.outputs.size()) continue;
        const size_t count = n.outputs.size();
        for (size_t k = 0; k < count; ++k) {
            const ValueType *a = g.type_of(n.inputs[1 + k]), *b = g.type_of(n.inputs[1 + count + k]);
            const ValueType *out = g.type_of(n.outputs[k]);
            if (!a || !b || !a->is_static() || !b->is_static() || a->elem_type != b->elem_type || a->dims != b->dims ||
                (out && out->is_static()))
                continue;
            g.types[n.outputs[k]] = *a;
            changed = true;
        }
    }
    return changed;
}

void infer_types(IrGraph &g) {
    onnx::ModelProto m;
    m.set_ir_version(std::max<int64_t>(g.ir_version, 7));
    for (const auto &op : g.opset_imports) *m.add_opset_import() = op;
    onnx::GraphProto *graph = m.mutable_graph();
    graph->set_name("onnxstream-convert");
    for (const auto &name : g.inputs) {
        auto *vi = graph->add_input();
        vi->set_name(name);
        if (const ValueType *t = g.type_of(name)) value_type_to_proto(*t, vi->mutable_type());
    }
    for (const auto &kv : g.constants) {
        const ConstantData &c = kv.second;
        if (c.type() != kOnnxString && c.byte_size() <= kInferenceDataBytes) {
            onnx::TensorProto *t = graph->add_initializer();
            t->set_name(kv.first);
            t->set_data_type(c.type());
            for (int64_t d : c.shape()) t->add_dims(d);
            t->set_raw_data(*c.bytes());
        } else {
            auto *vi = graph->add_input();
            vi->set_name(kv.first);
            ValueType v;
            v.elem_type = c.type();
            v.has_shape = true;
            v.dims = c.shape();
            v.dim_params.resize(v.dims.size());
            value_type_to_proto(v, vi->mutable_type());
        }
    }
    for (const Node &n : g.nodes) {
        onnx::NodeProto *p = graph->add_node();
        p->set_name(n.name);
        p->set_op_type(n.op_type);
        p->set_domain(n.domain);
        for (const auto &in : n.inputs) p->add_input(in);
        for (const auto &out : n.outputs) p->add_output(out);
        for (const auto &a : n.attrs) *p->add_attribute() = a;
    }
    for (const auto &name : g.outputs) graph->add_output()->set_name(name);
    // OneHot outputs whose depth dimension resolve_one_hot_depth filled in: ONNX keeps a known dimension of a
    // value's existing type, so the ops after them see it.
    // The same for IfMerge outputs (resolve_if_merge_types), which ONNX knows nothing about, and for the
    // values the engine's inference typed.
    for (const Node &n : g.nodes) {
        if (!n.default_domain()) continue;
        const bool all = n.op_type == "OneHot" || n.op_type == "IfMerge";
        for (const auto &out : n.outputs) {
            const ValueType *t = g.type_of(out);
            if (!(all || g.engine_typed.count(out)) || !t || !t->is_static() || g.is_constant(out)) continue;
            auto *vi = graph->add_value_info();
            vi->set_name(out);
            value_type_to_proto(*t, vi->mutable_type());
        }
    }

    // Data propagation resolves more shapes but is the younger, less travelled code in ONNX 1.12: when it
    // trips over a graph, plain inference (plus our own constant folding between rounds) still works.
    install_inference_guards();
    const onnx::ModelProto original = m;
    reset_guarded_calls();
    try {
        onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(),
                                           onnx::ShapeInferenceOptions(false, 0, true));
    } catch (const Error &e) {
        fail(e.status(), g.source, ": ", name_failing_node(g, e.what()));
    } catch (const std::exception &) {
        if (!guard_rejection().empty())
            fail(ONNXSTREAM_ERR_INVALID_MODEL, g.source, ": ", name_failing_node(g, guard_rejection()));
        m = original;
        reset_guarded_calls();
        try {
            onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(),
                                               onnx::ShapeInferenceOptions(false, 0, false));
        } catch (const Error &e) {
            fail(e.status(), g.source, ": ", name_failing_node(g, e.what()));
        } catch (const std::exception &e) {
            if (!guard_rejection().empty())
                fail(ONNXSTREAM_ERR_INVALID_MODEL, g.source, ": ", name_failing_node(g, guard_rejection()));
            fail(ONNXSTREAM_ERR_INVALID_MODEL, g.source, ": ONNX shape inference failed: ", e.what());
        }
    }

    auto record = [&](const onnx::ValueInfoProto &vi) {
        if (!vi.has_type() || g.is_constant(vi.name())) return;
        ValueType fresh = value_type_from_proto(vi.type());
        auto it = g.types.find(vi.name());
        if (it == g.types.end())
            g.types.emplace(vi.name(), std::move(fresh));
        else if (more_informative(fresh, it->second))
            it->second = std::move(fresh);
    };
    for (const auto &vi : m.graph().value_info()) record(vi);
    for (const auto &vi : m.graph().output()) record(vi);
    const bool one_hot = resolve_one_hot_depth(g);
    const bool merged = resolve_if_merge_types(g);
    if (infer_with_engine(g) || merged || one_hot) infer_types(g);
}

} // namespace onnxstream::importer

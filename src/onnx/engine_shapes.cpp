#include "onnx/engine_shapes.h"

#include <cstring>
#include <optional>

#include "onnx/attr_text.h"
#include "ops/registry.h"
#include "tensor/allocator.h"
#include "util/strings.h"

namespace onnxstream::importer {

namespace {

// Constants up to this size reach the engine's inference with their data (shapes, axes, scales, pads).
constexpr uint64_t kConstantDataBytes = 64 << 10;

bool needs_type(const IrGraph &g, const std::string &value) {
    if (value.empty() || g.is_constant(value)) return false;
    const ValueType *t = g.type_of(value);
    return !t || !t->is_static();
}

// The engine's inference of node n's outputs from its inputs' static types, or nothing when an input is not
// static, a type has no engine dtype, or the engine cannot infer it (any error: ONNX's verdict stands).
std::optional<std::vector<TensorInfo>> engine_infer(const IrGraph &g, const Node &n, const OpDef &def,
                                                    const Allocator &alloc, std::string *why = nullptr) {
    auto unknown = [&](std::string reason) -> std::optional<std::vector<TensorInfo>> {
        if (why) *why = std::move(reason);
        return std::nullopt;
    };
    std::vector<AttributeText> attrs;
    try {
        attrs = attributes_text(n, g.model_dir);
    } catch (const Error &e) {
        return unknown(e.what());
    }
    const std::string where = cat("shape inference of ", n.describe());
    std::vector<std::optional<TensorInfo>> inputs;
    std::vector<Tensor> data(n.inputs.size());
    for (size_t k = 0; k < n.inputs.size(); ++k) {
        const std::string &in = n.inputs[k];
        if (in.empty()) {
            inputs.push_back(std::nullopt);
            continue;
        }
        TensorInfo info;
        auto c = g.constants.find(in);
        if (c != g.constants.end()) {
            if (!dtype_of(c->second.type(), info.dtype))
                return unknown(cat("constant '", in, "' is ", onnx_type_name(c->second.type()), ", which the engine does not compute"));
            info.shape = c->second.shape();
            if (c->second.byte_size() <= kConstantDataBytes) {
                data[k] = make_tensor(alloc, info.dtype, info.shape);
                auto bytes = c->second.bytes();
                if (bytes->size() != data[k].byte_size()) return unknown(cat("constant '", in, "' has the wrong size"));
                if (!bytes->empty()) std::memcpy(data[k].raw(), bytes->data(), bytes->size());
            }
        } else {
            const ValueType *t = g.type_of(in);
            if (!t || !t->is_static())
                return unknown(cat("input '", in, "' has no static shape ", t ? t->shape_text() : std::string("(unknown)")));
            if (!dtype_of(t->elem_type, info.dtype))
                return unknown(cat("input '", in, "' is ", onnx_type_name(t->elem_type), ", which the engine does not compute"));
            info.shape = t->dims;
        }
        inputs.push_back(info);
    }
    // Ops whose output shape a run-time input decides fall back to the declared shape; a declared shape no
    // tensor can have marks that answer as unknown.
    const std::vector<Shape> declared(n.outputs.size(), Shape{kAnyDim});
    try {
        Attributes attributes(&attrs, where);
        NodeView view{n.name, n.op_type, where, attributes};
        InferContext ctx(view, std::move(inputs), declared,
                         [&](size_t i) -> const Tensor * { return data[i].empty() ? nullptr : &data[i]; });
        std::vector<TensorInfo> out = def.infer(ctx);
        if (out.size() != n.outputs.size()) return unknown("the engine gives another number of outputs");
        for (const TensorInfo &o : out)
            for (int64_t d : o.shape)
                if (d < 0) return unknown("its output shape depends on an input's values known only at run time");
        return out;
    } catch (const Error &e) {
        return unknown(e.what());
    }
}

} // namespace

std::string why_no_static_shape(const IrGraph &g, const Node &n) {
    const OpDef *def = n.default_domain() ? Registry::builtin().find(n.op_type) : nullptr;
    if (!def) return cat("the engine has no ", n.engine_type(), " op");
    Allocator alloc;
    std::string why;
    if (engine_infer(g, n, *def, alloc, &why)) return "";
    // An op that took the declared-shape fallback: name the computed input its shape comes from.
    if (why.find("(?)") != std::string::npos || why.rfind("its output shape", 0) == 0) {
        // An op that says which inputs decide its shape: name every one computed at run time.
        std::vector<std::string> computed;
        for (size_t j = 0; j < n.inputs.size() && j < 32; ++j)
            if (((def->shape_value_mask >> j) & 1u) && !n.inputs[j].empty() && !g.is_constant(n.inputs[j]))
                computed.push_back(cat("'", n.inputs[j], "'"));
        if (!computed.empty()) {
            std::string list = computed[0];
            for (size_t j = 1; j < computed.size(); ++j)
                list += cat(j + 1 == computed.size() ? " and " : ", ", computed[j]);
            return cat("its output shape comes from the values of ", list,
                       ", which are computed at run time; fix the values it depends on (--input-value)");
        }
        // Input 0 is usually the data (Reshape's, Compress's), so it comes last; it is the size itself for ops
        // with one input (the window functions). Bool inputs are masks (Compress's condition).
        for (size_t j = 1; j <= n.inputs.size(); ++j) {
            const std::string &in = n.inputs[j % n.inputs.size()];
            const ValueType *t = in.empty() || g.is_constant(in) ? nullptr : g.type_of(in);
            if (t && (t->elem_type == kOnnxInt64 || t->elem_type == kOnnxInt32 || t->elem_type == kOnnxBool))
                return cat("its output shape comes from the values of '", in,
                           "', which are computed at run time; fix the values it depends on (--input-value)");
        }
        return "its output shape depends on input values known only at run time";
    }
    return why;
}

bool infer_with_engine(IrGraph &g) {
    const Registry &registry = Registry::builtin();
    Allocator alloc;
    bool changed = false;
    for (const Node &n : g.nodes) {
        bool wanted = false;
        for (const auto &out : n.outputs) wanted = wanted || needs_type(g, out);
        const OpDef *def = n.default_domain() ? registry.find(n.op_type) : nullptr;
        if (!wanted || !def) continue;
        std::optional<std::vector<TensorInfo>> out = engine_infer(g, n, *def, alloc);
        if (!out) continue;
        for (size_t k = 0; k < n.outputs.size(); ++k) {
            if (!needs_type(g, n.outputs[k])) continue;
            const ValueType *old = g.type_of(n.outputs[k]);
            ValueType t;
            t.elem_type = onnx_type_of((*out)[k].dtype);
            // ONNX's own type wins where it has one (the engine may compute in another dtype).
            if (old && old->elem_type != 0 && old->elem_type != t.elem_type) continue;
            if (old && old->has_shape && old->dims.size() != (*out)[k].shape.size()) continue;
            t.has_shape = true;
            t.dims = (*out)[k].shape;
            t.dim_params.assign(t.dims.size(), "");
            g.types[n.outputs[k]] = std::move(t);
            g.engine_typed.insert(n.outputs[k]);
            changed = true;
        }
    }
    return changed;
}

} // namespace onnxstream::importer

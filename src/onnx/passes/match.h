// Small pattern-matching helpers shared by the recognition passes (groupnorm.cpp, layernorm.cpp, gelu.cpp,
// attention.cpp): they walk producer/consumer links of exported decompositions and replace a whole
// chain by one engine op. A chain is only rewritten when every value inside it has no reader outside it,
// so the graph computes the same thing with the chain's last output name kept.
#pragma once

#include <cmath>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "onnx/ir.h"
#include "ops/registry.h"
#include "tensor/half.h"

namespace onnxstream::importer::match {

inline bool is_float(int32_t elem_type) { return elem_type == kOnnxFloat || elem_type == kOnnxFloat16; }

// Whether the engine can run `op_type` (a pass must not produce an op the engine lacks).
inline bool engine_has(const char *op_type) { return Registry::builtin().find(op_type) != nullptr; }

inline onnx::AttributeProto attr_float(const std::string &name, float v) {
    onnx::AttributeProto a;
    a.set_name(name);
    a.set_type(onnx::AttributeProto::FLOAT);
    a.set_f(v);
    return a;
}

inline onnx::AttributeProto attr_string(const std::string &name, const std::string &v) {
    onnx::AttributeProto a;
    a.set_name(name);
    a.set_type(onnx::AttributeProto::STRING);
    a.set_s(v);
    return a;
}

// A float32 or float16 constant holding `values` (rounded to the type).
inline ConstantData float_constant(int32_t type, Shape shape, const std::vector<double> &values) {
    std::string bytes(values.size() * onnx_type_size(type), '\0');
    for (size_t i = 0; i < values.size(); ++i) {
        if (type == kOnnxFloat16) {
            uint16_t h = float_to_half(static_cast<float>(values[i]));
            std::memcpy(bytes.data() + i * 2, &h, 2);
        } else {
            float f = static_cast<float>(values[i]);
            std::memcpy(bytes.data() + i * 4, &f, 4);
        }
    }
    return ConstantData::in_memory(type == kOnnxFloat16 ? kOnnxFloat16 : kOnnxFloat, std::move(shape),
                                   std::move(bytes));
}

// The graph, its index and the nodes already claimed by a rewrite in this pass run. Rewrites replace
// the chain's last node in place and mark the others removed; finish() drops them and restores the
// topological order (fused nodes read values produced anywhere before their chain's last node).
class Matcher {
public:
    explicit Matcher(IrGraph &graph) : g(graph), idx(graph), removed_(graph.nodes.size(), false) {}

    IrGraph &g;
    GraphIndex idx;

    bool removed(size_t i) const { return removed_[i]; }
    void remove(size_t i) { removed_[i] = true; }
    size_t index_of(const Node &n) const { return static_cast<size_t>(&n - g.nodes.data()); }

    // The node producing `value` when it is `op_type` in the default domain and not yet claimed.
    Node *producer(const std::string &value, const char *op_type) {
        auto it = idx.producer.find(value);
        if (it == idx.producer.end() || removed_[static_cast<size_t>(it->second)]) return nullptr;
        Node &n = g.nodes[static_cast<size_t>(it->second)];
        return n.default_domain() && n.op_type == op_type ? &n : nullptr;
    }

    // The only reader of `value` when it is `op_type` (and `value` is no graph output).
    Node *sole_consumer(const std::string &value, const char *op_type) {
        if (idx.use_count(value) != 1) return nullptr;
        auto it = idx.consumers.find(value);
        if (it == idx.consumers.end() || it->second.size() != 1) return nullptr;
        size_t i = static_cast<size_t>(it->second[0]);
        Node &n = g.nodes[i];
        if (removed_[i] || !n.default_domain() || n.op_type != op_type) return nullptr;
        return &n;
    }

    bool single_use(const std::string &value) const { return idx.use_count(value) == 1; }

    // The value of a one-element float constant that cannot widen what it is broadcast with (rank at
    // most `max_rank`).
    bool scalar(const std::string &value, double &out, size_t max_rank = 8) const {
        auto it = g.constants.find(value);
        if (it == g.constants.end()) return false;
        const ConstantData &c = it->second;
        if ((!is_float(c.type()) && c.type() != kOnnxDouble) || c.numel() != 1 || c.shape().size() > max_rank)
            return false;
        out = c.float_values()[0];
        return true;
    }

    // The fully known type of a value, when it is a float tensor.
    const ValueType *float_type(const std::string &value) const {
        const ValueType *t = g.type_of(value);
        if (!t) {
            auto c = g.constants.find(value);
            if (c == g.constants.end() || !is_float(c->second.type())) return nullptr;
            constant_types_.push_back(ValueType{c->second.type(), true, c->second.shape(), {}});
            return &constant_types_.back();
        }
        return t->is_static() && is_float(t->elem_type) ? t : nullptr;
    }

    // For binary ops: the operand that is not `self` (nullptr when both or neither are).
    static const std::string *other_operand(const Node &n, const std::string &self) {
        if (n.inputs.size() != 2) return nullptr;
        if (n.inputs[0] == self && n.inputs[1] != self) return &n.inputs[1];
        if (n.inputs[1] == self && n.inputs[0] != self) return &n.inputs[0];
        return nullptr;
    }

    // Drop removed nodes; returns whether anything was rewritten.
    bool finish() {
        bool any = false;
        for (bool r : removed_) any |= r;
        if (!any) return false;
        drop_nodes(g, removed_);
        topo_sort(g);
        return true;
    }

private:
    std::vector<bool> removed_;
    mutable std::deque<ValueType> constant_types_; // deque: pointers handed out stay valid
};

// ONNX 1.12's shape inference knows no schema for the fused ops in an opset-13/14 graph (GroupNormalization
// is opset 18, Gelu opset 20, ScaledDotProductAttention is ours), so after a rewrite nothing downstream of
// a fused op gets a fresh type: the types already recorded carry the graph. Rewrites therefore wait until
// every value has its static type (typically the second round, after constant folding has resolved the
// shape chains).
inline bool all_typed(const IrGraph &g) {
    for (const Node &n : g.nodes)
        for (const auto &out : n.outputs) {
            if (out.empty()) continue;
            const ValueType *t = g.type_of(out);
            if (!t || !t->is_static()) return false;
        }
    return true;
}

inline bool close_to(double v, double want, double rel) { return std::fabs(v - want) <= rel * std::fabs(want); }

// Relative tolerance for a constant stored as float32 or float16 matching an irrational value.
inline double tolerance(const IrGraph &g, const std::string &constant) {
    auto it = g.constants.find(constant);
    return it != g.constants.end() && it->second.type() == kOnnxFloat16 ? 1e-3 : 1e-6;
}

} // namespace onnxstream::importer::match

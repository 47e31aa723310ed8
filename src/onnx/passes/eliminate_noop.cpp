// Ops that hand their first input through unchanged. Exporters leave many behind (Identity on weights,
// Dropout in eval mode, Cast to the type a tensor already has, Reshape to its own shape); each costs the
// engine a copy or a dispatch for nothing. A CastLike whose target's element type is known becomes the Cast
// it stands for first: the `like` input is read for its type only, and then nothing has to feed it.
#include <unordered_set>

#include "onnx/passes/passes.h"

namespace onnxstream::importer {

namespace {

bool same_static_shape(const IrGraph &g, const std::string &a, const std::string &b) {
    Shape sa, sb;
    return static_shape_of(g, a, sa) && static_shape_of(g, b, sb) && sa == sb;
}

bool constant_all_zero(const IrGraph &g, const std::string &name) {
    auto it = g.constants.find(name);
    if (it == g.constants.end()) return false;
    int32_t t = it->second.type();
    if (t != kOnnxInt64 && t != kOnnxInt32) return false;
    for (int64_t v : it->second.int_values())
        if (v != 0) return false;
    return true;
}

bool is_noop(const IrGraph &g, const GraphIndex &idx, const Node &n) {
    if (!n.default_domain() || n.inputs.empty() || n.inputs[0].empty() || n.outputs.empty() || n.outputs[0].empty())
        return false;
    const std::string &x = n.inputs[0], &y = n.outputs[0];
    const std::string &op = n.op_type;
    if (op == "Identity") return true;
    if (op == "Dropout") {
        if (n.outputs.size() > 1 && !n.outputs[1].empty() && idx.is_used(n.outputs[1])) return false; // mask
        if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
            auto it = g.constants.find(n.inputs[2]);
            if (it == g.constants.end() || it->second.int_values() != std::vector<int64_t>{0}) return false;
        }
        return true;
    }
    if (op == "Cast") {
        int32_t from = elem_type_of(g, x);
        return from != 0 && from == n.attr_int("to", -1);
    }
    if (op == "Transpose") {
        Shape shape;
        if (!static_shape_of(g, x, shape)) return false;
        std::vector<int64_t> perm = n.attr_ints("perm");
        if (perm.empty()) return shape.size() <= 1;
        for (size_t i = 0; i < perm.size(); ++i)
            if (perm[i] != static_cast<int64_t>(i)) return false;
        return true;
    }
    if (op == "Pad") {
        bool zero = true;
        if (n.attr("pads")) {
            for (int64_t p : n.attr_ints("pads")) zero = zero && p == 0;
        } else {
            zero = n.inputs.size() > 1 && constant_all_zero(g, n.inputs[1]);
        }
        return zero && same_static_shape(g, x, y);
    }
    if (op == "Concat") {
        size_t present = 0;
        for (const auto &in : n.inputs) present += !in.empty();
        return present == 1;
    }
    if (op == "Split") return n.outputs.size() == 1 && same_static_shape(g, x, y);
    if (op == "Reshape" || op == "Expand" || op == "Squeeze" || op == "Unsqueeze" || op == "Flatten" || op == "Tile")
        return n.outputs.size() == 1 && same_static_shape(g, x, y);
    return false;
}

void castlike_to_cast(const IrGraph &g, Node &n) {
    if (n.op_type != "CastLike" || !n.default_domain() || n.inputs.size() != 2 || n.inputs[1].empty()) return;
    const int32_t to = elem_type_of(g, n.inputs[1]);
    if (to == 0) return;
    n.op_type = "Cast";
    n.inputs.resize(1);
    onnx::AttributeProto a;
    a.set_name("to");
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(to);
    set_attr(n, a);
}

} // namespace

bool eliminate_noops(IrGraph &g) {
    GraphIndex idx(g);
    std::unordered_map<std::string, std::string> alias; // removed value -> the value that replaces it
    auto resolve = [&](std::string name) {
        for (auto it = alias.find(name); it != alias.end(); it = alias.find(name)) name = it->second;
        return name;
    };
    std::unordered_map<std::string, size_t> producer; // value -> index in `kept`
    std::vector<Node> kept;
    kept.reserve(g.nodes.size());
    bool changed = false;
    for (Node &n : g.nodes) {
        rename_reads(n, resolve);
        if (n.op_type == "CastLike") {
            castlike_to_cast(g, n);
            changed = changed || n.op_type == "Cast";
        }
        if (is_noop(g, idx, n)) {
            const std::string x = n.inputs[0], y = n.outputs[0];
            if (!idx.graph_outputs.count(y)) {
                alias[y] = x;
                changed = true;
                continue;
            }
            // y is a graph output: the node making x writes y itself (x must be an ordinary activation).
            auto p = producer.find(x);
            if (p != producer.end() && !idx.graph_outputs.count(x)) {
                size_t at = p->second;
                for (auto &o : kept[at].outputs)
                    if (o == x) o = y;
                for (Node &k : kept) rename_reads(k, [&](const std::string &v) { return v == x ? y : v; });
                alias[x] = y;
                producer.erase(p);
                producer[y] = at;
                changed = true;
                continue;
            }
        }
        for (const auto &out : n.outputs)
            if (!out.empty()) producer[out] = kept.size();
        kept.push_back(std::move(n));
    }
    g.nodes = std::move(kept);
    return changed;
}

} // namespace onnxstream::importer

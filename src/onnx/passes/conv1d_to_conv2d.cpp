// The engine's fast convolution path (XNNPACK, OHWI "_nhwc" weights) is 2-D. A 1-D Conv over (N, C, L) is
// the same computation as a 2-D Conv over (N, C, 1, L) with a (O, I/g, 1, K) kernel, so it becomes
// Unsqueeze(axis 2) -> Conv2d -> Squeeze(axis 2); both reshapes are free views, and between two 1-D
// convolutions the Squeeze/Unsqueeze pair cancels out (fuse_chains, then eliminate_noops).
#include <cstring>
#include <unordered_set>

#include "onnx/passes/passes.h"

namespace onnxstream::importer {

namespace {

bool float_type(int32_t t) { return t == kOnnxFloat || t == kOnnxFloat16; }

bool convertible(const IrGraph &g, const Node &n) {
    if (!n.default_domain() || n.op_type != "Conv" || n.inputs.size() < 2 || n.outputs.size() != 1) return false;
    if (n.inputs[0].empty() || g.is_constant(n.inputs[0]) || n.outputs[0].empty()) return false;
    const ValueType *x = g.type_of(n.inputs[0]);
    if (!x || !x->has_shape || x->dims.size() != 3) return false;
    auto w = g.constants.find(n.inputs[1]);
    if (w == g.constants.end() || w->second.shape().size() != 3 || !float_type(w->second.type())) return false;
    for (const char *key : {"kernel_shape", "strides", "dilations"})
        if (n.attr(key) && n.attr_ints(key).size() != 1) return false;
    if (n.attr("pads") && n.attr_ints("pads").size() != 2) return false;
    return true;
}

} // namespace

bool conv1d_to_conv2d(IrGraph &g) {
    std::vector<size_t> todo;
    for (size_t i = 0; i < g.nodes.size(); ++i)
        if (convertible(g, g.nodes[i])) todo.push_back(i);
    if (todo.empty()) return false;

    GraphIndex idx(g);
    std::unordered_set<std::string> issued; // names handed out in this pass, not yet in the graph
    auto unique = [&](const std::string &base) {
        std::string name = g.fresh_name(base);
        for (int k = 1; issued.count(name); ++k) name = g.fresh_name(base + "_" + std::to_string(k));
        issued.insert(name);
        return name;
    };
    const bool axes_as_input = g.opset >= 13; // Squeeze/Unsqueeze-13 take axes as an input
    std::string axes_name;
    if (axes_as_input) {
        axes_name = unique("conv1d_axis_2");
        int64_t two = 2;
        std::string bytes(sizeof two, '\0');
        std::memcpy(bytes.data(), &two, sizeof two);
        g.constants[axes_name] = ConstantData::in_memory(kOnnxInt64, {1}, std::move(bytes));
    }

    std::vector<std::vector<Node>> replacement(g.nodes.size());
    for (size_t i : todo) {
        const Node &conv = g.nodes[i];
        const std::string &x = conv.inputs[0], &y = conv.outputs[0];

        // The kernel gains a height of 1; the bytes are the same. Keep the name when only this Conv reads it.
        const ConstantData &w = g.constants.at(conv.inputs[1]);
        Shape shape4{w.shape()[0], w.shape()[1], 1, w.shape()[2]};
        std::string w_name = idx.use_count(conv.inputs[1]) == 1 ? conv.inputs[1] : unique(conv.inputs[1] + "_2d");
        ConstantData w4 = ConstantData::in_memory(w.type(), shape4, *w.bytes());

        Node unsq;
        unsq.name = unique(conv.name + "_unsqueeze");
        unsq.op_type = "Unsqueeze";
        unsq.inputs = {x};
        unsq.outputs = {unique(x + "_2d")};
        Node conv2 = conv;
        conv2.inputs[0] = unsq.outputs[0];
        conv2.inputs[1] = w_name;
        conv2.outputs = {unique(y + "_2d")};
        conv2.attrs.clear();
        for (const auto &a : conv.attrs) {
            const std::string &key = a.name();
            if (key == "kernel_shape" || key == "strides" || key == "dilations") {
                conv2.attrs.push_back(ints_attr(key, {1, a.ints(0)}));
            } else if (key == "pads") {
                conv2.attrs.push_back(ints_attr(key, {0, a.ints(0), 0, a.ints(1)}));
            } else {
                conv2.attrs.push_back(a); // group, auto_pad (SAME/VALID pad nothing on a height-1 axis)
            }
        }
        Node sq;
        sq.name = unique(conv.name + "_squeeze");
        sq.op_type = "Squeeze";
        sq.inputs = {conv2.outputs[0]};
        sq.outputs = {y};
        if (axes_as_input) {
            unsq.inputs.push_back(axes_name);
            sq.inputs.push_back(axes_name);
        } else {
            unsq.attrs.push_back(ints_attr("axes", {2}));
            sq.attrs.push_back(ints_attr("axes", {2}));
        }
        g.constants[w_name] = std::move(w4); // after the last use of `w`, which this may replace
        replacement[i] = {std::move(unsq), std::move(conv2), std::move(sq)};
    }
    std::vector<Node> nodes;
    nodes.reserve(g.nodes.size() + 2 * todo.size());
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        if (replacement[i].empty()) {
            nodes.push_back(std::move(g.nodes[i]));
        } else {
            for (Node &n : replacement[i]) nodes.push_back(std::move(n));
        }
    }
    g.nodes = std::move(nodes);
    return true;
}

} // namespace onnxstream::importer

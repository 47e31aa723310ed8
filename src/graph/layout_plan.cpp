#include "graph/layout_plan.h"

#include <cstring>
#include <numeric>
#include <string>

namespace onnxstream {

namespace {

// Ops whose result does not depend on how a rank-4 tensor is laid out, as long as every rank-4 input and
// output uses the same layout and the axis attribute follows the channel axis: run on (N,H,W,C) views,
// they compute the NHWC result. data_inputs: how many leading inputs are tensors of that kind (-1: all;
// the rest, like Clip's min/max or Split's sizes, are handed over untouched).
struct FollowOp {
    const char *type;
    int data_inputs;
    bool has_axis;
    int64_t default_axis;
};

const FollowOp kFollowOps[] = {
    // unary
    {"Sqrt", 1, false, 0}, {"Neg", 1, false, 0}, {"Abs", 1, false, 0}, {"Sign", 1, false, 0},
    {"Exp", 1, false, 0}, {"Log", 1, false, 0}, {"Erf", 1, false, 0}, {"Sin", 1, false, 0},
    {"Cos", 1, false, 0}, {"Tanh", 1, false, 0}, {"Reciprocal", 1, false, 0}, {"Floor", 1, false, 0},
    {"Ceil", 1, false, 0}, {"Round", 1, false, 0}, {"Identity", 1, false, 0}, {"Sigmoid", 1, false, 0},
    {"Relu", 1, false, 0}, {"LeakyRelu", 1, false, 0}, {"Elu", 1, false, 0}, {"Selu", 1, false, 0},
    {"Celu", 1, false, 0}, {"Gelu", 1, false, 0}, {"HardSigmoid", 1, false, 0},
    {"HardSwish", 1, false, 0}, {"Swish", 1, false, 0}, {"Softplus", 1, false, 0}, {"Softsign", 1, false, 0},
    {"Mish", 1, false, 0}, {"ThresholdedRelu", 1, false, 0}, {"Clip", 1, false, 0},
    // broadcasting
    {"Add", -1, false, 0}, {"Sub", -1, false, 0}, {"Mul", -1, false, 0}, {"Div", -1, false, 0},
    {"Sum", -1, false, 0}, {"Mean", -1, false, 0}, {"Min", -1, false, 0}, {"Max", -1, false, 0},
    {"Pow", -1, false, 0}, {"PRelu", -1, false, 0}, {"Where", -1, false, 0},
    // axis
    {"Concat", -1, true, 0}, {"Split", 1, true, 0},
};

const FollowOp *follow_op(const std::string &type) {
    for (const FollowOp &f : kFollowOps)
        if (type == f.type) return &f;
    return nullptr;
}

// NCHW position -> NHWC position.
constexpr int64_t kPhysicalAxis[4] = {0, 3, 1, 2};

Shape physical(const Shape &s) { return {s[0], s[2], s[3], s[1]}; }

// Channels-last and channels-first data are the same bytes when there is one channel or one pixel.
bool trivial(const Shape &s) { return s[1] == 1 || s[2] * s[3] == 1; }

bool is_candidate(const std::optional<TensorInfo> &info) {
    return info && info->dtype == DType::F32 && info->shape.size() == 4 && !info->quant.present;
}

struct UnionFind {
    std::vector<int> parent;
    explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
    int find(int v) {
        while (parent[static_cast<size_t>(v)] != v) v = parent[static_cast<size_t>(v)] = parent[static_cast<size_t>(parent[static_cast<size_t>(v)])];
        return v;
    }
    void unite(int a, int b) { parent[static_cast<size_t>(find(a))] = find(b); }
};

// What a layout-independent node needs to run on NHWC views; capable=false when one of its inputs could
// not be presented channels-last without moving data (a full-size NCHW weight, rank > 4, ...).
struct FollowNode {
    bool capable = false;
    std::vector<bool> member;    // per input: a rank-4 float32 activation that shares the node's layout
    std::vector<Shape> in_shape; // per input: the reshaped view of a non-member data input
};

FollowNode analyse_follow(const Node &node, const FollowOp &op, const Plan &plan) {
    FollowNode f;
    f.member.assign(node.inputs.size(), false);
    f.in_shape.assign(node.inputs.size(), {});
    for (const TensorInfo &out : plan.node_outputs[static_cast<size_t>(node.index)])
        if (out.dtype != DType::F32 || out.shape.size() != 4) return f;
    const size_t data = op.data_inputs < 0 ? node.inputs.size()
                                           : std::min(node.inputs.size(), static_cast<size_t>(op.data_inputs));
    bool any_member = false;
    for (size_t i = 0; i < data; ++i) {
        const NodeInput &in = node.inputs[i];
        std::optional<TensorInfo> info;
        if (in.kind == NodeInput::Value) info = plan.values[static_cast<size_t>(in.value)];
        else if (in.kind == NodeInput::Weight) info = in.weight.info();
        else continue;
        if (!info) return f;
        if (in.kind == NodeInput::Value && is_candidate(info)) {
            f.member[i] = any_member = true;
            continue;
        }
        if (info->shape.size() > 4 || info->quant.present) return f;
        Shape aligned(4 - info->shape.size(), 1);
        aligned.insert(aligned.end(), info->shape.begin(), info->shape.end());
        if (!trivial(aligned)) return f;
        f.in_shape[i] = physical(aligned);
    }
    f.capable = any_member;
    return f;
}

std::shared_ptr<const std::vector<AttributeText>> remap_axis(const Node &node, const FollowOp &op) {
    auto attrs = std::make_shared<std::vector<AttributeText>>(node.line->attrs);
    int64_t axis = node.attrs.get_int("axis", op.default_axis);
    if (axis < 0) axis += 4;
    if (axis < 0 || axis > 3) return nullptr;
    const std::string text = std::to_string(kPhysicalAxis[axis]);
    bool found = false;
    for (AttributeText &a : *attrs)
        if (a.key == "axis") {
            a.value = text;
            found = true;
        }
    if (!found) attrs->push_back(AttributeText{"axis", text, 0});
    return attrs;
}

} // namespace

void plan_layouts(const Graph &graph, Plan &plan) {
    const auto &nodes = graph.nodes();
    const auto &values = graph.values();
    const size_t nv = values.size();
    std::vector<const FollowOp *> follow_ops(nodes.size(), nullptr);
    std::vector<FollowNode> follow(nodes.size());
    std::vector<bool> same(nodes.size(), false); // NhwcIo::Same nodes whose input 0 and output share a layout
    UnionFind classes(nv);
    for (const Node &node : nodes) {
        if (node.def->nhwc == NhwcIo::Same && node.outputs.size() == 1 && !node.inputs.empty() &&
            node.inputs[0].kind == NodeInput::Value && is_candidate(plan.values[static_cast<size_t>(node.inputs[0].value)]) &&
            is_candidate(plan.values[static_cast<size_t>(node.outputs[0])])) {
            same[static_cast<size_t>(node.index)] = true;
            classes.unite(node.inputs[0].value, node.outputs[0]);
            continue;
        }
        const FollowOp *op = follow_op(node.line->type);
        if (!op) continue;
        FollowNode f = analyse_follow(node, *op, plan);
        if (f.capable && op->has_axis && !remap_axis(node, *op)) f.capable = false;
        if (f.capable) {
            const int first = node.outputs.at(0);
            for (size_t i = 0; i < node.inputs.size(); ++i)
                if (f.member[i]) classes.unite(node.inputs[i].value, first);
            for (int v : node.outputs) classes.unite(v, first);
            follow_ops[static_cast<size_t>(node.index)] = op;
        }
        follow[static_cast<size_t>(node.index)] = std::move(f);
    }
    auto is_native_in = [&](const Node &n, size_t k) { return n.def->nhwc == NhwcIo::Native && k == 0; };
    auto is_follow_in = [&](const Node &n, size_t k) {
        const FollowNode &f = follow[static_cast<size_t>(n.index)];
        if (same[static_cast<size_t>(n.index)]) return k == 0;
        return follow_ops[static_cast<size_t>(n.index)] != nullptr && f.member[k];
    };

    // Per class: transposes saved inside native ops (gain) against boundary conversions (cost).
    std::vector<int64_t> gain(nv, 0), cost(nv, 0);
    std::vector<bool> forbidden(nv, false), candidate(nv, false);
    std::vector<bool> is_output(nv, false);
    for (int v : graph.outputs()) is_output[static_cast<size_t>(v)] = true;
    for (size_t v = 0; v < nv; ++v) {
        if (!is_candidate(plan.values[v])) continue;
        candidate[v] = true;
        const int root = classes.find(static_cast<int>(v));
        const int64_t weight = trivial(plan.values[v]->shape) ? 0 : 1;
        if (is_output[v]) forbidden[static_cast<size_t>(root)] = true;
        const Value &val = values[v];
        if (val.producer < 0) {
            cost[static_cast<size_t>(root)] += weight;
        } else {
            const Node &p = nodes[static_cast<size_t>(val.producer)];
            const bool first_output = !p.outputs.empty() && p.outputs[0] == static_cast<int>(v);
            if (p.def->nhwc == NhwcIo::Native && first_output) gain[static_cast<size_t>(root)] += weight;
            else if (!follow_ops[static_cast<size_t>(p.index)] && !same[static_cast<size_t>(p.index)])
                cost[static_cast<size_t>(root)] += weight;
        }
        bool rigid_consumer = false;
        for (int c : val.consumers) {
            const Node &n = nodes[static_cast<size_t>(c)];
            for (size_t k = 0; k < n.inputs.size(); ++k) {
                if (n.inputs[k].kind != NodeInput::Value || n.inputs[k].value != static_cast<int>(v)) continue;
                if (is_native_in(n, k)) gain[static_cast<size_t>(root)] += weight;
                else if (!is_follow_in(n, k)) rigid_consumer = true;
            }
        }
        if (rigid_consumer) cost[static_cast<size_t>(root)] += weight;
    }
    std::vector<bool> nhwc(nv, false);
    for (size_t v = 0; v < nv; ++v) {
        if (!candidate[v]) continue;
        const size_t root = static_cast<size_t>(classes.find(static_cast<int>(v)));
        nhwc[v] = !forbidden[root] && gain[root] > cost[root];
    }

    plan.layouts.assign(nodes.size(), NodeLayout());
    for (const Node &node : nodes) {
        NodeLayout &l = plan.layouts[static_cast<size_t>(node.index)];
        l.in_nhwc.assign(node.inputs.size(), false);
        l.out_nhwc.assign(node.outputs.size(), false);
        const FollowOp *op = follow_ops[static_cast<size_t>(node.index)];
        if (op) {
            if (!nhwc[static_cast<size_t>(node.outputs.at(0))]) continue;
            const FollowNode &f = follow[static_cast<size_t>(node.index)];
            l.follow = true;
            for (size_t i = 0; i < node.inputs.size(); ++i) l.in_nhwc[i] = f.member[i];
            l.in_shape = f.in_shape;
            l.out_nhwc.assign(node.outputs.size(), true);
            for (TensorInfo info : plan.node_outputs[static_cast<size_t>(node.index)]) {
                info.shape = physical(info.shape);
                l.out_infos.push_back(std::move(info));
            }
            if (op->has_axis) l.attrs = remap_axis(node, *op);
        } else if (same[static_cast<size_t>(node.index)]) {
            l.in_nhwc[0] = l.out_nhwc[0] = nhwc[static_cast<size_t>(node.outputs[0])];
        } else if (node.def->nhwc == NhwcIo::Native) {
            if (!node.inputs.empty() && node.inputs[0].kind == NodeInput::Value)
                l.in_nhwc[0] = nhwc[static_cast<size_t>(node.inputs[0].value)];
            if (!node.outputs.empty()) l.out_nhwc[0] = nhwc[static_cast<size_t>(node.outputs[0])];
        }
    }
}

} // namespace onnxstream

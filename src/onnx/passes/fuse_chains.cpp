// Back-to-back layout ops that compose into one: exporters leave Transpose pairs around reshapes, and
// view/reshape/squeeze/unsqueeze chains from PyTorch's .view/.flatten/.unsqueeze calls; each op costs a
// dispatch and, for Transpose, a full copy. Fused only when the value between the two ops has no other
// reader and is not a graph output, so nothing else depends on it.
//   Transpose(Transpose(x, p1), p2)          -> Transpose(x, p1[p2[i]])  (an identity is then a no-op)
//   {Reshape,Squeeze,Unsqueeze,Flatten} x2   -> Reshape(x, constant static output shape)
//   Slice(Slice(x)) on disjoint axes         -> one Slice with both sets of (start, end, axis, step)
#include <algorithm>
#include <cstring>

#include "onnx/passes/passes.h"

namespace onnxstream::importer {

namespace {

std::string add_int64_constant(IrGraph &g, const std::string &base, const std::vector<int64_t> &values) {
    std::string name = g.fresh_name(base);
    std::string bytes(values.size() * sizeof(int64_t), '\0');
    if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
    g.constants[name] = ConstantData::in_memory(kOnnxInt64, {static_cast<int64_t>(values.size())}, std::move(bytes));
    return name;
}

bool is_reshape_like(const std::string &op) {
    return op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" || op == "Flatten";
}

// The permutation a Transpose applies (its default reverses the axes).
bool transpose_perm(const IrGraph &g, const Node &n, std::vector<int64_t> &perm) {
    perm = n.attr_ints("perm");
    Shape shape;
    if (perm.empty()) {
        if (!static_shape_of(g, n.inputs[0], shape)) return false;
        for (size_t i = shape.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
    }
    std::vector<bool> seen(perm.size(), false);
    for (int64_t p : perm) {
        if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[static_cast<size_t>(p)]) return false;
        seen[static_cast<size_t>(p)] = true;
    }
    return true;
}

bool fuse_transposes(IrGraph &g, const Node &first, Node &second) {
    std::vector<int64_t> p1, p2;
    if (!transpose_perm(g, first, p1) || !transpose_perm(g, second, p2) || p1.size() != p2.size()) return false;
    std::vector<int64_t> perm(p2.size());
    for (size_t i = 0; i < p2.size(); ++i) perm[i] = p1[static_cast<size_t>(p2[i])];
    second.inputs = {first.inputs[0]};
    set_attr(second, ints_attr("perm", perm));
    return true;
}

bool fuse_reshapes(IrGraph &g, const Node &first, Node &second) {
    Shape out;
    if (!static_shape_of(g, second.outputs[0], out)) return false;
    // A 0 in a Reshape shape means "copy that input dimension" unless allowzero: keep such chains as they are.
    if (std::find(out.begin(), out.end(), 0) != out.end()) return false;
    std::string shape = add_int64_constant(g, second.outputs[0] + "_shape", out);
    second.op_type = "Reshape";
    second.inputs = {first.inputs[0], shape};
    second.attrs.clear();
    return true;
}

struct SliceParams {
    std::vector<int64_t> starts, ends, axes, steps;
};

bool slice_params(const IrGraph &g, const Node &n, size_t rank, SliceParams &p) {
    if (n.attr("starts") || n.inputs.size() < 3) return false; // Slice-1 keeps them in attributes
    if (!int_constant(g, n.inputs[1], p.starts) || !int_constant(g, n.inputs[2], p.ends)) return false;
    if (p.starts.size() != p.ends.size()) return false;
    if (n.inputs.size() > 3 && !n.inputs[3].empty()) {
        if (!int_constant(g, n.inputs[3], p.axes)) return false;
    } else {
        for (size_t i = 0; i < p.starts.size(); ++i) p.axes.push_back(static_cast<int64_t>(i));
    }
    if (n.inputs.size() > 4 && !n.inputs[4].empty()) {
        if (!int_constant(g, n.inputs[4], p.steps)) return false;
    } else {
        p.steps.assign(p.starts.size(), 1);
    }
    if (p.axes.size() != p.starts.size() || p.steps.size() != p.starts.size()) return false;
    for (auto &a : p.axes) {
        if (a < 0) a += static_cast<int64_t>(rank);
        if (a < 0 || a >= static_cast<int64_t>(rank)) return false;
    }
    return true;
}

bool fuse_slices(IrGraph &g, const Node &first, Node &second) {
    Shape shape;
    if (!static_shape_of(g, first.inputs[0], shape)) return false;
    SliceParams a, b;
    if (!slice_params(g, first, shape.size(), a) || !slice_params(g, second, shape.size(), b)) return false;
    std::vector<bool> used(shape.size(), false);
    for (int64_t ax : a.axes) used[static_cast<size_t>(ax)] = true;
    for (int64_t ax : b.axes)
        if (used[static_cast<size_t>(ax)]) return false; // the same axis twice does not simply concatenate
    auto join = [](std::vector<int64_t> x, const std::vector<int64_t> &y) {
        x.insert(x.end(), y.begin(), y.end());
        return x;
    };
    const std::string &base = second.outputs[0];
    second.inputs = {first.inputs[0], add_int64_constant(g, base + "_starts", join(a.starts, b.starts)),
                     add_int64_constant(g, base + "_ends", join(a.ends, b.ends)),
                     add_int64_constant(g, base + "_axes", join(a.axes, b.axes)),
                     add_int64_constant(g, base + "_steps", join(a.steps, b.steps))};
    return true;
}

} // namespace

bool fuse_chains(IrGraph &g) {
    GraphIndex idx(g);
    std::vector<bool> removed(g.nodes.size(), false);
    bool changed = false;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        Node &second = g.nodes[i];
        if (!second.default_domain() || second.inputs.empty() || second.inputs[0].empty() ||
            second.outputs.size() != 1 || second.outputs[0].empty())
            continue;
        const std::string &mid = second.inputs[0];
        if (g.is_constant(mid) || idx.use_count(mid) != 1) continue;
        auto p = idx.producer.find(mid);
        if (p == idx.producer.end() || removed[static_cast<size_t>(p->second)]) continue;
        const Node &first = g.nodes[static_cast<size_t>(p->second)];
        if (!first.default_domain() || first.outputs.size() != 1 || first.inputs.empty() || first.inputs[0].empty())
            continue;
        bool fused = false;
        if (first.op_type == "Transpose" && second.op_type == "Transpose")
            fused = fuse_transposes(g, first, second);
        else if (is_reshape_like(first.op_type) && is_reshape_like(second.op_type))
            fused = fuse_reshapes(g, first, second);
        else if (first.op_type == "Slice" && second.op_type == "Slice")
            fused = fuse_slices(g, first, second);
        if (fused) {
            removed[static_cast<size_t>(p->second)] = true;
            changed = true;
        }
    }
    if (!changed) return false;
    drop_nodes(g, removed);
    return true;
}

} // namespace onnxstream::importer

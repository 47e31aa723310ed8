// Linear layers exported as MatMul(x, W) followed by Add(bias) (PyTorch's F.linear, TensorFlow exports)
// run as one op that adds the bias inside the fully-connected kernel instead of a second pass over the
// output:
//   - a 2-D activation becomes Gemm, which is exact ONNX: B a constant [K, N] matrix, the bias a constant
//     that broadcasts to [M, N] without widening the result;
//   - an activation of rank 3 and up (a transformer's [batch, tokens, channels]) becomes MatMul with a
//     third input, the engine's bias extension (docs/model-format.md): one value per output column.
#include "onnx/passes/passes.h"

namespace onnxstream::importer {

namespace {

bool float_type(int32_t t) { return t == kOnnxFloat || t == kOnnxFloat16; }

bool static_shape_of(const IrGraph &g, const std::string &name, Shape &shape, int32_t &type) {
    type = elem_type_of(g, name);
    return static_shape_of(g, name, shape);
}

// The bias must broadcast to [m, n] (right-aligned, each dim 1 or equal) so that Gemm's C covers the Add.
bool bias_fits(const Shape &c, int64_t m, int64_t n) {
    if (c.size() > 2) return false;
    const int64_t want[2] = {m, n};
    for (size_t i = 0; i < c.size(); ++i) {
        int64_t w = want[2 - c.size() + i];
        if (c[i] != 1 && c[i] != w) return false;
    }
    return true;
}

// The MatMul producing `mid` when it is the only reader's input and nothing else reads it: null otherwise.
const Node *sole_matmul(const IrGraph &g, const GraphIndex &idx, const std::vector<bool> &removed,
                        const std::string &mid, size_t &index) {
    if (mid.empty() || g.is_constant(mid) || idx.use_count(mid) != 1) return nullptr;
    auto p = idx.producer.find(mid);
    if (p == idx.producer.end() || removed[static_cast<size_t>(p->second)]) return nullptr;
    const Node &mm = g.nodes[static_cast<size_t>(p->second)];
    if (!mm.default_domain() || mm.op_type != "MatMul" || mm.inputs.size() != 2 || mm.outputs.size() != 1)
        return nullptr;
    index = static_cast<size_t>(p->second);
    return &mm;
}

// A bias the N-D MatMul can take: n values along the last axis, every other axis 1, and no more axes than
// the product has (so the Add does not widen it).
bool column_bias(const Shape &c, int64_t n, size_t product_rank) {
    if (c.empty() || c.size() > product_rank || c.back() != n) return false;
    for (size_t i = 0; i + 1 < c.size(); ++i)
        if (c[i] != 1) return false;
    return true;
}

} // namespace

namespace {

// Shapes and element types of a MatMul's A and B and of the bias beside it; false when one is not static,
// or A is a constant or B is not one.
struct LinearParts {
    Shape a, b, c;
    int32_t ta = 0, tb = 0, tc = 0;
};
bool linear_parts(const IrGraph &g, const Node &mm, const std::string &bias, LinearParts &p) {
    return static_shape_of(g, mm.inputs[0], p.a, p.ta) && !g.is_constant(mm.inputs[0]) && g.is_constant(mm.inputs[1]) &&
           static_shape_of(g, mm.inputs[1], p.b, p.tb) && static_shape_of(g, bias, p.c, p.tc);
}

// Every Add of a constant bias to a MatMul product that nothing else reads becomes the node `fuse` makes of
// them (returning false leaves them as they are); the MatMul goes.
template <typename Fuse> bool fuse_bias_adds(IrGraph &g, Fuse fuse) {
    GraphIndex idx(g);
    std::vector<bool> removed(g.nodes.size(), false);
    bool changed = false;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        Node &add = g.nodes[i];
        if (!add.default_domain() || add.op_type != "Add" || add.inputs.size() != 2 || add.outputs.size() != 1) continue;
        for (int side = 0; side < 2; ++side) {
            const std::string &mid = add.inputs[static_cast<size_t>(side)];
            const std::string &bias = add.inputs[static_cast<size_t>(1 - side)];
            size_t mm_index = 0;
            const Node *mm = g.is_constant(bias) ? sole_matmul(g, idx, removed, mid, mm_index) : nullptr;
            LinearParts parts;
            Node fused;
            if (!mm || !linear_parts(g, *mm, bias, parts) || !fuse(*mm, add, parts, fused)) continue;
            fused.inputs = {mm->inputs[0], mm->inputs[1], bias};
            fused.outputs = add.outputs;
            add = std::move(fused);
            removed[mm_index] = true;
            changed = true;
            break;
        }
    }
    if (!changed) return false;
    drop_nodes(g, removed);
    return true;
}

} // namespace

bool matmul_add_to_gemm(IrGraph &g) {
    return fuse_bias_adds(g, [](const Node &, const Node &add, const LinearParts &p, Node &gemm) {
        if (p.a.size() != 2 || p.b.size() != 2 || p.a[1] != p.b[0] || !float_type(p.ta) || !float_type(p.tb) ||
            !float_type(p.tc) || p.ta != p.tb || p.ta != p.tc || !bias_fits(p.c, p.a[0], p.b[1]))
            return false;
        gemm.name = add.name;
        gemm.op_type = "Gemm";
        return true;
    });
}

bool fuse_matmul_bias(IrGraph &g) {
    return fuse_bias_adds(g, [](const Node &mm, const Node &, const LinearParts &p, Node &fused) {
        if (p.a.size() < 3 || p.b.size() != 2 || p.a.back() != p.b[0] || !float_type(p.ta) || !float_type(p.tb) ||
            !float_type(p.tc) || p.ta != p.tc || (p.ta != p.tb && !(p.ta == kOnnxFloat && p.tb == kOnnxFloat16)) ||
            !column_bias(p.c, p.b[1], p.a.size()))
            return false;
        fused.name = mm.name;
        fused.op_type = "MatMul";
        return true;
    });
}

} // namespace onnxstream::importer

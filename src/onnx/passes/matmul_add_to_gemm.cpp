// Linear layers exported as MatMul(x, W) followed by Add(bias) (PyTorch's F.linear on 2-D input at some
// opsets, TensorFlow exports) run as one Gemm: the engine's Gemm adds the bias inside the fully-connected
// kernel instead of a second pass over the output. Only the 2-D case maps onto Gemm exactly: A a 2-D
// activation, B a constant [K, N] matrix, the bias a constant that broadcasts to [M, N] without widening
// the result.
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

} // namespace

bool matmul_add_to_gemm(IrGraph &g) {
    GraphIndex idx(g);
    std::vector<bool> removed(g.nodes.size(), false);
    bool changed = false;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        Node &add = g.nodes[i];
        if (!add.default_domain() || add.op_type != "Add" || add.inputs.size() != 2 || add.outputs.size() != 1) continue;
        for (int side = 0; side < 2; ++side) {
            const std::string &mid = add.inputs[static_cast<size_t>(side)];
            const std::string &bias = add.inputs[static_cast<size_t>(1 - side)];
            if (mid.empty() || g.is_constant(mid) || !g.is_constant(bias) || idx.use_count(mid) != 1) continue;
            auto p = idx.producer.find(mid);
            if (p == idx.producer.end() || removed[static_cast<size_t>(p->second)]) continue;
            const Node &mm = g.nodes[static_cast<size_t>(p->second)];
            if (!mm.default_domain() || mm.op_type != "MatMul" || mm.inputs.size() != 2 || mm.outputs.size() != 1)
                continue;
            Shape a, b, c;
            int32_t ta = 0, tb = 0, tc = 0;
            if (!static_shape_of(g, mm.inputs[0], a, ta) || g.is_constant(mm.inputs[0]) || !g.is_constant(mm.inputs[1]) ||
                !static_shape_of(g, mm.inputs[1], b, tb) || !static_shape_of(g, bias, c, tc))
                continue;
            if (a.size() != 2 || b.size() != 2 || a[1] != b[0] || !float_type(ta) || !float_type(tb) ||
                !float_type(tc) || ta != tb || ta != tc || !bias_fits(c, a[0], b[1]))
                continue;
            Node gemm;
            gemm.name = add.name;
            gemm.op_type = "Gemm";
            gemm.inputs = {mm.inputs[0], mm.inputs[1], bias};
            gemm.outputs = add.outputs;
            add = std::move(gemm);
            removed[static_cast<size_t>(p->second)] = true;
            changed = true;
            break;
        }
    }
    if (!changed) return false;
    drop_nodes(g, removed);
    return true;
}

} // namespace onnxstream::importer

// SiLU reaches ONNX (before opset 24's Swish) as x * Sigmoid(x), and CLIP's QuickGELU as
// x * Sigmoid(1.702 * x): two or three elementwise ops, the last reading two full tensors, with tensors
// between them. The engine's Swish, x * sigmoid(alpha * x), is one pass (YOLOv8 has a SiLU after every
// convolution, the SD UNet and VAE after every GroupNorm, the SD text encoder a QuickGELU in every layer).
// The Sigmoid's output (and the scaling's) must be read by the fused chain only, the scale must be a
// one-element constant, and the Mul's other operand must be x itself.
#include "onnx/passes/match.h"
#include "onnx/passes/passes.h"

namespace onnxstream::importer {

namespace {

using match::Matcher;

// `value` = x * alpha (either order), alpha a one-element constant and `value` read only by the Sigmoid:
// the scaling node, with x and alpha filled in.
Node *scaled_by_constant(Matcher &m, const std::string &value, std::string &x, double &alpha) {
    Node *mul = m.producer(value, "Mul");
    if (!mul || !m.single_use(value) || mul->inputs.size() != 2) return nullptr;
    for (size_t s = 0; s < 2; ++s) {
        const ValueType *t = m.float_type(mul->inputs[1 - s]);
        if (t && m.scalar(mul->inputs[s], alpha, t->dims.size())) {
            x = mul->inputs[1 - s];
            return mul;
        }
    }
    return nullptr;
}

} // namespace

bool fuse_swish(IrGraph &g) {
    // Unlike the GELU and attention patterns, this one needs only x's type: Swish's output is x's shape and
    // dtype, and the engine's inference types it for whatever ONNX's cannot (infer_with_engine). A graph
    // that is never fully typed (a resizable conversion's probe size) is fused as the declared size is.
    if (!match::engine_has("Swish")) return false;
    Matcher m(g);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        if (m.removed(i)) continue;
        Node &sigmoid = g.nodes[i];
        if (!sigmoid.default_domain() || sigmoid.op_type != "Sigmoid" || sigmoid.inputs.size() != 1 ||
            sigmoid.outputs.size() != 1)
            continue;
        Node *mul = m.sole_consumer(sigmoid.outputs[0], "Mul");
        const std::string *x = mul ? Matcher::other_operand(*mul, sigmoid.outputs[0]) : nullptr;
        if (!x || !m.float_type(*x)) continue;
        double alpha = 1.0;
        Node *scale = nullptr;
        if (sigmoid.inputs[0] != *x) { // Sigmoid(alpha * x)
            std::string scaled_x;
            scale = scaled_by_constant(m, sigmoid.inputs[0], scaled_x, alpha);
            if (!scale || scaled_x != *x) continue;
        }
        Node swish;
        swish.name = mul->name;
        swish.op_type = "Swish";
        swish.inputs = {*x};
        swish.outputs = {mul->outputs[0]};
        if (alpha != 1.0) swish.attrs.push_back(match::attr_float("alpha", static_cast<float>(alpha)));
        m.remove(i);
        if (scale) m.remove(m.index_of(*scale));
        *mul = std::move(swish);
    }
    return m.finish();
}

} // namespace onnxstream::importer

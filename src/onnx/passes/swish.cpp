// SiLU reaches ONNX (before opset 24's Swish) as x * Sigmoid(x): two elementwise ops, the second reading
// two full tensors, and a tensor between them. The engine's Swish is one pass (YOLOv8 has one after every
// convolution; the SD UNet and VAE after every GroupNorm). The Sigmoid's output must be read by that Mul
// only, and the Mul's other operand must be the Sigmoid's own input.
#include "onnx/passes/match.h"
#include "onnx/passes/passes.h"

namespace onnxstream::importer {

bool fuse_swish(IrGraph &g) {
    // Unlike the multi-node patterns, this one needs only x's type: Swish's output is x's shape and dtype,
    // and the engine's inference types it for whatever ONNX's cannot (infer_with_engine). A graph that is
    // never fully typed (a resizable conversion's probe size) is fused the same way as the declared size.
    if (!match::engine_has("Swish")) return false;
    match::Matcher m(g);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        if (m.removed(i)) continue;
        Node &sigmoid = g.nodes[i];
        if (!sigmoid.default_domain() || sigmoid.op_type != "Sigmoid" || sigmoid.inputs.size() != 1 ||
            sigmoid.outputs.size() != 1)
            continue;
        const std::string x = sigmoid.inputs[0];
        Node *mul = m.sole_consumer(sigmoid.outputs[0], "Mul");
        if (!mul) continue;
        const std::string *other = match::Matcher::other_operand(*mul, sigmoid.outputs[0]);
        if (!other || *other != x) continue;
        if (!m.float_type(x)) continue;
        Node swish;
        swish.name = mul->name;
        swish.op_type = "Swish";
        swish.inputs = {x};
        swish.outputs = {mul->outputs[0]};
        m.remove(i);
        *mul = std::move(swish);
    }
    return m.finish();
}

} // namespace onnxstream::importer

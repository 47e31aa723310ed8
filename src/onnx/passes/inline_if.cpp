// If nodes whose condition is known at conversion are replaced by the branch they take.
//
// Exporters emit If for what a model decides from its input's shape (torch.onnx's `if x.dim() == 3`) or
// from a setting fed as an input (a sample rate); once --input-shape fixes the shapes, or --input-value pins
// the setting, folding turns the condition into a constant and the branch is just more nodes. The branch's
// own values get the If's name as a prefix (two branches of two Ifs may use the same names), the values it
// reads from outside keep theirs, and the If's outputs keep theirs, so nothing after the If changes.
#include <unordered_map>
#include <unordered_set>

#include "onnx/passes/passes.h"
#include "onnx/passes/subgraph.h"
#include "util/error.h"
#include "util/strings.h"

namespace onnxstream::importer {

namespace {

// The condition's value: ONNX asks for a bool tensor of one element.
bool condition_value(const IrGraph &g, const Node &n, const ConstantData &c) {
    if (c.numel() != 1)
        fail(ONNXSTREAM_ERR_INVALID_MODEL, g.source, ": ", n.describe(), ": the condition holds ", c.numel(),
             " values; If takes one");
    std::vector<int64_t> v = c.type() == kOnnxFloat || c.type() == kOnnxFloat16 ? std::vector<int64_t>()
                                                                               : c.int_values();
    if (v.empty()) {
        std::vector<float> f = c.float_values();
        return !f.empty() && f[0] != 0;
    }
    return v[0] != 0;
}

} // namespace

bool inline_constant_ifs(IrGraph &g) {
    bool any = false;
    for (const Node &n : g.nodes)
        any = any || (n.op_type == "If" && n.default_domain() && !n.inputs.empty() && g.is_constant(n.inputs[0]));
    if (!any) return false;

    SubgraphInliner inliner(g);
    std::vector<Node> out;
    out.reserve(g.nodes.size());
    for (Node &n : g.nodes) {
        if (n.op_type != "If" || !n.default_domain() || n.inputs.empty() || !g.is_constant(n.inputs[0])) {
            out.push_back(std::move(n));
            continue;
        }
        const bool taken = condition_value(g, n, g.constants.at(n.inputs[0]));
        const char *which = taken ? "then_branch" : "else_branch";
        const onnx::AttributeProto *branch = n.attr(which);
        if (!branch || branch->type() != onnx::AttributeProto::GRAPH)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, g.source, ": ", n.describe(), " has no ", which, " graph");
        if (static_cast<size_t>(branch->g().output_size()) != n.outputs.size())
            fail(ONNXSTREAM_ERR_INVALID_MODEL, g.source, ": ", n.describe(), ": ", which, " has ",
                 branch->g().output_size(), " outputs but the If has ", n.outputs.size());
        const size_t first = out.size();
        inliner.inline_graph(branch->g(), cat(n.name, "/", taken ? "then" : "else", "/"), {}, n.outputs,
                             cat(g.source, ": ", n.describe(), ": ", which), out);
        // An If inside a run-time branch (flatten_if.cpp) keeps that branch's guard on what replaces it.
        for (size_t i = first; i < out.size(); ++i) out[i].guard = n.guard;
    }
    g.nodes = std::move(out);
    // The branch's nodes sit where the If was; what they read from outside may come later in the old order.
    topo_sort(g);
    return true;
}

} // namespace onnxstream::importer

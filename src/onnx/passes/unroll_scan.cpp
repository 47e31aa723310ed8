// Scan nodes are unrolled: their sequence length is a dimension of their scan inputs, known once the
// shapes are static. Each step copies the body, reading the step's slice of every scan input (a Gather at
// the step's index along the scan axis, from the end for reverse directions) and the previous step's
// state; the scan outputs are stacked with Unsqueeze + Concat along their axes, in reverse for reverse
// directions. A sequence longer than kMaxSteps stays a Scan, and the conversion fails naming it.
#include <algorithm>

#include "onnx/passes/passes.h"
#include "onnx/passes/subgraph.h"
#include "util/error.h"
#include "util/strings.h"

namespace onnxstream::importer {

namespace {

constexpr int64_t kMaxSteps = 1024;

std::vector<int64_t> ints_or(const Node &n, const char *key, size_t count, int64_t fallback) {
    std::vector<int64_t> v = n.attr_ints(key);
    if (v.empty()) v.assign(count, fallback);
    return v;
}

struct ScanPlan {
    int64_t steps = 0;
    size_t states = 0, scan_inputs = 0, scan_outputs = 0;
    std::vector<int64_t> in_axes, in_reverse, out_axes, out_reverse;
};

bool plan_scan(const IrGraph &g, const Node &n, ScanPlan &plan) {
    const onnx::AttributeProto *body = n.attr("body");
    const int64_t scan_inputs = n.attr_int("num_scan_inputs", -1);
    if (!body || body->type() != onnx::AttributeProto::GRAPH || g.opset < 9 || scan_inputs < 1 ||
        static_cast<size_t>(scan_inputs) > n.inputs.size())
        return false;
    plan.scan_inputs = static_cast<size_t>(scan_inputs);
    plan.states = n.inputs.size() - plan.scan_inputs;
    if (static_cast<size_t>(body->g().input_size()) != n.inputs.size() ||
        static_cast<size_t>(body->g().output_size()) != n.outputs.size() || n.outputs.size() < plan.states)
        return false;
    plan.scan_outputs = n.outputs.size() - plan.states;
    plan.in_axes = ints_or(n, "scan_input_axes", plan.scan_inputs, 0);
    plan.in_reverse = ints_or(n, "scan_input_directions", plan.scan_inputs, 0);
    plan.out_axes = ints_or(n, "scan_output_axes", plan.scan_outputs, 0);
    plan.out_reverse = ints_or(n, "scan_output_directions", plan.scan_outputs, 0);
    if (plan.in_axes.size() != plan.scan_inputs || plan.in_reverse.size() != plan.scan_inputs ||
        plan.out_axes.size() != plan.scan_outputs || plan.out_reverse.size() != plan.scan_outputs)
        return false;
    // Every scan input must have a static shape with the same length along its axis.
    plan.steps = -1;
    for (size_t i = 0; i < plan.scan_inputs; ++i) {
        Shape shape;
        if (!static_shape_of(g, n.inputs[plan.states + i], shape)) return false;
        const int64_t rank = static_cast<int64_t>(shape.size());
        int64_t axis = plan.in_axes[i] < 0 ? plan.in_axes[i] + rank : plan.in_axes[i];
        if (axis < 0 || axis >= rank)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, g.source, ": ", n.describe(), ": scan_input_axes[", i, "] = ",
                 plan.in_axes[i], " is outside a rank-", rank, " input");
        plan.in_axes[i] = axis;
        const int64_t length = shape[static_cast<size_t>(axis)];
        if (plan.steps >= 0 && length != plan.steps)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, g.source, ": ", n.describe(), ": scan inputs of ", plan.steps, " and ",
                 length, " steps");
        plan.steps = length;
    }
    return plan.steps >= 1 && plan.steps <= kMaxSteps;
}

} // namespace

bool unroll_scans(IrGraph &g) {
    bool any = false;
    for (const Node &n : g.nodes) any = any || (n.op_type == "Scan" && n.default_domain());
    if (!any) return false;
    SubgraphInliner inliner(g);
    std::vector<Node> out;
    bool changed = false;
    for (Node &n : g.nodes) {
        ScanPlan plan;
        if (n.op_type != "Scan" || !n.default_domain() || !plan_scan(g, n, plan)) {
            out.push_back(std::move(n));
            continue;
        }
        changed = true;
        const onnx::GraphProto &body = n.attr("body")->g();
        const std::string where = cat(g.source, ": ", n.describe(), ": body");
        std::vector<std::string> state(n.inputs.begin(), n.inputs.begin() + static_cast<long>(plan.states));
        std::vector<std::vector<std::string>> pieces(plan.scan_outputs);
        for (int64_t t = 0; t < plan.steps; ++t) {
            const std::string prefix = cat(n.name, "/", t, "/");
            std::unordered_map<std::string, std::string> bind;
            for (size_t s = 0; s < plan.states; ++s) bind[body.input(static_cast<int>(s)).name()] = state[s];
            for (size_t i = 0; i < plan.scan_inputs; ++i) {
                const int64_t index = plan.in_reverse[i] ? plan.steps - 1 - t : t;
                const std::string slice = inliner.fresh_value(prefix + "slice");
                Node gather = inliner.new_node(prefix + "Gather", "Gather",
                                               {n.inputs[plan.states + i], inliner.int64_constant(prefix + "index", {}, {index})},
                                               {slice});
                gather.attrs.push_back(int_attr("axis", plan.in_axes[i]));
                out.push_back(std::move(gather));
                bind[body.input(static_cast<int>(plan.states + i)).name()] = slice;
            }
            std::vector<std::string> wanted(n.outputs.size());
            if (t + 1 == plan.steps)
                for (size_t s = 0; s < plan.states; ++s) wanted[s] = n.outputs[s];
            const std::vector<std::string> got = inliner.inline_graph(body, prefix, bind, wanted, where, out);
            for (size_t s = 0; s < plan.states; ++s) state[s] = got[s];
            for (size_t o = 0; o < plan.scan_outputs; ++o) pieces[o].push_back(got[plan.states + o]);
        }
        for (size_t o = 0; o < plan.scan_outputs; ++o) {
            const std::string &result = n.outputs[plan.states + o];
            if (result.empty()) continue;
            std::vector<std::string> parts = pieces[o];
            if (plan.out_reverse[o]) std::reverse(parts.begin(), parts.end());
            inliner.stack(parts, plan.out_axes[o], true, result, cat(n.name, "/scan", o, "/"), out);
        }
    }
    g.nodes = std::move(out);
    if (changed) topo_sort(g);
    return changed;
}

} // namespace onnxstream::importer

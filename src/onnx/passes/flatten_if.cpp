// If nodes whose condition is only known at run time become guarded straight-line code.
//
// model.txt has no nested graphs, so both branches are copied into the main graph (inline_if.cpp's
// inliner, values prefixed with "<If name>/then/" and "/else/"), each of their nodes guarded by a
// one-element bool value: the condition for the then-branch, Not(condition) for the else-branch, and
// And(outer guard, ...) of those for an If nested in a branch. The engine skips a node whose guard is
// false or was itself never computed, so only the taken branch runs and only its weights are read. An
// IfMerge(condition, then outputs..., else outputs...) node gives the If's outputs, taken from whichever
// branch ran. Nested Ifs come out as guarded Ifs and are flattened by the next call.
#include "onnx/passes/passes.h"
#include "onnx/passes/subgraph.h"
#include "util/error.h"
#include "util/strings.h"

namespace onnxstream::importer {

namespace {

bool runtime_if(const IrGraph &g, const Node &n) {
    return n.op_type == "If" && n.default_domain() && !n.inputs.empty() && !n.inputs[0].empty() &&
           !g.is_constant(n.inputs[0]);
}

const onnx::GraphProto &branch_graph(const IrGraph &g, const Node &n, const char *which) {
    const onnx::AttributeProto *branch = n.attr(which);
    if (!branch || branch->type() != onnx::AttributeProto::GRAPH)
        fail(ONNXSTREAM_ERR_INVALID_MODEL, g.source, ": ", n.describe(), " has no ", which, " graph");
    if (static_cast<size_t>(branch->g().output_size()) != n.outputs.size())
        fail(ONNXSTREAM_ERR_INVALID_MODEL, g.source, ": ", n.describe(), ": ", which, " has ", branch->g().output_size(),
             " outputs but the If has ", n.outputs.size());
    return branch->g();
}

ValueType bool_scalar_type() {
    ValueType t;
    t.elem_type = onnx::TensorProto::BOOL;
    t.has_shape = true;
    return t;
}

} // namespace

bool flatten_ifs(IrGraph &g) {
    bool any = false;
    for (const Node &n : g.nodes) any = any || runtime_if(g, n);
    if (!any) return false;

    SubgraphInliner inliner(g);
    std::vector<Node> out;
    out.reserve(g.nodes.size());
    for (Node &n : g.nodes) {
        if (!runtime_if(g, n)) {
            out.push_back(std::move(n));
            continue;
        }
        const std::string cond = n.inputs[0];
        const ValueType *ct = g.type_of(cond);
        if (ct && ct->elem_type != 0 && ct->elem_type != onnx::TensorProto::BOOL)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, g.source, ": ", n.describe(), ": the condition '", cond,
                 "' is not a bool tensor");
        if (ct && ct->has_shape && ct->is_static()) {
            int64_t count = 1;
            for (int64_t d : ct->dims) count *= d;
            if (count != 1)
                fail(ONNXSTREAM_ERR_INVALID_MODEL, g.source, ": ", n.describe(), ": the condition holds ", count,
                     " values; If takes one");
        }
        const onnx::GraphProto &then_graph = branch_graph(g, n, "then_branch");
        const onnx::GraphProto &else_graph = branch_graph(g, n, "else_branch");
        const std::string &outer = n.guard;
        // A guard node runs under the enclosing guard, so a branch nested in an untaken one never runs either.
        auto guard_node = [&](const char *type, std::vector<std::string> inputs, const std::string &base) {
            const std::string value = inliner.fresh_value(cat(n.name, "/", base));
            Node k = inliner.new_node(cat(n.name, "/", base), type, std::move(inputs), {value});
            k.guard = outer;
            out.push_back(std::move(k));
            g.types[value] = bool_scalar_type();
            return value;
        };
        std::string then_guard = cond, else_guard = guard_node("Not", {cond}, "else_guard");
        if (!outer.empty()) {
            then_guard = guard_node("And", {outer, cond}, "then_guard");
            else_guard = guard_node("And", {outer, else_guard}, "else_guard_nested");
        }
        if (ct && ct->has_shape && !ct->dims.empty()) {
            // A [1] or [1,1] condition: the guards must be one element too, which Not/And keep.
            g.types[else_guard].dims = ct->dims;
            g.types[else_guard].dim_params.assign(ct->dims.size(), "");
            if (!outer.empty()) g.types[then_guard] = g.types[else_guard];
        }

        std::vector<std::string> merge_inputs{cond};
        for (const auto &[graph, which, guard] : {std::make_tuple(&then_graph, "then", then_guard),
                                                  std::make_tuple(&else_graph, "else", else_guard)}) {
            const size_t first = out.size();
            std::vector<std::string> results = inliner.inline_graph(
                *graph, cat(n.name, "/", which, "/"), {}, std::vector<std::string>(n.outputs.size()),
                cat(g.source, ": ", n.describe(), ": ", which, "_branch"), out);
            for (size_t i = first; i < out.size(); ++i) out[i].guard = guard;
            merge_inputs.insert(merge_inputs.end(), results.begin(), results.end());
        }
        Node merge = inliner.new_node(n.name, "IfMerge", std::move(merge_inputs), n.outputs);
        merge.name = n.name; // the If it replaces is gone, and messages should name it
        merge.guard = outer;
        out.push_back(std::move(merge));
    }
    g.nodes = std::move(out);
    // The branches' nodes sit where the If was; what they read from outside may come later in the old order.
    topo_sort(g);
    return true;
}

} // namespace onnxstream::importer

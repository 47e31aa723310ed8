// Loop nodes whose trip count is known at conversion are unrolled: the body is copied once per iteration,
// each copy reading the previous one's loop-carried values, and the scan outputs are stacked with
// Unsqueeze + Concat.
//
// torch.onnx emits Loop for `for i in range(x.shape[0])`; once --input-shape fixes the shape, the trip count
// folds to a constant and the loop is a fixed chain of ops the engine can stream like any other. A list
// built in the loop (`outs.append(h)` ... `torch.stack(outs)`) comes out as a sequence: SequenceEmpty before,
// SequenceInsert in the body, ConcatFromSequence after; that pattern becomes the Concat of the elements.
// A loop whose condition is computed in the body (a `while`), a trip count over kMaxIterations, or another
// use of sequences stays a Loop, and the conversion fails naming it.
#include <unordered_map>
#include <unordered_set>

#include "onnx/passes/passes.h"
#include "onnx/passes/subgraph.h"
#include "util/error.h"
#include "util/strings.h"

namespace onnxstream::importer {

namespace {

constexpr int64_t kMaxIterations = 1024;
constexpr size_t kMaxUnrolledNodes = 200000;

bool scalar_int(const IrGraph &g, const std::string &name, int64_t &out) {
    std::vector<int64_t> v;
    if (!int_constant(g, name, v) || v.size() != 1) return false;
    out = v[0];
    return true;
}

bool constant_true(const IrGraph &g, const std::string &name) {
    auto it = g.constants.find(name);
    if (it == g.constants.end() || it->second.numel() != 1 || it->second.type() != kOnnxBool) return false;
    return it->second.int_values()[0] != 0;
}

// Whether the body's condition output is true in every iteration without computing anything: the condition
// input passed through, a true constant of the body or of the main graph, or an Identity of one of those.
bool always_true(const IrGraph &g, const onnx::GraphProto &body, const std::string &name, int depth = 0) {
    if (depth > 4) return false;
    if (name == body.input(1).name() || constant_true(g, name)) return true;
    for (const auto &n : body.node()) {
        if (n.output_size() != 1 || n.output(0) != name) continue;
        if (n.op_type() == "Identity" && n.input_size() == 1) return always_true(g, body, n.input(0), depth + 1);
        if (n.op_type() == "Constant")
            for (const auto &a : n.attribute())
                if (a.name() == "value" && a.t().data_type() == kOnnxBool) {
                    onnx::TensorProto t = a.t();
                    ConstantData c = constant_from_proto(t, g.model_dir, "a Loop condition");
                    return c.numel() == 1 && c.int_values()[0] != 0;
                }
        return false;
    }
    return false;
}

// A loop-carried list: SequenceEmpty before the loop, one SequenceInsert(list, element) in the body.
struct ListSlot {
    size_t carried = 0;  // index among the loop-carried values
    std::string element; // the body value appended each iteration
};

struct Plan {
    int64_t iterations = 0;
    onnx::GraphProto body; // without the SequenceInserts of `lists`; the elements appended as outputs
    std::vector<ListSlot> lists;
};

// Whether n can be unrolled, and how. False leaves it in place.
bool plan_unroll(const IrGraph &g, const GraphIndex &index, const Node &n, Plan &plan) {
    const onnx::AttributeProto *attr = n.attr("body");
    if (!attr || attr->type() != onnx::AttributeProto::GRAPH || n.inputs.size() < 2 || n.inputs[0].empty())
        return false;
    if (!scalar_int(g, n.inputs[0], plan.iterations) || plan.iterations < 0 || plan.iterations > kMaxIterations)
        return false;
    if (!n.inputs[1].empty() && !g.is_constant(n.inputs[1])) return false;
    if (!n.inputs[1].empty() && !constant_true(g, n.inputs[1])) plan.iterations = 0;
    plan.body = attr->g();
    onnx::GraphProto &body = plan.body;
    const size_t carried = n.inputs.size() - 2;
    if (static_cast<size_t>(body.input_size()) != carried + 2 || static_cast<size_t>(body.output_size()) < carried + 1 ||
        n.outputs.size() != static_cast<size_t>(body.output_size()) - 1)
        return false;
    if (plan.iterations > 0 && !always_true(g, body, body.output(0).name())) return false;
    if (plan.iterations == 0 && static_cast<size_t>(body.output_size()) > carried + 1) return false; // empty scans

    for (size_t j = 0; j < carried; ++j) {
        auto producer = index.producer.find(n.inputs[j + 2]);
        const bool list = producer != index.producer.end() &&
                          g.nodes[static_cast<size_t>(producer->second)].op_type == "SequenceEmpty";
        if (!list) continue;
        // The body must only append to it, once, and the loop's result must only be concatenated.
        const std::string &in = body.input(static_cast<int>(j) + 2).name();
        const std::string &out = body.output(static_cast<int>(j) + 1).name();
        int insert = -1;
        for (int k = 0; k < body.node_size(); ++k) {
            const auto &b = body.node(k);
            for (const auto &i : b.input())
                if (i == in && !(b.op_type() == "SequenceInsert" && b.input_size() == 2 && b.input(0) == in &&
                                 b.output(0) == out && insert < 0))
                    return false;
            if (b.op_type() == "SequenceInsert" && b.input_size() == 2 && b.input(0) == in && b.output(0) == out)
                insert = k;
        }
        if (insert < 0 || index.graph_outputs.count(n.outputs[j])) return false;
        auto readers = index.consumers.find(n.outputs[j]);
        if (readers != index.consumers.end())
            for (int r : readers->second)
                if (g.nodes[static_cast<size_t>(r)].op_type != "ConcatFromSequence") return false;
        plan.lists.push_back({j, body.node(insert).input(1)});
        body.mutable_node()->DeleteSubrange(insert, 1);
    }
    for (const ListSlot &l : plan.lists) *body.add_output()->mutable_name() = l.element;
    return true;
}

} // namespace

bool unroll_loops(IrGraph &g) {
    bool any = false;
    for (const Node &n : g.nodes) any = any || (n.op_type == "Loop" && n.default_domain());
    if (!any) return false;
    GraphIndex index(g);
    std::unordered_map<size_t, Plan> plans;
    size_t added = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        const Node &n = g.nodes[i];
        Plan plan;
        if (n.op_type != "Loop" || !n.default_domain() || !plan_unroll(g, index, n, plan)) continue;
        added += static_cast<size_t>(plan.iterations) * static_cast<size_t>(plan.body.node_size());
        if (added > kMaxUnrolledNodes)
            fail(ONNXSTREAM_ERR_UNSUPPORTED, g.source, ": ", n.describe(), ": unrolling it would add more than ",
                 kMaxUnrolledNodes, " nodes");
        plans.emplace(i, std::move(plan));
    }
    if (plans.empty()) return false;

    SubgraphInliner inliner(g);
    // Each list result of an unrolled loop: its elements, for the ConcatFromSequence nodes that read it.
    std::unordered_map<std::string, std::vector<std::string>> lists;
    std::vector<Node> out;
    out.reserve(g.nodes.size() + added);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        Node &n = g.nodes[i];
        if (n.op_type == "ConcatFromSequence" && !n.inputs.empty() && lists.count(n.inputs[0])) {
            const int64_t axis = n.attr_int("axis", 0);
            inliner.stack(lists[n.inputs[0]], axis, n.attr_int("new_axis", 0) != 0, n.outputs[0], n.name + "/", out);
            continue;
        }
        auto p = plans.find(i);
        if (p == plans.end()) {
            out.push_back(std::move(n));
            continue;
        }
        const Plan &plan = p->second;
        const onnx::GraphProto &body = plan.body;
        const size_t carried = n.inputs.size() - 2, scans = n.outputs.size() - carried;
        std::unordered_set<size_t> list_slots;
        for (const ListSlot &l : plan.lists) list_slots.insert(l.carried);
        std::vector<std::string> current(n.inputs.begin() + 2, n.inputs.end());
        std::vector<std::vector<std::string>> scanned(scans), elements(plan.lists.size());
        const std::string where = cat(g.source, ": ", n.describe(), ": body");
        std::string always_true_name;
        for (int64_t k = 0; k < plan.iterations; ++k) {
            const std::string prefix = cat(n.name, "/", k, "/");
            std::unordered_map<std::string, std::string> bind;
            bind[body.input(0).name()] = inliner.int64_constant(prefix + "iteration", {}, {k});
            if (always_true_name.empty()) {
                always_true_name = inliner.fresh_value(n.name + "/condition");
                g.constants.emplace(always_true_name, ConstantData::in_memory(kOnnxBool, {}, std::string(1, '\1')));
            }
            bind[body.input(1).name()] = always_true_name;
            for (size_t j = 0; j < carried; ++j)
                if (!list_slots.count(j)) bind[body.input(static_cast<int>(j) + 2).name()] = current[j];
            std::vector<std::string> wanted(static_cast<size_t>(body.output_size()));
            if (k + 1 == plan.iterations)
                for (size_t j = 0; j < carried; ++j)
                    if (!list_slots.count(j)) wanted[j + 1] = n.outputs[j];
            const std::vector<std::string> got = inliner.inline_graph(body, prefix, bind, wanted, where, out);
            for (size_t j = 0; j < carried; ++j) current[j] = got[j + 1];
            for (size_t s = 0; s < scans; ++s) scanned[s].push_back(got[1 + carried + s]);
            for (size_t l = 0; l < plan.lists.size(); ++l) elements[l].push_back(got[1 + carried + scans + l]);
        }
        if (plan.iterations == 0)
            for (size_t j = 0; j < carried; ++j)
                if (!list_slots.count(j))
                    out.push_back(inliner.new_node(n.name + "/output", "Identity", {current[j]}, {n.outputs[j]}));
        for (size_t s = 0; s < scans; ++s)
            inliner.stack(scanned[s], 0, true, n.outputs[carried + s], cat(n.name, "/scan", s, "/"), out);
        for (size_t l = 0; l < plan.lists.size(); ++l) lists[n.outputs[plan.lists[l].carried]] = elements[l];
    }
    g.nodes = std::move(out);
    topo_sort(g);
    return true;
}

} // namespace onnxstream::importer

// Keeps the guards of flattened If branches (flatten_if.cpp) true to the graph after the other passes.
//
// Passes that replace nodes (fusions, conv1d_to_conv2d, folding) create nodes without a guard. Two rules,
// applied until nothing changes, give each node the guard it needs:
// - forward: a node reading a value that a guarded node produces runs under that guard (the deepest one
//   when there are several), since the value does not exist when the branch is skipped;
// - backward: a node whose results are read only by nodes under one guard (and are not graph outputs) runs
//   under that guard too, so work that only a branch needs is skipped with it.
// IfMerge nodes read both branches by design and keep the guard flatten_if gave them.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "onnx/passes/passes.h"
#include "util/error.h"
#include "util/strings.h"

namespace onnxstream::importer {

namespace {

class GuardTree {
public:
    explicit GuardTree(const IrGraph &g) : g_(g) {
        for (size_t i = 0; i < g.nodes.size(); ++i)
            for (const auto &out : g.nodes[i].outputs)
                if (!out.empty()) producer_[out] = i;
    }
    // The guard a guard value is computed under ("" at the top level).
    const std::string &parent(const std::string &guard) const {
        static const std::string none;
        auto it = producer_.find(guard);
        return it == producer_.end() ? none : g_.nodes[it->second].guard;
    }
    size_t depth(const std::string &guard) const {
        size_t d = 0;
        for (std::string gd = guard; !gd.empty() && d <= g_.nodes.size(); gd = parent(gd)) ++d;
        return d;
    }
    // True when one of n's outputs is `guard` or a guard it is nested in (n computes it).
    bool computes(const Node &n, std::string guard) const {
        for (size_t steps = 0; !guard.empty() && steps <= g_.nodes.size(); ++steps, guard = parent(guard))
            if (std::find(n.outputs.begin(), n.outputs.end(), guard) != n.outputs.end()) return true;
        return false;
    }
    // True when `inner` is `outer` or nested in it.
    bool within(std::string inner, const std::string &outer) const {
        for (size_t steps = 0; steps <= g_.nodes.size(); ++steps) {
            if (inner == outer) return true;
            if (inner.empty()) return false;
            inner = parent(inner);
        }
        return false;
    }
    const Node *producer(const std::string &value) const {
        auto it = producer_.find(value);
        return it == producer_.end() ? nullptr : &g_.nodes[it->second];
    }

private:
    const IrGraph &g_;
    std::unordered_map<std::string, size_t> producer_;
};

bool forward(IrGraph &g, const GuardTree &tree) {
    bool changed = false;
    for (Node &n : g.nodes) {
        if (n.op_type == "IfMerge") continue;
        std::string deepest = n.guard;
        size_t depth = tree.depth(deepest);
        auto see = [&](const std::string &value) {
            const Node *p = value.empty() ? nullptr : tree.producer(value);
            if (!p || p->guard.empty() || p->guard == deepest) return;
            const size_t d = tree.depth(p->guard);
            if (d > depth) {
                deepest = p->guard;
                depth = d;
            }
        };
        for (const auto &in : n.inputs) see(in);
        for (const auto &in : n.captures) see(in);
        if (deepest != n.guard) {
            n.guard = deepest;
            changed = true;
        }
    }
    return changed;
}

bool backward(IrGraph &g, const GuardTree &tree) {
    std::unordered_map<std::string, std::vector<size_t>> readers;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        for (const auto &in : g.nodes[i].inputs)
            if (!in.empty()) readers[in].push_back(i);
        for (const auto &in : g.nodes[i].captures) readers[in].push_back(i);
    }
    const std::unordered_set<std::string> outputs(g.outputs.begin(), g.outputs.end());
    bool changed = false;
    for (Node &n : g.nodes) {
        if (n.op_type == "IfMerge") continue;
        const std::string *common = nullptr;
        bool usable = true, read = false;
        for (const auto &out : n.outputs) {
            if (out.empty()) continue;
            if (outputs.count(out)) usable = false;
            auto it = readers.find(out);
            if (it == readers.end()) continue;
            for (size_t r : it->second) {
                const std::string &gd = g.nodes[r].guard;
                read = true;
                if (!common) common = &gd;
                else if (*common != gd) usable = false;
            }
        }
        // A guard's own inputs (the outer guard an And reads) are read under it, but cannot run under it.
        if (!usable || !read || common->empty() || *common == n.guard || !tree.within(*common, n.guard) ||
            tree.computes(n, *common))
            continue;
        n.guard = *common;
        changed = true;
    }
    return changed;
}

} // namespace

bool settle_guards(IrGraph &g) {
    bool any = false;
    for (const Node &n : g.nodes) any = any || !n.guard.empty();
    if (!any) return false;
    bool changed = false;
    for (size_t round = 0; round <= g.nodes.size(); ++round) {
        const GuardTree tree(g);
        bool step = forward(g, tree);
        step |= backward(g, GuardTree(g));
        if (!step) break;
        changed = true;
    }
    for (const Node &n : g.nodes)
        if (!n.guard.empty() && g.is_constant(n.guard))
            fail(ONNXSTREAM_ERR_UNSUPPORTED, g.source, ": ", n.describe(), " runs under the branch condition '",
                 n.guard, "', which folded to a constant after its If was flattened");
    if (changed) topo_sort(g);
    return changed;
}

} // namespace onnxstream::importer

// Dead code: nodes whose results nobody reads (left behind by folding and fusion, or exported unused),
// and initializers no node reads, which would otherwise become weight files.
#include <unordered_set>

#include "onnx/passes/passes.h"

namespace onnxstream::importer {

bool eliminate_dead_code(IrGraph &g) {
    std::unordered_set<std::string> live(g.outputs.begin(), g.outputs.end());
    std::vector<bool> keep(g.nodes.size(), false);
    bool changed = false;
    // Nodes are sorted, so walking backwards sees every reader before the node it reads from.
    for (size_t i = g.nodes.size(); i-- > 0;) {
        const Node &n = g.nodes[i];
        for (const auto &out : n.outputs) keep[i] = keep[i] || (!out.empty() && live.count(out));
        if (!keep[i]) {
            changed = true;
            continue;
        }
        for (const auto &in : n.inputs)
            if (!in.empty()) live.insert(in);
        live.insert(n.captures.begin(), n.captures.end());
        if (!n.guard.empty()) live.insert(n.guard);
    }
    if (changed) {
        std::vector<Node> kept;
        kept.reserve(g.nodes.size());
        for (size_t i = 0; i < g.nodes.size(); ++i)
            if (keep[i]) kept.push_back(std::move(g.nodes[i]));
        g.nodes = std::move(kept);
    }
    for (auto it = g.constants.begin(); it != g.constants.end();) {
        if (live.count(it->first)) {
            ++it;
        } else {
            it = g.constants.erase(it);
            changed = true;
        }
    }
    return changed;
}

} // namespace onnxstream::importer

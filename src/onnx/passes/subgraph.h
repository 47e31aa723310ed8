// Copying a subgraph (an If branch, a Loop body) into the main graph, for the passes that replace control
// flow by the nodes it would run (inline_if.cpp, unroll_loop.cpp).
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "onnx/ir.h"

namespace onnxstream::importer {

class SubgraphInliner {
public:
    // Every name g uses now is taken; new values and nodes get names that are not.
    explicit SubgraphInliner(IrGraph &g);

    // Appends graph's nodes to `out`, its initializers to g's constants. `bind` maps graph inputs (and any
    // other name the copy should read differently) to outer values. Values the subgraph defines get fresh
    // names starting with `prefix`, except that output i takes outputs[i] when that is not empty (an
    // Identity copies it there when the subgraph does not produce it itself). Reads of outer values
    // keep their names, nested subgraphs included. Returns the outer name of each graph output.
    std::vector<std::string> inline_graph(const onnx::GraphProto &graph, const std::string &prefix,
                                          const std::unordered_map<std::string, std::string> &bind,
                                          const std::vector<std::string> &outputs, const std::string &where,
                                          std::vector<Node> &out);

    // A value or node name not used yet, starting with base.
    std::string fresh_value(const std::string &base);
    std::string fresh_node(const std::string &base);

    // A node of the default domain with a fresh name.
    Node new_node(const std::string &base, const char *type, std::vector<std::string> inputs,
                  std::vector<std::string> outputs);
    // A new int64 constant; returns its name.
    std::string int64_constant(const std::string &base, Shape shape, const std::vector<int64_t> &values);
    // `result` = Concat along axis of parts, each first given a new dimension there (Unsqueeze, in the
    // graph's opset's form) when new_axis.
    void stack(const std::vector<std::string> &parts, int64_t axis, bool new_axis, const std::string &result,
               const std::string &prefix, std::vector<Node> &out);

private:
    IrGraph &g_;
    std::unordered_set<std::string> used_, node_names_;
};

} // namespace onnxstream::importer

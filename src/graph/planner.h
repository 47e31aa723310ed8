// Before a run: infer and check the dtype and shape of every tensor (so a mismatch fails before the
// first op with the op's model.txt line), find each tensor's last use, and list the weight fetches in
// execution order for read-ahead.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "graph/graph.h"

namespace onnxstream {

struct Plan {
    std::vector<std::vector<TensorInfo>> node_outputs; // per node, per output
    std::vector<std::optional<TensorInfo>> values;     // per value
    std::vector<std::vector<int>> free_after;          // per node: values dead once it has run
    std::vector<WeightSpec> fetch_order;               // every weight reference, in op order
};

// Loads a small weight for shape inference (Reshape's shape, Slice's starts, ...), or returns an empty
// tensor when the weight is too large to be worth loading early.
using ConstantLoader = std::function<Tensor(const WeightSpec &)>;

// input_infos: dtype/shape of every graph input, indexed like graph.inputs().
Plan make_plan(const Graph &graph, const std::vector<TensorInfo> &input_infos, const ConstantLoader &load_constant);

} // namespace onnxstream

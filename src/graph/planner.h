// Before a run: infer and check the dtype and shape of every tensor (so a mismatch fails before the
// first op with the op's model.txt line), find each tensor's last use, and list the weight fetches in
// execution order for read-ahead.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "graph/graph.h"

namespace onnxstream {

// How one node sees channels-last (NHWC) tensors; filled by plan_layouts() (graph/layout_plan.h).
struct NodeLayout {
    // The node is layout-independent (elementwise, Concat, Split, ...) and runs on physical NHWC views:
    // its NHWC inputs are handed to it as plain (N,H,W,C) tensors, its other inputs reshaped to
    // in_shape[i] (when not empty), its axis attribute remapped (attrs), and its outputs come out in
    // out_infos' physical shapes, relabelled NHWC with their logical shapes afterwards.
    bool follow = false;
    std::vector<bool> in_nhwc;  // per input: the value must be NHWC when the node runs
    std::vector<bool> out_nhwc; // per output: write NHWC (native ops: RunContext::output_nhwc)
    std::vector<Shape> in_shape;
    std::vector<TensorInfo> out_infos;
    std::shared_ptr<const std::vector<AttributeText>> attrs; // remapped attributes (follow), or null
};

struct Plan {
    std::vector<std::vector<TensorInfo>> node_outputs; // per node, per output
    std::vector<std::optional<TensorInfo>> values;     // per value
    std::vector<std::vector<int>> free_after;          // per node: values dead once it has run
    std::vector<WeightSpec> fetch_order;               // every weight reference, in op order
    std::vector<NodeLayout> layouts;                   // per node; empty: every tensor is NCHW
};

// Loads a small weight for shape inference (Reshape's shape, Slice's starts, ...), or returns an empty
// tensor when the weight is too large to be worth loading early.
using ConstantLoader = std::function<Tensor(const WeightSpec &)>;

// A shape against the one model.txt declares: equal, where a dimension declared kAnyDim ('?' in model.txt:
// it follows the input size in a model converted with --resizable) matches any size.
bool fits_declared(const Shape &shape, const Shape &declared);

// input_infos: dtype/shape of every graph input, indexed like graph.inputs(). Inputs may differ from their
// declarations only in dimensions declared kAnyDim; the plan then follows the pushed shapes.
Plan make_plan(const Graph &graph, const std::vector<TensorInfo> &input_infos, const ConstantLoader &load_constant);

} // namespace onnxstream

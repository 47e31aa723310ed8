// Load-time layout plan: which rank-4 float32 activations are kept channels-last (NHWC) between ops.
//
// Convolutions compute in NHWC (XNNPACK), so an NCHW activation is transposed on the way in and out of
// every Conv. The plan groups tensors that must share one layout (the inputs and outputs of
// layout-independent ops: elementwise, activations, Concat/Split on any axis) and keeps a group NHWC
// when that saves more transposes inside convolutions than the conversions it needs at its boundaries
// (producers or consumers that only handle NCHW, graph inputs). Graph outputs are always NCHW, so
// nothing users read ever changes layout. The executor does the boundary conversions lazily, once per
// tensor.
#pragma once

#include "graph/planner.h"

namespace onnxstream {

// Fills plan.layouts (one entry per node) from plan.values / plan.node_outputs.
void plan_layouts(const Graph &graph, Plan &plan);

} // namespace onnxstream

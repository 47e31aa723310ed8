// Runs a planned graph op by op: fetch the op's weights, run it, drop the weights, free every tensor
// whose last consumer has run, report progress.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "graph/planner.h"
#include "ops/op.h"
#include "weights/provider.h"

namespace onnxstream {

struct OpProgress {
    size_t op_index, op_count;
    const OpLine *line;
    uint64_t elapsed_us;
    uint64_t current_bytes, peak_bytes;
};
struct RunStats {
    uint64_t run_us = 0;
    uint64_t weight_wait_us = 0; // time the executor waited for weights (not hidden by prefetch)
    // NCHW <-> NHWC activation transposes: inside ops (Conv on an NCHW tensor) and at layout-plan boundaries.
    uint64_t layout_transposes = 0;
    // Ops computed in float16 arithmetic; ops that asked for it but fell back to float32 (no f16 kernels).
    uint64_t fp16_ops = 0, fp16_fallbacks = 0;
};

// Return true to cancel the run.
using ProgressFn = std::function<bool(const OpProgress &)>;
// Sees every graph input at the start and every op output right after its op ran (value index, tensor).
using ValueObserver = std::function<void(int, const Tensor &)>;

// node_state: when given (one slot per node, kept by the caller between runs), ops may keep prepared
// kernels there; see RunContext::state.
// inputs: one tensor per graph input (graph.inputs() order). Returns one tensor per graph output
// (graph.outputs() order). Throws Error; all intermediates are released on any exit.
std::vector<Tensor> execute(const Graph &graph, const Plan &plan, const std::vector<Tensor> &inputs,
                            WeightsProvider &provider, const Allocator &alloc, pthreadpool_t pool,
                            const ProgressFn &progress, RunStats &stats,
                            std::vector<std::shared_ptr<void>> *node_state = nullptr,
                            const RunOptions &options = RunOptions(), const ValueObserver *observer = nullptr);

} // namespace onnxstream

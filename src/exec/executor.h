// Runs a planned graph op by op: fetch the op's weights, run it, drop the weights, free every tensor
// whose last consumer has run, report progress.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "exec/kept_kernels.h"
#include "exec/profiler.h"
#include "graph/planner.h"
#include "ops/op.h"
#include "weights/lora.h"
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
    // Ops that computed an 8-bit weight in int8 arithmetic (xnnpack/dynamic_quant.h).
    uint64_t int8_ops = 0;
    // Bytes written on the weight path by the executor (padded copies) and by ops (conversions and
    // transposes of weights for their kernels); the provider's own copies are counted by the provider.
    uint64_t weight_bytes_copied = 0;
};

// Return true to cancel the run.
using ProgressFn = std::function<bool(const OpProgress &)>;
// Sees every graph input at the start and every op output right after its op ran (value index, tensor).
using ValueObserver = std::function<void(int, const Tensor &)>;

// Runs one planned graph; everything it uses is the caller's and must outlive it. It owns the
// contract between ops and their inputs: each op sees its weights (fetched, or streamed in row chunks),
// its inputs in the layout the plan gives them, and every input readable kTensorPadding bytes past its
// end (tensor/allocator.h), except the weight inputs it declares it reads exactly.
class Executor {
public:
    // node_state: when given (one slot per node, kept by the caller between runs), ops may keep prepared
    // kernels there; see RunContext::state.
    Executor(const Graph &graph, const Plan &plan, WeightsProvider &provider, const Allocator &alloc,
             pthreadpool_t pool, const RunOptions &options, std::vector<std::shared_ptr<void>> *node_state = nullptr)
        : graph_(graph), plan_(plan), provider_(provider), alloc_(alloc), pool_(pool), options_(options),
          node_state_(node_state) {}

    // inputs: one tensor per graph input (graph.inputs() order). Returns one tensor per graph output
    // (graph.outputs() order), NCHW. Throws Error; all intermediates are released on any exit.
    std::vector<Tensor> run(const std::vector<Tensor> &inputs, const ProgressFn &progress, RunStats &stats,
                            const ValueObserver *observer = nullptr);
    // Record every op of the coming runs in `profiler` (nullptr: off).
    void set_profiler(Profiler *profiler) { profiler_ = profiler; }
    // Add these LoRA deltas to the weights they touch as they are fetched (nullptr: none).
    void set_lora(const LoraSet *lora) { lora_ = lora; }
    // With node_state: keep prepared kernels only for the ops `kept` offers a place to, deciding on each
    // one's first run (nullptr: every op may keep them).
    void set_kept_kernels(KeptKernels *kept) { kept_ = kept; }

private:
    struct NodeInputs;
    void run_node(const Node &node);
    // Whether a guarded node's guard (a run-time If's branch condition) holds in this run.
    bool guard_holds(const Node &node) const;
    // What running the node would have freed, without running it.
    void skip_node(const Node &node);
    // run_node, measured into the profiler.
    void run_node_profiled(const Node &node);
    void gather_inputs(const Node &node, const NodeLayout *layout, NodeInputs &in);
    Tensor fetch_weight(const Node &node, const WeightSpec &spec);
    void store_outputs(const Node &node, RunContext &ctx, const std::vector<TensorInfo> &out_infos, bool follow);
    // Value v in the given layout (a copy made once per run for the consumers that need the other one).
    const Tensor &in_layout(int v, bool nhwc);

    const Graph &graph_;
    const Plan &plan_;
    WeightsProvider &provider_;
    const Allocator &alloc_;
    pthreadpool_t pool_;
    const RunOptions &options_;
    std::vector<std::shared_ptr<void>> *node_state_;
    const LoraSet *lora_ = nullptr;
    KeptKernels *kept_ = nullptr;
    // Per run.
    std::vector<Tensor> live_, other_;
    RunStats *stats_ = nullptr;
    const ValueObserver *observer_ = nullptr;
    const Node *current_ = nullptr; // the op being run, for out-of-memory messages
    Profiler *profiler_ = nullptr;
    uint64_t op_wait_ns_ = 0; // the current op's time fetching weights and reading streamed rows
};

} // namespace onnxstream

// Per-op profile of a run: what each op cost (time, FLOPs, weight bytes, waiting for weights, XNNPACK
// kernel preparation) and every weight read on every thread, rendered as a Chrome trace-event file
// (Perfetto, chrome://tracing) or as a table per op type.
//
// A profiled run must use the memory it would use unprofiled: everything that does not change from run to
// run (names, shapes as text, FLOPs, bytes) is built once per plan before the run's tensors exist, and the
// run only appends timings to buffers reserved then. Small allocations made during a run and kept after it
// would pin glibc heap pages above the tensors freed around them (a full-size UNet peaked 25 MB higher that
// way).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "graph/planner.h"
#include "weights/provider.h"

namespace onnxstream {

// What the executor measures for one op.
struct OpTiming {
    size_t node = 0;
    uint64_t start_ns = 0, duration_ns = 0; // start from the run's start
    uint64_t weight_wait_ns = 0;    // fetching weights and reading streamed rows, on the run thread
    uint64_t kernel_prepare_ns = 0; // XNNPACK operator creation (weight packing) and setup
    uint64_t memory_bytes = 0;      // tracked tensor bytes alive after the op
};

// One op of a profile: its timing and what the plan says about it.
struct OpProfile {
    const OpTiming *timing;
    const std::string *name, *type; // as written in model.txt
    int line;
    const std::string *inputs, *outputs; // "float32[1,3,640,640], w:float16[16,3,3,3]"
    uint64_t weight_bytes, activation_bytes, flops;
};

struct ReadRecord {
    int file = -1; // index into the graph's weight files, -1 if the read was of another file
    uint64_t start_ns = 0, duration_ns = 0, bytes = 0;
    int track = 0; // 0: the run thread; 1, 2, ...: other threads (the prefetch thread), in order of first read
};

// A machine's measured ceilings, for the summary's "% peak" column (0 = not known).
struct Roofline {
    double flops_per_s = 0; // float32 matrix multiplication
    double bytes_per_s = 0; // memory bandwidth
};

class Profiler : public ReadObserver {
public:
    // Before a run with `plan`: builds the per-op facts when the plan is new (dropping the last profile,
    // which belongs to another plan) and reserves the buffers. Both must outlive the profile (invalidate()
    // when the plan goes).
    void prepare(const Graph &graph, const Plan &plan);
    void invalidate();
    // The executor's calls: the calling thread is the run thread.
    void begin_run();
    void add_op(const OpTiming &timing);
    void end_run(uint64_t run_ns) { current_.run_ns = run_ns; }
    // Nanoseconds since begin_run.
    uint64_t since_start(std::chrono::steady_clock::time_point t) const;
    void weight_read(const std::string &file, std::chrono::steady_clock::time_point start,
                     uint64_t bytes) noexcept override;
    // The run succeeded: its profile becomes the last one.
    void commit();

    // The last successful run's profile.
    size_t op_count() const { return last_.ops.size(); }
    OpProfile op(size_t i) const;
    uint64_t run_ns() const { return last_.run_ns; }
    // The profile as Chrome trace-event JSON: one slice per op on the run thread's track, one per weight
    // read on the track of the thread that read it, and a counter of tracked memory.
    std::string trace_json() const;
    // A table per op type sorted by time: count, total ms, % of the run, GFLOP/s, weight and activation
    // GB/s, kernel preparation and weight wait ms, and, when `peak` is known, the fraction of it reached.
    std::string summary(const Roofline &peak = {}) const;

private:
    struct OpFacts {
        std::string inputs, outputs;
        uint64_t weight_bytes = 0, activation_bytes = 0, flops = 0;
    };
    struct Buffers {
        std::vector<OpTiming> ops;
        std::vector<ReadRecord> reads;
        uint64_t dropped_reads = 0; // past the reserved room: counted, not recorded
        uint64_t run_ns = 0;
    };
    const Graph *graph_ = nullptr;
    const Plan *plan_ = nullptr;
    std::vector<OpFacts> facts_;                     // per node
    std::vector<std::string> files_;                 // the graph's weight files
    std::unordered_map<std::string, int> file_index_;
    std::chrono::steady_clock::time_point start_;
    std::thread::id run_thread_;
    mutable std::mutex reads_mutex_; // weight_read runs on the prefetch thread too
    std::vector<std::thread::id> read_threads_;
    Buffers current_, last_;
};

} // namespace onnxstream

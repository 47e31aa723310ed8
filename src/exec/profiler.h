// Per-op profile of a run: what each op cost (time, FLOPs, weight bytes, waiting for weights, XNNPACK
// kernel preparation) and every weight read on every thread, rendered as a Chrome trace-event file
// (Perfetto, chrome://tracing) or as a table per op type.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "weights/provider.h"

namespace onnxstream {

struct OpRecord {
    size_t index = 0;
    int line = 0; // model.txt line
    std::string name, type;
    std::string inputs, outputs; // "float32[1,3,640,640], w:float16[16,3,3,3]"
    uint64_t start_ns = 0, duration_ns = 0; // start from the run's start
    uint64_t weight_wait_ns = 0;    // fetching weights and reading streamed rows, on the run thread
    uint64_t kernel_prepare_ns = 0; // XNNPACK operator creation (weight packing) and setup
    uint64_t weight_bytes = 0;      // bytes of the op's weights as stored
    uint64_t activation_bytes = 0;  // bytes of the op's activation inputs and outputs
    uint64_t flops = 0;             // exec/op_flops.h
    uint64_t memory_bytes = 0;      // tracked tensor bytes alive after the op
};

struct ReadRecord {
    std::string file;
    uint64_t start_ns = 0, duration_ns = 0, bytes = 0;
    int track = 0; // 0: the run thread; 1, 2, ...: other threads (the prefetch thread), in order of first read
};

// A machine's measured ceilings, for the summary's "% of peak" column (0 = not known).
struct Roofline {
    double flops_per_s = 0; // float32 matrix multiplication
    double bytes_per_s = 0; // memory bandwidth
};

class Profiler : public ReadObserver {
public:
    // Starts a new profile (the previous run's is dropped); the calling thread is the run thread.
    void begin_run();
    void end_run(uint64_t run_ns) { run_ns_ = run_ns; }
    // Nanoseconds since begin_run.
    uint64_t since_start(std::chrono::steady_clock::time_point t) const;
    void add_op(OpRecord record) { ops_.push_back(std::move(record)); }
    void weight_read(const std::string &file, std::chrono::steady_clock::time_point start,
                     uint64_t bytes) noexcept override;

    const std::vector<OpRecord> &ops() const { return ops_; }
    uint64_t run_ns() const { return run_ns_; }
    // The profile as Chrome trace-event JSON: one slice per op on the run thread's track, one per weight
    // read on the track of the thread that read it, and a counter of tracked memory.
    std::string trace_json() const;
    // A table per op type sorted by time: count, total ms, % of the run, GFLOP/s, weight and activation
    // GB/s, kernel preparation and weight wait ms, and, when `peak` is known, the fraction of it reached.
    std::string summary(const Roofline &peak = {}) const;

private:
    std::chrono::steady_clock::time_point start_;
    std::thread::id run_thread_;
    uint64_t run_ns_ = 0;
    std::vector<OpRecord> ops_;
    mutable std::mutex reads_mutex_; // weight_read runs on the prefetch thread too
    std::vector<ReadRecord> reads_;
    std::vector<std::thread::id> read_threads_;
};

} // namespace onnxstream

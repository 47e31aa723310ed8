// Time spent preparing XNNPACK kernels: operator creation (which packs the weights) and setup/reshape
// (which builds indirection buffers), apart from the compute. The profiler installs a counter on the run
// thread for the op it measures, and so does the executor for an op whose kept kernels it measures
// (exec/kept_kernels.h); with none installed a timer reads no clock, so the hot path pays one thread-local
// load.
#pragma once

#include <chrono>
#include <cstdint>

namespace onnxstream {

class KernelPrepareTimer {
public:
    KernelPrepareTimer() : sink_(sink()) {
        if (sink_) start_ = std::chrono::steady_clock::now();
    }
    ~KernelPrepareTimer() {
        if (sink_)
            *sink_ += static_cast<uint64_t>(
                std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_)
                    .count());
    }
    KernelPrepareTimer(const KernelPrepareTimer &) = delete;
    KernelPrepareTimer &operator=(const KernelPrepareTimer &) = delete;

    // The nanosecond counter timers on this thread add to; nullptr = not profiling.
    static uint64_t *&sink() {
        static thread_local uint64_t *counter = nullptr;
        return counter;
    }

private:
    uint64_t *sink_;
    std::chrono::steady_clock::time_point start_;
};

} // namespace onnxstream

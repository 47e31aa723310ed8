// Time spent preparing XNNPACK kernels: operator creation (which packs the weights) and setup/reshape
// (which builds indirection buffers), apart from the compute. The profiler installs a counter on the run
// thread for the op it measures, and so does the executor for an op whose kept kernels it measures
// (exec/kept_kernels.h); with none installed a timer reads no clock, so the hot path pays one thread-local
// load.
#pragma once

#include <atomic>
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

// Preparation time spent on a thread pool's threads for the op the creating thread measures. Each thread
// of the parallel section counts its own (a Worker for the section's span on it) and the creating thread's
// counter gets the sum when this goes, after the section.
class PoolPrepareTime {
public:
    PoolPrepareTime() : caller_(KernelPrepareTimer::sink()) {}
    ~PoolPrepareTime() {
        if (caller_) *caller_ += total_.load(std::memory_order_relaxed);
    }
    PoolPrepareTime(const PoolPrepareTime &) = delete;
    PoolPrepareTime &operator=(const PoolPrepareTime &) = delete;

    class Worker {
    public:
        explicit Worker(PoolPrepareTime &pool) : pool_(pool), saved_(KernelPrepareTimer::sink()) {
            KernelPrepareTimer::sink() = pool.caller_ ? &own_ : nullptr;
        }
        ~Worker() {
            KernelPrepareTimer::sink() = saved_;
            pool_.total_.fetch_add(own_, std::memory_order_relaxed);
        }
        Worker(const Worker &) = delete;
        Worker &operator=(const Worker &) = delete;

    private:
        PoolPrepareTime &pool_;
        uint64_t *saved_;
        uint64_t own_ = 0;
    };

private:
    uint64_t *caller_;
    std::atomic<uint64_t> total_{0};
};

} // namespace onnxstream

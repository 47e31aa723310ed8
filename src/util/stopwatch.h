// Elapsed wall time in microseconds, the unit of every run statistic (RunStats, provider read times).
#pragma once

#include <chrono>
#include <cstdint>

namespace onnxstream {

class Stopwatch {
public:
    Stopwatch() : start_(std::chrono::steady_clock::now()) {}
    uint64_t elapsed_us() const {
        return static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start_).count());
    }
    uint64_t elapsed_ns() const {
        return static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count());
    }
    std::chrono::steady_clock::time_point started() const { return start_; }

private:
    std::chrono::steady_clock::time_point start_;
};

} // namespace onnxstream

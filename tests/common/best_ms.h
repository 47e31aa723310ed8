// Timing for the hand-run C++ benchmarks (tests/bench/conv_backends, tests/attention/xnn_ops_bench).
#pragma once

#include <algorithm>
#include <chrono>

namespace onnxstream::bench {

// The best of `runs` timed calls of f, in milliseconds, after one untimed warm-up call (first touch of the
// buffers, lazy initialisation, operator plans).
template <typename F> double best_ms(int runs, F &&f) {
    f();
    double best = 1e30;
    for (int r = 0; r < runs; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        f();
        best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
}

} // namespace onnxstream::bench

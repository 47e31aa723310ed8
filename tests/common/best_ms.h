// Timing for the hand-run C++ benchmarks (tests/bench/conv_backends, tests/attention/xnn_ops_bench).
#pragma once

#include <algorithm>
#include <chrono>

namespace onnxstream::bench {

// The best of `runs` timed calls of f, in milliseconds, with prepare() called untimed before every call,
// after one untimed warm-up call (first touch of the buffers, lazy initialisation, operator plans).
// prepare() may e.g. evict the caches, to time f on weights that come from memory as in a model run.
template <typename P, typename F> double best_ms_after(int runs, P &&prepare, F &&f) {
    prepare();
    f();
    double best = 1e30;
    for (int r = 0; r < runs; ++r) {
        prepare();
        auto t0 = std::chrono::steady_clock::now();
        f();
        best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
}

// The same with nothing to prepare.
template <typename F> double best_ms(int runs, F &&f) {
    return best_ms_after(runs, [] {}, f);
}

} // namespace onnxstream::bench

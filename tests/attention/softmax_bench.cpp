// The softmax part of attention: the engine's row kernels (src/ops/vector_math.h) against XNNPACK's own f32
// softmax operator on the same score rows, one thread, the row lengths of SD 1.5's attention (77 keys of
// the cross-attention, the flash key block of 512, a whole 4096-key row). Both produce normalised
// probabilities here (the attention op itself normalises its Dv outputs instead, the "no normalise" line),
// and the largest difference between the two outputs is printed beside the times.
// Usage: softmax_bench [rows=4096] [runs=5]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "ops/vector_math.h"
#include "xnnpack/matmul.h"

using namespace onnxstream;

namespace {

// The best of `runs` timings of f, each after an untimed setup().
template <typename S, typename F> double best_ms(int runs, S &&setup, F &&f) {
    double best = 1e30;
    for (int r = 0; r < runs; ++r) {
        setup();
        auto t0 = std::chrono::steady_clock::now();
        f();
        best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
}

} // namespace

int main(int argc, char **argv) {
    const size_t rows = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 4096;
    const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
    std::mt19937 rng(1);
    std::normal_distribution<float> dist(0.0f, 3.0f);
    std::printf("%-8s %-26s %10s %12s %12s\n", "keys", "softmax", "ms", "ns/score", "max |diff|");
    for (size_t t : {size_t(77), size_t(512), size_t(4096)}) {
        std::vector<float> scores(rows * t + 16), ours(scores.size()), theirs(scores.size());
        for (float &x : scores) x = dist(rng);
        auto fresh = [&] { std::copy(scores.begin(), scores.end(), ours.begin()); };
        auto engine = [&](bool normalise) {
            for (size_t r = 0; r < rows; ++r) {
                float *s = ours.data() + r * t;
                const float m = vmath::mask_max(s, t, nullptr, 0);
                const float inv = 1.0f / vmath::exp_sub_sum(s, t, m);
                if (normalise)
                    for (size_t i = 0; i < t; ++i) s[i] *= inv;
            }
        };
        const double no_norm = best_ms(runs, fresh, [&] { engine(false); });
        const double ours_ms = best_ms(runs, fresh, [&] { engine(true); });
        const double xnn_ms = best_ms(runs, [] {}, [&] { xnn::softmax_rows_f32(rows, t, scores.data(), theirs.data(), nullptr); });
        float diff = 0.0f;
        for (size_t i = 0; i < rows * t; ++i) diff = std::max(diff, std::fabs(ours[i] - theirs[i]));
        const double n = static_cast<double>(rows * t) / 1e6;
        std::printf("%-8zu %-26s %10.3f %12.3f %12s\n", t, "engine, no normalise", no_norm, no_norm / n, "");
        std::printf("%-8zu %-26s %10.3f %12.3f %12.2e\n", t, "engine, normalised", ours_ms, ours_ms / n, diff);
        std::printf("%-8zu %-26s %10.3f %12.3f %12s\n", t, "XNNPACK softmax_nc_f32", xnn_ms, xnn_ms / n, "");
    }
    return 0;
}

// The float32 product x[M, K] · W[K, N] through the engine's fully connected operator (src/xnnpack/matmul.h),
// the weight whole in one operator against the same weight in blocks of output columns, each its own
// operator writing its columns of y (ops/column_blocks.h, output_channel_block). Prints the best of RUNS
// timings and GFLOP/s for every M, the engine's block for this machine's level-2 cache, and the largest
// difference between the two outputs. Weights packed once and not timed; THREADS threads (pthreadpool).
// A benchmark, not a test.
// Usage: fc_column_blocks [--cold] [threads=2] [runs=7] [block=0: the engine's] [KxN...] (default: the SD
// text encoder's 768x768 768x3072 3072x768). --cold writes 256 MB before every timed run, so that the
// weights come from memory, as in a model run whose weights do not fit in the caches.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <pthreadpool.h>

#include "ops/column_blocks.h"
#include "xnnpack/init.h"
#include "xnnpack/matmul.h"
#include "../common/best_ms.h"

using onnxstream::bench::best_ms_after;

namespace {

struct Blocks {
    size_t width = 0;
    std::vector<std::unique_ptr<onnxstream::xnn::FullyConnectedF32>> ops;
};

// One operator per `width` columns of w ([k, n] row-major), each packed from its columns copied out.
Blocks make_blocks(size_t k, size_t n, const std::vector<float> &w, size_t width) {
    Blocks b;
    b.width = width;
    std::vector<float> columns(k * width);
    for (size_t c0 = 0; c0 < n; c0 += width) {
        const size_t cols = std::min(width, n - c0);
        for (size_t r = 0; r < k; ++r) std::copy_n(w.data() + r * n + c0, cols, columns.data() + r * cols);
        b.ops.push_back(std::make_unique<onnxstream::xnn::FullyConnectedF32>(k, cols, columns.data(), true, nullptr, k, n));
    }
    return b;
}

void run(const Blocks &b, size_t m, const float *x, float *y, pthreadpool_t pool) {
    for (size_t i = 0; i < b.ops.size(); ++i) b.ops[i]->run(m, x, y + i * b.width, pool);
}

// The blocks shared out among the threads, each block run whole by one thread.
void run_spread(const Blocks &b, size_t m, const float *x, float *y, pthreadpool_t pool) {
    struct Task {
        const Blocks *b;
        size_t m;
        const float *x;
        float *y;
    } task{&b, m, x, y};
    pthreadpool_parallelize_1d(
        pool,
        [](void *p, size_t i) {
            const Task *t = static_cast<const Task *>(p);
            t->b->ops[i]->run(t->m, t->x, t->y + i * t->b->width, nullptr);
        },
        &task, b.ops.size(), 0);
}

} // namespace

int main(int argc, char **argv) {
    const bool cold = argc > 1 && std::string(argv[1]) == "--cold";
    if (cold) {
        --argc;
        ++argv;
    }
    std::vector<char> evict(cold ? size_t(256) << 20 : 0);
    char stamp = 0;
    const auto evict_caches = [&] {
        if (cold) std::fill(evict.begin(), evict.end(), ++stamp);
    };
    const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
    const int runs = argc > 2 ? std::atoi(argv[2]) : 7;
    const size_t forced = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 0;
    std::vector<std::string> shapes;
    for (int i = 4; i < argc; ++i) shapes.push_back(argv[i]);
    if (shapes.empty()) shapes = {"768x768", "768x3072", "3072x768"};
    onnxstream::init_kernels();
    pthreadpool_t pool = pthreadpool_create(static_cast<size_t>(threads));
    const size_t l2 = onnxstream::cpu_l2_bytes_per_thread();
    std::printf("%d threads, level-2 cache per thread %zu KiB, best of %d runs, %s weights\n\n", threads, l2 >> 10,
                runs, cold ? "cold" : "warm");
    std::printf("| K x N | M | block | whole ms | whole GFLOP/s | blocks ms | blocks GFLOP/s | spread block | "
                "spread ms | spread GFLOP/s | max |diff| |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (const std::string &shape : shapes) {
        size_t k = 0, n = 0;
        if (std::sscanf(shape.c_str(), "%zux%zu", &k, &n) != 2 || k == 0 || n == 0) {
            std::fprintf(stderr, "fc_column_blocks: bad shape %s (want KxN)\n", shape.c_str());
            return 2;
        }
        std::vector<float> w(k * n);
        for (float &v : w) v = dist(rng);
        const Blocks whole = make_blocks(k, n, w, n);
        for (size_t m : {7, 77, 256, 1024, 4096}) {
            const size_t width = forced ? std::min(forced, n) : onnxstream::output_channel_block(m, k, n, l2);
            const Blocks blocks = make_blocks(k, n, w, width);
            std::vector<float> x(m * k + 16), y0(m * n), y1(m * n);
            for (float &v : x) v = dist(rng);
            const double gflop = 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n) / 1e9;
            const double t0 = best_ms_after(runs, evict_caches, [&] { run(whole, m, x.data(), y0.data(), pool); });
            const double t1 = best_ms_after(runs, evict_caches, [&] { run(blocks, m, x.data(), y1.data(), pool); });
            // Spread: a multiple of the thread count of blocks, each within the engine's block.
            const size_t count = (n + width - 1) / width, per = static_cast<size_t>(threads);
            const size_t spread_count = (count + per - 1) / per * per;
            const size_t spread_width = std::min(n, ((n + spread_count - 1) / spread_count + 15) / 16 * 16);
            const Blocks spread = make_blocks(k, n, w, spread_width);
            std::vector<float> y2(m * n);
            const double t2 = best_ms_after(runs, evict_caches, [&] { run_spread(spread, m, x.data(), y2.data(), pool); });
            float diff = 0;
            for (size_t i = 0; i < y0.size(); ++i)
                diff = std::max({diff, std::fabs(y0[i] - y1[i]), std::fabs(y0[i] - y2[i])});
            std::printf("| %zux%zu | %zu | %zu | %.3f | %.0f | %.3f | %.0f | %zu | %.3f | %.0f | %.1e |\n", k, n, m,
                        width, t0, gflop / t0 * 1e3, t1, gflop / t1 * 1e3, spread_width, t2, gflop / t2 * 1e3, diff);
        }
    }
    pthreadpool_destroy(pool);
    return 0;
}

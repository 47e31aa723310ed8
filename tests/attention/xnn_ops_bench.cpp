// Two XNNPACK 2024 operators the engine does not use, against the engine's own code on the SD 1.5 shapes
// where it spends its copies and attention products, float32, both sides on one pthreadpool:
//  - xnn_*_transpose_nd_x32 against permute_copy (src/ops/transpose.h): the UNet's attention head
//    reshapes, its NCHW<->NHWC layout changes and the text encoder's head reshape. The outputs must be
//    identical, so the difference column must read 0.
//  - xnn_*_batch_matrix_multiply_nc_f32 against matmul_f32 (src/ops/matmul_kernels.h): attention's scores
//    Q·Kᵀ (K as stored, (n,k): XNN_FLAG_TRANSPOSE_B on XNNPACK's side, b_nk on the engine's) and P·V. Both
//    pack B on every call, the engine per batch slice through a fully connected operator, XNNPACK into its
//    workspace; the sums may round differently, so the difference is small but need not be 0.
// Each time is the best of `runs` calls after one untimed warm-up call (which also faults the output in).
// ratio = XNNPACK ms / engine ms: below 1, XNNPACK's operator is faster.
// Usage: xnn_ops_bench [threads=2] [runs=7]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "../common/best_ms.h"
#include "exec/threadpool.h"
#include "ops/matmul_kernels.h"
#include "ops/transpose.h"
#include "util/error.h"
#include "xnnpack/batch_matmul.h"
#include "xnnpack/transpose.h"

using namespace onnxstream;
using bench::best_ms;

namespace {

// Both libraries may read 16 bytes past an input (XNN_EXTRA_BYTES); give every buffer more than that.
constexpr size_t kSlack = 16;

std::vector<float> random_floats(size_t n, std::mt19937 &rng) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(n + kSlack);
    for (float &x : v) x = dist(rng);
    return v;
}

// NaN when either side left an element unwritten: both outputs start as NaN, which std::max would skip.
float max_abs_diff(const std::vector<float> &x, const std::vector<float> &y, size_t n) {
    float d = 0.0f;
    for (size_t i = 0; i < n; ++i) {
        const float e = std::fabs(x[i] - y[i]);
        if (std::isnan(e)) return NAN;
        d = std::max(d, e);
    }
    return d;
}

std::string dims(const std::vector<int64_t> &d) {
    std::string s = "(";
    for (int64_t x : d) s += (s.size() > 1 ? "," : "") + std::to_string(x);
    return s + ")";
}

void print_row(const std::string &label, double ours, double theirs, float diff) {
    std::printf("%-44s %10.3f %10.3f %7.2f %12.2e\n", label.c_str(), ours, theirs, theirs / ours, diff);
    std::fflush(stdout);
}

struct TransposeCase {
    std::vector<int64_t> shape, perm;
    const char *what;
};

struct MatmulCase {
    size_t batch, m, k, n;
    bool b_nk;
    const char *what;
};

} // namespace

int main(int argc, char **argv) {
    const size_t threads = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 2;
    const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 7;
    try {
        ThreadPool pool(threads);
        std::mt19937 rng(1);
        std::printf("threads %zu, best of %d runs after a warm-up; ratio = XNNPACK / engine\n", pool.threads(), runs);

        std::printf("\n%-44s %10s %10s %7s %12s\n", "transpose (shape perm)", "engine ms", "XNNPACK ms", "ratio",
                    "max |diff|");
        const TransposeCase transposes[] = {
            {{1, 4096, 8, 40}, {0, 2, 1, 3}, "unet heads"},
            {{1, 8, 4096, 40}, {0, 2, 1, 3}, "unet heads back"},
            {{1, 1024, 8, 80}, {0, 2, 1, 3}, "unet heads"},
            {{1, 77, 8, 40}, {0, 2, 1, 3}, "unet context heads"},
            {{1, 320, 64, 64}, {0, 2, 3, 1}, "unet NCHW->NHWC"},
            {{1, 64, 64, 320}, {0, 3, 1, 2}, "unet NHWC->NCHW"},
            {{1, 1280, 8, 8}, {0, 2, 3, 1}, "unet NCHW->NHWC"},
            {{1, 77, 12, 64}, {0, 2, 1, 3}, "text encoder heads"},
        };
        xnn::TransposeX32 xnn_transpose;
        for (const TransposeCase &c : transposes) {
            const size_t count = static_cast<size_t>(shape_numel(c.shape));
            const std::vector<float> in = random_floats(count, rng);
            std::vector<float> ours(count + kSlack, NAN), theirs(count + kSlack, NAN);
            const double ours_ms =
                best_ms(runs, [&] { permute_copy(ours.data(), in.data(), c.shape, c.perm, sizeof(float), pool.get()); });
            const double theirs_ms =
                best_ms(runs, [&] { xnn_transpose.run(in.data(), theirs.data(), c.shape, c.perm, pool.get()); });
            print_row(dims(c.shape) + " " + dims(c.perm) + " " + c.what, ours_ms, theirs_ms,
                      max_abs_diff(ours, theirs, count));
        }

        std::printf("\n%-44s %10s %10s %7s %12s\n", "matmul (batch x m,k,n; b layout)", "engine ms", "XNNPACK ms",
                    "ratio", "max |diff|");
        // Full-size SD 1.5 products, no fewer rows of Q: the 64x64 latent's self-attention scores are
        // 8 x 4096 x 4096 floats, 512 MB per output and two outputs kept for the comparison (about 1.1 GB).
        const MatmulCase matmuls[] = {
            {8, 4096, 40, 4096, true, "unet self-attn Q.K^T"},
            {8, 4096, 4096, 40, false, "unet self-attn P.V"},
            {8, 4096, 40, 77, true, "unet cross-attn Q.K^T"},
            {12, 77, 64, 77, true, "text encoder Q.K^T"},
        };
        for (const MatmulCase &c : matmuls) {
            const std::vector<float> a = random_floats(c.batch * c.m * c.k, rng);
            const std::vector<float> b = random_floats(c.batch * c.k * c.n, rng);
            const size_t count = c.batch * c.m * c.n;
            std::vector<float> ours(count + kSlack, NAN), theirs(count + kSlack, NAN);
            const Shape batch{static_cast<int64_t>(c.batch)};
            const double ours_ms = best_ms(runs, [&] {
                matmul_f32(a.data(), batch, b.data(), batch, ours.data(), batch, static_cast<int64_t>(c.m),
                           static_cast<int64_t>(c.k), static_cast<int64_t>(c.n), pool.get(), c.b_nk);
            });
            xnn::BatchMatMulF32 bmm(c.b_nk);
            const double theirs_ms = best_ms(runs, [&] {
                bmm.run(c.batch, c.m, c.k, c.n, a.data(), b.data(), theirs.data(), pool.get());
            });
            const std::string label = std::to_string(c.batch) + " x " + std::to_string(c.m) + "," +
                                      std::to_string(c.k) + "," + std::to_string(c.n) +
                                      (c.b_nk ? " b(n,k) " : " b(k,n) ") + c.what;
            print_row(label, ours_ms, theirs_ms, max_abs_diff(ours, theirs, count));
        }
    } catch (const Error &e) {
        std::fprintf(stderr, "xnn_ops_bench: %s (%s)\n", e.what(), status_name(e.status()));
        return 1;
    }
    return 0;
}

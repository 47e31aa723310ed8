// Batched matrix products with numpy batch broadcasting, shared by MatMul (matmul_gemm.cpp) and Einsum
// (einsum.cpp): float32 through XNNPACK's fully connected operator, integers exactly.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <pthreadpool.h>

#include "ops/op.h"
#include "tensor/int4_blocks.h"
#include "xnnpack/dynamic_quant.h"

namespace onnxstream {

// A padded float32 copy of float16 tensor t: these ops compute float16 in float32.
Tensor f32_copy_of_f16(const RunContext &ctx, const Tensor &t);

// A float32 product summed over chunks of K into y[count] (a weight streamed in row chunks, a convolution's
// parts of its input channels): the first chunk writes y itself, each later one a scratch buffer, made on
// first use, that add() sums into y. With a row stride, y is `rows` rows of `width` values `y_stride`
// apart (a block of output columns) and the scratch buffer holds them without gaps.
class ChunkSum {
public:
    ChunkSum(const RunContext &ctx, float *y, size_t count) : ChunkSum(ctx, y, 1, count, count) {}
    ChunkSum(const RunContext &ctx, float *y, size_t rows, size_t width, size_t y_stride)
        : ctx_(ctx), y_(y), count_(rows * width), width_(width), y_stride_(y_stride) {}
    // Where the chunk's product goes: y for the first chunk, the scratch buffer for the others.
    float *target(bool first_chunk);
    // Sums the product just written to target(first_chunk) into y (nothing to do for the first chunk).
    void add(bool first_chunk);

private:
    const RunContext &ctx_;
    float *y_;
    size_t count_, width_, y_stride_;
    Tensor partial_;
};

// The row layout of blockwise int4 weight input wi (its declared shape and block); INVALID_MODEL when the
// declaration does not describe one.
int4::RowLayout int4_layout(const RunContext &ctx, size_t wi);

// XNNPACK's int4 fully connected operator for `rows` stored rows of int4 weight input wi (at `stored`), the
// output channels first_row..., restricted to the inputs [k0, k1): the rows are split into XNNPACK's code and
// scale arrays and packed, looked up first in the packed store under the weight's chunk key_row. Shared by
// MatMul, Gemm and the GEGLU feed-forward; int4 weights have no other path, so a CPU without XNNPACK's
// qd8_f32_qb4w kernels fails here with UNSUPPORTED.
std::shared_ptr<xnn::FullyConnectedQd8> int4_fully_connected(const RunContext &ctx, size_t wi, int64_t key_row,
                                                             const uint8_t *stored, int64_t first_row, int64_t rows,
                                                             const int4::RowLayout &l, int64_t k0, int64_t k1,
                                                             const float *bias, size_t y_stride);

// y[b] = a[ia(b)] * b[ib(b)] over the broadcast batch shape y_batch: which a and b slice each output slice uses.
struct BatchPlan {
    std::vector<int64_t> a_index, b_index; // per output slice
};
BatchPlan plan_batches(const Shape &a_batch, const Shape &b_batch, const Shape &y_batch);

// a slices (m, k), b slices (k, n), or (n, k) when b_nk; y slices (m, n). a must be readable 16 bytes past
// its end.
void matmul_f32(const float *a, const Shape &a_batch, const float *b, const Shape &b_batch, float *y,
                const Shape &y_batch, int64_t m, int64_t k, int64_t n, pthreadpool_t pool,
                bool b_nk = false);

// Accumulator of matmul_int: the unsigned twin of an integer type, double for double.
template <typename T, bool = std::is_floating_point_v<T>> struct MatmulAcc {
    using type = std::make_unsigned_t<T>;
};
template <typename T> struct MatmulAcc<T, true> {
    using type = T;
};

// Exact integer product (wrapping like two's complement hardware), and the float64 product in plain
// double loops; integer and float64 MatMul are rare and small.
template <typename T>
void matmul_int(const T *a, const Shape &a_batch, const T *b, const Shape &b_batch, T *y,
                const Shape &y_batch, int64_t m, int64_t k, int64_t n, pthreadpool_t pool) {
    using U = typename MatmulAcc<T>::type;
    BatchPlan p = plan_batches(a_batch, b_batch, y_batch);
    int64_t slices = shape_numel(y_batch);
    parallel_for(pool, static_cast<size_t>(slices * m), 16, [&](size_t begin, size_t end) {
        for (size_t r = begin; r < end; ++r) {
            int64_t s = static_cast<int64_t>(r) / m, i = static_cast<int64_t>(r) % m;
            const T *ar = a + p.a_index[static_cast<size_t>(s)] * m * k + i * k;
            const T *bs = b + p.b_index[static_cast<size_t>(s)] * k * n;
            // Accumulate in the unsigned twin of T (same storage; may alias): overflow wraps, no UB.
            U *row = reinterpret_cast<U *>(y + s * m * n + i * n);
            std::fill(row, row + n, U(0));
            for (int64_t kk = 0; kk < k; ++kk) {
                U av = static_cast<U>(ar[kk]);
                const T *br = bs + kk * n;
                for (int64_t j = 0; j < n; ++j) row[j] += av * static_cast<U>(br[j]);
            }
        }
    });
}

} // namespace onnxstream

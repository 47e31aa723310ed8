// Layout and dtype staging for the op families that compute NCHW tensors in float32 through kernels with
// other needs: NCHW <-> NHWC transposes (conv hands NHWC to XNNPACK) and float16 <-> float32 staging.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/op.h"

namespace onnxstream {

// For each of `batch` matrices: dst[b][c][r] = src[b][r][c], with src rows x cols row-major. Cache-blocked,
// SIMD 4x4 blocks, multithreaded on the pool.
void transpose_batched(const float *src, float *dst, size_t batch, size_t rows, size_t cols,
                       pthreadpool_t pool);

// The same for 16-bit elements (float16 activations and weights computed in float16) and 8-bit ones
// (quantized weights): 32x32 blocks.
void transpose_batched_u16(const uint16_t *src, uint16_t *dst, size_t batch, size_t rows, size_t cols,
                           pthreadpool_t pool);
void transpose_batched_u8(const uint8_t *src, uint8_t *dst, size_t batch, size_t rows, size_t cols,
                          pthreadpool_t pool);

// NCHW -> NHWC is (rows = C, cols = H*W); NHWC -> NCHW is (rows = H*W, cols = C).
inline void nchw_to_nhwc(const float *src, float *dst, size_t n, size_t c, size_t hw, pthreadpool_t pool) {
    transpose_batched(src, dst, n, c, hw, pool);
}
inline void nhwc_to_nchw(const float *src, float *dst, size_t n, size_t c, size_t hw, pthreadpool_t pool) {
    transpose_batched(src, dst, n, hw, c, pool);
}

// dst[i] = float16 src[i] widened, for i < n, on the pool.
void half_to_float_parallel(const uint16_t *src, float *dst, size_t n, pthreadpool_t pool);
// The float32 data of a float tensor: its own data, or a float32 copy of a float16 tensor kept in holder.
const float *as_f32(const RunContext &ctx, const Tensor &t, Tensor &holder);
// Weight dtypes RunContext::kernel_weight turns into float32, and blockwise int4 (int4 with quantization,
// which only MatMul and Gemm take: graph.cpp refuses it elsewhere), for infer checks.
bool is_float_weight_dtype(DType dtype, bool quantized);
// Where a float32 kernel writes output y: y's data when it is float32, else float32 scratch in holder
// that store_f32_output() converts into y.
float *out_f32(const RunContext &ctx, Tensor &y, Tensor &holder);
void store_f32_output(const RunContext &ctx, Tensor &y, const Tensor &holder);

} // namespace onnxstream

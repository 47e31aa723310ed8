#include "ops/layout.h"
#include "ops/quant_kernels.h"

#include <algorithm>
#include <cstring>

#include "tensor/half.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#elif defined(__ARM_NEON)
#include <arm_neon.h>
#endif

namespace onnxstream {

namespace {

// dst[c][r] = src[r][c] over the block rows [r0, r1) x cols [c0, c1); strides in elements. 4x4 blocks go
// through SIMD registers, ~3x faster than scalar element moves.
void transpose_block(const float *src, float *dst, size_t src_stride, size_t dst_stride, size_t r0, size_t r1,
                     size_t c0, size_t c1) {
#if defined(__SSE2__) || defined(__ARM_NEON)
    const size_t r4 = r0 + (r1 - r0) / 4 * 4, c4 = c0 + (c1 - c0) / 4 * 4;
    auto quad = [&](size_t r, size_t c) {
        const float *s0 = src + r * src_stride + c;
        float *d0 = dst + c * dst_stride + r;
#if defined(__SSE2__)
        __m128 a = _mm_loadu_ps(s0), b = _mm_loadu_ps(s0 + src_stride);
        __m128 e = _mm_loadu_ps(s0 + 2 * src_stride), f = _mm_loadu_ps(s0 + 3 * src_stride);
        _MM_TRANSPOSE4_PS(a, b, e, f);
        _mm_storeu_ps(d0, a);
        _mm_storeu_ps(d0 + dst_stride, b);
        _mm_storeu_ps(d0 + 2 * dst_stride, e);
        _mm_storeu_ps(d0 + 3 * dst_stride, f);
#else
        float32x4x2_t p = vtrnq_f32(vld1q_f32(s0), vld1q_f32(s0 + src_stride));
        float32x4x2_t q = vtrnq_f32(vld1q_f32(s0 + 2 * src_stride), vld1q_f32(s0 + 3 * src_stride));
        vst1q_f32(d0, vcombine_f32(vget_low_f32(p.val[0]), vget_low_f32(q.val[0])));
        vst1q_f32(d0 + dst_stride, vcombine_f32(vget_low_f32(p.val[1]), vget_low_f32(q.val[1])));
        vst1q_f32(d0 + 2 * dst_stride, vcombine_f32(vget_high_f32(p.val[0]), vget_high_f32(q.val[0])));
        vst1q_f32(d0 + 3 * dst_stride, vcombine_f32(vget_high_f32(p.val[1]), vget_high_f32(q.val[1])));
#endif
    };
    // The inner loop walks along the side whose rows are far apart, so its 4 streams continue through
    // whole cache lines instead of touching 4 new far-apart lines per step (they would share L1 sets
    // when the distance is a power of two).
    if (src_stride >= dst_stride) {
        for (size_t r = r0; r < r4; r += 4)
            for (size_t c = c0; c < c4; c += 4) quad(r, c);
    } else {
        for (size_t c = c0; c < c4; c += 4)
            for (size_t r = r0; r < r4; r += 4) quad(r, c);
    }
    for (size_t c = c4; c < c1; ++c)
        for (size_t r = r0; r < r4; ++r) dst[c * dst_stride + r] = src[r * src_stride + c];
    for (size_t c = c0; c < c1; ++c)
        for (size_t r = r4; r < r1; ++r) dst[c * dst_stride + r] = src[r * src_stride + c];
#else
    for (size_t c = c0; c < c1; ++c)
        for (size_t r = r0; r < r1; ++r) dst[c * dst_stride + r] = src[r * src_stride + c];
#endif
}

// Few rows (an RGB image's 3 channels): interleave whole rows; with R known the compiler vectorises
// the strided stores, which the 4x4 blocks above cannot cover.
template <size_t R> void interleave_rows(const float *src, float *dst, size_t cols, size_t c0, size_t c1) {
    for (size_t c = c0; c < c1; ++c)
        for (size_t r = 0; r < R; ++r) dst[c * R + r] = src[r * cols + c];
}

} // namespace

void transpose_batched(const float *src, float *dst, size_t batch, size_t rows, size_t cols,
                       pthreadpool_t pool) {
    const size_t plane = rows * cols;
    if (plane == 0 || batch == 0) return;
    if (rows == 1 || cols == 1) {
        if (src != dst) std::memcpy(dst, src, batch * plane * sizeof(float));
        return;
    }
    if (rows == 2 || rows == 3) {
        const size_t chunk = 4096;
        const size_t chunks = (cols + chunk - 1) / chunk;
        parallel_for(pool, batch * chunks, 1, [&](size_t begin, size_t end) {
            for (size_t t = begin; t < end; ++t) {
                const size_t b = t / chunks, c0 = (t % chunks) * chunk, c1 = std::min(cols, c0 + chunk);
                if (rows == 2)
                    interleave_rows<2>(src + b * plane, dst + b * plane, cols, c0, c1);
                else
                    interleave_rows<3>(src + b * plane, dst + b * plane, cols, c0, c1);
            }
        });
        return;
    }
    // Blocks of up to 32 elements on the short side and ~4K elements (16 KB of floats) in all, so a
    // block stays in L1; a skinny matrix (few channels) gets long runs along its other side.
    size_t br, bc;
    if (rows <= cols) {
        br = std::min<size_t>(rows, 32);
        bc = std::min<size_t>(cols, std::max<size_t>(32, 4096 / br));
    } else {
        bc = std::min<size_t>(cols, 32);
        br = std::min<size_t>(rows, std::max<size_t>(32, 4096 / bc));
    }
    const size_t tiles_r = (rows + br - 1) / br, tiles_c = (cols + bc - 1) / bc;
    const size_t tiles = batch * tiles_r * tiles_c;
    const size_t per_task = std::max<size_t>(1, 16384 / (br * bc));
    parallel_for(pool, tiles, per_task, [&](size_t begin, size_t end) {
        for (size_t t = begin; t < end; ++t) {
            const size_t b = t / (tiles_r * tiles_c);
            const size_t rem = t % (tiles_r * tiles_c);
            const size_t r0 = (rem / tiles_c) * br, c0 = (rem % tiles_c) * bc;
            const size_t r1 = std::min(rows, r0 + br), c1 = std::min(cols, c0 + bc);
            transpose_block(src + b * plane, dst + b * plane, cols, rows, r0, r1, c0, c1);
        }
    });
}

namespace {
template <typename T>
void transpose_batched_small(const T *src, T *dst, size_t batch, size_t rows, size_t cols, pthreadpool_t pool) {
    const size_t plane = rows * cols;
    if (plane == 0 || batch == 0) return;
    if (rows == 1 || cols == 1) {
        if (src != dst) std::memcpy(dst, src, batch * plane * sizeof(T));
        return;
    }
    constexpr size_t kBlock = 32;
    const size_t tiles_r = (rows + kBlock - 1) / kBlock, tiles_c = (cols + kBlock - 1) / kBlock;
    parallel_for(pool, batch * tiles_r * tiles_c, 16, [&](size_t begin, size_t end) {
        for (size_t t = begin; t < end; ++t) {
            const size_t b = t / (tiles_r * tiles_c), rem = t % (tiles_r * tiles_c);
            const size_t r0 = (rem / tiles_c) * kBlock, c0 = (rem % tiles_c) * kBlock;
            const size_t r1 = std::min(rows, r0 + kBlock), c1 = std::min(cols, c0 + kBlock);
            const T *s = src + b * plane;
            T *d = dst + b * plane;
            for (size_t c = c0; c < c1; ++c)
                for (size_t r = r0; r < r1; ++r) d[c * rows + r] = s[r * cols + c];
        }
    });
}
} // namespace

void transpose_batched_u16(const uint16_t *src, uint16_t *dst, size_t batch, size_t rows, size_t cols,
                           pthreadpool_t pool) {
    transpose_batched_small(src, dst, batch, rows, cols, pool);
}

void transpose_batched_u8(const uint8_t *src, uint8_t *dst, size_t batch, size_t rows, size_t cols,
                          pthreadpool_t pool) {
    transpose_batched_small(src, dst, batch, rows, cols, pool);
}

void half_to_float_parallel(const uint16_t *src, float *dst, size_t n, pthreadpool_t pool) {
    parallel_for(pool, n, 1 << 16, [&](size_t b, size_t e) { half_to_float_n(src + b, dst + b, e - b); });
}

const float *as_f32(const RunContext &ctx, const Tensor &t, Tensor &holder) {
    if (t.dtype() == DType::F32) return t.data<float>();
    holder = ctx.scratch(DType::F32, t.shape());
    half_to_float_parallel(t.data<uint16_t>(), holder.data<float>(), static_cast<size_t>(t.numel()), ctx.pool());
    return holder.data<float>();
}

bool is_float_weight_dtype(DType dtype, bool quantized) {
    return dtype == DType::F32 || dtype == DType::F16 ||
           ((dtype == DType::U8 || dtype == DType::I8 || dtype == DType::I4) && quantized);
}

float *out_f32(const RunContext &ctx, Tensor &y, Tensor &holder) {
    if (y.dtype() == DType::F32) return y.data<float>();
    holder = ctx.scratch(DType::F32, y.shape());
    return holder.data<float>();
}

void store_f32_output(const RunContext &ctx, Tensor &y, const Tensor &holder) {
    if (holder.empty()) return;
    const float *src = holder.data<float>();
    uint16_t *dst = y.data<uint16_t>();
    parallel_for(ctx.pool(), static_cast<size_t>(y.numel()), 1 << 16,
                 [&](size_t b, size_t e) { float_to_half_n(src + b, dst + b, e - b); });
}

} // namespace onnxstream

// XNNPACK kernels for the matmul_gemm and normalization families: fully connected (the matrix product
// behind MatMul, Gemm and Einsum) and softmax over the innermost axis.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include <pthreadpool.h>

struct xnn_operator;

namespace onnxstream::xnn {

class PackingScope;

struct FcDeleter {
    void operator()(struct xnn_operator *op) const;
};

// y[m, :] = x[m, :] * W (+ bias) for m in [0, batch). The weight is packed once at construction, so one
// object serves any number of run() calls; its source memory may be freed after construction.
class FullyConnectedF32 {
public:
    // weight is [N, K] row-major, or [K, N] when weight_kn is true. bias (N values) may be null.
    // x rows are x_stride floats apart, y rows y_stride floats apart (>= K and >= N).
    FullyConnectedF32(size_t k, size_t n, const float *weight, bool weight_kn, const float *bias,
                      size_t x_stride, size_t y_stride);
    // The operator whose packed weights `packing` finds in its store, without the weight itself; null when
    // the store does not hold them (or there is no store: builds against the 2022 API, a scope without
    // one). bias is only said to be present or not: the packed bytes carry it.
    static std::shared_ptr<FullyConnectedF32> from_store(PackingScope &packing, size_t k, size_t n, bool weight_kn,
                                                         bool has_bias, size_t x_stride, size_t y_stride);
    // x must stay readable 16 bytes past its last row (XNN_EXTRA_BYTES).
    void run(size_t batch, const float *x, float *y, pthreadpool_t pool) const;

private:
    FullyConnectedF32() = default;
    std::unique_ptr<struct xnn_operator, FcDeleter> op_;
};

// The same product in float16 arithmetic (XNNPACK's f16 kernels) on float16 activations and outputs (strides
// in elements). weight/bias are float16 bits, or float32 when weights_f32 (XNN_FLAG_FP32_STATIC_WEIGHTS;
// both then float32). create() returns null when this CPU has no float16 kernels
// (xnn_status_unsupported_hardware), so the caller can compute in float32 instead.
class FullyConnectedF16 {
public:
    static std::unique_ptr<FullyConnectedF16> create(size_t k, size_t n, const void *weight, bool weight_kn,
                                                     const void *bias, bool weights_f32, size_t x_stride,
                                                     size_t y_stride);
    // x must stay readable 16 bytes past its last row (XNN_EXTRA_BYTES).
    void run(size_t batch, const uint16_t *x, uint16_t *y, pthreadpool_t pool) const;

private:
    FullyConnectedF16() = default;
    std::unique_ptr<struct xnn_operator, FcDeleter> op_;
};

// Softmax over contiguous rows: y[r, :] = softmax(x[r, :]) for `rows` rows of `channels` floats.
// x must stay readable 16 bytes past its end.
void softmax_rows_f32(size_t rows, size_t channels, const float *x, float *y, pthreadpool_t pool);

} // namespace onnxstream::xnn

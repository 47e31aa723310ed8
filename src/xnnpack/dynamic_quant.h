// XNNPACK's dynamically quantized kernels ("qd8"), in the 2024 API only: float activations are quantized
// to int8 when the op runs (one scale and zero point per row, from the row's own range), multiplied with
// per-channel int8 weights in integer arithmetic, and the result comes out in float32. This is how a
// `--quantize w8` weight (int8[@scales.bin,axis]) computes without being dequantized to float32 first.
//
// On a build against the 2022-02 API the kernels do not exist: has_dynamic_quant_kernels() is false and
// every create() returns null, so the caller keeps its float32 path (W8A32).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <pthreadpool.h>

#include "xnnpack/conv.h"

struct xnn_operator;

namespace onnxstream::xnn {

bool has_dynamic_quant_kernels();

// Bytes a quantized activation buffer needs past its last element (XNNPACK reads up to 16 bytes over).
constexpr size_t kQuantizedSlack = 16;
// Entries a quantization-parameter array needs past its last row (XNNPACK's kernels read that far).
constexpr size_t kQuantizedParamsSlack = 10;

// Rows of float activations quantized to int8, each with its own zero point and scale. `values` must
// hold rows * channels + kQuantizedSlack bytes (the caller allocates it, so it is counted as scratch).
struct QuantizedRows {
    struct Params {
        int32_t zero_point;
        float scale;
    };
    int8_t *values = nullptr;
    std::vector<Params> params; // one per row, plus XNNPACK's padding
};

// Quantizes `rows` rows of `channels` floats (rows x_stride floats apart) into q.values, packed.
void quantize_rows(size_t rows, size_t channels, const float *x, size_t x_stride, QuantizedRows &q,
                   pthreadpool_t pool);

struct Qd8Deleter {
    void operator()(struct xnn_operator *op) const;
};

// Quantizes one run of floats at a time, each with its own zero point and scale, into places the caller
// chooses: e.g. overlapping bands of an image's rows, which quantize_rows (rows a fixed stride apart, none
// overlapping) cannot express. One operator serves every call. Throws on a build without the kernels.
class RowQuantizer {
public:
    RowQuantizer();
    // `rows` rows of `channels` floats (x_stride floats apart) into values, packed; params gets one entry
    // per row and must have kQuantizedParamsSlack more.
    void quantize(size_t rows, size_t channels, const float *x, size_t x_stride, int8_t *values,
                  QuantizedRows::Params *params, pthreadpool_t pool);
    // One run of `count` floats with its own zero point and scale.
    void quantize(size_t count, const float *x, int8_t *values, QuantizedRows::Params &params,
                  pthreadpool_t pool);

private:
    std::unique_ptr<struct xnn_operator, Qd8Deleter> op_;
};

// y[m, :] = dequantize(x[m, :]) · W (+ bias): weight int8 [N, K] row-major, or [K, N] when weight_kn, with one
// float32 scale per output channel (N). The weight is packed at creation and may be freed after it.
class FullyConnectedQd8 {
public:
    // Null when the build or the CPU has no such kernel.
    static std::unique_ptr<FullyConnectedQd8> create(size_t k, size_t n, const int8_t *weight, bool weight_kn,
                                                     const float *scales, const float *bias, size_t y_stride);
    // The same product with a blockwise int4 weight (tensor/int4_blocks.h): `codes` are n rows of k 4-bit
    // codes back to back (value = code - 8), `scales` [n][k / block] bfloat16 bits. Null when the build or
    // the CPU has no such kernel.
    static std::unique_ptr<FullyConnectedQd8> create_int4(size_t k, size_t n, size_t block, const uint8_t *codes,
                                                          const uint16_t *scales, const float *bias, size_t y_stride);
    // x: the rows quantize_rows made with channels = k.
    void run(size_t batch, const QuantizedRows &x, float *y, pthreadpool_t pool) const;

private:
    FullyConnectedQd8() = default;
    std::unique_ptr<struct xnn_operator, Qd8Deleter> op_;
    bool int4_ = false;
};

// The convolution of conv2d_nhwc_f32 with a per-channel int8 kernel (OHWI, one scale per output channel of
// this call) on an NHWC input quantized per batch item (one zero point and scale per H·W·C values).
// Returns false, having written nothing, when the build or the CPU has no such kernel.
bool conv2d_nhwc_qd8(const Conv2dShape &s, const QuantizedRows &input, const int8_t *kernel, const float *scales,
                     const float *bias, float *output, pthreadpool_t pool);

} // namespace onnxstream::xnn

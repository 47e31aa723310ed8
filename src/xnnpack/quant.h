// XNNPACK kernels for static W8A8 arithmetic: uint8 asymmetric (qu8) convolution and fully connected
// operators. Activations and weights are uint8 with a per-tensor scale and zero point; the bias is int32
// in units of input_scale * kernel_scale.
#pragma once

#include <cstddef>
#include <cstdint>

#include <pthreadpool.h>

#include "xnnpack/conv.h"

namespace onnxstream::xnn {

struct Qu8Params {
    float input_scale = 1, kernel_scale = 1, output_scale = 1;
    uint8_t input_zero_point = 0, kernel_zero_point = 0, output_zero_point = 0;
};

// The convolution of conv2d_nhwc_f32 in qu8: kernel OHWI uint8, bias int32 (may be null), input/output
// NHWC uint8; s.output_pixel_stride (0: all output channels) lets a call write one output-channel slice.
// Returns false (nothing written) when XNNPACK rejects the scales (requantization scale out of its range),
// so the caller can compute in float instead; other failures throw.
bool conv2d_nhwc_qu8(const Conv2dShape &s, const Qu8Params &q, const uint8_t *input, const uint8_t *kernel,
                     const int32_t *bias, uint8_t *output, pthreadpool_t pool);

// The same convolution with int8 activations (asymmetric: real = (q - zero_point) * scale) and a per-channel
// symmetric int8 kernel (XNNPACK qc8): kernel_scales holds one scale per output channel of this call.
struct Qc8Params {
    float input_scale = 1, output_scale = 1;
    int8_t input_zero_point = 0, output_zero_point = 0;
    const float *kernel_scales = nullptr;
};
bool conv2d_nhwc_qc8(const Conv2dShape &s, const Qc8Params &q, const int8_t *input, const int8_t *kernel,
                     const int32_t *bias, int8_t *output, pthreadpool_t pool);

// y[m, :] = x[m, :] * Wᵀ + bias for `batch` rows in qu8; weight is [N, K] row-major, or [K, N] when
// weight_kn. x rows are k bytes apart, y rows y_stride bytes apart. Returns false like conv2d_nhwc_qu8.
bool fully_connected_qu8(size_t k, size_t n, const Qu8Params &q, const uint8_t *weight, bool weight_kn,
                         const int32_t *bias, size_t batch, const uint8_t *x, uint8_t *y, size_t y_stride,
                         pthreadpool_t pool);

} // namespace onnxstream::xnn

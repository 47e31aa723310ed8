// Dequantization of 8-bit weights (uint8/int8 with QuantParams) to float32, for the ops that compute in
// float32 (W8A32): value = (q - zero_point) * scale.
#pragma once

#include <cstdint>

#include <pthreadpool.h>

#include "tensor/tensor.h"

namespace onnxstream {

// True when t is an 8-bit tensor with quantization parameters the kernels below understand.
bool is_quantized_weight(const Tensor &t);

// dst[i] = dequantized t[i] for every element of t, whose rows (dim 0) are rows first_row.. of the whole
// weight: per-channel scales along axis 0 are indexed by the whole weight's rows (scale[first_row + r]),
// along another axis by the element's index on that axis. Throws INVALID_MODEL when per-channel scales are
// missing (not loaded) or do not match the weight, or an OHWI weight is quantized along an axis other than 0.
void dequantize_rows_f32(const Tensor &t, int64_t first_row, float *dst, pthreadpool_t pool);

// Symmetric per-channel int8 quantization of a float32 tensor of `shape` along `axis`: scale[c] =
// max|w| / 127 over channel c (1 for an all-zero channel), q = round_half_even(w / scale) clamped to +-127.
// Writes dst (numel bytes) and scales (shape[axis] floats).
void quantize_per_channel_s8(const float *src, const Shape &shape, int axis, int8_t *dst, float *scales);

} // namespace onnxstream

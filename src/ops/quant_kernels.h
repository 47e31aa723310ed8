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
// weight (per-row parameters are indexed by the whole weight's rows).
void dequantize_rows_f32(const Tensor &t, int64_t first_row, float *dst, pthreadpool_t pool);

} // namespace onnxstream

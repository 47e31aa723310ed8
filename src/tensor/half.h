// IEEE fp16 <-> fp32 conversion (round to nearest even), for loading and storing float16 tensors.
#pragma once

#include <cstddef>
#include <cstdint>

namespace onnxstream {

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
void half_to_float_n(const uint16_t *src, float *dst, size_t n);
void float_to_half_n(const float *src, uint16_t *dst, size_t n);

} // namespace onnxstream

// IEEE fp16 <-> fp32 conversion (round to nearest even), for loading and storing float16 tensors.
#pragma once

#include <cstddef>
#include <cstdint>

namespace onnxstream {

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
void half_to_float_n(const uint16_t *src, float *dst, size_t n);
void float_to_half_n(const float *src, uint16_t *dst, size_t n);
// bfloat16 is the top half of a float32: widening is exact; narrowing rounds to nearest even and keeps NaN a
// (quiet) NaN, as ONNX's Cast does.
float bfloat16_to_float(uint16_t b);
uint16_t float_to_bfloat16(float f);
// True when the two bulk conversions above use the CPU's conversion instructions (x86 F16C, ARM NEON) rather
// than the scalar code; the tests use it to know which path they checked.
bool half_vector_conversions();

} // namespace onnxstream

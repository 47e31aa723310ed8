// ONNX's four 8-bit float formats (opset 19): conversions to and from wider floats. Each is one byte of
// sign, exponent and mantissa; they differ in field widths, exponent bias and what the top codes mean:
//   float8e4m3fn    4-bit exponent, bias 7, no infinity, NaN = S.1111.111, largest 448
//   float8e4m3fnuz  4-bit exponent, bias 8, no infinity, no -0, NaN = 1.0000.000, largest 240
//   float8e5m2      5-bit exponent, bias 15, IEEE-like: infinities and NaNs in the top exponent, largest 57344
//   float8e5m2fnuz  5-bit exponent, bias 16, no infinity, no -0, NaN = 1.00000.00, largest 57344
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace onnxstream {

enum class Float8Format { E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ };

// The format of a float8 dtype; false for every other dtype.
bool float8_format(DType dtype, Float8Format &out);
inline bool is_float8(DType dtype) {
    Float8Format f;
    return float8_format(dtype, f);
}

// Exact: every float8 value is a float32 value.
float float8_to_float(uint8_t bits, Float8Format format);

// Rounds to the nearest float8 value, ties to even, as ONNX's Cast does. NaN stays NaN. Values beyond the
// largest finite one (after rounding) and infinities become the largest finite value of their sign when
// `saturate` (Cast's default), otherwise infinity in float8e5m2 and NaN in the formats without infinity.
// The -0 of a format without one becomes +0.
uint8_t double_to_float8(double x, Float8Format format, bool saturate);

} // namespace onnxstream

// XNNPACK element-wise kernels (float32) for the element-wise and activation op families. Inputs must be
// readable XNN_EXTRA_BYTES past their end (tensor storage is padded for this).
#pragma once

#include <cstddef>

#include <pthreadpool.h>

namespace onnxstream::xnn {

// The kernels used here all map NaN to NaN, as ONNX Runtime does. (XNNPACK's clamp and the output clamp of
// its binary operators do not: they turn NaN into the lower bound, so Relu, Clip and Add/Sub/Mul/Div do not
// use XNNPACK; Sqrt does not either: XNNPACK 2024-11's float32 square root maps +inf to NaN.)
enum class Unary { Abs, Negate, Floor, Ceiling, RoundEven, Sigmoid, HardSwish };
void unary_f32(Unary op, const float *in, float *out, size_t n, pthreadpool_t pool);

// x < 0 ? slope * x : x; requires a finite slope.
void leaky_relu_f32(const float *in, float *out, size_t n, float slope, pthreadpool_t pool);
// x < 0 ? alpha * (exp(x) - 1) : x; requires a positive normal alpha.
void elu_f32(const float *in, float *out, size_t n, float alpha, pthreadpool_t pool);

} // namespace onnxstream::xnn

// Vectorised float math for the row kernels of attention's softmax, the GELU of Gelu and
// GegluFeedForward, and Swish. GCC does not vectorise float max/sum reductions, a clamp before exp or a call to
// std::erf on its own (without -ffast-math, under the default -ftrapping-math), so the kernels use GCC
// vector types: 16 floats, one AVX-512, two AVX or four SSE/NEON instructions per operation.
//
// Functions marked ONNXSTREAM_ROW_KERNEL get clones for AVX-512 and for AVX2 with FMA on x86-64, picked at
// load time: the build targets baseline x86-64 (SSE2), where the polynomials below cost a multiply and an
// add per term instead of one FMA.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define ONNXSTREAM_ROW_KERNEL __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ONNXSTREAM_ROW_KERNEL
#endif

// The helpers pass V16 by value, and a 64-byte vector argument travels in memory, in two AVX registers or
// in one AVX-512 register depending on the clone: a helper compiled once and called from two clones would
// read its arguments from the wrong place. So every helper is forced inline into each clone, and GCC's note
// about that ABI difference concerns no call boundary.
#if defined(__GNUC__)
#define ONNXSTREAM_VINLINE inline __attribute__((always_inline))
#else
#define ONNXSTREAM_VINLINE inline
#endif
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace onnxstream::vmath {

typedef float V16 __attribute__((vector_size(64)));
typedef uint32_t V16u __attribute__((vector_size(64)));
constexpr size_t kLanes = 16;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

ONNXSTREAM_VINLINE V16 splat(float x) {
    V16 v;
    for (size_t j = 0; j < kLanes; ++j) v[j] = x;
    return v;
}
ONNXSTREAM_VINLINE V16 load16(const float *p) {
    V16 v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
ONNXSTREAM_VINLINE void store16(float *p, V16 v) { std::memcpy(p, &v, sizeof v); }
ONNXSTREAM_VINLINE float hmax(V16 v) {
    float m = v[0];
    for (size_t j = 1; j < kLanes; ++j) m = std::max(m, v[j]);
    return m;
}
ONNXSTREAM_VINLINE float hsum(V16 v) {
    float s = 0.0f;
    for (size_t j = 0; j < kLanes; ++j) s += v[j];
    return s;
}

// exp(x) for x in [-87, 88] to ~1 ulp, for F = float (U = uint32_t) or V16 (U = V16u): Cody-Waite range
// reduction and a degree-6 polynomial, then 2^n built in the exponent bits. Callers clamp x; a NaN gives
// NaN (the exponent bits are then garbage, computed unsigned so that nothing overflows).
template <typename F, typename U> ONNXSTREAM_VINLINE F exp_poly(F x) {
    F t = x * 1.44269504088896341f + 12582912.0f; // round(x / ln2) in t's low mantissa bits
    F n = t - 12582912.0f;
    U ti;
    std::memcpy(&ti, &t, sizeof ti);
    F r = x - n * 0.693359375f + n * 2.12194440e-4f;
    F p = r * 1.9875691500E-4f + 1.3981999507E-3f;
    p = p * r + 8.3334519073E-3f;
    p = p * r + 4.1665795894E-2f;
    p = p * r + 1.6666665459E-1f;
    p = p * r + 5.0000001201E-1f;
    p = p * r * r + r + 1.0f;
    U bits = (ti - 0x4B400000u + 127u) << 23;
    F s;
    std::memcpy(&s, &bits, sizeof s);
    return p * s;
}
ONNXSTREAM_VINLINE float exp_clamped(float x) { return exp_poly<float, uint32_t>(std::max(x, -87.0f)); }

// 1 + erf(x / sqrt(2)), the factor of the erf GELU: 0.5 * x * gelu_factor(x) = gelu(x). erfc(z) for
// z = |x| / sqrt(2) comes from Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7), and the factor is
// 2 - erfc(z) for x >= 0 and erfc(z) itself below 0, so large negative inputs keep their tiny values
// instead of losing them to 1 - erf cancellation.
template <typename F> ONNXSTREAM_VINLINE F erfc_as(F z) {
    F t = 1.0f / (z * 0.3275911f + 1.0f);
    F p = t * 1.061405429f - 1.453152027f;
    p = p * t + 1.421413741f;
    p = p * t - 0.284496736f;
    p = p * t + 0.254829592f;
    return p * t;
}
ONNXSTREAM_VINLINE V16 gelu_factor(V16 x) {
    V16 z = (x < 0.0f ? -x : x) * 0.70710678118654752f;
    V16 e = -(z * z);
    e = e > -87.0f ? e : splat(-87.0f);
    V16 erfc = erfc_as(z) * exp_poly<V16, V16u>(e);
    return x < 0.0f ? erfc : 2.0f - erfc;
}
ONNXSTREAM_VINLINE float gelu_factor(float x) {
    float z = (x < 0.0f ? -x : x) * 0.70710678118654752f;
    float erfc = erfc_as(z) * exp_clamped(-(z * z));
    return x < 0.0f ? erfc : 2.0f - erfc;
}

// sigmoid(alpha * x) for Swish, 0 where exp(-alpha * x) overflows: so -inf gives -inf * 0 = NaN, as
// Sigmoid then Mul does. A NaN stays NaN through the product with x.
ONNXSTREAM_VINLINE V16 swish_sigmoid(V16 x, float alpha) {
    V16 z = -alpha * x;
    V16 clamped = z > -87.0f ? z : splat(-87.0f);
    clamped = clamped < 88.0f ? clamped : splat(88.0f);
    V16 s = 1.0f / (1.0f + exp_poly<V16, V16u>(clamped));
    return z > 88.0f ? splat(0.0f) : s;
}
ONNXSTREAM_VINLINE float swish_sigmoid(float x, float alpha) {
    float z = -alpha * x;
    return z > 88.0f ? 0.0f : 1.0f / (1.0f + exp_clamped(z));
}

// Softmax rows (vector_math.cpp). The row maximum of s after adding the mask when there is one (mask_step
// 1: a row of the mask; 0: one value broadcast); without a mask the row is only read.
float mask_max(float *s, size_t n, const float *mask, size_t mask_step);
// s = exp(s - m) in place; returns the sum. m must be finite.
float exp_sub_sum(float *s, size_t n, float m);

// The erf GELU, y = 0.5 x (1 + erf(x / sqrt(2))) (vector_math.cpp); y may be x.
void gelu_erf(const float *x, float *y, size_t n);
// a *= gelu(g): GEGLU's product of the value half and the GELU of the gate half.
void geglu_erf(float *a, const float *g, size_t n);
// Swish, y = x * sigmoid(alpha * x) (SiLU for alpha 1); y may be x.
void swish(const float *x, float *y, size_t n, float alpha);

} // namespace onnxstream::vmath

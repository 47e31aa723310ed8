// The row kernels of vector_math.h, with the load-time CPU clones: attention's softmax (the scale is already
// in Q), the erf GELU, where Gelu and GegluFeedForward spent more time in std::erf, one element at a
// time, than in anything but their GEMMs, and Swish (SiLU), one pass instead of Sigmoid then Mul.
#include "ops/vector_math.h"

namespace onnxstream::vmath {

// The row maximum of s, after adding the mask when there is one (mask_step 1: a row of the mask; 0: one
// value broadcast). The scale is already in Q, so without a mask the row is only read.
ONNXSTREAM_ROW_KERNEL float mask_max(float *s, size_t n, const float *mask, size_t mask_step) {
    V16 acc = splat(kNegInf);
    float m = kNegInf;
    size_t i = 0;
    if (mask && mask_step == 1) {
        for (; i + kLanes <= n; i += kLanes) {
            V16 x = load16(s + i) + load16(mask + i);
            store16(s + i, x);
            acc = acc > x ? acc : x;
        }
        for (; i < n; ++i) m = std::max(m, s[i] = s[i] + mask[i]);
    } else if (mask) {
        float add = mask[0];
        for (; i + kLanes <= n; i += kLanes) {
            V16 x = load16(s + i) + add;
            store16(s + i, x);
            acc = acc > x ? acc : x;
        }
        for (; i < n; ++i) m = std::max(m, s[i] = s[i] + add);
    } else {
        for (; i + kLanes <= n; i += kLanes) {
            V16 x = load16(s + i);
            acc = acc > x ? acc : x;
        }
        for (; i < n; ++i) m = std::max(m, s[i]);
    }
    return std::max(m, hmax(acc));
}

// s = exp(s - m) in place; returns the sum. m must be finite.
ONNXSTREAM_ROW_KERNEL float exp_sub_sum(float *s, size_t n, float m) {
    // s - m <= 0, so only the lower clamp matters (exp(-87) is below float's normal range anyway).
    const V16 lo = splat(-87.0f);
    V16 acc = splat(0.0f);
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        V16 x = load16(s + i) - m;
        x = x > lo ? x : lo;
        V16 e = exp_poly<V16, V16u>(x);
        store16(s + i, e);
        acc += e;
    }
    float sum = hsum(acc);
    for (; i < n; ++i) sum += s[i] = exp_clamped(s[i] - m);
    return sum;
}

ONNXSTREAM_ROW_KERNEL void gelu_erf(const float *x, float *y, size_t n) {
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        V16 v = load16(x + i);
        store16(y + i, 0.5f * v * gelu_factor(v));
    }
    for (; i < n; ++i) y[i] = 0.5f * x[i] * gelu_factor(x[i]);
}

ONNXSTREAM_ROW_KERNEL void geglu_erf(float *a, const float *g, size_t n) {
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        V16 v = load16(g + i);
        store16(a + i, load16(a + i) * (0.5f * v * gelu_factor(v)));
    }
    for (; i < n; ++i) a[i] *= 0.5f * g[i] * gelu_factor(g[i]);
}

ONNXSTREAM_ROW_KERNEL void swish(const float *x, float *y, size_t n, float alpha) {
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        V16 v = load16(x + i);
        store16(y + i, v * swish_sigmoid(v, alpha));
    }
    for (; i < n; ++i) y[i] = x[i] * swish_sigmoid(x[i], alpha);
}

} // namespace onnxstream::vmath

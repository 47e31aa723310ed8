// The erf GELU kernels of vector_math.h, with the load-time CPU clones: Gelu and GegluFeedForward spent
// more time in std::erf, one element at a time, than in anything but their GEMMs.
#include "ops/vector_math.h"

namespace onnxstream::vmath {

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

} // namespace onnxstream::vmath

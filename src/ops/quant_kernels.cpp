#include "ops/quant_kernels.h"

#include <algorithm>
#include <cmath>

#include "ops/op.h"
#include "util/error.h"

namespace onnxstream {

bool is_quantized_weight(const Tensor &t) {
    return (t.dtype() == DType::U8 || t.dtype() == DType::I8) && t.quant().present && !t.quant().blockwise();
}

namespace {
template <typename Q> void dequantize(const Q *src, float *dst, size_t n, float scale, int32_t zero_point,
                                      pthreadpool_t pool) {
    parallel_for(pool, n, 1 << 16, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) dst[i] = static_cast<float>(static_cast<int32_t>(src[i]) - zero_point) * scale;
    });
}

// The tensor is [rows, channels, inner] around the quantization axis (rows = 1 and channels = dim 0 for
// axis 0 of a chunk, whose channel index starts at first_channel). Each task takes whole rows of
// `channels * inner` elements; inner runs share one scale, and inner == 1 (the last axis) is one multiply
// per element against the scale vector, both plain loops the compiler vectorises.
void dequantize_channels(const int8_t *src, float *dst, size_t rows, size_t channels, size_t inner,
                         const float *scales, pthreadpool_t pool) {
    const size_t row = channels * inner;
    const size_t tile = std::max<size_t>(1, (size_t(1) << 16) / std::max<size_t>(row, 1));
    parallel_for(pool, rows, tile, [&](size_t b, size_t e) {
        for (size_t r = b; r < e; ++r) {
            const int8_t *s = src + r * row;
            float *d = dst + r * row;
            if (inner == 1) {
                for (size_t c = 0; c < channels; ++c) d[c] = static_cast<float>(s[c]) * scales[c];
            } else {
                for (size_t c = 0; c < channels; ++c) {
                    const float scale = scales[c];
                    const int8_t *sc = s + c * inner;
                    float *dc = d + c * inner;
                    for (size_t i = 0; i < inner; ++i) dc[i] = static_cast<float>(sc[i]) * scale;
                }
            }
        }
    });
}
} // namespace

void dequantize_rows_f32(const Tensor &t, int64_t first_row, float *dst, pthreadpool_t pool) {
    const QuantParams &q = t.quant();
    const size_t n = static_cast<size_t>(t.numel());
    if (!q.per_channel()) {
        const float scale = static_cast<float>(q.scale);
        const int32_t zp = static_cast<int32_t>(q.zero_point);
        if (t.dtype() == DType::U8) dequantize(t.data<uint8_t>(), dst, n, scale, zp, pool);
        else dequantize(t.data<int8_t>(), dst, n, scale, zp, pool);
        return;
    }
    const size_t axis = static_cast<size_t>(q.axis);
    if (t.dtype() != DType::I8 || axis >= t.rank())
        fail(ONNXSTREAM_ERR_INVALID_MODEL, "per-channel quantization along axis ", q.axis, " of a ",
             dtype_name(t.dtype()), " tensor ", shape_str(t.shape()), " (expected int8 with the axis in range)");
    if (!q.channel_scales)
        fail(ONNXSTREAM_ERR_INVALID_MODEL, "the per-channel scales of an int8 weight ", shape_str(t.shape()),
             " were not loaded (load_quant_scales in weights/weight_files.h)");
    if (axis != 0 && t.layout() != Layout::Plain)
        fail(ONNXSTREAM_ERR_UNSUPPORTED, "an OHWI weight quantized along axis ", q.axis,
             " (only axis 0 keeps its meaning in OHWI order)");
    if (n == 0) return;
    const std::vector<float> &scales = *q.channel_scales;
    if (axis == 0) {
        const size_t rows = static_cast<size_t>(t.dim(0));
        if (first_row < 0 || static_cast<size_t>(first_row) + rows > scales.size())
            fail(ONNXSTREAM_ERR_INVALID_MODEL, "rows ", first_row, "..", first_row + static_cast<int64_t>(rows),
                 " of an int8 weight have no scales (", scales.size(), " channels)");
        dequantize_channels(t.data<int8_t>(), dst, 1, rows, n / rows, scales.data() + first_row, pool);
        return;
    }
    const size_t channels = static_cast<size_t>(t.dim(axis));
    if (channels != scales.size())
        fail(ONNXSTREAM_ERR_INVALID_MODEL, "an int8 weight ", shape_str(t.shape()), " has ", channels,
             " channels along axis ", q.axis, " but ", scales.size(), " scales");
    size_t inner = 1;
    for (size_t d = axis + 1; d < t.rank(); ++d) inner *= static_cast<size_t>(t.dim(d));
    dequantize_channels(t.data<int8_t>(), dst, n / (channels * inner), channels, inner, scales.data(), pool);
}

void quantize_per_channel_s8(const float *src, const Shape &shape, int axis, int8_t *dst, float *scales) {
    const size_t channels = static_cast<size_t>(shape[static_cast<size_t>(axis)]);
    size_t inner = 1, outer = 1;
    for (size_t d = 0; d < shape.size(); ++d) {
        if (d < static_cast<size_t>(axis)) outer *= static_cast<size_t>(shape[d]);
        if (d > static_cast<size_t>(axis)) inner *= static_cast<size_t>(shape[d]);
    }
    std::vector<float> amax(channels, 0.0f);
    for (size_t o = 0; o < outer; ++o)
        for (size_t c = 0; c < channels; ++c) {
            const float *s = src + (o * channels + c) * inner;
            float m = amax[c];
            for (size_t i = 0; i < inner; ++i) m = std::max(m, std::fabs(s[i]));
            amax[c] = m;
        }
    // Computed in float32 (max / 127, then w / scale) so numpy's float32 arithmetic gives the same bits.
    for (size_t c = 0; c < channels; ++c) scales[c] = amax[c] > 0 && std::isfinite(amax[c]) ? amax[c] / 127.0f : 1.0f;
    for (size_t o = 0; o < outer; ++o)
        for (size_t c = 0; c < channels; ++c) {
            const float *s = src + (o * channels + c) * inner;
            int8_t *d = dst + (o * channels + c) * inner;
            const float scale = scales[c];
            for (size_t i = 0; i < inner; ++i) {
                // nearbyint rounds half to even in the default rounding mode.
                float v = std::nearbyint(s[i] / scale);
                d[i] = static_cast<int8_t>(std::min(127.0f, std::max(-127.0f, v)));
            }
        }
}

} // namespace onnxstream

#include "ops/quant_kernels.h"

#include "ops/op.h"

namespace onnxstream {

bool is_quantized_weight(const Tensor &t) {
    return (t.dtype() == DType::U8 || t.dtype() == DType::I8) && t.quant().present;
}

namespace {
template <typename Q> void dequantize(const Q *src, float *dst, size_t n, float scale, int32_t zero_point,
                                      pthreadpool_t pool) {
    parallel_for(pool, n, 1 << 16, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) dst[i] = static_cast<float>(static_cast<int32_t>(src[i]) - zero_point) * scale;
    });
}
} // namespace

void dequantize_rows_f32(const Tensor &t, int64_t, float *dst, pthreadpool_t pool) {
    const size_t n = static_cast<size_t>(t.numel());
    const float scale = static_cast<float>(t.quant().scale);
    const int32_t zp = static_cast<int32_t>(t.quant().zero_point);
    if (t.dtype() == DType::U8) dequantize(t.data<uint8_t>(), dst, n, scale, zp, pool);
    else dequantize(t.data<int8_t>(), dst, n, scale, zp, pool);
}

} // namespace onnxstream

#include "ops/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "xnnpack/quant.h"

namespace onnxstream {

void range_to_qu8(const ActivationRange &r, float &scale, uint8_t &zero_point) {
    const float lo = std::min(r.min, 0.0f), hi = std::max(r.max, 0.0f);
    scale = hi > lo ? (hi - lo) / 255.0f : 1.0f;
    const float zp = std::nearbyint(-lo / scale);
    zero_point = static_cast<uint8_t>(std::min(255.0f, std::max(0.0f, zp)));
}

namespace {
inline uint8_t quantize_one(float x, float inv_scale, float zp) {
    const float v = std::min(255.0f, std::max(0.0f, x * inv_scale + zp));
    return static_cast<uint8_t>(static_cast<int>(v + 0.5f));
}

// dst[i] = quantized src[i] for contiguous data.
void quantize_flat(const float *src, uint8_t *dst, size_t n, float scale, uint8_t zp, pthreadpool_t pool) {
    const float inv = 1.0f / scale, z = zp;
    parallel_for(pool, n, 1 << 16, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) dst[i] = quantize_one(src[i], inv, z);
    });
}

void dequantize_flat(const uint8_t *src, float *dst, size_t n, float scale, uint8_t zp, pthreadpool_t pool) {
    const float z = zp;
    parallel_for(pool, n, 1 << 16, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) dst[i] = (static_cast<float>(src[i]) - z) * scale;
    });
}

// NCHW float -> NHWC uint8 in one pass: tiles of pixels, each channel's run of the tile read contiguously.
void quantize_nchw_to_nhwc(const float *src, uint8_t *dst, size_t n, size_t c, size_t hw, float scale, uint8_t zp,
                           pthreadpool_t pool) {
    const float inv = 1.0f / scale, z = zp;
    constexpr size_t kTile = 64;
    const size_t tiles = (hw + kTile - 1) / kTile;
    parallel_for(pool, n * tiles, 1, [&](size_t b, size_t e) {
        for (size_t t = b; t < e; ++t) {
            const size_t img = t / tiles, p0 = (t % tiles) * kTile, p1 = std::min(hw, p0 + kTile);
            const float *s = src + img * c * hw;
            uint8_t *d = dst + img * c * hw;
            for (size_t ch = 0; ch < c; ++ch)
                for (size_t p = p0; p < p1; ++p) d[p * c + ch] = quantize_one(s[ch * hw + p], inv, z);
        }
    });
}

void dequantize_nhwc_to_nchw(const uint8_t *src, float *dst, size_t n, size_t c, size_t hw, float scale, uint8_t zp,
                             pthreadpool_t pool) {
    const float z = zp;
    constexpr size_t kTile = 64;
    const size_t tiles = (hw + kTile - 1) / kTile;
    parallel_for(pool, n * tiles, 1, [&](size_t b, size_t e) {
        for (size_t t = b; t < e; ++t) {
            const size_t img = t / tiles, p0 = (t % tiles) * kTile, p1 = std::min(hw, p0 + kTile);
            const uint8_t *s = src + img * c * hw;
            float *d = dst + img * c * hw;
            for (size_t ch = 0; ch < c; ++ch)
                for (size_t p = p0; p < p1; ++p) d[ch * hw + p] = (static_cast<float>(s[p * c + ch]) - z) * scale;
        }
    });
}

// int32 bias in units of in_scale * w_scale (XNNPACK's quantized bias), from a float value times `mul`.
int32_t quantize_bias_value(float bias, float mul, double unit) {
    const double v = std::nearbyint(static_cast<double>(bias) * mul / unit);
    return static_cast<int32_t>(std::min(2147483647.0, std::max(-2147483648.0, v)));
}

std::vector<int32_t> quantize_bias(const float *bias, size_t n, float mul, double unit) {
    std::vector<int32_t> out(n);
    for (size_t i = 0; i < n; ++i) out[i] = quantize_bias_value(bias[i], mul, unit);
    return out;
}

// A per-tensor uint8 weight XNNPACK qu8 can take.
bool qu8_weight(const Tensor &w, float &scale, uint8_t &zp) {
    const QuantParams &q = w.quant();
    if (w.dtype() != DType::U8 || !q.present || q.per_channel() || q.blockwise()) return false;
    if (!(q.scale > 0) || !std::isfinite(q.scale) || q.zero_point < 0 || q.zero_point > 255) return false;
    scale = static_cast<float>(q.scale);
    zp = static_cast<uint8_t>(q.zero_point);
    return true;
}

// Activation checks shared by the three ops; fills the input/output qu8 parameters.
bool ranges_qualify(const RunContext &ctx, xnn::Qu8Params &q) {
    const NodeActivationRanges *r = ctx.activation_ranges();
    if (!r || !r->present || !ctx.has_input(0) || ctx.input_is_weight(0)) return false;
    if (ctx.input(0).dtype() != DType::F32 || ctx.output_info(0).dtype != DType::F32) return false;
    range_to_qu8(r->input, q.input_scale, q.input_zero_point);
    range_to_qu8(r->output, q.output_scale, q.output_zero_point);
    return true;
}

// ranges_qualify plus a per-tensor uint8 weight (input 1).
bool node_qualifies(const RunContext &ctx, xnn::Qu8Params &q) {
    if (!ctx.has_input(1) || !ctx.input_is_weight(1) || !qu8_weight(ctx.input(1), q.kernel_scale, q.kernel_zero_point))
        return false;
    return ranges_qualify(ctx, q);
}

// Input 1 is a per-channel symmetric int8 weight along axis 0 (output channels) with its scales loaded.
bool per_channel_s8_weight(const RunContext &ctx) {
    if (!ctx.has_input(1) || !ctx.input_is_weight(1)) return false;
    const Tensor &w = ctx.input(1);
    const QuantParams &q = w.quant();
    return w.dtype() == DType::I8 && q.present && q.per_channel() && q.axis == 0 && q.channel_scales;
}

// uint8 <-> int8 on the same grid: q_s8 = q_u8 - 128 is the byte with its top bit flipped.
void flip_top_bits(uint8_t *data, size_t n, pthreadpool_t pool) {
    parallel_for(pool, n, 1 << 16, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) data[i] ^= 0x80;
    });
}

// Float bias input `i` (may be absent) as int32 for n outputs; empty when absent.
bool bias_for(const RunContext &ctx, size_t i, size_t n, float mul, const xnn::Qu8Params &q,
              std::vector<int32_t> &out) {
    if (!ctx.has_input(i)) return true;
    const Tensor &b = ctx.input(i);
    if (b.dtype() != DType::F32 || static_cast<size_t>(b.numel()) != n) return false;
    out = quantize_bias(b.data<float>(), n, mul, static_cast<double>(q.input_scale) * q.kernel_scale);
    return true;
}

} // namespace

bool run_conv_w8a8(RunContext &ctx) {
    xnn::Qu8Params q;
    // A per-channel int8 weight (int8[@scales,0]) runs as XNNPACK qc8 with int8 activations: the uint8
    // grid shifted by 128, so quantization is the same and only the bytes' top bit flips.
    const bool qc8 = per_channel_s8_weight(ctx);
    if (!(qc8 ? ranges_qualify(ctx, q) : node_qualifies(ctx, q))) return false;
    const Tensor &x = ctx.input(0), &w = ctx.input(1);
    const Shape &ys = ctx.output_info(0).shape;
    if (x.rank() != 4 || w.rank() != 4 || ys.size() != 4) return false;
    const std::string auto_pad = ctx.attrs().get_string("auto_pad", "NOTSET");
    if (auto_pad != "NOTSET" && auto_pad != "VALID") return false;
    const auto strides = ctx.attrs().get_ints("strides", {1, 1});
    const auto dil = ctx.attrs().get_ints("dilations", {1, 1});
    auto pads = ctx.attrs().get_ints("pads", {0, 0, 0, 0});
    if (auto_pad == "VALID") pads = {0, 0, 0, 0};
    const int64_t group = ctx.attrs().get_int("group", 1);
    if (strides.size() != 2 || dil.size() != 2 || pads.size() != 4 || group < 1) return false;
    const size_t n = static_cast<size_t>(x.dim(0)), c = static_cast<size_t>(x.dim(1));
    const size_t h = static_cast<size_t>(x.dim(2)), wd = static_cast<size_t>(x.dim(3));
    const size_t m = static_cast<size_t>(w.dim(0)), group_in = static_cast<size_t>(w.dim(1));
    const size_t kh = static_cast<size_t>(w.dim(2)), kw = static_cast<size_t>(w.dim(3));
    if (group_in * static_cast<size_t>(group) != c || m % static_cast<size_t>(group) != 0) return false;
    const float *channel_scales = qc8 ? w.quant().channel_scales->data() : nullptr;
    if (qc8 && w.quant().channel_scales->size() != m) return false;
    std::vector<int32_t> bias;
    if (ctx.has_input(2)) {
        const Tensor &b = ctx.input(2);
        if (b.dtype() != DType::F32 || static_cast<size_t>(b.numel()) != m) return false;
        bias.resize(m);
        for (size_t o = 0; o < m; ++o) {
            const double unit = static_cast<double>(q.input_scale) * (qc8 ? channel_scales[o] : q.kernel_scale);
            bias[o] = quantize_bias_value(b.data<float>()[o], 1.0f, unit);
        }
    }
    const bool streamed = ctx.is_streamed(1);
    if (streamed && group != 1) return false;

    auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
    xnn::Conv2dShape s;
    s.batch = n;
    s.in_h = h;
    s.in_w = wd;
    s.kernel_h = u32(static_cast<int64_t>(kh));
    s.kernel_w = u32(static_cast<int64_t>(kw));
    s.stride_h = u32(strides[0]);
    s.stride_w = u32(strides[1]);
    s.dilation_h = u32(dil[0]);
    s.dilation_w = u32(dil[1]);
    s.pad_top = u32(pads[0]);
    s.pad_left = u32(pads[1]);
    s.pad_bottom = u32(pads[2]);
    s.pad_right = u32(pads[3]);
    s.groups = u32(group);
    s.group_in = group_in;
    s.group_out = m / static_cast<size_t>(group);
    const size_t out_hw = static_cast<size_t>(ys[2] * ys[3]);

    Tensor xq = ctx.scratch(DType::U8, {x.numel()}); // padded like every tracked tensor
    // The layout plan may hand the input over channels-last already and want the output that way too:
    // then quantizing is the only conversion (no transposes).
    if (ctx.input_nhwc(0))
        quantize_flat(x.data<float>(), xq.data<uint8_t>(), static_cast<size_t>(x.numel()), q.input_scale,
                      q.input_zero_point, ctx.pool());
    else
        quantize_nchw_to_nhwc(x.data<float>(), xq.data<uint8_t>(), n, c, h * wd, q.input_scale, q.input_zero_point,
                              ctx.pool());
    if (qc8) flip_top_bits(xq.data<uint8_t>(), static_cast<size_t>(x.numel()), ctx.pool());
    Tensor yq = ctx.scratch(DType::U8, {static_cast<int64_t>(n * m * out_hw)});
    // Output channels from o0 on, from weight rows `rows`, writing their slice of every output pixel.
    auto run_rows = [&](const Tensor &rows, int64_t o0, const xnn::Conv2dShape &shape) {
        const Tensor kernel_rows = ctx.kernel_weight(1, rows, o0, rows.dtype()); // OHWI, still 8-bit
        const uint8_t *kernel = static_cast<const uint8_t *>(kernel_rows.raw());
        const int32_t *bias_ptr = bias.empty() ? nullptr : bias.data() + o0;
        if (!qc8)
            return xnn::conv2d_nhwc_qu8(shape, q, xq.data<uint8_t>(), kernel, bias_ptr, yq.data<uint8_t>() + o0,
                                        ctx.pool());
        xnn::Qc8Params p;
        p.input_scale = q.input_scale;
        p.output_scale = q.output_scale;
        p.input_zero_point = static_cast<int8_t>(static_cast<int>(q.input_zero_point) - 128);
        p.output_zero_point = static_cast<int8_t>(static_cast<int>(q.output_zero_point) - 128);
        p.kernel_scales = channel_scales + o0;
        return xnn::conv2d_nhwc_qc8(shape, p, reinterpret_cast<const int8_t *>(xq.data<uint8_t>()),
                                    reinterpret_cast<const int8_t *>(kernel), bias_ptr,
                                    reinterpret_cast<int8_t *>(yq.data<uint8_t>() + o0), ctx.pool());
    };
    if (!streamed) {
        if (!run_rows(w, 0, s)) return false;
    } else {
        const int64_t rows = ctx.weight_chunk_rows(1, /*float_bytes=*/false);
        for (int64_t o0 = 0; o0 < static_cast<int64_t>(m); o0 += rows) {
            const int64_t o1 = std::min<int64_t>(static_cast<int64_t>(m), o0 + rows);
            Tensor chunk = ctx.read_weight_rows(1, o0, o1);
            xnn::Conv2dShape part = s;
            part.group_out = static_cast<size_t>(o1 - o0);
            part.output_pixel_stride = m;
            // The scales are the same for every chunk, so a rejection can only come with the first one.
            if (!run_rows(chunk, o0, part)) return false;
        }
    }
    xq = Tensor();
    if (qc8) flip_top_bits(yq.data<uint8_t>(), n * m * out_hw, ctx.pool());
    Tensor &y = ctx.alloc_output(0);
    if (ctx.output_nhwc(0)) {
        y.set_layout(Layout::NHWC);
        dequantize_flat(yq.data<uint8_t>(), y.data<float>(), n * m * out_hw, q.output_scale, q.output_zero_point,
                        ctx.pool());
    } else {
        dequantize_nhwc_to_nchw(yq.data<uint8_t>(), y.data<float>(), n, m, out_hw, q.output_scale,
                                q.output_zero_point, ctx.pool());
    }
    return true;
}

namespace {
// y = x W (+ bias) for x [..., K] float, W uint8 [K, N] (weight_kn) or [N, K]; `rows` of W per chunk when
// the weight is streamed (only for [N, K], where chunks are output columns).
bool run_fc_w8a8(RunContext &ctx, const xnn::Qu8Params &q, size_t k, size_t nout, bool weight_kn,
                 const std::vector<int32_t> &bias) {
    const Tensor &x = ctx.input(0);
    const size_t batch = k ? static_cast<size_t>(x.numel()) / k : 0;
    Tensor xq = ctx.scratch(DType::U8, {x.numel()}); // padded like every tracked tensor
    quantize_flat(x.data<float>(), xq.data<uint8_t>(), static_cast<size_t>(x.numel()), q.input_scale,
                  q.input_zero_point, ctx.pool());
    Tensor yq = ctx.scratch(DType::U8, {static_cast<int64_t>(batch * nout)});
    const int32_t *bias_ptr = bias.empty() ? nullptr : bias.data();
    if (!ctx.is_streamed(1)) {
        if (!xnn::fully_connected_qu8(k, nout, q, ctx.input(1).data<uint8_t>(), weight_kn, bias_ptr, batch,
                                      xq.data<uint8_t>(), yq.data<uint8_t>(), nout, ctx.pool()))
            return false;
    } else {
        const int64_t rows = ctx.weight_chunk_rows(1, /*float_bytes=*/false);
        for (int64_t o0 = 0; o0 < static_cast<int64_t>(nout); o0 += rows) {
            const int64_t o1 = std::min<int64_t>(static_cast<int64_t>(nout), o0 + rows);
            Tensor chunk = ctx.read_weight_rows(1, o0, o1);
            if (!xnn::fully_connected_qu8(k, static_cast<size_t>(o1 - o0), q, chunk.data<uint8_t>(), false,
                                          bias_ptr ? bias_ptr + o0 : nullptr, batch, xq.data<uint8_t>(),
                                          yq.data<uint8_t>() + o0, nout, ctx.pool()))
                return false;
        }
    }
    xq = Tensor();
    Tensor &y = ctx.alloc_output(0);
    dequantize_flat(yq.data<uint8_t>(), y.data<float>(), batch * nout, q.output_scale, q.output_zero_point, ctx.pool());
    return true;
}
} // namespace

bool run_matmul_w8a8(RunContext &ctx) {
    xnn::Qu8Params q;
    if (!node_qualifies(ctx, q)) return false;
    const Tensor &x = ctx.input(0), &w = ctx.input(1);
    if (w.rank() != 2 || x.rank() < 2 || x.dim(x.rank() - 1) != w.dim(0) || ctx.is_streamed(1)) return false;
    std::vector<int32_t> bias; // the engine's bias input (one value per column), if any
    if (!bias_for(ctx, 2, static_cast<size_t>(w.dim(1)), 1.0f, q, bias)) return false;
    return run_fc_w8a8(ctx, q, static_cast<size_t>(w.dim(0)), static_cast<size_t>(w.dim(1)), true, bias);
}

bool run_gemm_w8a8(RunContext &ctx) {
    xnn::Qu8Params q;
    if (!node_qualifies(ctx, q)) return false;
    const Tensor &x = ctx.input(0), &w = ctx.input(1);
    const bool ta = ctx.attrs().get_int("transA", 0) != 0, tb = ctx.attrs().get_int("transB", 0) != 0;
    const float alpha = ctx.attrs().get_float("alpha", 1.0f), beta = ctx.attrs().get_float("beta", 1.0f);
    if (ta || alpha != 1.0f || x.rank() != 2 || w.rank() != 2) return false;
    const size_t k = static_cast<size_t>(tb ? w.dim(1) : w.dim(0)), nout = static_cast<size_t>(tb ? w.dim(0) : w.dim(1));
    if (static_cast<size_t>(x.dim(1)) != k || (ctx.is_streamed(1) && !tb)) return false;
    std::vector<int32_t> bias;
    if (ctx.has_input(2) && beta != 0.0f) {
        const Shape &cs = ctx.input(2).shape();
        if (!(cs.size() == 1 || (cs.size() == 2 && cs[0] == 1))) return false;
        if (!bias_for(ctx, 2, nout, beta, q, bias)) return false;
    }
    return run_fc_w8a8(ctx, q, k, nout, !tb, bias);
}

} // namespace onnxstream

// ConvInteger (opset 10): a convolution of 8-bit integer codes with int32 output,
//     y[n, m, o] = sum over (c, k) of (x[n, c, o * stride + k * dilation - pad] - x_zero_point) * (w[m, c, k] - w_zero_point[m])
// as quantized exports (ONNX Runtime's quantize_dynamic) write it, over 1-D and 2-D spatial axes. Padded
// positions hold x's zero point, so they contribute nothing (as ONNX Runtime pads). x and w are uint8 or
// int8 in any pairing; x's zero point is one value, w's one value or one per output channel.
//
// The arithmetic is exact: every product fits int32, and the sums wrap modulo 2^32 like int32 accumulator
// hardware (the spec lets only the accumulation overflow), so no overflow is undefined. The op runs its own
// loops (XNNPACK has no convolution with an int32 output), one output row per task.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "ops/registry.h"
#include "ops/shape_common.h"
#include "ops/window_geometry.h"
#include "util/strings.h"

namespace onnxstream {

namespace {

template <typename... Args> [[noreturn]] void unsupported(const std::string &where, Args &&...args) {
    fail(ONNXSTREAM_ERR_UNSUPPORTED, where, ": ", std::forward<Args>(args)...);
}

// The convolution as 2-D: a 1-D one has a height of 1 (input, kernel and output) and no vertical padding.
struct Geometry {
    int64_t batch = 0, in_c = 0, out_c = 0, group = 1, c_per_group = 0, m_per_group = 0;
    int64_t in_h = 1, in_w = 0, k_h = 1, k_w = 0, s_h = 1, s_w = 1, d_h = 1, d_w = 1, p_h = 0, p_w = 0;
    int64_t out_h = 1, out_w = 0;
    Shape out;
};

Geometry geometry(const Attributes &attrs, const std::string &where, const Shape &x, const Shape &w) {
    const window::ConvGeometry c = window::conv_geometry(attrs, where, x, w, window::kConvIntegerNames);
    Geometry g;
    g.batch = c.batch;
    g.in_c = c.in_channels;
    g.out_c = c.out_channels;
    g.group = c.group;
    g.c_per_group = w[1];
    g.m_per_group = g.out_c / g.group;
    // The last spatial axis is the row; a 2-D convolution's first one its height.
    g.in_w = c.in.back();
    g.k_w = c.kernel.back();
    g.s_w = c.strides.back();
    g.d_w = c.dilations.back();
    g.p_w = c.pad_begin.back();
    g.out_w = c.out.back();
    if (c.spatial == 2) {
        g.in_h = c.in[0];
        g.k_h = c.kernel[0];
        g.s_h = c.strides[0];
        g.d_h = c.dilations[0];
        g.p_h = c.pad_begin[0];
        g.out_h = c.out[0];
    }
    g.out = {g.batch, g.out_c};
    g.out.insert(g.out.end(), c.out.begin(), c.out.end());
    shapeops::checked_shape(where, g.out, "output shape");
    return g;
}

bool one_value(const Shape &s) { return s.size() <= 1 && shape_numel(s) == 1; }

// A zero point's dtype must be its operand's, and it must not carry OnnxStream quantization parameters.
void check_zero_point(const InferContext &ctx, size_t i, const char *name, size_t operand) {
    const TensorInfo &zp = ctx.input(i), &of = ctx.input(operand);
    if (zp.quant.present)
        unsupported(ctx.node.where, name, " (input ", i, ") is an OnnxStream-quantized weight ",
                    "(dtype[scale,zero_point]); this op reads plain integer codes");
    if (zp.dtype != of.dtype)
        ctx.error(name, " (input ", i, ") is ", dtype_name(zp.dtype), " but ", operand == 0 ? "x" : "w", " is ",
                  dtype_name(of.dtype), "; they must have one type");
}

std::vector<TensorInfo> conv_integer_infer(const InferContext &ctx) {
    ctx.require_inputs(2, 4);
    ctx.require_dtype(0, {DType::U8, DType::I8});
    ctx.require_dtype(1, {DType::U8, DType::I8});
    for (size_t i : {size_t{0}, size_t{1}})
        if (ctx.input(i).quant.present)
            unsupported(ctx.node.where, i == 0 ? "x" : "w", " (input ", i, ") is an OnnxStream-quantized weight ",
                        "(dtype[scale,zero_point]); this op reads plain integer codes");
    const TensorInfo &x = ctx.input(0), &w = ctx.input(1);
    const Geometry g = geometry(ctx.attrs(), ctx.node.where, x.shape, w.shape);
    if (ctx.has_input(2)) {
        check_zero_point(ctx, 2, "x_zero_point", 0);
        if (!one_value(ctx.input(2).shape))
            ctx.error("x_zero_point (input 2) has shape ", shape_str(ctx.input(2).shape),
                      "; it must be a scalar (one value for the whole of x)");
    }
    if (ctx.has_input(3)) {
        check_zero_point(ctx, 3, "w_zero_point", 1);
        const Shape &s = ctx.input(3).shape;
        if (!one_value(s) && !(s.size() == 1 && s[0] == g.out_c))
            ctx.error("w_zero_point (input 3) has shape ", shape_str(s), "; it must be a scalar or 1-D of ", g.out_c,
                      " (one per output channel of w ", shape_str(w.shape), ")");
    }
    return {TensorInfo{DType::I32, g.out, {}}};
}

// Output row `r` of y (r indexes (n, m, oh)), accumulated over the group's input channels and the kernel.
template <typename TX, typename TW>
void conv_row(const Geometry &g, const TX *x, const TW *w, int32_t zx, int32_t zw, int64_t r, uint32_t *row) {
    const int64_t oh = r % g.out_h, nm = r / g.out_h, m = nm % g.out_c, n = nm / g.out_c;
    const int64_t first_c = (m / g.m_per_group) * g.c_per_group;
    std::fill(row, row + g.out_w, 0u);
    for (int64_t c = 0; c < g.c_per_group; ++c) {
        const TX *xc = x + (n * g.in_c + first_c + c) * g.in_h * g.in_w;
        const TW *wc = w + (m * g.c_per_group + c) * g.k_h * g.k_w;
        for (int64_t kh = 0; kh < g.k_h; ++kh) {
            const int64_t ih = oh * g.s_h - g.p_h + kh * g.d_h;
            if (ih < 0 || ih >= g.in_h) continue; // a padded row: (zero point - zero point) * w
            const TX *xr = xc + ih * g.in_w;
            for (int64_t kw = 0; kw < g.k_w; ++kw) {
                const int32_t wv = static_cast<int32_t>(wc[kh * g.k_w + kw]) - zw;
                if (wv == 0) continue;
                // Input column ow * s_w + off; the outputs whose column falls inside x.
                const int64_t off = kw * g.d_w - g.p_w;
                const int64_t lo = off >= 0 ? 0 : (-off + g.s_w - 1) / g.s_w;
                const int64_t hi = off >= g.in_w ? 0 : std::min(g.out_w, (g.in_w - 1 - off) / g.s_w + 1);
                if (lo >= hi) continue;
                const uint32_t uw = static_cast<uint32_t>(wv);
                if (g.s_w == 1) {
                    const TX *xs = xr + (off + lo); // column of output lo: inside x
                    uint32_t *rs = row + lo;
                    for (int64_t i = 0; i < hi - lo; ++i)
                        rs[i] += uw * static_cast<uint32_t>(static_cast<int32_t>(xs[i]) - zx);
                } else {
                    for (int64_t ow = lo; ow < hi; ++ow)
                        row[ow] += uw * static_cast<uint32_t>(static_cast<int32_t>(xr[ow * g.s_w + off]) - zx);
                }
            }
        }
    }
}

template <typename TX, typename TW>
void conv_integer_typed(RunContext &ctx, const Geometry &g, int32_t zx, const std::vector<int32_t> &zw, Tensor &y) {
    const TX *x = ctx.input(0).data<TX>();
    const TW *w = ctx.input(1).data<TW>();
    uint32_t *yd = y.data<uint32_t>();
    const int64_t rows = g.batch * g.out_c * g.out_h;
    const bool per_channel = zw.size() > 1;
    // Tasks of about 64K multiply-adds each.
    const int64_t row_cost = std::max<int64_t>(1, g.c_per_group * g.k_h * g.k_w * g.out_w);
    const size_t tile = static_cast<size_t>(std::max<int64_t>(1, (int64_t{1} << 16) / row_cost));
    parallel_for(ctx.pool(), static_cast<size_t>(rows), tile, [&](size_t begin, size_t end) {
        for (size_t r = begin; r < end; ++r) {
            const int64_t m = (static_cast<int64_t>(r) / g.out_h) % g.out_c;
            const int32_t z = zw[per_channel ? static_cast<size_t>(m) : 0];
            conv_row(g, x, w, zx, z, static_cast<int64_t>(r), yd + static_cast<int64_t>(r) * g.out_w);
        }
    });
}

void conv_integer_run(RunContext &ctx) {
    const Tensor &x = ctx.input(0), &w = ctx.input(1);
    const Geometry g = geometry(ctx.attrs(), ctx.node.where, x.shape(), w.shape());
    const int32_t zx = ctx.has_input(2) ? static_cast<int32_t>(int_at(ctx.input(2), 0)) : 0;
    std::vector<int32_t> zw{0};
    if (ctx.has_input(3)) {
        const Tensor &t = ctx.input(3);
        zw.resize(static_cast<size_t>(t.numel()));
        for (int64_t i = 0; i < t.numel(); ++i) zw[static_cast<size_t>(i)] = static_cast<int32_t>(int_at(t, i));
    }
    if (zw.size() != 1 && static_cast<int64_t>(zw.size()) != g.out_c)
        ctx.error(ONNXSTREAM_ERR_INVALID_MODEL, "w_zero_point (input 3) has ", zw.size(), " values for ", g.out_c,
                  " output channels");
    Tensor &y = ctx.alloc_output(0);
    if (y.numel() == 0) return;
    const bool xu = x.dtype() == DType::U8, wu = w.dtype() == DType::U8;
    if (xu && wu)
        conv_integer_typed<uint8_t, uint8_t>(ctx, g, zx, zw, y);
    else if (xu)
        conv_integer_typed<uint8_t, int8_t>(ctx, g, zx, zw, y);
    else if (wu)
        conv_integer_typed<int8_t, uint8_t>(ctx, g, zx, zw, y);
    else
        conv_integer_typed<int8_t, int8_t>(ctx, g, zx, zw, y);
}

} // namespace

void register_conv_integer_ops(Registry &r) {
    r.add("ConvInteger", conv_integer_infer, conv_integer_run).with_reads_weights_exactly();
}

} // namespace onnxstream

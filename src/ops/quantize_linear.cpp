// ONNX's explicit quantization operators, as quantized exports (ONNX Runtime's quantize_dynamic and QDQ
// models) write them: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear and MatMulInteger.
//
// These compute on the integer codes themselves, unlike OnnxStream's own 8-bit weights (quantize.cpp,
// quant_kernels.cpp), whose QuantParams make them stand for float values; a code input that carries such
// parameters is refused rather than guessed at. Codes are 8- or 16-bit integers or float8 (opset 19/21),
// scales float32 or float16, per tensor, per axis or per block of the axis (opset 21 block_size).
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/elementwise_int.h"
#include "ops/matmul_kernels.h"
#include "ops/registry.h"
#include "ops/shape_common.h"
#include "tensor/float8.h"
#include "tensor/half.h"

namespace onnxstream {

namespace {

using shapeops::normalize_axis;

template <typename... Args> [[noreturn]] void invalid(const std::string &where, Args &&...args) {
    fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": ", std::forward<Args>(args)...);
}

void require_plain_codes(const InferContext &ctx, size_t i, const char *what) {
    if (ctx.has_input(i) && ctx.input(i).quant.present)
        fail(ONNXSTREAM_ERR_UNSUPPORTED, ctx.node.where, ": ", what, " (input ", i,
             ") is an OnnxStream-quantized weight (dtype[scale,zero_point]); this op reads plain integer codes");
}

void refuse_newer_attributes(const InferContext &ctx) {
    const Attributes &a = ctx.attrs();
    if (a.get_int("block_size", 0) < 0) ctx.error("attribute block_size is ", a.get_int("block_size", 0), "; it must be >= 0");
    const int64_t saturate = a.get_int("saturate", 1);
    if (saturate != 0 && saturate != 1) ctx.error("attribute saturate is ", saturate, "; it must be 0 or 1");
    if (a.has("precision"))
        fail(ONNXSTREAM_ERR_UNSUPPORTED, ctx.node.where, ": attribute precision (opset 23) is not supported");
}

// x viewed as [outer, channels, inner] around the quantization axis; channels = 1 for per-tensor parameters.
// Blocked quantization (block > 0) has a scale of x's shape but for ceil(channels / block) blocks along the
// axis: one scale per block of `block` consecutive channels, per outer and inner index.
struct AxisLayout {
    int64_t outer = 1, channels = 1, inner = 1;
    int64_t block = 0, blocks = 0;
    int64_t params() const { return block ? outer * blocks * inner : channels; }
    // The scale (and zero point) of element i of line `line` (a line is `inner` elements of one channel).
    size_t param(int64_t line, int64_t i) const {
        if (!block) return static_cast<size_t>(line % channels);
        return static_cast<size_t>(((line / channels) * blocks + (line % channels) / block) * inner + i);
    }
};

// ONNX Runtime's rule: a scale with one element (rank 0 or 1) is per-tensor whatever the axis; otherwise it
// must be 1-D with x.shape[axis] elements. The zero point, when present, has the scale's shape.
AxisLayout blocked_layout(const std::string &where, const Attributes &attrs, const Shape &x, const Shape &scale,
                          int64_t block) {
    const int64_t rank = static_cast<int64_t>(x.size());
    if (rank == 0) invalid(where, "blocked quantization needs an input of rank >= 1");
    const size_t axis = static_cast<size_t>(normalize_axis(where, attrs.get_int("axis", 1), rank));
    Shape want = x;
    want[axis] = (x[axis] + block - 1) / block;
    if (scale != want)
        invalid(where, "with block_size ", block, " the scale of an input ", shape_str(x), " must have shape ",
                shape_str(want), " (one per block of axis ", axis, "), got ", shape_str(scale));
    AxisLayout l;
    for (size_t i = 0; i < x.size(); ++i)
        if (i < axis)
            l.outer *= x[i];
        else if (i > axis)
            l.inner *= x[i];
    l.channels = x[axis];
    l.block = block;
    l.blocks = want[axis];
    return l;
}

AxisLayout axis_layout(const std::string &where, const Attributes &attrs, const Shape &x, const Shape &scale,
                       const Shape *zero_point) {
    if (const int64_t block = attrs.get_int("block_size", 0); block > 0) {
        if (zero_point && *zero_point != scale)
            invalid(where, "the zero point (input 2) must have the scale's shape ", shape_str(scale), ", got ",
                    shape_str(*zero_point));
        return blocked_layout(where, attrs, x, scale, block);
    }
    if (scale.size() > 1)
        invalid(where, "the scale (input 1) must be a scalar or 1-D, got shape ", shape_str(scale));
    if (zero_point && (zero_point->size() > 1 || shape_numel(*zero_point) != shape_numel(scale)))
        invalid(where, "the zero point (input 2) must have the scale's shape ", shape_str(scale), ", got ",
                shape_str(*zero_point));
    AxisLayout l;
    const int64_t n = shape_numel(scale);
    if (n == 1) {
        l.inner = shape_numel(x);
        return l;
    }
    const int64_t rank = static_cast<int64_t>(x.size());
    if (rank == 0) invalid(where, "a scalar input takes a single scale, got shape ", shape_str(scale));
    const size_t axis = static_cast<size_t>(normalize_axis(where, attrs.get_int("axis", 1), rank));
    if (n != x[axis])
        invalid(where, "per-axis scale has ", n, " elements but axis ", axis, " of the input ", shape_str(x),
                " has ", x[axis]);
    for (size_t i = 0; i < x.size(); ++i)
        if (i < axis)
            l.outer *= x[i];
        else if (i > axis)
            l.inner *= x[i];
    l.channels = n;
    return l;
}

std::vector<int32_t> zero_points(const Tensor *zp, int64_t n) {
    std::vector<int32_t> out(static_cast<size_t>(n), 0);
    if (!zp) return out;
    for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = static_cast<int32_t>(int_at(*zp, i));
    return out;
}

// The code types: 4-, 8- and 16-bit integers, and the float8 types (opset 19), whose codes are values.
const std::initializer_list<DType> kCodeTypes = {DType::U8,       DType::I8,         DType::U16,    DType::I16,
                                                 DType::U4,       DType::I4,         DType::F8E4M3FN,
                                                 DType::F8E4M3FNUZ, DType::F8E5M2,   DType::F8E5M2FNUZ};

// Scales as float32, whatever their dtype (float32 or float16).
std::vector<float> scales_of(const Tensor &scale) {
    std::vector<float> out(static_cast<size_t>(scale.numel()));
    for (int64_t i = 0; i < scale.numel(); ++i) out[static_cast<size_t>(i)] = float_at(scale, i);
    return out;
}

// One line of `n` floats from a float32 or float16 tensor's data at element `offset`, widened into buf.
const float *line_as_float(const Tensor &t, int64_t offset, int64_t n, std::vector<float> &buf) {
    if (t.dtype() == DType::F32) return t.data<float>() + offset;
    buf.resize(static_cast<size_t>(n));
    half_to_float_n(t.data<uint16_t>() + offset, buf.data(), static_cast<size_t>(n));
    return buf.data();
}

// ---- QuantizeLinear ----

std::vector<TensorInfo> quantize_infer(const InferContext &ctx) {
    ctx.require_inputs(2, 3);
    refuse_newer_attributes(ctx);
    ctx.require_dtype(0, kFloatTypes);
    if (ctx.input(1).dtype != ctx.input(0).dtype)
        ctx.error("the scale is ", dtype_name(ctx.input(1).dtype), " but x is ", dtype_name(ctx.input(0).dtype),
                  "; they must have one type");
    // Without a zero point, opset 21's output_dtype (an ONNX element type) or uint8 gives the code type.
    DType out = DType::U8;
    if (const int64_t onnx_type = ctx.attrs().get_int("output_dtype", 0); onnx_type != 0) {
        if (!dtype_from_onnx(onnx_type, out) || std::find(kCodeTypes.begin(), kCodeTypes.end(), out) == kCodeTypes.end())
            fail(ONNXSTREAM_ERR_UNSUPPORTED, ctx.node.where, ": output_dtype ", onnx_type,
                 " is not a code type onnxstream quantizes to (uint8, int8, uint16, int16, float8)");
    }
    const Shape *zp_shape = nullptr;
    if (ctx.has_input(2)) {
        ctx.require_dtype(2, kCodeTypes);
        require_plain_codes(ctx, 2, "the zero point");
        if (ctx.attrs().get_int("output_dtype", 0) != 0 && ctx.input(2).dtype != out)
            ctx.error("output_dtype names ", dtype_name(out), " but the zero point is ", dtype_name(ctx.input(2).dtype));
        out = ctx.input(2).dtype;
        zp_shape = &ctx.input(2).shape;
    }
    axis_layout(ctx.node.where, ctx.attrs(), ctx.input(0).shape, ctx.input(1).shape, zp_shape);
    return {TensorInfo{out, ctx.input(0).shape, {}}};
}

// Calls fn(line, channel) for every line of l.inner elements, in parallel.
template <typename Fn> void for_each_line(const RunContext &ctx, const AxisLayout &l, Fn &&fn) {
    const int64_t lines = l.outer * l.channels;
    parallel_for(ctx.pool(), static_cast<size_t>(lines), shapeops::task_tile(static_cast<size_t>(l.inner) * 5),
                 [&](size_t begin, size_t end) {
                     for (size_t line = begin; line < end; ++line)
                         fn(static_cast<int64_t>(line), line % static_cast<size_t>(l.channels));
                 });
}

// An integer code: x / scale rounded, the zero point added, clamped to [lo, hi]. nearbyint rounds half to even
// in the default rounding mode; NaN has no code and takes the zero point rather than an undefined conversion.
inline float integer_code(float scaled, float z, float lo, float hi) {
    const float v = std::nearbyint(scaled) + z;
    return std::isnan(v) ? z : std::min(std::max(v, lo), hi);
}

template <typename Q>
void quantize_typed(const RunContext &ctx, const float *x, const float *scale, const std::vector<int32_t> &zp,
                    const AxisLayout &l, Q *y) {
    constexpr float lo = std::numeric_limits<Q>::min(), hi = std::numeric_limits<Q>::max();
    for_each_line(ctx, l, [&](int64_t line, size_t c) {
        const float s = scale[c], z = static_cast<float>(zp[c]);
        const float *xl = x + line * l.inner;
        Q *yl = y + line * l.inner;
        for (int64_t i = 0; i < l.inner; ++i) yl[i] = static_cast<Q>(integer_code(xl[i] / s, z, lo, hi));
    });
}

// The zero points as float32 values: integer codes, or float8 values.
std::vector<float> zero_values(const Tensor *zp, int64_t n) {
    std::vector<float> out(static_cast<size_t>(n), 0.0f);
    if (zp)
        for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = float_at(*zp, i);
    return out;
}

// Calls fn(k, x[k] / scale, zero point) for every element k of a float32 or float16 x, in parallel by line,
// with the scale and zero point of the element's channel or block.
template <typename Fn>
void for_each_scaled(const RunContext &ctx, const Tensor &x, const std::vector<float> &scale,
                     const std::vector<float> &zero, const AxisLayout &l, Fn &&fn) {
    for_each_line(ctx, l, [&](int64_t line, size_t) {
        std::vector<float> buf;
        const float *xl = line_as_float(x, line * l.inner, l.inner, buf);
        for (int64_t i = 0; i < l.inner; ++i) {
            const size_t p = l.param(line, i);
            fn(line * l.inner + i, xl[i] / scale[p], zero[p]);
        }
    });
}

// Any other quantization than float32 to 8-bit integers: 4- and 16-bit integer codes (integer_code), float8
// codes (x / scale + zero point converted as Cast converts to float8, with the node's saturate), float16 x
// and scale, blocked quantization.
void quantize_general(RunContext &ctx, const Tensor &x, const std::vector<float> &scale, const Tensor *zp,
                      const AxisLayout &l, Tensor &y) {
    const std::vector<float> zero = zero_values(zp, l.params());
    Float8Format f8;
    if (float8_format(y.dtype(), f8)) {
        const bool saturate = ctx.attrs().get_int("saturate", 1) != 0;
        uint8_t *yd = y.data<uint8_t>();
        for_each_scaled(ctx, x, scale, zero, l, [&](int64_t k, float scaled, float z) {
            yd[k] = double_to_float8(scaled + z, f8, saturate);
        });
        return;
    }
    // int4 and uint4 are one value per byte: int8 and uint8 storage with their own range.
    const DType storage = y.dtype() == DType::I4 ? DType::I8 : y.dtype() == DType::U4 ? DType::U8 : y.dtype();
    dispatch_int(storage, [&](auto tag) {
        using Q = decltype(tag);
        const float lo = y.dtype() == DType::I4 ? -8.0f : float(std::numeric_limits<Q>::min());
        const float hi = y.dtype() == DType::I4 ? 7.0f : y.dtype() == DType::U4 ? 15.0f : float(std::numeric_limits<Q>::max());
        Q *yd = y.data<Q>();
        for_each_scaled(ctx, x, scale, zero, l, [&](int64_t k, float scaled, float z) {
            yd[k] = static_cast<Q>(integer_code(scaled, z, lo, hi));
        });
    });
}

void quantize_run(RunContext &ctx) {
    const Tensor &x = ctx.input(0), &scale = ctx.input(1);
    const Tensor *zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const Shape *zp_shape = zp ? &zp->shape() : nullptr;
    AxisLayout l = axis_layout(ctx.node.where, ctx.attrs(), x.shape(), scale.shape(), zp_shape);
    Tensor &y = ctx.alloc_output(0);
    if (y.numel() == 0) return;
    if (x.dtype() != DType::F32 || (y.dtype() != DType::U8 && y.dtype() != DType::I8) || l.block) {
        quantize_general(ctx, x, scales_of(scale), zp, l, y);
        return;
    }
    const float *s = scale.data<float>();
    std::vector<int32_t> z = zero_points(zp, l.channels);
    if (y.dtype() == DType::U8)
        quantize_typed(ctx, x.data<float>(), s, z, l, y.data<uint8_t>());
    else
        quantize_typed(ctx, x.data<float>(), s, z, l, y.data<int8_t>());
}

// ---- DequantizeLinear ----

std::vector<TensorInfo> dequantize_infer(const InferContext &ctx) {
    ctx.require_inputs(2, 3);
    refuse_newer_attributes(ctx);
    ctx.require_dtype(0, {DType::U8, DType::I8, DType::U16, DType::I16, DType::U4, DType::I4, DType::I32,
                          DType::F8E4M3FN, DType::F8E4M3FNUZ, DType::F8E5M2, DType::F8E5M2FNUZ});
    require_plain_codes(ctx, 0, "x");
    ctx.require_dtype(1, kFloatTypes);
    const TensorInfo &x = ctx.input(0);
    const Shape *zp_shape = nullptr;
    if (ctx.has_input(2)) {
        require_plain_codes(ctx, 2, "the zero point");
        if (ctx.input(2).dtype != x.dtype)
            ctx.error("the zero point is ", dtype_name(ctx.input(2).dtype), " but x is ", dtype_name(x.dtype),
                      "; they must have one type");
        zp_shape = &ctx.input(2).shape;
    }
    axis_layout(ctx.node.where, ctx.attrs(), x.shape, ctx.input(1).shape, zp_shape);
    // y has the scale's type (float16 scales since opset 19).
    return {TensorInfo{ctx.input(1).dtype, x.shape, {}}};
}

template <typename Q>
void dequantize_typed(const RunContext &ctx, const Q *x, const float *scale, const std::vector<int32_t> &zp,
                      const AxisLayout &l, float *y) {
    for_each_line(ctx, l, [&](int64_t line, size_t c) {
        const float s = scale[c];
        const int32_t z = zp[c];
        const Q *xl = x + line * l.inner;
        float *yl = y + line * l.inner;
        for (int64_t i = 0; i < l.inner; ++i) yl[i] = static_cast<float>(static_cast<int32_t>(xl[i]) - z) * s;
    });
}

// Float8 codes, and any code type into a float16 y: (value - zero point's value) * scale, in float32.
void dequantize_general(const RunContext &ctx, const Tensor &x, const std::vector<float> &scale, const Tensor *zp,
                        const AxisLayout &l, Tensor &y) {
    const std::vector<float> zero = zero_values(zp, l.params());
    for_each_line(ctx, l, [&](int64_t line, size_t) {
        std::vector<float> yl(static_cast<size_t>(l.inner));
        for (int64_t i = 0; i < l.inner; ++i) {
            const size_t p = l.param(line, i);
            yl[static_cast<size_t>(i)] = (float_at(x, line * l.inner + i) - zero[p]) * scale[p];
        }
        if (y.dtype() == DType::F32)
            std::copy(yl.begin(), yl.end(), y.data<float>() + line * l.inner);
        else
            float_to_half_n(yl.data(), y.data<uint16_t>() + line * l.inner, yl.size());
    });
}

void dequantize_run(RunContext &ctx) {
    const Tensor &x = ctx.input(0), &scale = ctx.input(1);
    const Tensor *zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const Shape *zp_shape = zp ? &zp->shape() : nullptr;
    AxisLayout l = axis_layout(ctx.node.where, ctx.attrs(), x.shape(), scale.shape(), zp_shape);
    std::vector<int32_t> z = is_float8(x.dtype()) ? std::vector<int32_t>(static_cast<size_t>(l.params()), 0)
                                                  : zero_points(zp, l.params());
    // An int32 x (a QDQ bias) is int32 accumulator units: x - zero_point could overflow, and ONNX fixes the
    // zero point at 0.
    if (x.dtype() == DType::I32)
        for (int64_t c = 0; c < l.params(); ++c)
            if (z[static_cast<size_t>(c)] != 0)
                ctx.error(ONNXSTREAM_ERR_INVALID_MODEL, "an int32 x needs zero points of 0, got zero_point[", c,
                          "] = ", z[static_cast<size_t>(c)]);
    Tensor &y = ctx.alloc_output(0);
    if (y.numel() == 0) return;
    if (y.dtype() != DType::F32 || is_float8(x.dtype()) || l.block) {
        dequantize_general(ctx, x, scales_of(scale), zp, l, y);
        return;
    }
    const float *s = scale.data<float>();
    switch (x.dtype()) {
    case DType::U8:
    case DType::U4: dequantize_typed(ctx, x.data<uint8_t>(), s, z, l, y.data<float>()); break;
    case DType::I8:
    case DType::I4: dequantize_typed(ctx, x.data<int8_t>(), s, z, l, y.data<float>()); break;
    case DType::U16: dequantize_typed(ctx, x.data<uint16_t>(), s, z, l, y.data<float>()); break;
    case DType::I16: dequantize_typed(ctx, x.data<int16_t>(), s, z, l, y.data<float>()); break;
    case DType::I32: dequantize_typed(ctx, x.data<int32_t>(), s, z, l, y.data<float>()); break;
    default: ctx.error(ONNXSTREAM_ERR_UNSUPPORTED, "DequantizeLinear of ", dtype_name(x.dtype()));
    }
}

// ---- DynamicQuantizeLinear ----

std::vector<TensorInfo> dynamic_quantize_infer(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    ctx.require_dtype(0, {DType::F32});
    if (ctx.output_count() != 3)
        ctx.error("DynamicQuantizeLinear has 3 outputs (y, y_scale, y_zero_point), model.txt declares ",
                  ctx.output_count());
    return {TensorInfo{DType::U8, ctx.input(0).shape, {}}, TensorInfo{DType::F32, {}, {}},
            TensorInfo{DType::U8, {}, {}}};
}

void dynamic_quantize_run(RunContext &ctx) {
    const Tensor &x = ctx.input(0);
    const float *xd = x.data<float>();
    const int64_t n = x.numel();
    // The range always holds 0, so that 0 (padding, ReLU's output) has an exact code.
    float lo = 0, hi = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (std::isnan(xd[i]))
            ctx.error(ONNXSTREAM_ERR_INVALID_ARGUMENT, "the input holds NaN at element ", i,
                      "; it has no quantization range");
        lo = std::min(lo, xd[i]);
        hi = std::max(hi, xd[i]);
    }
    if (std::isinf(lo) || std::isinf(hi))
        ctx.error(ONNXSTREAM_ERR_INVALID_ARGUMENT, "the input holds an infinity; it has no quantization range");
    const float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
    const float zp = std::nearbyint(std::min(255.0f, std::max(0.0f, 0.0f - lo / scale)));
    Tensor &y = ctx.alloc_output(0);
    ctx.alloc_output(1).data<float>()[0] = scale;
    ctx.alloc_output(2).data<uint8_t>()[0] = static_cast<uint8_t>(zp);
    if (n == 0) return;
    AxisLayout l;
    l.inner = n;
    quantize_typed(ctx, xd, &scale, {static_cast<int32_t>(zp)}, l, y.data<uint8_t>());
}

// ---- MatMulInteger ----

// Zero points of A index rows of A's matrices, zero points of B columns of B's.
enum class ZpKind { None, Tensor, Vector, Batched };

// ONNX allows a scalar (or 1-element) zero point, one per row of A / column of B as a vector ([M] / [N]),
// or one per row / column of every matrix ([..., M, 1] / [..., 1, N], with the operand's batch dimensions).
ZpKind zero_point_kind(const InferContext &ctx, size_t i, const Shape &operand, bool of_a) {
    if (!ctx.has_input(i)) return ZpKind::None;
    const Shape &zp = ctx.input(i).shape;
    if (shape_numel(zp) == 1 && zp.size() <= 1) return ZpKind::Tensor;
    const char *name = of_a ? "a_zero_point" : "b_zero_point";
    const int64_t r = static_cast<int64_t>(operand.size());
    const int64_t per = of_a ? (r == 1 ? 1 : operand[static_cast<size_t>(r - 2)]) : (r == 1 ? 1 : operand.back());
    if (zp.size() == 1 && zp[0] == per && r >= 2) return ZpKind::Vector;
    if (r >= 3 && zp.size() == operand.size()) {
        Shape want = operand;
        if (of_a)
            want.back() = 1;
        else
            want[static_cast<size_t>(r - 2)] = 1;
        if (zp == want) return ZpKind::Batched;
    }
    ctx.error(name, " (input ", i, ") has shape ", shape_str(zp), "; for ", of_a ? "A " : "B ", shape_str(operand),
              " it must have 1 element, be 1-D of ", per, " (one per ", of_a ? "row" : "column",
              ") or have the operand's shape with its ", of_a ? "last" : "second-to-last", " dimension set to 1");
}

struct MatMulIntShapes {
    Shape a_batch, b_batch, y_batch, y;
    int64_t m = 0, k = 0, n = 0;
};

MatMulIntShapes matmul_int_shapes(const std::string &where, const Shape &a, const Shape &b) {
    if (a.empty() || b.empty())
        invalid(where, "MatMulInteger operands must have rank >= 1, got ", shape_str(a), " and ", shape_str(b));
    MatMulIntShapes s;
    const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
    s.m = a_vec ? 1 : a[a.size() - 2];
    s.k = a.back();
    const int64_t kb = b_vec ? b[0] : b[b.size() - 2];
    s.n = b_vec ? 1 : b.back();
    if (s.k != kb)
        invalid(where, "inner dimensions differ: A ", shape_str(a), " has K = ", s.k, " but B ", shape_str(b),
                " has K = ", kb);
    s.a_batch.assign(a.begin(), a.end() - (a_vec ? 1 : 2));
    s.b_batch.assign(b.begin(), b.end() - (b_vec ? 1 : 2));
    if (!shapeops::broadcast_shapes(s.a_batch, s.b_batch, s.y_batch))
        invalid(where, "batch dimensions of A ", shape_str(a), " and B ", shape_str(b), " do not broadcast");
    s.y = s.y_batch;
    if (!a_vec) s.y.push_back(s.m);
    if (!b_vec) s.y.push_back(s.n);
    return s;
}

std::vector<TensorInfo> matmul_integer_infer(const InferContext &ctx) {
    ctx.require_inputs(2, 4);
    ctx.require_dtype(0, {DType::U8, DType::I8});
    ctx.require_dtype(1, {DType::U8, DType::I8});
    const TensorInfo &a = ctx.input(0), &b = ctx.input(1);
    require_plain_codes(ctx, 0, "A");
    require_plain_codes(ctx, 1, "B");
    for (size_t i : {size_t{2}, size_t{3}})
        if (ctx.has_input(i)) {
            const TensorInfo &zp = ctx.input(i);
            const DType want = i == 2 ? a.dtype : b.dtype;
            require_plain_codes(ctx, i, i == 2 ? "a_zero_point" : "b_zero_point");
            if (zp.dtype != want)
                ctx.error(i == 2 ? "a_zero_point" : "b_zero_point", " (input ", i, ") is ", dtype_name(zp.dtype),
                          " but ", i == 2 ? "A" : "B", " is ", dtype_name(want), "; they must have one type");
        }
    zero_point_kind(ctx, 2, a.shape, true);
    zero_point_kind(ctx, 3, b.shape, false);
    return {TensorInfo{DType::I32, matmul_int_shapes(ctx.node.where, a.shape, b.shape).y, {}}};
}

// Zero points as int32, and how to find the one of (operand slice, row or column).
struct ZeroPoints {
    std::vector<int32_t> values{0};
    int64_t per_slice = 0, per_index = 0; // index = slice * per_slice + i * per_index
    int32_t at(int64_t slice, int64_t i) const {
        return values[static_cast<size_t>(slice * per_slice + i * per_index)];
    }
};

ZeroPoints read_zero_points(const RunContext &ctx, size_t i, int64_t per) {
    ZeroPoints z;
    if (!ctx.has_input(i)) return z;
    const Tensor &t = ctx.input(i);
    const int64_t n = t.numel();
    z.values.resize(static_cast<size_t>(n));
    for (int64_t e = 0; e < n; ++e) z.values[static_cast<size_t>(e)] = static_cast<int32_t>(int_at(t, e));
    if (n > 1) {
        z.per_index = 1;
        // Batched zero points follow the operand's own batch slices.
        if (t.rank() > 1) z.per_slice = per;
    }
    return z;
}

// y = (A - za)(B - zb) = (A - za) B - zb * rowsum(A - za): B is read as stored. The sums wrap modulo 2^32 like
// int32 accumulator hardware, so no overflow is undefined.
template <typename TA, typename TB> void matmul_integer_typed(RunContext &ctx, const MatMulIntShapes &s, Tensor &y) {
    const TA *a = ctx.input(0).data<TA>();
    const TB *b = ctx.input(1).data<TB>();
    const ZeroPoints za = read_zero_points(ctx, 2, s.m), zb = read_zero_points(ctx, 3, s.n);
    const BatchPlan plan = plan_batches(s.a_batch, s.b_batch, s.y_batch);
    uint32_t *yd = y.data<uint32_t>();
    const int64_t slices = shape_numel(s.y_batch), m = s.m, n = s.n, k = s.k;
    parallel_for(ctx.pool(), static_cast<size_t>(slices * m), 8, [&](size_t begin, size_t end) {
        std::vector<int32_t> av(static_cast<size_t>(k));
        for (size_t r = begin; r < end; ++r) {
            const int64_t sl = static_cast<int64_t>(r) / m, i = static_cast<int64_t>(r) % m;
            const int64_t as = plan.a_index[static_cast<size_t>(sl)], bs = plan.b_index[static_cast<size_t>(sl)];
            const TA *ar = a + as * m * k + i * k;
            const TB *bm = b + bs * k * n;
            const int32_t zai = za.at(as, i);
            uint32_t sum_av = 0;
            for (int64_t kk = 0; kk < k; ++kk) {
                av[static_cast<size_t>(kk)] = static_cast<int32_t>(ar[kk]) - zai;
                sum_av += static_cast<uint32_t>(av[static_cast<size_t>(kk)]);
            }
            uint32_t *row = yd + sl * m * n + i * n;
            std::fill(row, row + n, 0u);
            for (int64_t kk = 0; kk < k; ++kk) {
                const uint32_t v = static_cast<uint32_t>(av[static_cast<size_t>(kk)]);
                if (v == 0) continue;
                const TB *br = bm + kk * n;
                for (int64_t j = 0; j < n; ++j) row[j] += v * static_cast<uint32_t>(static_cast<int32_t>(br[j]));
            }
            for (int64_t j = 0; j < n; ++j) row[j] -= static_cast<uint32_t>(zb.at(bs, j)) * sum_av;
        }
    });
}

void matmul_integer_run(RunContext &ctx) {
    const Tensor &a = ctx.input(0), &b = ctx.input(1);
    MatMulIntShapes s = matmul_int_shapes(ctx.node.where, a.shape(), b.shape());
    Tensor &y = ctx.alloc_output(0);
    if (y.numel() == 0) return;
    if (a.dtype() == DType::U8 && b.dtype() == DType::U8)
        matmul_integer_typed<uint8_t, uint8_t>(ctx, s, y);
    else if (a.dtype() == DType::U8)
        matmul_integer_typed<uint8_t, int8_t>(ctx, s, y);
    else if (b.dtype() == DType::U8)
        matmul_integer_typed<int8_t, uint8_t>(ctx, s, y);
    else
        matmul_integer_typed<int8_t, int8_t>(ctx, s, y);
}

} // namespace

void register_quantize_linear_ops(Registry &r) {
    r.add("QuantizeLinear", quantize_infer, quantize_run).with_reads_weights_exactly();
    r.add("DequantizeLinear", dequantize_infer, dequantize_run).with_reads_weights_exactly();
    r.add("DynamicQuantizeLinear", dynamic_quantize_infer, dynamic_quantize_run).with_reads_weights_exactly();
    r.add("MatMulInteger", matmul_integer_infer, matmul_integer_run).with_reads_weights_exactly();
}

} // namespace onnxstream

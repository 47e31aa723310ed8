// Shape and data-movement ops. They never look at element values (except the integer inputs that
// describe shapes), so they work on element sizes 1/2/4/8 rather than per dtype. Reshape, Flatten,
// Squeeze and Unsqueeze are zero-copy views. Outputs whose shape depends on a run-time input fall back
// to model.txt's declared shape while planning; run computes the real shape and the executor checks it.
// This file holds the shape-only ops; region copies live in copy_ops.cpp, index-driven ops in
// gather_scatter.cpp, permutations in transpose.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "ops/registry.h"
#include "ops/shape_common.h"
#include "tensor/half.h"
#include "util/strings.h"

namespace onnxstream {

namespace shapeops {

namespace {

// Output 0's declared shape, for views whose shape a run-time input decides: it must keep the element
// count of input 0.
Shape declared_view_shape(const InferContext &ctx, const Shape &in) {
    const Shape &d = ctx.declared_shape(0);
    if (shape_numel(d) != shape_numel(in))
        ctx.error("model.txt declares output shape ", shape_str(d), " (", shape_numel(d),
                  " elements) for an input of shape ", shape_str(in), " (", shape_numel(in), " elements)");
    return d;
}

// ---- Reshape ----

Shape reshape_target(const std::string &where, const Shape &in, const std::vector<int64_t> &spec,
                     bool allowzero) {
    Shape out(spec.size());
    int64_t infer_at = -1, known = 1;
    for (size_t i = 0; i < spec.size(); ++i) {
        int64_t v = spec[i];
        if (v == -1) {
            if (infer_at >= 0) invalid(where, "shape ", shape_str(spec), " has more than one -1");
            infer_at = static_cast<int64_t>(i);
            continue;
        }
        if (v == 0 && !allowzero) {
            if (i >= in.size())
                invalid(where, "shape ", shape_str(spec), " copies dimension ", i, " with 0 but the input ",
                        shape_str(in), " has rank ", in.size());
            v = in[i];
        } else if (v < 0) {
            invalid(where, "shape ", shape_str(spec), " has the invalid dimension ", v);
        }
        if (v > kMaxElements || (v != 0 && known > kMaxElements / v))
            invalid(where, "shape ", shape_str(spec), " has too many elements");
        out[i] = v;
        known *= v;
    }
    int64_t numel = shape_numel(in);
    if (infer_at >= 0) {
        if (known == 0 || numel % known != 0)
            invalid(where, "cannot reshape ", shape_str(in), " to ", shape_str(spec),
                    ": -1 cannot be resolved");
        out[static_cast<size_t>(infer_at)] = numel / known;
    } else if (known != numel) {
        invalid(where, "cannot reshape ", shape_str(in), " (", numel, " elements) to ", shape_str(out), " (",
                known, " elements)");
    }
    return out;
}

std::vector<TensorInfo> reshape_infer(const InferContext &ctx) {
    ctx.require_inputs(1, 2);
    const TensorInfo &in = ctx.input(0);
    bool allowzero = ctx.attrs().get_int("allowzero", 0) != 0;
    if (!ctx.has_input(1)) { // opset 1-4: the shape is an attribute
        if (!ctx.attrs().has("shape")) ctx.error("needs a shape input (or the opset-1 shape attribute)");
        return {info_like(
            in, reshape_target(ctx.node.where, in.shape, ctx.attrs().get_ints("shape"), allowzero))};
    }
    int64_t len = int_list_length(ctx, 1, "shape");
    auto spec = const_ints(ctx, 1, "shape");
    if (!spec) {
        const Shape &d = declared_view_shape(ctx, in.shape);
        if (static_cast<int64_t>(d.size()) != len)
            ctx.error("model.txt declares a rank-", d.size(), " output but the shape input has ", len,
                      " entries");
        return {info_like(in, d)};
    }
    return {info_like(in, reshape_target(ctx.node.where, in.shape, *spec, allowzero))};
}

void reshape_run(RunContext &ctx) {
    const Tensor &in = ctx.input(0);
    bool allowzero = ctx.attrs().get_int("allowzero", 0) != 0;
    std::vector<int64_t> spec = ctx.has_input(1) ? int_values(ctx.input(1)) : ctx.attrs().get_ints("shape");
    ctx.set_output(0, in.reshaped(reshape_target(ctx.node.where, in.shape(), spec, allowzero)));
}

// ---- Flatten ----

Shape flatten_shape(const std::string &where, const Shape &in, int64_t axis) {
    int64_t r = static_cast<int64_t>(in.size());
    if (axis < -r || axis > r)
        invalid(where, "axis ", axis, " is out of range for rank ", r, " (expected ", -r, "..", r, ")");
    if (axis < 0) axis += r;
    int64_t a = 1, b = 1;
    for (int64_t i = 0; i < r; ++i) (i < axis ? a : b) *= in[static_cast<size_t>(i)];
    return {a, b};
}

std::vector<TensorInfo> flatten_infer(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    const TensorInfo &in = ctx.input(0);
    return {info_like(in, flatten_shape(ctx.node.where, in.shape, ctx.attrs().get_int("axis", 1)))};
}

void flatten_run(RunContext &ctx) {
    const Tensor &in = ctx.input(0);
    ctx.set_output(0, in.reshaped(flatten_shape(ctx.node.where, in.shape(), ctx.attrs().get_int("axis", 1))));
}

// ---- Squeeze / Unsqueeze ----

// Axes given as the opset<13 attribute or the opset-13 input 1. `known` is false when the input is
// computed at run time; `given` is false when neither is present.
struct Axes {
    bool given = false, known = true;
    std::vector<int64_t> values;
};

Axes infer_axes(const InferContext &ctx, size_t input) {
    Axes a;
    if (ctx.has_input(input)) {
        a.given = true;
        int_list_length(ctx, input, "axes");
        auto v = const_ints(ctx, input, "axes");
        if (v)
            a.values = *v;
        else
            a.known = false;
    } else if (ctx.attrs().has("axes")) {
        a.given = true;
        a.values = ctx.attrs().get_ints("axes");
    }
    return a;
}

Axes run_axes(const RunContext &ctx, size_t input) {
    Axes a;
    if (ctx.has_input(input)) {
        a.given = true;
        a.values = int_values(ctx.input(input));
    } else if (ctx.attrs().has("axes")) {
        a.given = true;
        a.values = ctx.attrs().get_ints("axes");
    }
    return a;
}

Shape squeeze_shape(const std::string &where, const Shape &in, const Axes &axes) {
    int64_t r = static_cast<int64_t>(in.size());
    std::vector<bool> drop(in.size(), false);
    if (!axes.given) {
        for (size_t i = 0; i < in.size(); ++i) drop[i] = in[i] == 1;
    } else {
        for (int64_t a : normalize_axes(where, axes.values, r)) {
            if (in[static_cast<size_t>(a)] != 1)
                invalid(where, "cannot squeeze axis ", a, " of shape ", shape_str(in), ": its size is not 1");
            drop[static_cast<size_t>(a)] = true;
        }
    }
    Shape out;
    for (size_t i = 0; i < in.size(); ++i)
        if (!drop[i]) out.push_back(in[i]);
    return out;
}

std::vector<TensorInfo> squeeze_infer(const InferContext &ctx) {
    ctx.require_inputs(1, 2);
    const TensorInfo &in = ctx.input(0);
    Axes axes = infer_axes(ctx, 1);
    if (!axes.known) return {info_like(in, declared_view_shape(ctx, in.shape))};
    return {info_like(in, squeeze_shape(ctx.node.where, in.shape, axes))};
}

void squeeze_run(RunContext &ctx) {
    const Tensor &in = ctx.input(0);
    ctx.set_output(0, in.reshaped(squeeze_shape(ctx.node.where, in.shape(), run_axes(ctx, 1))));
}

Shape unsqueeze_shape(const std::string &where, const Shape &in, const Axes &axes) {
    if (!axes.given) invalid(where, "needs axes (the axes input, or the axes attribute before opset 13)");
    int64_t r = static_cast<int64_t>(in.size() + axes.values.size());
    std::vector<bool> inserted(static_cast<size_t>(r), false);
    for (int64_t a : normalize_axes(where, axes.values, r)) inserted[static_cast<size_t>(a)] = true;
    Shape out;
    size_t next = 0;
    for (size_t i = 0; i < inserted.size(); ++i) out.push_back(inserted[i] ? 1 : in[next++]);
    return out;
}

std::vector<TensorInfo> unsqueeze_infer(const InferContext &ctx) {
    ctx.require_inputs(1, 2);
    const TensorInfo &in = ctx.input(0);
    Axes axes = infer_axes(ctx, 1);
    if (!axes.known) return {info_like(in, declared_view_shape(ctx, in.shape))};
    return {info_like(in, unsqueeze_shape(ctx.node.where, in.shape, axes))};
}

void unsqueeze_run(RunContext &ctx) {
    const Tensor &in = ctx.input(0);
    ctx.set_output(0, in.reshaped(unsqueeze_shape(ctx.node.where, in.shape(), run_axes(ctx, 1))));
}

// ---- Shape / Size ----

// Opset 15's start/end slice of the shape, clamped like Slice.
std::pair<int64_t, int64_t> shape_range(const Attributes &attrs, int64_t rank) {
    auto clamp = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
    int64_t start = clamp(attrs.get_int("start", 0)), end = clamp(attrs.get_int("end", rank));
    return {start, std::max(start, end)};
}

std::vector<TensorInfo> shape_infer(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    auto [start, end] = shape_range(ctx.attrs(), static_cast<int64_t>(ctx.input(0).shape.size()));
    return {TensorInfo{DType::I64, {end - start}, {}}};
}

void shape_run(RunContext &ctx) {
    const Tensor &in = ctx.input(0);
    auto [start, end] = shape_range(ctx.attrs(), static_cast<int64_t>(in.rank()));
    Tensor &out = ctx.alloc_output(0);
    for (int64_t i = start; i < end; ++i) out.data<int64_t>()[i - start] = in.dim(static_cast<size_t>(i));
}

std::vector<TensorInfo> size_infer(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    return {TensorInfo{DType::I64, {}, {}}};
}

void size_run(RunContext &ctx) { *ctx.alloc_output(0).data<int64_t>() = ctx.input(0).numel(); }

// ---- ConstantOfShape ----

// OnnxStream's onnx2txt writes a tensor attribute as the Python str() of its single element, so
// `value` arrives as "0.0" (float), "1" (int) or "True" (bool) and its dtype is lost. We read it back
// that way: a number with a decimal point, exponent, inf or nan is float32, an integer is int64,
// True/False is bool. An optional `dtype` attribute (our extension: a model.txt dtype name such as
// "float16", or an ONNX TensorProto data type number such as 10) names the dtype explicitly for the
// cases this cannot recover (int32, float16, uint8, ...).
struct FillValue {
    DType dtype = DType::F32;
    unsigned char bytes[8] = {};
};

// A dtype attribute: an ONNX TensorProto data type number (as the converter writes it) or a model.txt dtype name.
DType dtype_attr(const std::string &where, const std::string &text) {
    int64_t onnx_type = 0;
    DType dt = DType::F32;
    if (!parse_int64(text, onnx_type)) {
        if (!parse_dtype(text, dt))
            invalid(where, "attribute 'dtype' is '", text, "', expected a dtype name such as float32 or int64");
        return dt;
    }
    if (!dtype_from_onnx(onnx_type, dt))
        fail(ONNXSTREAM_ERR_UNSUPPORTED, where, ": dtype ", onnx_type, " is not supported (ONNX data types ",
             onnx_types_supported(), ")");
    return dt;
}

FillValue constant_of_shape_value(const std::string &where, const Attributes &attrs) {
    FillValue v;
    const std::string *text = attrs.raw("value");
    std::string value = text ? *text : "0.0";
    bool is_bool_text = value == "True" || value == "False" || value == "true" || value == "false";
    int64_t as_int = 0;
    double as_double = 0;
    bool int_text = parse_int64(value, as_int);
    if (is_bool_text) as_int = value[0] == 'T' || value[0] == 't';
    if (!is_bool_text && !int_text && !parse_double(value, as_double))
        invalid(where, "attribute 'value' is '", value, "', expected a number or True/False");
    if (int_text || is_bool_text) as_double = static_cast<double>(as_int);

    if (const std::string *d = attrs.raw("dtype")) {
        v.dtype = dtype_attr(where, *d);
    } else if (is_bool_text) {
        v.dtype = DType::Bool;
    } else if (int_text) {
        v.dtype = DType::I64;
    }
    if (v.dtype == DType::I64 && (int_text || is_bool_text))
        std::memcpy(v.bytes, &as_int, 8);
    else
        store_scalar(v.dtype, as_double, v.bytes);
    return v;
}

std::vector<TensorInfo> constant_of_shape_infer(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    FillValue v = constant_of_shape_value(ctx.node.where, ctx.attrs());
    int64_t len = int_list_length(ctx, 0, "shape");
    auto dims = const_ints(ctx, 0, "shape");
    if (!dims) {
        const Shape &d = ctx.declared_shape(0);
        if (static_cast<int64_t>(d.size()) != len)
            ctx.error("model.txt declares a rank-", d.size(), " output but the shape input has ", len,
                      " entries");
        return {TensorInfo{v.dtype, d, {}}};
    }
    return {TensorInfo{v.dtype, checked_shape(ctx.node.where, *dims, "shape"), {}}};
}

void constant_of_shape_run(RunContext &ctx) {
    FillValue v = constant_of_shape_value(ctx.node.where, ctx.attrs());
    Shape shape = checked_shape(ctx.node.where, int_values(ctx.input(0)), "shape");
    Tensor &out = ctx.alloc_output(0, v.dtype, shape);
    fill_elements(out.raw(), static_cast<size_t>(out.numel()), v.bytes, dtype_size(v.dtype));
}

// ---- EyeLike ----
// A 2-D tensor of input 0's shape with ones on diagonal k (k > 0 above the main one), in attribute dtype or
// input 0's dtype. Input 0's values are never read.

std::vector<TensorInfo> eye_like_infer(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    const TensorInfo &x = ctx.input(0);
    if (x.shape.size() != 2) ctx.error("input has shape ", shape_str(x.shape), "; EyeLike takes a 2-D tensor");
    ctx.attrs().get_int("k", 0);
    const std::string *d = ctx.attrs().raw("dtype");
    return {TensorInfo{d ? dtype_attr(ctx.node.where, *d) : x.dtype, x.shape, {}}};
}

void eye_like_run(RunContext &ctx) {
    Tensor &out = ctx.alloc_output(0);
    const int64_t rows = out.dim(0), cols = out.dim(1), k = ctx.attrs().get_int("k", 0);
    const size_t esz = dtype_size(out.dtype());
    std::memset(out.raw(), 0, static_cast<size_t>(out.numel()) * esz);
    unsigned char one[8] = {};
    store_scalar(out.dtype(), 1.0, one);
    char *dst = static_cast<char *>(out.raw());
    // Row r has its one at column r + k; rows whose column falls outside [0, cols) have none (and a k beyond
    // either dimension leaves the whole tensor zero, without forming r + k for absurd k).
    const int64_t first = std::max<int64_t>(0, k < -rows ? rows : -k);
    for (int64_t r = first; r < rows && k < cols && r + k < cols; ++r)
        std::memcpy(dst + static_cast<size_t>(r * cols + r + k) * esz, one, esz);
}

// ---- Range ----

struct RangeArgs {
    float start = 0, diff = 0, delta = 0; // float dtypes: limit - start taken in float, as ONNX Runtime does
    int64_t istart = 0, ilimit = 0, idelta = 0;
};

RangeArgs range_args(const Tensor *const t[3]) {
    RangeArgs a;
    if (is_float(t[0]->dtype())) {
        a.start = float_at(*t[0], 0);
        a.diff = float_at(*t[1], 0) - a.start;
        a.delta = float_at(*t[2], 0);
    } else {
        a.istart = int_at(*t[0], 0);
        a.ilimit = int_at(*t[1], 0);
        a.idelta = int_at(*t[2], 0);
    }
    return a;
}

// Element count: ceil((limit - start) / delta), at least 0; exact for integer ranges.
int64_t range_count(const std::string &where, DType dtype, const RangeArgs &a) {
    constexpr int64_t kMax = int64_t{1} << 40;
    if (!is_float(dtype)) {
        if (a.idelta == 0) invalid(where, "delta must not be zero");
        bool up = a.idelta > 0;
        if (up ? a.ilimit <= a.istart : a.ilimit >= a.istart) return 0;
        // Unsigned differences cannot overflow, whatever the int64 endpoints.
        uint64_t span = up ? static_cast<uint64_t>(a.ilimit) - static_cast<uint64_t>(a.istart)
                           : static_cast<uint64_t>(a.istart) - static_cast<uint64_t>(a.ilimit);
        uint64_t step = up ? static_cast<uint64_t>(a.idelta) : uint64_t{0} - static_cast<uint64_t>(a.idelta);
        uint64_t n = (span - 1) / step + 1;
        if (n > static_cast<uint64_t>(kMax))
            invalid(where, "range (", a.istart, ", ", a.ilimit, ", ", a.idelta, ") is too long");
        return static_cast<int64_t>(n);
    }
    if (a.delta == 0) invalid(where, "delta must not be zero");
    double n = std::ceil(static_cast<double>(a.diff) / static_cast<double>(a.delta));
    if (!(n < static_cast<double>(kMax)))
        invalid(where, "range (start ", a.start, ", delta ", a.delta, ") is too long");
    return n > 0 ? static_cast<int64_t>(n) : 0;
}

// g++ 14 reports the copies of the one-element shapes below as out of bounds (-Warray-bounds "forming offset
// 8 is out of the bounds [0, 8]", -Wstringop-overflow) once it has inlined the size check; they are in bounds.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 14
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
std::vector<TensorInfo> range_infer(const InferContext &ctx) {
    ctx.require_inputs(3, 3);
    DType dt = ctx.input(0).dtype;
    if (dt != DType::F32 && dt != DType::F16 && dt != DType::I64 && dt != DType::I32)
        fail(ONNXSTREAM_ERR_UNSUPPORTED, ctx.node.where, ": dtype ", dtype_name(dt),
             " is not supported (float32, float16, int64, int32)");
    for (size_t k = 0; k < 3; ++k) {
        const TensorInfo &in = ctx.input(k);
        if (in.dtype != dt) ctx.error("inputs must share one dtype; input ", k, " is ", dtype_name(in.dtype));
        if (shape_numel(in.shape) != 1 || in.shape.size() > 1)
            ctx.error("input ", k, " must be a scalar, got shape ", shape_str(in.shape));
    }
    const Tensor *t[3] = {ctx.constant(0), ctx.constant(1), ctx.constant(2)};
    if (!t[0] || !t[1] || !t[2]) {
        const Shape &d = ctx.declared_shape(0);
        if (d.size() != 1)
            ctx.error("model.txt declares a rank-", d.size(), " output but Range makes 1-D tensors");
        return {TensorInfo{dt, d, {}}};
    }
    return {TensorInfo{dt, {range_count(ctx.node.where, dt, range_args(t))}, {}}};
}
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 14
#pragma GCC diagnostic pop
#endif

void range_run(RunContext &ctx) {
    const Tensor *t[3] = {&ctx.input(0), &ctx.input(1), &ctx.input(2)};
    DType dt = t[0]->dtype();
    RangeArgs a = range_args(t);
    int64_t n = range_count(ctx.node.where, dt, a);
    Tensor &out = ctx.alloc_output(0, dt, {n});
    // Floats accumulate (v += delta) rather than computing start + i * delta: that is what ONNX
    // Runtime does, and its rounding is what the reference results carry.
    switch (dt) {
    case DType::I64: {
        int64_t *o = out.data<int64_t>();
        // Unsigned arithmetic: the values stay between start and limit, the intermediate may not.
        for (int64_t i = 0; i < n; ++i)
            o[i] = static_cast<int64_t>(static_cast<uint64_t>(a.istart) +
                                        static_cast<uint64_t>(i) * static_cast<uint64_t>(a.idelta));
        break;
    }
    case DType::I32: {
        int32_t *o = out.data<int32_t>();
        for (int64_t i = 0; i < n; ++i) o[i] = static_cast<int32_t>(a.istart + i * a.idelta);
        break;
    }
    case DType::F32: {
        float *o = out.data<float>(), v = a.start;
        for (int64_t i = 0; i < n; ++i, v += a.delta) o[i] = v;
        break;
    }
    default: {
        uint16_t *o = out.data<uint16_t>();
        float v = a.start;
        for (int64_t i = 0; i < n; ++i, v += a.delta) o[i] = float_to_half(v);
        break;
    }
    }
}

// ---- Trilu ----

std::vector<TensorInfo> trilu_infer(const InferContext &ctx) {
    ctx.require_inputs(1, 2);
    const TensorInfo &in = ctx.input(0);
    if (in.shape.size() < 2) ctx.error("expects a tensor of rank >= 2, got shape ", shape_str(in.shape));
    if (ctx.has_input(1)) {
        const TensorInfo &k = ctx.input(1);
        if (k.dtype != DType::I64 || shape_numel(k.shape) != 1) ctx.error("k must be an int64 scalar");
    }
    return {info_like(in, in.shape)};
}

void trilu_run(RunContext &ctx) {
    const Tensor &in = ctx.input(0);
    int64_t k = ctx.has_input(1) ? int_at(ctx.input(1), 0) : 0;
    bool upper = ctx.attrs().get_int("upper", 1) != 0;
    Tensor &out = alloc_like_input(ctx);
    size_t esz = dtype_size(in.dtype());
    int64_t rows = in.dim(in.rank() - 2), cols = in.dim(in.rank() - 1);
    int64_t total_rows = rows == 0 ? 0 : in.numel() / cols;
    if (cols == 0) return;
    const char *src = static_cast<const char *>(in.raw());
    char *dst = static_cast<char *>(out.raw());
    size_t tile = task_tile(static_cast<size_t>(cols) * esz);
    // Zero bytes are zero in every dtype (0.0f, half 0, false), so rows are a copy plus a memset.
    parallel_for(ctx.pool(), static_cast<size_t>(total_rows), tile, [&](size_t b, size_t e) {
        for (size_t r = b; r < e; ++r) {
            int64_t i = static_cast<int64_t>(r) % rows;
            size_t row = r * static_cast<size_t>(cols) * esz;
            // Kept columns: j >= i + k (upper) or j <= i + k (lower).
            int64_t lo = upper ? std::clamp<int64_t>(i + k, 0, cols) : 0;
            int64_t hi = upper ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
            std::memset(dst + row, 0, static_cast<size_t>(lo) * esz);
            if (hi > lo)
                std::memcpy(dst + row + lo * esz, src + row + lo * esz, static_cast<size_t>(hi - lo) * esz);
            std::memset(dst + row + hi * esz, 0, static_cast<size_t>(cols - hi) * esz);
        }
    });
}

// ---- OneHot ----

// The single value of a scalar-like numeric input (a 0-D tensor or a 1-element 1-D one), as a double.
double single_number(const Tensor &t) {
    switch (t.dtype()) {
    case DType::F32: return t.data<float>()[0];
    case DType::F16: return half_to_float(t.data<uint16_t>()[0]);
    default: return static_cast<double>(int_values(t)[0]);
    }
}

// Depth as ONNX reads it (a float depth is truncated), or nullopt when it is computed at run time.
std::optional<int64_t> one_hot_depth(const InferContext &ctx) {
    const Tensor *t = ctx.constant(1);
    if (!t) return std::nullopt;
    return static_cast<int64_t>(single_number(*t));
}

std::vector<TensorInfo> one_hot_infer(const InferContext &ctx) {
    ctx.require_inputs(3, 3);
    ctx.require_dtype(0, {DType::I64, DType::I32, DType::F32});
    ctx.require_dtype(1, {DType::I64, DType::I32, DType::F32});
    const TensorInfo &indices = ctx.input(0);
    const TensorInfo &depth = ctx.input(1);
    const TensorInfo &values = ctx.input(2);
    if (depth.shape.size() > 1 || shape_numel(depth.shape) != 1)
        ctx.error("depth (input 1) must be a scalar or a 1-element 1-D tensor, got shape ", shape_str(depth.shape));
    if (values.shape.size() != 1 || values.shape[0] != 2)
        ctx.error("values (input 2) must be a 1-D tensor of 2 elements (off, on), got shape ",
                  shape_str(values.shape));
    int64_t rank = static_cast<int64_t>(indices.shape.size());
    if (rank == 0) ctx.error("indices must have rank >= 1");
    size_t axis = static_cast<size_t>(normalize_axis(ctx.node.where, ctx.attrs().get_int("axis", -1), rank + 1));
    Shape out = indices.shape;
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(axis), 0);
    if (auto depth_value = one_hot_depth(ctx)) {
        if (*depth_value < 1) ctx.error("depth ", *depth_value, " must be at least 1");
        out[axis] = *depth_value;
    } else { // depth known at run time: the shape model.txt declares
        const Shape &d = ctx.declared_shape(0);
        bool ok = d.size() == out.size() && d[axis] >= 1;
        for (size_t i = 0; ok && i < d.size(); ++i) ok = i == axis || d[i] == out[i];
        if (!ok)
            ctx.error("model.txt declares output shape ", shape_str(d), ", which is not ", shape_str(indices.shape),
                      " with a depth dimension at axis ", axis);
        out = d;
    }
    return {TensorInfo{values.dtype, checked_shape(ctx.node.where, out, "output shape"), {}}};
}

void one_hot_run(RunContext &ctx) {
    const Tensor &indices = ctx.input(0);
    const Tensor &values = ctx.input(2);
    int64_t depth = static_cast<int64_t>(single_number(ctx.input(1)));
    if (depth < 1) ctx.error(ONNXSTREAM_ERR_INVALID_ARGUMENT, "depth ", depth, " must be at least 1");
    int64_t rank = static_cast<int64_t>(indices.rank());
    size_t axis = static_cast<size_t>(normalize_axis(ctx.node.where, ctx.attrs().get_int("axis", -1), rank + 1));
    Shape out_shape = indices.shape();
    out_shape.insert(out_shape.begin() + static_cast<std::ptrdiff_t>(axis), depth);
    checked_shape(ctx.node.where, out_shape, "output shape");
    Tensor &out = ctx.alloc_output(0, values.dtype(), out_shape);
    size_t n = static_cast<size_t>(out.numel());
    if (n == 0) return;
    size_t esz = dtype_size(values.dtype());
    const char *off = static_cast<const char *>(values.raw()), *on = off + esz;
    char *dst = static_cast<char *>(out.raw());
    fill_elements(dst, n, off, esz);
    int64_t inner = 1;
    for (size_t i = axis; i < indices.rank(); ++i) inner *= indices.dim(i);
    int64_t count = indices.numel();
    for (int64_t e = 0; e < count; ++e) {
        int64_t v;
        switch (indices.dtype()) {
        case DType::F32: v = static_cast<int64_t>(indices.data<float>()[e]); break;
        case DType::I32: v = indices.data<int32_t>()[e]; break;
        default: v = indices.data<int64_t>()[e]; break;
        }
        if (v < 0) v += depth;
        if (v < 0 || v >= depth) continue; // out of [-depth, depth - 1]: all "off", as ONNX says
        int64_t o = e / inner, i = e % inner;
        std::memcpy(dst + static_cast<size_t>((o * depth + v) * inner + i) * esz, on, esz);
    }
}

} // namespace

} // namespace shapeops

void register_shape_ops(Registry &r) {
    using namespace shapeops;
    r.add("Reshape", reshape_infer, reshape_run);
    r.add("Flatten", flatten_infer, flatten_run);
    r.add("Squeeze", squeeze_infer, squeeze_run);
    r.add("Unsqueeze", unsqueeze_infer, unsqueeze_run);
    r.add("Shape", shape_infer, shape_run);
    r.add("Size", size_infer, size_run);
    r.add("ConstantOfShape", constant_of_shape_infer, constant_of_shape_run);
    r.add("Range", range_infer, range_run).with_shape_value_inputs(0x7);
    r.add("EyeLike", eye_like_infer, eye_like_run);
    r.add("Trilu", trilu_infer, trilu_run);
    r.add("OneHot", one_hot_infer, one_hot_run).with_shape_value_inputs(0x2);
}

} // namespace onnxstream

// Element-wise arithmetic, comparison, logic, math functions, Where and Cast, with numpy broadcasting at
// any rank, through the parallel broadcast walk of ops/elementwise.h. float16 is computed in float32;
// integers are exact.
//
// Binary float32 arithmetic does not use XNNPACK's add/subtract/multiply/divide_nd: that build always applies
// its output clamp, whose max/min instructions turn NaN into -inf (0/0, inf-inf, NaN+1 all give -inf where
// ONNX Runtime gives NaN), and it runs a same-shape operation as a single task. The vectorised loops here
// are as fast on one thread and also split the work across the pool. XNNPACK still computes the unary
// functions whose kernels keep NaN (abs, negate, sqrt, floor, ceil, round).
#include "ops/elementwise.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ops/registry.h"
#include "tensor/half.h"
#include "xnnpack/elementwise.h"

namespace onnxstream {

// ---------------------------------------------------------------------------------------------------------
// Shared helpers (declared in ops/elementwise.h)

namespace {
bool broadcast_into(Shape &acc, const Shape &s) {
    Shape out(std::max(acc.size(), s.size()), 1);
    for (size_t i = 0; i < out.size(); ++i) {
        int64_t a = i < acc.size() ? acc[acc.size() - 1 - i] : 1;
        int64_t b = i < s.size() ? s[s.size() - 1 - i] : 1;
        if (a != b && a != 1 && b != 1) return false;
        out[out.size() - 1 - i] = a == 1 ? b : a;
    }
    acc = std::move(out);
    return true;
}
} // namespace

Shape broadcast_inputs(const InferContext &ctx, std::initializer_list<size_t> inputs) {
    Shape out;
    bool first = true;
    for (size_t i : inputs) {
        const Shape &s = ctx.input(i).shape;
        if (first) {
            out = s;
            first = false;
        } else if (!broadcast_into(out, s)) {
            ctx.error(
                "input ", i, " of shape ", shape_str(s), " does not broadcast with shape ", shape_str(out),
                " of the inputs before it (numpy rules: aligned from the right, each dimension equal or 1)");
        }
    }
    return out;
}

Shape broadcast_all_inputs(const InferContext &ctx) {
    Shape out;
    for (size_t i = 0; i < ctx.input_count(); ++i) {
        const Shape &s = ctx.input(i).shape;
        if (i == 0) {
            out = s;
        } else if (!broadcast_into(out, s)) {
            ctx.error(
                "input ", i, " of shape ", shape_str(s), " does not broadcast with shape ", shape_str(out),
                " of the inputs before it (numpy rules: aligned from the right, each dimension equal or 1)");
        }
    }
    return out;
}

Shape broadcast_pair(const Shape &a, const Shape &b) {
    Shape out = a;
    broadcast_into(out, b);
    return out;
}

bool broadcasts_to(const Shape &from, const Shape &to) {
    if (from.size() > to.size()) return false;
    for (size_t i = 0; i < from.size(); ++i) {
        int64_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i];
        if (f != t && f != 1) return false;
    }
    return true;
}

std::vector<TensorInfo> infer_same_as_input(const InferContext &ctx, std::initializer_list<DType> allowed) {
    ctx.require_inputs(1, 1);
    ctx.require_dtype(0, allowed);
    const TensorInfo &in = ctx.input(0);
    return {TensorInfo{in.dtype, in.shape, {}}};
}

BroadcastLayout broadcast_layout(const Shape &out, const std::vector<const Shape *> &operands) {
    BroadcastLayout l;
    l.numel = shape_numel(out);
    const size_t rank = out.size(), nops = operands.size();
    std::vector<std::vector<int64_t>> full(nops, std::vector<int64_t>(rank, 0));
    for (size_t k = 0; k < nops; ++k) {
        const Shape &s = *operands[k];
        int64_t stride = 1;
        for (size_t i = 0; i < s.size(); ++i) {
            int64_t dim = s[s.size() - 1 - i];
            if (dim != 1) full[k][rank - 1 - i] = stride;
            stride *= dim;
        }
    }
    // Drop size-1 dimensions and merge neighbours every operand walks the same way, so that the common
    // cases (same shape, scalar, per-row/column operand) become one or two long dimensions.
    l.strides.assign(nops, {});
    for (size_t d = 0; d < rank; ++d) {
        if (out[d] == 1) continue;
        if (!l.dims.empty()) {
            bool merge = true;
            for (size_t k = 0; k < nops; ++k)
                if (l.strides[k].back() != full[k][d] * out[d]) merge = false;
            if (merge) {
                l.dims.back() *= out[d];
                for (size_t k = 0; k < nops; ++k) l.strides[k].back() = full[k][d];
                continue;
            }
        }
        l.dims.push_back(out[d]);
        for (size_t k = 0; k < nops; ++k) l.strides[k].push_back(full[k][d]);
    }
    if (l.dims.empty()) {
        l.dims.push_back(1);
        for (size_t k = 0; k < nops; ++k) l.strides[k].push_back(0);
    }
    return l;
}

Tensor to_f32(const RunContext &ctx, const Tensor &t) {
    if (t.dtype() == DType::F32) return t;
    Tensor f = ctx.scratch(DType::F32, t.shape());
    const uint16_t *x = t.data<uint16_t>();
    float *y = f.data<float>();
    parallel_for(ctx.pool(), static_cast<size_t>(t.numel()), kElementwiseTile,
                 [&](size_t b, size_t e) { half_to_float_n(x + b, y + b, e - b); });
    return f;
}

void store_f32(pthreadpool_t pool, const float *src, Tensor &out) {
    const size_t n = static_cast<size_t>(out.numel());
    if (out.dtype() == DType::F32) {
        float *y = out.data<float>();
        if (y != src)
            parallel_for(pool, n, kElementwiseTile * 4,
                         [&](size_t b, size_t e) { std::memcpy(y + b, src + b, (e - b) * sizeof(float)); });
        return;
    }
    uint16_t *y = out.data<uint16_t>();
    parallel_for(pool, n, kElementwiseTile,
                 [&](size_t b, size_t e) { float_to_half_n(src + b, y + b, e - b); });
}

namespace {

// ---------------------------------------------------------------------------------------------------------
// dtype sets, dispatch and exact integer arithmetic

const std::initializer_list<DType> kFloatTypes = {DType::F32, DType::F16};
const std::initializer_list<DType> kNumericTypes = {DType::F32, DType::F16, DType::I64,
                                                    DType::I32, DType::U8,  DType::I8};
const std::initializer_list<DType> kAllTypes = {DType::F32, DType::F16, DType::I64, DType::I32,
                                                DType::U8,  DType::I8,  DType::Bool};

// Calls fn(T{}) with the storage type of an integer dtype (Bool is 0/1 bytes).
template <typename Fn> void dispatch_int(DType d, Fn &&fn) {
    switch (d) {
    case DType::I64: fn(int64_t{}); return;
    case DType::I32: fn(int32_t{}); return;
    case DType::U8:
    case DType::Bool: fn(uint8_t{}); return;
    case DType::I8: fn(int8_t{}); return;
    default: fail(ONNXSTREAM_ERR_INTERNAL, "integer kernel called for dtype ", dtype_name(d));
    }
}

// Integer add/sub/mul/neg wrap around like ONNX Runtime's two's-complement arithmetic, without the
// undefined behaviour of signed overflow in C++.
template <typename T> using Unsigned = std::make_unsigned_t<T>;
template <typename T> T wrap_add(T a, T b) { return static_cast<T>(Unsigned<T>(a) + Unsigned<T>(b)); }
template <typename T> T wrap_sub(T a, T b) { return static_cast<T>(Unsigned<T>(a) - Unsigned<T>(b)); }
template <typename T> T wrap_mul(T a, T b) { return static_cast<T>(Unsigned<T>(a) * Unsigned<T>(b)); }
template <typename T> T wrap_neg(T a) { return static_cast<T>(Unsigned<T>(0) - Unsigned<T>(a)); }

// Division truncates toward zero. Division by zero (undefined in ONNX, a crash in C++) gives 0, and
// MIN / -1 wraps to MIN.
template <typename T> T int_div(T a, T b) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>)
        if (b == T(-1)) return wrap_neg(a);
    return static_cast<T>(a / b);
}

// fmod=1: the sign of the dividend (C %); fmod=0: the sign of the divisor (Python %). x mod 0 gives 0.
template <typename T> T int_mod(T a, T b, bool c_style) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return 0;
        T r = static_cast<T>(a % b);
        if (!c_style && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
        return r;
    } else {
        return static_cast<T>(a % b);
    }
}

// Float to integer conversion as x86's truncating conversions do it (what ONNX Runtime's static_cast
// compiles to): out-of-range and NaN give the "integer indefinite" value, 8-bit targets go through int32.
template <typename T> T float_to_int(double v) {
    if constexpr (std::is_same_v<T, int64_t>) {
        if (v >= -9223372036854775808.0 && v < 9223372036854775808.0) return static_cast<int64_t>(v);
        return std::numeric_limits<int64_t>::min();
    } else {
        int32_t i = std::numeric_limits<int32_t>::min();
        if (v > -2147483649.0 && v < 2147483648.0) i = static_cast<int32_t>(v);
        return static_cast<T>(i);
    }
}

// Exact integer power by squaring (wrapping); negative exponents give the truncated value of 1/x^-e.
template <typename T, typename E> T int_pow(T base, E e) {
    if (e < 0) {
        if (base == 1) return 1;
        if constexpr (std::is_signed_v<T>)
            if (base == T(-1)) return (e % 2 == 0) ? T(1) : T(-1);
        return 0;
    }
    T result = 1;
    while (e > 0) {
        if (e & 1) result = wrap_mul(result, base);
        base = wrap_mul(base, base);
        e = static_cast<E>(e >> 1);
    }
    return result;
}

// ---------------------------------------------------------------------------------------------------------
// Add Sub Mul Div Min Max Sum Mean

struct AddOp {
    template <typename T> T operator()(T a, T b) const {
        if constexpr (std::is_integral_v<T>)
            return wrap_add(a, b);
        else
            return a + b;
    }
};
struct SubOp {
    template <typename T> T operator()(T a, T b) const {
        if constexpr (std::is_integral_v<T>)
            return wrap_sub(a, b);
        else
            return a - b;
    }
};
struct MulOp {
    template <typename T> T operator()(T a, T b) const {
        if constexpr (std::is_integral_v<T>)
            return wrap_mul(a, b);
        else
            return a * b;
    }
};
struct DivOp {
    template <typename T> T operator()(T a, T b) const {
        if constexpr (std::is_integral_v<T>)
            return int_div(a, b);
        else
            return a / b;
    }
};
// Min/Max propagate NaN as ONNX Runtime does.
struct MinOp {
    template <typename T> T operator()(T a, T b) const {
        if constexpr (std::is_integral_v<T>)
            return a < b ? a : b;
        else
            return (a < b || a != a) ? a : b;
    }
};
struct MaxOp {
    template <typename T> T operator()(T a, T b) const {
        if constexpr (std::is_integral_v<T>)
            return a > b ? a : b;
        else
            return (a > b || a != a) ? a : b;
    }
};

// out = op(in[0], in[1], ..., in[n-1]) folded left to right over the broadcast shape of out.
template <typename Op, typename T> void fold_inputs(pthreadpool_t pool, const std::vector<const T *> &in,
                                                    const std::vector<const Shape *> &shapes, T *out,
                                                    const Shape &out_shape) {
    if (in.size() == 1) {
        std::memcpy(out, in[0], static_cast<size_t>(shape_numel(out_shape)) * sizeof(T));
        return;
    }
    binary_broadcast(pool, out_shape, in[0], *shapes[0], in[1], *shapes[1], out, Op{});
    for (size_t k = 2; k < in.size(); ++k)
        binary_broadcast(pool, out_shape, out, out_shape, in[k], *shapes[k], out, Op{});
}

template <typename Op> void run_fold(RunContext &ctx, bool mean) {
    Tensor &out = ctx.alloc_output(0);
    if (out.numel() == 0) return;
    const size_t n = ctx.input_count();
    std::vector<const Shape *> shapes;
    for (size_t i = 0; i < n; ++i) shapes.push_back(&ctx.input(i).shape());
    if (is_float(out.dtype())) {
        std::vector<Tensor> staged;
        std::vector<const float *> ptrs;
        for (size_t i = 0; i < n; ++i) staged.push_back(to_f32(ctx, ctx.input(i)));
        for (const Tensor &t : staged) ptrs.push_back(t.data<float>());
        Tensor acc = out.dtype() == DType::F32 ? out : ctx.scratch(DType::F32, out.shape());
        float *y = acc.data<float>();
        fold_inputs<Op>(ctx.pool(), ptrs, shapes, y, out.shape());
        if (mean) {
            const float count = static_cast<float>(n);
            parallel_for(ctx.pool(), static_cast<size_t>(out.numel()), kElementwiseTile,
                         [&](size_t b, size_t e) {
                             for (size_t i = b; i < e; ++i) y[i] = y[i] / count;
                         });
        }
        store_f32(ctx.pool(), y, out);
        return;
    }
    dispatch_int(out.dtype(), [&](auto tag) {
        using T = decltype(tag);
        std::vector<const T *> ptrs;
        for (size_t i = 0; i < n; ++i) ptrs.push_back(ctx.input(i).template data<T>());
        fold_inputs<Op>(ctx.pool(), ptrs, shapes, out.data<T>(), out.shape());
    });
}

template <typename Op> void run_binary_arith(RunContext &ctx) { run_fold<Op>(ctx, false); }
void run_mean(RunContext &ctx) { run_fold<AddOp>(ctx, true); }

// All inputs present with one dtype from `allowed`; output shape is their broadcast.
std::vector<TensorInfo> infer_same_type_inputs(const InferContext &ctx, size_t min, size_t max,
                                               std::initializer_list<DType> allowed,
                                               DType *out_dtype = nullptr) {
    ctx.require_inputs(min, max);
    for (size_t i = 0; i < ctx.input_count(); ++i) {
        if (!ctx.has_input(i)) ctx.error("input ", i, " is omitted; every input is required");
        ctx.require_dtype(i, allowed);
        if (ctx.input(i).dtype != ctx.input(0).dtype)
            ctx.error("input ", i, " has dtype ", dtype_name(ctx.input(i).dtype), " but input 0 has ",
                      dtype_name(ctx.input(0).dtype), "; all inputs must have the same dtype");
    }
    DType dtype = out_dtype ? *out_dtype : ctx.input(0).dtype;
    return {TensorInfo{dtype, broadcast_all_inputs(ctx), {}}};
}

constexpr size_t kManyInputs = 1u << 20;

std::vector<TensorInfo> infer_binary_arith(const InferContext &ctx) {
    return infer_same_type_inputs(ctx, 2, 2, kNumericTypes);
}
std::vector<TensorInfo> infer_variadic_numeric(const InferContext &ctx) {
    return infer_same_type_inputs(ctx, 1, kManyInputs, kNumericTypes);
}
std::vector<TensorInfo> infer_variadic_float(const InferContext &ctx) {
    return infer_same_type_inputs(ctx, 1, kManyInputs, kFloatTypes);
}

// ---------------------------------------------------------------------------------------------------------
// Pow Mod

std::vector<TensorInfo> infer_pow(const InferContext &ctx) {
    ctx.require_inputs(2, 2);
    ctx.require_dtype(0, {DType::F32, DType::F16, DType::I64, DType::I32});
    ctx.require_dtype(1, {DType::F32, DType::F16, DType::I64, DType::I32});
    return {TensorInfo{ctx.input(0).dtype, broadcast_inputs(ctx, {0, 1}), {}}};
}

float pow_f32(float a, float b) { return std::pow(a, b); }

// Float base: a single exponent value of 0, 1, 2, 3 or 0.5 becomes plain arithmetic (x^2 in YOLO/SD
// variance computations), agreeing with pow for every base including inf and -0.
bool pow_f32_scalar(pthreadpool_t pool, const float *x, float *y, size_t n, double e) {
    auto map = [&](auto f) {
        parallel_for(pool, n, kElementwiseTile, [&](size_t b, size_t end) {
            for (size_t i = b; i < end; ++i) y[i] = f(x[i]);
        });
    };
    if (e == 2.0)
        map([](float v) { return v * v; });
    else if (e == 1.0)
        map([](float v) { return v; });
    else if (e == 3.0)
        map([](float v) { return v * v * v; });
    else if (e == 0.0)
        map([](float) { return 1.0f; });
    else if (e == 0.5)
        map([](float v) { return v == 0.0f ? 0.0f : (std::isinf(v) ? INFINITY : std::sqrt(v)); });
    else
        return false;
    return true;
}

void run_pow(RunContext &ctx) {
    Tensor &out = ctx.alloc_output(0);
    if (out.numel() == 0) return;
    const Tensor &base = ctx.input(0), &expo = ctx.input(1);
    pthreadpool_t pool = ctx.pool();
    const Shape &bs = base.shape(), &es = expo.shape();
    if (is_float(base.dtype())) {
        Tensor xb = to_f32(ctx, base);
        Tensor acc = out.dtype() == DType::F32 ? out : ctx.scratch(DType::F32, out.shape());
        float *y = acc.data<float>();
        bool done = false;
        if (expo.numel() == 1 && bs == out.shape()) {
            double e = is_float(expo.dtype()) ? double(float_at(expo, 0)) : double(int_at(expo, 0));
            done = pow_f32_scalar(pool, xb.data<float>(), y, static_cast<size_t>(out.numel()), e);
        }
        if (!done) {
            if (is_float(expo.dtype())) {
                Tensor xe = to_f32(ctx, expo);
                binary_broadcast(pool, out.shape(), xb.data<float>(), bs, xe.data<float>(), es, y, pow_f32);
            } else {
                // Integer exponents go through double pow like ONNX Runtime's std::pow(float, int64).
                dispatch_int(expo.dtype(), [&](auto tag) {
                    using E = decltype(tag);
                    binary_broadcast(
                        pool, out.shape(), xb.data<float>(), bs, expo.data<E>(), es, y,
                        [](float a, E b) { return static_cast<float>(std::pow(double(a), double(b))); });
                });
            }
        }
        store_f32(pool, y, out);
        return;
    }
    dispatch_int(base.dtype(), [&](auto btag) {
        using T = decltype(btag);
        if (is_float(expo.dtype())) {
            Tensor xe = to_f32(ctx, expo);
            binary_broadcast(pool, out.shape(), base.data<T>(), bs, xe.data<float>(), es, out.data<T>(),
                             [](T a, float b) { return float_to_int<T>(std::pow(double(a), double(b))); });
        } else {
            dispatch_int(expo.dtype(), [&](auto etag) {
                using E = decltype(etag);
                binary_broadcast(pool, out.shape(), base.data<T>(), bs, expo.data<E>(), es, out.data<T>(),
                                 [](T a, E b) { return int_pow<T, E>(a, b); });
            });
        }
    });
}

std::vector<TensorInfo> infer_mod(const InferContext &ctx) {
    auto out = infer_same_type_inputs(ctx, 2, 2, kNumericTypes);
    int64_t fmod = ctx.attrs().get_int("fmod", 0);
    if (fmod != 0 && fmod != 1) ctx.error("attribute fmod is ", fmod, ", expected 0 or 1");
    if (fmod == 0 && is_float(out[0].dtype))
        ctx.error("fmod=0 is not defined for ", dtype_name(out[0].dtype),
                  " inputs; float Mod requires fmod=1");
    return out;
}

void run_mod(RunContext &ctx) {
    Tensor &out = ctx.alloc_output(0);
    if (out.numel() == 0) return;
    const Tensor &a = ctx.input(0), &b = ctx.input(1);
    const bool c_style = ctx.attrs().get_int("fmod", 0) == 1;
    if (is_float(out.dtype())) {
        Tensor xa = to_f32(ctx, a), xb = to_f32(ctx, b);
        Tensor acc = out.dtype() == DType::F32 ? out : ctx.scratch(DType::F32, out.shape());
        binary_broadcast(ctx.pool(), out.shape(), xa.data<float>(), a.shape(), xb.data<float>(), b.shape(),
                         acc.data<float>(), [](float x, float y) { return std::fmod(x, y); });
        store_f32(ctx.pool(), acc.data<float>(), out);
        return;
    }
    dispatch_int(out.dtype(), [&](auto tag) {
        using T = decltype(tag);
        binary_broadcast(ctx.pool(), out.shape(), a.data<T>(), a.shape(), b.data<T>(), b.shape(),
                         out.data<T>(), [c_style](T x, T y) { return int_mod(x, y, c_style); });
    });
}

// ---------------------------------------------------------------------------------------------------------
// Comparisons, logic, Where

std::vector<TensorInfo> infer_compare(const InferContext &ctx) {
    DType b = DType::Bool;
    return infer_same_type_inputs(ctx, 2, 2, kAllTypes, &b);
}

template <typename Cmp> void run_compare(RunContext &ctx) {
    Tensor &out = ctx.alloc_output(0);
    if (out.numel() == 0) return;
    const Tensor &a = ctx.input(0), &b = ctx.input(1);
    uint8_t *y = out.data<uint8_t>();
    auto f = [](auto x, auto z) -> uint8_t { return Cmp{}(x, z) ? 1 : 0; };
    if (is_float(a.dtype())) {
        Tensor xa = to_f32(ctx, a), xb = to_f32(ctx, b);
        binary_broadcast(ctx.pool(), out.shape(), xa.data<float>(), a.shape(), xb.data<float>(), b.shape(), y,
                         f);
        return;
    }
    dispatch_int(a.dtype(), [&](auto tag) {
        using T = decltype(tag);
        binary_broadcast(ctx.pool(), out.shape(), a.data<T>(), a.shape(), b.data<T>(), b.shape(), y, f);
    });
}

struct EqualCmp {
    template <typename T> bool operator()(T a, T b) const { return a == b; }
};
struct LessCmp {
    template <typename T> bool operator()(T a, T b) const { return a < b; }
};
struct GreaterCmp {
    template <typename T> bool operator()(T a, T b) const { return a > b; }
};
struct LessEqualCmp {
    template <typename T> bool operator()(T a, T b) const { return a <= b; }
};
struct GreaterEqualCmp {
    template <typename T> bool operator()(T a, T b) const { return a >= b; }
};

std::vector<TensorInfo> infer_logical(const InferContext &ctx) {
    return infer_same_type_inputs(ctx, 2, 2, {DType::Bool});
}

template <typename Op> void run_logical(RunContext &ctx) {
    Tensor &out = ctx.alloc_output(0);
    if (out.numel() == 0) return;
    const Tensor &a = ctx.input(0), &b = ctx.input(1);
    // Bool tensors may hold any nonzero byte for true (host data); normalise before combining.
    binary_broadcast(ctx.pool(), out.shape(), a.data<uint8_t>(), a.shape(), b.data<uint8_t>(), b.shape(),
                     out.data<uint8_t>(),
                     [](uint8_t x, uint8_t z) -> uint8_t { return Op{}(x != 0, z != 0); });
}

struct AndOp {
    uint8_t operator()(bool a, bool b) const { return a && b; }
};
struct OrOp {
    uint8_t operator()(bool a, bool b) const { return a || b; }
};
struct XorOp {
    uint8_t operator()(bool a, bool b) const { return a != b; }
};

std::vector<TensorInfo> infer_not(const InferContext &ctx) { return infer_same_as_input(ctx, {DType::Bool}); }

void run_not(RunContext &ctx) {
    const Tensor &x = ctx.input(0);
    Tensor &out = ctx.alloc_output(0);
    const uint8_t *a = x.data<uint8_t>();
    uint8_t *y = out.data<uint8_t>();
    parallel_for(ctx.pool(), static_cast<size_t>(x.numel()), kElementwiseTile, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) y[i] = a[i] == 0;
    });
}

std::vector<TensorInfo> infer_where(const InferContext &ctx) {
    ctx.require_inputs(3, 3);
    ctx.require_dtype(0, {DType::Bool});
    ctx.require_dtype(1, kAllTypes);
    if (ctx.input(1).dtype != ctx.input(2).dtype)
        ctx.error("X has dtype ", dtype_name(ctx.input(1).dtype), " but Y has ",
                  dtype_name(ctx.input(2).dtype), "; they must match");
    return {TensorInfo{ctx.input(1).dtype, broadcast_inputs(ctx, {0, 1, 2}), {}}};
}

template <typename T> void where_loop(pthreadpool_t pool, const Shape &out_shape, const Tensor &c,
                                      const Tensor &x, const Tensor &y, T *out) {
    BroadcastLayout l = broadcast_layout(out_shape, {&c.shape(), &x.shape(), &y.shape()});
    const int64_t s0 = l.strides[0].back(), s1 = l.strides[1].back(), s2 = l.strides[2].back();
    const uint8_t *cp = c.data<uint8_t>();
    const T *xp = x.data<T>(), *yp = y.data<T>();
    broadcast_runs(pool, l, [&](int64_t o, const int64_t *off, int64_t n) {
        const uint8_t *cc = cp + off[0];
        const T *xx = xp + off[1], *yy = yp + off[2];
        T *dst = out + o;
        if (s0 && s1 && s2) {
            for (int64_t i = 0; i < n; ++i) dst[i] = cc[i] ? xx[i] : yy[i];
        } else {
            for (int64_t i = 0; i < n; ++i) dst[i] = cc[i * s0] ? xx[i * s1] : yy[i * s2];
        }
    });
}

void run_where(RunContext &ctx) {
    Tensor &out = ctx.alloc_output(0);
    if (out.numel() == 0) return;
    const Tensor &c = ctx.input(0), &x = ctx.input(1), &y = ctx.input(2);
    // Only the element size matters for selecting values.
    switch (dtype_size(out.dtype())) {
    case 1: where_loop(ctx.pool(), out.shape(), c, x, y, out.data<uint8_t>()); break;
    case 2: where_loop(ctx.pool(), out.shape(), c, x, y, out.data<uint16_t>()); break;
    case 4: where_loop(ctx.pool(), out.shape(), c, x, y, out.data<uint32_t>()); break;
    default: where_loop(ctx.pool(), out.shape(), c, x, y, out.data<uint64_t>()); break;
    }
}

// ---------------------------------------------------------------------------------------------------------
// Unary math

std::vector<TensorInfo> infer_float_unary(const InferContext &ctx) {
    return infer_same_as_input(ctx, kFloatTypes);
}
std::vector<TensorInfo> infer_signed_unary(const InferContext &ctx) {
    return infer_same_as_input(ctx, {DType::F32, DType::F16, DType::I64, DType::I32, DType::I8});
}

// K::f is the float function; K::kXnn names an XNNPACK kernel computing the same, when K::kHasXnn.
template <typename K> void run_float_unary(RunContext &ctx) {
    const Tensor &x = ctx.input(0);
    Tensor &y = ctx.alloc_output(0);
    if constexpr (K::kHasXnn) {
        if (x.dtype() == DType::F32) {
            xnn::unary_f32(K::kXnn, x.data<float>(), y.data<float>(), static_cast<size_t>(x.numel()),
                           ctx.pool());
            return;
        }
    }
    map_float(ctx.pool(), x, y, [](const float *in, float *out, size_t n) {
        for (size_t i = 0; i < n; ++i) out[i] = K::f(in[i]);
    });
}

// Float ops that are also defined for signed integers (K::i).
template <typename K> void run_signed_unary(RunContext &ctx) {
    const Tensor &x = ctx.input(0);
    if (is_float(x.dtype())) return run_float_unary<K>(ctx);
    Tensor &y = ctx.alloc_output(0);
    dispatch_int(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T *a = x.data<T>();
        T *b = y.data<T>();
        parallel_for(ctx.pool(), static_cast<size_t>(x.numel()), kElementwiseTile, [&](size_t s, size_t e) {
            for (size_t i = s; i < e; ++i) b[i] = K::i(a[i]);
        });
    });
}

struct NoXnn {
    static constexpr bool kHasXnn = false;
};
template <xnn::Unary U> struct WithXnn {
    static constexpr bool kHasXnn = true;
    static constexpr xnn::Unary kXnn = U;
};

// Not XNNPACK's: its 2024-11 float32 square root returns NaN for +inf.
struct SqrtK : NoXnn {
    static float f(float x) { return std::sqrt(x); }
};
struct NegK : WithXnn<xnn::Unary::Negate> {
    static float f(float x) { return -x; }
    template <typename T> static T i(T x) { return wrap_neg(x); }
};
struct AbsK : WithXnn<xnn::Unary::Abs> {
    static float f(float x) { return std::fabs(x); }
    template <typename T> static T i(T x) { return x < 0 ? wrap_neg(x) : x; }
};
struct SignK : NoXnn {
    static float f(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : (x == 0.0f ? 0.0f : x)); }
    template <typename T> static T i(T x) { return static_cast<T>((x > 0) - (x < 0)); }
};
struct FloorK : WithXnn<xnn::Unary::Floor> {
    static float f(float x) { return std::floor(x); }
};
struct CeilK : WithXnn<xnn::Unary::Ceiling> {
    static float f(float x) { return std::ceil(x); }
};
// ONNX Round is round-half-to-even, which nearbyint does in the default rounding mode.
struct RoundK : WithXnn<xnn::Unary::RoundEven> {
    static float f(float x) { return std::nearbyint(x); }
};
struct ExpK : NoXnn {
    static float f(float x) { return std::exp(x); }
};
struct LogK : NoXnn {
    static float f(float x) { return std::log(x); }
};
struct ErfK : NoXnn {
    static float f(float x) { return std::erf(x); }
};
struct SinK : NoXnn {
    static float f(float x) { return std::sin(x); }
};
struct CosK : NoXnn {
    static float f(float x) { return std::cos(x); }
};
struct TanhK : NoXnn {
    static float f(float x) { return std::tanh(x); }
};
struct ReciprocalK : NoXnn {
    static float f(float x) { return 1.0f / x; }
};

std::vector<TensorInfo> infer_float_predicate(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    ctx.require_dtype(0, kFloatTypes);
    return {TensorInfo{DType::Bool, ctx.input(0).shape, {}}};
}

template <typename Pred> void float_predicate(RunContext &ctx, Pred pred) {
    const Tensor &x = ctx.input(0);
    Tensor &out = ctx.alloc_output(0);
    uint8_t *y = out.data<uint8_t>();
    const size_t n = static_cast<size_t>(x.numel());
    if (x.dtype() == DType::F32) {
        const float *a = x.data<float>();
        parallel_for(ctx.pool(), n, kElementwiseTile, [&](size_t b, size_t e) {
            for (size_t i = b; i < e; ++i) y[i] = pred(a[i]);
        });
    } else {
        const uint16_t *a = x.data<uint16_t>();
        parallel_for(ctx.pool(), n, kElementwiseTile, [&](size_t b, size_t e) {
            for (size_t i = b; i < e; ++i) y[i] = pred(half_to_float(a[i]));
        });
    }
}

void run_isnan(RunContext &ctx) {
    float_predicate(ctx, [](float v) -> uint8_t { return v != v; });
}

std::vector<TensorInfo> infer_isinf(const InferContext &ctx) {
    for (const char *key : {"detect_negative", "detect_positive"}) {
        int64_t v = ctx.attrs().get_int(key, 1);
        if (v != 0 && v != 1) ctx.error("attribute ", key, " is ", v, ", expected 0 or 1");
    }
    return infer_float_predicate(ctx);
}

void run_isinf(RunContext &ctx) {
    const bool neg = ctx.attrs().get_int("detect_negative", 1) != 0;
    const bool pos = ctx.attrs().get_int("detect_positive", 1) != 0;
    float_predicate(
        ctx, [neg, pos](float v) -> uint8_t { return (pos && v == INFINITY) || (neg && v == -INFINITY); });
}

// ---------------------------------------------------------------------------------------------------------
// Cast CastLike Identity

// ONNX TensorProto element type numbers.
bool dtype_from_onnx(int64_t to, DType &out) {
    switch (to) {
    case 1: out = DType::F32; return true;
    case 10: out = DType::F16; return true;
    case 7: out = DType::I64; return true;
    case 6: out = DType::I32; return true;
    case 2: out = DType::U8; return true;
    case 3: out = DType::I8; return true;
    case 9: out = DType::Bool; return true;
    default: return false;
    }
}

std::vector<TensorInfo> infer_cast(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    ctx.require_dtype(0, kAllTypes);
    int64_t to = ctx.attrs().require_int("to");
    DType dtype;
    if (!dtype_from_onnx(to, dtype)) {
        if (to >= 1 && to <= 26)
            fail(ONNXSTREAM_ERR_UNSUPPORTED, ctx.node.where, ": cast to ONNX element type ", to,
                 " is not supported; supported: 1 (float), 10 (float16), 7 (int64), 6 (int32), 2 (uint8), "
                 "3 (int8), 9 (bool)");
        ctx.error("attribute to is ", to, ", which is not an ONNX TensorProto element type");
    }
    return {TensorInfo{dtype, ctx.input(0).shape, {}}};
}

std::vector<TensorInfo> infer_cast_like(const InferContext &ctx) {
    ctx.require_inputs(2, 2);
    ctx.require_dtype(0, kAllTypes);
    ctx.require_dtype(1, kAllTypes);
    return {TensorInfo{ctx.input(1).dtype, ctx.input(0).shape, {}}};
}

struct HalfTag {};

template <typename D, typename S> D convert_value(S v) {
    if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>)
        return float_to_int<D>(double(v));
    else
        return static_cast<D>(v);
}

// Convert n elements from src (type S, or float16 when S is HalfTag) to dst (type D / HalfTag).
template <typename S, typename D> void convert_range(const void *src, void *dst, size_t n, bool to_bool) {
    constexpr size_t kChunk = 1024;
    float buf[kChunk];
    for (size_t i = 0; i < n; i += kChunk) {
        const size_t len = std::min(kChunk, n - i);
        // Stage through float32 when either side is float16.
        if constexpr (std::is_same_v<S, HalfTag> || std::is_same_v<D, HalfTag>) {
            if constexpr (std::is_same_v<S, HalfTag>) {
                half_to_float_n(static_cast<const uint16_t *>(src) + i, buf, len);
            } else {
                const S *s = static_cast<const S *>(src) + i;
                for (size_t j = 0; j < len; ++j) buf[j] = static_cast<float>(s[j]);
            }
            if constexpr (std::is_same_v<D, HalfTag>) {
                float_to_half_n(buf, static_cast<uint16_t *>(dst) + i, len);
            } else {
                D *d = static_cast<D *>(dst) + i;
                if (to_bool)
                    for (size_t j = 0; j < len; ++j) d[j] = buf[j] != 0.0f;
                else
                    for (size_t j = 0; j < len; ++j) d[j] = convert_value<D>(buf[j]);
            }
        } else {
            const S *s = static_cast<const S *>(src) + i;
            D *d = static_cast<D *>(dst) + i;
            if (to_bool)
                for (size_t j = 0; j < len; ++j) d[j] = s[j] != 0;
            else
                for (size_t j = 0; j < len; ++j) d[j] = convert_value<D>(s[j]);
        }
    }
}

template <typename Fn> void dispatch_storage(DType d, Fn &&fn) {
    switch (d) {
    case DType::F32: fn(float{}); return;
    case DType::F16: fn(HalfTag{}); return;
    default: dispatch_int(d, std::forward<Fn>(fn));
    }
}

void cast_into(RunContext &ctx, DType to) {
    const Tensor &x = ctx.input(0);
    if (x.dtype() == to) {
        ctx.set_output(0, x);
        return;
    }
    Tensor &out = ctx.alloc_output(0);
    const bool to_bool = to == DType::Bool;
    const size_t in_size = dtype_size(x.dtype()), out_size = dtype_size(to);
    const char *src = static_cast<const char *>(x.raw());
    char *dst = static_cast<char *>(out.raw());
    dispatch_storage(x.dtype(), [&](auto stag) {
        dispatch_storage(to, [&](auto dtag) {
            using S = decltype(stag);
            using D = decltype(dtag);
            parallel_for(ctx.pool(), static_cast<size_t>(x.numel()), kElementwiseTile,
                         [&](size_t b, size_t e) {
                             convert_range<S, D>(src + b * in_size, dst + b * out_size, e - b, to_bool);
                         });
        });
    });
}

void run_cast(RunContext &ctx) { cast_into(ctx, ctx.output_info(0).dtype); }

std::vector<TensorInfo> infer_identity(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    const TensorInfo &in = ctx.input(0);
    return {TensorInfo{in.dtype, in.shape, {}}};
}

void run_identity(RunContext &ctx) { ctx.set_output(0, ctx.input(0)); }

} // namespace

void register_elementwise_ops(Registry &r) {
    // Two inputs, output i from input element i: safe to write over a dying same-shaped input.
    for (const auto &[name, run] : {std::pair<const char *, RunFn>{"Add", run_binary_arith<AddOp>},
                                    {"Sub", run_binary_arith<SubOp>}, {"Mul", run_binary_arith<MulOp>},
                                    {"Div", run_binary_arith<DivOp>}}) {
        r.add(name, infer_binary_arith, run).with_output_may_reuse_input();
    }
    r.add("Sum", infer_variadic_numeric, run_binary_arith<AddOp>);
    r.add("Mean", infer_variadic_float, run_mean);
    r.add("Min", infer_variadic_numeric, run_binary_arith<MinOp>);
    r.add("Max", infer_variadic_numeric, run_binary_arith<MaxOp>);
    r.add("Pow", infer_pow, run_pow);
    r.add("Mod", infer_mod, run_mod);

    r.add("Equal", infer_compare, run_compare<EqualCmp>);
    r.add("Less", infer_compare, run_compare<LessCmp>);
    r.add("Greater", infer_compare, run_compare<GreaterCmp>);
    r.add("LessOrEqual", infer_compare, run_compare<LessEqualCmp>);
    r.add("GreaterOrEqual", infer_compare, run_compare<GreaterEqualCmp>);
    r.add("And", infer_logical, run_logical<AndOp>);
    r.add("Or", infer_logical, run_logical<OrOp>);
    r.add("Xor", infer_logical, run_logical<XorOp>);
    r.add("Not", infer_not, run_not);
    r.add("Where", infer_where, run_where);

    r.add("Sqrt", infer_float_unary, run_float_unary<SqrtK>);
    r.add("Neg", infer_signed_unary, run_signed_unary<NegK>);
    r.add("Abs", infer_signed_unary, run_signed_unary<AbsK>);
    r.add("Sign", infer_signed_unary, run_signed_unary<SignK>);
    r.add("Exp", infer_float_unary, run_float_unary<ExpK>);
    r.add("Log", infer_float_unary, run_float_unary<LogK>);
    r.add("Erf", infer_float_unary, run_float_unary<ErfK>);
    r.add("Sin", infer_float_unary, run_float_unary<SinK>);
    r.add("Cos", infer_float_unary, run_float_unary<CosK>);
    r.add("Tanh", infer_float_unary, run_float_unary<TanhK>);
    r.add("Reciprocal", infer_float_unary, run_float_unary<ReciprocalK>);
    r.add("Floor", infer_float_unary, run_float_unary<FloorK>);
    r.add("Ceil", infer_float_unary, run_float_unary<CeilK>);
    r.add("Round", infer_float_unary, run_float_unary<RoundK>);
    r.add("IsNaN", infer_float_predicate, run_isnan);
    r.add("IsInf", infer_isinf, run_isinf);

    r.add("Cast", infer_cast, run_cast);
    r.add("CastLike", infer_cast_like, [](RunContext &ctx) { cast_into(ctx, ctx.output_info(0).dtype); });
    r.add("Identity", infer_identity, run_identity);
}

} // namespace onnxstream

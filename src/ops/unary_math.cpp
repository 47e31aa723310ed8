// Element-wise math functions (Sqrt, Neg, Abs, Sign, Exp, Log, Erf, Sin, Cos, Tanh, Reciprocal, Floor, Ceil,
// Round) and the predicates IsNaN and IsInf. float16 is computed in float32, float64 in double. XNNPACK
// computes the float32 functions
// whose kernels keep NaN (abs, negate, floor, ceil, round); the others are plain loops.
#include "ops/elementwise.h"

#include <cmath>

#include "ops/elementwise_int.h"
#include "ops/registry.h"
#include "tensor/half.h"
#include "xnnpack/elementwise.h"

namespace onnxstream {

namespace {

std::vector<TensorInfo> infer_float_unary(const InferContext &ctx) {
    return infer_same_as_input(ctx, kAnyFloatTypes);
}
std::vector<TensorInfo> infer_signed_unary(const InferContext &ctx) {
    return infer_same_as_input(ctx, {DType::F32, DType::F16, DType::F64, DType::I64, DType::I32, DType::I16,
                                     DType::I8});
}

template <typename K> void run_double_unary(RunContext &ctx) {
    const Tensor &x = ctx.input(0);
    Tensor &y = ctx.alloc_output(0);
    const double *a = x.data<double>();
    double *b = y.data<double>();
    parallel_for(ctx.pool(), static_cast<size_t>(x.numel()), kElementwiseTile, [&](size_t s, size_t e) {
        for (size_t i = s; i < e; ++i) b[i] = K::f(a[i]);
    });
}

// K::f is the float function; K::kXnn names an XNNPACK kernel computing the same, when K::kHasXnn.
template <typename K> void run_float_unary(RunContext &ctx) {
    const Tensor &x = ctx.input(0);
    if (x.dtype() == DType::F64) return run_double_unary<K>(ctx);
    Tensor &y = ctx.alloc_output(0);
    if constexpr (K::kHasXnn) {
        if (x.dtype() == DType::F32) {
            xnn::unary_f32(K::kXnn, x.data<float>(), y.data<float>(), static_cast<size_t>(x.numel()),
                           ctx.pool());
            return;
        }
    }
    map_float(ctx.pool(), x, y, [](const float *in, float *out, size_t n) {
        for (size_t i = 0; i < n; ++i) out[i] = K::template f<float>(in[i]);
    });
}

// Float ops that are also defined for signed integers (K::i).
template <typename K> void run_signed_unary(RunContext &ctx) {
    const Tensor &x = ctx.input(0);
    if (is_float(x.dtype()) || x.dtype() == DType::F64) return run_float_unary<K>(ctx);
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
    template <typename T> static T f(T x) { return std::sqrt(x); }
};
struct NegK : WithXnn<xnn::Unary::Negate> {
    template <typename T> static T f(T x) { return -x; }
    template <typename T> static T i(T x) { return wrap_neg(x); }
};
struct AbsK : WithXnn<xnn::Unary::Abs> {
    template <typename T> static T f(T x) { return std::fabs(x); }
    template <typename T> static T i(T x) { return x < 0 ? wrap_neg(x) : x; }
};
struct SignK : NoXnn {
    template <typename T> static T f(T x) { return x > T(0) ? T(1) : (x < T(0) ? T(-1) : (x == T(0) ? T(0) : x)); }
    template <typename T> static T i(T x) { return static_cast<T>((x > 0) - (x < 0)); }
};
struct FloorK : WithXnn<xnn::Unary::Floor> {
    template <typename T> static T f(T x) { return std::floor(x); }
};
struct CeilK : WithXnn<xnn::Unary::Ceiling> {
    template <typename T> static T f(T x) { return std::ceil(x); }
};
// ONNX Round is round-half-to-even, which nearbyint does in the default rounding mode.
struct RoundK : WithXnn<xnn::Unary::RoundEven> {
    template <typename T> static T f(T x) { return std::nearbyint(x); }
};
struct ExpK : NoXnn {
    template <typename T> static T f(T x) { return std::exp(x); }
};
struct LogK : NoXnn {
    template <typename T> static T f(T x) { return std::log(x); }
};
struct ErfK : NoXnn {
    template <typename T> static T f(T x) { return std::erf(x); }
};
struct SinK : NoXnn {
    template <typename T> static T f(T x) { return std::sin(x); }
};
struct CosK : NoXnn {
    template <typename T> static T f(T x) { return std::cos(x); }
};
struct TanhK : NoXnn {
    template <typename T> static T f(T x) { return std::tanh(x); }
};
struct TanK : NoXnn {
    template <typename T> static T f(T x) { return std::tan(x); }
};
struct AsinK : NoXnn {
    template <typename T> static T f(T x) { return std::asin(x); }
};
struct AcosK : NoXnn {
    template <typename T> static T f(T x) { return std::acos(x); }
};
struct AtanK : NoXnn {
    template <typename T> static T f(T x) { return std::atan(x); }
};
struct SinhK : NoXnn {
    template <typename T> static T f(T x) { return std::sinh(x); }
};
struct CoshK : NoXnn {
    template <typename T> static T f(T x) { return std::cosh(x); }
};
struct AsinhK : NoXnn {
    template <typename T> static T f(T x) { return std::asinh(x); }
};
struct AcoshK : NoXnn {
    template <typename T> static T f(T x) { return std::acosh(x); }
};
struct AtanhK : NoXnn {
    template <typename T> static T f(T x) { return std::atanh(x); }
};
struct ReciprocalK : NoXnn {
    template <typename T> static T f(T x) { return T(1) / x; }
};

std::vector<TensorInfo> infer_float_predicate(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    ctx.require_dtype(0, kAnyFloatTypes);
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
    } else if (x.dtype() == DType::F64) {
        const double *a = x.data<double>();
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
    float_predicate(ctx, [](auto v) -> uint8_t { return v != v; });
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
        ctx, [neg, pos](auto v) -> uint8_t { return (pos && v == INFINITY) || (neg && v == -INFINITY); });
}

} // namespace

void register_unary_math_ops(Registry &r) {
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
    r.add("Tan", infer_float_unary, run_float_unary<TanK>);
    r.add("Asin", infer_float_unary, run_float_unary<AsinK>);
    r.add("Acos", infer_float_unary, run_float_unary<AcosK>);
    r.add("Atan", infer_float_unary, run_float_unary<AtanK>);
    r.add("Sinh", infer_float_unary, run_float_unary<SinhK>);
    r.add("Cosh", infer_float_unary, run_float_unary<CoshK>);
    r.add("Asinh", infer_float_unary, run_float_unary<AsinhK>);
    r.add("Acosh", infer_float_unary, run_float_unary<AcoshK>);
    r.add("Atanh", infer_float_unary, run_float_unary<AtanhK>);
    r.add("Reciprocal", infer_float_unary, run_float_unary<ReciprocalK>);
    r.add("Floor", infer_float_unary, run_float_unary<FloorK>);
    r.add("Ceil", infer_float_unary, run_float_unary<CeilK>);
    r.add("Round", infer_float_unary, run_float_unary<RoundK>);
    r.add("IsNaN", infer_float_predicate, run_isnan);
    r.add("IsInf", infer_isinf, run_isinf);
}

} // namespace onnxstream

// Add, Sub, Mul, Div, Min, Max, Sum, Mean, Pow and Mod with numpy broadcasting at any rank, through the
// parallel broadcast walk of ops/elementwise.h. float16 is computed in float32, float64 in double; integers
// are exact.
//
// Binary float32 arithmetic does not use XNNPACK's add/subtract/multiply/divide_nd: that build always applies
// its output clamp, whose max/min instructions turn NaN into -inf (0/0, inf-inf, NaN+1 all give -inf where
// ONNX Runtime gives NaN), and it runs a same-shape operation as a single task. The vectorised loops here
// are as fast on one thread and also split the work across the pool.
#include "ops/elementwise.h"

#include <cmath>
#include <cstring>
#include <utility>

#include "ops/elementwise_int.h"
#include "ops/registry.h"

namespace onnxstream {

namespace {

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
    dispatch_exact(out.dtype(), [&](auto tag) {
        using T = decltype(tag);
        std::vector<const T *> ptrs;
        for (size_t i = 0; i < n; ++i) ptrs.push_back(ctx.input(i).template data<T>());
        T *y = out.data<T>();
        fold_inputs<Op>(ctx.pool(), ptrs, shapes, y, out.shape());
        if constexpr (std::is_floating_point_v<T>) {
            if (mean) {
                const T count = static_cast<T>(n);
                for (int64_t i = 0; i < out.numel(); ++i) y[i] = y[i] / count;
            }
        }
    });
}

template <typename Op> void run_binary_arith(RunContext &ctx) { run_fold<Op>(ctx, false); }
void run_mean(RunContext &ctx) { run_fold<AddOp>(ctx, true); }

constexpr size_t kManyInputs = 1u << 20;

std::vector<TensorInfo> infer_binary_arith(const InferContext &ctx) {
    return infer_same_type_inputs(ctx, 2, 2, kNumericTypes);
}
std::vector<TensorInfo> infer_variadic_numeric(const InferContext &ctx) {
    return infer_same_type_inputs(ctx, 1, kManyInputs, kNumericTypes);
}
std::vector<TensorInfo> infer_variadic_float(const InferContext &ctx) {
    return infer_same_type_inputs(ctx, 1, kManyInputs, kAnyFloatTypes);
}

// ---------------------------------------------------------------------------------------------------------
// Pow Mod

std::vector<TensorInfo> infer_pow(const InferContext &ctx) {
    ctx.require_inputs(2, 2);
    ctx.require_dtype(0, {DType::F32, DType::F16, DType::F64, DType::I64, DType::I32});
    ctx.require_dtype(1, kNumericTypes);
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
            double e = expo.dtype() == DType::F64 ? expo.data<double>()[0]
                       : is_float(expo.dtype())   ? double(float_at(expo, 0))
                                                  : double(int_at(expo, 0));
            done = pow_f32_scalar(pool, xb.data<float>(), y, static_cast<size_t>(out.numel()), e);
        }
        if (!done) {
            if (is_float(expo.dtype())) {
                Tensor xe = to_f32(ctx, expo);
                binary_broadcast(pool, out.shape(), xb.data<float>(), bs, xe.data<float>(), es, y, pow_f32);
            } else {
                // Integer (and float64) exponents go through double pow like ONNX Runtime's
                // std::pow(float, int64).
                dispatch_exact(expo.dtype(), [&](auto tag) {
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
    dispatch_exact(base.dtype(), [&](auto btag) {
        using T = decltype(btag);
        if (is_float(expo.dtype())) {
            Tensor xe = to_f32(ctx, expo);
            binary_broadcast(pool, out.shape(), base.data<T>(), bs, xe.data<float>(), es, out.data<T>(),
                             [](T a, float b) { return from_double<T>(std::pow(double(a), double(b))); });
        } else {
            dispatch_exact(expo.dtype(), [&](auto etag) {
                using E = decltype(etag);
                binary_broadcast(pool, out.shape(), base.data<T>(), bs, expo.data<E>(), es, out.data<T>(),
                                 [](T a, E b) {
                                     if constexpr (std::is_integral_v<T> && std::is_integral_v<E>)
                                         return int_pow<T, E>(a, b);
                                     else
                                         return from_double<T>(std::pow(double(a), double(b)));
                                 });
            });
        }
    });
}

std::vector<TensorInfo> infer_mod(const InferContext &ctx) {
    auto out = infer_same_type_inputs(ctx, 2, 2, kNumericTypes);
    int64_t fmod = ctx.attrs().get_int("fmod", 0);
    if (fmod != 0 && fmod != 1) ctx.error("attribute fmod is ", fmod, ", expected 0 or 1");
    if (fmod == 0 && (is_float(out[0].dtype) || out[0].dtype == DType::F64))
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
    dispatch_exact(out.dtype(), [&](auto tag) {
        using T = decltype(tag);
        binary_broadcast(ctx.pool(), out.shape(), a.data<T>(), a.shape(), b.data<T>(), b.shape(),
                         out.data<T>(), [c_style](T x, T y) {
                             if constexpr (std::is_floating_point_v<T>)
                                 return std::fmod(x, y);
                             else
                                 return int_mod(x, y, c_style);
                         });
    });
}

} // namespace

void register_arithmetic_ops(Registry &r) {
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
}

} // namespace onnxstream

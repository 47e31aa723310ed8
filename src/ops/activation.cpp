// Activation functions. float32 goes to XNNPACK where it has the function (Sigmoid, LeakyRelu, Elu,
// HardSwish); the rest are plain parallel loops over float32, with float16 converted tile by tile
// (map_float). Relu and Clip also work on integers, exactly. NaN inputs give NaN as in ONNX Runtime, which is
// why Relu and Clip are loops rather than XNNPACK's clamp (it maps NaN to the lower bound).
#include <cmath>
#include <limits>
#include <string>

#include "ops/elementwise.h"
#include "ops/registry.h"
#include "ops/vector_math.h"
#include "xnnpack/elementwise.h"

namespace onnxstream {

namespace {

const std::initializer_list<DType> kFloatTypes = {DType::F32, DType::F16};

std::vector<TensorInfo> infer_float_act(const InferContext &ctx) {
    // Parse the float attributes these ops take now, so that a malformed value fails before the run.
    for (const char *key : {"alpha", "beta", "gamma"}) ctx.attrs().get_float(key, 0.0f);
    return infer_same_as_input(ctx, kFloatTypes);
}

// Runs a float32 XNNPACK kernel for F32 tensors, else the loop `fn` through map_float.
template <typename Xnn, typename Fn> void float_act(RunContext &ctx, bool use_xnn, Xnn xnn_fn, Fn fn) {
    const Tensor &x = ctx.input(0);
    Tensor &y = ctx.alloc_output(0);
    if (use_xnn && x.dtype() == DType::F32) {
        xnn_fn(x.data<float>(), y.data<float>(), static_cast<size_t>(x.numel()), ctx.pool());
        return;
    }
    map_float(ctx.pool(), x, y, fn);
}

template <typename Fn> void float_loop(RunContext &ctx, Fn fn) {
    const Tensor &x = ctx.input(0);
    Tensor &y = ctx.alloc_output(0);
    map_float(ctx.pool(), x, y, fn);
}

// Calls fn(T{}) with the storage type of an integer dtype (Relu and Clip on integers).
template <typename Fn> void dispatch_signed(DType d, Fn &&fn) {
    switch (d) {
    case DType::I64: fn(int64_t{}); return;
    case DType::I32: fn(int32_t{}); return;
    case DType::I8: fn(int8_t{}); return;
    case DType::U8: fn(uint8_t{}); return;
    default: fail(ONNXSTREAM_ERR_INTERNAL, "integer activation called for dtype ", dtype_name(d));
    }
}

// y = f(x) on an integer x, f generic over the storage type (Relu and Shrink).
template <typename F> void integer_map(RunContext &ctx, F &&f) {
    const Tensor &x = ctx.input(0);
    Tensor &y = ctx.alloc_output(0);
    dispatch_signed(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T *a = x.data<T>();
        T *b = y.data<T>();
        parallel_for(ctx.pool(), static_cast<size_t>(x.numel()), kElementwiseTile, [&](size_t s, size_t e) {
            for (size_t i = s; i < e; ++i) b[i] = f(a[i]);
        });
    });
}

// --------------------------------------------------------------------------------------------------------

void run_sigmoid(RunContext &ctx) {
    auto xnn_sigmoid = [](const float *in, float *out, size_t n, pthreadpool_t pool) {
        xnn::unary_f32(xnn::Unary::Sigmoid, in, out, n, pool);
    };
    float_act(ctx, true, xnn_sigmoid, [](const float *in, float *out, size_t n) {
        for (size_t i = 0; i < n; ++i) out[i] = 1.0f / (1.0f + std::exp(-in[i]));
    });
}

std::vector<TensorInfo> infer_relu(const InferContext &ctx) {
    return infer_same_as_input(ctx, {DType::F32, DType::F16, DType::I64, DType::I32, DType::I8});
}

void run_relu(RunContext &ctx) {
    const Tensor &x = ctx.input(0);
    if (is_float(x.dtype())) {
        float_loop(ctx, [](const float *in, float *out, size_t n) {
            for (size_t i = 0; i < n; ++i) out[i] = in[i] < 0.0f ? 0.0f : in[i];
        });
        return;
    }
    integer_map(ctx, [](auto v) { return v > 0 ? v : decltype(v)(0); });
}

void run_leaky_relu(RunContext &ctx) {
    const float alpha = ctx.attrs().get_float("alpha", 0.01f);
    auto xnn_lrelu = [alpha](const float *in, float *out, size_t n, pthreadpool_t pool) {
        xnn::leaky_relu_f32(in, out, n, alpha, pool);
    };
    float_act(ctx, std::isfinite(alpha), xnn_lrelu, [alpha](const float *in, float *out, size_t n) {
        for (size_t i = 0; i < n; ++i) out[i] = in[i] >= 0.0f ? in[i] : alpha * in[i];
    });
}

void run_elu(RunContext &ctx) {
    const float alpha = ctx.attrs().get_float("alpha", 1.0f);
    auto xnn_elu = [alpha](const float *in, float *out, size_t n, pthreadpool_t pool) {
        xnn::elu_f32(in, out, n, alpha, pool);
    };
    // XNNPACK's ELU takes positive normal alphas only; others (0, negative) use the loop.
    float_act(ctx, alpha > 0.0f && std::isnormal(alpha), xnn_elu,
              [alpha](const float *in, float *out, size_t n) {
                  for (size_t i = 0; i < n; ++i) out[i] = in[i] >= 0.0f ? in[i] : alpha * std::expm1(in[i]);
              });
}

void run_selu(RunContext &ctx) {
    const float alpha = ctx.attrs().get_float("alpha", 1.67326319217681884765625f);
    const float gamma = ctx.attrs().get_float("gamma", 1.05070102214813232421875f);
    float_loop(ctx, [alpha, gamma](const float *in, float *out, size_t n) {
        for (size_t i = 0; i < n; ++i) out[i] = gamma * (in[i] > 0.0f ? in[i] : alpha * std::expm1(in[i]));
    });
}

void run_celu(RunContext &ctx) {
    const float alpha = ctx.attrs().get_float("alpha", 1.0f);
    float_loop(ctx, [alpha](const float *in, float *out, size_t n) {
        for (size_t i = 0; i < n; ++i) {
            float v = in[i], neg = alpha * std::expm1(v / alpha);
            out[i] = v != v ? v : (v > 0.0f ? v : 0.0f) + (neg < 0.0f ? neg : 0.0f);
        }
    });
}

std::vector<TensorInfo> infer_gelu(const InferContext &ctx) {
    std::string approximate = ctx.attrs().get_string("approximate", "none");
    if (approximate != "none" && approximate != "tanh")
        ctx.error("attribute approximate is '", approximate, "', expected 'none' or 'tanh'");
    return infer_float_act(ctx);
}

void run_gelu(RunContext &ctx) {
    if (ctx.attrs().get_string("approximate", "none") == "tanh") {
        float_loop(ctx, [](const float *in, float *out, size_t n) {
            const float k = 0.7978845608028654f; // sqrt(2 / pi)
            for (size_t i = 0; i < n; ++i) {
                float v = in[i];
                out[i] = 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
            }
        });
        return;
    }
    float_loop(ctx, [](const float *in, float *out, size_t n) { vmath::gelu_erf(in, out, n); });
}

// Swish (ONNX opset 24), also what the importer writes for SiLU, x * Sigmoid(x), and QuickGELU,
// x * Sigmoid(1.702 x): one pass instead of two or three.
void run_swish(RunContext &ctx) {
    const float alpha = ctx.attrs().get_float("alpha", 1.0f);
    float_loop(ctx, [alpha](const float *in, float *out, size_t n) { vmath::swish(in, out, n, alpha); });
}

void run_hard_sigmoid(RunContext &ctx) {
    const float alpha = ctx.attrs().get_float("alpha", 0.2f);
    const float beta = ctx.attrs().get_float("beta", 0.5f);
    float_loop(ctx, [alpha, beta](const float *in, float *out, size_t n) {
        for (size_t i = 0; i < n; ++i) {
            float v = alpha * in[i] + beta;
            v = v < 0.0f ? 0.0f : v;
            out[i] = v > 1.0f ? 1.0f : v;
        }
    });
}

void run_hard_swish(RunContext &ctx) {
    auto xnn_hswish = [](const float *in, float *out, size_t n, pthreadpool_t pool) {
        xnn::unary_f32(xnn::Unary::HardSwish, in, out, n, pool);
    };
    float_act(ctx, true, xnn_hswish, [](const float *in, float *out, size_t n) {
        for (size_t i = 0; i < n; ++i) out[i] = in[i] * std::max(0.0f, std::min(1.0f, in[i] / 6.0f + 0.5f));
    });
}

// log(1 + exp(x)) without overflow for large x or loss of precision for very negative x.
inline float softplus(float v) { return v > 0.0f ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v)); }

void run_softplus(RunContext &ctx) {
    float_loop(ctx, [](const float *in, float *out, size_t n) {
        for (size_t i = 0; i < n; ++i) out[i] = softplus(in[i]);
    });
}

void run_softsign(RunContext &ctx) {
    float_loop(ctx, [](const float *in, float *out, size_t n) {
        for (size_t i = 0; i < n; ++i) out[i] = in[i] / (1.0f + std::fabs(in[i]));
    });
}

void run_mish(RunContext &ctx) {
    float_loop(ctx, [](const float *in, float *out, size_t n) {
        for (size_t i = 0; i < n; ++i) out[i] = in[i] * std::tanh(softplus(in[i]));
    });
}

void run_thresholded_relu(RunContext &ctx) {
    const float alpha = ctx.attrs().get_float("alpha", 1.0f);
    float_loop(ctx, [alpha](const float *in, float *out, size_t n) {
        for (size_t i = 0; i < n; ++i) out[i] = in[i] > alpha ? in[i] : 0.0f;
    });
}

// Shrink: x + bias below -lambd, x - bias above lambd, 0 between. Integers compute in float and truncate toward
// zero, as ONNX Runtime does.
std::vector<TensorInfo> infer_shrink(const InferContext &ctx) {
    ctx.attrs().get_float("bias", 0.0f);
    ctx.attrs().get_float("lambd", 0.5f);
    return infer_same_as_input(ctx, {DType::F32, DType::F16, DType::I64, DType::I32, DType::I8, DType::U8});
}

void run_shrink(RunContext &ctx) {
    const float bias = ctx.attrs().get_float("bias", 0.0f), lambd = ctx.attrs().get_float("lambd", 0.5f);
    const Tensor &x = ctx.input(0);
    if (is_float(x.dtype())) {
        float_loop(ctx, [bias, lambd](const float *in, float *out, size_t n) {
            for (size_t i = 0; i < n; ++i)
                out[i] = in[i] < -lambd ? in[i] + bias : in[i] > lambd ? in[i] - bias : 0.0f;
        });
        return;
    }
    integer_map(ctx, [bias, lambd](auto a) {
        using T = decltype(a);
        const float v = static_cast<float>(a);
        return v < -lambd ? static_cast<T>(v + bias) : v > lambd ? static_cast<T>(v - bias) : T(0);
    });
}

// --------------------------------------------------------------------------------------------------------
// PRelu: the slope broadcasts unidirectionally to X (per channel (C,1,1) in NCHW models).

std::vector<TensorInfo> infer_prelu(const InferContext &ctx) {
    ctx.require_inputs(2, 2);
    ctx.require_dtype(0, kFloatTypes);
    const TensorInfo &x = ctx.input(0), &slope = ctx.input(1);
    if (slope.dtype != x.dtype)
        ctx.error("slope has dtype ", dtype_name(slope.dtype), " but X has ", dtype_name(x.dtype),
                  "; they must match");
    if (!broadcasts_to(slope.shape, x.shape))
        ctx.error("slope of shape ", shape_str(slope.shape), " does not broadcast to X of shape ",
                  shape_str(x.shape));
    return {TensorInfo{x.dtype, x.shape, {}}};
}

void run_prelu(RunContext &ctx) {
    const Tensor &x = ctx.input(0), &slope = ctx.input(1);
    Tensor &out = ctx.alloc_output(0);
    if (out.numel() == 0) return;
    Tensor xf = to_f32(ctx, x), sf = to_f32(ctx, slope);
    Tensor acc = out.dtype() == DType::F32 ? out : ctx.scratch(DType::F32, out.shape());
    binary_broadcast(ctx.pool(), out.shape(), xf.data<float>(), x.shape(), sf.data<float>(), slope.shape(),
                     acc.data<float>(), [](float v, float s) { return v < 0.0f ? v * s : v; });
    store_f32(ctx.pool(), acc.data<float>(), out);
}

// --------------------------------------------------------------------------------------------------------
// Clip: bounds from attributes min/max (opset 6) or from optional scalar inputs 1 and 2 (opset 11+).

std::vector<TensorInfo> infer_clip(const InferContext &ctx) {
    ctx.require_inputs(1, 3);
    ctx.require_dtype(0, {DType::F32, DType::F16, DType::I64, DType::I32, DType::U8, DType::I8});
    const TensorInfo &x = ctx.input(0);
    for (size_t i = 1; i < 3; ++i) {
        if (!ctx.has_input(i)) continue;
        const TensorInfo &b = ctx.input(i);
        const char *name = i == 1 ? "min" : "max";
        if (b.dtype != x.dtype)
            ctx.error(name, " input has dtype ", dtype_name(b.dtype), " but the input has ",
                      dtype_name(x.dtype), "; they must match");
        if (shape_numel(b.shape) != 1)
            ctx.error(name, " input has shape ", shape_str(b.shape), ", expected a scalar");
    }
    if (!is_float(x.dtype) && (ctx.attrs().has("min") || ctx.attrs().has("max")))
        ctx.error("min/max attributes (Clip-6) apply to float inputs only, got ", dtype_name(x.dtype));
    // Parse the attributes now so that a malformed value fails before the run.
    ctx.attrs().get_float("min", 0.0f);
    ctx.attrs().get_float("max", 0.0f);
    return {TensorInfo{x.dtype, x.shape, {}}};
}

void run_clip(RunContext &ctx) {
    const Tensor &x = ctx.input(0);
    if (is_float(x.dtype())) {
        float lo = ctx.attrs().get_float("min", -INFINITY), hi = ctx.attrs().get_float("max", INFINITY);
        if (ctx.has_input(1)) lo = float_at(ctx.input(1), 0);
        if (ctx.has_input(2)) hi = float_at(ctx.input(2), 0);
        // max(x, lo) then min(., hi), as ONNX Runtime: lo > hi gives hi everywhere.
        float_loop(ctx, [lo, hi](const float *in, float *out, size_t n) {
            for (size_t i = 0; i < n; ++i) {
                float v = in[i] < lo ? lo : in[i];
                out[i] = v > hi ? hi : v;
            }
        });
        return;
    }
    Tensor &y = ctx.alloc_output(0);
    dispatch_signed(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
        if (ctx.has_input(1)) lo = ctx.input(1).template data<T>()[0];
        if (ctx.has_input(2)) hi = ctx.input(2).template data<T>()[0];
        const T *a = x.data<T>();
        T *b = y.data<T>();
        parallel_for(ctx.pool(), static_cast<size_t>(x.numel()), kElementwiseTile, [&](size_t s, size_t e) {
            for (size_t i = s; i < e; ++i) {
                T v = a[i] < lo ? lo : a[i];
                b[i] = v > hi ? hi : v;
            }
        });
    });
}

} // namespace

void register_activation_ops(Registry &r) {
    r.add("Sigmoid", infer_float_act, run_sigmoid).with_output_may_reuse_input(); // elementwise
    r.add("Relu", infer_relu, run_relu);
    r.add("LeakyRelu", infer_float_act, run_leaky_relu);
    r.add("Elu", infer_float_act, run_elu);
    r.add("Selu", infer_float_act, run_selu);
    r.add("Celu", infer_float_act, run_celu);
    r.add("Gelu", infer_gelu, run_gelu);
    r.add("Swish", infer_float_act, run_swish).with_output_may_reuse_input(); // elementwise
    r.add("HardSigmoid", infer_float_act, run_hard_sigmoid);
    r.add("HardSwish", infer_float_act, run_hard_swish);
    r.add("Softplus", infer_float_act, run_softplus);
    r.add("Softsign", infer_float_act, run_softsign);
    r.add("Mish", infer_float_act, run_mish);
    r.add("ThresholdedRelu", infer_float_act, run_thresholded_relu);
    r.add("Shrink", infer_shrink, run_shrink);
    r.add("PRelu", infer_prelu, run_prelu);
    r.add("Clip", infer_clip, run_clip);
}

} // namespace onnxstream

// BatchNormalization (inference), InstanceNormalization, LayerNormalization, GroupNormalization, Softmax,
// LogSoftmax, Hardmax and LpNormalization. Statistics accumulate in double (shifted by the row's first value,
// so one pass gives an accurate variance); softmax over the innermost axis runs on XNNPACK, other axes
// through loops vectorised across the inner dimension.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "ops/registry.h"
#include "ops/vector_math.h"
#include "tensor/half.h"
#include "xnnpack/matmul.h"

namespace onnxstream {

namespace {

// ---------------------------------------------------------------------------------------------------------
// Helpers

// The f32 form of a float tensor: itself, or a converted f16 copy.
Tensor as_f32(const RunContext &ctx, const Tensor &t) {
    if (t.dtype() == DType::F32) return t;
    Tensor f = ctx.scratch(DType::F32, t.shape());
    half_to_float_n(t.data<uint16_t>(), f.data<float>(), static_cast<size_t>(t.numel()));
    return f;
}

// Where an op writes its f32 result: the output itself, or scratch converted by finish_f32().
Tensor f32_target(RunContext &ctx, size_t k) {
    Tensor &out = ctx.alloc_output(k);
    return out.dtype() == DType::F32 ? out : ctx.scratch(DType::F32, out.shape());
}

void finish_f32(RunContext &ctx, size_t k, const Tensor &result) {
    Tensor &out = ctx.output(k);
    if (out.dtype() == DType::F16)
        float_to_half_n(result.data<float>(), out.data<uint16_t>(), static_cast<size_t>(out.numel()));
}

// Small per-channel parameters (any float dtype) as floats.
std::vector<float> float_values(const Tensor &t) {
    std::vector<float> v(static_cast<size_t>(t.numel()));
    if (t.dtype() == DType::F32)
        std::memcpy(v.data(), t.raw(), v.size() * sizeof(float));
    else
        for (size_t i = 0; i < v.size(); ++i) v[i] = float_at(t, static_cast<int64_t>(i));
    return v;
}

int64_t normalize_axis(const InferContext &ctx, int64_t axis, size_t rank, const char *name = "axis") {
    int64_t r = static_cast<int64_t>(rank);
    if (axis < -r || axis >= r) ctx.error(name, " ", axis, " is out of range for rank ", rank);
    return axis < 0 ? axis + r : axis;
}

int64_t prod(const Shape &s, size_t begin, size_t end) {
    int64_t n = 1;
    for (size_t i = begin; i < end; ++i) n *= s[i];
    return n;
}

// Mean and population variance of n floats, one pass: accumulating x - x[0] in double keeps the
// E[x^2] - E[x]^2 cancellation harmless for float data.
void mean_var(const float *x, int64_t n, double &mean, double &var) {
    if (n == 0) {
        mean = var = 0;
        return;
    }
    const float shift = x[0];
    double s1[4] = {0, 0, 0, 0}, s2[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int j = 0; j < 4; ++j) {
            double d = static_cast<double>(x[i + j] - shift);
            s1[j] += d;
            s2[j] += d * d;
        }
    double a = 0, b = 0;
    for (; i < n; ++i) {
        double d = static_cast<double>(x[i] - shift);
        a += d;
        b += d * d;
    }
    for (int j = 0; j < 4; ++j) {
        a += s1[j];
        b += s2[j];
    }
    double m = a / static_cast<double>(n);
    mean = m + shift;
    var = std::max(0.0, b / static_cast<double>(n) - m * m);
}

// y = x * a + b over n floats.
inline void scale_shift(const float *x, float *y, int64_t n, float a, float b) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * a + b;
}

// exp(x) for x in [-87, 88] to ~1 ulp, as plain arithmetic the compiler vectorises (std::exp is a call).
// Callers clamp first, in a separate loop: a comparison here keeps GCC from vectorising under the
// default -ftrapping-math.
inline float exp_clamped(float x) {
    float t = x * 1.44269504088896341f + 12582912.0f; // round(x / ln2) in t's low mantissa bits
    float n = t - 12582912.0f;
    int32_t ti;
    std::memcpy(&ti, &t, sizeof ti);
    float r = x - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500E-4f;
    p = p * r + 1.3981999507E-3f;
    p = p * r + 8.3334519073E-3f;
    p = p * r + 4.1665795894E-2f;
    p = p * r + 1.6666665459E-1f;
    p = p * r + 5.0000001201E-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = (ti - 0x4B400000 + 127) * (1 << 23);
    float s;
    std::memcpy(&s, &bits, sizeof s);
    return p * s;
}

inline float clamp_exp_arg(float v) {
    v = v < -87.0f ? -87.0f : v;
    return v > 88.0f ? 88.0f : v;
}

// ---------------------------------------------------------------------------------------------------------
// BatchNormalization: y = (x - mean) / sqrt(var + eps) * scale + bias, per channel (axis 1). In training mode
// (opset 14+) mean and var are the batch's own (population variance over N and the spatial axes), and the
// optional outputs 1 and 2 are the running statistics input * momentum + batch * (1 - momentum).

std::vector<TensorInfo> infer_batchnorm(const InferContext &ctx) {
    ctx.require_inputs(5, 5);
    ctx.require_dtype(0, {DType::F32, DType::F16});
    const TensorInfo &x = ctx.input(0);
    const int64_t training = ctx.attrs().get_int("training_mode", 0);
    if (training != 0 && training != 1) ctx.error("training_mode is ", training, ", expected 0 or 1");
    if (ctx.output_count() > (training ? 3u : 1u))
        fail(ONNXSTREAM_ERR_UNSUPPORTED, ctx.node.where, ": ", ctx.output_count(), " outputs; ",
             training ? "training mode has Y, running_mean and running_var (opset 14+)"
                      : "inference has only Y");
    if (x.shape.size() < 2) ctx.error("X must have rank >= 2 (N, C, ...), got ", shape_str(x.shape));
    int64_t c = x.shape[1];
    const char *names[] = {"", "scale", "B", "input_mean", "input_var"};
    for (size_t i = 1; i < 5; ++i) {
        ctx.require_dtype(i, {DType::F32, DType::F16});
        if (ctx.input(i).shape != Shape{c})
            ctx.error(names[i], " has shape ", shape_str(ctx.input(i).shape), ", expected (", c, ")");
    }
    std::vector<TensorInfo> out{TensorInfo{x.dtype, x.shape, {}}};
    for (size_t k = 1; k < ctx.output_count(); ++k) out.push_back(TensorInfo{ctx.input(2 + k).dtype, {c}, {}});
    return out;
}

// Training mode's batch statistics: per channel, the mean and population variance over N and the plane.
void batch_statistics(const RunContext &ctx, const float *x, int64_t n, int64_t c, int64_t plane,
                      std::vector<double> &mean, std::vector<double> &var) {
    mean.assign(static_cast<size_t>(c), 0.0);
    var.assign(static_cast<size_t>(c), 0.0);
    parallel_for(ctx.pool(), static_cast<size_t>(c), 1, [&](size_t begin, size_t end) {
        for (size_t ch = begin; ch < end; ++ch) {
            double s = 0, s2 = 0;
            for (int64_t i = 0; i < n; ++i) {
                const float *p = x + (i * c + static_cast<int64_t>(ch)) * plane;
                for (int64_t j = 0; j < plane; ++j) s += p[j];
            }
            const double count = static_cast<double>(n * plane), m = count > 0 ? s / count : 0.0;
            for (int64_t i = 0; i < n; ++i) {
                const float *p = x + (i * c + static_cast<int64_t>(ch)) * plane;
                for (int64_t j = 0; j < plane; ++j) s2 += (p[j] - m) * (p[j] - m);
            }
            mean[ch] = m;
            var[ch] = count > 0 ? s2 / count : 0.0;
        }
    });
}

void run_batchnorm(RunContext &ctx) {
    Tensor x = as_f32(ctx, ctx.input(0));
    Tensor y = f32_target(ctx, 0);
    float eps = ctx.attrs().get_float("epsilon", 1e-5f);
    std::vector<float> scale = float_values(ctx.input(1)), bias = float_values(ctx.input(2)),
                       mean = float_values(ctx.input(3)), var = float_values(ctx.input(4));
    int64_t n = x.dim(0), c = x.dim(1), plane = prod(x.shape(), 2, x.rank());
    if (ctx.attrs().get_int("training_mode", 0) != 0) {
        std::vector<double> bmean, bvar;
        batch_statistics(ctx, x.data<float>(), n, c, plane, bmean, bvar);
        const double momentum = ctx.attrs().get_float("momentum", 0.9f);
        for (size_t k = 1; k < ctx.output_count(); ++k) {
            Tensor running = f32_target(ctx, k);
            const std::vector<float> &input = k == 1 ? mean : var;
            const std::vector<double> &batch = k == 1 ? bmean : bvar;
            for (size_t i = 0; i < input.size(); ++i)
                running.data<float>()[i] = static_cast<float>(input[i] * momentum + batch[i] * (1.0 - momentum));
            finish_f32(ctx, k, running);
        }
        for (size_t i = 0; i < mean.size(); ++i) {
            mean[i] = static_cast<float>(bmean[i]);
            var[i] = static_cast<float>(bvar[i]);
        }
    }
    std::vector<float> a(static_cast<size_t>(c)), b(static_cast<size_t>(c));
    for (size_t i = 0; i < a.size(); ++i) {
        a[i] = static_cast<float>(scale[i] / std::sqrt(static_cast<double>(var[i]) + eps));
        b[i] = bias[i] - mean[i] * a[i];
    }
    const float *xp = x.data<float>();
    float *yp = y.data<float>();
    size_t tile = static_cast<size_t>(std::max<int64_t>(1, 16384 / std::max<int64_t>(plane, 1)));
    parallel_for(ctx.pool(), static_cast<size_t>(n * c), tile, [&](size_t begin, size_t end) {
        for (size_t p = begin; p < end; ++p) {
            size_t ch = p % static_cast<size_t>(c);
            int64_t off = static_cast<int64_t>(p) * plane;
            scale_shift(xp + off, yp + off, plane, a[ch], b[ch]);
        }
    });
    finish_f32(ctx, 0, y);
}

// ---------------------------------------------------------------------------------------------------------
// InstanceNormalization and GroupNormalization: statistics per (n, group of channels), applied per channel.
// GroupNormSwish, the importer's fusion of a GroupNormalization and the Swish (SiLU) that alone reads its
// output (every ResNet block of the SD UNet and VAE), applies the Swish to each row of the output (a
// channel plane, or a pixel's channels) while it is still in cache, instead of a pass of its own over the
// whole tensor.

struct GroupNormParams {
    int64_t groups;
    std::vector<float> scale, bias; // per channel
    float eps;
    std::optional<float> swish_alpha; // GroupNormSwish
};

// Normalise x (N, C, plane...) with statistics over each of `groups` channel groups per sample, then apply
// per-channel scale/bias.
void group_normalize(const RunContext &ctx, const float *x, float *y, int64_t n, int64_t c, int64_t plane,
                     const GroupNormParams &gp) {
    const int64_t groups = gp.groups;
    const std::vector<float> &cscale = gp.scale, &cbias = gp.bias;
    const float eps = gp.eps;
    int64_t per_group = c / groups * plane;
    std::vector<float> inv(static_cast<size_t>(n * groups)), mean(static_cast<size_t>(n * groups));
    parallel_for(ctx.pool(), static_cast<size_t>(n * groups), 1, [&](size_t begin, size_t end) {
        for (size_t g = begin; g < end; ++g) {
            double m, v;
            mean_var(x + static_cast<int64_t>(g) * per_group, per_group, m, v);
            mean[g] = static_cast<float>(m);
            inv[g] = static_cast<float>(1.0 / std::sqrt(v + eps));
        }
    });
    int64_t channels_per_group = c / groups;
    size_t tile = static_cast<size_t>(std::max<int64_t>(1, 16384 / std::max<int64_t>(plane, 1)));
    parallel_for(ctx.pool(), static_cast<size_t>(n * c), tile, [&](size_t begin, size_t end) {
        for (size_t p = begin; p < end; ++p) {
            int64_t sample = static_cast<int64_t>(p) / c, ch = static_cast<int64_t>(p) % c;
            size_t g = static_cast<size_t>(sample * groups + ch / channels_per_group);
            float a = inv[g] * cscale[static_cast<size_t>(ch)], m = mean[g];
            float b = cbias[static_cast<size_t>(ch)];
            const float *xp = x + static_cast<int64_t>(p) * plane;
            float *yp = y + static_cast<int64_t>(p) * plane;
            // (x - mean) * a, not x * a - mean * a: a large mean would cancel away precision.
            for (int64_t i = 0; i < plane; ++i) yp[i] = (xp[i] - m) * a + b;
            if (gp.swish_alpha) vmath::swish(yp, yp, static_cast<size_t>(plane), *gp.swish_alpha);
        }
    });
}

// The same on channels-last x (N, plane, C) (the layout plan's Layout::NHWC): a group is `c / groups`
// consecutive floats of every pixel.
void group_normalize_nhwc(const RunContext &ctx, const float *x, float *y, int64_t n, int64_t c, int64_t plane,
                          const GroupNormParams &gp) {
    const int64_t groups = gp.groups;
    const std::vector<float> &cscale = gp.scale, &cbias = gp.bias;
    const float eps = gp.eps;
    const int64_t cpg = c / groups;
    const size_t cs = static_cast<size_t>(c);
    // Statistics in one sequential sweep: each task sums a block of pixels per channel (a group's channels
    // are only cpg floats of each pixel, so walking one group at a time would read every cache line of the
    // tensor once per group), then the blocks' sums are added per group. Shifted sums (as mean_var), by the
    // group's first value, so a large mean does not cancel the variance away.
    // About 256 KB of pixels per block, and at most 1024 of them: a channel's float sums add no more values.
    const int64_t block = std::clamp<int64_t>(65536 / std::max<int64_t>(c, 1), 1, 1024);
    const int64_t blocks = (plane + block - 1) / block;
    std::vector<float> shift(static_cast<size_t>(n) * cs);
    for (int64_t sample = 0; sample < n; ++sample)
        for (int64_t ch = 0; ch < c; ++ch)
            shift[static_cast<size_t>(sample) * cs + static_cast<size_t>(ch)] =
                plane > 0 ? x[sample * plane * c + ch / cpg * cpg] : 0.0f;
    std::vector<double> part1(static_cast<size_t>(n * blocks) * cs), part2(part1.size());
    parallel_for(ctx.pool(), static_cast<size_t>(n * blocks), 1, [&](size_t begin, size_t end) {
        std::vector<float> f1(cs), f2(cs);
        for (size_t task = begin; task < end; ++task) {
            const int64_t sample = static_cast<int64_t>(task) / blocks, b0 = static_cast<int64_t>(task) % blocks * block;
            const int64_t b1 = std::min(plane, b0 + block);
            const float *sh = shift.data() + static_cast<size_t>(sample) * cs;
            std::fill(f1.begin(), f1.end(), 0.0f);
            std::fill(f2.begin(), f2.end(), 0.0f);
            for (int64_t p = b0; p < b1; ++p) {
                const float *xp = x + (sample * plane + p) * c;
                for (size_t ch = 0; ch < cs; ++ch) {
                    const float d = xp[ch] - sh[ch];
                    f1[ch] += d;
                    f2[ch] += d * d;
                }
            }
            for (size_t ch = 0; ch < cs; ++ch) {
                part1[task * cs + ch] = f1[ch];
                part2[task * cs + ch] = f2[ch];
            }
        }
    });
    std::vector<float> a(static_cast<size_t>(n) * cs), m(static_cast<size_t>(n) * cs);
    for (int64_t sample = 0; sample < n; ++sample) {
        for (int64_t g = 0; g < groups; ++g) {
            double s1 = 0, s2 = 0;
            for (int64_t t = sample * blocks; t < (sample + 1) * blocks; ++t)
                for (int64_t ch = g * cpg; ch < (g + 1) * cpg; ++ch) {
                    s1 += part1[static_cast<size_t>(t) * cs + static_cast<size_t>(ch)];
                    s2 += part2[static_cast<size_t>(t) * cs + static_cast<size_t>(ch)];
                }
            const double count = static_cast<double>(plane * cpg);
            const double dm = count > 0 ? s1 / count : 0.0;
            const double var = count > 0 ? std::max(0.0, s2 / count - dm * dm) : 0.0;
            const size_t first = static_cast<size_t>(sample) * cs + static_cast<size_t>(g * cpg);
            const float mean = static_cast<float>(dm + shift[first]), inv = static_cast<float>(1.0 / std::sqrt(var + eps));
            for (int64_t j = 0; j < cpg; ++j) {
                a[first + static_cast<size_t>(j)] = inv * cscale[static_cast<size_t>(g * cpg + j)];
                m[first + static_cast<size_t>(j)] = mean;
            }
        }
    }
    size_t tile = static_cast<size_t>(std::max<int64_t>(1, 16384 / std::max<int64_t>(c, 1)));
    parallel_for(ctx.pool(), static_cast<size_t>(n * plane), tile, [&](size_t begin, size_t end) {
        for (size_t p = begin; p < end; ++p) {
            const size_t sample = p / static_cast<size_t>(plane);
            const float *ap = a.data() + sample * static_cast<size_t>(c), *mp = m.data() + sample * static_cast<size_t>(c);
            const float *xp = x + static_cast<int64_t>(p) * c;
            float *yp = y + static_cast<int64_t>(p) * c;
            for (int64_t ch = 0; ch < c; ++ch) yp[ch] = (xp[ch] - mp[ch]) * ap[ch] + cbias[static_cast<size_t>(ch)];
            if (gp.swish_alpha) vmath::swish(yp, yp, static_cast<size_t>(c), *gp.swish_alpha);
        }
    });
}

// Group normalisation in the layout the plan chose (input 0 arrives in the layout output 0 is written in).
void group_normalize_any(RunContext &ctx, const Tensor &x, Tensor &y, const GroupNormParams &gp) {
    const int64_t n = x.dim(0), c = x.dim(1), plane = prod(x.shape(), 2, x.rank());
    if (ctx.input_nhwc(0)) {
        ctx.output(0).set_layout(Layout::NHWC);
        group_normalize_nhwc(ctx, x.data<float>(), y.data<float>(), n, c, plane, gp);
    } else {
        group_normalize(ctx, x.data<float>(), y.data<float>(), n, c, plane, gp);
    }
}

std::vector<TensorInfo> infer_instancenorm(const InferContext &ctx) {
    ctx.require_inputs(3, 3);
    ctx.require_dtype(0, {DType::F32, DType::F16});
    const TensorInfo &x = ctx.input(0);
    if (x.shape.size() < 3) ctx.error("input must have rank >= 3 (N, C, D1, ...), got ", shape_str(x.shape));
    for (size_t i = 1; i < 3; ++i) {
        ctx.require_dtype(i, {DType::F32, DType::F16});
        if (ctx.input(i).shape != Shape{x.shape[1]})
            ctx.error(i == 1 ? "scale" : "B", " has shape ", shape_str(ctx.input(i).shape), ", expected (",
                      x.shape[1], ")");
    }
    return {TensorInfo{x.dtype, x.shape, {}}};
}

void run_instancenorm(RunContext &ctx) {
    Tensor x = as_f32(ctx, ctx.input(0));
    Tensor y = f32_target(ctx, 0);
    group_normalize_any(ctx, x, y,
                        {x.dim(1), float_values(ctx.input(1)), float_values(ctx.input(2)),
                         ctx.attrs().get_float("epsilon", 1e-5f), std::nullopt});
    finish_f32(ctx, 0, y);
}

// Opset 18 gives scale/bias per group, opset 21 per channel; the shapes tell them apart (when the group
// count equals the channel count both mean the same thing).
std::vector<TensorInfo> infer_groupnorm(const InferContext &ctx) {
    ctx.require_inputs(3, 3);
    ctx.require_dtype(0, {DType::F32, DType::F16});
    const TensorInfo &x = ctx.input(0);
    if (x.shape.size() < 2) ctx.error("X must have rank >= 2 (N, C, ...), got ", shape_str(x.shape));
    int64_t groups = ctx.attrs().require_int("num_groups");
    int64_t c = x.shape[1];
    if (groups <= 0 || c % groups != 0)
        ctx.error("num_groups ", groups, " must be positive and divide the channel count ", c);
    if (ctx.attrs().get_int("stash_type", 1) != 1)
        fail(ONNXSTREAM_ERR_UNSUPPORTED, ctx.node.where, ": stash_type ",
             ctx.attrs().get_int("stash_type", 1), " is not supported (statistics are computed in float)");
    for (size_t i = 1; i < 3; ++i) {
        ctx.require_dtype(i, {DType::F32, DType::F16});
        const Shape &s = ctx.input(i).shape;
        if (s != Shape{c} && s != Shape{groups})
            ctx.error(i == 1 ? "scale" : "bias", " has shape ", shape_str(s), ", expected (", c,
                      ") (per channel, opset 21) or (", groups, ") (per group, opset 18)");
    }
    return {TensorInfo{x.dtype, x.shape, {}}};
}

template <bool kSwish> void run_groupnorm(RunContext &ctx) {
    Tensor x = as_f32(ctx, ctx.input(0));
    Tensor y = f32_target(ctx, 0);
    int64_t c = x.dim(1), groups = ctx.attrs().get_int("num_groups", 1);
    auto per_channel = [&](const Tensor &t) {
        std::vector<float> v = float_values(t);
        if (static_cast<int64_t>(v.size()) == c) return v;
        std::vector<float> out(static_cast<size_t>(c));
        for (int64_t ch = 0; ch < c; ++ch)
            out[static_cast<size_t>(ch)] = v[static_cast<size_t>(ch / (c / groups))];
        return out;
    };
    std::optional<float> swish_alpha;
    if (kSwish) swish_alpha = ctx.attrs().get_float("alpha", 1.0f);
    group_normalize_any(ctx, x, y,
                        {groups, per_channel(ctx.input(1)), per_channel(ctx.input(2)),
                         ctx.attrs().get_float("epsilon", 1e-5f), swish_alpha});
    finish_f32(ctx, 0, y);
}

// ---------------------------------------------------------------------------------------------------------
// LayerNormalization: normalise over dims [axis, rank), optional Mean and InvStdDev outputs.

// Scale/bias broadcast to the normalised shape, expanded to one value per element of a row.
bool expand_to_row(const Shape &param, const Shape &x, size_t axis, const Tensor *values,
                   std::vector<float> *out) {
    Shape norm(x.begin() + static_cast<std::ptrdiff_t>(axis), x.end());
    Shape p = param;
    while (p.size() > norm.size()) {
        if (p.front() != 1) return false;
        p.erase(p.begin());
    }
    p.insert(p.begin(), norm.size() - p.size(), 1);
    for (size_t i = 0; i < p.size(); ++i)
        if (p[i] != 1 && p[i] != norm[i]) return false;
    if (!out) return true;
    std::vector<float> v = float_values(*values);
    int64_t cols = shape_numel(norm);
    if (p == norm) {
        *out = std::move(v);
        return true;
    }
    out->resize(static_cast<size_t>(cols));
    std::vector<int64_t> idx(norm.size(), 0);
    for (int64_t e = 0; e < cols; ++e) {
        int64_t src = 0;
        for (size_t i = 0; i < norm.size(); ++i) src = src * p[i] + (p[i] == 1 ? 0 : idx[i]);
        (*out)[static_cast<size_t>(e)] = v[static_cast<size_t>(src)];
        for (size_t i = norm.size(); i-- > 0;) {
            if (++idx[i] < norm[i]) break;
            idx[i] = 0;
        }
    }
    return true;
}

std::vector<TensorInfo> infer_layernorm(const InferContext &ctx) {
    ctx.require_inputs(2, 3);
    ctx.require_dtype(0, {DType::F32, DType::F16});
    const TensorInfo &x = ctx.input(0);
    if (x.shape.empty()) ctx.error("X must have rank >= 1");
    size_t axis = static_cast<size_t>(normalize_axis(ctx, ctx.attrs().get_int("axis", -1), x.shape.size()));
    if (ctx.attrs().get_int("stash_type", 1) != 1)
        fail(ONNXSTREAM_ERR_UNSUPPORTED, ctx.node.where, ": stash_type ",
             ctx.attrs().get_int("stash_type", 1), " is not supported (statistics are computed in float)");
    for (size_t i = 1; i < 3; ++i) {
        if (!ctx.has_input(i)) continue;
        ctx.require_dtype(i, {DType::F32, DType::F16});
        if (!expand_to_row(ctx.input(i).shape, x.shape, axis, nullptr, nullptr))
            ctx.error(i == 1 ? "Scale " : "B ", shape_str(ctx.input(i).shape),
                      " does not broadcast to the normalised shape of X ", shape_str(x.shape), " from axis ",
                      axis);
    }
    if (ctx.output_count() > 3)
        ctx.error("has at most 3 outputs (Y, Mean, InvStdDev), got ", ctx.output_count());
    std::vector<TensorInfo> outs{TensorInfo{x.dtype, x.shape, {}}};
    Shape stat(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(axis));
    stat.resize(x.shape.size(), 1);
    for (size_t k = 1; k < ctx.output_count(); ++k) outs.push_back(TensorInfo{DType::F32, stat, {}});
    return outs;
}

void run_layernorm(RunContext &ctx) {
    Tensor x = as_f32(ctx, ctx.input(0));
    size_t axis = static_cast<size_t>(ctx.attrs().get_int("axis", -1) < 0
                                          ? ctx.attrs().get_int("axis", -1) + static_cast<int64_t>(x.rank())
                                          : ctx.attrs().get_int("axis", -1));
    float eps = ctx.attrs().get_float("epsilon", 1e-5f);
    int64_t rows = prod(x.shape(), 0, axis), cols = prod(x.shape(), axis, x.rank());
    std::vector<float> scale, bias;
    expand_to_row(ctx.input(1).shape(), x.shape(), axis, &ctx.input(1), &scale);
    if (ctx.has_input(2)) expand_to_row(ctx.input(2).shape(), x.shape(), axis, &ctx.input(2), &bias);
    Tensor y = f32_target(ctx, 0);
    float *mean_out = ctx.output_count() > 1 ? ctx.alloc_output(1).data<float>() : nullptr;
    float *inv_out = ctx.output_count() > 2 ? ctx.alloc_output(2).data<float>() : nullptr;
    const float *xp = x.data<float>();
    float *yp = y.data<float>();
    const float *sp = scale.data(), *bp = bias.empty() ? nullptr : bias.data();
    size_t tile = static_cast<size_t>(std::max<int64_t>(1, 8192 / std::max<int64_t>(cols, 1)));
    parallel_for(ctx.pool(), static_cast<size_t>(rows), tile, [&](size_t begin, size_t end) {
        for (size_t r = begin; r < end; ++r) {
            const float *xr = xp + static_cast<int64_t>(r) * cols;
            float *yr = yp + static_cast<int64_t>(r) * cols;
            double m, v;
            mean_var(xr, cols, m, v);
            float mf = static_cast<float>(m), inv = static_cast<float>(1.0 / std::sqrt(v + eps));
            if (mean_out) mean_out[r] = mf;
            if (inv_out) inv_out[r] = inv;
            if (bp)
                for (int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] - mf) * inv * sp[j] + bp[j];
            else
                for (int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] - mf) * inv * sp[j];
        }
    });
    finish_f32(ctx, 0, y);
}

// ---------------------------------------------------------------------------------------------------------
// Softmax, LogSoftmax and Hardmax. Opset 13+ normalises along one axis; before 13 the input was coerced to
// 2-D at the axis (default 1) and each row normalised. model.txt carries no opset, so the older form is
// selected by an `opset` attribute below 13 (written by the importer for such models); without it the op is
// opset 13+.

struct SoftmaxGeometry {
    int64_t outer, axis, inner; // normalise along `axis` elements, `inner` apart
};

SoftmaxGeometry softmax_geometry(const Attributes &attrs, const Shape &shape, const InferContext *ictx) {
    bool legacy = attrs.get_int("opset", 13) < 13;
    int64_t rank = static_cast<int64_t>(shape.size());
    int64_t axis = attrs.get_int("axis", legacy ? 1 : -1);
    if (rank == 0) {
        if (ictx && axis != 0 && axis != -1)
            ictx->error("axis ", axis, " is out of range for a scalar input");
        return {1, 1, 1};
    }
    if (axis < -rank || axis >= rank) {
        if (ictx) ictx->error("axis ", axis, " is out of range for rank ", rank);
        axis = rank - 1;
    }
    size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    if (legacy) return {prod(shape, 0, a), prod(shape, a, shape.size()), 1};
    return {prod(shape, 0, a), shape[a], prod(shape, a + 1, shape.size())};
}

std::vector<TensorInfo> infer_softmax(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    ctx.require_dtype(0, {DType::F32, DType::F16});
    softmax_geometry(ctx.attrs(), ctx.input(0).shape, &ctx);
    return {ctx.input(0)};
}

// Rows of n contiguous values: y = log_softmax(x).
void log_softmax_rows(const float *x, float *y, int64_t rows, int64_t n, pthreadpool_t pool) {
    size_t tile = static_cast<size_t>(std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)));
    parallel_for(pool, static_cast<size_t>(rows), tile, [&](size_t begin, size_t end) {
        for (size_t r = begin; r < end; ++r) {
            const float *xr = x + static_cast<int64_t>(r) * n;
            float *yr = y + static_cast<int64_t>(r) * n;
            float m = -std::numeric_limits<float>::infinity();
            for (int64_t j = 0; j < n; ++j) m = std::max(m, xr[j]);
            for (int64_t j = 0; j < n; ++j) yr[j] = clamp_exp_arg(xr[j] - m);
            float lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            int64_t j = 0;
            for (; j + 8 <= n; j += 8)
                for (int l = 0; l < 8; ++l) lanes[l] += exp_clamped(yr[j + l]);
            float sum = 0;
            for (; j < n; ++j) sum += exp_clamped(yr[j]);
            for (float l : lanes) sum += l;
            float shift = m + std::log(sum);
            for (int64_t k = 0; k < n; ++k) yr[k] = xr[k] - shift;
        }
    });
}

// Normalise along a strided axis: (outer, axis, inner) with inner > 1, vectorised across inner.
void softmax_strided(const float *x, float *y, const SoftmaxGeometry &g, bool log, pthreadpool_t pool) {
    constexpr int64_t kChunk = 256;
    int64_t chunks = (g.inner + kChunk - 1) / kChunk;
    parallel_for(pool, static_cast<size_t>(g.outer * chunks), 1, [&](size_t begin, size_t end) {
        float m[kChunk], s[kChunk];
        for (size_t task = begin; task < end; ++task) {
            int64_t o = static_cast<int64_t>(task) / chunks,
                    c0 = static_cast<int64_t>(task) % chunks * kChunk;
            int64_t w = std::min(kChunk, g.inner - c0);
            const float *xb = x + o * g.axis * g.inner + c0;
            float *yb = y + o * g.axis * g.inner + c0;
            for (int64_t i = 0; i < w; ++i) m[i] = xb[i];
            for (int64_t a = 1; a < g.axis; ++a) {
                const float *xr = xb + a * g.inner;
                for (int64_t i = 0; i < w; ++i) m[i] = xr[i] > m[i] ? xr[i] : m[i];
            }
            std::fill(s, s + w, 0.0f);
            for (int64_t a = 0; a < g.axis; ++a) {
                const float *xr = xb + a * g.inner;
                float *yr = yb + a * g.inner;
                for (int64_t i = 0; i < w; ++i) yr[i] = clamp_exp_arg(xr[i] - m[i]);
                for (int64_t i = 0; i < w; ++i) {
                    float e = exp_clamped(yr[i]);
                    s[i] += e;
                    if (!log) yr[i] = e;
                }
            }
            if (log) {
                for (int64_t i = 0; i < w; ++i) s[i] = m[i] + std::log(s[i]);
                for (int64_t a = 0; a < g.axis; ++a) {
                    const float *xr = xb + a * g.inner;
                    float *yr = yb + a * g.inner;
                    for (int64_t i = 0; i < w; ++i) yr[i] = xr[i] - s[i];
                }
            } else {
                for (int64_t i = 0; i < w; ++i) s[i] = 1.0f / s[i];
                for (int64_t a = 0; a < g.axis; ++a) {
                    float *yr = yb + a * g.inner;
                    for (int64_t i = 0; i < w; ++i) yr[i] *= s[i];
                }
            }
        }
    });
}

template <bool Log> void run_softmax(RunContext &ctx) {
    const Tensor &in = ctx.input(0);
    Tensor x = as_f32(ctx, in);
    Tensor y = f32_target(ctx, 0);
    SoftmaxGeometry g = softmax_geometry(ctx.attrs(), in.shape(), nullptr);
    if (in.numel() > 0) {
        if (g.inner > 1) {
            softmax_strided(x.data<float>(), y.data<float>(), g, Log, ctx.pool());
        } else if (Log) {
            log_softmax_rows(x.data<float>(), y.data<float>(), g.outer, g.axis, ctx.pool());
        } else {
            xnn::softmax_rows_f32(static_cast<size_t>(g.outer), static_cast<size_t>(g.axis), x.data<float>(),
                                  y.data<float>(), ctx.pool());
        }
    }
    finish_f32(ctx, 0, y);
}

// Hardmax: 1 at the first maximum along the axis (same axis rules as Softmax), 0 elsewhere.
void run_hardmax(RunContext &ctx) {
    Tensor x = as_f32(ctx, ctx.input(0));
    Tensor y = f32_target(ctx, 0);
    SoftmaxGeometry g = softmax_geometry(ctx.attrs(), ctx.input(0).shape(), nullptr);
    const float *xp = x.data<float>();
    float *yp = y.data<float>();
    if (x.numel() > 0) {
        std::fill(yp, yp + x.numel(), 0.0f);
        parallel_for(ctx.pool(), static_cast<size_t>(g.outer * g.inner), 256, [&](size_t begin, size_t end) {
            for (size_t t = begin; t < end; ++t) {
                int64_t o = static_cast<int64_t>(t) / g.inner, i = static_cast<int64_t>(t) % g.inner;
                const float *xb = xp + o * g.axis * g.inner + i;
                int64_t best = 0;
                for (int64_t a = 1; a < g.axis; ++a)
                    if (xb[a * g.inner] > xb[best * g.inner]) best = a;
                yp[o * g.axis * g.inner + i + best * g.inner] = 1.0f;
            }
        });
    }
    finish_f32(ctx, 0, y);
}

// ---------------------------------------------------------------------------------------------------------
// LpNormalization: x / ||x||_p along one axis (p = 1 or 2).

std::vector<TensorInfo> infer_lpnorm(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    ctx.require_dtype(0, {DType::F32, DType::F16});
    const TensorInfo &x = ctx.input(0);
    if (x.shape.empty()) ctx.error("input must have rank >= 1");
    normalize_axis(ctx, ctx.attrs().get_int("axis", -1), x.shape.size());
    int64_t p = ctx.attrs().get_int("p", 2);
    if (p != 1 && p != 2) ctx.error("p must be 1 or 2, got ", p);
    return {x};
}

void run_lpnorm(RunContext &ctx) {
    Tensor x = as_f32(ctx, ctx.input(0));
    Tensor y = f32_target(ctx, 0);
    int64_t rank = static_cast<int64_t>(x.rank()), axis = ctx.attrs().get_int("axis", -1);
    size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    bool l1 = ctx.attrs().get_int("p", 2) == 1;
    int64_t outer = prod(x.shape(), 0, a), len = x.dim(a), inner = prod(x.shape(), a + 1, x.rank());
    const float *xp = x.data<float>();
    float *yp = y.data<float>();
    constexpr int64_t kChunk = 256;
    int64_t chunks = (inner + kChunk - 1) / kChunk;
    parallel_for(ctx.pool(), static_cast<size_t>(outer * chunks), 1, [&](size_t begin, size_t end) {
        float s[kChunk];
        for (size_t task = begin; task < end; ++task) {
            int64_t o = static_cast<int64_t>(task) / chunks,
                    c0 = static_cast<int64_t>(task) % chunks * kChunk;
            int64_t w = std::min(kChunk, inner - c0);
            const float *xb = xp + o * len * inner + c0;
            float *yb = yp + o * len * inner + c0;
            std::fill(s, s + w, 0.0f);
            for (int64_t k = 0; k < len; ++k) {
                const float *xr = xb + k * inner;
                if (l1)
                    for (int64_t i = 0; i < w; ++i) s[i] += std::fabs(xr[i]);
                else
                    for (int64_t i = 0; i < w; ++i) s[i] += xr[i] * xr[i];
            }
            // A zero norm leaves the (all-zero) slice as it is, like ONNX Runtime.
            for (int64_t i = 0; i < w; ++i) {
                float norm = l1 ? s[i] : std::sqrt(s[i]);
                s[i] = norm == 0.0f ? 0.0f : 1.0f / norm;
            }
            for (int64_t k = 0; k < len; ++k) {
                const float *xr = xb + k * inner;
                float *yr = yb + k * inner;
                for (int64_t i = 0; i < w; ++i) yr[i] = xr[i] * s[i];
            }
        }
    });
    finish_f32(ctx, 0, y);
}

} // namespace

void register_normalization_ops(Registry &r) {
    // Hand-written loops read weights exactly; Softmax hands input 0 to XNNPACK, which reads past its end.
    r.add("BatchNormalization", infer_batchnorm, run_batchnorm).with_reads_weights_exactly();
    r.add("InstanceNormalization", infer_instancenorm, run_instancenorm)
        .with_reads_weights_exactly()
        .with_nhwc(NhwcIo::Same);
    r.add("GroupNormalization", infer_groupnorm, run_groupnorm<false>).with_reads_weights_exactly().with_nhwc(NhwcIo::Same);
    r.add("GroupNormSwish", infer_groupnorm, run_groupnorm<true>).with_reads_weights_exactly().with_nhwc(NhwcIo::Same);
    r.add("LayerNormalization", infer_layernorm, run_layernorm).with_reads_weights_exactly();
    r.add("Softmax", infer_softmax, run_softmax<false>).with_reads_weights_exactly(~1u);
    r.add("LogSoftmax", infer_softmax, run_softmax<true>).with_reads_weights_exactly();
    r.add("Hardmax", infer_softmax, run_hardmax).with_reads_weights_exactly();
    r.add("LpNormalization", infer_lpnorm, run_lpnorm).with_reads_weights_exactly();
}

} // namespace onnxstream

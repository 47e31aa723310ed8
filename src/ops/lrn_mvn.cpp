// LRN (opsets 1, 13) and MeanVarianceNormalization (opsets 9, 13), the normalization ops of older CNNs.
//
// LRN divides each element of an (N, C, d1, ..., dk) tensor by (bias + alpha / size * s)^beta, where s sums
// the squares of the same position in channels c - floor((size - 1) / 2) .. c + ceil((size - 1) / 2) (clipped
// to the tensor). MeanVarianceNormalization maps X to (X - mean) / sqrt(var + 1e-9) with mean and population
// variance taken over `axes` (default 0, 2, 3): ONNX defines the op as that function, epsilon included.
//
// float16 tensors compute in float32. MVN's statistics accumulate in double, two passes (mean, then squared
// deviations), so a large mean does not cancel the variance away as E[x^2] - E[x]^2 in float would.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/layout.h"
#include "ops/registry.h"

namespace onnxstream {

namespace {

// ---- LRN ----

struct LrnParams {
    float alpha, beta, bias;
    int64_t size;
};

LrnParams lrn_params(const Attributes &attrs) {
    return LrnParams{attrs.get_float("alpha", 1e-4f), attrs.get_float("beta", 0.75f), attrs.get_float("bias", 1.0f),
                     attrs.require_int("size")};
}

std::vector<TensorInfo> lrn_infer(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    ctx.require_dtype(0, {DType::F32, DType::F16});
    const TensorInfo &x = ctx.input(0);
    if (x.shape.size() < 3) ctx.error("input has shape ", shape_str(x.shape), "; expected (N, C, d1, ..., dk)");
    const LrnParams p = lrn_params(ctx.attrs());
    if (p.size < 1) ctx.error("size is ", p.size, "; expected at least 1");
    return {TensorInfo{x.dtype, x.shape, {}}};
}

void lrn_run(RunContext &ctx) {
    const LrnParams p = lrn_params(ctx.attrs());
    const Tensor &xt = ctx.input(0);
    Tensor &yt = ctx.alloc_output(0);
    if (xt.numel() == 0) return;
    Tensor x_holder, y_holder;
    const float *x = as_f32(ctx, xt, x_holder);
    float *y = out_f32(ctx, yt, y_holder);
    const int64_t n = xt.dim(0), c = xt.dim(1), plane = xt.numel() / (n * c);
    const int64_t before = (p.size - 1) / 2, after = p.size - 1 - before;
    const float scale = p.alpha / static_cast<float>(p.size);
    parallel_for(ctx.pool(), static_cast<size_t>(n * c), 1, [&](size_t begin, size_t end) {
        std::vector<float> sum(static_cast<size_t>(plane));
        for (size_t nc = begin; nc < end; ++nc) {
            const int64_t img = static_cast<int64_t>(nc) / c, ch = static_cast<int64_t>(nc) % c;
            // Clamp before adding: size may be as large as an int64 attribute allows.
            const int64_t lo = ch - std::min(before, ch), hi = std::min(c - 1, ch + std::min(after, c));
            std::fill(sum.begin(), sum.end(), 0.0f);
            for (int64_t k = lo; k <= hi; ++k) {
                const float *src = x + (img * c + k) * plane;
                for (int64_t j = 0; j < plane; ++j) sum[j] += src[j] * src[j];
            }
            const float *src = x + static_cast<int64_t>(nc) * plane;
            float *dst = y + static_cast<int64_t>(nc) * plane;
            for (int64_t j = 0; j < plane; ++j) dst[j] = src[j] / std::pow(p.bias + scale * sum[j], p.beta);
        }
    });
    store_f32_output(ctx, yt, y_holder);
}

// ---- MeanVarianceNormalization ----

std::vector<int64_t> mvn_axes(const std::string &where, const Attributes &attrs, size_t rank) {
    const int64_t r = static_cast<int64_t>(rank);
    std::vector<int64_t> axes = attrs.get_ints("axes", {0, 2, 3});
    std::vector<bool> seen(rank, false);
    for (int64_t &a : axes) {
        if (a < -r || a >= r)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": axis ", a, " is out of range for a rank-", rank, " input",
                 attrs.has("axes") ? "" : " (the default axes are 0, 2, 3)");
        if (a < 0) a += r;
        if (seen[static_cast<size_t>(a)]) fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": axes lists axis ", a, " twice");
        seen[static_cast<size_t>(a)] = true;
    }
    return axes;
}

std::vector<TensorInfo> mvn_infer(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    ctx.require_dtype(0, {DType::F32, DType::F16});
    const TensorInfo &x = ctx.input(0);
    mvn_axes(ctx.node.where, ctx.attrs(), x.shape.size());
    return {TensorInfo{x.dtype, x.shape, {}}};
}

// Index of each element's statistics group (its position along the axes not reduced), in element order.
std::vector<int64_t> group_of_elements(const Shape &shape, const std::vector<bool> &reduced, int64_t &groups) {
    const size_t rank = shape.size();
    std::vector<int64_t> gstride(rank, 0);
    groups = 1;
    for (size_t a = rank; a-- > 0;)
        if (!reduced[a]) {
            gstride[a] = groups;
            groups *= shape[a];
        }
    std::vector<int64_t> out(static_cast<size_t>(shape_numel(shape)));
    std::vector<int64_t> idx(rank, 0);
    int64_t g = 0;
    for (size_t e = 0; e < out.size(); ++e) {
        out[e] = g;
        // Odometer step over the innermost axes, keeping the group index in step.
        for (size_t a = rank; a-- > 0;) {
            if (++idx[a] < shape[a]) {
                g += gstride[a];
                break;
            }
            g -= gstride[a] * (shape[a] - 1);
            idx[a] = 0;
        }
    }
    return out;
}

void mvn_run(RunContext &ctx) {
    const Tensor &xt = ctx.input(0);
    Tensor &yt = ctx.alloc_output(0);
    if (xt.numel() == 0) return;
    std::vector<bool> reduced(xt.rank(), false);
    for (int64_t a : mvn_axes(ctx.node.where, ctx.attrs(), xt.rank())) reduced[static_cast<size_t>(a)] = true;
    int64_t groups = 0;
    const std::vector<int64_t> group = group_of_elements(xt.shape(), reduced, groups);
    Tensor x_holder, y_holder;
    const float *x = as_f32(ctx, xt, x_holder);
    float *y = out_f32(ctx, yt, y_holder);
    std::vector<double> mean(static_cast<size_t>(groups), 0.0), var(static_cast<size_t>(groups), 0.0);
    std::vector<int64_t> count(static_cast<size_t>(groups), 0);
    for (size_t e = 0; e < group.size(); ++e) {
        mean[group[e]] += x[e];
        ++count[group[e]];
    }
    for (int64_t g = 0; g < groups; ++g) mean[g] /= static_cast<double>(std::max<int64_t>(count[g], 1));
    for (size_t e = 0; e < group.size(); ++e) {
        const double d = x[e] - mean[group[e]];
        var[group[e]] += d * d;
    }
    for (int64_t g = 0; g < groups; ++g)
        var[g] = 1.0 / std::sqrt(var[g] / static_cast<double>(std::max<int64_t>(count[g], 1)) + 1e-9);
    for (size_t e = 0; e < group.size(); ++e)
        y[e] = static_cast<float>((x[e] - mean[group[e]]) * var[group[e]]);
    store_f32_output(ctx, yt, y_holder);
}

} // namespace

void register_lrn_mvn_ops(Registry &r) {
    r.add("LRN", lrn_infer, lrn_run);
    r.add("MeanVarianceNormalization", mvn_infer, mvn_run);
}

} // namespace onnxstream

// NegativeLogLikelihoodLoss (opsets 12, 13, 22) and SoftmaxCrossEntropyLoss (opsets 12, 13).
//
// Input (N, C) or (N, C, d1, ..., dk), targets (N) or (N, d1, ..., dk) of int32 or int64 class indices, and an
// optional weight per class (C). The loss of element (n, d1..dk) with target t is -w[t] * input[n, t, d1..dk],
// where SoftmaxCrossEntropyLoss first replaces the input by its log-softmax over axis 1 (optionally returned as
// its second output, log_prob). A target equal to ignore_index gives loss 0 and counts with weight 0.
// reduction none returns the losses (shape of the targets); sum their sum; mean their sum divided by the sum of
// the weights of the targets not ignored (their count without a weight input), which is NaN when every target
// is ignored, as in ONNX Runtime and ONNX's reference.
//
// A target that is neither ignore_index nor a class in [0, C) is an INVALID_ARGUMENT error naming the value and
// its position: targets are data, often only known at run time.
//
// float16 tensors compute in float32; the sums run in double so a mean over many elements does not drift.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/layout.h"
#include "ops/registry.h"
#include "tensor/half.h"

namespace onnxstream {

namespace {

enum class Reduction { None, Sum, Mean };

struct LossParams {
    Reduction reduction = Reduction::Mean;
    bool has_ignore = false;
    int64_t ignore_index = 0;
};

LossParams read_params(const Attributes &attrs, const std::string &where) {
    LossParams p;
    const std::string reduction = attrs.get_string("reduction", "mean");
    if (reduction == "none") p.reduction = Reduction::None;
    else if (reduction == "sum") p.reduction = Reduction::Sum;
    else if (reduction == "mean") p.reduction = Reduction::Mean;
    else fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": reduction is '", reduction, "', expected none, sum or mean");
    p.has_ignore = attrs.has("ignore_index");
    if (p.has_ignore) p.ignore_index = attrs.require_int("ignore_index");
    return p;
}

// `outputs`: how many outputs the op may have (NegativeLogLikelihoodLoss 1, SoftmaxCrossEntropyLoss 2).
std::vector<TensorInfo> loss_infer(const InferContext &ctx, size_t outputs) {
    ctx.require_inputs(2, 3);
    ctx.require_dtype(0, {DType::F32, DType::F16});
    ctx.require_dtype(1, {DType::I64, DType::I32});
    const LossParams prm = read_params(ctx.attrs(), ctx.node.where);
    if (ctx.output_count() > outputs)
        ctx.error("has at most ", outputs, outputs == 1 ? " output" : " outputs", ", got ", ctx.output_count());
    const TensorInfo &x = ctx.input(0);
    const Shape &xs = x.shape, &ts = ctx.input(1).shape;
    if (xs.size() < 2) ctx.error("input has shape ", shape_str(xs), "; expected (N, C) or (N, C, d1, ..., dk)");
    Shape expected_target{xs[0]};
    expected_target.insert(expected_target.end(), xs.begin() + 2, xs.end());
    if (ts != expected_target)
        ctx.error("target has shape ", shape_str(ts), "; expected ", shape_str(expected_target), " for input ",
                  shape_str(xs));
    if (ctx.has_input(2)) {
        const TensorInfo &w = ctx.input(2);
        // Either float type whatever the input's: a converter may store the weights as float16.
        if (!is_float(w.dtype)) ctx.error("weight has dtype ", dtype_name(w.dtype), "; expected a float type");
        if (w.shape != Shape{xs[1]})
            ctx.error("weight has shape ", shape_str(w.shape), "; expected (", xs[1], "), one per class");
    }
    std::vector<TensorInfo> out{TensorInfo{x.dtype, prm.reduction == Reduction::None ? ts : Shape{}, {}}};
    if (ctx.output_count() > 1) out.push_back(TensorInfo{x.dtype, xs, {}});
    return out;
}

std::vector<TensorInfo> nll_infer(const InferContext &ctx) { return loss_infer(ctx, 1); }
std::vector<TensorInfo> sce_infer(const InferContext &ctx) { return loss_infer(ctx, 2); }

template <typename T> void read_targets(const Tensor &t, std::vector<int64_t> &out) {
    const T *src = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int64_t>(src[i]);
}

// Index of the first target that names no class and is not ignored, or -1. Checked before any parallel work,
// which must not throw.
int64_t first_bad_target(const std::vector<int64_t> &targets, int64_t classes, const LossParams &prm) {
    for (size_t i = 0; i < targets.size(); ++i) {
        const int64_t t = targets[i];
        if (prm.has_ignore && t == prm.ignore_index) continue;
        if (t < 0 || t >= classes) return static_cast<int64_t>(i);
    }
    return -1;
}

// log_softmax over axis 1 of x (N, C, D) into lp: (x - max) - log(sum(exp(x - max))), the max taken first so
// that exp never overflows.
void log_softmax_axis1(const RunContext &ctx, const float *x, float *lp, int64_t n, int64_t c, int64_t d) {
    if (c == 0 || d == 0) return; // nothing to write, and no first class to start the max from
    parallel_for(ctx.pool(), static_cast<size_t>(n), 1, [&](size_t begin, size_t end) {
        std::vector<float> mx(static_cast<size_t>(d));
        std::vector<double> sum(static_cast<size_t>(d));
        for (size_t img = begin; img < end; ++img) {
            const float *src = x + static_cast<int64_t>(img) * c * d;
            float *dst = lp + static_cast<int64_t>(img) * c * d;
            std::copy(src, src + d, mx.begin());
            for (int64_t k = 1; k < c; ++k)
                for (int64_t j = 0; j < d; ++j) mx[j] = std::max(mx[j], src[k * d + j]);
            std::fill(sum.begin(), sum.end(), 0.0);
            for (int64_t k = 0; k < c; ++k)
                for (int64_t j = 0; j < d; ++j) sum[j] += std::exp(static_cast<double>(src[k * d + j] - mx[j]));
            for (int64_t j = 0; j < d; ++j) sum[j] = std::log(sum[j]);
            for (int64_t k = 0; k < c; ++k)
                for (int64_t j = 0; j < d; ++j)
                    dst[k * d + j] = static_cast<float>(static_cast<double>(src[k * d + j] - mx[j]) - sum[j]);
        }
    });
}

void write_scalar(Tensor &y, double v) {
    if (y.dtype() == DType::F16) *y.data<uint16_t>() = float_to_half(static_cast<float>(v));
    else *y.data<float>() = static_cast<float>(v);
}

void loss_run(RunContext &ctx, bool softmax) {
    const LossParams prm = read_params(ctx.attrs(), ctx.node.where);
    const Tensor &xt = ctx.input(0), &tt = ctx.input(1);
    const int64_t n = xt.dim(0), c = xt.dim(1);
    int64_t d = 1;
    for (size_t k = 2; k < xt.rank(); ++k) d *= xt.dim(k);

    std::vector<int64_t> targets(static_cast<size_t>(tt.numel()));
    if (tt.dtype() == DType::I32) read_targets<int32_t>(tt, targets);
    else read_targets<int64_t>(tt, targets);
    if (const int64_t bad = first_bad_target(targets, c, prm); bad >= 0)
        ctx.error(ONNXSTREAM_ERR_INVALID_ARGUMENT, "target ", targets[static_cast<size_t>(bad)], " at element ", bad,
                  " is not a class index in 0..", c - 1,
                  prm.has_ignore ? cat(" nor ignore_index ", prm.ignore_index) : std::string(" (no ignore_index)"));

    Tensor x_holder, w_holder;
    const float *x = as_f32(ctx, xt, x_holder);
    const float *w = ctx.has_input(2) ? as_f32(ctx, ctx.input(2), w_holder) : nullptr;

    // SoftmaxCrossEntropyLoss reads the log-probabilities: output 1 when it is asked for, else scratch.
    const float *logp = x;
    Tensor lp_holder;
    if (softmax) {
        float *lp = nullptr;
        Tensor *lp_out = nullptr;
        if (ctx.output_count() > 1) {
            lp_out = &ctx.alloc_output(1);
            lp = out_f32(ctx, *lp_out, lp_holder);
        } else {
            lp_holder = ctx.scratch(DType::F32, xt.shape());
            lp = lp_holder.data<float>();
        }
        log_softmax_axis1(ctx, x, lp, n, c, d);
        if (lp_out) store_f32_output(ctx, *lp_out, lp_holder);
        logp = lp;
    }

    Tensor &y = ctx.alloc_output(0);
    auto loss_at = [&](size_t i, double &weight) {
        const int64_t t = targets[i];
        if (prm.has_ignore && t == prm.ignore_index) {
            weight = 0.0;
            return 0.0;
        }
        const int64_t img = static_cast<int64_t>(i) / d, pos = static_cast<int64_t>(i) % d;
        weight = w ? static_cast<double>(w[t]) : 1.0;
        return -weight * static_cast<double>(logp[(img * c + t) * d + pos]);
    };
    if (prm.reduction == Reduction::None) {
        Tensor y_holder;
        float *dst = out_f32(ctx, y, y_holder);
        double weight = 0.0;
        for (size_t i = 0; i < targets.size(); ++i) dst[i] = static_cast<float>(loss_at(i, weight));
        store_f32_output(ctx, y, y_holder);
        return;
    }
    double total = 0.0, weights = 0.0;
    for (size_t i = 0; i < targets.size(); ++i) {
        double weight = 0.0;
        total += loss_at(i, weight);
        weights += weight;
    }
    write_scalar(y, prm.reduction == Reduction::Sum ? total : total / weights);
}

void nll_run(RunContext &ctx) { loss_run(ctx, false); }
void sce_run(RunContext &ctx) { loss_run(ctx, true); }

} // namespace

void register_loss_ops(Registry &r) {
    r.add("NegativeLogLikelihoodLoss", nll_infer, nll_run);
    r.add("SoftmaxCrossEntropyLoss", sce_infer, sce_run);
}

} // namespace onnxstream

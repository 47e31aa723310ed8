#include "onnx/inference_guard.h"

#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include "util/error.h"
#include "util/strings.h"

namespace onnxstream::importer {

namespace {

constexpr size_t kNone = static_cast<size_t>(-1);

struct Guarded {
    const char *op;
    size_t x; // data input
    size_t w; // weight input whose dims give the kernel shape when the attribute is absent; kNone if none
};

// The operators whose inference is convPoolShapeInference, convTransposeShapeInference or
// maxUnpoolShapeInference (the same indexing).
constexpr Guarded kGuarded[] = {
    {"Conv", 0, 1},         {"ConvInteger", 0, 1},  {"QLinearConv", 0, 3},   {"ConvTranspose", 0, 1},
    {"AveragePool", 0, kNone}, {"MaxPool", 0, kNone}, {"LpPool", 0, kNone}, {"MaxUnpool", 0, kNone},
};

thread_local size_t calls = 0;
// What the last guard rejected on this thread: libonnx 1.17 rethrows exceptions from inference functions
// as its own ShapeInferenceError, so the importer reads the reason here rather than from the exception.
thread_local std::string rejection;

int rank_of(onnx::InferenceContext &ctx, size_t i) {
    if (i >= ctx.getNumInputs()) return -1;
    const onnx::TypeProto *t = ctx.getInputType(i);
    if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape()) return -1;
    return t->tensor_type().shape().dim_size();
}

void check(onnx::InferenceContext &ctx, const Guarded &g) {
    const int xr = rank_of(ctx, g.x);
    if (xr >= 0 && xr < 3)
        fail(ONNXSTREAM_ERR_INVALID_MODEL, g.op, ": the input has rank ", xr,
             "; it must be (N, C, D1, ...) with at least one spatial dimension");
    const onnx::AttributeProto *kernel = ctx.getAttribute("kernel_shape");
    const int wr = g.w != kNone ? rank_of(ctx, g.w) : -1;
    // ConvTranspose reads the weight's dim 1 (output channels per group) even when kernel_shape is given.
    if (wr >= 0 && wr < 2)
        fail(ONNXSTREAM_ERR_INVALID_MODEL, g.op, ": the weight has rank ", wr, "; it must be (M, C/group, k1, ...)");
    if (g.w != kNone && !kernel) {
        if (xr >= 0 && wr >= 0 && wr != xr)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, g.op, ": the input has rank ", xr, " but the weight has rank ", wr,
                 "; they must be equal");
    }
    if (std::string(g.op) == "MaxUnpool") {
        const int ir = rank_of(ctx, 1);
        if (ir >= 0 && ir < 2) fail(ONNXSTREAM_ERR_INVALID_MODEL, g.op, ": the indices have rank ", ir);
    }
    for (const char *name : {"strides", "dilations", "kernel_shape"}) {
        const onnx::AttributeProto *a = ctx.getAttribute(name);
        if (!a) continue;
        if (xr >= 0 && a->ints_size() != xr - 2)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, g.op, ": ", name, " has ", a->ints_size(), " values for ", xr - 2,
                 " spatial dimensions");
        for (int64_t v : a->ints())
            if (v < 1) fail(ONNXSTREAM_ERR_INVALID_MODEL, g.op, ": ", name, " holds ", v, "; each value must be >= 1");
    }
    if (const onnx::AttributeProto *pads = ctx.getAttribute("pads"))
        if (xr >= 0 && pads->ints_size() != 2 * (xr - 2))
            fail(ONNXSTREAM_ERR_INVALID_MODEL, g.op, ": pads has ", pads->ints_size(), " values for ", xr - 2,
                 " spatial dimensions (it needs ", 2 * (xr - 2), ")");
}

// Resize and Pad forms of opset 18 and later that the model keeps (opset_downgrade.h): Resize-13's inference
// would take sizes for the output shape whatever keep_aspect_ratio_policy says, and it and Pad-13's refuse
// scales, sizes or pads listing fewer axes than the input has.
bool newer_form(onnx::InferenceContext &ctx, const std::string &op) {
    if (op == "Pad") return ctx.getNumInputs() > 3;
    if (ctx.getAttribute("axes")) return true;
    const onnx::AttributeProto *policy = ctx.getAttribute("keep_aspect_ratio_policy");
    return policy && policy->s() != "stretch";
}

// Such a node's output gets the input's element type and rank only; the engine's inference gives the
// dimensions (engine_shapes.h), from the constant scales, sizes, pads and axes.
void infer_rank_only(onnx::InferenceContext &ctx) {
    onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
    const onnx::TypeProto *t = ctx.getInputType(0);
    if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape()) return;
    onnx::TensorShapeProto *out = ctx.getOutputType(0)->mutable_tensor_type()->mutable_shape();
    out->clear_dim();
    for (int i = 0; i < t->tensor_type().shape().dim_size(); ++i) out->add_dim();
}

int64_t int_attr(onnx::InferenceContext &ctx, const char *name, int64_t fallback) {
    const onnx::AttributeProto *a = ctx.getAttribute(name);
    return a && a->has_i() ? a->i() : fallback;
}

std::vector<int64_t> ints_attr(onnx::InferenceContext &ctx, const char *name, size_t count, int64_t fallback) {
    const onnx::AttributeProto *a = ctx.getAttribute(name);
    if (!a || a->ints_size() == 0) return std::vector<int64_t>(count, fallback);
    return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

// The spatial output sizes of MaxPool and AveragePool as ONNX defines them and the engine computes them
// (pool.cpp), over ONNX's inference: ONNX 1.12 keeps a ceil_mode window that would start in the end
// padding, and AveragePool's opset-11 schema, which opset 19's form is read as, ignores dilations.
// auto_pad SAME_* sizes depend on neither and are left as ONNX gives them.
void fix_pool_output(onnx::InferenceContext &ctx) {
    const std::string auto_pad = ctx.getAttribute("auto_pad") ? ctx.getAttribute("auto_pad")->s() : "NOTSET";
    if (auto_pad != "NOTSET" && auto_pad != "VALID" && !auto_pad.empty()) return;
    const onnx::TypeProto *x = ctx.getNumInputs() > 0 ? ctx.getInputType(0) : nullptr;
    onnx::TypeProto *y = ctx.getNumOutputs() > 0 ? ctx.getOutputType(0) : nullptr;
    if (!x || !x->has_tensor_type() || !x->tensor_type().has_shape() || !y || !y->has_tensor_type() ||
        !y->tensor_type().has_shape())
        return;
    const auto &xs = x->tensor_type().shape();
    auto *ys = y->mutable_tensor_type()->mutable_shape();
    if (xs.dim_size() < 3 || ys->dim_size() != xs.dim_size()) return;
    const size_t sp = static_cast<size_t>(xs.dim_size() - 2);
    const std::vector<int64_t> kernel = ints_attr(ctx, "kernel_shape", 0, 0);
    const std::vector<int64_t> strides = ints_attr(ctx, "strides", sp, 1);
    const std::vector<int64_t> dilations = ints_attr(ctx, "dilations", sp, 1);
    std::vector<int64_t> pads = ints_attr(ctx, "pads", 2 * sp, 0);
    if (kernel.size() != sp || strides.size() != sp || dilations.size() != sp || pads.size() != 2 * sp) return;
    if (auto_pad == "VALID") pads.assign(2 * sp, 0);
    const bool ceil_mode = int_attr(ctx, "ceil_mode", 0) == 1;
    constexpr int64_t kLimit = int64_t(1) << 40; // far beyond any tensor, far from overflowing the products
    for (size_t i = 0; i < sp; ++i) {
        const auto &d = xs.dim(static_cast<int>(i) + 2);
        const int64_t in = d.has_dim_value() ? d.dim_value() : -1, s = strides[i];
        const int64_t pb = pads[i], pe = pads[i + sp];
        if (in < 0 || in > kLimit || kernel[i] < 1 || kernel[i] > kLimit || dilations[i] < 1 ||
            dilations[i] > kLimit || s < 1 || pb < 0 || pb > kLimit || pe < 0 || pe > kLimit)
            continue;
        const int64_t span = in + pb + pe - ((kernel[i] - 1) * dilations[i] + 1);
        if (span < 0) continue; // the engine reports it
        int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
        if (ceil_mode && (out - 1) * s >= in + pb) --out;
        ys->mutable_dim(static_cast<int>(i) + 2)->set_dim_value(out);
    }
}

void install() {
    const auto &map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    auto range = map.find(onnx::ONNX_DOMAIN);
    if (range == map.end()) return;
    for (const char *op : {"Resize", "Pad"}) {
        std::unordered_set<const onnx::OpSchema *> seen;
        for (int v = range->second.first; v <= range->second.second; ++v) {
            const onnx::OpSchema *s = onnx::OpSchemaRegistry::Schema(op, v, onnx::ONNX_DOMAIN);
            if (!s || !seen.insert(s).second || !s->has_type_and_shape_inference_function()) continue;
            onnx::InferenceFunction original = s->GetTypeAndShapeInferenceFunction();
            const std::string name = op;
            const_cast<onnx::OpSchema *>(s)->TypeAndShapeInferenceFunction(
                [name, original](onnx::InferenceContext &ctx) {
                    if (newer_form(ctx, name))
                        infer_rank_only(ctx);
                    else
                        original(ctx);
                });
        }
    }
    for (const Guarded &g : kGuarded) {
        std::unordered_set<const onnx::OpSchema *> seen;
        for (int v = range->second.first; v <= range->second.second; ++v) {
            const onnx::OpSchema *s = onnx::OpSchemaRegistry::Schema(g.op, v, onnx::ONNX_DOMAIN);
            if (!s || !seen.insert(s).second) continue;
            onnx::InferenceFunction original = s->GetTypeAndShapeInferenceFunction();
            // The registry hands out const schemas but owns them as ordinary objects; replacing the
            // function once, before any inference runs, is how ONNX itself registers them.
            const_cast<onnx::OpSchema *>(s)->TypeAndShapeInferenceFunction(
                [g, original](onnx::InferenceContext &ctx) {
                    ++calls;
                    try {
                        check(ctx, g);
                    } catch (const Error &e) {
                        rejection = e.what();
                        throw;
                    }
                    original(ctx);
                    if (std::string(g.op) == "MaxPool" || std::string(g.op) == "AveragePool") fix_pool_output(ctx);
                });
        }
    }
    // Data propagation (the shape values Shape -> Gather -> Concat chains carry): ONNX 1.12's Shape reads its
    // input's type without checking that it is known, and crashes on one that is not (the branches of a
    // run-time If before their inner Ifs resolve). Such a Shape propagates nothing instead.
    std::unordered_set<const onnx::OpSchema *> shape_versions;
    for (int v = range->second.first; v <= range->second.second; ++v) {
        const onnx::OpSchema *s = onnx::OpSchemaRegistry::Schema("Shape", v, onnx::ONNX_DOMAIN);
        if (!s || !s->has_data_propagation_function() || !shape_versions.insert(s).second) continue;
        onnx::DataPropagationFunction original = s->GetDataPropagationFunction();
        const_cast<onnx::OpSchema *>(s)->PartialDataPropagationFunction([original](onnx::DataPropagationContext &ctx) {
            const onnx::TypeProto *t = ctx.getNumInputs() > 0 ? ctx.getInputType(0) : nullptr;
            if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape()) return;
            original(ctx);
        });
    }
}

} // namespace

bool is_guarded_op(const std::string &op_type) {
    for (const Guarded &g : kGuarded)
        if (op_type == g.op) return true;
    return false;
}

void reset_guarded_calls() {
    calls = 0;
    rejection.clear();
}
const std::string &guard_rejection() { return rejection; }
size_t guarded_calls() { return calls; }

void install_inference_guards() {
    static std::once_flag once;
    std::call_once(once, install);
}

} // namespace onnxstream::importer

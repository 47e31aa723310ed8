// The helpers of ops/elementwise.h: numpy broadcasting, float16 staging and shape inference shared by the
// element-wise op families (arithmetic.cpp, comparison.cpp, unary_math.cpp, cast.cpp, activation.cpp).
#include "ops/elementwise.h"

#include <cstring>

namespace onnxstream {

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

std::vector<TensorInfo> infer_same_type_inputs(const InferContext &ctx, size_t min, size_t max,
                                               std::initializer_list<DType> allowed,
                                               DType *out_dtype) {
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

} // namespace onnxstream

// Equal, Less, Greater, LessOrEqual, GreaterOrEqual, And, Or, Xor, Not and Where with numpy broadcasting at
// any rank. float16 is compared in float32, float64 in double.
#include "ops/elementwise.h"

#include "ops/elementwise_int.h"
#include "ops/registry.h"

namespace onnxstream {

namespace {

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
    dispatch_exact(a.dtype(), [&](auto tag) {
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

} // namespace

void register_comparison_ops(Registry &r) {
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
}

} // namespace onnxstream

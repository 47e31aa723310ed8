// BitShift, BitwiseAnd, BitwiseOr, BitwiseXor and BitwiseNot on integer tensors, with numpy broadcasting at
// any rank through the parallel broadcast walk of ops/elementwise.h.
#include "ops/elementwise.h"

#include <limits>
#include <type_traits>

#include "ops/elementwise_int.h"
#include "ops/registry.h"

namespace onnxstream {

namespace {

// ---------------------------------------------------------------------------------------------------------
// BitShift

const std::initializer_list<DType> kUnsignedTypes = {DType::U64, DType::U32, DType::U16, DType::U8};

std::vector<TensorInfo> infer_bitshift(const InferContext &ctx) {
    auto out = infer_same_type_inputs(ctx, 2, 2, kUnsignedTypes);
    if (!ctx.attrs().has("direction")) ctx.error("attribute direction is required (LEFT or RIGHT)");
    const std::string direction = ctx.attrs().get_string("direction", "");
    if (direction != "LEFT" && direction != "RIGHT")
        ctx.error("attribute direction is '", direction, "', expected LEFT or RIGHT");
    return out;
}

// A shift by the bit width or more gives 0: ONNX leaves it undefined, C++ makes it undefined behaviour,
// and x86 would shift by the count modulo the width. uint8/uint16 are shifted in unsigned int, so the bits
// shifted out past the type's width are dropped by the conversion back.
struct ShiftLeftOp {
    template <typename T> T operator()(T x, T s) const {
        using W = std::common_type_t<T, unsigned>;
        return s >= std::numeric_limits<T>::digits ? T(0) : static_cast<T>(static_cast<W>(x) << s);
    }
};
struct ShiftRightOp {
    template <typename T> T operator()(T x, T s) const {
        return s >= std::numeric_limits<T>::digits ? T(0) : static_cast<T>(x >> s);
    }
};

template <typename Op> void shift_all(RunContext &ctx, Tensor &out) {
    const Tensor &a = ctx.input(0), &b = ctx.input(1);
    dispatch_int(out.dtype(), [&](auto tag) {
        using T = decltype(tag);
        // infer_bitshift admits unsigned dtypes only; the signed instantiations are never called.
        if constexpr (std::is_unsigned_v<T>)
            binary_broadcast(ctx.pool(), out.shape(), a.data<T>(), a.shape(), b.data<T>(), b.shape(),
                             out.data<T>(), Op{});
    });
}

void run_bitshift(RunContext &ctx) {
    Tensor &out = ctx.alloc_output(0);
    if (out.numel() == 0) return;
    if (ctx.attrs().get_string("direction", "") == "LEFT")
        shift_all<ShiftLeftOp>(ctx, out);
    else
        shift_all<ShiftRightOp>(ctx, out);
}

// ---------------------------------------------------------------------------------------------------------
// BitwiseAnd BitwiseOr BitwiseXor BitwiseNot

struct BitAndOp {
    template <typename T> T operator()(T a, T b) const { return static_cast<T>(a & b); }
};
struct BitOrOp {
    template <typename T> T operator()(T a, T b) const { return static_cast<T>(a | b); }
};
struct BitXorOp {
    template <typename T> T operator()(T a, T b) const { return static_cast<T>(a ^ b); }
};

std::vector<TensorInfo> infer_bitwise_binary(const InferContext &ctx) {
    return infer_same_type_inputs(ctx, 2, 2, kIntegerTypes);
}

template <typename Op> void run_bitwise_binary(RunContext &ctx) {
    Tensor &out = ctx.alloc_output(0);
    if (out.numel() == 0) return;
    const Tensor &a = ctx.input(0), &b = ctx.input(1);
    dispatch_int(out.dtype(), [&](auto tag) {
        using T = decltype(tag);
        binary_broadcast(ctx.pool(), out.shape(), a.data<T>(), a.shape(), b.data<T>(), b.shape(),
                         out.data<T>(), Op{});
    });
}

std::vector<TensorInfo> infer_bitwise_not(const InferContext &ctx) {
    return infer_same_as_input(ctx, kIntegerTypes);
}

void run_bitwise_not(RunContext &ctx) {
    const Tensor &x = ctx.input(0);
    Tensor &out = ctx.alloc_output(0);
    dispatch_int(out.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T *a = x.data<T>();
        T *y = out.data<T>();
        parallel_for(ctx.pool(), static_cast<size_t>(x.numel()), kElementwiseTile, [&](size_t b, size_t e) {
            for (size_t i = b; i < e; ++i) y[i] = static_cast<T>(~a[i]);
        });
    });
}

} // namespace

void register_bitwise_ops(Registry &r) {
    // Output i from input element i: safe to write over a dying same-shaped input.
    r.add("BitShift", infer_bitshift, run_bitshift).with_output_may_reuse_input();
    r.add("BitwiseAnd", infer_bitwise_binary, run_bitwise_binary<BitAndOp>).with_output_may_reuse_input();
    r.add("BitwiseOr", infer_bitwise_binary, run_bitwise_binary<BitOrOp>).with_output_may_reuse_input();
    r.add("BitwiseXor", infer_bitwise_binary, run_bitwise_binary<BitXorOp>).with_output_may_reuse_input();
    r.add("BitwiseNot", infer_bitwise_not, run_bitwise_not).with_output_may_reuse_input();
}

} // namespace onnxstream

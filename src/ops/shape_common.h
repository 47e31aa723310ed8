// Helpers shared by the shape/data-movement op files (shape_ops.cpp, copy_ops.cpp, gather_scatter.cpp,
// transpose.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ops/op.h"

namespace onnxstream::shapeops {

template <typename... Args> [[noreturn]] inline void invalid(const std::string &where, Args &&...args) {
    fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": ", std::forward<Args>(args)...);
}

// Map an ONNX axis in [-rank, rank) to [0, rank).
inline int64_t normalize_axis(const std::string &where, int64_t axis, int64_t rank,
                              const char *what = "axis") {
    if (axis < -rank || axis >= rank)
        invalid(where, what, " ", axis, " is out of range for a rank-", rank, " tensor (expected ", -rank,
                "..", rank - 1, ")");
    return axis < 0 ? axis + rank : axis;
}

// Normalise a list of axes and reject duplicates.
inline std::vector<int64_t> normalize_axes(const std::string &where, const std::vector<int64_t> &axes,
                                           int64_t rank, const char *what = "axes") {
    std::vector<int64_t> out;
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (int64_t a : axes) {
        int64_t n = normalize_axis(where, a, rank, what);
        if (seen[static_cast<size_t>(n)]) invalid(where, what, " lists axis ", a, " twice");
        seen[static_cast<size_t>(n)] = true;
        out.push_back(n);
    }
    return out;
}

// Shapes computed from values (shape inputs, repeats, pads) are checked before anything multiplies
// them out: no negative dimension and at most 2^48 elements, so absurd values in a malformed model or a
// run-time input give an error instead of an int64 overflow.
constexpr int64_t kMaxElements = int64_t{1} << 48;

inline const Shape &checked_shape(const std::string &where, const Shape &shape, const char *what) {
    bool zero = false;
    for (int64_t d : shape) {
        if (d < 0) invalid(where, what, " ", shape_str(shape), " has a negative dimension");
        zero = zero || d == 0;
    }
    if (zero) return shape;
    int64_t n = 1;
    for (int64_t d : shape) {
        if (d > kMaxElements / n) invalid(where, what, " ", shape_str(shape), " has too many elements");
        n *= d;
    }
    return shape;
}

// The values of integer input i when they are known while planning (a weight), or nullopt when the
// input is computed at run time. Checks the dtype either way.
inline std::optional<std::vector<int64_t>> const_ints(const InferContext &ctx, size_t i, const char *what) {
    const TensorInfo &info = ctx.input(i);
    if (info.dtype != DType::I64 && info.dtype != DType::I32)
        ctx.error(what, " (input ", i, ") must be int64 or int32, got ", dtype_name(info.dtype));
    const Tensor *t = ctx.constant(i);
    if (!t) return std::nullopt;
    return int_values(*t);
}

// Element count of an int list input (shape, axes, pads, ...), which must be 1-D (or a scalar).
inline int64_t int_list_length(const InferContext &ctx, size_t i, const char *what) {
    const TensorInfo &info = ctx.input(i);
    if (info.shape.size() > 1)
        ctx.error(what, " (input ", i, ") must be 1-D, got shape ", shape_str(info.shape));
    return shape_numel(info.shape);
}

// The numpy-style broadcast of two shapes (MatMul's batch dimensions); false when they do not broadcast.
inline bool broadcast_shapes(const Shape &a, const Shape &b, Shape &out) {
    const size_t rank = std::max(a.size(), b.size());
    out.assign(rank, 1);
    for (size_t i = 0; i < rank; ++i) {
        const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
        const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
        if (da != db && da != 1 && db != 1) return false;
        out[i] = da == 1 ? db : da;
    }
    return true;
}

inline std::vector<int64_t> contiguous_strides(const Shape &shape) {
    std::vector<int64_t> s(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
    return s;
}

inline TensorInfo info_like(const TensorInfo &in, Shape shape) {
    return TensorInfo{in.dtype, std::move(shape), in.quant};
}

// Allocate output 0 with infer's shape and input 0's quantization parameters (data-movement ops keep
// the values' encoding).
inline Tensor &alloc_like_input(RunContext &ctx, size_t k = 0) {
    Tensor &out = ctx.alloc_output(k);
    out.set_quant(ctx.input(0).quant());
    return out;
}

// Bytes a parallel task should move at least: waking pool threads costs more than copying less, and
// an oversubscribed machine can make every dispatch wait for a time slice.
constexpr size_t kTaskBytes = 256 * 1024;

// Pool tile (items per task) for items of item_bytes each.
inline size_t task_tile(size_t item_bytes) {
    return std::max<size_t>(1, kTaskBytes / std::max<size_t>(item_bytes, 1));
}

// Store `count` copies of the esz-byte element at `value`.
void fill_elements(void *dst, size_t count, const void *value, size_t esz);
// memcpy split across the pool when it is large.
void parallel_memcpy(pthreadpool_t pool, void *dst, const void *src, size_t bytes);
// Write `value` converted to dtype into out (dtype_size(dtype) bytes); integer targets saturate.
void store_scalar(DType dtype, double value, void *out);

} // namespace onnxstream::shapeops

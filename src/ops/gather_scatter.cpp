// Index-driven data movement: Gather, GatherElements, GatherND, ScatterND, ScatterElements, Compress,
// ReverseSequence. Indices are checked at run time (negative ones count from the end); an index outside its axis
// is an INVALID_ARGUMENT error since it usually comes from the data being processed.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <type_traits>

#include "ops/elementwise_int.h"
#include "ops/registry.h"
#include "ops/shape_common.h"
#include "tensor/half.h"

namespace onnxstream {

namespace shapeops {

namespace {

template <typename I> int64_t index_at(const void *p, size_t i) { return static_cast<const I *>(p)[i]; }

int64_t checked_index(const std::string &where, int64_t v, int64_t dim, const char *what) {
    if (v < -dim || v >= dim)
        fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, where, ": ", what, " ", v,
             " is out of range for an axis of size ", dim, " (expected ", -dim, "..", dim - 1, ")");
    return v < 0 ? v + dim : v;
}

// All index values of an int32/int64 tensor, normalised against `dim`.
std::vector<int64_t> normalized_indices(const std::string &where, const Tensor &t, int64_t dim) {
    std::vector<int64_t> out(static_cast<size_t>(t.numel()));
    bool i64 = t.dtype() == DType::I64;
    for (size_t i = 0; i < out.size(); ++i)
        out[i] = checked_index(where, i64 ? index_at<int64_t>(t.raw(), i) : index_at<int32_t>(t.raw(), i),
                               dim, "index");
    return out;
}

void require_index_dtype(const InferContext &ctx, size_t i) {
    DType d = ctx.input(i).dtype;
    if (d != DType::I64 && d != DType::I32)
        ctx.error("indices (input ", i, ") must be int64 or int32, got ", dtype_name(d));
}

template <typename T>
void gather_scalars(T *dst, const T *src, const std::vector<int64_t> &idx, size_t begin, size_t end,
                    int64_t m, int64_t n) {
    for (size_t it = begin; it < end; ++it) {
        int64_t o = static_cast<int64_t>(it) / m, j = static_cast<int64_t>(it) % m;
        dst[it] = src[o * n + idx[static_cast<size_t>(j)]];
    }
}

// ---- Gather ----

std::vector<TensorInfo> gather_infer(const InferContext &ctx) {
    ctx.require_inputs(2, 2);
    const TensorInfo &data = ctx.input(0);
    const TensorInfo &indices = ctx.input(1);
    require_index_dtype(ctx, 1);
    int64_t rank = static_cast<int64_t>(data.shape.size());
    if (rank == 0) ctx.error("cannot gather from a scalar");
    size_t axis = static_cast<size_t>(normalize_axis(ctx.node.where, ctx.attrs().get_int("axis", 0), rank));
    if (const Tensor *t = ctx.constant(1)) { // weight indices: a bad one is the model's fault
        int64_t dim = data.shape[axis];
        for (int64_t v : int_values(*t))
            if (v < -dim || v >= dim) ctx.error("index ", v, " is out of range for an axis of size ", dim);
    }
    Shape out(data.shape.begin(), data.shape.begin() + static_cast<std::ptrdiff_t>(axis));
    out.insert(out.end(), indices.shape.begin(), indices.shape.end());
    out.insert(out.end(), data.shape.begin() + static_cast<std::ptrdiff_t>(axis) + 1, data.shape.end());
    return {info_like(data, out)};
}

// Gather along axis 0 of a weight the executor streams (an embedding table): read only the rows the indices
// name, each once, instead of the whole table (a prompt needs 77 of CLIP's 49,408 token rows).
void gather_streamed_rows(RunContext &ctx, const std::vector<int64_t> &idx, Tensor &out) {
    const size_t row_bytes = out.numel() ? out.byte_size() / idx.size() : 0;
    std::map<int64_t, Tensor> rows;
    for (size_t j = 0; j < idx.size(); ++j) {
        auto it = rows.find(idx[j]);
        if (it == rows.end()) it = rows.emplace(idx[j], ctx.read_weight_rows(0, idx[j], idx[j] + 1)).first;
        std::memcpy(static_cast<char *>(out.raw()) + j * row_bytes, it->second.raw(), row_bytes);
    }
}

void gather_run(RunContext &ctx) {
    Tensor data = ctx.input(0);
    size_t axis = static_cast<size_t>(
        normalize_axis(ctx.node.where, ctx.attrs().get_int("axis", 0), static_cast<int64_t>(data.rank())));
    int64_t n = data.dim(axis);
    std::vector<int64_t> idx = normalized_indices(ctx.node.where, ctx.input(1), n);
    Tensor &out = alloc_like_input(ctx);
    if (ctx.is_streamed(0)) {
        if (axis == 0) {
            if (out.numel() > 0) gather_streamed_rows(ctx, idx, out);
            return;
        }
        data = ctx.read_weight_rows(0, 0, data.dim(0)); // other axes need every row
    }
    size_t esz = dtype_size(data.dtype());
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < data.rank(); ++i)
        if (i < axis)
            outer *= data.dim(i);
        else if (i > axis)
            inner *= data.dim(i);
    int64_t m = static_cast<int64_t>(idx.size());
    size_t items = static_cast<size_t>(outer * m);
    if (items == 0 || inner == 0) return;
    if (inner == 1) {
        parallel_for(ctx.pool(), items, task_tile(esz), [&](size_t b, size_t e) {
            switch (esz) {
            case 1: gather_scalars(out.data<uint8_t>(), data.data<uint8_t>(), idx, b, e, m, n); break;
            case 2: gather_scalars(out.data<uint16_t>(), data.data<uint16_t>(), idx, b, e, m, n); break;
            case 4: gather_scalars(out.data<uint32_t>(), data.data<uint32_t>(), idx, b, e, m, n); break;
            default: gather_scalars(out.data<uint64_t>(), data.data<uint64_t>(), idx, b, e, m, n); break;
            }
        });
        return;
    }
    size_t block = static_cast<size_t>(inner) * esz;
    const char *src = static_cast<const char *>(data.raw());
    char *dst = static_cast<char *>(out.raw());
    parallel_for(ctx.pool(), items, task_tile(block), [&](size_t b, size_t e) {
        for (size_t it = b; it < e; ++it) {
            int64_t o = static_cast<int64_t>(it) / m, j = static_cast<int64_t>(it) % m;
            std::memcpy(dst + it * block,
                        src + static_cast<size_t>(o * n + idx[static_cast<size_t>(j)]) * block, block);
        }
    });
}

// ---- GatherElements ----

std::vector<TensorInfo> gather_elements_infer(const InferContext &ctx) {
    ctx.require_inputs(2, 2);
    const TensorInfo &data = ctx.input(0);
    const TensorInfo &indices = ctx.input(1);
    require_index_dtype(ctx, 1);
    int64_t rank = static_cast<int64_t>(data.shape.size());
    if (rank == 0) ctx.error("cannot gather from a scalar");
    size_t axis = static_cast<size_t>(normalize_axis(ctx.node.where, ctx.attrs().get_int("axis", 0), rank));
    if (indices.shape.size() != data.shape.size())
        ctx.error("indices have rank ", indices.shape.size(), " but data has rank ", rank);
    for (size_t i = 0; i < data.shape.size(); ++i)
        if (i != axis && indices.shape[i] > data.shape[i])
            ctx.error("indices shape ", shape_str(indices.shape), " exceeds data shape ",
                      shape_str(data.shape), " on axis ", i);
    return {info_like(data, indices.shape)};
}

// Out-of-range indices raise `bad` (exceptions must not leave pool threads); the caller reports them.
template <typename T, typename I>
void gather_elements_rows(T *dst, const T *src, const I *idx, const Shape &ishape,
                          const std::vector<int64_t> &dstrides, size_t axis, int64_t axis_dim,
                          std::atomic<bool> &bad, size_t row_begin, size_t row_end) {
    size_t r = ishape.size();
    int64_t width = ishape[r - 1], axis_stride = dstrides[axis];
    std::vector<int64_t> pos(r - 1);
    int64_t linear = static_cast<int64_t>(row_begin);
    for (size_t i = r - 1; i-- > 0;) {
        pos[i] = linear % ishape[i];
        linear /= ishape[i];
    }
    // Along the last axis the row's own position is replaced by the index; otherwise it advances by 1.
    int64_t j_stride = axis == r - 1 ? 0 : 1;
    for (size_t row = row_begin; row < row_end; ++row) {
        int64_t base = 0;
        for (size_t i = 0; i + 1 < r; ++i)
            if (i != axis) base += pos[i] * dstrides[i];
        size_t o = row * static_cast<size_t>(width);
        for (int64_t j = 0; j < width; ++j) {
            int64_t v = static_cast<int64_t>(idx[o + static_cast<size_t>(j)]);
            if (v < 0) v += axis_dim;
            if (v < 0 || v >= axis_dim) {
                bad.store(true, std::memory_order_relaxed);
                v = 0;
            }
            dst[o + static_cast<size_t>(j)] = src[base + j * j_stride + v * axis_stride];
        }
        for (size_t i = r - 1; i-- > 0;) {
            if (++pos[i] < ishape[i]) break;
            pos[i] = 0;
        }
    }
}

template <typename T>
void gather_elements_typed(RunContext &ctx, const Tensor &data, const Tensor &indices, Tensor &out,
                           size_t axis) {
    const Shape &ishape = indices.shape();
    std::vector<int64_t> dstrides = contiguous_strides(data.shape());
    int64_t width = ishape.back();
    size_t rows = static_cast<size_t>(indices.numel() / width);
    size_t tile = task_tile(static_cast<size_t>(width) * sizeof(T));
    int64_t axis_dim = data.dim(axis);
    std::atomic<bool> bad{false};
    parallel_for(ctx.pool(), rows, tile, [&](size_t b, size_t e) {
        if (indices.dtype() == DType::I64)
            gather_elements_rows(out.data<T>(), data.data<T>(), indices.data<int64_t>(), ishape, dstrides,
                                 axis, axis_dim, bad, b, e);
        else
            gather_elements_rows(out.data<T>(), data.data<T>(), indices.data<int32_t>(), ishape, dstrides,
                                 axis, axis_dim, bad, b, e);
    });
    if (bad) normalized_indices(ctx.node.where, indices, axis_dim); // throws, naming the first bad index
}

void gather_elements_run(RunContext &ctx) {
    const Tensor &data = ctx.input(0);
    const Tensor &indices = ctx.input(1);
    size_t axis = static_cast<size_t>(
        normalize_axis(ctx.node.where, ctx.attrs().get_int("axis", 0), static_cast<int64_t>(data.rank())));
    Tensor &out = alloc_like_input(ctx);
    if (out.numel() == 0) return;
    switch (dtype_size(data.dtype())) {
    case 1: gather_elements_typed<uint8_t>(ctx, data, indices, out, axis); break;
    case 2: gather_elements_typed<uint16_t>(ctx, data, indices, out, axis); break;
    case 4: gather_elements_typed<uint32_t>(ctx, data, indices, out, axis); break;
    default: gather_elements_typed<uint64_t>(ctx, data, indices, out, axis); break;
    }
}

// ---- GatherND ----

struct GatherNdDims {
    int64_t batch = 1;   // product of the first batch_dims dims (shared by data and indices)
    int64_t tuples = 1;  // index tuples per batch
    int64_t k = 0;       // entries per tuple
    int64_t slice = 1;   // elements each tuple selects
    int64_t per_batch = 1; // data elements per batch
};

GatherNdDims gather_nd_dims(const Shape &data, const Shape &indices, int64_t b) {
    GatherNdDims g;
    g.k = indices.back();
    for (int64_t i = 0; i < b; ++i) g.batch *= data[static_cast<size_t>(i)];
    for (size_t i = static_cast<size_t>(b); i + 1 < indices.size(); ++i) g.tuples *= indices[i];
    for (size_t i = static_cast<size_t>(b); i < data.size(); ++i) {
        g.per_batch *= data[i];
        if (static_cast<int64_t>(i) >= b + g.k) g.slice *= data[i];
    }
    return g;
}

std::vector<TensorInfo> gather_nd_infer(const InferContext &ctx) {
    ctx.require_inputs(2, 2);
    const TensorInfo &data = ctx.input(0);
    const TensorInfo &indices = ctx.input(1);
    require_index_dtype(ctx, 1);
    int64_t r = static_cast<int64_t>(data.shape.size()), q = static_cast<int64_t>(indices.shape.size());
    if (r < 1 || q < 1) ctx.error("data and indices must have rank >= 1");
    int64_t b = ctx.attrs().get_int("batch_dims", 0);
    if (b < 0 || b >= std::min(r, q))
        ctx.error("batch_dims ", b, " must be in 0..", std::min(r, q) - 1, " for data of rank ", r,
                  " and indices of rank ", q);
    for (size_t i = 0; i < static_cast<size_t>(b); ++i)
        if (data.shape[i] != indices.shape[i])
            ctx.error("batch dimension ", i, " differs: data ", shape_str(data.shape), ", indices ",
                      shape_str(indices.shape));
    int64_t k = indices.shape.back();
    if (k < 1 || k > r - b)
        ctx.error("the last dimension of indices is ", k, ", expected 1..", r - b, " (data rank ", r,
                  " minus batch_dims ", b, ")");
    Shape out(indices.shape.begin(), indices.shape.end() - 1);
    out.insert(out.end(), data.shape.begin() + b + k, data.shape.end());
    return {info_like(data, out)};
}

void gather_nd_run(RunContext &ctx) {
    const Tensor &data = ctx.input(0);
    const Tensor &indices = ctx.input(1);
    int64_t b = ctx.attrs().get_int("batch_dims", 0);
    GatherNdDims g = gather_nd_dims(data.shape(), indices.shape(), b);
    Tensor &out = alloc_like_input(ctx);
    if (out.numel() == 0) return;
    // Element offset of every tuple in data, checked (and negative entries normalised) before any copy.
    std::vector<int64_t> strides(static_cast<size_t>(g.k));
    int64_t stride = g.slice;
    for (int64_t j = g.k; j-- > 0;) {
        strides[static_cast<size_t>(j)] = stride;
        stride *= data.dim(static_cast<size_t>(b + j));
    }
    size_t count = static_cast<size_t>(g.batch * g.tuples);
    std::vector<int64_t> offsets(count);
    bool i64 = indices.dtype() == DType::I64;
    for (size_t t = 0; t < count; ++t) {
        int64_t off = static_cast<int64_t>(t) / g.tuples * g.per_batch;
        for (int64_t j = 0; j < g.k; ++j) {
            size_t at = t * static_cast<size_t>(g.k) + static_cast<size_t>(j);
            int64_t v = i64 ? index_at<int64_t>(indices.raw(), at) : index_at<int32_t>(indices.raw(), at);
            off += checked_index(ctx.node.where, v, data.dim(static_cast<size_t>(b + j)), "index") *
                   strides[static_cast<size_t>(j)];
        }
        offsets[t] = off;
    }
    size_t block = static_cast<size_t>(g.slice) * dtype_size(data.dtype());
    const char *src = static_cast<const char *>(data.raw());
    char *dst = static_cast<char *>(out.raw());
    size_t esz = dtype_size(data.dtype());
    parallel_for(ctx.pool(), count, task_tile(block), [&](size_t begin, size_t end) {
        for (size_t t = begin; t < end; ++t)
            std::memcpy(dst + t * block, src + static_cast<size_t>(offsets[t]) * esz, block);
    });
}

// ---- ScatterND ----

enum class Reduction { None, Add, Mul, Max, Min };

Reduction scatter_reduction(const std::string &where, const Attributes &attrs) {
    std::string r = attrs.get_string("reduction", "none");
    if (r == "none") return Reduction::None;
    if (r == "add") return Reduction::Add;
    if (r == "mul") return Reduction::Mul;
    if (r == "max") return Reduction::Max;
    if (r == "min") return Reduction::Min;
    fail(ONNXSTREAM_ERR_UNSUPPORTED, where, ": reduction '", r,
         "' is not supported (none, add, mul, max, min)");
}

template <typename T> T reduce_one(T a, T b, Reduction r) {
    if constexpr (std::is_integral_v<T>) { // two's complement wrap-around, never signed overflow
        using U = std::make_unsigned_t<T>;
        if (r == Reduction::Add) return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
        if (r == Reduction::Mul)
            return static_cast<T>(static_cast<U>(static_cast<uint64_t>(static_cast<U>(a)) *
                                                 static_cast<uint64_t>(static_cast<U>(b))));
    }
    switch (r) {
    case Reduction::Add: return static_cast<T>(a + b);
    case Reduction::Mul: return static_cast<T>(a * b);
    case Reduction::Max: return std::max(a, b);
    default: return std::min(a, b);
    }
}

template <typename T> void reduce_slice(void *dst, const void *src, size_t n, Reduction r) {
    T *d = static_cast<T *>(dst);
    const T *s = static_cast<const T *>(src);
    for (size_t i = 0; i < n; ++i) d[i] = reduce_one(d[i], s[i], r);
}

void reduce_slice_half(void *dst, const void *src, size_t n, Reduction r) {
    uint16_t *d = static_cast<uint16_t *>(dst);
    const uint16_t *s = static_cast<const uint16_t *>(src);
    for (size_t i = 0; i < n; ++i)
        d[i] = float_to_half(reduce_one(half_to_float(d[i]), half_to_float(s[i]), r));
}

std::vector<TensorInfo> scatter_nd_infer(const InferContext &ctx) {
    ctx.require_inputs(3, 3);
    const TensorInfo &data = ctx.input(0);
    const TensorInfo &indices = ctx.input(1);
    const TensorInfo &updates = ctx.input(2);
    if (indices.dtype != DType::I64) ctx.error("indices must be int64, got ", dtype_name(indices.dtype));
    if (updates.dtype != data.dtype)
        ctx.error("updates are ", dtype_name(updates.dtype), " but data is ", dtype_name(data.dtype));
    Reduction red = scatter_reduction(ctx.node.where, ctx.attrs());
    if (red != Reduction::None && (data.dtype == DType::Bool || data.dtype == DType::BF16))
        fail(ONNXSTREAM_ERR_UNSUPPORTED, ctx.node.where, ": reductions on ", dtype_name(data.dtype),
             " tensors are not supported");
    if (data.shape.empty() || indices.shape.empty()) ctx.error("data and indices must have rank >= 1");
    int64_t k = indices.shape.back();
    if (k < 1 || k > static_cast<int64_t>(data.shape.size()))
        ctx.error("the last dimension of indices is ", k, ", expected 1..", data.shape.size());
    Shape expected(indices.shape.begin(), indices.shape.end() - 1);
    expected.insert(expected.end(), data.shape.begin() + k, data.shape.end());
    if (updates.shape != expected)
        ctx.error("updates have shape ", shape_str(updates.shape), ", expected ", shape_str(expected));
    return {info_like(data, data.shape)};
}

void scatter_nd_run(RunContext &ctx) {
    const Tensor &data = ctx.input(0);
    const Tensor &indices = ctx.input(1);
    const Tensor &updates = ctx.input(2);
    Reduction red = scatter_reduction(ctx.node.where, ctx.attrs());
    Tensor &out = alloc_like_input(ctx);
    parallel_memcpy(ctx.pool(), out.raw(), data.raw(), data.byte_size());
    size_t k = static_cast<size_t>(indices.shape().back());
    std::vector<int64_t> strides = contiguous_strides(data.shape());
    size_t esz = dtype_size(data.dtype());
    size_t slice = 1;
    for (size_t i = k; i < data.rank(); ++i) slice *= static_cast<size_t>(data.dim(i));
    size_t count = k == 0 ? 0 : static_cast<size_t>(indices.numel()) / k;
    const int64_t *idx = indices.data<int64_t>();
    char *dst = static_cast<char *>(out.raw());
    const char *src = static_cast<const char *>(updates.raw());
    // Sequential over updates: duplicate indices must accumulate (reductions) or let the last write win.
    for (size_t u = 0; u < count; ++u) {
        int64_t off = 0;
        for (size_t j = 0; j < k; ++j)
            off += checked_index(ctx.node.where, idx[u * k + j], data.dim(j), "index") * strides[j];
        char *d = dst + static_cast<size_t>(off) * esz;
        const char *s = src + u * slice * esz;
        if (red == Reduction::None) {
            parallel_memcpy(ctx.pool(), d, s, slice * esz);
            continue;
        }
        if (data.dtype() == DType::F32)
            reduce_slice<float>(d, s, slice, red);
        else if (data.dtype() == DType::F16)
            reduce_slice_half(d, s, slice, red);
        else
            dispatch_exact(data.dtype(), [&](auto tag) { reduce_slice<decltype(tag)>(d, s, slice, red); });
    }
}

// ---- ScatterElements ----

std::vector<TensorInfo> scatter_elements_infer(const InferContext &ctx) {
    ctx.require_inputs(3, 3);
    const TensorInfo &data = ctx.input(0);
    const TensorInfo &indices = ctx.input(1);
    const TensorInfo &updates = ctx.input(2);
    require_index_dtype(ctx, 1);
    if (updates.dtype != data.dtype)
        ctx.error("updates are ", dtype_name(updates.dtype), " but data is ", dtype_name(data.dtype));
    Reduction red = scatter_reduction(ctx.node.where, ctx.attrs());
    if (red != Reduction::None && (data.dtype == DType::Bool || data.dtype == DType::BF16))
        fail(ONNXSTREAM_ERR_UNSUPPORTED, ctx.node.where, ": reductions on ", dtype_name(data.dtype),
             " tensors are not supported");
    int64_t rank = static_cast<int64_t>(data.shape.size());
    if (rank == 0) ctx.error("cannot scatter into a scalar");
    size_t axis = static_cast<size_t>(normalize_axis(ctx.node.where, ctx.attrs().get_int("axis", 0), rank));
    if (updates.shape != indices.shape)
        ctx.error("updates have shape ", shape_str(updates.shape), " but indices have shape ",
                  shape_str(indices.shape));
    if (indices.shape.size() != data.shape.size())
        ctx.error("indices have rank ", indices.shape.size(), " but data has rank ", rank);
    for (size_t i = 0; i < data.shape.size(); ++i)
        if (i != axis && indices.shape[i] > data.shape[i])
            ctx.error("indices shape ", shape_str(indices.shape), " exceeds data shape ", shape_str(data.shape),
                      " on axis ", i);
    return {info_like(data, data.shape)};
}

// Sequential: duplicate indices must accumulate (reductions) or let the last write win.
template <typename T, typename Combine>
void scatter_elements_typed(T *dst, const T *src, const std::vector<int64_t> &targets, Reduction red,
                            Combine combine) {
    for (size_t e = 0; e < targets.size(); ++e) {
        T &d = dst[targets[e]];
        d = red == Reduction::None ? src[e] : combine(d, src[e]);
    }
}

void scatter_elements_run(RunContext &ctx) {
    const Tensor &data = ctx.input(0);
    const Tensor &indices = ctx.input(1);
    const Tensor &updates = ctx.input(2);
    Reduction red = scatter_reduction(ctx.node.where, ctx.attrs());
    size_t axis = static_cast<size_t>(
        normalize_axis(ctx.node.where, ctx.attrs().get_int("axis", 0), static_cast<int64_t>(data.rank())));
    Tensor &out = alloc_like_input(ctx);
    parallel_memcpy(ctx.pool(), out.raw(), data.raw(), data.byte_size());
    const Shape &ishape = indices.shape();
    size_t n = static_cast<size_t>(indices.numel());
    if (n == 0) return;
    // Target element of every update, checked before anything is written.
    std::vector<int64_t> dstrides = contiguous_strides(data.shape());
    std::vector<int64_t> targets = normalized_indices(ctx.node.where, indices, data.dim(axis));
    std::vector<int64_t> pos(ishape.size(), 0);
    for (size_t e = 0; e < n; ++e) {
        int64_t off = 0;
        for (size_t i = 0; i < ishape.size(); ++i) off += (i == axis ? targets[e] : pos[i]) * dstrides[i];
        targets[e] = off;
        for (size_t i = ishape.size(); i-- > 0;) {
            if (++pos[i] < ishape[i]) break;
            pos[i] = 0;
        }
    }
    auto typed = [&](auto zero) {
        using T = decltype(zero);
        scatter_elements_typed(out.data<T>(), updates.data<T>(), targets, red,
                               [red](T a, T b) { return reduce_one(a, b, red); });
    };
    if (data.dtype() == DType::F32)
        typed(float{});
    else if (data.dtype() == DType::F16)
        scatter_elements_typed(out.data<uint16_t>(), updates.data<uint16_t>(), targets, red,
                               [red](uint16_t a, uint16_t b) {
                                   return float_to_half(reduce_one(half_to_float(a), half_to_float(b), red));
                               });
    else if (data.dtype() == DType::BF16)
        typed(uint16_t{}); // bit copies (no reductions)
    else
        dispatch_exact(data.dtype(), typed); // bool as uint8 (no reductions)
}

// ---- Compress ----
// Keeps the slices along `axis` (of the flattened input without one) whose condition element is true; a
// condition shorter than the axis drops the rest, as numpy.compress does. The output length is the number of
// true values: known while planning when the condition is a weight (or pinned with --input-value), else
// model.txt's declared shape, checked when the op runs.

struct CompressDims {
    int64_t outer = 1, axis_len = 0, inner = 1;
};

CompressDims compress_dims(const std::string &where, const Attributes &attrs, const Shape &data) {
    CompressDims d;
    if (!attrs.has("axis")) {
        d.axis_len = shape_numel(data);
        return d;
    }
    const int64_t rank = static_cast<int64_t>(data.size());
    if (rank == 0) invalid(where, "a scalar input has no axis to compress along");
    const size_t axis = static_cast<size_t>(normalize_axis(where, attrs.require_int("axis"), rank));
    for (size_t i = 0; i < data.size(); ++i)
        if (i < axis) d.outer *= data[i];
        else if (i > axis) d.inner *= data[i];
    d.axis_len = data[axis];
    return d;
}

// Indices of the true elements of condition; a condition longer than the axis is an error of `status`.
std::vector<int64_t> kept_indices(const std::string &where, Status status, const Tensor &cond, int64_t axis_len) {
    if (cond.numel() > axis_len)
        fail(status, where, ": condition has ", cond.numel(), " elements but the axis it selects from has only ",
             axis_len);
    std::vector<int64_t> kept;
    const uint8_t *c = cond.data<uint8_t>();
    for (int64_t i = 0; i < cond.numel(); ++i)
        if (c[i]) kept.push_back(i);
    return kept;
}

Shape compress_shape(const Attributes &attrs, const Shape &data, int64_t kept, const std::string &where) {
    if (!attrs.has("axis")) return {kept};
    Shape out = data;
    out[static_cast<size_t>(normalize_axis(where, attrs.require_int("axis"), static_cast<int64_t>(data.size())))] =
        kept;
    return out;
}

std::vector<TensorInfo> compress_infer(const InferContext &ctx) {
    ctx.require_inputs(2, 2);
    ctx.require_dtype(1, {DType::Bool});
    const TensorInfo &data = ctx.input(0);
    const Shape &cs = ctx.input(1).shape;
    if (cs.size() != 1) ctx.error("condition must be 1-D, got shape ", shape_str(cs));
    const CompressDims d = compress_dims(ctx.node.where, ctx.attrs(), data.shape);
    if (cs[0] > d.axis_len)
        ctx.error("condition has ", cs[0], " elements but the axis it selects from has only ", d.axis_len);
    if (const Tensor *cond = ctx.constant(1)) {
        const auto kept = kept_indices(ctx.node.where, ONNXSTREAM_ERR_INVALID_MODEL, *cond, d.axis_len);
        return {info_like(data, compress_shape(ctx.attrs(), data.shape, static_cast<int64_t>(kept.size()),
                                               ctx.node.where))};
    }
    const Shape &declared = ctx.declared_shape(0);
    const Shape rank_like = compress_shape(ctx.attrs(), data.shape, 0, ctx.node.where);
    if (declared.size() != rank_like.size())
        ctx.error("model.txt declares output shape ", shape_str(declared), " but Compress gives rank ", rank_like.size());
    return {info_like(data, declared)};
}

void compress_run(RunContext &ctx) {
    const Tensor &data = ctx.input(0);
    const CompressDims d = compress_dims(ctx.node.where, ctx.attrs(), data.shape());
    const std::vector<int64_t> kept =
        kept_indices(ctx.node.where, ONNXSTREAM_ERR_INVALID_ARGUMENT, ctx.input(1), d.axis_len);
    const int64_t m = static_cast<int64_t>(kept.size());
    Tensor &out = ctx.alloc_output(0, data.dtype(), compress_shape(ctx.attrs(), data.shape(), m, ctx.node.where));
    out.set_quant(data.quant());
    const size_t block = static_cast<size_t>(d.inner) * dtype_size(data.dtype());
    const size_t items = static_cast<size_t>(d.outer * m);
    if (items == 0 || block == 0) return;
    const char *src = static_cast<const char *>(data.raw());
    char *dst = static_cast<char *>(out.raw());
    parallel_for(ctx.pool(), items, task_tile(block), [&](size_t b, size_t e) {
        for (size_t it = b; it < e; ++it) {
            const int64_t o = static_cast<int64_t>(it) / m, j = static_cast<int64_t>(it) % m;
            std::memcpy(dst + it * block, src + static_cast<size_t>(o * d.axis_len + kept[static_cast<size_t>(j)]) * block,
                        block);
        }
    });
}

// ---- ReverseSequence ----
// Input (time, batch, ...) or (batch, time, ...): for batch entry b the first sequence_lens[b] time steps come
// out reversed, the rest as they were. A length outside 0..time is INVALID_ARGUMENT (lengths are data).

struct SequenceAxes {
    size_t time, batch;
};

SequenceAxes sequence_axes(const std::string &where, const Attributes &attrs) {
    const int64_t t = attrs.get_int("time_axis", 0), b = attrs.get_int("batch_axis", 1);
    if ((t != 0 && t != 1) || (b != 0 && b != 1) || t == b)
        invalid(where, "time_axis ", t, " and batch_axis ", b, " must be 0 and 1 in either order");
    return SequenceAxes{static_cast<size_t>(t), static_cast<size_t>(b)};
}

void check_lengths(const std::string &where, Status status, const std::vector<int64_t> &lens, int64_t time) {
    for (size_t b = 0; b < lens.size(); ++b)
        if (lens[b] < 0 || lens[b] > time)
            fail(status, where, ": sequence_lens[", b, "] is ", lens[b], "; expected 0..", time,
                 " (the length of the time axis)");
}

std::vector<TensorInfo> reverse_sequence_infer(const InferContext &ctx) {
    ctx.require_inputs(2, 2);
    ctx.require_dtype(1, {DType::I64});
    const TensorInfo &x = ctx.input(0);
    if (x.shape.size() < 2) ctx.error("input has shape ", shape_str(x.shape), "; expected rank 2 or more");
    const SequenceAxes ax = sequence_axes(ctx.node.where, ctx.attrs());
    const Shape &ls = ctx.input(1).shape;
    if (ls != Shape{x.shape[ax.batch]})
        ctx.error("sequence_lens has shape ", shape_str(ls), "; expected (", x.shape[ax.batch],
                  "), one length per batch entry");
    if (const Tensor *t = ctx.constant(1))
        check_lengths(ctx.node.where, ONNXSTREAM_ERR_INVALID_MODEL, int_values(*t), x.shape[ax.time]);
    return {info_like(x, x.shape)};
}

void reverse_sequence_run(RunContext &ctx) {
    const Tensor &x = ctx.input(0);
    const SequenceAxes ax = sequence_axes(ctx.node.where, ctx.attrs());
    const int64_t time = x.dim(ax.time), batch = x.dim(ax.batch);
    const std::vector<int64_t> lens = int_values(ctx.input(1));
    check_lengths(ctx.node.where, ONNXSTREAM_ERR_INVALID_ARGUMENT, lens, time);
    Tensor &out = alloc_like_input(ctx);
    const size_t block = static_cast<size_t>(x.numel() / std::max<int64_t>(time * batch, 1)) * dtype_size(x.dtype());
    if (x.numel() == 0) return;
    // Offset (in blocks) of step t of batch entry b in either axis order.
    auto at = [&](int64_t t, int64_t b) { return static_cast<size_t>(ax.time == 0 ? t * batch + b : b * time + t); };
    const char *src = static_cast<const char *>(x.raw());
    char *dst = static_cast<char *>(out.raw());
    parallel_for(ctx.pool(), static_cast<size_t>(batch), 1, [&](size_t begin, size_t end) {
        for (size_t bi = begin; bi < end; ++bi) {
            const int64_t b = static_cast<int64_t>(bi), len = lens[bi];
            for (int64_t t = 0; t < time; ++t) {
                const int64_t from = t < len ? len - 1 - t : t;
                std::memcpy(dst + at(t, b) * block, src + at(from, b) * block, block);
            }
        }
    });
}

} // namespace

} // namespace shapeops

void register_gather_scatter_ops(Registry &r) {
    using namespace shapeops;
    r.add("Gather", gather_infer, gather_run).with_streamable_weight_input(0);
    r.add("GatherElements", gather_elements_infer, gather_elements_run);
    r.add("GatherND", gather_nd_infer, gather_nd_run);
    r.add("ScatterND", scatter_nd_infer, scatter_nd_run);
    r.add("ScatterElements", scatter_elements_infer, scatter_elements_run);
    r.add("Compress", compress_infer, compress_run);
    r.add("ReverseSequence", reverse_sequence_infer, reverse_sequence_run);
}

} // namespace onnxstream

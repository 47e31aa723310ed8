// CumSum, TopK and Unique: ops that run along one axis of their input (CumSum and TopK each (outer, axis, inner)
// line on its own; Unique compares whole slices along the axis).
//
// A line is a set of `axis` elements `inner` apart. CumSum accumulates in the element type (float16 in
// float32); integer sums wrap in two's complement. TopK ranks by value, equal values by their position (the
// lower index first; NaN above every number), so its output does not depend on the sort's implementation.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <type_traits>

#include "ops/elementwise_int.h"
#include "ops/registry.h"
#include "ops/shape_common.h"
#include "tensor/half.h"
#include "util/strings.h"

namespace onnxstream {

namespace {

using shapeops::normalize_axis;

struct Lines {
    int64_t outer = 1, length = 1, inner = 1;
};

Lines lines_of(const Shape &shape, size_t axis) {
    Lines l;
    for (size_t i = 0; i < shape.size(); ++i)
        if (i < axis)
            l.outer *= shape[i];
        else if (i > axis)
            l.inner *= shape[i];
    l.length = shape[axis];
    return l;
}

// The single value of a scalar-like int input (a 0-D tensor or a 1-element 1-D one).
int64_t single_int(const std::string &where, const Tensor &t, const char *what, Status status) {
    if (t.rank() > 1 || t.numel() != 1)
        fail(status, where, ": ", what, " must be a scalar or a 1-element 1-D tensor, got shape ",
             shape_str(t.shape()));
    return int_values(t)[0];
}

void require_single_int_input(const InferContext &ctx, size_t i, const char *what) {
    const TensorInfo &info = ctx.input(i);
    if (info.dtype != DType::I64 && info.dtype != DType::I32)
        ctx.error(what, " (input ", i, ") must be int64 or int32, got ", dtype_name(info.dtype));
    if (info.shape.size() > 1 || shape_numel(info.shape) != 1)
        ctx.error(what, " (input ", i, ") must be a scalar or a 1-element 1-D tensor, got shape ",
                  shape_str(info.shape));
}

// ---- CumSum ----

std::vector<TensorInfo> cumsum_infer(const InferContext &ctx) {
    ctx.require_inputs(2, 2);
    ctx.require_dtype(0, {DType::F32, DType::F16, DType::F64, DType::I64, DType::I32});
    const TensorInfo &x = ctx.input(0);
    require_single_int_input(ctx, 1, "axis");
    int64_t rank = static_cast<int64_t>(x.shape.size());
    if (rank == 0) ctx.error("input must have rank >= 1");
    if (const Tensor *a = ctx.constant(1)) normalize_axis(ctx.node.where, int_values(*a)[0], rank);
    return {TensorInfo{x.dtype, x.shape, {}}};
}

template <typename T> inline T add_wrap(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else {
        return a + b;
    }
}

template <typename T>
void cumsum_typed(const RunContext &ctx, const T *x, T *y, const Lines &l, bool exclusive, bool reverse) {
    size_t tile = shapeops::task_tile(static_cast<size_t>(l.length * l.inner) * sizeof(T));
    parallel_for(ctx.pool(), static_cast<size_t>(l.outer), tile, [&](size_t begin, size_t end) {
        std::vector<T> acc(static_cast<size_t>(l.inner));
        for (size_t o = begin; o < end; ++o) {
            std::fill(acc.begin(), acc.end(), T(0));
            const T *xb = x + static_cast<int64_t>(o) * l.length * l.inner;
            T *yb = y + static_cast<int64_t>(o) * l.length * l.inner;
            for (int64_t s = 0; s < l.length; ++s) {
                int64_t k = reverse ? l.length - 1 - s : s;
                const T *xr = xb + k * l.inner;
                T *yr = yb + k * l.inner;
                for (int64_t i = 0; i < l.inner; ++i) {
                    T v = xr[i];
                    if (exclusive) {
                        yr[i] = acc[static_cast<size_t>(i)];
                        acc[static_cast<size_t>(i)] = add_wrap(acc[static_cast<size_t>(i)], v);
                    } else {
                        acc[static_cast<size_t>(i)] = add_wrap(acc[static_cast<size_t>(i)], v);
                        yr[i] = acc[static_cast<size_t>(i)];
                    }
                }
            }
        }
    });
}

void cumsum_run(RunContext &ctx) {
    const Tensor &x = ctx.input(0);
    int64_t axis = single_int(ctx.node.where, ctx.input(1), "axis", ONNXSTREAM_ERR_INVALID_ARGUMENT);
    int64_t rank = static_cast<int64_t>(x.rank());
    if (axis < -rank || axis >= rank)
        ctx.error(ONNXSTREAM_ERR_INVALID_ARGUMENT, "axis ", axis, " is out of range for a rank-", rank,
                  " tensor (expected ", -rank, "..", rank - 1, ")");
    Lines l = lines_of(x.shape(), static_cast<size_t>(axis < 0 ? axis + rank : axis));
    bool exclusive = ctx.attrs().get_int("exclusive", 0) != 0, reverse = ctx.attrs().get_int("reverse", 0) != 0;
    Tensor &y = ctx.alloc_output(0);
    if (y.numel() == 0) return;
    switch (x.dtype()) {
    case DType::F32: cumsum_typed(ctx, x.data<float>(), y.data<float>(), l, exclusive, reverse); break;
    case DType::F16: {
        size_t n = static_cast<size_t>(x.numel());
        Tensor xf = ctx.scratch(DType::F32, x.shape()), yf = ctx.scratch(DType::F32, x.shape());
        half_to_float_n(x.data<uint16_t>(), xf.data<float>(), n);
        cumsum_typed(ctx, xf.data<float>(), yf.data<float>(), l, exclusive, reverse);
        float_to_half_n(yf.data<float>(), y.data<uint16_t>(), n);
        break;
    }
    case DType::F64: cumsum_typed(ctx, x.data<double>(), y.data<double>(), l, exclusive, reverse); break;
    case DType::I64: cumsum_typed(ctx, x.data<int64_t>(), y.data<int64_t>(), l, exclusive, reverse); break;
    case DType::I32: cumsum_typed(ctx, x.data<int32_t>(), y.data<int32_t>(), l, exclusive, reverse); break;
    default: ctx.error(ONNXSTREAM_ERR_UNSUPPORTED, "CumSum on ", dtype_name(x.dtype()));
    }
}

// ---- TopK ----

size_t topk_axis(const std::string &where, const Attributes &attrs, int64_t rank) {
    return static_cast<size_t>(normalize_axis(where, attrs.get_int("axis", -1), rank));
}

std::vector<TensorInfo> topk_infer(const InferContext &ctx) {
    ctx.require_inputs(2, 2);
    ctx.require_dtype(0, {DType::F32, DType::F16, DType::F64, DType::I64, DType::I32, DType::U8, DType::I8});
    const TensorInfo &x = ctx.input(0);
    require_single_int_input(ctx, 1, "K");
    int64_t rank = static_cast<int64_t>(x.shape.size());
    if (rank == 0) ctx.error("input must have rank >= 1");
    size_t axis = topk_axis(ctx.node.where, ctx.attrs(), rank);
    if (ctx.output_count() != 2) ctx.error("TopK has 2 outputs (values, indices), model.txt declares ", ctx.output_count());
    Shape out = x.shape;
    if (const Tensor *k = ctx.constant(1)) {
        int64_t v = int_values(*k)[0];
        if (v < 0 || v > x.shape[axis])
            ctx.error("K = ", v, " is out of range for an axis of size ", x.shape[axis], " (expected 0..",
                      x.shape[axis], ")");
        out[axis] = v;
    } else { // K known at run time: the shape model.txt declares
        const Shape &d = ctx.declared_shape(0);
        bool ok = d.size() == out.size() && d[axis] >= 0 && d[axis] <= x.shape[axis];
        for (size_t i = 0; ok && i < d.size(); ++i) ok = i == axis || d[i] == out[i];
        if (!ok)
            ctx.error("model.txt declares output shape ", shape_str(d), ", which is not ", shape_str(x.shape),
                      " with K elements on axis ", axis);
        out = d;
    }
    return {TensorInfo{x.dtype, out, x.quant}, TensorInfo{DType::I64, out, {}}};
}

// Indices of the k first elements of each line in rank order, written to idx (shape of the outputs).
template <typename T>
void topk_indices(const RunContext &ctx, const T *x, int64_t *idx, const Lines &l, int64_t k, bool largest,
                  bool sorted) {
    size_t lines = static_cast<size_t>(l.outer * l.inner);
    size_t tile = std::max<size_t>(1, 4096 / static_cast<size_t>(std::max<int64_t>(l.length, 1)));
    parallel_for(ctx.pool(), lines, tile, [&](size_t begin, size_t end) {
        std::vector<int64_t> order(static_cast<size_t>(l.length));
        std::vector<T> vals(static_cast<size_t>(l.length));
        for (size_t line = begin; line < end; ++line) {
            int64_t o = static_cast<int64_t>(line) / l.inner, i = static_cast<int64_t>(line) % l.inner;
            const T *xb = x + o * l.length * l.inner + i;
            for (int64_t j = 0; j < l.length; ++j) vals[static_cast<size_t>(j)] = xb[j * l.inner];
            std::iota(order.begin(), order.end(), int64_t{0});
            auto before = [&](int64_t a, int64_t b) {
                T va = vals[static_cast<size_t>(a)], vb = vals[static_cast<size_t>(b)];
                if constexpr (std::is_floating_point_v<T>) { // NaN ranks above every number (a strict order)
                    bool na = std::isnan(va), nb = std::isnan(vb);
                    if (na || nb) return na != nb ? (largest ? na : nb) : a < b;
                }
                if (va != vb) return largest ? va > vb : va < vb;
                return a < b;
            };
            std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
            if (!sorted) std::sort(order.begin(), order.begin() + k);
            int64_t *ib = idx + o * k * l.inner + i;
            for (int64_t j = 0; j < k; ++j) ib[j * l.inner] = order[static_cast<size_t>(j)];
        }
    });
}

void topk_run(RunContext &ctx) {
    const Tensor &x = ctx.input(0);
    int64_t rank = static_cast<int64_t>(x.rank());
    size_t axis = topk_axis(ctx.node.where, ctx.attrs(), rank);
    int64_t k = single_int(ctx.node.where, ctx.input(1), "K", ONNXSTREAM_ERR_INVALID_ARGUMENT);
    if (k < 0 || k > x.dim(axis))
        ctx.error(ONNXSTREAM_ERR_INVALID_ARGUMENT, "K = ", k, " is out of range for an axis of size ", x.dim(axis),
                  " (expected 0..", x.dim(axis), ")");
    Shape out = x.shape();
    out[axis] = k;
    Tensor &values = ctx.alloc_output(0, x.dtype(), out);
    values.set_quant(x.quant());
    Tensor &indices = ctx.alloc_output(1, DType::I64, out);
    if (indices.numel() == 0) return;
    Lines l = lines_of(x.shape(), axis);
    bool largest = ctx.attrs().get_int("largest", 1) != 0, sorted = ctx.attrs().get_int("sorted", 1) != 0;
    int64_t *idx = indices.data<int64_t>();
    switch (x.dtype()) {
    case DType::F32: topk_indices(ctx, x.data<float>(), idx, l, k, largest, sorted); break;
    case DType::F16: {
        Tensor xf = ctx.scratch(DType::F32, x.shape());
        half_to_float_n(x.data<uint16_t>(), xf.data<float>(), static_cast<size_t>(x.numel()));
        topk_indices(ctx, xf.data<float>(), idx, l, k, largest, sorted);
        break;
    }
    case DType::F64: topk_indices(ctx, x.data<double>(), idx, l, k, largest, sorted); break;
    case DType::I64: topk_indices(ctx, x.data<int64_t>(), idx, l, k, largest, sorted); break;
    case DType::I32: topk_indices(ctx, x.data<int32_t>(), idx, l, k, largest, sorted); break;
    case DType::U8: topk_indices(ctx, x.data<uint8_t>(), idx, l, k, largest, sorted); break;
    case DType::I8: topk_indices(ctx, x.data<int8_t>(), idx, l, k, largest, sorted); break;
    default: ctx.error(ONNXSTREAM_ERR_UNSUPPORTED, "TopK on ", dtype_name(x.dtype()));
    }
    // Values: the input's elements at those indices (bit copies, whatever the element type).
    size_t esz = dtype_size(x.dtype());
    const char *src = static_cast<const char *>(x.raw());
    char *dst = static_cast<char *>(values.raw());
    int64_t n = indices.numel();
    for (int64_t e = 0; e < n; ++e) {
        int64_t o = e / (k * l.inner), i = e % l.inner;
        int64_t from = (o * l.length + idx[e]) * l.inner + i;
        std::memcpy(dst + static_cast<size_t>(e) * esz, src + static_cast<size_t>(from) * esz, esz);
    }
}

// ---- Unique ----
// The distinct elements of the flattened input, or with `axis` the distinct slices along it (compared element by
// element in storage order, so sorted slices come out in lexicographic order), ascending (sorted 1) or in order of
// first occurrence (sorted 0). Outputs Y, then int64 indices (each distinct value's first occurrence),
// inverse_indices (each input element's or slice's position in Y) and counts; model.txt lists as many as the
// graph reads. Floats compare by value: -0 and 0 are one value, kept as it first occurs, and NaNs are one value
// above every number (ONNX leaves NaN open). The number of distinct values is exact while planning when X is a
// weight (or pinned with the converter's --input-value); otherwise model.txt's declared shapes are used and the
// run checks them.

struct UniqueLayout {
    int64_t outer = 1, count = 0, inner = 1; // count: elements (no axis) or slices along the axis
    size_t axis = 0;                         // Y's dimension that holds the distinct values
};

UniqueLayout unique_layout(const std::string &where, const Attributes &attrs, const Shape &shape) {
    UniqueLayout u;
    if (!attrs.has("axis")) {
        u.count = shape_numel(shape);
        return u;
    }
    const int64_t rank = static_cast<int64_t>(shape.size());
    if (rank == 0) fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": a scalar input has no axis to take unique slices along");
    u.axis = static_cast<size_t>(normalize_axis(where, attrs.require_int("axis"), rank));
    const Lines l = lines_of(shape, u.axis);
    u.outer = l.outer;
    u.count = l.length;
    u.inner = l.inner;
    return u;
}

// Y's shape for `distinct` values.
Shape unique_y_shape(const Attributes &attrs, const Shape &x, const UniqueLayout &u, int64_t distinct) {
    if (!attrs.has("axis")) return {distinct};
    Shape y = x;
    y[u.axis] = distinct;
    return y;
}

struct UniqueResult {
    std::vector<int64_t> first;   // per position in Y: the index of its first occurrence
    std::vector<int64_t> counts;  // per position in Y
    std::vector<int64_t> inverse; // per input element or slice: its position in Y
};

// A strict order in which NaNs are equal to each other and above every number.
template <typename T> bool value_less(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(a)) return false;
        if (std::isnan(b)) return true;
    }
    return a < b;
}

template <typename T> UniqueResult unique_of(const T *x, const UniqueLayout &u, bool sorted) {
    auto slice_less = [&](int64_t a, int64_t b) {
        for (int64_t o = 0; o < u.outer; ++o) {
            const T *pa = x + (o * u.count + a) * u.inner, *pb = x + (o * u.count + b) * u.inner;
            for (int64_t k = 0; k < u.inner; ++k) {
                if (value_less(pa[k], pb[k])) return true;
                if (value_less(pb[k], pa[k])) return false;
            }
        }
        return false;
    };
    std::vector<int64_t> order(static_cast<size_t>(u.count));
    std::iota(order.begin(), order.end(), int64_t{0});
    // Stable: each run of equal slices starts with its first occurrence.
    std::stable_sort(order.begin(), order.end(), slice_less);
    UniqueResult r;
    r.inverse.resize(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
        if (i == 0 || slice_less(order[i - 1], order[i])) {
            r.first.push_back(order[i]);
            r.counts.push_back(0);
        }
        ++r.counts.back();
        r.inverse[static_cast<size_t>(order[i])] = static_cast<int64_t>(r.first.size() - 1);
    }
    if (sorted) return r;
    // Renumber the distinct values by first occurrence.
    std::vector<int64_t> by_first(r.first.size());
    std::iota(by_first.begin(), by_first.end(), int64_t{0});
    std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return r.first[a] < r.first[b]; });
    std::vector<int64_t> position(by_first.size());
    UniqueResult s;
    for (size_t p = 0; p < by_first.size(); ++p) {
        position[static_cast<size_t>(by_first[p])] = static_cast<int64_t>(p);
        s.first.push_back(r.first[static_cast<size_t>(by_first[p])]);
        s.counts.push_back(r.counts[static_cast<size_t>(by_first[p])]);
    }
    s.inverse.resize(r.inverse.size());
    for (size_t i = 0; i < r.inverse.size(); ++i) s.inverse[i] = position[static_cast<size_t>(r.inverse[i])];
    return s;
}

UniqueResult unique_of(const Tensor &x, const UniqueLayout &u, bool sorted, const Allocator &alloc) {
    switch (x.dtype()) {
    case DType::F32: return unique_of(x.data<float>(), u, sorted);
    case DType::F16: {
        Tensor xf = make_tensor(alloc, DType::F32, x.shape());
        half_to_float_n(x.data<uint16_t>(), xf.data<float>(), static_cast<size_t>(x.numel()));
        return unique_of(xf.data<float>(), u, sorted);
    }
    default: {
        UniqueResult r;
        dispatch_exact(x.dtype(), [&](auto tag) { r = unique_of(x.data<decltype(tag)>(), u, sorted); });
        return r; // bool as uint8
    }
    }
}

bool unique_sorted(const std::string &where, const Attributes &attrs) {
    const int64_t v = attrs.get_int("sorted", 1);
    if (v != 0 && v != 1) fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": sorted is ", v, ", expected 0 or 1");
    return v == 1;
}

std::vector<TensorInfo> unique_outputs(const InferContext &ctx, const TensorInfo &x, const UniqueLayout &u,
                                       int64_t distinct) {
    std::vector<TensorInfo> out{TensorInfo{x.dtype, unique_y_shape(ctx.attrs(), x.shape, u, distinct), x.quant}};
    const Shape per_output[] = {Shape{distinct}, Shape{u.count}, Shape{distinct}};
    for (size_t k = 1; k < ctx.output_count(); ++k) out.push_back(TensorInfo{DType::I64, per_output[k - 1], {}});
    return out;
}

std::vector<TensorInfo> unique_infer(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    ctx.require_dtype(0, kAllTypes);
    if (ctx.output_count() > 4)
        ctx.error("has at most 4 outputs (Y, indices, inverse_indices, counts), got ", ctx.output_count());
    const TensorInfo &x = ctx.input(0);
    const bool sorted = unique_sorted(ctx.node.where, ctx.attrs());
    const UniqueLayout u = unique_layout(ctx.node.where, ctx.attrs(), x.shape);
    if (const Tensor *t = ctx.constant(0)) {
        Allocator alloc;
        return unique_outputs(ctx, x, u, static_cast<int64_t>(unique_of(*t, u, sorted, alloc).first.size()));
    }
    // One distinct value per slice at most, and at least one when there is a slice.
    const Shape &declared = ctx.declared_shape(0);
    const Shape rank_like = unique_y_shape(ctx.attrs(), x.shape, u, 0);
    bool ok = declared.size() == rank_like.size();
    for (size_t i = 0; ok && i < declared.size(); ++i) ok = i == u.axis || declared[i] == rank_like[i];
    const int64_t distinct = ok ? declared[u.axis] : -1;
    if (!ok || distinct > u.count || (distinct < 1 && u.count > 0)) {
        std::string pattern = "(";
        for (size_t i = 0; i < rank_like.size(); ++i)
            pattern += cat(i ? "," : "", i == u.axis ? std::string("n") : std::to_string(rank_like[i]));
        ctx.error("model.txt declares Y as ", shape_str(declared), " but Unique of a ", shape_str(x.shape),
                  " input gives ", pattern, ") with n distinct ", ctx.attrs().has("axis") ? "slices" : "values",
                  ", n in ", std::min<int64_t>(u.count, 1), "..", u.count);
    }
    for (size_t k : {size_t{1}, size_t{3}})
        if (k < ctx.output_count() && ctx.declared_shape(k) != Shape{distinct})
            ctx.error("model.txt declares output ", k, " as ", shape_str(ctx.declared_shape(k)), " but Y as ",
                      shape_str(declared), ", which has ", distinct, " distinct entries");
    return unique_outputs(ctx, x, u, distinct);
}

void unique_run(RunContext &ctx) {
    const Tensor &x = ctx.input(0);
    const UniqueLayout u = unique_layout(ctx.node.where, ctx.attrs(), x.shape());
    const UniqueResult r = unique_of(x, u, unique_sorted(ctx.node.where, ctx.attrs()), ctx.allocator());
    const int64_t distinct = static_cast<int64_t>(r.first.size());
    const Shape y_shape = unique_y_shape(ctx.attrs(), x.shape(), u, distinct);
    if (ctx.output_info(0).shape != y_shape)
        ctx.error(ONNXSTREAM_ERR_INVALID_ARGUMENT, "Y is ", shape_str(y_shape), " for this input but model.txt declares ",
                  shape_str(ctx.output_info(0).shape), "; declare ", shape_str(y_shape),
                  " or fix the input's values (the converter's --input-value)");
    Tensor &y = ctx.alloc_output(0, x.dtype(), y_shape);
    y.set_quant(x.quant());
    const size_t block = static_cast<size_t>(u.inner) * dtype_size(x.dtype());
    const char *src = static_cast<const char *>(x.raw());
    char *dst = static_cast<char *>(y.raw());
    for (int64_t o = 0; block > 0 && o < u.outer; ++o)
        for (int64_t p = 0; p < distinct; ++p)
            std::memcpy(dst + static_cast<size_t>(o * distinct + p) * block,
                        src + static_cast<size_t>(o * u.count + r.first[static_cast<size_t>(p)]) * block, block);
    const std::vector<int64_t> *values[] = {&r.first, &r.inverse, &r.counts};
    for (size_t k = 1; k < ctx.output_count(); ++k) {
        const std::vector<int64_t> &v = *values[k - 1];
        Tensor &t = ctx.alloc_output(k, DType::I64, Shape{static_cast<int64_t>(v.size())});
        std::copy(v.begin(), v.end(), t.data<int64_t>());
    }
}

} // namespace

void register_scan_sort_ops(Registry &r) {
    r.add("CumSum", cumsum_infer, cumsum_run).with_reads_weights_exactly();
    r.add("TopK", topk_infer, topk_run).with_reads_weights_exactly();
    r.add("Unique", unique_infer, unique_run).with_reads_weights_exactly().with_shape_value_inputs(0x1);
}

} // namespace onnxstream

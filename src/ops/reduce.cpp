// ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp and ArgMax/ArgMin.
//
// A reduction over any set of axes runs as a few passes of one shape: (outer, reduced, inner) -> (outer,
// inner). Adjacent axes are merged first, then each remaining reduced block is folded away, innermost first.
// Every reduction here is associative (a log-sum-exp of partial log-sum-exps is the log-sum-exp of the
// whole), so the passes compose. Float sums accumulate in double; integer reductions are exact (two's
// complement wrap).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <type_traits>

#include "ops/registry.h"
#include "tensor/half.h"

namespace onnxstream {

namespace {

enum class Kind { Sum, SumAbs, SumSquare, Max, Min, Prod, LogSumExp };
enum class Finish { None, Mean, Sqrt, Log };

struct ReduceOp {
    Kind kind;
    Finish finish;
    bool float_only; // no integer form
};

ReduceOp reduce_op(const std::string &type) {
    if (type == "ReduceSum") return {Kind::Sum, Finish::None, false};
    if (type == "ReduceMean") return {Kind::Sum, Finish::Mean, false};
    if (type == "ReduceMax") return {Kind::Max, Finish::None, false};
    if (type == "ReduceMin") return {Kind::Min, Finish::None, false};
    if (type == "ReduceProd") return {Kind::Prod, Finish::None, false};
    if (type == "ReduceL1") return {Kind::SumAbs, Finish::None, false};
    if (type == "ReduceL2") return {Kind::SumSquare, Finish::Sqrt, true};
    if (type == "ReduceSumSquare") return {Kind::SumSquare, Finish::None, false};
    if (type == "ReduceLogSum") return {Kind::Sum, Finish::Log, true};
    return {Kind::LogSumExp, Finish::None, true}; // ReduceLogSumExp
}

// After the first pass the mapping (|x|, x^2) is done: later passes just add.
constexpr Kind later_kind(Kind k) { return k == Kind::SumAbs || k == Kind::SumSquare ? Kind::Sum : k; }

// ---------------------------------------------------------------------------------------------------------
// Element operations. float32/float16 data accumulates sums/products/log-sum-exps in double and max/min in
// float, float64 data everything in double;
// integer data in int64 with wrapping arithmetic.

template <Kind K, typename Acc> constexpr Acc identity() {
    if constexpr (K == Kind::Max)
        return std::is_floating_point_v<Acc> ? -std::numeric_limits<Acc>::infinity()
                                             : std::numeric_limits<Acc>::lowest();
    else if constexpr (K == Kind::Min)
        return std::is_floating_point_v<Acc> ? std::numeric_limits<Acc>::infinity()
                                             : std::numeric_limits<Acc>::max();
    else if constexpr (K == Kind::Prod)
        return Acc(1);
    else if constexpr (K == Kind::LogSumExp)
        return -std::numeric_limits<Acc>::infinity();
    else
        return Acc(0);
}

template <typename Acc> inline Acc wrap_add(Acc a, Acc b) {
    if constexpr (std::is_integral_v<Acc>)
        return static_cast<Acc>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    else
        return a + b;
}
template <typename Acc> inline Acc wrap_mul(Acc a, Acc b) {
    if constexpr (std::is_integral_v<Acc>)
        return static_cast<Acc>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    else
        return a * b;
}

template <Kind K, typename Acc, typename In> inline Acc map_in(In v) {
    Acc a = static_cast<Acc>(v);
    if constexpr (K == Kind::SumAbs)
        return a < 0 ? wrap_mul(a, Acc(-1)) : a;
    else if constexpr (K == Kind::SumSquare)
        return wrap_mul(a, a);
    else
        return a;
}

template <Kind K, typename Acc> inline Acc combine(Acc a, Acc b) {
    if constexpr (K == Kind::Max)
        return b > a ? b : a;
    else if constexpr (K == Kind::Min)
        return b < a ? b : a;
    else if constexpr (K == Kind::Prod)
        return wrap_mul(a, b);
    else
        return wrap_add(a, b);
}

// Reduce n contiguous values.
template <Kind K, typename Acc, typename In> Acc reduce_contiguous(const In *x, int64_t n) {
    if constexpr (K == Kind::LogSumExp) {
        Acc m = identity<Kind::Max, Acc>();
        for (int64_t i = 0; i < n; ++i) m = std::max(m, static_cast<Acc>(x[i]));
        if (std::isinf(m)) return m; // all -inf (or empty): -inf; any +inf: +inf
        Acc s = 0;
        for (int64_t i = 0; i < n; ++i) s += std::exp(static_cast<Acc>(x[i]) - m);
        return m + std::log(s);
    } else {
        Acc lanes[4] = {identity<K, Acc>(), identity<K, Acc>(), identity<K, Acc>(), identity<K, Acc>()};
        int64_t i = 0;
        for (; i + 4 <= n; i += 4)
            for (int j = 0; j < 4; ++j) lanes[j] = combine<K>(lanes[j], map_in<K, Acc>(x[i + j]));
        Acc acc = identity<K, Acc>();
        for (; i < n; ++i) acc = combine<K>(acc, map_in<K, Acc>(x[i]));
        for (Acc l : lanes) acc = combine<K>(acc, l);
        return acc;
    }
}

// Reduce r rows of w values, `stride` apart: acc[i] = reduce over rows of x[row * stride + i].
template <Kind K, typename Acc, typename In>
void reduce_rows(const In *x, int64_t r, int64_t stride, int64_t w, Acc *acc) {
    if constexpr (K == Kind::LogSumExp) {
        Acc m[256], s[256];
        for (int64_t i = 0; i < w; ++i) {
            m[i] = identity<Kind::Max, Acc>();
            s[i] = 0;
        }
        for (int64_t k = 0; k < r; ++k)
            for (int64_t i = 0; i < w; ++i) m[i] = std::max(m[i], static_cast<Acc>(x[k * stride + i]));
        for (int64_t k = 0; k < r; ++k)
            for (int64_t i = 0; i < w; ++i)
                if (!std::isinf(m[i])) s[i] += std::exp(static_cast<Acc>(x[k * stride + i]) - m[i]);
        for (int64_t i = 0; i < w; ++i) acc[i] = std::isinf(m[i]) ? m[i] : m[i] + std::log(s[i]);
    } else {
        for (int64_t i = 0; i < w; ++i) acc[i] = identity<K, Acc>();
        for (int64_t k = 0; k < r; ++k) {
            const In *row = x + k * stride;
            for (int64_t i = 0; i < w; ++i) acc[i] = combine<K>(acc[i], map_in<K, Acc>(row[i]));
        }
    }
}

size_t pool_threads(pthreadpool_t pool) { return pool ? pthreadpool_get_threads_count(pool) : 1; }

// One pass: x (outer, r, inner) -> y (outer, inner).
template <Kind K, typename Acc, typename In>
void reduce_pass(const RunContext &ctx, const In *x, Acc *y, int64_t outer, int64_t r, int64_t inner) {
    pthreadpool_t pool = ctx.pool();
    if (inner == 1) {
        size_t threads = pool_threads(pool);
        // Few long rows (a full reduction): split each row so every thread has work, then fold the parts.
        int64_t parts = 1;
        if (static_cast<size_t>(outer) < threads * 2 && r >= 65536)
            parts = std::min<int64_t>(static_cast<int64_t>(threads) * 4, r / 16384);
        if (parts > 1) {
            Tensor partial_t = ctx.scratch(sizeof(Acc) == 8 ? DType::I64 : DType::F32, {outer * parts});
            Acc *partial = static_cast<Acc *>(partial_t.raw());
            parallel_for(pool, static_cast<size_t>(outer * parts), 1, [&](size_t begin, size_t end) {
                for (size_t t = begin; t < end; ++t) {
                    int64_t o = static_cast<int64_t>(t) / parts, p = static_cast<int64_t>(t) % parts;
                    int64_t b = r * p / parts, e = r * (p + 1) / parts;
                    partial[t] = reduce_contiguous<K, Acc>(x + o * r + b, e - b);
                }
            });
            for (int64_t o = 0; o < outer; ++o)
                y[o] = reduce_contiguous<later_kind(K), Acc>(partial + o * parts, parts);
            return;
        }
        size_t tile = static_cast<size_t>(std::max<int64_t>(1, 16384 / std::max<int64_t>(r, 1)));
        parallel_for(pool, static_cast<size_t>(outer), tile, [&](size_t begin, size_t end) {
            for (size_t o = begin; o < end; ++o)
                y[o] = reduce_contiguous<K, Acc>(x + static_cast<int64_t>(o) * r, r);
        });
        return;
    }
    constexpr int64_t kChunk = 256;
    int64_t chunks = (inner + kChunk - 1) / kChunk;
    parallel_for(pool, static_cast<size_t>(outer * chunks), 1, [&](size_t begin, size_t end) {
        for (size_t t = begin; t < end; ++t) {
            int64_t o = static_cast<int64_t>(t) / chunks, c0 = static_cast<int64_t>(t) % chunks * kChunk;
            reduce_rows<K, Acc>(x + o * r * inner + c0, r, inner, std::min(kChunk, inner - c0),
                                y + o * inner + c0);
        }
    });
}

// ---------------------------------------------------------------------------------------------------------
// Axes and shapes

struct AxesSpec {
    bool known = true;         // false: the axes input is computed at run time
    std::vector<bool> reduced; // per input axis
    bool noop = false;         // empty axes with noop_with_empty_axes: the op maps element-wise
};

// axes: nullptr when there are none (attribute absent, input omitted or empty).
AxesSpec axes_spec(const std::vector<int64_t> *axes, size_t rank, bool noop_with_empty,
                   const std::function<void(const std::string &)> &bad) {
    AxesSpec s;
    s.reduced.assign(rank, false);
    if (!axes || axes->empty()) {
        if (noop_with_empty)
            s.noop = true;
        else
            s.reduced.assign(rank, true);
        return s;
    }
    int64_t r = static_cast<int64_t>(rank);
    for (int64_t a : *axes) {
        if (a < -r || a >= r) bad(cat("axis ", a, " is out of range for rank ", rank));
        size_t ax = static_cast<size_t>(a < 0 ? a + r : a);
        if (s.reduced[ax]) bad(cat("axis ", a, " is listed twice"));
        s.reduced[ax] = true;
    }
    return s;
}

Shape reduced_shape(const Shape &in, const AxesSpec &s, bool keepdims) {
    Shape out;
    for (size_t i = 0; i < in.size(); ++i) {
        if (!s.reduced[i])
            out.push_back(in[i]);
        else if (keepdims)
            out.push_back(1);
    }
    return out;
}

std::vector<TensorInfo> infer_reduce(const InferContext &ctx) {
    ctx.require_inputs(1, 2);
    ReduceOp op = reduce_op(ctx.node.type);
    if (op.float_only)
        ctx.require_dtype(0, {DType::F32, DType::F16, DType::F64});
    else if (op.kind == Kind::Max || op.kind == Kind::Min)
        ctx.require_dtype(0, {DType::F32, DType::F16, DType::F64, DType::I64, DType::I32, DType::U8, DType::I8,
                              DType::Bool});
    else
        ctx.require_dtype(0, {DType::F32, DType::F16, DType::F64, DType::I64, DType::I32});
    const TensorInfo &x = ctx.input(0);
    bool keepdims = ctx.attrs().get_int("keepdims", 1) != 0;
    bool noop = ctx.attrs().get_int("noop_with_empty_axes", 0) != 0;
    auto bad = [&](const std::string &msg) { ctx.error(msg); };
    if (ctx.has_input(1)) {
        if (ctx.attrs().has("axes")) ctx.error("axes is given both as attribute and as input 1");
        ctx.require_dtype(1, {DType::I64, DType::I32});
        if (ctx.input(1).shape.size() > 1)
            ctx.error("axes input must be 1-D, got shape ", shape_str(ctx.input(1).shape));
        const Tensor *c = ctx.constant(1);
        if (!c) return {TensorInfo{x.dtype, ctx.declared_shape(0), {}}};
        std::vector<int64_t> axes = int_values(*c);
        return {TensorInfo{
            x.dtype, reduced_shape(x.shape, axes_spec(&axes, x.shape.size(), noop, bad), keepdims), {}}};
    }
    std::vector<int64_t> axes = ctx.attrs().get_ints("axes");
    bool has = ctx.attrs().has("axes");
    return {TensorInfo{
        x.dtype,
        reduced_shape(x.shape, axes_spec(has ? &axes : nullptr, x.shape.size(), noop, bad), keepdims),
        {}}};
}

// ---------------------------------------------------------------------------------------------------------
// Running a reduction

// Merged blocks of the input shape; size-1 axes are dropped (they do not change the layout).
struct Block {
    int64_t size;
    bool reduced;
};

std::vector<Block> merge_blocks(const Shape &shape, const std::vector<bool> &reduced) {
    std::vector<Block> blocks;
    for (size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] == 1) continue;
        if (!blocks.empty() && blocks.back().reduced == reduced[i])
            blocks.back().size *= shape[i];
        else
            blocks.push_back({shape[i], static_cast<bool>(reduced[i])});
    }
    return blocks;
}

template <typename Acc> constexpr DType storage_dtype() { return sizeof(Acc) == 8 ? DType::I64 : DType::F32; }

// Reduce x (In) to an Acc buffer of the output's element count; count = number of elements reduced into
// each output value.
template <Kind K, typename Acc, typename In>
Tensor reduce_all_passes(const RunContext &ctx, const In *x, const Shape &shape,
                         const std::vector<bool> &reduced) {
    std::vector<Block> blocks = merge_blocks(shape, reduced);
    int64_t total = shape_numel(shape);
    auto find_last = [&] {
        for (size_t j = blocks.size(); j-- > 0;)
            if (blocks[j].reduced) return static_cast<int64_t>(j);
        return int64_t{-1};
    };
    int64_t j = find_last();
    if (j < 0) {
        // Nothing left to fold (empty axes with noop, or only size-1 axes): map each element on its own.
        Tensor out = ctx.scratch(storage_dtype<Acc>(), {total});
        reduce_pass<K, Acc>(ctx, x, static_cast<Acc *>(out.raw()), total, 1, 1);
        return out;
    }
    Tensor cur;
    bool first = true;
    for (; j >= 0; j = find_last()) {
        int64_t outer = 1, inner = 1;
        for (int64_t i = 0; i < j; ++i) outer *= blocks[static_cast<size_t>(i)].size;
        for (size_t i = static_cast<size_t>(j) + 1; i < blocks.size(); ++i) inner *= blocks[i].size;
        int64_t r = blocks[static_cast<size_t>(j)].size;
        Tensor next = ctx.scratch(storage_dtype<Acc>(), {outer * inner});
        if (first)
            reduce_pass<K, Acc>(ctx, x, static_cast<Acc *>(next.raw()), outer, r, inner);
        else
            reduce_pass<later_kind(K), Acc>(ctx, static_cast<const Acc *>(cur.raw()),
                                            static_cast<Acc *>(next.raw()), outer, r, inner);
        first = false;
        cur = next;
        blocks.erase(blocks.begin() + j);
        // The kept blocks on either side are now adjacent.
        if (j > 0 && static_cast<size_t>(j) < blocks.size() && !blocks[static_cast<size_t>(j) - 1].reduced &&
            !blocks[static_cast<size_t>(j)].reduced) {
            blocks[static_cast<size_t>(j) - 1].size *= blocks[static_cast<size_t>(j)].size;
            blocks.erase(blocks.begin() + j);
        }
    }
    return cur;
}

template <Kind K, typename Acc, typename In>
Tensor reduce_typed(const RunContext &ctx, const In *x, const Shape &shape,
                    const std::vector<bool> &reduced) {
    return reduce_all_passes<K, Acc>(ctx, x, shape, reduced);
}

// Dispatch on the runtime kind for one (Acc, In) pair.
template <typename Acc, typename In>
Tensor reduce_dispatch(const RunContext &ctx, Kind kind, const In *x, const Shape &shape,
                       const std::vector<bool> &reduced) {
    switch (kind) {
    case Kind::Sum: return reduce_typed<Kind::Sum, Acc>(ctx, x, shape, reduced);
    case Kind::SumAbs: return reduce_typed<Kind::SumAbs, Acc>(ctx, x, shape, reduced);
    case Kind::SumSquare: return reduce_typed<Kind::SumSquare, Acc>(ctx, x, shape, reduced);
    case Kind::Max: return reduce_typed<Kind::Max, Acc>(ctx, x, shape, reduced);
    case Kind::Min: return reduce_typed<Kind::Min, Acc>(ctx, x, shape, reduced);
    case Kind::Prod: return reduce_typed<Kind::Prod, Acc>(ctx, x, shape, reduced);
    case Kind::LogSumExp:
        if constexpr (std::is_floating_point_v<Acc>)
            return reduce_typed<Kind::LogSumExp, Acc>(ctx, x, shape, reduced);
        break;
    }
    fail(ONNXSTREAM_ERR_INTERNAL, "reduction kind without an implementation for this dtype");
}

// Final values (Acc) -> output elements, applying Mean/Sqrt/Log.
template <typename Acc, typename Out>
void finish(const Acc *acc, Out *out, int64_t n, Finish f, int64_t count, pthreadpool_t pool) {
    parallel_for(pool, static_cast<size_t>(n), 16384, [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) {
            Acc v = acc[i];
            if (f == Finish::Mean) {
                if constexpr (std::is_integral_v<Acc>)
                    v = count == 0 ? 0 : v / count;
                else
                    v = v / static_cast<Acc>(count);
            } else if (f == Finish::Sqrt) {
                v = static_cast<Acc>(std::sqrt(static_cast<double>(v)));
            } else if (f == Finish::Log) {
                v = static_cast<Acc>(std::log(static_cast<double>(v)));
            }
            out[i] = static_cast<Out>(v);
        }
    });
}

void run_reduce(RunContext &ctx) {
    const Tensor &x = ctx.input(0);
    ReduceOp op = reduce_op(ctx.node.type);
    bool keepdims = ctx.attrs().get_int("keepdims", 1) != 0;
    bool noop = ctx.attrs().get_int("noop_with_empty_axes", 0) != 0;
    std::vector<int64_t> axes;
    bool has_axes = false;
    if (ctx.has_input(1)) {
        axes = int_values(ctx.input(1));
        has_axes = true;
    } else if (ctx.attrs().has("axes")) {
        axes = ctx.attrs().get_ints("axes");
        has_axes = true;
    }
    AxesSpec spec = axes_spec(has_axes ? &axes : nullptr, x.rank(), noop,
                              [&](const std::string &msg) { ctx.error(ONNXSTREAM_ERR_INVALID_MODEL, msg); });
    Shape out_shape = reduced_shape(x.shape(), spec, keepdims);
    int64_t count = 1;
    for (size_t i = 0; i < x.rank(); ++i)
        if (spec.reduced[i]) count *= x.dim(i);

    // Reducing nothing with an op that maps nothing: the output is the input.
    bool plain =
        op.finish == Finish::None && (op.kind == Kind::Sum || op.kind == Kind::Max || op.kind == Kind::Min ||
                                      op.kind == Kind::Prod || op.kind == Kind::LogSumExp);
    if (count == 1 && plain && x.numel() > 0 &&
        std::find(spec.reduced.begin(), spec.reduced.end(), true) == spec.reduced.end()) {
        ctx.set_output(0, x.reshaped(out_shape));
        return;
    }
    Tensor &y = ctx.alloc_output(0, x.dtype(), out_shape);
    int64_t n = y.numel();
    bool minmax = op.kind == Kind::Max || op.kind == Kind::Min;
    switch (x.dtype()) {
    case DType::F32:
    case DType::F16: {
        Tensor xf = x;
        if (x.dtype() == DType::F16) {
            xf = ctx.scratch(DType::F32, x.shape());
            half_to_float_n(x.data<uint16_t>(), xf.data<float>(), static_cast<size_t>(x.numel()));
        }
        Tensor acc;
        if (minmax)
            acc = reduce_dispatch<float>(ctx, op.kind, xf.data<float>(), x.shape(), spec.reduced);
        else
            acc = reduce_dispatch<double>(ctx, op.kind, xf.data<float>(), x.shape(), spec.reduced);
        Tensor out32 = x.dtype() == DType::F32 ? y : ctx.scratch(DType::F32, out_shape);
        if (minmax)
            finish(static_cast<const float *>(acc.raw()), out32.data<float>(), n, op.finish, count,
                   ctx.pool());
        else
            finish(static_cast<const double *>(acc.raw()), out32.data<float>(), n, op.finish, count,
                   ctx.pool());
        if (x.dtype() == DType::F16)
            float_to_half_n(out32.data<float>(), y.data<uint16_t>(), static_cast<size_t>(n));
        break;
    }
    case DType::F64: {
        Tensor acc = reduce_dispatch<double>(ctx, op.kind, x.data<double>(), x.shape(), spec.reduced);
        finish(static_cast<const double *>(acc.raw()), y.data<double>(), n, op.finish, count, ctx.pool());
        break;
    }
    case DType::I64: {
        Tensor acc = reduce_dispatch<int64_t>(ctx, op.kind, x.data<int64_t>(), x.shape(), spec.reduced);
        finish(static_cast<const int64_t *>(acc.raw()), y.data<int64_t>(), n, op.finish, count, ctx.pool());
        break;
    }
    case DType::I32: {
        Tensor acc = reduce_dispatch<int64_t>(ctx, op.kind, x.data<int32_t>(), x.shape(), spec.reduced);
        finish(static_cast<const int64_t *>(acc.raw()), y.data<int32_t>(), n, op.finish, count, ctx.pool());
        break;
    }
    case DType::U8:
    case DType::Bool: { // only Max and Min take bool (0 or 1 bytes)
        Tensor acc = reduce_dispatch<int64_t>(ctx, op.kind, x.data<uint8_t>(), x.shape(), spec.reduced);
        finish(static_cast<const int64_t *>(acc.raw()), y.data<uint8_t>(), n, op.finish, count, ctx.pool());
        break;
    }
    case DType::I8: {
        Tensor acc = reduce_dispatch<int64_t>(ctx, op.kind, x.data<int8_t>(), x.shape(), spec.reduced);
        finish(static_cast<const int64_t *>(acc.raw()), y.data<int8_t>(), n, op.finish, count, ctx.pool());
        break;
    }
    default: ctx.error(ONNXSTREAM_ERR_UNSUPPORTED, ctx.node.type, " on ", dtype_name(x.dtype()));
    }
}

// ---------------------------------------------------------------------------------------------------------
// ArgMax / ArgMin

std::vector<TensorInfo> infer_arg(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    ctx.require_dtype(0, {DType::F32, DType::F16, DType::I64, DType::I32, DType::U8, DType::I8});
    const TensorInfo &x = ctx.input(0);
    int64_t rank = static_cast<int64_t>(x.shape.size()), axis = ctx.attrs().get_int("axis", 0);
    if (rank == 0) ctx.error("input must have rank >= 1");
    if (axis < -rank || axis >= rank) ctx.error("axis ", axis, " is out of range for rank ", rank);
    size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    if (x.shape[a] == 0) ctx.error("cannot take the arg of an empty axis (input ", shape_str(x.shape), ")");
    Shape out = x.shape;
    if (ctx.attrs().get_int("keepdims", 1) != 0)
        out[a] = 1;
    else
        out.erase(out.begin() + static_cast<std::ptrdiff_t>(a));
    return {TensorInfo{DType::I64, out, {}}};
}

// Max: strictly greater wins (first index), or greater-or-equal (last index); Min likewise.
template <bool Max, bool Last, typename T> inline bool better(T v, T best) {
    if constexpr (Max)
        return Last ? v >= best : v > best;
    else
        return Last ? v <= best : v < best;
}

template <bool Max, bool Last, typename T>
void arg_typed(const RunContext &ctx, const T *x, int64_t *y, int64_t outer, int64_t r, int64_t inner) {
    constexpr int64_t kChunk = 256;
    int64_t chunks = (inner + kChunk - 1) / kChunk;
    parallel_for(
        ctx.pool(), static_cast<size_t>(outer * chunks), inner == 1 ? 64 : 1, [&](size_t begin, size_t end) {
            T best[kChunk];
            for (size_t t = begin; t < end; ++t) {
                int64_t o = static_cast<int64_t>(t) / chunks, c0 = static_cast<int64_t>(t) % chunks * kChunk;
                int64_t w = std::min(kChunk, inner - c0);
                const T *xb = x + o * r * inner + c0;
                int64_t *yb = y + o * inner + c0;
                for (int64_t i = 0; i < w; ++i) {
                    best[i] = xb[i];
                    yb[i] = 0;
                }
                for (int64_t k = 1; k < r; ++k) {
                    const T *row = xb + k * inner;
                    for (int64_t i = 0; i < w; ++i) {
                        bool b = better<Max, Last>(row[i], best[i]);
                        best[i] = b ? row[i] : best[i];
                        yb[i] = b ? k : yb[i];
                    }
                }
            }
        });
}

template <typename T>
void arg_dispatch(const RunContext &ctx, bool max, bool last, const T *x, int64_t *y, int64_t o, int64_t r,
                  int64_t i) {
    if (max)
        last ? arg_typed<true, true>(ctx, x, y, o, r, i) : arg_typed<true, false>(ctx, x, y, o, r, i);
    else
        last ? arg_typed<false, true>(ctx, x, y, o, r, i) : arg_typed<false, false>(ctx, x, y, o, r, i);
}

void run_arg(RunContext &ctx) {
    const Tensor &x = ctx.input(0);
    int64_t rank = static_cast<int64_t>(x.rank()), axis = ctx.attrs().get_int("axis", 0);
    size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    bool max = ctx.node.type == "ArgMax", last = ctx.attrs().get_int("select_last_index", 0) != 0;
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < a; ++i) outer *= x.dim(i);
    for (size_t i = a + 1; i < x.rank(); ++i) inner *= x.dim(i);
    int64_t r = x.dim(a);
    int64_t *y = ctx.alloc_output(0).data<int64_t>();
    switch (x.dtype()) {
    case DType::F32: arg_dispatch(ctx, max, last, x.data<float>(), y, outer, r, inner); break;
    case DType::F16: {
        Tensor xf = ctx.scratch(DType::F32, x.shape());
        half_to_float_n(x.data<uint16_t>(), xf.data<float>(), static_cast<size_t>(x.numel()));
        arg_dispatch(ctx, max, last, xf.data<float>(), y, outer, r, inner);
        break;
    }
    case DType::I64: arg_dispatch(ctx, max, last, x.data<int64_t>(), y, outer, r, inner); break;
    case DType::I32: arg_dispatch(ctx, max, last, x.data<int32_t>(), y, outer, r, inner); break;
    case DType::U8: arg_dispatch(ctx, max, last, x.data<uint8_t>(), y, outer, r, inner); break;
    case DType::I8: arg_dispatch(ctx, max, last, x.data<int8_t>(), y, outer, r, inner); break;
    default: ctx.error(ONNXSTREAM_ERR_UNSUPPORTED, ctx.node.type, " on ", dtype_name(x.dtype()));
    }
}

} // namespace

void register_reduce_ops(Registry &r) {
    // Plain loops read weights exactly.
    for (const char *type : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                             "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"})
        r.add(type, infer_reduce, run_reduce).with_reads_weights_exactly();
    r.add("ArgMax", infer_arg, run_arg).with_reads_weights_exactly();
    r.add("ArgMin", infer_arg, run_arg).with_reads_weights_exactly();
}

} // namespace onnxstream

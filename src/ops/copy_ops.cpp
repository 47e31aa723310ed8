// Ops that copy regions of their inputs: Concat, Split, Slice, Pad, Expand, Tile. Like the other shape
// ops they move bytes by element size (1/2/4/8), and their outputs fall back to model.txt's declared shape
// while planning when a run-time input (pads, starts, repeats, ...) decides it.
#include <algorithm>
#include <cstring>

#include "ops/registry.h"
#include "ops/shape_common.h"
#include "ops/transpose.h"

namespace onnxstream {

namespace shapeops {

namespace {

// ---- Expand / Tile ----

Shape broadcast_shape(const std::string &where, const Shape &a, const Shape &b) {
    size_t r = std::max(a.size(), b.size());
    Shape out(r);
    for (size_t i = 0; i < r; ++i) {
        int64_t x = i + a.size() >= r ? a[i + a.size() - r] : 1;
        int64_t y = i + b.size() >= r ? b[i + b.size() - r] : 1;
        if (x != y && x != 1 && y != 1)
            invalid(where, "shapes ", shape_str(a), " and ", shape_str(b), " do not broadcast (dimension ", i,
                    ": ", x, " vs ", y, ")");
        out[i] = x == 1 ? y : x;
    }
    return checked_shape(where, out, "output shape");
}

Shape tile_shape(const std::string &where, const Shape &in, const std::vector<int64_t> &repeats) {
    if (repeats.size() != in.size())
        invalid(where, "repeats has ", repeats.size(), " entries but the input has rank ", in.size());
    Shape out(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
        if (repeats[i] < 0 || repeats[i] > kMaxElements)
            invalid(where, "repeats ", shape_str(repeats), " has an entry outside 0..2^48");
        out[i] = in[i] * repeats[i];
    }
    return checked_shape(where, out, "output shape");
}

// ---- Concat / Split ----

// Moves bytes between a whole tensor and its pieces along one axis: each of the `outer` rows of the
// whole is the pieces' rows laid end to end. One pool dispatch per call.
void concat_copy(pthreadpool_t pool, char *whole, const std::vector<char *> &pieces,
                 const std::vector<size_t> &bytes, int64_t outer, bool into_whole) {
    size_t row = 0;
    for (size_t b : bytes) row += b;
    if (row == 0 || outer == 0) return;
    auto copy = [into_whole](char *w, char *p, size_t n) {
        if (into_whole)
            std::memcpy(w, p, n);
        else
            std::memcpy(p, w, n);
    };
    if (row >= kTaskBytes && outer <= 64) {
        // Few large blocks (the channels of one image): jobs of at most kTaskBytes each.
        struct Job {
            char *w, *p;
            size_t n;
        };
        std::vector<Job> jobs;
        for (size_t o = 0; o < static_cast<size_t>(outer); ++o) {
            size_t off = 0;
            for (size_t j = 0; j < pieces.size(); ++j) {
                char *w = whole + o * row + off, *p = pieces[j] + o * bytes[j];
                for (size_t c = 0; c < bytes[j]; c += kTaskBytes)
                    jobs.push_back({w + c, p + c, std::min(kTaskBytes, bytes[j] - c)});
                off += bytes[j];
            }
        }
        parallel_for(pool, jobs.size(), 1, [&](size_t begin, size_t end) {
            for (size_t i = begin; i < end; ++i) copy(jobs[i].w, jobs[i].p, jobs[i].n);
        });
        return;
    }
    parallel_for(pool, static_cast<size_t>(outer), task_tile(row), [&](size_t begin, size_t end) {
        for (size_t o = begin; o < end; ++o) {
            size_t off = 0;
            for (size_t j = 0; j < pieces.size(); ++j) {
                copy(whole + o * row + off, pieces[j] + o * bytes[j], bytes[j]);
                off += bytes[j];
            }
        }
    });
}

// Split sizes: input 1 (opset 13+), the `split` attribute (older), or equal parts - of ceil(dim / n)
// with a smaller last part, as opset 18's num_outputs defines it - for n = num_outputs or the output count.
std::vector<int64_t> split_sizes(const std::string &where, const Attributes &attrs, int64_t dim,
                                 size_t outputs, const std::vector<int64_t> *given) {
    std::vector<int64_t> sizes;
    if (given || attrs.has("split")) {
        sizes = given ? *given : attrs.get_ints("split");
        if (sizes.size() != outputs)
            invalid(where, "split has ", sizes.size(), " entries but there are ", outputs, " outputs");
        int64_t sum = 0;
        for (int64_t s : sizes) {
            if (s < 0 || s > dim)
                invalid(where, "split ", shape_str(sizes), " has an entry outside 0..", dim);
            sum += s;
        }
        if (sum != dim)
            invalid(where, "split ", shape_str(sizes), " sums to ", sum, " but the axis has size ", dim);
        return sizes;
    }
    int64_t n = attrs.get_int("num_outputs", static_cast<int64_t>(outputs));
    if (n != static_cast<int64_t>(outputs))
        invalid(where, "num_outputs is ", n, " but there are ", outputs, " outputs");
    int64_t part = (dim + n - 1) / n, last = dim - part * (n - 1);
    if (last < 0) invalid(where, "cannot split an axis of size ", dim, " into ", n, " parts of ", part);
    sizes.assign(static_cast<size_t>(n), part);
    sizes.back() = last;
    return sizes;
}

// ---- Slice ----

struct SliceParams {
    Shape out;
    std::vector<int64_t> start, step;
};

SliceParams slice_params(const std::string &where, const Shape &in, const std::vector<int64_t> &starts,
                         const std::vector<int64_t> &ends, const std::vector<int64_t> *axes_in,
                         const std::vector<int64_t> *steps_in) {
    int64_t rank = static_cast<int64_t>(in.size());
    size_t n = starts.size();
    if (ends.size() != n) invalid(where, "starts has ", n, " entries but ends has ", ends.size());
    if (axes_in && axes_in->size() != n)
        invalid(where, "starts has ", n, " entries but axes has ", axes_in->size());
    if (steps_in && steps_in->size() != n)
        invalid(where, "starts has ", n, " entries but steps has ", steps_in->size());
    std::vector<int64_t> axes;
    if (axes_in)
        axes = normalize_axes(where, *axes_in, rank);
    else {
        if (static_cast<int64_t>(n) > rank)
            invalid(where, "starts has ", n, " entries for a rank-", rank, " input");
        for (size_t i = 0; i < n; ++i) axes.push_back(static_cast<int64_t>(i));
    }
    SliceParams p;
    p.out = in;
    p.start.assign(in.size(), 0);
    p.step.assign(in.size(), 1);
    for (size_t i = 0; i < n; ++i) {
        size_t a = static_cast<size_t>(axes[i]);
        int64_t d = in[a], s = starts[i], e = ends[i], st = steps_in ? (*steps_in)[i] : 1;
        if (st == 0) invalid(where, "steps must not be zero");
        if (d == 0) {
            p.out[a] = 0;
            continue;
        }
        if (s < 0) s += d;
        if (e < 0) e += d;
        // Counts in unsigned arithmetic: steps may be anything down to INT64_MIN.
        int64_t count;
        if (st > 0) {
            s = std::clamp<int64_t>(s, 0, d);
            e = std::clamp<int64_t>(e, 0, d);
            count =
                e > s ? static_cast<int64_t>(static_cast<uint64_t>(e - s - 1) / static_cast<uint64_t>(st)) + 1
                      : 0;
        } else {
            s = std::clamp<int64_t>(s, 0, d - 1);
            e = std::clamp<int64_t>(e, -1, d - 1);
            uint64_t back = uint64_t{0} - static_cast<uint64_t>(st);
            count = s > e ? static_cast<int64_t>(static_cast<uint64_t>(s - e - 1) / back) + 1 : 0;
        }
        p.out[a] = count;
        p.start[a] = s;
        // With one element the step never moves; keeping it out of the stride avoids overflow.
        p.step[a] = count > 1 ? st : 1;
    }
    return p;
}

// Starts/ends/axes/steps as lists: inputs 1-4 (opset 10+) or attributes (opset 1-9).
struct SliceLists {
    std::vector<int64_t> starts, ends, axes, steps;
    bool has_axes = false, has_steps = false;
};

SliceParams slice_from(const std::string &where, const Shape &in, const SliceLists &l) {
    return slice_params(where, in, l.starts, l.ends, l.has_axes ? &l.axes : nullptr,
                        l.has_steps ? &l.steps : nullptr);
}

// ---- Pad ----

enum class PadMode { Constant, Reflect, Edge, Wrap };

PadMode pad_mode(const std::string &where, const Attributes &attrs) {
    std::string m = attrs.get_string("mode", "constant");
    if (m == "constant") return PadMode::Constant;
    if (m == "reflect") return PadMode::Reflect;
    if (m == "edge") return PadMode::Edge;
    if (m == "wrap") return PadMode::Wrap;
    fail(ONNXSTREAM_ERR_UNSUPPORTED, where, ": mode '", m,
         "' is not supported (constant, reflect, edge, wrap)");
}

// Per-dimension begin/end pads from the pads list ([x1_begin, x2_begin, ..., x1_end, x2_end, ...]) over
// `axes` (opset 18) or all dimensions. Returns the output shape.
Shape pad_shape(const std::string &where, const Shape &in, const std::vector<int64_t> &pads,
                const std::vector<int64_t> *axes_in, PadMode mode, std::vector<int64_t> &begin) {
    int64_t rank = static_cast<int64_t>(in.size());
    std::vector<int64_t> axes;
    if (axes_in)
        axes = normalize_axes(where, *axes_in, rank);
    else
        for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    if (pads.size() != 2 * axes.size())
        invalid(where, "pads has ", pads.size(), " entries, expected ", 2 * axes.size(),
                " (2 per padded axis)");
    begin.assign(in.size(), 0);
    Shape out = in;
    for (size_t i = 0; i < axes.size(); ++i) {
        size_t a = static_cast<size_t>(axes[i]);
        int64_t b = pads[i], e = pads[i + axes.size()];
        if (b < -kMaxElements || b > kMaxElements || e < -kMaxElements || e > kMaxElements)
            invalid(where, "pads ", shape_str(pads), " has an entry beyond +-2^48");
        begin[a] = b;
        out[a] = in[a] + b + e;
        if (out[a] < 0)
            invalid(where, "pads ", shape_str(pads), " remove more than the ", in[a], " elements of axis ",
                    a);
        if (mode != PadMode::Constant && in[a] + std::min<int64_t>(b, 0) + std::min<int64_t>(e, 0) <= 0 &&
            out[a] > 0)
            invalid(where, in[a] == 0 ? cat("cannot pad the empty axis ", a, " in a non-constant mode")
                                      : cat("pads ", shape_str(pads), " remove every element of axis ", a,
                                            ", leaving nothing to pad it with in a non-constant mode"));
    }
    return checked_shape(where, out, "output shape");
}

// The input index a non-constant mode reads for index s of an axis whose begin pad is b and end pad e.
// Negative pads crop first, and the mode then reads the part of the axis that is kept (as ONNX Runtime
// does): wrap repeats that part, edge and reflect stop at its ends.
int64_t pad_source(int64_t s, int64_t d, int64_t b, int64_t e, PadMode mode) {
    const int64_t first = std::max<int64_t>(-b, 0);
    d += std::min<int64_t>(b, 0) + std::min<int64_t>(e, 0);
    s -= first;
    switch (mode) {
    case PadMode::Edge: return first + std::clamp<int64_t>(s, 0, d - 1);
    case PadMode::Wrap: return first + ((s % d) + d) % d;
    default: {
        if (d == 1) return first;
        int64_t period = 2 * (d - 1);
        s = ((s % period) + period) % period;
        return first + (s < d ? s : period - s);
    }
    }
}

// ---- Expand / Tile ----

std::vector<TensorInfo> expand_infer(const InferContext &ctx) {
    ctx.require_inputs(2, 2);
    const TensorInfo &in = ctx.input(0);
    int64_t len = int_list_length(ctx, 1, "shape");
    auto shape = const_ints(ctx, 1, "shape");
    if (!shape) {
        const Shape &d = ctx.declared_shape(0);
        if (static_cast<int64_t>(d.size()) != std::max<int64_t>(len, static_cast<int64_t>(in.shape.size())) ||
            broadcast_shape(ctx.node.where, in.shape, d) != d)
            ctx.error("model.txt declares output shape ", shape_str(d), ", which is not a broadcast of ",
                      shape_str(in.shape), " by a ", len, "-entry shape");
        return {info_like(in, d)};
    }
    return {info_like(in, broadcast_shape(ctx.node.where, in.shape, *shape))};
}

void expand_run(RunContext &ctx) {
    const Tensor &in = ctx.input(0);
    Shape out_shape = broadcast_shape(ctx.node.where, in.shape(), int_values(ctx.input(1)));
    if (out_shape == in.shape()) {
        ctx.set_output(0, in);
        return;
    }
    Tensor &out = ctx.alloc_output(0, in.dtype(), out_shape);
    out.set_quant(in.quant());
    std::vector<int64_t> in_strides = contiguous_strides(in.shape()), strides(out_shape.size(), 0);
    size_t off = out_shape.size() - in.rank();
    for (size_t i = 0; i < in.rank(); ++i)
        if (in.dim(i) != 1) strides[off + i] = in_strides[i];
    strided_copy(out.raw(), in.raw(), out_shape, strides, dtype_size(in.dtype()), ctx.pool());
}

std::vector<TensorInfo> tile_infer(const InferContext &ctx) {
    ctx.require_inputs(2, 2);
    const TensorInfo &in = ctx.input(0);
    int64_t len = int_list_length(ctx, 1, "repeats");
    if (len != static_cast<int64_t>(in.shape.size()))
        ctx.error("repeats has ", len, " entries but the input has rank ", in.shape.size());
    auto repeats = const_ints(ctx, 1, "repeats");
    if (!repeats) {
        const Shape &d = ctx.declared_shape(0);
        bool ok = d.size() == in.shape.size();
        for (size_t i = 0; ok && i < d.size(); ++i)
            ok = in.shape[i] == 0 ? d[i] == 0 : d[i] % in.shape[i] == 0;
        if (!ok)
            ctx.error("model.txt declares output shape ", shape_str(d), ", which is not a tiling of ",
                      shape_str(in.shape));
        return {info_like(in, d)};
    }
    return {info_like(in, tile_shape(ctx.node.where, in.shape, *repeats))};
}

void tile_run(RunContext &ctx) {
    const Tensor &in = ctx.input(0);
    std::vector<int64_t> repeats = int_values(ctx.input(1));
    Shape out_shape = tile_shape(ctx.node.where, in.shape(), repeats);
    if (out_shape == in.shape()) {
        ctx.set_output(0, in);
        return;
    }
    Tensor &out = ctx.alloc_output(0, in.dtype(), out_shape);
    out.set_quant(in.quant());
    // The output, viewed as (r0, d0, r1, d1, ...), is the input broadcast along the repeat axes.
    std::vector<int64_t> in_strides = contiguous_strides(in.shape());
    Shape view;
    std::vector<int64_t> strides;
    for (size_t i = 0; i < in.rank(); ++i) {
        view.insert(view.end(), {repeats[i], in.dim(i)});
        strides.insert(strides.end(), {0, in_strides[i]});
    }
    strided_copy(out.raw(), in.raw(), view, strides, dtype_size(in.dtype()), ctx.pool());
}

// ---- Concat / Split ----

std::vector<TensorInfo> concat_infer(const InferContext &ctx) {
    if (ctx.input_count() == 0) ctx.error("needs at least one input");
    ctx.require_inputs(ctx.input_count(), ctx.input_count());
    const TensorInfo &first = ctx.input(0);
    int64_t rank = static_cast<int64_t>(first.shape.size());
    if (rank == 0) ctx.error("cannot concatenate scalars");
    size_t axis = static_cast<size_t>(normalize_axis(ctx.node.where, ctx.attrs().require_int("axis"), rank));
    Shape out = first.shape;
    out[axis] = 0;
    for (size_t j = 0; j < ctx.input_count(); ++j) {
        const TensorInfo &in = ctx.input(j);
        if (in.dtype != first.dtype)
            ctx.error("input ", j, " is ", dtype_name(in.dtype), " but input 0 is ", dtype_name(first.dtype));
        if (in.quant.present != first.quant.present || in.quant.scale != first.quant.scale ||
            in.quant.zero_point != first.quant.zero_point)
            fail(ONNXSTREAM_ERR_UNSUPPORTED, ctx.node.where,
                 ": inputs with different quantization parameters");
        bool ok = in.shape.size() == first.shape.size();
        for (size_t i = 0; ok && i < in.shape.size(); ++i) ok = i == axis || in.shape[i] == first.shape[i];
        if (!ok)
            ctx.error("input ", j, " has shape ", shape_str(in.shape), ", which does not match input 0's ",
                      shape_str(first.shape), " outside axis ", axis);
        out[axis] += in.shape[axis];
    }
    return {info_like(first, out)};
}

void concat_run(RunContext &ctx) {
    if (ctx.input_count() == 1) {
        ctx.set_output(0, ctx.input(0));
        return;
    }
    Tensor &out = alloc_like_input(ctx);
    size_t axis = static_cast<size_t>(
        normalize_axis(ctx.node.where, ctx.attrs().get_int("axis", 0), static_cast<int64_t>(out.rank())));
    int64_t outer = 1, inner = static_cast<int64_t>(dtype_size(out.dtype()));
    for (size_t i = 0; i < out.rank(); ++i)
        if (i < axis)
            outer *= out.dim(i);
        else if (i > axis)
            inner *= out.dim(i);
    std::vector<char *> pieces;
    std::vector<size_t> bytes;
    for (size_t j = 0; j < ctx.input_count(); ++j) {
        pieces.push_back(static_cast<char *>(ctx.input(j).raw()));
        bytes.push_back(static_cast<size_t>(ctx.input(j).dim(axis) * inner));
    }
    concat_copy(ctx.pool(), static_cast<char *>(out.raw()), pieces, bytes, outer, true);
}

std::vector<TensorInfo> split_infer(const InferContext &ctx) {
    ctx.require_inputs(1, 2);
    const TensorInfo &in = ctx.input(0);
    int64_t rank = static_cast<int64_t>(in.shape.size());
    if (rank == 0) ctx.error("cannot split a scalar");
    size_t axis = static_cast<size_t>(normalize_axis(ctx.node.where, ctx.attrs().get_int("axis", 0), rank));
    std::vector<TensorInfo> outs;
    std::optional<std::vector<int64_t>> given;
    if (ctx.has_input(1)) {
        int_list_length(ctx, 1, "split");
        given = const_ints(ctx, 1, "split");
        if (!given) { // run-time split sizes: trust the declared shapes once they tile the input
            int64_t sum = 0;
            for (size_t k = 0; k < ctx.output_count(); ++k) {
                Shape d = ctx.declared_shape(k);
                bool ok = d.size() == in.shape.size();
                for (size_t i = 0; ok && i < d.size(); ++i) ok = i == axis || d[i] == in.shape[i];
                if (!ok)
                    ctx.error("model.txt declares output ", k, " as ", shape_str(d), ", not a part of ",
                              shape_str(in.shape));
                sum += d[axis];
                outs.push_back(info_like(in, d));
            }
            if (sum != in.shape[axis])
                ctx.error("model.txt declares outputs that sum to ", sum, " along axis ", axis, " of size ",
                          in.shape[axis]);
            return outs;
        }
    }
    auto sizes = split_sizes(ctx.node.where, ctx.attrs(), in.shape[axis], ctx.output_count(),
                             given ? &*given : nullptr);
    for (int64_t s : sizes) {
        Shape d = in.shape;
        d[axis] = s;
        outs.push_back(info_like(in, d));
    }
    return outs;
}

void split_run(RunContext &ctx) {
    const Tensor &in = ctx.input(0);
    size_t axis = static_cast<size_t>(
        normalize_axis(ctx.node.where, ctx.attrs().get_int("axis", 0), static_cast<int64_t>(in.rank())));
    std::vector<int64_t> given;
    if (ctx.has_input(1)) given = int_values(ctx.input(1));
    auto sizes = split_sizes(ctx.node.where, ctx.attrs(), in.dim(axis), ctx.output_count(),
                             ctx.has_input(1) ? &given : nullptr);
    if (sizes.size() == 1) {
        ctx.set_output(0, in);
        return;
    }
    int64_t outer = 1, inner = static_cast<int64_t>(dtype_size(in.dtype()));
    for (size_t i = 0; i < in.rank(); ++i)
        if (i < axis)
            outer *= in.dim(i);
        else if (i > axis)
            inner *= in.dim(i);
    std::vector<char *> pieces;
    std::vector<size_t> bytes;
    for (size_t k = 0; k < sizes.size(); ++k) {
        Shape d = in.shape();
        d[axis] = sizes[k];
        Tensor &out = ctx.alloc_output(k, in.dtype(), d);
        out.set_quant(in.quant());
        pieces.push_back(static_cast<char *>(out.raw()));
        bytes.push_back(static_cast<size_t>(sizes[k] * inner));
    }
    concat_copy(ctx.pool(), static_cast<char *>(in.raw()), pieces, bytes, outer, false);
}

// ---- Slice ----

std::vector<TensorInfo> slice_infer(const InferContext &ctx) {
    ctx.require_inputs(1, 5);
    const TensorInfo &in = ctx.input(0);
    SliceLists l;
    if (!ctx.has_input(1)) {
        if (!ctx.attrs().has("starts") || !ctx.attrs().has("ends"))
            ctx.error("needs starts and ends (inputs 1 and 2, or attributes before opset 10)");
        l.starts = ctx.attrs().get_ints("starts");
        l.ends = ctx.attrs().get_ints("ends");
        l.has_axes = ctx.attrs().has("axes");
        l.axes = ctx.attrs().get_ints("axes");
        return {info_like(in, slice_from(ctx.node.where, in.shape, l).out)};
    }
    ctx.require_inputs(3, 5);
    const char *names[] = {"", "starts", "ends", "axes", "steps"};
    std::vector<int64_t> *lists[] = {nullptr, &l.starts, &l.ends, &l.axes, &l.steps};
    bool known = true;
    for (size_t i = 1; i < 5; ++i) {
        if (!ctx.has_input(i)) continue;
        int_list_length(ctx, i, names[i]);
        auto v = const_ints(ctx, i, names[i]);
        if (v)
            *lists[i] = *v;
        else
            known = false;
    }
    l.has_axes = ctx.has_input(3);
    l.has_steps = ctx.has_input(4);
    if (!known) {
        const Shape &d = ctx.declared_shape(0);
        if (d.size() != in.shape.size())
            ctx.error("model.txt declares a rank-", d.size(), " output for a rank-", in.shape.size(),
                      " input");
        return {info_like(in, d)};
    }
    return {info_like(in, slice_from(ctx.node.where, in.shape, l).out)};
}

void slice_run(RunContext &ctx) {
    const Tensor &in = ctx.input(0);
    SliceLists l;
    if (!ctx.has_input(1)) {
        l.starts = ctx.attrs().get_ints("starts");
        l.ends = ctx.attrs().get_ints("ends");
        l.has_axes = ctx.attrs().has("axes");
        l.axes = ctx.attrs().get_ints("axes");
    } else {
        l.starts = int_values(ctx.input(1));
        l.ends = int_values(ctx.input(2));
        l.has_axes = ctx.has_input(3);
        l.has_steps = ctx.has_input(4);
        if (l.has_axes) l.axes = int_values(ctx.input(3));
        if (l.has_steps) l.steps = int_values(ctx.input(4));
    }
    SliceParams p = slice_from(ctx.node.where, in.shape(), l);
    bool whole = p.out == in.shape();
    for (size_t i = 0; whole && i < in.rank(); ++i) whole = p.start[i] == 0 && p.step[i] == 1;
    if (whole) { // exporters emit full-range slices (ends = INT64_MAX): share the input
        ctx.set_output(0, in);
        return;
    }
    Tensor &out = ctx.alloc_output(0, in.dtype(), p.out);
    out.set_quant(in.quant());
    if (out.numel() == 0) return;
    std::vector<int64_t> in_strides = contiguous_strides(in.shape()), strides(in.rank());
    int64_t offset = 0;
    for (size_t i = 0; i < in.rank(); ++i) {
        offset += p.start[i] * in_strides[i];
        strides[i] = in_strides[i] * p.step[i];
    }
    size_t esz = dtype_size(in.dtype());
    strided_copy(out.raw(), static_cast<const char *>(in.raw()) + offset * static_cast<int64_t>(esz), p.out,
                 strides, esz, ctx.pool());
}

// ---- Pad ----

std::vector<TensorInfo> pad_infer(const InferContext &ctx) {
    ctx.require_inputs(1, 4);
    const TensorInfo &in = ctx.input(0);
    PadMode mode = pad_mode(ctx.node.where, ctx.attrs());
    std::vector<int64_t> begin;
    if (!ctx.has_input(1)) { // opset 2: pads and value are attributes
        if (!ctx.attrs().has("pads")) ctx.error("needs pads (input 1, or the attribute before opset 11)");
        return {info_like(
            in, pad_shape(ctx.node.where, in.shape, ctx.attrs().get_ints("pads"), nullptr, mode, begin))};
    }
    if (ctx.has_input(2)) {
        const TensorInfo &v = ctx.input(2);
        if (v.dtype != in.dtype)
            ctx.error("constant_value is ", dtype_name(v.dtype), " but the data is ", dtype_name(in.dtype));
        if (shape_numel(v.shape) != 1)
            ctx.error("constant_value must have one element, got shape ", shape_str(v.shape));
    }
    int_list_length(ctx, 1, "pads");
    auto pads = const_ints(ctx, 1, "pads");
    std::optional<std::vector<int64_t>> axes;
    if (ctx.has_input(3)) {
        int_list_length(ctx, 3, "axes");
        axes = const_ints(ctx, 3, "axes");
    }
    if (!pads || (ctx.has_input(3) && !axes)) {
        const Shape &d = ctx.declared_shape(0);
        if (d.size() != in.shape.size())
            ctx.error("model.txt declares a rank-", d.size(), " output for a rank-", in.shape.size(),
                      " input");
        return {info_like(in, d)};
    }
    return {info_like(in, pad_shape(ctx.node.where, in.shape, *pads, axes ? &*axes : nullptr, mode, begin))};
}

void pad_run(RunContext &ctx) {
    const Tensor &in = ctx.input(0);
    PadMode mode = pad_mode(ctx.node.where, ctx.attrs());
    size_t esz = dtype_size(in.dtype());
    unsigned char value[8] = {};
    std::vector<int64_t> begin;
    Shape out_shape;
    if (!ctx.has_input(1)) {
        store_scalar(in.dtype(), ctx.attrs().get_float("value", 0.0f), value);
        out_shape = pad_shape(ctx.node.where, in.shape(), ctx.attrs().get_ints("pads"), nullptr, mode, begin);
    } else {
        if (ctx.has_input(2)) std::memcpy(value, ctx.input(2).raw(), esz);
        std::vector<int64_t> axes;
        if (ctx.has_input(3)) axes = int_values(ctx.input(3));
        out_shape = pad_shape(ctx.node.where, in.shape(), int_values(ctx.input(1)),
                              ctx.has_input(3) ? &axes : nullptr, mode, begin);
    }
    if (out_shape == in.shape() &&
        std::all_of(begin.begin(), begin.end(), [](int64_t b) { return b == 0; })) {
        ctx.set_output(0, in);
        return;
    }
    Tensor &out = ctx.alloc_output(0, in.dtype(), out_shape);
    out.set_quant(in.quant());
    if (out.numel() == 0) return;
    size_t n = in.rank();
    if (n == 0) {
        std::memcpy(out.raw(), in.raw(), esz);
        return;
    }
    const Shape &din = in.shape();
    std::vector<int64_t> end(n);
    for (size_t i = 0; i < n; ++i) end[i] = out_shape[i] - din[i] - begin[i];
    std::vector<int64_t> in_strides = contiguous_strides(din);
    int64_t width = out_shape[n - 1], in_width = din[n - 1], pb = begin[n - 1], pe = end[n - 1];
    int64_t lo = std::clamp<int64_t>(pb, 0, width), hi = std::clamp<int64_t>(pb + in_width, lo, width);
    int64_t rows = out.numel() / width;
    const char *src = static_cast<const char *>(in.raw());
    char *dst = static_cast<char *>(out.raw());
    size_t tile = task_tile(static_cast<size_t>(width) * esz);
    parallel_for(ctx.pool(), static_cast<size_t>(rows), tile, [&](size_t rb, size_t re) {
        std::vector<int64_t> idx(n - 1);
        int64_t linear = static_cast<int64_t>(rb);
        for (size_t i = n - 1; i-- > 0;) {
            idx[i] = linear % out_shape[i];
            linear /= out_shape[i];
        }
        for (size_t r = rb; r < re; ++r) {
            char *drow = dst + r * static_cast<size_t>(width) * esz;
            bool fill_row = false;
            int64_t off = 0;
            for (size_t i = 0; i + 1 < n; ++i) {
                int64_t s = idx[i] - begin[i];
                if (s < 0 || s >= din[i]) {
                    if (mode == PadMode::Constant) {
                        fill_row = true;
                        break;
                    }
                    s = pad_source(s, din[i], begin[i], end[i], mode);
                }
                off += s * in_strides[i];
            }
            if (fill_row) {
                fill_elements(drow, static_cast<size_t>(width), value, esz);
            } else {
                const char *srow = src + off * static_cast<int64_t>(esz);
                if (hi > lo)
                    std::memcpy(drow + lo * esz, srow + (lo - pb) * esz, static_cast<size_t>(hi - lo) * esz);
                if (mode == PadMode::Constant) {
                    fill_elements(drow, static_cast<size_t>(lo), value, esz);
                    fill_elements(drow + hi * esz, static_cast<size_t>(width - hi), value, esz);
                } else {
                    for (int64_t j = 0; j < width; ++j) {
                        if (j == lo) j = hi;
                        if (j >= width) break;
                        const int64_t from = pad_source(j - pb, in_width, pb, pe, mode);
                        std::memcpy(drow + j * esz, srow + from * static_cast<int64_t>(esz), esz);
                    }
                }
            }
            for (size_t i = n - 1; i-- > 0;) {
                if (++idx[i] < out_shape[i]) break;
                idx[i] = 0;
            }
        }
    });
}

} // namespace

} // namespace shapeops

void register_copy_ops(Registry &r) {
    using namespace shapeops;
    r.add("Concat", concat_infer, concat_run);
    r.add("Split", split_infer, split_run);
    r.add("Slice", slice_infer, slice_run);
    r.add("Pad", pad_infer, pad_run);
    r.add("Expand", expand_infer, expand_run);
    r.add("Tile", tile_infer, tile_run);
}

} // namespace onnxstream

// Einsum: operands are contracted pairwise, left to right. Each contraction gathers both operands into
// (batch, M, K) x (batch, K, N) order (summing labels only one side uses), multiplies, and the last
// operand is gathered into the output's label order.
// float16 is computed in float32; products run through ops/matmul_kernels.h.
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/matmul_kernels.h"
#include "ops/registry.h"
#include "tensor/half.h"

namespace onnxstream {

namespace {

constexpr int kEllipsisBase = 128; // label ids for ellipsis dims; letters keep their character code

struct EinsumEquation {
    std::vector<std::vector<int>> inputs; // label per axis of each operand
    std::vector<int> output;
    std::map<int, int64_t> sizes;
};

std::string label_name(int l) {
    return l >= kEllipsisBase ? cat("...[", l - kEllipsisBase, "]") : std::string(1, static_cast<char>(l));
}

// Parse a term into labels; ellipsis dims become kEllipsisBase + i, right-aligned to `ellipsis_rank`.
// `rank` < 0 for the output (ellipsis expands to all of them).
std::vector<int> parse_term(const std::string &term, int64_t rank, int64_t &ellipsis_dims, bool &has_ellipsis,
                            const std::function<void(const std::string &)> &bad) {
    std::vector<int> letters_before, letters_after;
    has_ellipsis = false;
    for (size_t i = 0; i < term.size();) {
        char ch = term[i];
        if (ch == '.') {
            if (term.compare(i, 3, "...") != 0) bad(cat("'.' must be part of '...' in term '", term, "'"));
            if (has_ellipsis) bad(cat("term '", term, "' has more than one '...'"));
            has_ellipsis = true;
            i += 3;
            continue;
        }
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')))
            bad(cat("invalid character '", ch, "' in term '", term, "' (expected letters and '...')"));
        (has_ellipsis ? letters_after : letters_before).push_back(ch);
        ++i;
    }
    int64_t letters = static_cast<int64_t>(letters_before.size() + letters_after.size());
    if (rank >= 0) {
        if (!has_ellipsis && letters != rank)
            bad(cat("term '", term, "' has ", letters, " labels but its operand has rank ", rank));
        if (has_ellipsis && letters > rank)
            bad(cat("term '", term, "' has ", letters, " labels but its operand has rank ", rank));
        ellipsis_dims = has_ellipsis ? rank - letters : 0;
    }
    std::vector<int> out(letters_before.begin(), letters_before.end());
    if (has_ellipsis) out.push_back(-1); // expanded by the caller once every operand's ellipsis rank is known
    out.insert(out.end(), letters_after.begin(), letters_after.end());
    return out;
}

EinsumEquation parse_einsum(const std::string &equation_in, const std::vector<Shape> &shapes,
                            const std::function<void(const std::string &)> &bad) {
    std::string eq;
    for (char ch : equation_in)
        if (ch != ' ' && ch != '\t') eq += ch;
    size_t arrow = eq.find("->");
    std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
    std::vector<std::string> terms;
    size_t start = 0;
    for (;;) {
        size_t comma = lhs.find(',', start);
        terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    if (terms.size() != shapes.size())
        bad(cat("equation '", equation_in, "' has ", terms.size(), " input terms but the op has ",
                shapes.size(), " inputs"));

    EinsumEquation e;
    int64_t ellipsis_rank = 0;
    std::vector<std::vector<int>> raw(terms.size());
    std::vector<int64_t> edims(terms.size(), 0);
    for (size_t t = 0; t < terms.size(); ++t) {
        bool has = false;
        raw[t] = parse_term(terms[t], static_cast<int64_t>(shapes[t].size()), edims[t], has, bad);
        ellipsis_rank = std::max(ellipsis_rank, edims[t]);
    }
    auto expand = [&](const std::vector<int> &r, int64_t dims) {
        std::vector<int> out;
        for (int l : r) {
            if (l != -1) {
                out.push_back(l);
                continue;
            }
            for (int64_t i = ellipsis_rank - dims; i < ellipsis_rank; ++i)
                out.push_back(kEllipsisBase + static_cast<int>(i));
        }
        return out;
    };
    std::map<int, int> counts;
    for (size_t t = 0; t < terms.size(); ++t) {
        e.inputs.push_back(expand(raw[t], edims[t]));
        for (size_t ax = 0; ax < e.inputs[t].size(); ++ax) {
            int l = e.inputs[t][ax];
            int64_t d = shapes[t][ax];
            ++counts[l];
            auto it = e.sizes.find(l);
            if (it == e.sizes.end()) {
                e.sizes[l] = d;
            } else if (it->second != d) {
                // Only ellipsis dims broadcast (numpy rules); a letter names one size.
                if (l >= kEllipsisBase && (it->second == 1 || d == 1))
                    it->second = std::max(it->second, d);
                else
                    bad(cat("label '", label_name(l), "' has size ", it->second, " in one place and ", d,
                            " in another (input ", t, " ", shape_str(shapes[t]), ")"));
            }
        }
    }
    if (arrow == std::string::npos) {
        for (int64_t i = 0; i < ellipsis_rank; ++i) e.output.push_back(kEllipsisBase + static_cast<int>(i));
        for (auto &[l, n] : counts)
            if (l < kEllipsisBase && n == 1) e.output.push_back(l);
    } else {
        bool has = false;
        int64_t unused = 0;
        std::vector<int> r = parse_term(eq.substr(arrow + 2), -1, unused, has, bad);
        e.output = expand(r, ellipsis_rank);
        std::vector<int> seen;
        for (int l : e.output) {
            if (l < kEllipsisBase && !counts.count(l))
                bad(cat("output label '", label_name(l), "' does not appear in any input"));
            if (std::find(seen.begin(), seen.end(), l) != seen.end())
                bad(cat("output label '", label_name(l), "' appears more than once"));
            seen.push_back(l);
        }
    }
    return e;
}

std::vector<TensorInfo> infer_einsum(const InferContext &ctx) {
    if (ctx.input_count() < 1) ctx.error("expects at least one input");
    std::vector<Shape> shapes;
    for (size_t i = 0; i < ctx.input_count(); ++i) {
        const TensorInfo &in = ctx.input(i);
        if (in.dtype != ctx.input(0).dtype)
            ctx.error("input ", i, " is ", dtype_name(in.dtype), " but input 0 is ",
                      dtype_name(ctx.input(0).dtype));
        shapes.push_back(in.shape);
    }
    ctx.require_dtype(0, {DType::F32, DType::F16, DType::F64, DType::I64, DType::I32});
    if (!ctx.attrs().has("equation")) ctx.error("required attribute 'equation' is missing");
    EinsumEquation e = parse_einsum(ctx.attrs().get_string("equation", ""), shapes,
                                    [&](const std::string &msg) { ctx.error(msg); });
    Shape out;
    for (int l : e.output) out.push_back(e.sizes[l]);
    return {TensorInfo{ctx.input(0).dtype, out, {}}};
}

// An operand during evaluation: data with one (dim, stride) per distinct label. Repeated labels in one
// term (a diagonal) become one axis whose stride is the sum of theirs; broadcast ellipsis dims get
// stride 0 at the full size.
template <typename T> constexpr DType dtype_of() {
    if constexpr (std::is_same_v<T, float>)
        return DType::F32;
    else if constexpr (std::is_same_v<T, double>)
        return DType::F64;
    else if constexpr (std::is_same_v<T, int64_t>)
        return DType::I64;
    else
        return DType::I32;
}

template <typename T> struct EinsumOperand {
    const T *data = nullptr;
    std::vector<int> labels;
    std::vector<int64_t> dims, strides;
    Tensor owner; // keeps intermediate results alive
};

// dst (contiguous) = src gathered in the given (dims, strides) order; parallel over the outer dims.
template <typename T>
void gather(const T *src, std::vector<int64_t> dims, std::vector<int64_t> strides, T *dst,
            pthreadpool_t pool) {
    // Merge dims that are contiguous with each other in the source: fewer, longer inner loops.
    std::vector<int64_t> d, s;
    for (size_t i = 0; i < dims.size(); ++i) {
        if (dims[i] == 1) continue;
        if (!d.empty() && s.back() == strides[i] * dims[i]) {
            d.back() *= dims[i];
            s.back() = strides[i];
        } else {
            d.push_back(dims[i]);
            s.push_back(strides[i]);
        }
    }
    if (d.empty()) {
        d.push_back(1);
        s.push_back(1);
    }
    int64_t inner = d.back(), inner_stride = s.back();
    d.pop_back();
    s.pop_back();
    int64_t outer = shape_numel(d);
    size_t tile = static_cast<size_t>(std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)));
    parallel_for(pool, static_cast<size_t>(outer), tile, [&](size_t begin, size_t end) {
        std::vector<int64_t> idx(d.size(), 0);
        int64_t off = 0, rem = static_cast<int64_t>(begin);
        for (size_t i = d.size(); i-- > 0;) {
            idx[i] = rem % d[i];
            rem /= d[i];
            off += idx[i] * s[i];
        }
        for (size_t o = begin; o < end; ++o) {
            T *out = dst + static_cast<int64_t>(o) * inner;
            const T *in = src + off;
            if (inner_stride == 1)
                std::memcpy(out, in, static_cast<size_t>(inner) * sizeof(T));
            else
                for (int64_t j = 0; j < inner; ++j) out[j] = in[j * inner_stride];
            for (size_t i = d.size(); i-- > 0;) {
                off += s[i];
                if (++idx[i] < d[i]) break;
                off -= s[i] * idx[i];
                idx[i] = 0;
            }
        }
    });
}

// Sum each row of `reduce` contiguous values: dst[o] = sum(src[o * reduce ...]).
template <typename T> void sum_rows(const T *src, int64_t rows, int64_t reduce, T *dst, pthreadpool_t pool) {
    parallel_for(pool, static_cast<size_t>(rows), 64, [&](size_t begin, size_t end) {
        for (size_t o = begin; o < end; ++o) {
            const T *row = src + static_cast<int64_t>(o) * reduce;
            T acc = T(0);
            for (int64_t j = 0; j < reduce; ++j) acc += row[j];
            dst[o] = acc;
        }
    });
}

// True when op holds exactly the labels in `order`, contiguous in that order (no copy needed).
template <typename T> bool is_laid_out(const EinsumOperand<T> &op, const std::vector<int> &order) {
    if (order.size() != op.labels.size()) return false;
    int64_t expect = 1;
    for (size_t i = order.size(); i-- > 0;) {
        size_t ax =
            static_cast<size_t>(std::find(op.labels.begin(), op.labels.end(), order[i]) - op.labels.begin());
        if (ax == op.labels.size()) return false;
        if (op.dims[ax] != 1 && op.strides[ax] != expect) return false;
        expect *= op.dims[ax];
    }
    return true;
}

// Contiguous copy of `op` with its labels in `order` (a subset), summing the labels not in `order`.
// Returns op itself when it already is laid out that way (inputs and scratch are readable past their end,
// so XNNPACK may read it as it is).
template <typename T>
EinsumOperand<T> arrange(const RunContext &ctx, const EinsumOperand<T> &op, const std::vector<int> &order,
                         T *into = nullptr) {
    std::vector<int64_t> dims, strides;
    std::vector<int> labels = order;
    for (int l : order) {
        size_t ax = static_cast<size_t>(std::find(op.labels.begin(), op.labels.end(), l) - op.labels.begin());
        dims.push_back(op.dims[ax]);
        strides.push_back(op.strides[ax]);
    }
    int64_t kept = shape_numel(dims), reduced = 1;
    for (size_t ax = 0; ax < op.labels.size(); ++ax) {
        if (std::find(order.begin(), order.end(), op.labels[ax]) != order.end()) continue;
        dims.push_back(op.dims[ax]);
        strides.push_back(op.strides[ax]);
        reduced *= op.dims[ax];
    }
    EinsumOperand<T> r;
    r.labels = labels;
    r.dims.assign(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(order.size()));
    r.strides.assign(r.dims.size(), 1);
    for (size_t i = r.dims.size(); i-- > 1;) r.strides[i - 1] = r.strides[i] * r.dims[i];

    bool contiguous = dims.size() == order.size();
    int64_t expect = 1;
    for (size_t i = dims.size(); contiguous && i-- > 0;) {
        if (dims[i] != 1 && strides[i] != expect) contiguous = false;
        expect *= dims[i];
    }
    if (contiguous && !into) {
        r.data = op.data;
        r.owner = op.owner;
        return r;
    }
    T *dst = into;
    if (!dst) {
        r.owner = ctx.scratch(dtype_of<T>(), {kept});
        dst = r.owner.template data<T>();
    }
    if (reduced == 1) {
        gather(op.data, dims, strides, dst, ctx.pool());
    } else {
        Tensor full = ctx.scratch(dtype_of<T>(), {kept * reduced});
        gather(op.data, dims, strides, full.template data<T>(), ctx.pool());
        sum_rows(full.template data<const T>(), kept, reduced, dst, ctx.pool());
    }
    r.data = dst;
    return r;
}

template <typename T>
void batched_product(const T *a, const T *b, T *y, int64_t batch, int64_t m, int64_t k, int64_t n, bool b_nk,
                     pthreadpool_t pool) {
    Shape bs{batch};
    if constexpr (std::is_same_v<T, float>)
        matmul_f32(a, bs, b, bs, y, bs, m, k, n, pool, b_nk);
    else
        matmul_int(a, bs, b, bs, y, bs, m, k, n, pool);
}

template <typename T>
void run_einsum_typed(RunContext &ctx, const std::vector<Tensor> &inputs, const EinsumEquation &e, T *out) {
    std::vector<EinsumOperand<T>> ops;
    for (size_t t = 0; t < inputs.size(); ++t) {
        EinsumOperand<T> op;
        op.data = inputs[t].template data<T>();
        op.owner = inputs[t];
        const Shape &shape = inputs[t].shape();
        int64_t stride = 1;
        std::vector<int64_t> axis_stride(shape.size());
        for (size_t ax = shape.size(); ax-- > 0;) {
            axis_stride[ax] = stride;
            stride *= shape[ax];
        }
        for (size_t ax = 0; ax < shape.size(); ++ax) {
            int l = e.inputs[t][ax];
            int64_t full = e.sizes.at(l);
            int64_t s = shape[ax] == 1 && full != 1 ? 0 : axis_stride[ax];
            auto it = std::find(op.labels.begin(), op.labels.end(), l);
            if (it != op.labels.end()) {
                op.strides[static_cast<size_t>(it - op.labels.begin())] += s;
            } else {
                op.labels.push_back(l);
                op.dims.push_back(full);
                op.strides.push_back(s);
            }
        }
        ops.push_back(std::move(op));
    }

    auto has = [](const std::vector<int> &v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); };
    EinsumOperand<T> acc = std::move(ops[0]);
    for (size_t t = 1; t < ops.size(); ++t) {
        const EinsumOperand<T> &rhs = ops[t];
        std::vector<int> needed = e.output;
        for (size_t u = t + 1; u < ops.size(); ++u)
            needed.insert(needed.end(), ops[u].labels.begin(), ops[u].labels.end());
        std::vector<int> batch, ms, ks, ns;
        for (int l : acc.labels) {
            if (has(rhs.labels, l))
                (has(needed, l) ? batch : ks).push_back(l);
            else if (has(needed, l))
                ms.push_back(l);
        }
        for (int l : rhs.labels)
            if (!has(acc.labels, l) && has(needed, l)) ns.push_back(l);
        auto size_of = [&](const std::vector<int> &ls) {
            int64_t n = 1;
            for (int l : ls) n *= e.sizes.at(l);
            return n;
        };
        std::vector<int> a_order = batch, b_order = batch, y_labels = batch;
        a_order.insert(a_order.end(), ms.begin(), ms.end());
        a_order.insert(a_order.end(), ks.begin(), ks.end());
        b_order.insert(b_order.end(), ks.begin(), ks.end());
        b_order.insert(b_order.end(), ns.begin(), ns.end());
        y_labels.insert(y_labels.end(), ms.begin(), ms.end());
        y_labels.insert(y_labels.end(), ns.begin(), ns.end());
        EinsumOperand<T> a = arrange(ctx, acc, a_order);
        // XNNPACK packs a right-hand matrix from (n, k) as readily as from (k, n): when rhs already is
        // (batch, N, K), as K in "bhid,bhjd->bhij", it is used in place instead of transposed.
        std::vector<int> b_nk_order = batch;
        b_nk_order.insert(b_nk_order.end(), ns.begin(), ns.end());
        b_nk_order.insert(b_nk_order.end(), ks.begin(), ks.end());
        bool b_nk = std::is_same_v<T, float> && !is_laid_out(rhs, b_order) && is_laid_out(rhs, b_nk_order);
        EinsumOperand<T> b = arrange(ctx, rhs, b_nk ? b_nk_order : b_order);
        int64_t nb = size_of(batch), nm = size_of(ms), nk = size_of(ks), nn = size_of(ns);

        EinsumOperand<T> y;
        y.owner = ctx.scratch(dtype_of<T>(), {nb * nm * nn});
        y.data = y.owner.template data<T>();
        batched_product(a.data, b.data, y.owner.template data<T>(), nb, nm, nk, nn, b_nk, ctx.pool());
        y.labels = y_labels;
        for (int l : y_labels) y.dims.push_back(e.sizes.at(l));
        y.strides.assign(y.dims.size(), 1);
        for (size_t i = y.dims.size(); i-- > 1;) y.strides[i - 1] = y.strides[i] * y.dims[i];
        acc = std::move(y);
    }
    arrange(ctx, acc, e.output, out);
}

void run_einsum(RunContext &ctx) {
    std::vector<Tensor> inputs;
    std::vector<Shape> shapes;
    bool f16 = ctx.input(0).dtype() == DType::F16;
    for (size_t i = 0; i < ctx.input_count(); ++i) {
        inputs.push_back(f16 ? f32_copy_of_f16(ctx, ctx.input(i)) : ctx.input(i));
        shapes.push_back(ctx.input(i).shape());
    }
    EinsumEquation e =
        parse_einsum(ctx.attrs().get_string("equation", ""), shapes,
                     [&](const std::string &msg) { ctx.error(ONNXSTREAM_ERR_INVALID_MODEL, msg); });
    Tensor &y = ctx.alloc_output(0);
    switch (y.dtype()) {
    case DType::F32: run_einsum_typed<float>(ctx, inputs, e, y.data<float>()); break;
    case DType::F16: {
        Tensor y32 = ctx.scratch(DType::F32, y.shape());
        run_einsum_typed<float>(ctx, inputs, e, y32.data<float>());
        float_to_half_n(y32.data<float>(), y.data<uint16_t>(), static_cast<size_t>(y.numel()));
        break;
    }
    case DType::F64: run_einsum_typed<double>(ctx, inputs, e, y.data<double>()); break;
    case DType::I64: run_einsum_typed<int64_t>(ctx, inputs, e, y.data<int64_t>()); break;
    case DType::I32: run_einsum_typed<int32_t>(ctx, inputs, e, y.data<int32_t>()); break;
    default: ctx.error(ONNXSTREAM_ERR_UNSUPPORTED, "Einsum on ", dtype_name(y.dtype()));
    }
}

} // namespace

void register_einsum_ops(Registry &r) {
    // No input is read exactly: operands may go to XNNPACK as they are, so the executor pads zero-copy weights.
    r.add("Einsum", infer_einsum, run_einsum);
}

} // namespace onnxstream

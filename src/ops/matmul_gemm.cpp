// MatMul (numpy semantics), Gemm and Einsum. Every float product runs through XNNPACK's fully connected
// operator: the right-hand matrix is packed as its weight, so a matrix shared by a whole batch is packed
// once and each distinct one (attention's per-head K^T, V) once per slice.
#include <algorithm>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <type_traits>

#include "ops/layout.h"
#include "ops/quantize.h"
#include "ops/registry.h"
#include "tensor/half.h"
#include "xnnpack/matmul.h"

namespace onnxstream {

namespace {

// ---------------------------------------------------------------------------------------------------------
// Helpers shared by the three ops

bool broadcast_shapes(const Shape &a, const Shape &b, Shape &out) {
    size_t rank = std::max(a.size(), b.size());
    out.assign(rank, 1);
    for (size_t i = 0; i < rank; ++i) {
        int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
        int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
        if (da != db && da != 1 && db != 1) return false;
        out[i] = da == 1 ? db : da;
    }
    return true;
}

// f16 tensors are computed in f32: a padded f32 copy of t.
Tensor to_f32(const RunContext &ctx, const Tensor &t) {
    Tensor f = ctx.scratch(DType::F32, t.shape());
    half_to_float_n(t.data<uint16_t>(), f.data<float>(), static_cast<size_t>(t.numel()));
    return f;
}

// XNNPACK reads its inputs up to 16 bytes past their end; weights served zero-copy (mmap) lack that slack.
const float *readable_f32(const RunContext &ctx, const Tensor &t, Tensor &holder) {
    if (t.storage()->padded()) return t.data<float>();
    holder = ctx.scratch(DType::F32, t.shape());
    std::memcpy(holder.raw(), t.raw(), t.byte_size());
    return holder.data<float>();
}

// ---------------------------------------------------------------------------------------------------------
// Batched matrix product with numpy batch broadcasting: y[b] = a[ia(b)] * b[ib(b)], a slices (m, k),
// b slices (k, n), y slices (m, n).

struct BatchPlan {
    std::vector<int64_t> a_index, b_index; // per output slice
};

BatchPlan plan_batches(const Shape &a_batch, const Shape &b_batch, const Shape &y_batch) {
    size_t rank = y_batch.size();
    std::vector<int64_t> a_stride(rank, 0), b_stride(rank, 0);
    int64_t sa = 1, sb = 1;
    for (size_t i = rank; i-- > 0;) {
        size_t ra = a_batch.size(), rb = b_batch.size();
        int64_t da = i < rank - ra ? 1 : a_batch[i - (rank - ra)];
        int64_t db = i < rank - rb ? 1 : b_batch[i - (rank - rb)];
        a_stride[i] = da == 1 ? 0 : sa;
        b_stride[i] = db == 1 ? 0 : sb;
        sa *= da;
        sb *= db;
    }
    int64_t total = shape_numel(y_batch);
    BatchPlan p;
    p.a_index.resize(static_cast<size_t>(total));
    p.b_index.resize(static_cast<size_t>(total));
    std::vector<int64_t> idx(rank, 0);
    int64_t ia = 0, ib = 0;
    for (int64_t s = 0; s < total; ++s) {
        p.a_index[static_cast<size_t>(s)] = ia;
        p.b_index[static_cast<size_t>(s)] = ib;
        for (size_t d = rank; d-- > 0;) {
            ia += a_stride[d];
            ib += b_stride[d];
            if (++idx[d] < y_batch[d]) break;
            ia -= a_stride[d] * idx[d];
            ib -= b_stride[d] * idx[d];
            idx[d] = 0;
        }
    }
    return p;
}

// a must be readable 16 bytes past its end. b slices are (k, n), or (n, k) when b_nk.
void matmul_f32(const float *a, const Shape &a_batch, const float *b, const Shape &b_batch, float *y,
                const Shape &y_batch, int64_t m, int64_t k, int64_t n, pthreadpool_t pool,
                bool b_nk = false) {
    int64_t slices = shape_numel(y_batch);
    if (slices == 0 || m == 0 || n == 0) return;
    if (k == 0) {
        std::fill(y, y + slices * m * n, 0.0f);
        return;
    }
    BatchPlan p = plan_batches(a_batch, b_batch, y_batch);
    // Output slices grouped by the b slice they use (each group packs b once). Within a group, runs of
    // output slices whose a slices are also consecutive form one taller product.
    std::vector<int64_t> order(static_cast<size_t>(slices));
    for (int64_t s = 0; s < slices; ++s) order[static_cast<size_t>(s)] = s;
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t z) {
        return p.b_index[static_cast<size_t>(x)] < p.b_index[static_cast<size_t>(z)];
    });
    struct Run {
        int64_t first, count;
    };
    struct Group {
        int64_t b;
        std::vector<Run> runs;
    };
    std::vector<Group> groups;
    for (int64_t s : order) {
        int64_t bi = p.b_index[static_cast<size_t>(s)];
        if (groups.empty() || groups.back().b != bi) groups.push_back({bi, {}});
        auto &runs = groups.back().runs;
        if (!runs.empty()) {
            Run &r = runs.back();
            int64_t last = r.first + r.count - 1;
            if (s == last + 1 &&
                p.a_index[static_cast<size_t>(s)] == p.a_index[static_cast<size_t>(last)] + 1) {
                ++r.count;
                continue;
            }
        }
        runs.push_back({s, 1});
    }

    auto do_group = [&](const Group &g, pthreadpool_t inner_pool) {
        xnn::FullyConnectedF32 fc(static_cast<size_t>(k), static_cast<size_t>(n), b + g.b * k * n, !b_nk,
                                  nullptr, static_cast<size_t>(k), static_cast<size_t>(n));
        for (const Run &r : g.runs)
            fc.run(static_cast<size_t>(r.count * m), a + p.a_index[static_cast<size_t>(r.first)] * m * k,
                   y + r.first * m * n, inner_pool);
    };
    // Many small products: one per thread beats splitting each tiny product across the pool.
    int64_t per_group_macs = slices / static_cast<int64_t>(groups.size()) * m * k * n;
    if (groups.size() > 1 && pool && per_group_macs < (int64_t{1} << 17)) {
        // An exception must not escape a pool worker (that would terminate): keep the first, rethrow it.
        std::mutex mutex;
        std::exception_ptr error;
        parallel_for(pool, groups.size(), 1, [&](size_t begin, size_t end) {
            try {
                for (size_t g = begin; g < end; ++g) do_group(groups[g], nullptr);
            } catch (...) {
                std::lock_guard<std::mutex> lock(mutex);
                if (!error) error = std::current_exception();
            }
        });
        if (error) std::rethrow_exception(error);
    } else {
        for (const Group &g : groups) do_group(g, pool);
    }
}

// Exact integer product (wrapping like two's complement hardware); integer MatMul is rare and small.
template <typename T>
void matmul_int(const T *a, const Shape &a_batch, const T *b, const Shape &b_batch, T *y,
                const Shape &y_batch, int64_t m, int64_t k, int64_t n, pthreadpool_t pool) {
    using U = std::make_unsigned_t<T>;
    BatchPlan p = plan_batches(a_batch, b_batch, y_batch);
    int64_t slices = shape_numel(y_batch);
    parallel_for(pool, static_cast<size_t>(slices * m), 16, [&](size_t begin, size_t end) {
        for (size_t r = begin; r < end; ++r) {
            int64_t s = static_cast<int64_t>(r) / m, i = static_cast<int64_t>(r) % m;
            const T *ar = a + p.a_index[static_cast<size_t>(s)] * m * k + i * k;
            const T *bs = b + p.b_index[static_cast<size_t>(s)] * k * n;
            // Accumulate in the unsigned twin of T (same storage; may alias): overflow wraps, no UB.
            U *row = reinterpret_cast<U *>(y + s * m * n + i * n);
            std::fill(row, row + n, U(0));
            for (int64_t kk = 0; kk < k; ++kk) {
                U av = static_cast<U>(ar[kk]);
                const T *br = bs + kk * n;
                for (int64_t j = 0; j < n; ++j) row[j] += av * static_cast<U>(br[j]);
            }
        }
    });
}

// y[m, n] = x[m, k] · W (+ bias) with W the 2-D weight input `wi`: [K, N] when weight_kn, else [N, K]; any
// weight dtype weight_f32 takes. A weight the executor streams is read in row chunks: [K, N] in slices of
// K whose partial products are summed, [N, K] in slices of N that each fill their columns of y. x rows are
// k floats apart and readable 16 bytes past the end.
void fc_weight(const RunContext &ctx, size_t wi, const float *x, size_t m, size_t k, size_t n, bool weight_kn,
               const float *bias, float *y) {
    if (!ctx.is_streamed(wi)) {
        Tensor holder;
        const float *w = weight_f32(ctx, ctx.input(wi), 0, holder);
        xnn::FullyConnectedF32(k, n, w, weight_kn, bias, k, n).run(m, x, y, ctx.pool());
        return;
    }
    const int64_t total = ctx.input(wi).dim(0), step = ctx.weight_chunk_rows(wi);
    Tensor partial;
    for (int64_t r0 = 0; r0 < total; r0 += step) {
        const int64_t r1 = std::min(total, r0 + step);
        const size_t rows = static_cast<size_t>(r1 - r0);
        Tensor chunk = ctx.read_weight_rows(wi, r0, r1), holder;
        const float *w = weight_f32(ctx, chunk, r0, holder);
        if (!weight_kn) {
            xnn::FullyConnectedF32(k, rows, w, false, bias ? bias + r0 : nullptr, k, n).run(m, x, y + r0, ctx.pool());
            continue;
        }
        if (r0 == 0) {
            xnn::FullyConnectedF32(rows, n, w, true, bias, k, n).run(m, x, y, ctx.pool());
            continue;
        }
        if (partial.empty()) partial = ctx.scratch(DType::F32, {static_cast<int64_t>(m), static_cast<int64_t>(n)});
        float *p = partial.data<float>();
        xnn::FullyConnectedF32(rows, n, w, true, nullptr, k, n).run(m, x + r0, p, ctx.pool());
        parallel_for(ctx.pool(), m * n, 1 << 15, [&](size_t b, size_t e) {
            for (size_t i = b; i < e; ++i) y[i] += p[i];
        });
    }
}

// The same product in float16 arithmetic (RunOptions::fp16_arithmetic) on float16 x and y: float16 weights
// as they are, float32 ones (kept float32 by onnxstream-convert, or widened by the persistent cache) through
// XNN_FLAG_FP32_STATIC_WEIGHTS; bias (N float32 values) is converted to the weight's dtype. Returns false
// with nothing written when the product must run in float32: an 8-bit weight; a [K, N] weight streamed
// in chunks (its partial products over K would be summed in float16, losing the precision float32
// accumulation keeps); or no f16 kernels on this CPU (counted as a fallback, logged once by the model).
bool fc_weight_f16(const RunContext &ctx, size_t wi, const uint16_t *x, size_t m, size_t k, size_t n,
                   bool weight_kn, const float *bias, uint16_t *y) {
    const Tensor &w = ctx.input(wi);
    if (w.dtype() != DType::F16 && w.dtype() != DType::F32) return false;
    if (ctx.is_streamed(wi) && weight_kn) return false;
    const bool w32 = w.dtype() == DType::F32;
    std::vector<uint16_t> bias16;
    if (bias && !w32) {
        bias16.resize(n);
        float_to_half_n(bias, bias16.data(), n);
    }
    auto bias_at = [&](size_t first) -> const void * {
        if (!bias) return nullptr;
        return w32 ? static_cast<const void *>(bias + first) : static_cast<const void *>(bias16.data() + first);
    };
    if (!ctx.is_streamed(wi)) {
        auto fc = xnn::FullyConnectedF16::create(k, n, w.raw(), weight_kn, bias_at(0), w32, k, n);
        if (!fc) {
            ctx.count_fp16(false);
            return false;
        }
        fc->run(m, x, y, ctx.pool());
        ctx.count_fp16(true);
        return true;
    }
    // [N, K] in chunks of N: each chunk fills its columns of y.
    const int64_t total = w.dim(0), step = ctx.weight_chunk_rows(wi, w32);
    for (int64_t r0 = 0; r0 < total; r0 += step) {
        const int64_t r1 = std::min(total, r0 + step);
        Tensor chunk = ctx.read_weight_rows(wi, r0, r1);
        auto fc = xnn::FullyConnectedF16::create(k, static_cast<size_t>(r1 - r0), chunk.raw(), false,
                                                 bias_at(static_cast<size_t>(r0)), w32, k, n);
        if (!fc) { // only the first chunk can get here: f16 support does not change mid-run
            ctx.count_fp16(false);
            return false;
        }
        fc->run(m, x, y + r0, ctx.pool());
    }
    ctx.count_fp16(true);
    return true;
}

// float16 data of t readable 16 bytes past its end (XNNPACK's reads): t's own, or a padded copy in holder.
const uint16_t *readable_f16(const RunContext &ctx, const Tensor &t, Tensor &holder) {
    if (t.storage()->padded()) return t.data<uint16_t>();
    holder = ctx.scratch(DType::F16, t.shape());
    std::memcpy(holder.raw(), t.raw(), t.byte_size());
    return holder.data<uint16_t>();
}

// ---------------------------------------------------------------------------------------------------------
// MatMul

// Beyond ONNX: a float16 weight beside float32 activations (OnnxStream's fp16 models without fp16
// arithmetic; onnxstream-convert --fp16) is widened to float32 when the op runs, so the weight streams
// at half size and the result keeps float32 precision.
bool widened_weight(DType activation, DType weight) { return activation == DType::F32 && weight == DType::F16; }
// ... and likewise an 8-bit quantized weight (W8A32), dequantized when the op runs.
bool widened_weight(const TensorInfo &activation, const TensorInfo &weight) {
    return widened_weight(activation.dtype, weight.dtype) ||
           (activation.dtype == DType::F32 && is_float_weight_dtype(weight.dtype, weight.quant.present));
}

struct MatMulShapes {
    Shape a_batch, b_batch, y_batch, y;
    int64_t m = 0, k = 0, n = 0;
};

MatMulShapes matmul_shapes(const InferContext *ictx, const Shape &a, const Shape &b) {
    MatMulShapes s;
    if (ictx && (a.empty() || b.empty()))
        ictx->error("MatMul operands must have rank >= 1, got ", shape_str(a), " and ", shape_str(b));
    bool a_vec = a.size() == 1, b_vec = b.size() == 1;
    s.m = a_vec ? 1 : a[a.size() - 2];
    s.k = a.back();
    int64_t kb = b_vec ? b[0] : b[b.size() - 2];
    s.n = b_vec ? 1 : b.back();
    if (ictx && s.k != kb)
        ictx->error("inner dimensions differ: A ", shape_str(a), " has K = ", s.k, " but B ", shape_str(b),
                    " has K = ", kb);
    s.a_batch.assign(a.begin(), a.end() - (a_vec ? 1 : 2));
    s.b_batch.assign(b.begin(), b.end() - (b_vec ? 1 : 2));
    if (!broadcast_shapes(s.a_batch, s.b_batch, s.y_batch) && ictx)
        ictx->error("batch dimensions of A ", shape_str(a), " and B ", shape_str(b), " do not broadcast");
    s.y = s.y_batch;
    if (!a_vec) s.y.push_back(s.m);
    if (!b_vec) s.y.push_back(s.n);
    return s;
}

std::vector<TensorInfo> infer_matmul(const InferContext &ctx) {
    ctx.require_inputs(2, 2);
    ctx.require_dtype(0, {DType::F32, DType::F16, DType::I64, DType::I32});
    const TensorInfo &a = ctx.input(0), &b = ctx.input(1);
    if (a.dtype != b.dtype && !widened_weight(a, b))
        ctx.error("A is ", dtype_name(a.dtype), " but B is ", dtype_name(b.dtype),
                  "; MatMul needs one dtype (or float32 A with a float16 or quantized 8-bit B)");
    return {TensorInfo{a.dtype, matmul_shapes(&ctx, a.shape, b.shape).y, {}}};
}

void run_matmul(RunContext &ctx) {
    if (run_matmul_w8a8(ctx)) return; // static W8A8 when the node has activation ranges
    const Tensor &a = ctx.input(0);
    const bool fc = ctx.input_is_weight(1) && ctx.input(1).rank() == 2 &&
                    (a.dtype() == DType::F32 || a.dtype() == DType::F16);
    // Only the fully connected path reads a streamed weight in chunks; a batched (3-D and up) weight over
    // the chunk size is read whole here (it has no data of its own).
    Tensor whole;
    if (ctx.is_streamed(1) && !fc) whole = ctx.read_weight_rows(1, 0, ctx.input(1).dim(0));
    const Tensor &b = whole.empty() ? ctx.input(1) : whole;
    MatMulShapes s = matmul_shapes(nullptr, a.shape(), b.shape());
    Tensor &y = ctx.alloc_output(0);
    if (fc && s.b_batch.empty()) {
        // A 2-D weight: one fully connected product over every row of A (streamed in chunks when big).
        const size_t rows = static_cast<size_t>(shape_numel(s.a_batch) * s.m);
        if (ctx.options().fp16_arithmetic && a.dtype() == DType::F16 && y.numel() > 0 && s.k > 0) {
            Tensor a16;
            if (fc_weight_f16(ctx, 1, readable_f16(ctx, a, a16), rows, static_cast<size_t>(s.k),
                              static_cast<size_t>(s.n), true, nullptr, y.data<uint16_t>()))
                return;
        }
        Tensor a_holder, y_holder;
        const float *ap = a.dtype() == DType::F16 ? as_f32(ctx, a, a_holder) : readable_f32(ctx, a, a_holder);
        float *yp = out_f32(ctx, y, y_holder);
        if (y.numel() > 0 && s.k > 0)
            fc_weight(ctx, 1, ap, rows, static_cast<size_t>(s.k), static_cast<size_t>(s.n), true, nullptr, yp);
        else
            std::fill(yp, yp + y.numel(), 0.0f);
        if (!y_holder.empty()) store_f32_output(ctx, y, y_holder);
        return;
    }
    switch (a.dtype()) {
    case DType::F32: {
        Tensor holder;
        const Tensor b32 = b.dtype() == DType::F16 ? to_f32(ctx, b) : b;
        matmul_f32(readable_f32(ctx, a, holder), s.a_batch, b32.data<float>(), s.b_batch, y.data<float>(),
                   s.y_batch, s.m, s.k, s.n, ctx.pool());
        break;
    }
    case DType::F16: {
        Tensor af = to_f32(ctx, a), bf = b.dtype() == DType::F16 ? to_f32(ctx, b) : b, yf = ctx.scratch(DType::F32, y.shape());
        matmul_f32(af.data<float>(), s.a_batch, bf.data<float>(), s.b_batch, yf.data<float>(), s.y_batch, s.m,
                   s.k, s.n, ctx.pool());
        float_to_half_n(yf.data<float>(), y.data<uint16_t>(), static_cast<size_t>(y.numel()));
        break;
    }
    case DType::I64:
        matmul_int(a.data<int64_t>(), s.a_batch, b.data<int64_t>(), s.b_batch, y.data<int64_t>(), s.y_batch,
                   s.m, s.k, s.n, ctx.pool());
        break;
    case DType::I32:
        matmul_int(a.data<int32_t>(), s.a_batch, b.data<int32_t>(), s.b_batch, y.data<int32_t>(), s.y_batch,
                   s.m, s.k, s.n, ctx.pool());
        break;
    default: ctx.error(ONNXSTREAM_ERR_UNSUPPORTED, "MatMul on ", dtype_name(a.dtype()));
    }
}

// ---------------------------------------------------------------------------------------------------------
// Gemm: Y = alpha * A' * B' + beta * C

// C broadcast unidirectionally to (m, n): its row and column strides (0 along broadcast dims).
bool gemm_c_strides(const Shape &c, int64_t m, int64_t n, int64_t &row_stride, int64_t &col_stride) {
    if (c.size() > 2) return false;
    int64_t cm = c.size() == 2 ? c[0] : 1;
    int64_t cn = c.empty() ? 1 : c.back();
    if ((cm != m && cm != 1) || (cn != n && cn != 1)) return false;
    col_stride = cn == 1 ? 0 : 1;
    row_stride = cm == 1 ? 0 : cn;
    return true;
}

std::vector<TensorInfo> infer_gemm(const InferContext &ctx) {
    ctx.require_inputs(2, 3);
    ctx.require_dtype(0, {DType::F32, DType::F16});
    const TensorInfo &a = ctx.input(0), &b = ctx.input(1);
    for (size_t i = 1; i < 3; ++i)
        if (ctx.has_input(i) && ctx.input(i).dtype != a.dtype && !widened_weight(a, ctx.input(i)))
            ctx.error("input ", i, " is ", dtype_name(ctx.input(i).dtype), " but A is ", dtype_name(a.dtype),
                      " (B and C must match A, or be float16 beside a float32 A)");
    if (a.shape.size() != 2 || b.shape.size() != 2)
        ctx.error("A and B must be 2-D, got ", shape_str(a.shape), " and ", shape_str(b.shape));
    bool ta = ctx.attrs().get_int("transA", 0) != 0, tb = ctx.attrs().get_int("transB", 0) != 0;
    int64_t m = ta ? a.shape[1] : a.shape[0], k = ta ? a.shape[0] : a.shape[1];
    int64_t kb = tb ? b.shape[1] : b.shape[0], n = tb ? b.shape[0] : b.shape[1];
    if (k != kb)
        ctx.error("inner dimensions differ: A", ta ? "^T" : "", " has K = ", k, ", B", tb ? "^T" : "",
                  " has K = ", kb);
    int64_t rs = 0, cs = 0;
    if (ctx.has_input(2) && !gemm_c_strides(ctx.input(2).shape, m, n, rs, cs))
        ctx.error("C ", shape_str(ctx.input(2).shape), " does not broadcast to (", m, ",", n, ")");
    return {TensorInfo{a.dtype, {m, n}, {}}};
}

// Gemm in float16 arithmetic: Y = A * B' + beta * C with C absent or one value per column (a bias), the
// common Linear layer. Other forms (transA, alpha, a C with rows) return false and compute in float32.
bool gemm_f16(RunContext &ctx, bool tb, float beta) {
    const Tensor &a = ctx.input(0), &b = ctx.input(1);
    const int64_t m = a.dim(0), k = a.dim(1), n = tb ? b.dim(0) : b.dim(1);
    std::vector<float> bias;
    if (ctx.has_input(2) && beta != 0.0f) {
        const Tensor &c = ctx.input(2);
        int64_t rs = 0, cs = 0;
        gemm_c_strides(c.shape(), m, n, rs, cs);
        if (rs != 0 || cs != 1) return false;
        bias.resize(static_cast<size_t>(n));
        if (c.dtype() == DType::F16) half_to_float_n(c.data<uint16_t>(), bias.data(), bias.size());
        else std::memcpy(bias.data(), c.raw(), bias.size() * sizeof(float));
        for (float &v : bias) v *= beta;
    }
    if (m == 0 || n == 0 || k == 0) return false;
    Tensor &y = ctx.alloc_output(0);
    Tensor a16;
    return fc_weight_f16(ctx, 1, readable_f16(ctx, a, a16), static_cast<size_t>(m), static_cast<size_t>(k),
                         static_cast<size_t>(n), !tb, bias.empty() ? nullptr : bias.data(), y.data<uint16_t>());
}

void run_gemm(RunContext &ctx) {
    if (run_gemm_w8a8(ctx)) return; // static W8A8 when the node has activation ranges
    const Tensor &a_in = ctx.input(0), &b_in = ctx.input(1);
    bool f16 = a_in.dtype() == DType::F16;
    bool ta = ctx.attrs().get_int("transA", 0) != 0, tb = ctx.attrs().get_int("transB", 0) != 0;
    float alpha = ctx.attrs().get_float("alpha", 1.0f), beta = ctx.attrs().get_float("beta", 1.0f);
    if (f16 && ctx.options().fp16_arithmetic && !ta && alpha == 1.0f && ctx.input_is_weight(1) && gemm_f16(ctx, tb, beta))
        return;
    Tensor a = f16 ? to_f32(ctx, a_in) : a_in;
    int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1), n = tb ? b_in.dim(0) : b_in.dim(1);

    Tensor c;
    int64_t c_rs = 0, c_cs = 0;
    if (ctx.has_input(2) && beta != 0.0f) {
        c = ctx.input(2).dtype() == DType::F16 ? to_f32(ctx, ctx.input(2)) : ctx.input(2);
        gemm_c_strides(c.shape(), m, n, c_rs, c_cs);
    }
    Tensor &y_out = ctx.alloc_output(0);
    Tensor y32 = f16 ? ctx.scratch(DType::F32, y_out.shape()) : y_out;
    float *y = y32.data<float>();

    if (m > 0 && n > 0) {
        if (k == 0) {
            std::fill(y, y + m * n, 0.0f);
        } else {
            Tensor a_holder;
            const float *ap;
            if (ta) {
                a_holder = ctx.scratch(DType::F32, {m, k});
                const float *src = a.data<float>();
                float *dst = a_holder.data<float>();
                parallel_for(ctx.pool(), static_cast<size_t>(m), 64, [&](size_t begin, size_t end) {
                    for (size_t i = begin; i < end; ++i)
                        for (int64_t kk = 0; kk < k; ++kk)
                            dst[static_cast<int64_t>(i) * k + kk] = src[kk * m + static_cast<int64_t>(i)];
                });
                ap = a_holder.data<float>();
            } else {
                ap = readable_f32(ctx, a, a_holder);
            }
            // A bias that is one value per column folds into the product when nothing scales it afterwards.
            std::vector<float> bias;
            if (!c.empty() && c_rs == 0 && c_cs == 1 && alpha == 1.0f) {
                bias.assign(c.data<float>(), c.data<float>() + n);
                for (float &v : bias) v *= beta;
                c = Tensor();
            }
            fc_weight(ctx, 1, ap, static_cast<size_t>(m), static_cast<size_t>(k), static_cast<size_t>(n), !tb,
                          bias.empty() ? nullptr : bias.data(), y);
        }
        if (alpha != 1.0f || !c.empty()) {
            const float *cp = c.empty() ? nullptr : c.data<float>();
            parallel_for(ctx.pool(), static_cast<size_t>(m), 16, [&](size_t begin, size_t end) {
                for (size_t i = begin; i < end; ++i) {
                    float *row = y + static_cast<int64_t>(i) * n;
                    if (alpha != 1.0f)
                        for (int64_t j = 0; j < n; ++j) row[j] *= alpha;
                    if (!cp) continue;
                    const float *crow = cp + static_cast<int64_t>(i) * c_rs;
                    if (c_cs == 1) {
                        for (int64_t j = 0; j < n; ++j) row[j] += beta * crow[j];
                    } else {
                        float cv = beta * crow[0];
                        for (int64_t j = 0; j < n; ++j) row[j] += cv;
                    }
                }
            });
        }
    }
    if (f16) float_to_half_n(y, y_out.data<uint16_t>(), static_cast<size_t>(y_out.numel()));
}

// ---------------------------------------------------------------------------------------------------------
// Einsum: operands are contracted pairwise, left to right. Each contraction gathers both operands into
// (batch, M, K) x (batch, K, N) order (summing labels only one side uses), multiplies, and the last
// operand is gathered into the output's label order.

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
    ctx.require_dtype(0, {DType::F32, DType::F16, DType::I64, DType::I32});
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
    else if constexpr (std::is_same_v<T, int64_t>)
        return DType::I64;
    else
        return DType::I32;
}

template <typename T> struct EinsumOperand {
    const T *data = nullptr;
    bool padded = true;
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
// Returns op itself when it already is laid out that way and `need_padded` is satisfied.
template <typename T>
EinsumOperand<T> arrange(const RunContext &ctx, const EinsumOperand<T> &op, const std::vector<int> &order,
                         bool need_padded, T *into = nullptr) {
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
    if (contiguous && !into && (op.padded || !need_padded)) {
        r.data = op.data;
        r.padded = op.padded;
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
    r.padded = true;
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
        op.padded = inputs[t].storage()->padded();
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
        EinsumOperand<T> a = arrange(ctx, acc, a_order, true);
        // XNNPACK packs a right-hand matrix from (n, k) as readily as from (k, n): when rhs already is
        // (batch, N, K), as K in "bhid,bhjd->bhij", it is used in place instead of transposed.
        std::vector<int> b_nk_order = batch;
        b_nk_order.insert(b_nk_order.end(), ns.begin(), ns.end());
        b_nk_order.insert(b_nk_order.end(), ks.begin(), ks.end());
        bool b_nk = std::is_same_v<T, float> && !is_laid_out(rhs, b_order) && is_laid_out(rhs, b_nk_order);
        EinsumOperand<T> b = arrange(ctx, rhs, b_nk ? b_nk_order : b_order, false);
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
    arrange(ctx, acc, e.output, false, out);
}

void run_einsum(RunContext &ctx) {
    std::vector<Tensor> inputs;
    std::vector<Shape> shapes;
    bool f16 = ctx.input(0).dtype() == DType::F16;
    for (size_t i = 0; i < ctx.input_count(); ++i) {
        inputs.push_back(f16 ? to_f32(ctx, ctx.input(i)) : ctx.input(i));
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
    case DType::I64: run_einsum_typed<int64_t>(ctx, inputs, e, y.data<int64_t>()); break;
    case DType::I32: run_einsum_typed<int32_t>(ctx, inputs, e, y.data<int32_t>()); break;
    default: ctx.error(ONNXSTREAM_ERR_UNSUPPORTED, "Einsum on ", dtype_name(y.dtype()));
    }
}

} // namespace

void register_matmul_gemm_ops(Registry &r) {
    // Weights reach XNNPACK only as packed FC weights or through readable_f32/arrange copies, which give
    // them the read-past-the-end slack XNNPACK inputs need.
    r.add("MatMul", infer_matmul, run_matmul).with_reads_weights_exactly().with_streamable_weight_input(1);
    r.add("Gemm", infer_gemm, run_gemm).with_reads_weights_exactly().with_streamable_weight_input(1);
    r.add("Einsum", infer_einsum, run_einsum).with_reads_weights_exactly();
}

} // namespace onnxstream

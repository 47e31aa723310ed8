// ScaledDotProductAttention: Y = softmax(Q Kᵀ·scale + mask) V as one op, so that the S x T score matrix
// never has to exist whole (the SD 1.5 UNet's biggest one is 8 x 4096 x 4096 floats = 512 MB).
//
// Three algorithms (RunOptions::attention), all built on XNNPACK f32 GEMMs (fully connected operators
// whose packed weight is K or V of one batch-head, or of one key block of it). XNNPACK operators cannot
// run on two threads at once, so each thread of the pool gets its own operators and a share of the rows,
// and an op synchronises once per slice (Full, Sliced) or once in all (Flash):
//   Full   - per batch-head the whole S x T score matrix.
//   Sliced - OnnxStream's attention slicing: Q rows in `parts` slices, one slice x T block at a time.
//   Flash  - online softmax over key blocks (running max and sum, FlashAttention-style) for tiles of Q
//            rows; never more than a tile x key block of scores per thread. The fastest on every SD 1.5
//            shape measured, so Auto's choice.
// float16 tensors are converted per batch-head to f32, computed in f32 and stored back as f16.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "ops/registry.h"
#include "ops/vector_math.h"
#include "tensor/half.h"
#include "xnnpack/init.h"
#include "xnnpack/matmul.h"

namespace onnxstream {

namespace {

using namespace vmath;

// The row kernels (mask_max, exp_sub_sum) are in vector_math.h: the softmax part costs about as much as the
// GEMMs.

inline void scale_row(float *y, size_t n, float a) {
    for (size_t i = 0; i < n; ++i) y[i] *= a;
}

// ---------------------------------------------------------------------------------------------------------
// Shapes.

// Broadcast b into a (numpy rules, right-aligned); false when they do not broadcast.
bool broadcast_into(Shape &a, const Shape &b) {
    if (b.size() > a.size()) a.insert(a.begin(), b.size() - a.size(), 1);
    size_t off = a.size() - b.size();
    for (size_t i = 0; i < b.size(); ++i) {
        int64_t &x = a[off + i];
        if (x == b[i] || b[i] == 1) continue;
        if (x != 1) return false;
        x = b[i];
    }
    return true;
}

Shape batch_dims(const Shape &s) { return Shape(s.begin(), s.end() - 2); }

struct Dims {
    Shape batch; // broadcast batch dims of Q, K, V
    int64_t s = 0, t = 0, d = 0, dv = 0;
};

Dims attention_dims(const InferContext *ictx, const Shape &q, const Shape &k, const Shape &v,
                    const Shape *mask, bool transpose_k) {
    auto error = [&](auto &&...args) {
        if (ictx) ictx->error(args...);
        fail(ONNXSTREAM_ERR_INVALID_MODEL, cat(args...));
    };
    const char *names[] = {"Q", "K", "V"};
    const Shape *shapes[] = {&q, &k, &v};
    for (int i = 0; i < 3; ++i)
        if (shapes[i]->size() < 2)
            error(names[i], " must have rank >= 2 ([..., rows, features]), got ", shape_str(*shapes[i]));
    Dims d;
    d.s = q[q.size() - 2];
    d.d = q.back();
    int64_t kd = transpose_k ? k[k.size() - 2] : k.back();
    d.t = transpose_k ? k.back() : k[k.size() - 2];
    if (kd != d.d)
        error("K ", shape_str(k), " has ", kd, " features but Q ", shape_str(q), " has ", d.d,
              transpose_k ? " (transpose_k=1: K is [..., D, T])" : " (K is [..., T, D])");
    if (v[v.size() - 2] != d.t)
        error("V ", shape_str(v), " has ", v[v.size() - 2], " rows but K ", shape_str(k), " has ", d.t,
              " keys");
    if (d.t < 1) error("K has no keys (T = 0): softmax over an empty row is undefined");
    d.dv = v.back();
    d.batch = batch_dims(q);
    if (!broadcast_into(d.batch, batch_dims(k)) || !broadcast_into(d.batch, batch_dims(v)))
        error("the batch dims of Q ", shape_str(q), ", K ", shape_str(k), " and V ", shape_str(v),
              " do not broadcast together");
    if (mask) {
        Shape full = d.batch;
        full.push_back(d.s);
        full.push_back(d.t);
        Shape b = full;
        if (mask->size() > full.size() || !broadcast_into(b, *mask) || b != full)
            error("mask ", shape_str(*mask), " does not broadcast to the score shape ", shape_str(full));
    }
    return d;
}

std::vector<TensorInfo> infer_attention(const InferContext &ctx) {
    ctx.require_inputs(3, 4);
    DType dt = ctx.input(0).dtype;
    for (size_t i = 0; i < 4; ++i) {
        if (!ctx.has_input(i)) continue;
        ctx.require_dtype(i, {DType::F32, DType::F16});
        if (ctx.input(i).dtype != dt)
            ctx.error("input ", i, " has dtype ", dtype_name(ctx.input(i).dtype), " but Q has ",
                      dtype_name(dt),
                      ": all inputs must have the same float dtype");
    }
    int64_t tk = ctx.attrs().get_int("transpose_k", 0);
    if (tk != 0 && tk != 1) ctx.error("attribute transpose_k must be 0 or 1, got ", tk);
    if (ctx.attrs().has("scale") && !std::isfinite(ctx.attrs().get_float("scale", 1.0f)))
        ctx.error("attribute scale must be a finite number");
    if (ctx.output_count() != 1) ctx.error("has 1 output, got ", ctx.output_count());
    Shape mask = ctx.has_input(3) ? ctx.input(3).shape : Shape{};
    Dims d = attention_dims(&ctx, ctx.input(0).shape, ctx.input(1).shape, ctx.input(2).shape,
                            ctx.has_input(3) ? &mask : nullptr, tk == 1);
    if (d.d == 0)
        fail(ONNXSTREAM_ERR_UNSUPPORTED, ctx.node.where,
             ": Q and K have no features (D = 0), expected D >= 1");
    Shape out = d.batch;
    out.push_back(d.s);
    out.push_back(d.dv);
    return {TensorInfo{dt, out, {}}};
}

// ---------------------------------------------------------------------------------------------------------
// Run.

// Element offset of batch index b (flat over `batch`) in a tensor whose leading dims are `own`
// (right-aligned against batch, size-1 dims broadcast), with `inner` elements per batch entry.
std::vector<int64_t> batch_offsets(const Shape &batch, const Shape &own, int64_t inner) {
    size_t r = batch.size();
    Shape padded(r, 1);
    std::copy(own.begin(), own.end(), padded.begin() + static_cast<std::ptrdiff_t>(r - own.size()));
    std::vector<int64_t> stride(r, 0);
    int64_t st = inner;
    for (size_t i = r; i-- > 0;) {
        stride[i] = padded[i] == 1 ? 0 : st;
        st *= padded[i];
    }
    std::vector<int64_t> out(static_cast<size_t>(shape_numel(batch)));
    std::vector<int64_t> idx(r, 0);
    for (size_t b = 0; b < out.size(); ++b) {
        int64_t off = 0;
        for (size_t i = 0; i < r; ++i) off += idx[i] * stride[i];
        out[b] = off;
        for (size_t i = r; i-- > 0;) {
            if (++idx[i] < batch[i]) break;
            idx[i] = 0;
        }
    }
    return out;
}

// Everything about one op invocation that the algorithms share.
struct Problem {
    size_t nb = 0, s = 0, t = 0, d = 0, dv = 0;
    float scale = 1.0f;
    bool transpose_k = false;
    bool f16 = false;
    const Tensor *q = nullptr, *k = nullptr, *v = nullptr;
    Tensor *y = nullptr;
    std::vector<int64_t> q_off, k_off, v_off, m_off;
    const float *mask = nullptr; // f32 (converted when the op is f16), or null
    size_t mask_row = 0, mask_col = 0; // element steps per score row / column (0: broadcast)

    const float *mask_for(size_t b, size_t row, size_t col) const {
        return mask ? mask + m_off[b] + row * mask_row + col * mask_col : nullptr;
    }
};

// f32 views of one batch-head's K ([T, D] whatever transpose_k says) and V, and of Q rows and output rows
// in slices of at most `rows` rows: converted or transposed into scratch when the op is f16 or K is
// [D, T], the tensors themselves otherwise.
class HeadBuffers {
public:
    HeadBuffers(const RunContext &ctx, const Problem &p, size_t rows) : p_(p) {
        auto f32 = [&](size_t n) { return ctx.scratch(DType::F32, {static_cast<int64_t>(n)}); };
        qbuf_ = f32(rows * p.d);
        if (p.f16) {
            ybuf_ = f32(rows * p.dv);
            vbuf_ = f32(p.t * p.dv);
        }
        if (p.f16 || p.transpose_k) kbuf_ = f32(p.t * p.d);
    }

    void load_kv(size_t b) {
        if (p_.f16) {
            half_to_float_n(p_.v->data<uint16_t>() + p_.v_off[b], vbuf_.data<float>(), p_.t * p_.dv);
            v_ = vbuf_.data<float>();
        } else {
            v_ = p_.v->data<float>() + p_.v_off[b];
        }
        if (!p_.transpose_k) {
            if (p_.f16) {
                half_to_float_n(p_.k->data<uint16_t>() + p_.k_off[b], kbuf_.data<float>(), p_.t * p_.d);
                k_ = kbuf_.data<float>();
            } else {
                k_ = p_.k->data<float>() + p_.k_off[b];
            }
            return;
        }
        // [D, T] -> [T, D]: the GEMMs pack K (blocks) from contiguous [keys, D] rows.
        float *kt = kbuf_.data<float>();
        for (size_t dd = 0; dd < p_.d; ++dd) {
            if (p_.f16) {
                const uint16_t *src = p_.k->data<uint16_t>() + p_.k_off[b] + dd * p_.t;
                for (size_t j = 0; j < p_.t; ++j) kt[j * p_.d + dd] = half_to_float(src[j]);
            } else {
                const float *src = p_.k->data<float>() + p_.k_off[b] + dd * p_.t;
                for (size_t j = 0; j < p_.t; ++j) kt[j * p_.d + dd] = src[j];
            }
        }
        k_ = kt;
    }
    const float *k() const { return k_; }
    const float *v() const { return v_; }

    // Q rows [r0, r1) of batch-head b (at most `rows` of them), times the scale: scaling the rows x D queries
    // instead of the rows x T scores.
    const float *q(size_t b, size_t r0, size_t r1) {
        size_t n = (r1 - r0) * p_.d;
        float *out = qbuf_.data<float>();
        if (p_.f16) {
            half_to_float_n(p_.q->data<uint16_t>() + p_.q_off[b] + r0 * p_.d, out, n);
            for (size_t i = 0; i < n; ++i) out[i] *= p_.scale;
        } else {
            const float *in = p_.q->data<float>() + p_.q_off[b] + r0 * p_.d;
            for (size_t i = 0; i < n; ++i) out[i] = in[i] * p_.scale;
        }
        return out;
    }
    // Where output rows from r0 on of batch-head b are written in f32; store() then moves them to Y.
    float *y(size_t b, size_t r0) const {
        return p_.f16 ? ybuf_.data<float>() : p_.y->data<float>() + (b * p_.s + r0) * p_.dv;
    }
    void store(size_t b, size_t r0, size_t r1) const {
        if (!p_.f16) return;
        float_to_half_n(ybuf_.data<float>(), p_.y->data<uint16_t>() + (b * p_.s + r0) * p_.dv,
                        (r1 - r0) * p_.dv);
    }

private:
    const Problem &p_;
    Tensor qbuf_, kbuf_, vbuf_, ybuf_;
    const float *k_ = nullptr, *v_ = nullptr;
};

size_t pool_threads(const RunContext &ctx) {
    return ctx.pool() ? std::max<size_t>(1, pthreadpool_get_threads_count(ctx.pool())) : 1;
}

// How many threads share the work: one trip through the pool per slice (or per op for flash) is all
// either algorithm synchronises, and below a few million multiply-adds even that costs more than it saves
// (much more when other processes keep the cores busy).
size_t worker_count(const RunContext &ctx, size_t macs, size_t items) {
    return macs < (size_t(4) << 20) ? 1 : std::max<size_t>(1, std::min(pool_threads(ctx), items));
}

// One thread's share of Full/Sliced: its own operators over the current batch-head's K and V (XNNPACK
// operators cannot run from two threads at once), applied to a band of rows of the shared slice.
class SlicedWorker {
public:
    SlicedWorker(const RunContext &ctx, const Problem &p, size_t rows) : p_(p), head_(ctx, p, rows) {}

    // Rows [r0, r1) of batch-head b; `scores` holds their (r1 - r0) x T scores.
    void run(size_t b, size_t r0, size_t r1, float *scores) {
        if (r0 == r1) return;
        if (b != b_) {
            head_.load_kv(b);
            using Fc = xnn::FullyConnectedF32;
            qk_ = std::make_unique<Fc>(p_.d, p_.t, head_.k(), false, nullptr, p_.d, p_.t);
            pv_ = std::make_unique<Fc>(p_.t, p_.dv, head_.v(), true, nullptr, p_.t, p_.dv);
            b_ = b;
        }
        size_t n = r1 - r0;
        qk_->run(n, head_.q(b, r0, r1), scores, nullptr);
        inv_.resize(n);
        for (size_t i = 0; i < n; ++i) {
            float *s = scores + i * p_.t;
            float m = mask_max(s, p_.t, p_.mask_for(b, r0 + i, 0), p_.mask_col);
            if (m == kNegInf) { // every score is -inf: the output row is 0 rather than 0/0
                std::fill(s, s + p_.t, 0.0f);
                inv_[i] = 0.0f;
                continue;
            }
            inv_[i] = 1.0f / exp_sub_sum(s, p_.t, m);
        }
        // Normalising the Dv outputs is cheaper than normalising the T probabilities.
        float *y = head_.y(b, r0);
        pv_->run(n, scores, y, nullptr);
        for (size_t i = 0; i < n; ++i) scale_row(y + i * p_.dv, p_.dv, inv_[i]);
        head_.store(b, r0, r1);
    }

private:
    const Problem &p_;
    HeadBuffers head_;
    size_t b_ = SIZE_MAX;
    std::unique_ptr<xnn::FullyConnectedF32> qk_, pv_;
    std::vector<float> inv_;
};

// Full (parts == 1) and Sliced: per batch-head, Q row slices of ceil(S / parts) rows against all keys, each
// slice's rows split between the threads.
void run_sliced(RunContext &ctx, const Problem &p, size_t parts) {
    size_t rows = (p.s + parts - 1) / parts;
    Tensor scores = ctx.scratch(DType::F32, {static_cast<int64_t>(rows * p.t)});
    size_t workers = worker_count(ctx, rows * p.t * (p.d + p.dv), rows);
    std::vector<std::unique_ptr<SlicedWorker>> w;
    for (size_t i = 0; i < workers; ++i)
        w.push_back(std::make_unique<SlicedWorker>(ctx, p, rows / workers + 1));
    for (size_t b = 0; b < p.nb; ++b) {
        for (size_t r0 = 0; r0 < p.s; r0 += rows) {
            size_t n = std::min(p.s, r0 + rows) - r0;
            parallel_for(ctx.pool(), workers, 1, [&](size_t begin, size_t end) {
                for (size_t k = begin; k < end; ++k) {
                    size_t a = n * k / workers, c = n * (k + 1) / workers;
                    w[k]->run(b, r0 + a, r0 + c, scores.data<float>() + a * p.t);
                }
            });
        }
    }
}

// Tile sizes of the flash algorithm.
struct FlashTiles {
    size_t rows = 0, keys = 0;
};

// One flash worker: its own operators (over the key blocks of the batch-head it is on) and scratch.
class FlashWorker {
public:
    FlashWorker(const RunContext &ctx, const Problem &p, FlashTiles tiles)
        : p_(p), tiles_(tiles), head_(ctx, p, tiles.rows) {
        auto f32 = [&](size_t n) { return ctx.scratch(DType::F32, {static_cast<int64_t>(n)}); };
        scores_ = f32(tiles.rows * tiles.keys);
        tmp_ = f32(tiles.rows * p.dv);
        acc_ = f32(tiles.rows * p.dv);
        stats_ = f32(tiles.rows * 3);
    }

    // Rows [r0, r1) of batch-head b.
    void run(size_t b, size_t r0, size_t r1) {
        if (b != b_) {
            head_.load_kv(b);
            b_ = b;
            qk_.clear();
            pv_.clear();
            for (size_t c0 = 0; c0 < p_.t; c0 += tiles_.keys) {
                size_t bk = std::min(tiles_.keys, p_.t - c0);
                qk_.emplace_back(p_.d, bk, head_.k() + c0 * p_.d, false, nullptr, p_.d, tiles_.keys);
                pv_.emplace_back(bk, p_.dv, head_.v() + c0 * p_.dv, true, nullptr, tiles_.keys, p_.dv);
            }
        }
        size_t n = r1 - r0;
        float *s = scores_.data<float>(), *acc = acc_.data<float>(), *tmp = tmp_.data<float>();
        float *m = stats_.data<float>(), *l = m + tiles_.rows, *alpha = l + tiles_.rows;
        const float *q = head_.q(b, r0, r1);
        for (size_t blk = 0, c0 = 0; c0 < p_.t; ++blk, c0 += tiles_.keys) {
            size_t bk = std::min(tiles_.keys, p_.t - c0);
            bool first = blk == 0;
            qk_[blk].run(n, q, s, nullptr);
            for (size_t i = 0; i < n; ++i) {
                float *row = s + i * tiles_.keys;
                float bm = mask_max(row, bk, p_.mask_for(b, r0 + i, c0), p_.mask_col);
                float mo = first ? kNegInf : m[i];
                float mn = std::max(mo, bm);
                if (mn == kNegInf) { // every score so far is -inf: nothing to accumulate yet
                    std::fill(row, row + bk, 0.0f);
                    m[i] = mn;
                    alpha[i] = 1.0f;
                    if (first) l[i] = 0.0f;
                    continue;
                }
                float sum = exp_sub_sum(row, bk, mn);
                alpha[i] = mo == kNegInf ? 0.0f : exp_clamped(mo - mn);
                l[i] = first ? sum : l[i] * alpha[i] + sum;
                m[i] = mn;
            }
            if (first) {
                pv_[blk].run(n, s, acc, nullptr);
                continue;
            }
            pv_[blk].run(n, s, tmp, nullptr);
            for (size_t i = 0; i < n; ++i) {
                float a = alpha[i];
                float *o = acc + i * p_.dv;
                const float *t = tmp + i * p_.dv;
                for (size_t j = 0; j < p_.dv; ++j) o[j] = o[j] * a + t[j];
            }
        }
        float *y = head_.y(b, r0);
        for (size_t i = 0; i < n; ++i) {
            float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
            const float *o = acc + i * p_.dv;
            float *out = y + i * p_.dv;
            for (size_t j = 0; j < p_.dv; ++j) out[j] = o[j] * inv;
        }
        head_.store(b, r0, r1);
    }

private:
    const Problem &p_;
    FlashTiles tiles_;
    HeadBuffers head_;
    Tensor scores_, tmp_, acc_, stats_;
    size_t b_ = SIZE_MAX;
    std::vector<xnn::FullyConnectedF32> qk_, pv_;
};

void run_flash(RunContext &ctx, const Problem &p, FlashTiles tiles) {
    size_t tiles_per_head = (p.s + tiles.rows - 1) / tiles.rows;
    size_t items = p.nb * tiles_per_head;
    size_t workers = worker_count(ctx, p.nb * p.s * p.t * (p.d + p.dv), items);
    std::vector<std::unique_ptr<FlashWorker>> w;
    for (size_t i = 0; i < workers; ++i) w.push_back(std::make_unique<FlashWorker>(ctx, p, tiles));
    // Contiguous item ranges: a worker repacks K and V only when its range crosses into the next head.
    parallel_for(ctx.pool(), workers, 1, [&](size_t begin, size_t end) {
        for (size_t k = begin; k < end; ++k) {
            for (size_t it = items * k / workers; it < items * (k + 1) / workers; ++it) {
                size_t b = it / tiles_per_head, r0 = it % tiles_per_head * tiles.rows;
                w[k]->run(b, r0, std::min(p.s, r0 + tiles.rows));
            }
        }
    });
}

FlashTiles flash_tiles(const Problem &p, size_t threads, size_t budget, size_t tiles_rows, size_t tiles_keys) {
    // 64 query rows x 512 keys (a 128 KB score tile), or 128 x 1024 (512 KB) where half of a thread's L2
    // holds it: fewer, bigger GEMM calls, and less CPU time on SD 1.5's largest self-attention with a 1 MB
    // L2 (docs/benchmarks.md#attention).
    static const bool big = cpu_l2_bytes_per_thread() >= (size_t(1) << 20);
    FlashTiles t;
    t.rows = std::min<size_t>(p.s, tiles_rows ? tiles_rows : big ? 128 : 64);
    t.keys = std::min<size_t>(p.t, tiles_keys ? tiles_keys : big ? 1024 : 512);
    if (budget == 0) return t;
    // Shrink keys, then rows, until every worker's score tile fits its share of the budget.
    size_t share = std::max<size_t>(budget / threads, 4);
    while (t.rows * t.keys * 4 > share && t.keys > 16) t.keys = (t.keys + 1) / 2;
    while (t.rows * t.keys * 4 > share && t.rows > 1) t.rows = (t.rows + 1) / 2;
    return t;
}

void run_attention(RunContext &ctx) {
    Problem p;
    p.transpose_k = ctx.attrs().get_int("transpose_k", 0) == 1;
    const Tensor &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
    bool has_mask = ctx.has_input(3);
    Shape mask_shape = has_mask ? ctx.input(3).shape() : Shape{};
    Dims d = attention_dims(nullptr, q.shape(), k.shape(), v.shape(), has_mask ? &mask_shape : nullptr,
                            p.transpose_k);
    p.nb = static_cast<size_t>(shape_numel(d.batch));
    p.s = static_cast<size_t>(d.s);
    p.t = static_cast<size_t>(d.t);
    p.d = static_cast<size_t>(d.d);
    p.dv = static_cast<size_t>(d.dv);
    p.scale = ctx.attrs().get_float("scale", d.d > 0 ? 1.0f / std::sqrt(static_cast<float>(d.d)) : 1.0f);
    p.f16 = q.dtype() == DType::F16;
    p.q = &q;
    p.k = &k;
    p.v = &v;
    p.y = &ctx.alloc_output(0);
    if (p.nb == 0 || p.s == 0 || p.dv == 0) return;
    p.q_off = batch_offsets(d.batch, batch_dims(q.shape()), d.s * d.d);
    p.k_off = batch_offsets(d.batch, batch_dims(k.shape()), d.t * d.d);
    p.v_off = batch_offsets(d.batch, batch_dims(v.shape()), d.t * d.dv);
    Tensor mask_f32;
    if (has_mask) {
        const Tensor &m = ctx.input(3);
        Shape ms(d.batch.size() + 2 - std::min(m.rank(), d.batch.size() + 2), 1);
        ms.insert(ms.end(), m.shape().begin(), m.shape().end());
        p.m_off = batch_offsets(d.batch, batch_dims(ms), ms[ms.size() - 2] * ms.back());
        p.mask_col = ms.back() == 1 ? 0 : 1;
        p.mask_row = ms[ms.size() - 2] == 1 ? 0 : static_cast<size_t>(ms.back());
        if (m.dtype() == DType::F16) {
            mask_f32 = ctx.scratch(DType::F32, m.shape());
            half_to_float_n(m.data<uint16_t>(), mask_f32.data<float>(), static_cast<size_t>(m.numel()));
            p.mask = mask_f32.data<float>();
        } else {
            p.mask = m.data<float>();
        }
    }

    const RunOptions &opt = ctx.options();
    size_t threads = pool_threads(ctx);
    size_t budget = opt.attention_block_bytes;
    size_t parts = opt.attention_slices > 0 ? static_cast<size_t>(opt.attention_slices)
                   : budget > 0 ? (p.s * p.t * 4 + budget - 1) / budget
                                : 2;
    parts = std::clamp<size_t>(parts, 1, p.s);
    switch (opt.attention) {
    case AttentionAlgo::Full: run_sliced(ctx, p, 1); return;
    case AttentionAlgo::Sliced: run_sliced(ctx, p, parts); return;
    case AttentionAlgo::Flash: run_flash(ctx, p, flash_tiles(p, threads, budget, opt.flash_tile_rows, opt.flash_tile_keys)); return;
    case AttentionAlgo::Auto: break;
    }
    // Auto: on the SD 1.5 shapes (tests/attention/attention_bench.cpp: S = T = 4096 ... 64, cross-attention
    // T = 77; 1 and 2 threads) flash is as fast as or faster than the whole score matrix or slices, and
    // needs the least memory, so it is the choice whatever the budget (its tiles shrink to fit).
    run_flash(ctx, p, flash_tiles(p, threads, budget, opt.flash_tile_rows, opt.flash_tile_keys));
}

} // namespace

void register_attention_ops(Registry &r) {
    r.add("ScaledDotProductAttention", infer_attention, run_attention);
}

} // namespace onnxstream

#include "ops/matmul_kernels.h"

#include <exception>
#include <mutex>

#include "tensor/half.h"
#include "xnnpack/matmul.h"
#include "xnnpack/weights_cache.h"

namespace onnxstream {

Tensor f32_copy_of_f16(const RunContext &ctx, const Tensor &t) {
    Tensor f = ctx.scratch(DType::F32, t.shape());
    half_to_float_n(t.data<uint16_t>(), f.data<float>(), static_cast<size_t>(t.numel()));
    return f;
}

int4::RowLayout int4_layout(const RunContext &ctx, size_t wi) {
    const QuantParams &q = ctx.input(wi).quant();
    int4::RowLayout l;
    const std::string why = int4::layout_of(q.logical_shape, q.axis, q.block, l);
    if (!why.empty()) ctx.error(ONNXSTREAM_ERR_INVALID_MODEL, why);
    return l;
}

std::shared_ptr<xnn::FullyConnectedQd8> int4_fully_connected(const RunContext &ctx, size_t wi, int64_t key_row,
                                                             const uint8_t *stored, int64_t first_row, int64_t rows,
                                                             const int4::RowLayout &l, int64_t k0, int64_t k1,
                                                             const float *bias, size_t y_stride) {
    Tensor codes = ctx.scratch(DType::U8, {rows * (k1 - k0) / 2});
    Tensor scales = ctx.scratch(DType::U16, {rows * (k1 - k0) / l.block});
    int4::split_rows(stored, first_row, rows, l, k0, k1, codes.data<uint8_t>(), scales.data<uint16_t>(),
                     ctx.node.where);
    xnn::PackingScope packing(ctx.options().packed_store, ctx.packing_key(wi, key_row));
    std::shared_ptr<xnn::FullyConnectedQd8> fc = xnn::FullyConnectedQd8::create_int4(
        static_cast<size_t>(k1 - k0), static_cast<size_t>(rows), static_cast<size_t>(l.block),
        codes.data<uint8_t>(), scales.data<uint16_t>(), bias, y_stride);
    if (!fc)
        ctx.error(ONNXSTREAM_ERR_UNSUPPORTED,
                  "int4 weights need XNNPACK's qd8_f32_qb4w fully connected kernels, which this CPU lacks");
    return fc;
}

float *ChunkSum::target(bool first_chunk) {
    if (first_chunk) return y_;
    if (partial_.empty()) partial_ = ctx_.scratch(DType::F32, {static_cast<int64_t>(count_)});
    return partial_.data<float>();
}

void ChunkSum::add(bool first_chunk) {
    if (first_chunk) return;
    const float *p = partial_.data<float>();
    float *y = y_;
    if (y_stride_ == width_ || width_ == 0) {
        parallel_for(ctx_.pool(), count_, 1 << 15, [&](size_t b, size_t e) {
            for (size_t i = b; i < e; ++i) y[i] += p[i];
        });
        return;
    }
    const size_t width = width_, stride = y_stride_;
    parallel_for(ctx_.pool(), count_ / width, std::max<size_t>(1, (size_t(1) << 15) / width), [&](size_t b, size_t e) {
        for (size_t r = b; r < e; ++r)
            for (size_t c = 0; c < width; ++c) y[r * stride + c] += p[r * width + c];
    });
}

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

void matmul_f32(const float *a, const Shape &a_batch, const float *b, const Shape &b_batch, float *y,
                const Shape &y_batch, int64_t m, int64_t k, int64_t n, pthreadpool_t pool, bool b_nk) {
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

} // namespace onnxstream

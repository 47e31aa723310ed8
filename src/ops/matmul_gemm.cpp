// MatMul (numpy semantics) and Gemm. Every float product runs through XNNPACK's fully connected
// operator: the right-hand matrix is packed as its weight, so a matrix shared by a whole batch is packed
// once and each distinct one (attention's per-head K^T, V) once per slice.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "ops/column_blocks.h"
#include "ops/layout.h"
#include "ops/matmul_kernels.h"
#include "ops/quantize.h"
#include "ops/registry.h"
#include "ops/shape_common.h"
#include "tensor/half.h"
#include "tensor/int4_blocks.h"
#include "util/kernel_timer.h"
#include "xnnpack/dynamic_quant.h"
#include "xnnpack/matmul.h"
#include "xnnpack/weights_cache.h"

namespace onnxstream {

namespace {

// ---------------------------------------------------------------------------------------------------------
// Helpers shared by MatMul and Gemm

// The node's fully connected operator kept from one run to the next when the model keeps prepared kernels
// (RunContext::state: the RAM provider of max-speed), so a whole weight is packed once rather than on every
// run. It stays valid while the weight and Gemm's C (where the bias comes from) are the same storage and the
// product has the same K and N; only one of the three kinds is set.
struct FcState {
    const void *weight_storage = nullptr, *bias_storage = nullptr;
    size_t k = 0, n = 0;
    bool weight_kn = false;
    std::shared_ptr<xnn::FullyConnectedF32> f32;
    std::shared_ptr<xnn::FullyConnectedQd8> qd8;
    std::shared_ptr<xnn::FullyConnectedF16> f16;
    // A streamed weight's float32 operators, one per chunk of chunk_rows rows.
    int64_t chunk_rows = 0;
    std::vector<std::shared_ptr<xnn::FullyConnectedF32>> f32_chunks;
    // A whole weight's float32 operators, one per block of column_block output columns (fc_column_blocks).
    size_t column_block = 0;
    std::vector<std::shared_ptr<xnn::FullyConnectedF32>> f32_blocks;
};

// The node's kept state for a product over the whole weight input `wi` (input 2, if any, being the bias's
// source): the current one when it matches, else a fresh one installed in the slot for the caller to fill.
// Null when nothing may be kept: no slot, or a weight or bias computed at run time. A streamed weight has
// no data of its own to identify it: its chunks come from the provider the model keeps, so only its
// shape, K and N identify it.
std::shared_ptr<FcState> kept_fc(const RunContext &ctx, size_t wi, size_t k, size_t n, bool weight_kn) {
    std::shared_ptr<void> *slot = ctx.state();
    if (!slot || !ctx.input_is_weight(wi) || (ctx.has_input(2) && !ctx.input_is_weight(2))) return nullptr;
    const void *weight_storage = ctx.input(wi).raw();
    const void *bias_storage = ctx.has_input(2) ? ctx.input(2).raw() : nullptr;
    auto state = std::static_pointer_cast<FcState>(*slot);
    if (state && state->weight_storage == weight_storage && state->bias_storage == bias_storage && state->k == k &&
        state->n == n && state->weight_kn == weight_kn)
        return state;
    state = std::make_shared<FcState>();
    state->weight_storage = weight_storage;
    state->bias_storage = bias_storage;
    state->k = k;
    state->n = n;
    state->weight_kn = weight_kn;
    *slot = state;
    return state;
}

// The fully connected product of fc_weight in int8 arithmetic, for a per-channel int8 weight whose scales
// run along N (what --quantize w8 writes for MatMul and Gemm): x is quantized row by row when the op runs
// and the int8 weight is packed as it is stored, never dequantized. A [K, N] weight streamed in chunks of K
// quantizes each chunk's columns of x on their own and sums the float32 partial products, as fc_weight
// does. Returns false, having written nothing, when the option is off or the build or the CPU has no such
// kernel (xnnpack/dynamic_quant.h); fc_weight then dequantizes.
bool fc_weight_int8(const RunContext &ctx, size_t wi, const float *x, size_t m, size_t k, size_t n, bool weight_kn,
                    const float *bias, float *y) {
    const Tensor &w = ctx.input(wi);
    const QuantParams &q = w.quant();
    if (!ctx.options().int8_weight_arithmetic || !xnn::has_dynamic_quant_kernels() || w.dtype() != DType::I8 ||
        !q.present || q.axis != (weight_kn ? 1 : 0) || !q.channel_scales || w.rank() != 2 ||
        q.channel_scales->size() != static_cast<size_t>(weight_kn ? w.dim(1) : w.dim(0)))
        return false;
    const float *scales = q.channel_scales->data();
    Tensor xq_buffer = ctx.scratch(DType::I8, {static_cast<int64_t>(m * k + xnn::kQuantizedSlack)});
    xnn::QuantizedRows xq;
    xq.values = xq_buffer.data<int8_t>();
    if (!ctx.is_streamed(wi)) {
        const std::shared_ptr<FcState> kept = kept_fc(ctx, wi, k, n, weight_kn);
        std::shared_ptr<xnn::FullyConnectedQd8> fc = kept ? kept->qd8 : nullptr;
        if (!fc) {
            xnn::PackingScope packing(ctx.options().packed_store, ctx.packing_key(wi));
            fc = xnn::FullyConnectedQd8::create(k, n, w.data<int8_t>(), weight_kn, scales, bias, n);
        }
        if (!fc) return false;
        if (kept) kept->qd8 = fc;
        xnn::quantize_rows(m, k, x, k, xq, ctx.pool());
        fc->run(m, xq, y, ctx.pool());
        ctx.count_int8();
        return true;
    }
    const int64_t total = w.dim(0), step = ctx.weight_chunk_rows(wi, /*float_bytes=*/false);
    ChunkSum sum(ctx, y, m * n);
    for (int64_t r0 = 0; r0 < total; r0 += step) {
        const int64_t r1 = std::min(total, r0 + step);
        const size_t rows = static_cast<size_t>(r1 - r0);
        xnn::PackingScope packing(ctx.options().packed_store, ctx.packing_key(wi, r0));
        const Tensor chunk = ctx.read_weight_rows(wi, r0, r1);
        if (!weight_kn) { // [N, K] in chunks of N, each filling its columns of y
            auto fc = xnn::FullyConnectedQd8::create(k, rows, chunk.data<int8_t>(), false, scales + r0,
                                                     bias ? bias + r0 : nullptr, n);
            if (!fc) return false; // only the first chunk can get here
            if (r0 == 0) xnn::quantize_rows(m, k, x, k, xq, ctx.pool());
            fc->run(m, xq, y + r0, ctx.pool());
            continue;
        }
        // [K, N] in chunks of K: this chunk's columns of x against its rows of W, summed into y.
        auto fc = xnn::FullyConnectedQd8::create(rows, n, chunk.data<int8_t>(), true, scales,
                                                 r0 == 0 ? bias : nullptr, n);
        if (!fc) return false;
        xnn::quantize_rows(m, rows, x + r0, k, xq, ctx.pool());
        fc->run(m, xq, sum.target(r0 == 0), ctx.pool());
        sum.add(r0 == 0);
    }
    ctx.count_int8();
    return true;
}

// The fully connected product of a blockwise int4 weight (tensor/int4_blocks.h), always in int8 arithmetic:
// x is quantized row by row once, and each chunk of output channels (stored rows, each carrying its scales)
// is split into XNNPACK's code and scale arrays and packed. A build or CPU without XNNPACK's qd8_f32_qb4w
// kernels fails here with UNSUPPORTED; nothing dequantizes int4 weights to float32.
void fc_weight_int4(const RunContext &ctx, size_t wi, const float *x, size_t m, const float *bias, float *y) {
    const int4::RowLayout l = int4_layout(ctx, wi);
    const size_t k = static_cast<size_t>(l.k), n = static_cast<size_t>(l.n);
    Tensor xq_buffer = ctx.scratch(DType::I8, {static_cast<int64_t>(m * k + xnn::kQuantizedSlack)});
    xnn::QuantizedRows xq;
    xq.values = xq_buffer.data<int8_t>();
    xnn::quantize_rows(m, k, x, k, xq, ctx.pool());
    if (!ctx.is_streamed(wi)) {
        const std::shared_ptr<FcState> kept = kept_fc(ctx, wi, k, n, false);
        std::shared_ptr<xnn::FullyConnectedQd8> fc = kept ? kept->qd8 : nullptr;
        if (!fc) {
            fc = int4_fully_connected(ctx, wi, 0, ctx.input(wi).data<uint8_t>(), 0, l.n, l, 0, l.k, bias, n);
            if (kept) kept->qd8 = fc;
        }
        fc->run(m, xq, y, ctx.pool());
    } else {
        const int64_t step = ctx.weight_chunk_rows(wi, /*float_bytes=*/false);
        for (int64_t r0 = 0; r0 < l.n; r0 += step) {
            const int64_t r1 = std::min(l.n, r0 + step);
            const Tensor rows = ctx.read_weight_rows(wi, r0, r1);
            int4_fully_connected(ctx, wi, r0, rows.data<uint8_t>(), r0, r1 - r0, l, 0, l.k, bias ? bias + r0 : nullptr,
                                 n)
                ->run(m, xq, y + r0, ctx.pool());
        }
    }
    ctx.count_int8();
}

// Columns [c0, c0 + cols) of `rows` rows of a row-major matrix n floats wide, into dst (cols floats a row):
// XNNPACK reads no weight row stride, so a block of a [K, N] weight is packed from such a copy.
void copy_columns(const float *src, size_t rows, size_t n, size_t c0, size_t cols, float *dst) {
    for (size_t r = 0; r < rows; ++r) std::memcpy(dst + r * cols, src + r * n + c0, cols * sizeof(float));
}

// The columns of a streamed [K, N] weight's output-channel blocks, for packing them: copied out of the
// weight's row chunks (converted to float32), for `per_pass` consecutive blocks at a time, where per_pass
// blocks' columns fit in one weight chunk's bytes. Packing blocks in order reads the weight once per pass.
class BlockColumns {
public:
    BlockColumns(const RunContext &ctx, size_t wi, size_t k, size_t n, size_t block)
        : ctx_(ctx), wi_(wi), k_(k), n_(n), block_(block) {}

    // Block `index`'s k x cols floats, row-major (cols = its width).
    const float *of(size_t index) {
        if (data_.empty() || index < first_ || index >= first_ + count_) copy_pass(index);
        return data_.data<float>() + (index - first_) * k_ * block_;
    }

private:
    void copy_pass(size_t first) {
        const size_t block_bytes = k_ * block_ * sizeof(float), blocks = (n_ + block_ - 1) / block_;
        const size_t per_pass = std::max<size_t>(1, ctx_.options().weight_chunk_bytes / std::max<size_t>(block_bytes, 1));
        first_ = first;
        count_ = std::min(per_pass, blocks - first);
        if (data_.empty() || data_.numel() < static_cast<int64_t>(count_ * k_ * block_))
            data_ = ctx_.scratch(DType::F32, {static_cast<int64_t>(count_ * k_ * block_)});
        float *dst = data_.data<float>();
        const int64_t total = static_cast<int64_t>(k_), step = ctx_.weight_chunk_rows(wi_);
        for (int64_t r0 = 0; r0 < total; r0 += step) {
            const int64_t r1 = std::min(total, r0 + step);
            const Tensor chunk = ctx_.kernel_weight(wi_, ctx_.read_weight_rows(wi_, r0, r1), r0);
            const float *src = chunk.data<float>();
            for (size_t b = 0; b < count_; ++b) {
                const size_t c0 = (first_ + b) * block_, cols = std::min(block_, n_ - c0);
                copy_columns(src, static_cast<size_t>(r1 - r0), n_, c0, cols,
                             dst + b * k_ * block_ + static_cast<size_t>(r0) * cols);
            }
        }
    }

    const RunContext &ctx_;
    size_t wi_, k_, n_, block_;
    size_t first_ = 0, count_ = 0;
    Tensor data_;
};

// fc_weight over a whole weight in blocks of `block` output columns, each its own operator writing its
// columns of y (output_channel_block says why), spread among the pool's threads, each block run by one
// thread (spread_channel_block says why). A block's operator comes from the packed store when it holds the
// block, without touching the weight; then each thread creates, runs and drops its own blocks' operators,
// so that no thread waits while another creates them. Blocks the store lacks (its first run) are packed
// from the weight on the calling thread, a group of `threads` at a time: [N, K] rows as they are, the
// columns of a [K, N] weight copied out first (XNNPACK reads no weight row stride). Either way at most
// `threads` blocks' operators are alive at once (unless kept), so memory stays within threads x block.
// A streamed weight is never read whole: [N, K] blocks read their rows, and [K, N] blocks have their
// columns copied out of the weight's row chunks, as many blocks per pass over the chunks as fit in one
// chunk's bytes (BlockColumns).
void fc_column_blocks(const RunContext &ctx, size_t wi, const float *x, size_t m, size_t k, size_t n,
                      bool weight_kn, const float *bias, float *y, size_t block) {
    const size_t threads = ctx.pool() ? std::max<size_t>(1, pthreadpool_get_threads_count(ctx.pool())) : 1;
    block = spread_channel_block(n, block, threads);
    const size_t count = (n + block - 1) / block;
    const std::shared_ptr<FcState> kept = kept_fc(ctx, wi, k, n, weight_kn);
    if (kept && kept->column_block != block) {
        kept->column_block = block;
        kept->f32_blocks.clear();
    }
    // The packed store's key of a block: one per first column.
    const auto block_key = [&](size_t index) { return ctx.packing_key(wi, 0, /*part=*/1 + index * block); };
    const auto stored_block = [&](size_t index) {
        xnn::PackingScope packing(ctx.options().packed_store, block_key(index));
        return xnn::FullyConnectedF32::from_store(packing, k, std::min(block, n - index * block), weight_kn,
                                                  bias != nullptr, k, n);
    };
    std::vector<char> pending(count, 1);
    const bool all_kept = kept && kept->f32_blocks.size() == count;
    if (threads > 1 && count > 1 && (all_kept || (!kept && ctx.options().packed_store))) {
        PoolPrepareTime prepare;
        parallel_for(ctx.pool(), count, 1, [&](size_t begin, size_t end) {
            PoolPrepareTime::Worker on_this_thread(prepare);
            for (size_t i = begin; i < end; ++i) {
                const std::shared_ptr<xnn::FullyConnectedF32> fc = all_kept ? kept->f32_blocks[i] : stored_block(i);
                if (!fc) continue;
                fc->run(m, x, y + i * block, nullptr);
                pending[i] = 0;
            }
        });
    }
    Tensor w32, columns, rows; // the float32 weight, a block's columns or rows of it: made to pack a block
    BlockColumns streamed_columns(ctx, wi, k, n, block);
    const auto block_operator = [&](size_t index) {
        const size_t c0 = index * block, cols = std::min(block, n - c0);
        std::shared_ptr<xnn::FullyConnectedF32> fc;
        if (kept && index < kept->f32_blocks.size()) fc = kept->f32_blocks[index];
        if (!fc) fc = stored_block(index);
        if (!fc) {
            const float *w = nullptr;
            if (ctx.is_streamed(wi) && weight_kn) {
                w = streamed_columns.of(index);
            } else if (ctx.is_streamed(wi)) {
                const int64_t r0 = static_cast<int64_t>(c0);
                rows = ctx.kernel_weight(wi, ctx.read_weight_rows(wi, r0, r0 + static_cast<int64_t>(cols)), r0);
                w = rows.data<float>();
            } else {
                if (w32.empty()) w32 = ctx.kernel_weight(wi, ctx.input(wi), 0);
                w = w32.data<float>() + (weight_kn ? 0 : c0 * k);
                if (weight_kn) {
                    if (columns.empty()) columns = ctx.scratch(DType::F32, {static_cast<int64_t>(k * block)});
                    copy_columns(w, k, n, c0, cols, columns.data<float>());
                    w = columns.data<float>();
                }
            }
            xnn::PackingScope packing(ctx.options().packed_store, block_key(index));
            fc = std::make_shared<xnn::FullyConnectedF32>(k, cols, w, weight_kn, bias ? bias + c0 : nullptr, k, n);
        }
        if (kept && index >= kept->f32_blocks.size()) kept->f32_blocks.push_back(fc);
        return fc;
    };
    std::vector<size_t> todo;
    for (size_t i = 0; i < count; ++i)
        if (pending[i]) todo.push_back(i);
    std::vector<std::shared_ptr<xnn::FullyConnectedF32>> group;
    for (size_t first = 0; first < todo.size(); first += threads) {
        const size_t size = std::min(threads, todo.size() - first);
        group.clear();
        for (size_t i = 0; i < size; ++i) group.push_back(block_operator(todo[first + i]));
        if (size == 1) {
            group[0]->run(m, x, y + todo[first] * block, ctx.pool());
            continue;
        }
        parallel_for(ctx.pool(), size, 1, [&](size_t begin, size_t end) {
            for (size_t i = begin; i < end; ++i) group[i]->run(m, x, y + todo[first + i] * block, nullptr);
        });
    }
}

// y[m, n] = x[m, k] · W (+ bias) with W the 2-D weight input `wi`: [K, N] when weight_kn, else [N, K]; any
// float weight dtype (RunContext::kernel_weight makes it float32). A weight the executor streams is read in
// row chunks: [K, N] in slices of K whose partial products are summed, [N, K] in slices of N that each fill
// their columns of y; a big whole weight runs in blocks of output columns (fc_column_blocks). x rows are k
// floats apart and readable past the end (the executor's padding).
void fc_weight(const RunContext &ctx, size_t wi, const float *x, size_t m, size_t k, size_t n, bool weight_kn,
               const float *bias, float *y) {
    if (fc_weight_int8(ctx, wi, x, m, k, n, weight_kn, bias, y)) return;
    // A streamed weight runs in column blocks too when a packed store serves them: a block's operator then
    // reads nothing of the weight, and each has all of K, where row chunks of a [K, N] weight would each be
    // a short product over few rows of K whose partial results are summed.
    const size_t block = output_channel_block(m, k, n, channel_block_l2_bytes());
    if (block < n && (!ctx.is_streamed(wi) || ctx.packing_key(wi) != 0)) {
        fc_column_blocks(ctx, wi, x, m, k, n, weight_kn, bias, y, block);
        return;
    }
    if (!ctx.is_streamed(wi)) {
        const std::shared_ptr<FcState> kept = kept_fc(ctx, wi, k, n, weight_kn);
        std::shared_ptr<xnn::FullyConnectedF32> fc = kept ? kept->f32 : nullptr;
        if (!fc) {
            xnn::PackingScope packing(ctx.options().packed_store, ctx.packing_key(wi));
            const Tensor w32 = ctx.kernel_weight(wi, ctx.input(wi), 0);
            fc = std::make_shared<xnn::FullyConnectedF32>(k, n, w32.data<float>(), weight_kn, bias, k, n);
            if (kept) kept->f32 = fc;
        }
        fc->run(m, x, y, ctx.pool());
        return;
    }
    const int64_t total = ctx.input(wi).dim(0), step = ctx.weight_chunk_rows(wi);
    const std::shared_ptr<FcState> kept = kept_fc(ctx, wi, k, n, weight_kn);
    if (kept && kept->chunk_rows != step) {
        kept->chunk_rows = step;
        kept->f32_chunks.clear();
    }
    ChunkSum sum(ctx, y, m * n);
    for (int64_t r0 = 0, index = 0; r0 < total; r0 += step, ++index) {
        const int64_t r1 = std::min(total, r0 + step);
        const size_t rows = static_cast<size_t>(r1 - r0);
        std::shared_ptr<xnn::FullyConnectedF32> fc;
        if (kept && static_cast<size_t>(index) < kept->f32_chunks.size()) fc = kept->f32_chunks[static_cast<size_t>(index)];
        if (!fc) {
            xnn::PackingScope packing(ctx.options().packed_store, ctx.packing_key(wi, r0));
            const Tensor chunk = ctx.kernel_weight(wi, ctx.read_weight_rows(wi, r0, r1), r0);
            const float *w = chunk.data<float>();
            fc = weight_kn ? std::make_shared<xnn::FullyConnectedF32>(rows, n, w, true, r0 == 0 ? bias : nullptr, k, n)
                           : std::make_shared<xnn::FullyConnectedF32>(k, rows, w, false, bias ? bias + r0 : nullptr, k, n);
            if (kept) kept->f32_chunks.push_back(fc);
        }
        if (!weight_kn) {
            fc->run(m, x, y + r0, ctx.pool());
            continue;
        }
        fc->run(m, x + r0, sum.target(r0 == 0), ctx.pool());
        sum.add(r0 == 0);
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
        const std::shared_ptr<FcState> kept = kept_fc(ctx, wi, k, n, weight_kn);
        std::shared_ptr<xnn::FullyConnectedF16> fc = kept ? kept->f16 : nullptr;
        if (!fc) {
            xnn::PackingScope packing(ctx.options().packed_store, ctx.packing_key(wi));
            fc = xnn::FullyConnectedF16::create(k, n, w.raw(), weight_kn, bias_at(0), w32, k, n);
        }
        if (!fc) {
            ctx.count_fp16(false);
            return false;
        }
        if (kept) kept->f16 = fc;
        fc->run(m, x, y, ctx.pool());
        ctx.count_fp16(true);
        return true;
    }
    // [N, K] in chunks of N: each chunk fills its columns of y.
    const int64_t total = w.dim(0), step = ctx.weight_chunk_rows(wi, w32);
    for (int64_t r0 = 0; r0 < total; r0 += step) {
        const int64_t r1 = std::min(total, r0 + step);
        xnn::PackingScope packing(ctx.options().packed_store, ctx.packing_key(wi, r0));
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
    if (!shapeops::broadcast_shapes(s.a_batch, s.b_batch, s.y_batch) && ictx)
        ictx->error("batch dimensions of A ", shape_str(a), " and B ", shape_str(b), " do not broadcast");
    s.y = s.y_batch;
    if (!a_vec) s.y.push_back(s.m);
    if (!b_vec) s.y.push_back(s.n);
    return s;
}

// Beyond ONNX: an optional third input, a bias of one value per output column ([N], or [1, ..., N] no longer
// than Y's rank), added inside the fully connected kernel. onnxstream-convert fuses MatMul + Add(bias) into
// it for activations of rank 3 and up (2-D ones become Gemm); B must be a 2-D matrix (float or quantized).
void check_matmul_bias(const InferContext &ctx, const TensorInfo &a, const TensorInfo &b, const Shape &y) {
    const TensorInfo &c = ctx.input(2);
    if (a.dtype != DType::F32 && a.dtype != DType::F16)
        ctx.error("a MatMul bias needs a float A, not ", dtype_name(a.dtype));
    if (b.shape.size() != 2) ctx.error("a MatMul bias needs a 2-D B, not ", shape_str(b.shape));
    if (c.dtype != a.dtype && !widened_weight(a.dtype, c.dtype))
        ctx.error("the bias is ", dtype_name(c.dtype), " but A is ", dtype_name(a.dtype));
    const int64_t n = b.shape[1];
    bool column = !c.shape.empty() && c.shape.size() <= y.size() && c.shape.back() == n;
    for (size_t i = 0; column && i + 1 < c.shape.size(); ++i) column = c.shape[i] == 1;
    if (!column) ctx.error("the bias ", shape_str(c.shape), " is not one value per output column (", n, ")");
}

std::vector<TensorInfo> infer_matmul(const InferContext &ctx) {
    ctx.require_inputs(2, 3);
    ctx.require_dtype(0, {DType::F32, DType::F16, DType::I64, DType::I32});
    const TensorInfo &a = ctx.input(0), &b = ctx.input(1);
    if (a.dtype != b.dtype && !widened_weight(a, b))
        ctx.error("A is ", dtype_name(a.dtype), " but B is ", dtype_name(b.dtype),
                  "; MatMul needs one dtype (or float32 A with a float16 or quantized B)");
    if (b.quant.blockwise() && b.quant.axis != 0)
        ctx.error("an int4 B [K, N] must have its blocks along axis 0 (K), not ", b.quant.axis);
    Shape y = matmul_shapes(&ctx, a.shape, b.shape).y;
    if (ctx.has_input(2)) check_matmul_bias(ctx, a, b, y);
    return {TensorInfo{a.dtype, std::move(y), {}}};
}

// The bias input of a MatMul as float32 (empty when absent).
std::vector<float> matmul_bias(const RunContext &ctx) {
    if (!ctx.has_input(2)) return {};
    const Tensor &c = ctx.input(2);
    std::vector<float> bias(static_cast<size_t>(c.numel()));
    if (c.dtype() == DType::F16) half_to_float_n(c.data<uint16_t>(), bias.data(), bias.size());
    else std::memcpy(bias.data(), c.raw(), bias.size() * sizeof(float));
    return bias;
}

// MatMul with a blockwise int4 B: a 2-D weight whatever A's batch dimensions.
void run_matmul_int4(RunContext &ctx) {
    const Tensor &a = ctx.input(0);
    Tensor &y = ctx.alloc_output(0);
    Tensor a_holder, y_holder;
    const float *ap = as_f32(ctx, a, a_holder);
    float *yp = out_f32(ctx, y, y_holder);
    const size_t rows = static_cast<size_t>(a.numel() / a.dim(a.rank() - 1));
    const std::vector<float> bias = matmul_bias(ctx);
    fc_weight_int4(ctx, 1, ap, rows, bias.empty() ? nullptr : bias.data(), yp);
    if (!y_holder.empty()) store_f32_output(ctx, y, y_holder);
}

// y (rows of bias.size() values) += bias, row by row; nothing when the bias is empty.
void add_column_bias(float *y, size_t count, const std::vector<float> &bias) {
    if (bias.empty()) return;
    for (size_t i = 0; i < count; i += bias.size())
        for (size_t j = 0; j < bias.size(); ++j) y[i + j] += bias[j];
}

void run_matmul(RunContext &ctx) {
    if (ctx.input(1).quant().blockwise()) return run_matmul_int4(ctx);
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
        const std::vector<float> bias = matmul_bias(ctx);
        const float *bp = bias.empty() ? nullptr : bias.data();
        if (ctx.options().fp16_arithmetic && a.dtype() == DType::F16 && y.numel() > 0 && s.k > 0) {
            if (fc_weight_f16(ctx, 1, a.data<uint16_t>(), rows, static_cast<size_t>(s.k),
                              static_cast<size_t>(s.n), true, bp, y.data<uint16_t>()))
                return;
        }
        Tensor a_holder, y_holder;
        const float *ap = as_f32(ctx, a, a_holder);
        float *yp = out_f32(ctx, y, y_holder);
        if (y.numel() > 0 && s.k > 0) {
            fc_weight(ctx, 1, ap, rows, static_cast<size_t>(s.k), static_cast<size_t>(s.n), true, bp, yp);
        } else {
            for (size_t r = 0; r < rows; ++r)
                for (size_t j = 0; j < static_cast<size_t>(s.n); ++j) yp[r * s.n + j] = bp ? bp[j] : 0.0f;
        }
        if (!y_holder.empty()) store_f32_output(ctx, y, y_holder);
        return;
    }
    // A bias is only taken beside a 2-D float weight, which takes the fully connected path above; a model
    // that gives one to a B of another kind (a graph input) gets it added here.
    const std::vector<float> late_bias = matmul_bias(ctx);
    switch (a.dtype()) {
    case DType::F32: {
        const Tensor b32 = ctx.kernel_weight(1, b, 0);
        matmul_f32(a.data<float>(), s.a_batch, b32.data<float>(), s.b_batch, y.data<float>(),
                   s.y_batch, s.m, s.k, s.n, ctx.pool());
        add_column_bias(y.data<float>(), static_cast<size_t>(y.numel()), late_bias);
        break;
    }
    case DType::F16: {
        Tensor af = f32_copy_of_f16(ctx, a);
        const Tensor bf = ctx.kernel_weight(1, b, 0);
        Tensor yf = ctx.scratch(DType::F32, y.shape());
        matmul_f32(af.data<float>(), s.a_batch, bf.data<float>(), s.b_batch, yf.data<float>(), s.y_batch, s.m,
                   s.k, s.n, ctx.pool());
        add_column_bias(yf.data<float>(), static_cast<size_t>(y.numel()), late_bias);
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
    if (b.quant.blockwise() && b.quant.axis != (tb ? 1 : 0))
        ctx.error("an int4 B", tb ? "^T [N, K]" : " [K, N]", " must have its blocks along axis ", tb ? 1 : 0,
                  " (K), not ", b.quant.axis);
    if (b.quant.blockwise() && ta)
        ctx.error("an int4 B needs transA = 0");
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
    return fc_weight_f16(ctx, 1, a.data<uint16_t>(), static_cast<size_t>(m), static_cast<size_t>(k),
                         static_cast<size_t>(n), !tb, bias.empty() ? nullptr : bias.data(), y.data<uint16_t>());
}

void run_gemm(RunContext &ctx) {
    if (run_gemm_w8a8(ctx)) return; // static W8A8 when the node has activation ranges
    const Tensor &a_in = ctx.input(0), &b_in = ctx.input(1);
    bool f16 = a_in.dtype() == DType::F16;
    bool ta = ctx.attrs().get_int("transA", 0) != 0, tb = ctx.attrs().get_int("transB", 0) != 0;
    float alpha = ctx.attrs().get_float("alpha", 1.0f), beta = ctx.attrs().get_float("beta", 1.0f);
    if (f16 && ctx.options().fp16_arithmetic && !ta && alpha == 1.0f && ctx.input_is_weight(1) &&
        !b_in.quant().blockwise() && gemm_f16(ctx, tb, beta))
        return;
    Tensor a = f16 ? f32_copy_of_f16(ctx, a_in) : a_in;
    // An int4 B is held as its stored rows, one per output channel (tensor/int4_blocks.h).
    const bool int4 = b_in.quant().blockwise();
    int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1),
            n = tb || int4 ? b_in.dim(0) : b_in.dim(1);

    Tensor c;
    int64_t c_rs = 0, c_cs = 0;
    if (ctx.has_input(2) && beta != 0.0f) {
        c = ctx.input(2).dtype() == DType::F16 ? f32_copy_of_f16(ctx, ctx.input(2)) : ctx.input(2);
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
                ap = a.data<float>();
            }
            // A bias that is one value per column folds into the product when nothing scales it afterwards.
            std::vector<float> bias;
            if (!c.empty() && c_rs == 0 && c_cs == 1 && alpha == 1.0f) {
                bias.assign(c.data<float>(), c.data<float>() + n);
                for (float &v : bias) v *= beta;
                c = Tensor();
            }
            if (int4)
                fc_weight_int4(ctx, 1, ap, static_cast<size_t>(m), bias.empty() ? nullptr : bias.data(), y);
            else
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

} // namespace

void register_matmul_gemm_ops(Registry &r) {
    // B (and Gemm's C) reach XNNPACK only as packed FC weights or the op's own loops: read exactly.
    r.add("MatMul", infer_matmul, run_matmul)
        .with_reads_weights_exactly(0b110)
        .with_f32_weight_mask(0b110)
        .with_weights_read_only_to_pack(0b10)
        .with_streamable_weight_input(1);
    r.add("Gemm", infer_gemm, run_gemm)
        .with_reads_weights_exactly(0b110)
        .with_f32_weight_mask(0b110)
        .with_weights_read_only_to_pack(0b10)
        .with_streamable_weight_input(1);
}

} // namespace onnxstream

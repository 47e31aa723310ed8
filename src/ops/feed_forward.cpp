// GegluFeedForward: the feed-forward block of Stable Diffusion's transformer blocks (diffusers' GEGLU),
//   h = x · W1 + b1;  a, g = h[..., :H], h[..., H:];  y = (a * gelu(g)) · W2 + b2
// recognised by the importer (src/onnx/passes/geglu_ffn.cpp). Unfused, h is the biggest activation of the
// UNet ([4096, 2560] floats = 42 MB at 64x64 latents) and the split halves, the GELU and the product add
// as much again. Here the hidden width H is walked in column blocks: for block j only the two
// [T, block] slices of h exist, and y accumulates their contribution through W2's rows j. W1 arrives
// transposed ([2H, C], row r = hidden column r) so a block of hidden columns is a block of rows of both
// weights, and both stream in row chunks (RunContext::read_weight_rows) when they are over the chunk budget.
//
// Inputs: x [..., C] (float32/float16), W1t [2H, C], b1 [2H] (optional), W2 [H, N], b2 [N] (optional);
// weights float32, float16 or per-channel 8-bit (widened per block, or computed in int8 where the build
// has XNNPACK's dynamically quantized kernels), or both blockwise int4 (int8 arithmetic only). Output
// y [..., N], x's dtype.
// Attribute approximate: "none" (erf GELU, default) or "tanh", as Gelu's.
#include <algorithm>
#include <cmath>

#include "ops/column_blocks.h"
#include "ops/layout.h"
#include "ops/matmul_kernels.h"
#include "ops/registry.h"
#include "ops/vector_math.h"
#include "tensor/half.h"
#include "tensor/int4_blocks.h"
#include "xnnpack/dynamic_quant.h"
#include "xnnpack/weights_cache.h"
#include "xnnpack/matmul.h"

namespace onnxstream {

namespace {

enum Input { kX = 0, kW1 = 1, kB1 = 2, kW2 = 3, kB2 = 4 };

std::vector<TensorInfo> infer_geglu_ffn(const InferContext &ctx) {
    ctx.require_inputs(4, 5);
    ctx.require_dtype(kX, {DType::F32, DType::F16});
    const std::string approximate = ctx.attrs().get_string("approximate", "none");
    if (approximate != "none" && approximate != "tanh")
        ctx.error("attribute approximate is '", approximate, "', expected 'none' or 'tanh'");
    const TensorInfo &x = ctx.input(kX), &w1 = ctx.input(kW1), &w2 = ctx.input(kW2);
    if (x.shape.empty()) ctx.error("x must have rank >= 1, got a scalar");
    for (size_t i : {kW1, kW2})
        if (!is_float_weight_dtype(ctx.input(i).dtype, ctx.input(i).quant.present))
            ctx.error("input ", i, " is ", dtype_name(ctx.input(i).dtype),
                      "; expected a float32, float16 or quantized weight");
    if (w1.quant.blockwise() != w2.quant.blockwise())
        ctx.error("W1 and W2 must both be int4 or neither (W1 is ", dtype_name(w1.dtype), ", W2 ",
                  dtype_name(w2.dtype), ")");
    if (w1.quant.blockwise() && (w1.quant.axis != 1 || w2.quant.axis != 0))
        ctx.error("int4 W1 [2H, C] and W2 [H, N] must have their blocks along C and H (axes 1 and 0), not ",
                  w1.quant.axis, " and ", w2.quant.axis);
    const int64_t c = x.shape.back();
    if (w1.shape.size() != 2 || w1.shape[1] != c || w1.shape[0] % 2 != 0)
        ctx.error("W1 (transposed) must be [2H, C] = [2H, ", c, "], got ", shape_str(w1.shape));
    const int64_t h = w1.shape[0] / 2;
    if (w2.shape.size() != 2 || w2.shape[0] != h)
        ctx.error("W2 must be [H, N] with H = ", h, " (half of W1's ", w1.shape[0], " rows), got ",
                  shape_str(w2.shape));
    const int64_t n = w2.shape[1];
    const struct {
        size_t index;
        int64_t size;
    } biases[] = {{kB1, 2 * h}, {kB2, n}};
    for (const auto &b : biases) {
        if (!ctx.has_input(b.index)) continue;
        const TensorInfo &bi = ctx.input(b.index);
        if (bi.dtype != DType::F32 && bi.dtype != DType::F16)
            ctx.error("bias input ", b.index, " is ", dtype_name(bi.dtype), "; expected float32 or float16");
        if (bi.shape != Shape{b.size})
            ctx.error("bias input ", b.index, " must be [", b.size, "], got ", shape_str(bi.shape));
    }
    Shape y = x.shape;
    y.back() = n;
    return {TensorInfo{x.dtype, y, {}}};
}

// The float32 values of a (small) bias input, or nullptr when it is omitted.
const float *bias_f32(const RunContext &ctx, size_t i, Tensor &holder) {
    if (!ctx.has_input(i)) return nullptr;
    holder = ctx.kernel_weight(i, ctx.input(i), 0);
    return holder.data<float>();
}

// Rows [r0, r1) of weight input wi as float32: read from the provider when the weight streams, else a
// pointer into the whole weight's float32 rows (`whole`: the weight itself, or its float32 copy when it is
// 8-bit), or a widened copy of its float16 rows (a block at a time, never the whole weight in float32).
struct RowBlock {
    Tensor chunk, converted;
    const float *data = nullptr;
};

RowBlock weight_rows(const RunContext &ctx, size_t wi, const float *whole, int64_t r0, int64_t r1) {
    RowBlock b;
    const Tensor &w = ctx.input(wi);
    const int64_t cols = w.dim(1);
    if (ctx.is_streamed(wi)) {
        b.chunk = ctx.read_weight_rows(wi, r0, r1);
        b.converted = ctx.kernel_weight(wi, b.chunk, r0);
    } else if (whole) {
        b.data = whole + r0 * cols;
        return b;
    } else {
        const size_t row_bytes = static_cast<size_t>(cols) * dtype_size(w.dtype());
        Tensor rows(w.dtype(), {r1 - r0, cols},
                    borrow_storage(static_cast<const uint8_t *>(w.raw()) + static_cast<size_t>(r0) * row_bytes,
                                   static_cast<size_t>(r1 - r0) * row_bytes, [] {}));
        b.converted = ctx.kernel_weight(wi, rows, r0);
    }
    b.data = b.converted.data<float>();
    return b;
}

// For a weight that does not stream: its float32 rows when it has them (float32 as is; 8-bit dequantized
// once, per-channel parameters being indexed by whole-weight rows), or nullptr for float16, which is
// widened one block at a time.
const float *whole_f32(const RunContext &ctx, size_t wi, Tensor &holder) {
    const Tensor &w = ctx.input(wi);
    if (ctx.is_streamed(wi) || w.dtype() == DType::F16) return nullptr;
    holder = ctx.kernel_weight(wi, w, 0);
    return holder.data<float>();
}

// Hidden columns per block: each of the two [T, block] float32 slices of h fits the chunk budget, and so do
// the weight rows each block reads when the weights stream. 0 budget (max-speed): the whole width at once.
// In float32, a block's W1 rows and W2 columns (C or N floats per hidden column) also fit half of a
// thread's L2, like any big weight's output-channel blocks (column_blocks.h): 1280 channels at 256
// tokens made 4096-column blocks of 42 MB each. (Half the budget's width, 128 columns at 4096 tokens, made
// the feed-forward slower than unfused in `min`: each block re-reads x and re-adds its [T, N] contribution
// to y; at 4096 tokens this bound is above the budget's.)
int64_t block_width(const RunContext &ctx, int64_t tokens, int64_t h, int64_t c, int64_t n, bool int8) {
    int64_t block = h;
    const size_t budget = ctx.options().weight_chunk_bytes;
    const size_t slice_row_bytes = sizeof(float) * static_cast<size_t>(std::max<int64_t>(tokens, 1));
    if (budget > 0) block = std::min<int64_t>(block, static_cast<int64_t>(budget / slice_row_bytes));
    if (!int8) {
        const size_t floats_per_column = static_cast<size_t>(std::max<int64_t>({c, n, 1}));
        const size_t fits = output_channel_block(static_cast<size_t>(tokens), floats_per_column,
                                                 static_cast<size_t>(block), channel_block_l2_bytes());
        block = std::min(block, static_cast<int64_t>(fits));
    }
    if (ctx.is_streamed(kW1)) block = std::min(block, ctx.weight_chunk_rows(kW1, !int8) / 2);
    // An int4 W2 is read whole (its rows are output channels, not hidden columns).
    if (ctx.is_streamed(kW2) && !ctx.input(kW2).quant().blockwise())
        block = std::min(block, ctx.weight_chunk_rows(kW2, !int8));
    // Whole SIMD tiles of XNNPACK's GEMM kernels where the budget allows.
    if (block < h && block > 16) block -= block % 16;
    return std::clamp<int64_t>(block, 1, std::max<int64_t>(h, 1));
}

void geglu_in_place(const RunContext &ctx, float *a, const float *g, size_t count, bool tanh_approx) {
    if (tanh_approx) {
        parallel_for(ctx.pool(), count, 1 << 14, [&](size_t s, size_t e) {
            const float k = 0.7978845608028654f; // sqrt(2 / pi)
            for (size_t i = s; i < e; ++i) {
                float v = g[i];
                a[i] *= 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
            }
        });
        return;
    }
    parallel_for(ctx.pool(), count, 1 << 14, [&](size_t s, size_t e) { vmath::geglu_erf(a + s, g + s, e - s); });
}

// int8 arithmetic applies when both weights are per-channel int8 along the axes the converter writes (W1t's
// rows, W2's columns) and the build and CPU have XNNPACK's dynamically quantized kernels.
bool int8_arithmetic(const RunContext &ctx, int64_t h, int64_t n) {
    auto per_channel = [&](size_t wi, int axis, int64_t count) {
        const Tensor &w = ctx.input(wi);
        const QuantParams &q = w.quant();
        return w.dtype() == DType::I8 && q.present && q.axis == axis && q.channel_scales &&
               q.channel_scales->size() == static_cast<size_t>(count);
    };
    return ctx.options().int8_weight_arithmetic && xnn::has_dynamic_quant_kernels() && per_channel(kW1, 0, 2 * h) &&
           per_channel(kW2, 1, n);
}

// The block loop in int8 arithmetic with both weights blockwise int4 (tensor/int4_blocks.h): W1's rows are its
// output channels, read block by block like int8 ones; W2's rows are its N output channels, each holding
// every hidden column, so W2 is read whole (an eighth of its float32 bytes) and each block packs its columns
// [j0, j1) of every row. `block` is a multiple of the int4 block. Fails with UNSUPPORTED on a CPU without
// XNNPACK's qd8_f32_qb4w kernels.
void run_blocks_int4(const RunContext &ctx, const float *xp, size_t m, int64_t h, int64_t n, int64_t block,
                     const float *b1, const float *b2, bool tanh_approx, float *yp) {
    const int4::RowLayout l1 = int4_layout(ctx, kW1), l2 = int4_layout(ctx, kW2);
    const size_t k = static_cast<size_t>(l1.k), nn = static_cast<size_t>(n);
    const auto tokens = static_cast<int64_t>(m);
    const Tensor w2 = ctx.is_streamed(kW2) ? ctx.read_weight_rows(kW2, 0, n) : ctx.input(kW2);
    Tensor xq_buffer = ctx.scratch(DType::I8, {static_cast<int64_t>(m * k + xnn::kQuantizedSlack)});
    Tensor hq_buffer = ctx.scratch(DType::I8, {tokens * block + static_cast<int64_t>(xnn::kQuantizedSlack)});
    xnn::QuantizedRows xq, hq;
    xq.values = xq_buffer.data<int8_t>();
    hq.values = hq_buffer.data<int8_t>();
    xnn::quantize_rows(m, k, xp, k, xq, ctx.pool());
    Tensor ha = ctx.scratch(DType::F32, {tokens, block}), hg = ctx.scratch(DType::F32, {tokens, block});
    ChunkSum sum(ctx, yp, m * nn);
    for (int64_t j0 = 0; j0 < h; j0 += block) {
        const int64_t j1 = std::min(h, j0 + block);
        const size_t w = static_cast<size_t>(j1 - j0);
        for (const bool gate : {false, true}) {
            const int64_t r0 = gate ? h + j0 : j0, r1 = r0 + (j1 - j0);
            const Tensor rows = ctx.is_streamed(kW1) ? ctx.read_weight_rows(kW1, r0, r1) : Tensor();
            const uint8_t *stored =
                rows.empty() ? ctx.input(kW1).data<uint8_t>() + r0 * l1.row_bytes() : rows.data<uint8_t>();
            int4_fully_connected(ctx, kW1, r0, stored, r0, r1 - r0, l1, 0, l1.k, b1 ? b1 + r0 : nullptr, w)
                ->run(m, xq, (gate ? hg : ha).data<float>(), ctx.pool());
        }
        geglu_in_place(ctx, ha.data<float>(), hg.data<float>(), m * w, tanh_approx);
        xnn::quantize_rows(m, w, ha.data<float>(), w, hq, ctx.pool());
        int4_fully_connected(ctx, kW2, j0, w2.data<uint8_t>(), 0, n, l2, j0, j1, j0 == 0 ? b2 : nullptr, nn)
            ->run(m, hq, sum.target(j0 == 0), ctx.pool());
        sum.add(j0 == 0);
    }
    ctx.count_int8();
}

// Rows [r0, r1) of int8 weight input wi: read from the provider when the weight streams, else a view into it.
const int8_t *int8_rows(const RunContext &ctx, size_t wi, int64_t r0, int64_t r1, Tensor &holder) {
    if (ctx.is_streamed(wi)) {
        holder = ctx.read_weight_rows(wi, r0, r1);
        return holder.data<int8_t>();
    }
    return ctx.input(wi).data<int8_t>() + r0 * ctx.input(wi).dim(1);
}

// The block loop of run_geglu_ffn in int8 arithmetic: x is quantized row by row once for every block of W1,
// and each block's GEGLU activations row by row for that block's rows of W2 (the [K, N] chunks of a MatMul
// weight, computed the same way). Returns false, having written nothing, when this CPU has no such kernel.
bool run_blocks_int8(const RunContext &ctx, const float *xp, size_t m, int64_t c, int64_t h, int64_t n,
                     int64_t block, const float *b1, const float *b2, bool tanh_approx, float *yp) {
    const float *s1 = ctx.input(kW1).quant().channel_scales->data();
    const float *s2 = ctx.input(kW2).quant().channel_scales->data();
    const size_t k = static_cast<size_t>(c), nn = static_cast<size_t>(n);
    const auto tokens = static_cast<int64_t>(m);
    Tensor xq_buffer = ctx.scratch(DType::I8, {static_cast<int64_t>(m * k + xnn::kQuantizedSlack)});
    Tensor hq_buffer = ctx.scratch(DType::I8, {static_cast<int64_t>(m) * block + static_cast<int64_t>(xnn::kQuantizedSlack)});
    xnn::QuantizedRows xq, hq;
    xq.values = xq_buffer.data<int8_t>();
    hq.values = hq_buffer.data<int8_t>();
    Tensor ha = ctx.scratch(DType::F32, {tokens, block}), hg = ctx.scratch(DType::F32, {tokens, block});
    ChunkSum sum(ctx, yp, m * static_cast<size_t>(n));
    for (int64_t j0 = 0; j0 < h; j0 += block) {
        const int64_t j1 = std::min(h, j0 + block);
        const size_t w = static_cast<size_t>(j1 - j0);
        for (const bool gate : {false, true}) {
            const int64_t r0 = gate ? h + j0 : j0;
            Tensor rows;
            xnn::PackingScope packing(ctx.options().packed_store, ctx.packing_key(kW1, r0));
            auto fc = xnn::FullyConnectedQd8::create(k, w, int8_rows(ctx, kW1, r0, r0 + (j1 - j0), rows), false,
                                                     s1 + r0, b1 ? b1 + r0 : nullptr, w);
            if (!fc) return false; // only the first block can get here: nothing written yet
            if (j0 == 0 && !gate) xnn::quantize_rows(m, k, xp, k, xq, ctx.pool());
            fc->run(m, xq, (gate ? hg : ha).data<float>(), ctx.pool());
        }
        geglu_in_place(ctx, ha.data<float>(), hg.data<float>(), m * w, tanh_approx);
        xnn::quantize_rows(m, w, ha.data<float>(), w, hq, ctx.pool());
        Tensor rows;
        xnn::PackingScope packing(ctx.options().packed_store, ctx.packing_key(kW2, j0));
        auto fc = xnn::FullyConnectedQd8::create(w, nn, int8_rows(ctx, kW2, j0, j1, rows), true, s2,
                                                 j0 == 0 ? b2 : nullptr, nn);
        if (!fc) return false; // as above
        fc->run(m, hq, sum.target(j0 == 0), ctx.pool());
        sum.add(j0 == 0);
    }
    ctx.count_int8();
    return true;
}

void run_geglu_ffn(RunContext &ctx) {
    const Tensor &x = ctx.input(kX);
    // An int4 W2 is held as its N stored rows (tensor/int4_blocks.h); W1's stored rows are its 2H rows either way.
    const bool int4 = ctx.input(kW2).quant().blockwise();
    const int64_t c = x.shape().back(), h = ctx.input(kW1).dim(0) / 2,
                  n = int4 ? ctx.input(kW2).quant().logical_shape[1] : ctx.input(kW2).dim(1);
    const int64_t tokens = c > 0 ? x.numel() / c : 0;
    Tensor &y = ctx.alloc_output(0);
    Tensor y_holder;
    float *yp = out_f32(ctx, y, y_holder);
    Tensor b1_holder, b2_holder;
    const float *b1 = bias_f32(ctx, kB1, b1_holder), *b2 = bias_f32(ctx, kB2, b2_holder);
    if (tokens == 0 || n == 0) {
        if (!y_holder.empty()) store_f32_output(ctx, y, y_holder);
        return;
    }
    if (h == 0 || c == 0) { // y = b2 (or 0) for every token
        for (int64_t t = 0; t < tokens; ++t)
            for (int64_t j = 0; j < n; ++j) yp[t * n + j] = b2 ? b2[j] : 0.0f;
        if (!y_holder.empty()) store_f32_output(ctx, y, y_holder);
        return;
    }
    Tensor x_holder;
    const float *xp = as_f32(ctx, x, x_holder);
    const bool tanh_approx = ctx.attrs().get_string("approximate", "none") == "tanh";
    if (int4) {
        // Whole int4 blocks of hidden columns (H is a multiple of the block: the weights' layout says so).
        const int64_t quantum = ctx.input(kW2).quant().block;
        int64_t block = block_width(ctx, tokens, h, c, n, true);
        block = std::max(quantum, block - block % quantum);
        run_blocks_int4(ctx, xp, static_cast<size_t>(tokens), h, n, block, b1, b2, tanh_approx, yp);
        if (!y_holder.empty()) store_f32_output(ctx, y, y_holder);
        return;
    }
    if (int8_arithmetic(ctx, h, n) && run_blocks_int8(ctx, xp, static_cast<size_t>(tokens), c, h, n,
                                                      block_width(ctx, tokens, h, c, n, true), b1, b2, tanh_approx, yp)) {
        if (!y_holder.empty()) store_f32_output(ctx, y, y_holder);
        return;
    }
    const int64_t block = block_width(ctx, tokens, h, c, n, false);
    Tensor w1_holder, w2_holder;
    const float *w1_whole = whole_f32(ctx, kW1, w1_holder), *w2_whole = whole_f32(ctx, kW2, w2_holder);
    const size_t m = static_cast<size_t>(tokens);
    Tensor ha = ctx.scratch(DType::F32, {tokens, block}), hg = ctx.scratch(DType::F32, {tokens, block});
    ChunkSum sum(ctx, yp, m * static_cast<size_t>(n));
    for (int64_t j0 = 0; j0 < h; j0 += block) {
        const int64_t j1 = std::min(h, j0 + block), bw = j1 - j0;
        const size_t k = static_cast<size_t>(c), w = static_cast<size_t>(bw);
        {
            RowBlock wa = weight_rows(ctx, kW1, w1_whole, j0, j1);
            xnn::PackingScope packing(ctx.options().packed_store, ctx.packing_key(kW1, j0));
            xnn::FullyConnectedF32(k, w, wa.data, false, b1 ? b1 + j0 : nullptr, k, w)
                .run(m, xp, ha.data<float>(), ctx.pool());
        }
        {
            RowBlock wg = weight_rows(ctx, kW1, w1_whole, h + j0, h + j1);
            xnn::PackingScope packing(ctx.options().packed_store, ctx.packing_key(kW1, h + j0));
            xnn::FullyConnectedF32(k, w, wg.data, false, b1 ? b1 + h + j0 : nullptr, k, w)
                .run(m, xp, hg.data<float>(), ctx.pool());
        }
        geglu_in_place(ctx, ha.data<float>(), hg.data<float>(), m * w, tanh_approx);
        RowBlock w2 = weight_rows(ctx, kW2, w2_whole, j0, j1);
        const size_t nn = static_cast<size_t>(n);
        {
            xnn::PackingScope packing(ctx.options().packed_store, ctx.packing_key(kW2, j0));
            xnn::FullyConnectedF32(w, nn, w2.data, true, j0 == 0 ? b2 : nullptr, w, nn)
                .run(m, ha.data<float>(), sum.target(j0 == 0), ctx.pool());
        }
        sum.add(j0 == 0);
    }
    if (!y_holder.empty()) store_f32_output(ctx, y, y_holder);
}

} // namespace

void register_feed_forward_ops(Registry &r) {
    // Weights reach XNNPACK only as packed FC weights; W1 (input 1) and W2 (input 3) stream in row chunks.
    r.add("GegluFeedForward", infer_geglu_ffn, run_geglu_ffn)
        .with_reads_weights_exactly(1u << kW1 | 1u << kB1 | 1u << kW2 | 1u << kB2)
        .with_f32_weight_mask(1u << kW1 | 1u << kB1 | 1u << kW2 | 1u << kB2)
        .with_weights_read_only_to_pack(1u << kW1 | 1u << kW2)
        .with_streamable_weight_input(kW1)
        .with_streamable_weight_mask(1u << kW2);
}

} // namespace onnxstream

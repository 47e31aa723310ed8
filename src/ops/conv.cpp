// Conv and ConvTranspose (1-D and 2-D) on NCHW activations, computed by XNNPACK in NHWC: the input is
// transposed to NHWC, the kernel runs, and the result is transposed back - unless the layout plan keeps
// the input or output channels-last (Layout::NHWC), which is then read or written as is. float16
// tensors are computed in float32, or for Conv in float16 when the model's arithmetic is FP16.
// ConvTranspose over 3 spatial axes has a loop of its own (deconv_direct).
#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ops/column_blocks.h"
#include "ops/conv_paired.h"
#include "ops/layout.h"
#include "ops/matmul_kernels.h"
#include "ops/quantize.h"
#include "ops/registry.h"
#include "ops/window_geometry.h"
#include "tensor/half.h"
#include "util/strings.h"
#include "xnnpack/conv.h"
#include "xnnpack/dynamic_quant.h"
#include "xnnpack/weights_cache.h"

namespace onnxstream {

namespace {

using window::AutoPad;
using window::ConvGeometry;
using window::kMaxGeometry;

template <typename... Args>[[noreturn]] void invalid(const std::string &where, Args &&...args) {
    fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": ", std::forward<Args>(args)...);
}

// NCHW (any float dtype) -> NHWC float32, readable XNN_EXTRA_BYTES past its end.
const float *input_nhwc(const RunContext &ctx, const Tensor &x, size_t n, size_t c, size_t hw,
                        Tensor &holder) {
    Tensor f32_holder;
    const float *src = as_f32(ctx, x, f32_holder);
    // Channels-last already (the layout plan), or a layout where both orders are the same bytes.
    const bool same_order = c == 1 || hw == 1 || x.layout() == Layout::NHWC;
    if (same_order) {
        holder = f32_holder;
        return src;
    }
    holder = ctx.scratch(DType::F32, {static_cast<int64_t>(n * c * hw)});
    if (same_order)
        std::memcpy(holder.data<float>(), src, n * c * hw * sizeof(float));
    else {
        nchw_to_nhwc(src, holder.data<float>(), n, c, hw, ctx.pool());
        ctx.count_transpose();
    }
    return holder.data<float>();
}

// Where the kernel writes its NHWC float32 result: the output itself when no transpose or conversion is
// needed, else scratch that finish_output() moves into the output.
// With RunContext::output_nhwc(0) the output stays channels-last (marked Layout::NHWC).
float *output_nhwc(RunContext &ctx, Tensor &y, size_t c, size_t hw, Tensor &holder) {
    if (ctx.output_nhwc(0)) y.set_layout(Layout::NHWC);
    if (y.dtype() == DType::F32 && (c == 1 || hw == 1 || y.layout() == Layout::NHWC)) return y.data<float>();
    holder = ctx.scratch(DType::F32, y.shape());
    return holder.data<float>();
}

void finish_output(const RunContext &ctx, Tensor &y, size_t n, size_t c, size_t hw, const Tensor &holder) {
    if (holder.empty()) return;
    if (c == 1 || hw == 1 || y.layout() == Layout::NHWC) {
        // Only a float16 output gets here: NHWC is what y holds, just convert.
        store_f32_output(ctx, y, holder);
        return;
    }
    Tensor staged;
    nhwc_to_nchw(holder.data<float>(), out_f32(ctx, y, staged), n, c, hw, ctx.pool());
    ctx.count_transpose();
    store_f32_output(ctx, y, staged);
}

// A prepared XNNPACK convolution kept between runs when the model allows it (RunContext::state) and the
// kernel and bias are weights. A node's weights do not change while its state lives (the model drops
// every state when they could: a LoRA, calibration, another provider), but its geometry may: padding
// computed from the input size (auto_pad) makes a different operator.
struct ConvState {
    xnn::Conv2dShape geometry; // batch and input size aside: an operator runs on any
    bool has_bias = false;
    std::shared_ptr<xnn::Conv2dOperator> op;
    std::shared_ptr<xnn::Conv2dF16Operator> op16; // float16 arithmetic
    // Operators of chunk_rows output channels (a streamed weight's chunks, blocks of a big one), each in
    // parts of chunk_inputs input channels: chunk by chunk, the parts of a chunk in order.
    int64_t chunk_rows = 0;
    size_t chunk_inputs = 0;
    std::vector<std::shared_ptr<xnn::Conv2dOperator>> chunks;
};

bool same_geometry(const xnn::Conv2dShape &a, const xnn::Conv2dShape &b) {
    return a.kernel_h == b.kernel_h && a.kernel_w == b.kernel_w && a.stride_h == b.stride_h &&
           a.stride_w == b.stride_w && a.dilation_h == b.dilation_h && a.dilation_w == b.dilation_w &&
           a.pad_top == b.pad_top && a.pad_left == b.pad_left && a.pad_bottom == b.pad_bottom &&
           a.pad_right == b.pad_right && a.groups == b.groups && a.group_in == b.group_in &&
           a.group_out == b.group_out && a.output_pixel_stride == b.output_pixel_stride &&
           a.input_pixel_stride == b.input_pixel_stride;
}

// The node's kept state for a convolution of geometry s, a fresh one when it has none or one of another
// geometry; null when nothing may be kept (no slot, or the kernel or bias is computed at run time).
std::shared_ptr<ConvState> kept_conv_state(const RunContext &ctx, const xnn::Conv2dShape &s) {
    std::shared_ptr<void> *slot = ctx.state();
    if (!slot || !ctx.input_is_weight(1) || (ctx.has_input(2) && !ctx.input_is_weight(2))) return nullptr;
    auto state = std::static_pointer_cast<ConvState>(*slot);
    if (!state || !same_geometry(state->geometry, s) || state->has_bias != ctx.has_input(2)) {
        state = std::make_shared<ConvState>();
        state->geometry = s;
        state->has_bias = ctx.has_input(2);
        *slot = state;
    }
    return state;
}

// The operator packed before under `key` (a packed-weights file), created without reading or converting its
// kernel; null when the store does not hold it.
std::shared_ptr<xnn::Conv2dOperator> stored_conv(const RunContext &ctx, uint64_t key, const xnn::Conv2dShape &s,
                                                 bool has_bias) {
    xnn::PackingScope lookup(ctx.options().packed_store, key);
    return xnn::Conv2dOperator::from_store(lookup, s, has_bias);
}

// Runs the whole-weight convolution, through the node's kept operator when it may keep one. `kernel`
// gives the OHWI float32 kernel; it is only asked for when an operator is created, so a kept one costs
// no conversion of its weight.
void run_conv(const RunContext &ctx, const xnn::Conv2dShape &s, const std::function<Tensor()> &kernel,
              const float *bias, const float *in, float *out) {
    xnn::Conv2dShape paired;
    const bool pairs = paired_columns_shape(s, paired); // conv_paired.h: the same output memory
    const xnn::Conv2dShape &shape = pairs ? paired : s;
    std::shared_ptr<ConvState> kept = kept_conv_state(ctx, shape);
    std::shared_ptr<xnn::Conv2dOperator> op = kept ? kept->op : nullptr;
    if (!op) op = stored_conv(ctx, ctx.packing_key(1), shape, bias != nullptr);
    if (op && kept) kept->op = op;
    if (!op) {
        xnn::PackingScope packing(ctx.options().packed_store, ctx.packing_key(1));
        const Tensor k = kernel();
        if (pairs) {
            const size_t kernel_floats = 2 * s.group_out * s.kernel_h * paired.kernel_w * s.group_in;
            Tensor k2 = ctx.scratch(DType::F32, {static_cast<int64_t>(kernel_floats)});
            Tensor b2 = bias ? ctx.scratch(DType::F32, {static_cast<int64_t>(2 * s.group_out)}) : Tensor();
            float *b2_data = bias ? b2.data<float>() : nullptr;
            paired_columns_kernel(s, k.data<float>(), bias, k2.data<float>(), b2_data);
            op = std::make_shared<xnn::Conv2dOperator>(paired, k2.data<float>(), b2_data);
        } else {
            op = std::make_shared<xnn::Conv2dOperator>(s, k.data<float>(), bias);
        }
        if (kept) kept->op = op;
    }
    op->run(s.batch, s.in_h, s.in_w, in, out, ctx.pool());
    if (kept) op->release_weight_pages();
}

// The float32 convolution in operators of `rows` output channels (the last one fewer), each writing its
// slice of every output pixel, and of `inputs` input channels (column_blocks.h, input_channel_part): the
// first part of a chunk writes the output with the bias, the others a partial sum added to it. Kernel rows
// are read chunk by chunk from a streamed weight, sliced from the whole OHWI kernel (read once, only if
// some operator must be packed) otherwise.
void run_conv_chunks(const RunContext &ctx, const xnn::Conv2dShape &s, size_t pixels, int64_t rows,
                     size_t inputs, const float *bias, const float *in, float *out) {
    const int64_t m = static_cast<int64_t>(s.groups * s.group_out);
    const size_t taps = size_t(s.kernel_h) * s.kernel_w, row_floats = taps * s.group_in;
    const size_t parts = (s.group_in + inputs - 1) / inputs;
    std::shared_ptr<ConvState> kept = kept_conv_state(ctx, s);
    if (kept && (kept->chunk_rows != rows || kept->chunk_inputs != inputs)) {
        kept->chunks.clear();
        kept->chunk_rows = rows;
        kept->chunk_inputs = inputs;
    }
    Tensor whole, part_kernel;
    for (int64_t o0 = 0, index = 0; o0 < m; o0 += rows) {
        const int64_t o1 = std::min(m, o0 + rows);
        const size_t width = static_cast<size_t>(o1 - o0);
        ChunkSum sum(ctx, out + o0, pixels, width, static_cast<size_t>(m));
        Tensor kernel_rows;
        const float *kernel = nullptr; // the chunk's OHWI rows, read when one of its parts must be packed
        for (size_t part = 0, i0 = 0; part < parts; ++part, i0 += inputs, ++index) {
            const size_t used = std::min(inputs, s.group_in - i0);
            xnn::Conv2dShape shape = s;
            shape.group_out = width / s.groups;
            shape.group_in = used;
            shape.input_pixel_stride = parts > 1 ? s.group_in : 0;
            shape.output_pixel_stride = part == 0 ? static_cast<size_t>(m) : width;
            const float *part_bias = part == 0 && bias ? bias + o0 : nullptr;
            const uint64_t key = ctx.packing_key(1, o0, i0);
            std::shared_ptr<xnn::Conv2dOperator> op;
            if (kept && static_cast<size_t>(index) < kept->chunks.size()) op = kept->chunks[static_cast<size_t>(index)];
            if (!op) {
                op = stored_conv(ctx, key, shape, part_bias != nullptr);
                if (!op) {
                    xnn::PackingScope packing(ctx.options().packed_store, key);
                    if (!kernel && ctx.is_streamed(1)) {
                        kernel_rows = ctx.kernel_weight(1, ctx.read_weight_rows(1, o0, o1), o0);
                        kernel = kernel_rows.data<float>();
                    } else if (!kernel) {
                        if (whole.empty()) whole = ctx.kernel_weight(1, ctx.input(1), 0);
                        kernel = whole.data<float>() + static_cast<size_t>(o0) * row_floats;
                    }
                    const float *part_rows = kernel;
                    if (parts > 1) { // this part's input channels of every kernel row and tap
                        if (part_kernel.empty())
                            part_kernel = ctx.scratch(DType::F32, {static_cast<int64_t>(size_t(rows) * taps * inputs)});
                        float *to = part_kernel.data<float>();
                        for (size_t r = 0; r < width * taps; ++r)
                            std::copy_n(kernel + r * s.group_in + i0, used, to + r * used);
                        part_rows = to;
                    }
                    op = std::make_shared<xnn::Conv2dOperator>(shape, part_rows, part_bias);
                }
                if (kept) kept->chunks.push_back(op);
            }
            op->run(s.batch, s.in_h, s.in_w, in + i0, sum.target(part == 0), ctx.pool());
            sum.add(part == 0);
            if (kept) op->release_weight_pages();
        }
    }
}

// float16 arithmetic (RunOptions::fp16_arithmetic) for a float16 input: activations stay float16 through
// XNNPACK's f16 convolution (no float32 copies); float16 weights are used as they are, float32 ones (the
// persistent cache widens float16 weights, onnxstream-convert keeps some float32) through
// XNN_FLAG_FP32_STATIC_WEIGHTS. Streamed weights run chunk by chunk like the float32 path. Returns false
// with nothing written when the op must compute in float32: 8-bit weights, or no f16 kernels on this CPU
// (counted as a fallback; the model logs it once).
bool conv_run_f16(RunContext &ctx, const xnn::Conv2dShape &s, size_t m, size_t out_hw, Tensor &y) {
    const Tensor &x = ctx.input(0), &w = ctx.input(1);
    if (w.dtype() != DType::F16 && w.dtype() != DType::F32) return false;
    const bool w32 = w.dtype() == DType::F32;
    const DType wd = w.dtype();
    const size_t esize = w32 ? sizeof(float) : sizeof(uint16_t);
    const size_t n = s.batch, c = s.groups * s.group_in, in_hw = s.in_h * s.in_w;
    // Kernel rows (starting at first_row) in OHWI, in the weight's dtype.
    auto ohwi = [&](const Tensor &rows, int64_t first_row, Tensor &holder) -> const void * {
        holder = ctx.kernel_weight(1, rows, first_row, wd);
        return holder.raw();
    };
    // XNNPACK takes kernel and bias in one dtype: a bias of the other one is converted (it is small).
    Tensor b_holder;
    const void *bias = nullptr;
    if (ctx.has_input(2)) {
        const Tensor &b = ctx.input(2);
        bias = b.raw();
        if (b.dtype() != wd) {
            b_holder = ctx.scratch(wd, b.shape());
            const size_t count = static_cast<size_t>(b.numel());
            if (w32) half_to_float_n(b.data<uint16_t>(), b_holder.data<float>(), count);
            else float_to_half_n(b.data<float>(), b_holder.data<uint16_t>(), count);
            bias = b_holder.raw();
        }
    }
    const char *bias_bytes = static_cast<const char *>(bias);

    // Operators first: a CPU without f16 kernels is found out before anything is staged or written.
    std::shared_ptr<xnn::Conv2dF16Operator> whole;
    std::vector<std::unique_ptr<xnn::Conv2dF16Operator>> chunks;
    std::vector<int64_t> chunk_begin;
    if (!ctx.is_streamed(1)) {
        std::shared_ptr<ConvState> kept = kept_conv_state(ctx, s);
        whole = kept ? kept->op16 : nullptr;
        if (!whole) {
            Tensor k_holder;
            whole = xnn::Conv2dF16Operator::create(s, ohwi(w, 0, k_holder), bias, w32);
            if (kept) kept->op16 = whole;
        }
    }
    auto run_chunks = [&](const uint16_t *in, uint16_t *out) {
        // Output-channel chunks, each writing its slice of every output pixel (grouped convolutions read
        // their weight in one piece, as in the float32 path).
        const int64_t rows = s.groups == 1 ? ctx.weight_chunk_rows(1, w32) : static_cast<int64_t>(m);
        for (int64_t o0 = 0; o0 < static_cast<int64_t>(m); o0 += rows) {
            const int64_t o1 = std::min<int64_t>(static_cast<int64_t>(m), o0 + rows);
            Tensor chunk = ctx.read_weight_rows(1, o0, o1), k_holder;
            xnn::Conv2dShape part = s;
            part.group_out = static_cast<size_t>(o1 - o0) / s.groups;
            part.output_pixel_stride = m;
            auto op = xnn::Conv2dF16Operator::create(part, ohwi(chunk, o0, k_holder),
                                                     bias ? bias_bytes + static_cast<size_t>(o0) * esize : nullptr, w32);
            if (!op) return false; // only the first chunk can get here: f16 support does not change mid-run
            op->run(n, s.in_h, s.in_w, in, out + o0, ctx.pool());
        }
        return true;
    };
    if (!ctx.is_streamed(1) && !whole) {
        ctx.count_fp16(false);
        return false;
    }

    // NCHW float16 -> NHWC (readable past its end for XNNPACK).
    Tensor in_holder, out_holder;
    const bool in_same = c == 1 || in_hw == 1 || x.layout() == Layout::NHWC;
    const uint16_t *in = x.data<uint16_t>();
    if (!in_same) {
        in_holder = ctx.scratch(DType::F16, {static_cast<int64_t>(n * c * in_hw)});
        if (in_same) {
            std::memcpy(in_holder.raw(), x.raw(), x.byte_size());
        } else {
            transpose_batched_u16(in, in_holder.data<uint16_t>(), n, c, in_hw, ctx.pool());
            ctx.count_transpose();
        }
        in = in_holder.data<uint16_t>();
    }
    if (ctx.output_nhwc(0)) y.set_layout(Layout::NHWC);
    const bool out_same = m == 1 || out_hw == 1 || y.layout() == Layout::NHWC;
    uint16_t *out = y.data<uint16_t>();
    if (!out_same) {
        out_holder = ctx.scratch(DType::F16, y.shape());
        out = out_holder.data<uint16_t>();
    }
    if (whole) {
        whole->run(n, s.in_h, s.in_w, in, out, ctx.pool());
        if (ctx.state()) whole->release_weight_pages();
    } else if (!run_chunks(in, out)) {
        ctx.count_fp16(false);
        return false;
    }
    if (!out_same) {
        transpose_batched_u16(out, y.data<uint16_t>(), n, out_hw, m, ctx.pool());
        ctx.count_transpose();
    }
    ctx.count_fp16(true);
    return true;
}

// Shared tail of Conv and ConvTranspose inference: check the optional bias, build the output shape.
std::vector<TensorInfo> conv_output_info(const InferContext &ctx, const ConvGeometry &g) {
    if (ctx.has_input(2)) {
        ctx.require_dtype(2, {DType::F32, DType::F16});
        const Shape &b = ctx.input(2).shape;
        if (b.size() != 1 || b[0] != g.out_channels)
            ctx.error("bias has shape ", shape_str(b), ", expected (", g.out_channels, ")");
    }
    Shape out = {g.batch, g.out_channels};
    out.insert(out.end(), g.out.begin(), g.out.end());
    return {{ctx.input(0).dtype, out, {}}};
}

std::vector<TensorInfo> conv_infer(const InferContext &ctx) {
    ctx.require_inputs(2, 3);
    ctx.require_dtype(0, {DType::F32, DType::F16});
    if (!is_float_weight_dtype(ctx.input(1).dtype, ctx.input(1).quant.present))
        ctx.error("weight has dtype ", dtype_name(ctx.input(1).dtype),
                  ", expected float32, float16, or uint8/int8 with quantization parameters");
    const TensorInfo &x = ctx.input(0), &w = ctx.input(1);
    return conv_output_info(ctx, window::conv_geometry(ctx.attrs(), ctx.node.where, x.shape, w.shape, window::kConvNames));
}

namespace {

// Output rows per band of a convolution computed in int8 (conv_run_int8).
constexpr size_t kInt8BandRows = 2;

// An image cut into horizontal bands of output rows for int8 arithmetic: each band's input rows (the rows
// its kernel reaches, zero rows where it reaches into the top or bottom padding) are one batch item of
// XNNPACK's convolution, which takes one scale and zero point per batch item. Small bands keep a few large
// activations from coarsening the scale of the whole image. `out_rows` is the largest divisor of the output
// height up to kInt8BandRows, so every band has the same size.
struct Int8Bands {
    size_t out_rows = 1, in_rows = 1, per_image = 1;
};

Int8Bands int8_bands(const xnn::Conv2dShape &s) {
    const size_t reach = static_cast<size_t>(s.kernel_h - 1) * s.dilation_h + 1;
    const size_t out_h = (s.in_h + s.pad_top + s.pad_bottom - reach) / s.stride_h + 1;
    size_t b = std::min(kInt8BandRows, out_h);
    while (out_h % b != 0) --b;
    return {b, (b - 1) * s.stride_h + reach, out_h / b};
}

// A 1x1 convolution with stride 1 and no padding: a fully connected layer over the pixels.
bool is_pointwise(const xnn::Conv2dShape &s) {
    return s.kernel_h == 1 && s.kernel_w == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_top == 0 &&
           s.pad_bottom == 0 && s.pad_left == 0 && s.pad_right == 0;
}

// Quantizes every band of every image into q (batch items of bands.in_rows rows each).
void quantize_bands(const xnn::Conv2dShape &s, const Int8Bands &bands, const float *in, xnn::QuantizedRows &q,
                    pthreadpool_t pool) {
    const size_t row = s.in_w * s.groups * s.group_in;
    const size_t items = s.batch * bands.per_image;
    q.params.assign(items + xnn::kQuantizedParamsSlack, xnn::QuantizedRows::Params{0, 1.0f});
    xnn::RowQuantizer quantizer;
    for (size_t image = 0; image < s.batch; ++image) {
        for (size_t band = 0; band < bands.per_image; ++band) {
            const size_t item = image * bands.per_image + band;
            int8_t *dst = q.values + item * bands.in_rows * row;
            const int64_t top = static_cast<int64_t>(band * bands.out_rows * s.stride_h) - s.pad_top;
            const int64_t lo = std::max<int64_t>(top, 0);
            const int64_t hi = std::min<int64_t>(top + static_cast<int64_t>(bands.in_rows), static_cast<int64_t>(s.in_h));
            const int64_t end = top + static_cast<int64_t>(bands.in_rows);
            if (hi <= lo) { // a band wholly in the padding: zeros, zero point 0
                std::memset(dst, 0, bands.in_rows * row);
                continue;
            }
            xnn::QuantizedRows::Params &p = q.params[item];
            quantizer.quantize(static_cast<size_t>(hi - lo) * row, in + (image * s.in_h + static_cast<size_t>(lo)) * row,
                               dst + static_cast<size_t>(lo - top) * row, p, pool);
            // Padding rows are zeros, which quantize exactly to the zero point.
            const int8_t zero = static_cast<int8_t>(p.zero_point);
            std::memset(dst, zero, static_cast<size_t>(lo - top) * row);
            std::memset(dst + static_cast<size_t>(hi - top) * row, zero, static_cast<size_t>(end - hi) * row);
        }
    }
}

} // namespace

// A per-channel int8 weight along the output channels (--quantize w8) in int8 arithmetic: the NHWC float32
// input is quantized when the op runs, pixel by pixel for a pointwise convolution, else in bands of output
// rows (Int8Bands), and the int8 kernel, reordered to OHWI if stored OIHW but never dequantized, is packed as
// it is. Streamed weights run in output-channel chunks like the float32 path, all on the one quantized
// input. Returns false, having written nothing, when the option is off or the build or the CPU has no such
// kernel (xnnpack/dynamic_quant.h).
bool conv_run_int8(const RunContext &ctx, const xnn::Conv2dShape &s, size_t m, const float *in, const float *bias,
                   float *out) {
    const Tensor &w = ctx.input(1);
    const QuantParams &q = w.quant();
    if (!ctx.options().int8_weight_arithmetic || !xnn::has_dynamic_quant_kernels() || w.dtype() != DType::I8 ||
        !q.present || q.axis != 0 || !q.channel_scales || q.channel_scales->size() != m)
        return false;
    const float *scales = q.channel_scales->data();
    xnn::Conv2dShape banded = s;
    Tensor xq_buffer;
    xnn::QuantizedRows xq;
    if (is_pointwise(s)) { // each pixel its own batch item: the pixel rows of a fully connected layer
        banded.batch = s.batch * s.in_h * s.in_w;
        banded.in_h = banded.in_w = 1;
        const size_t c = s.groups * s.group_in;
        xq_buffer = ctx.scratch(DType::I8, {static_cast<int64_t>(banded.batch * c + xnn::kQuantizedSlack)});
        xq.values = xq_buffer.data<int8_t>();
        xnn::quantize_rows(banded.batch, c, in, c, xq, ctx.pool());
    } else {
        const Int8Bands bands = int8_bands(s);
        banded.batch = s.batch * bands.per_image;
        banded.in_h = bands.in_rows;
        banded.pad_top = banded.pad_bottom = 0;
        const size_t item = bands.in_rows * s.in_w * s.groups * s.group_in;
        xq_buffer = ctx.scratch(DType::I8, {static_cast<int64_t>(banded.batch * item + xnn::kQuantizedSlack)});
        xq.values = xq_buffer.data<int8_t>();
        quantize_bands(s, bands, in, xq, ctx.pool());
    }
    if (!ctx.is_streamed(1)) {
        xnn::PackingScope packing(ctx.options().packed_store, ctx.packing_key(1));
        const Tensor kernel = ctx.kernel_weight(1, w, 0, DType::I8);
        if (!xnn::conv2d_nhwc_qd8(banded, xq, kernel.data<int8_t>(), scales, bias, out, ctx.pool())) return false;
    } else {
        const int64_t rows = s.groups == 1 ? ctx.weight_chunk_rows(1, /*float_bytes=*/false) : static_cast<int64_t>(m);
        for (int64_t o0 = 0; o0 < static_cast<int64_t>(m); o0 += rows) {
            const int64_t o1 = std::min<int64_t>(static_cast<int64_t>(m), o0 + rows);
            xnn::PackingScope packing(ctx.options().packed_store, ctx.packing_key(1, o0));
            const Tensor kernel_rows = ctx.kernel_weight(1, ctx.read_weight_rows(1, o0, o1), o0, DType::I8);
            xnn::Conv2dShape part = banded;
            part.group_out = static_cast<size_t>(o1 - o0) / s.groups;
            part.output_pixel_stride = m;
            // Only the first chunk can fail (kernel support does not change mid-run): nothing written yet.
            if (!xnn::conv2d_nhwc_qd8(part, xq, kernel_rows.data<int8_t>(), scales + o0, bias ? bias + o0 : nullptr,
                                      out + o0, ctx.pool()))
                return false;
        }
    }
    ctx.count_int8();
    return true;
}

void conv_run(RunContext &ctx) {
    if (run_conv_w8a8(ctx)) return; // static W8A8 when the node has activation ranges
    const Tensor &x = ctx.input(0), &w = ctx.input(1);
    ConvGeometry g = window::conv_geometry(ctx.attrs(), ctx.node.where, x.shape(), w.shape(), window::kConvNames);
    Tensor &y = ctx.alloc_output(0);
    if (y.numel() == 0) return;
    const bool two_d = g.spatial == 2;
    const size_t n = static_cast<size_t>(g.batch), c = static_cast<size_t>(g.in_channels);
    const size_t m = static_cast<size_t>(g.out_channels);
    const size_t in_h = two_d ? static_cast<size_t>(g.in[0]) : 1, in_w = static_cast<size_t>(g.in.back());
    const size_t out_hw = static_cast<size_t>(shape_numel(g.out));
    const size_t group_in = c / static_cast<size_t>(g.group);

    xnn::Conv2dShape s;
    s.batch = n;
    s.in_h = in_h;
    s.in_w = in_w;
    auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
    const size_t a = two_d ? 1 : 0; // index of the width axis
    s.kernel_w = u32(g.kernel[a]);
    s.stride_w = u32(g.strides[a]);
    s.dilation_w = u32(g.dilations[a]);
    s.pad_left = u32(g.pad_begin[a]);
    s.pad_right = u32(g.pad_end[a]);
    if (two_d) {
        s.kernel_h = u32(g.kernel[0]);
        s.stride_h = u32(g.strides[0]);
        s.dilation_h = u32(g.dilations[0]);
        s.pad_top = u32(g.pad_begin[0]);
        s.pad_bottom = u32(g.pad_end[0]);
    }
    s.groups = u32(g.group);
    s.group_in = group_in;
    s.group_out = m / static_cast<size_t>(g.group);
    if (ctx.options().fp16_arithmetic && x.dtype() == DType::F16 && conv_run_f16(ctx, s, m, out_hw, y)) return;

    Tensor b_holder;
    const float *bias = ctx.has_input(2) ? as_f32(ctx, ctx.input(2), b_holder) : nullptr;
    Tensor in_holder, out_holder;
    const float *in = input_nhwc(ctx, x, n, c, in_h * in_w, in_holder);
    float *out = output_nhwc(ctx, y, m, out_hw, out_holder);
    // Kernel rows (output channels) in OHWI float32: OnnxStream's "_nhwc.bin" float32 weights arrive that
    // way and are used as they are; the rest is converted and reordered in one pass.
    if (conv_run_int8(ctx, s, m, in, bias, out)) {
        // computed in int8 arithmetic
    } else {
        // Output-channel chunks, each a convolution writing its slice of every output pixel: a streamed
        // weight's chunks, and a whole weight bigger than half of a thread's L2 in blocks that fit it
        // (column_blocks.h). Grouped convolutions read their weight in one piece (they are small). When the
        // model keeps prepared kernels, the chunks' operators are kept from run to run, like a whole
        // weight's (run_conv), and a kept chunk's rows are not read again.
        const bool streamed = ctx.is_streamed(1);
        int64_t rows = static_cast<int64_t>(m);
        size_t inputs = group_in;
        if (g.group == 1) {
            const size_t taps = size_t(s.kernel_h) * s.kernel_w;
            inputs = input_channel_part(taps, group_in, channel_block_l2_bytes());
            rows = static_cast<int64_t>(output_channel_block(n * out_hw, taps * inputs, m, channel_block_l2_bytes()));
            if (streamed) rows = std::min(rows, ctx.weight_chunk_rows(1));
        }
        if (!streamed && rows >= static_cast<int64_t>(m) && inputs == group_in)
            run_conv(ctx, s, [&] { return ctx.kernel_weight(1, w, 0); }, bias, in, out);
        else
            run_conv_chunks(ctx, s, n * out_hw, rows, inputs, bias, in, out);
    }
    finish_output(ctx, y, n, m, out_hw, out_holder);
}

// ConvTranspose: the output index o along an axis maps to index o + pad_begin of the "full" transposed
// convolution, whose length is stride*(in-1) + dilated kernel; positions outside it get the bias only.
struct DeconvGeometry : ConvGeometry {
    std::vector<int64_t> full;
};

DeconvGeometry deconv_geometry(const Attributes &attrs, const std::string &where, const Shape &x,
                               const Shape &w) {
    window::check_ranks(where, x, w, window::kConvTransposeNames, 3);
    DeconvGeometry g;
    g.spatial = x.size() - 2;
    g.batch = x[0];
    g.in_channels = x[1];
    g.group = attrs.get_int("group", 1);
    if (g.group < 1) invalid(where, "group is ", g.group, ", expected >= 1");
    if (w[0] != g.in_channels)
        invalid(where, "input has ", g.in_channels, " channels but the weight ", shape_str(w), " expects ",
                w[0]);
    if (g.in_channels % g.group != 0)
        invalid(where, "input channels ", g.in_channels, " are not divisible by group ", g.group);
    if (w[0] == 0 || w[1] == 0) invalid(where, "weight has shape ", shape_str(w), " with a zero dimension");
    g.out_channels = w[1] * g.group;
    window::read_window_attrs(attrs, where, g, w, window::kConvTransposeNames);
    const AutoPad ap = window::parse_auto_pad(attrs, where);
    std::vector<int64_t> out_pad = window::per_axis(attrs, where, "output_padding", g.spatial, 0, 0, kMaxGeometry);
    std::vector<int64_t> out_shape = attrs.get_ints("output_shape", {});
    if (!out_shape.empty() && out_shape.size() != g.spatial && out_shape.size() != g.spatial + 2)
        invalid(where, "output_shape has ", out_shape.size(), " values, expected ", g.spatial);
    if (out_shape.size() == g.spatial + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
    g.in.assign(x.begin() + 2, x.end());
    g.out.resize(g.spatial);
    g.full.resize(g.spatial);
    for (size_t i = 0; i < g.spatial; ++i) {
        const int64_t in = g.in[i], s = g.strides[i], dk = (g.kernel[i] - 1) * g.dilations[i] + 1;
        if (in < 1) invalid(where, "input has shape ", shape_str(x), ", spatial dimensions must be >= 1");
        g.full[i] = s * (in - 1) + dk;
        // Padding derived from a target size: an odd unit goes to the end for SAME_UPPER and to the start
        // otherwise (the ONNX text and ONNX Runtime 1.30; older ONNX Runtime releases had it reversed).
        auto distribute = [&](int64_t target) {
            const int64_t total = std::max<int64_t>(0, g.full[i] + out_pad[i] - target);
            g.pad_begin[i] = ap == AutoPad::SameUpper ? total / 2 : total - total / 2;
            g.pad_end[i] = total - g.pad_begin[i];
        };
        if (!out_shape.empty()) {
            if (out_shape[i] < 1) invalid(where, "output_shape value ", out_shape[i], " must be >= 1");
            distribute(out_shape[i]);
            g.out[i] = out_shape[i];
        } else {
            if (ap == AutoPad::SameUpper || ap == AutoPad::SameLower)
                distribute(in * s);
            else if (ap == AutoPad::Valid)
                g.pad_begin[i] = g.pad_end[i] = 0;
            g.out[i] = g.full[i] + out_pad[i] - g.pad_begin[i] - g.pad_end[i];
        }
        if (g.out[i] < 1)
            invalid(where, "spatial axis ", i, ": the output size ", g.out[i], " is not positive (pads ",
                    g.pad_begin[i], ",", g.pad_end[i], " exceed the transposed convolution's ", g.full[i],
                    ")");
        if (g.full[i] > kMaxGeometry || g.out[i] > kMaxGeometry || g.pad_begin[i] > kMaxGeometry)
            fail(ONNXSTREAM_ERR_UNSUPPORTED, where, ": spatial size or padding is too large");
    }
    return g;
}

std::vector<TensorInfo> deconv_infer(const InferContext &ctx) {
    ctx.require_inputs(2, 3);
    ctx.require_dtype(0, {DType::F32, DType::F16});
    ctx.require_dtype(1, {DType::F32, DType::F16});
    const TensorInfo &x = ctx.input(0), &w = ctx.input(1);
    return conv_output_info(ctx, deconv_geometry(ctx.attrs(), ctx.node.where, x.shape, w.shape));
}

// ConvTranspose over 3 spatial axes, which XNNPACK's deconvolution (2-D) cannot take, on NCDHW as it is:
// every input value scatters into the outputs its kernel taps reach, a row of the innermost axis at a time.
// One task per (image, output channel) plane, so the scatter needs no synchronisation. w is the ONNX-order
// float32 weight (C_in, M/group, k...).
void deconv_direct(const float *x, const float *w, const float *bias, float *y, const DeconvGeometry &g,
                   pthreadpool_t pool) {
    const size_t sp = g.spatial, last = sp - 1;
    const int64_t m = g.out_channels, group_in = g.in_channels / g.group, group_out = m / g.group;
    const int64_t in_size = shape_numel(g.in), out_size = shape_numel(g.out), taps = shape_numel(g.kernel);
    const int64_t in_w = g.in[last], out_w = g.out[last], s_w = g.strides[last], in_rows = in_size / in_w;
    std::vector<int64_t> out_strides(sp, 1);
    for (size_t a = last; a-- > 0;) out_strides[a] = out_strides[a + 1] * g.out[a + 1];
    // Multiply-adds per plane, taken factor by factor so that huge sizes cannot overflow.
    const size_t grain = 65536 / static_cast<size_t>(std::max<int64_t>(1, in_size)) /
                         static_cast<size_t>(std::max<int64_t>(1, group_in * taps));
    const size_t planes = static_cast<size_t>(g.batch * m);
    parallel_for(pool, planes, std::max<size_t>(1, grain), [&](size_t begin, size_t end) {
        std::vector<int64_t> tap(sp);
        for (size_t p = begin; p < end; ++p) {
            const int64_t b = static_cast<int64_t>(p) / m, oc = static_cast<int64_t>(p) % m;
            const int64_t first_in = oc / group_out * group_in;
            float *yp = y + static_cast<int64_t>(p) * out_size;
            std::fill(yp, yp + out_size, bias ? bias[oc] : 0.0f);
            for (int64_t t = 0; t < taps; ++t) {
                for (size_t a = sp, rem = static_cast<size_t>(t); a-- > 0;) {
                    tap[a] = static_cast<int64_t>(rem % static_cast<size_t>(g.kernel[a]));
                    rem /= static_cast<size_t>(g.kernel[a]);
                }
                // Innermost axis: input i reaches output i*s + off, inside the output for i in [lo, hi).
                const int64_t off = tap[last] * g.dilations[last] - g.pad_begin[last];
                const int64_t lo = off >= 0 ? 0 : (-off + s_w - 1) / s_w;
                const int64_t hi = std::min(in_w, out_w - 1 - off < 0 ? 0 : (out_w - 1 - off) / s_w + 1);
                if (lo >= hi) continue;
                for (int64_t r = 0; r < in_rows; ++r) {
                    int64_t out_row = 0, rem = r;
                    bool inside = true;
                    for (size_t a = last; a-- > 0 && inside;) {
                        const int64_t i = rem % g.in[a];
                        rem /= g.in[a];
                        const int64_t o = i * g.strides[a] + tap[a] * g.dilations[a] - g.pad_begin[a];
                        inside = o >= 0 && o < g.out[a];
                        out_row += o * out_strides[a];
                    }
                    if (!inside) continue;
                    float *yr = yp + out_row;
                    for (int64_t ci = 0; ci < group_in; ++ci) {
                        const int64_t c = first_in + ci;
                        const float wv = w[(c * group_out + oc % group_out) * taps + t];
                        const float *xr = x + ((b * g.in_channels + c) * in_rows + r) * in_w;
                        for (int64_t i = lo; i < hi; ++i) yr[i * s_w + off] += wv * xr[i];
                    }
                }
            }
        }
    });
}

void deconv_direct_run(RunContext &ctx, const DeconvGeometry &g, Tensor &y) {
    const Tensor &x = ctx.input(0), &w = ctx.input(1);
    Tensor x_holder, b_holder, y_holder;
    const float *in = as_f32(ctx, x, x_holder);
    const float *bias = ctx.has_input(2) ? as_f32(ctx, ctx.input(2), b_holder) : nullptr;
    const Tensor w32 = ctx.kernel_weight(1, w, 0);
    float *out = out_f32(ctx, y, y_holder);
    deconv_direct(in, w32.data<float>(), bias, out, g, ctx.pool());
    store_f32_output(ctx, y, y_holder);
}

void deconv_run(RunContext &ctx) {
    const Tensor &x = ctx.input(0), &w = ctx.input(1);
    DeconvGeometry g = deconv_geometry(ctx.attrs(), ctx.node.where, x.shape(), w.shape());
    Tensor &y = ctx.alloc_output(0);
    if (y.numel() == 0) return;
    if (g.spatial > 2) return deconv_direct_run(ctx, g, y);
    const bool two_d = g.spatial == 2;
    const size_t n = static_cast<size_t>(g.batch), c = static_cast<size_t>(g.in_channels);
    const size_t m = static_cast<size_t>(g.out_channels), groups = static_cast<size_t>(g.group);
    const size_t group_in = c / groups, group_out = m / groups;
    const size_t ksize = static_cast<size_t>(shape_numel(g.kernel));
    const size_t in_h = two_d ? static_cast<size_t>(g.in[0]) : 1, in_w = static_cast<size_t>(g.in.back());
    const size_t out_h = two_d ? static_cast<size_t>(g.out[0]) : 1, out_w = static_cast<size_t>(g.out.back());

    Tensor b_holder;
    const float *bias = ctx.has_input(2) ? as_f32(ctx, ctx.input(2), b_holder) : nullptr;

    // Per axis: the rows XNNPACK produces are full indices [pad_begin, pad_begin + rows), rows = the
    // part of the output inside the full convolution; the rest of the output (output_padding, an
    // output_shape beyond the full size) is bias. XNNPACK appends up to stride-1 such rows itself.
    struct Axis {
        int64_t rows = 1, crop_end = 0, adjust = 0;
    };
    auto plan_axis = [&](size_t i) {
        Axis ax;
        ax.rows = std::min(g.out[i], g.full[i] - g.pad_begin[i]);
        ax.crop_end = g.full[i] - g.pad_begin[i] - std::max<int64_t>(ax.rows, 0);
        const int64_t missing = g.out[i] - std::max<int64_t>(ax.rows, 0);
        if (ax.rows > 0 && missing < g.strides[i]) {
            ax.adjust = missing;
            ax.rows += missing;
        }
        return ax;
    };
    Axis ah = two_d ? plan_axis(0) : Axis{}, aw = plan_axis(g.spatial - 1);
    const bool any_rows = ah.rows > 0 && aw.rows > 0;
    const bool direct =
        any_rows && static_cast<size_t>(ah.rows) == out_h && static_cast<size_t>(aw.rows) == out_w;

    Tensor out_holder;
    float *out = output_nhwc(ctx, y, m, out_h * out_w, out_holder);
    if (!direct) {
        // Start from bias everywhere; the computed block is copied in below.
        for (size_t p = 0; p < n * out_h * out_w; ++p)
            for (size_t o = 0; o < m; ++o) out[p * m + o] = bias ? bias[o] : 0.0f;
    }
    if (any_rows) {
        // [C_in = g*gi][go][k] -> [g][go][k][gi]
        const Tensor w32 = ctx.kernel_weight(1, w, 0);
        Tensor k_holder = ctx.scratch(DType::F32, w.shape());
        transpose_batched(w32.data<float>(), k_holder.data<float>(), groups, group_in, group_out * ksize, ctx.pool());
        if (ctx.input_is_weight(1)) ctx.count_weight_copy(k_holder.byte_size());

        Tensor in_holder;
        const float *in = input_nhwc(ctx, x, n, c, in_h * in_w, in_holder);
        auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
        xnn::Deconv2dShape s;
        s.batch = n;
        s.in_h = in_h;
        s.in_w = in_w;
        const size_t a = g.spatial - 1;
        s.kernel_w = u32(g.kernel[a]);
        s.stride_w = u32(g.strides[a]);
        s.dilation_w = u32(g.dilations[a]);
        s.pad_left = u32(g.pad_begin[a]);
        s.pad_right = u32(aw.crop_end);
        s.adjustment_w = u32(aw.adjust);
        if (two_d) {
            s.kernel_h = u32(g.kernel[0]);
            s.stride_h = u32(g.strides[0]);
            s.dilation_h = u32(g.dilations[0]);
            s.pad_top = u32(g.pad_begin[0]);
            s.pad_bottom = u32(ah.crop_end);
            s.adjustment_h = u32(ah.adjust);
        }
        s.groups = u32(g.group);
        s.group_in = group_in;
        s.group_out = group_out;
        if (direct) {
            xnn::deconv2d_nhwc_f32(s, in, k_holder.data<float>(), bias, out, ctx.pool());
        } else {
            const size_t rh = static_cast<size_t>(ah.rows), rw = static_cast<size_t>(aw.rows);
            Tensor block = ctx.scratch(DType::F32, {static_cast<int64_t>(n * rh * rw * m)});
            xnn::deconv2d_nhwc_f32(s, in, k_holder.data<float>(), bias, block.data<float>(), ctx.pool());
            for (size_t b = 0; b < n; ++b)
                for (size_t r = 0; r < rh; ++r)
                    std::memcpy(out + ((b * out_h + r) * out_w) * m,
                                block.data<float>() + ((b * rh + r) * rw) * m, rw * m * sizeof(float));
        }
    }
    finish_output(ctx, y, n, m, out_h * out_w, out_holder);
}

} // namespace

void register_conv_ops(Registry &r) {
    r.add("Conv", conv_infer, conv_run)
        .with_kernels_kept_in_budget()
        .with_ohwi_weight_input(1)
        .with_f32_weight_mask(0b110)
        .with_reads_weights_exactly(0b110)
        .with_weights_read_only_to_pack(0b10)
        .with_streamable_weight_input(1)
        .with_nhwc(NhwcIo::Native);
    r.add("ConvTranspose", deconv_infer, deconv_run)
        .with_reads_weights_exactly(0b110)
        .with_f32_weight_mask(0b110)
        .with_nhwc(NhwcIo::Native);
}

} // namespace onnxstream

#include "xnnpack/dynamic_quant.h"

#include <cstddef>
#include <limits>

#include "util/error.h"
#include "xnnpack/compat.h"

namespace onnxstream::xnn {

// The one wrapper file that calls API-specific functions outside compat_*.cpp: these kernels exist only in
// the 2024 API, so the 2022 build compiles the fallbacks at the bottom instead of emulating them.
#if ONNXSTREAM_XNNPACK_2024

static_assert(sizeof(QuantizedRows::Params) == sizeof(xnn_quantization_params) &&
                  offsetof(xnn_quantization_params, zero_point) == offsetof(QuantizedRows::Params, zero_point) &&
                  offsetof(xnn_quantization_params, scale) == offsetof(QuantizedRows::Params, scale),
              "QuantizedRows::Params must be laid out as xnn_quantization_params");
static_assert(kQuantizedSlack >= XNN_EXTRA_BYTES, "kQuantizedSlack below XNN_EXTRA_BYTES");
static_assert(kQuantizedParamsSlack >= XNN_EXTRA_QUANTIZATION_PARAMS,
              "kQuantizedParamsSlack below XNN_EXTRA_QUANTIZATION_PARAMS");

namespace {
const xnn_quantization_params *xnn_params(const QuantizedRows &q) {
    return reinterpret_cast<const xnn_quantization_params *>(q.params.data());
}
} // namespace

bool has_dynamic_quant_kernels() { return true; }

void Qd8Deleter::operator()(struct xnn_operator *op) const { delete_operator(op); }

RowQuantizer::RowQuantizer() {
    ensure_initialized();
    xnn_operator_t raw = nullptr;
    check(xnn_create_convert_nc_f32_qd8(operator_flags(), &raw), "xnn_create_convert_nc_f32_qd8");
    op_.reset(raw);
}

void RowQuantizer::quantize(size_t rows, size_t channels, const float *x, size_t x_stride, int8_t *values,
                            QuantizedRows::Params *params, pthreadpool_t pool) {
    {
        KernelPrepareTimer timer;
        check(xnn_reshape_convert_nc_f32_qd8(op_.get(), rows, channels, x_stride, channels, pool),
              "xnn_reshape_convert_nc_f32_qd8");
        check(xnn_setup_convert_nc_f32_qd8(op_.get(), x, values, reinterpret_cast<xnn_quantization_params *>(params)),
              "xnn_setup_convert_nc_f32_qd8");
    }
    check(xnn_run_operator(op_.get(), pool), "xnn_run_operator");
}

void RowQuantizer::quantize(size_t count, const float *x, int8_t *values, QuantizedRows::Params &params,
                            pthreadpool_t pool) {
    QuantizedRows::Params padded[1 + kQuantizedParamsSlack] = {};
    quantize(1, count, x, count, values, padded, pool);
    params = padded[0];
}

void quantize_rows(size_t rows, size_t channels, const float *x, size_t x_stride, QuantizedRows &q,
                   pthreadpool_t pool) {
    q.params.assign(rows + kQuantizedParamsSlack, QuantizedRows::Params{0, 1.0f});
    if (rows == 0) return;
    RowQuantizer().quantize(rows, channels, x, x_stride, q.values, q.params.data(), pool);
}

std::unique_ptr<FullyConnectedQd8> FullyConnectedQd8::create(size_t k, size_t n, const int8_t *weight,
                                                             bool weight_kn, const float *scales,
                                                             const float *bias, size_t y_stride) {
    ensure_initialized();
    const float inf = std::numeric_limits<float>::infinity();
    const uint32_t flags = (weight_kn ? XNN_FLAG_TRANSPOSE_WEIGHTS : 0) | operator_flags();
    xnn_operator_t op = nullptr;
    const enum xnn_status status = create_operator(xnn_create_fully_connected_nc_qd8_f32_qc8w, "xnn_create_fully_connected_nc_qd8_f32_qc8w", &op, k, n, k,
                                                   y_stride, scales, weight, bias, -inf, inf, flags);
    if (status == xnn_status_unsupported_hardware) return nullptr;
    check(status, "xnn_create_fully_connected_nc_qd8_f32_qc8w");
    std::unique_ptr<FullyConnectedQd8> fc(new FullyConnectedQd8());
    fc->op_.reset(op);
    return fc;
}

std::unique_ptr<FullyConnectedQd8> FullyConnectedQd8::create_int4(size_t k, size_t n, size_t block,
                                                                  const uint8_t *codes, const uint16_t *scales,
                                                                  const float *bias, size_t y_stride) {
    ensure_initialized();
    const float inf = std::numeric_limits<float>::infinity();
    xnn_operator_t op = nullptr;
    const enum xnn_status status =
        create_operator(xnn_create_fully_connected_nc_qd8_f32_qb4w, "xnn_create_fully_connected_nc_qd8_f32_qb4w", &op,
                        k, n, k, y_stride, block, static_cast<uint8_t>(8), scales, static_cast<const void *>(codes),
                        bias, -inf, inf, operator_flags());
    if (status == xnn_status_unsupported_hardware) return nullptr;
    check(status, "xnn_create_fully_connected_nc_qd8_f32_qb4w");
    std::unique_ptr<FullyConnectedQd8> fc(new FullyConnectedQd8());
    fc->op_.reset(op);
    fc->int4_ = true;
    return fc;
}

void FullyConnectedQd8::run(size_t batch, const QuantizedRows &x, float *y, pthreadpool_t pool) const {
    if (batch == 0) return;
    {
        KernelPrepareTimer timer;
        if (int4_) {
            check(xnn_reshape_fully_connected_nc_qd8_f32_qb4w(op_.get(), batch, pool),
                  "xnn_reshape_fully_connected_nc_qd8_f32_qb4w");
            check(xnn_setup_fully_connected_nc_qd8_f32_qb4w(op_.get(), x.values, y, xnn_params(x)),
                  "xnn_setup_fully_connected_nc_qd8_f32_qb4w");
        } else {
            check(xnn_reshape_fully_connected_nc_qd8_f32_qc8w(op_.get(), batch, pool),
                  "xnn_reshape_fully_connected_nc_qd8_f32_qc8w");
            check(xnn_setup_fully_connected_nc_qd8_f32_qc8w(op_.get(), x.values, y, xnn_params(x)),
                  "xnn_setup_fully_connected_nc_qd8_f32_qc8w");
        }
    }
    check(xnn_run_operator(op_.get(), pool), "xnn_run_operator");
}

bool conv2d_nhwc_qd8(const Conv2dShape &s, const QuantizedRows &input, const int8_t *kernel, const float *scales,
                     const float *bias, float *output, pthreadpool_t pool) {
    ensure_initialized();
    const float inf = std::numeric_limits<float>::infinity();
    const size_t channels_in = s.groups * s.group_in;
    const size_t out_stride = s.output_pixel_stride ? s.output_pixel_stride : s.groups * s.group_out;
    xnn_operator_t raw = nullptr;
    const enum xnn_status st = create_operator(
        xnn_create_convolution2d_nhwc_qd8_f32_qc8w, "xnn_create_convolution2d_nhwc_qd8_f32_qc8w", &raw, s.pad_top, s.pad_right, s.pad_bottom, s.pad_left,
        s.kernel_h, s.kernel_w, s.stride_h, s.stride_w, s.dilation_h, s.dilation_w, s.groups, s.group_in,
        s.group_out, channels_in, out_stride, scales, kernel, bias, -inf, inf, operator_flags());
    if (st == xnn_status_unsupported_hardware) return false;
    check(st, "xnn_create_convolution2d_nhwc_qd8_f32_qc8w");
    Operator op(raw);
    Workspace ws;
    {
        KernelPrepareTimer timer;
        size_t ws_bytes = 0, ws_alignment = 0;
        check(xnn_reshape_convolution2d_nhwc_qd8_f32_qc8w(raw, s.batch, s.in_h, s.in_w, &ws_bytes, &ws_alignment,
                                                          nullptr, nullptr, pool),
              "xnn_reshape_convolution2d_nhwc_qd8_f32_qc8w");
        check(xnn_setup_convolution2d_nhwc_qd8_f32_qc8w(raw, ws.reserve(ws_bytes, ws_alignment), input.values,
                                                        output, xnn_params(input)),
              "xnn_setup_convolution2d_nhwc_qd8_f32_qc8w");
    }
    run(op, pool);
    return true;
}

#else // the 2022-02 API: no dynamically quantized kernels

bool has_dynamic_quant_kernels() { return false; }

void quantize_rows(size_t, size_t, const float *, size_t, QuantizedRows &, pthreadpool_t) {
    throw Error(ONNXSTREAM_ERR_UNSUPPORTED, "dynamically quantized kernels need XNNPACK's 2024 API");
}

void Qd8Deleter::operator()(struct xnn_operator *op) const { delete_operator(op); }

RowQuantizer::RowQuantizer() {
    throw Error(ONNXSTREAM_ERR_UNSUPPORTED, "dynamically quantized kernels need XNNPACK's 2024 API");
}

void RowQuantizer::quantize(size_t, size_t, const float *, size_t, int8_t *, QuantizedRows::Params *, pthreadpool_t) {}

void RowQuantizer::quantize(size_t, const float *, int8_t *, QuantizedRows::Params &, pthreadpool_t) {}

std::unique_ptr<FullyConnectedQd8> FullyConnectedQd8::create(size_t, size_t, const int8_t *, bool, const float *,
                                                             const float *, size_t) {
    return nullptr;
}

std::unique_ptr<FullyConnectedQd8> FullyConnectedQd8::create_int4(size_t, size_t, size_t, const uint8_t *,
                                                                  const uint16_t *, const float *, size_t) {
    return nullptr;
}

void FullyConnectedQd8::run(size_t, const QuantizedRows &, float *, pthreadpool_t) const {}

bool conv2d_nhwc_qd8(const Conv2dShape &, const QuantizedRows &, const int8_t *, const float *, const float *,
                     float *, pthreadpool_t) {
    return false;
}

#endif

} // namespace onnxstream::xnn

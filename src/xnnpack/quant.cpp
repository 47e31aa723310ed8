#include "xnnpack/quant.h"

#include "xnnpack/compat.h"

namespace onnxstream::xnn {

bool conv2d_nhwc_qu8(const Conv2dShape &s, const Qu8Params &q, const uint8_t *input, const uint8_t *kernel,
                     const int32_t *bias, uint8_t *output, pthreadpool_t pool) {
    ensure_initialized();
    const size_t channels_in = s.groups * s.group_in;
    const size_t out_stride = s.output_pixel_stride ? s.output_pixel_stride : s.groups * s.group_out;
    xnn_operator_t raw = nullptr;
    enum xnn_status st = create_operator(
        xnn_create_convolution2d_nhwc_qu8, "xnn_create_convolution2d_nhwc_qu8", &raw, s.pad_top, s.pad_right, s.pad_bottom, s.pad_left, s.kernel_h, s.kernel_w, s.stride_h, s.stride_w,
        s.dilation_h, s.dilation_w, s.groups, s.group_in, s.group_out, channels_in, out_stride,
        q.input_zero_point, q.input_scale, q.kernel_zero_point, q.kernel_scale, kernel, bias,
        q.output_zero_point, q.output_scale, uint8_t{0}, uint8_t{255}, operator_flags());
    if (st == xnn_status_unsupported_parameter) return false;
    check(st, "xnn_create_convolution2d_nhwc_qu8");
    Operator op(raw);
    Workspace ws;
    setup_conv2d_qu8(raw, ws, s.batch, s.in_h, s.in_w, input, output, pool);
    run(op, pool);
    return true;
}

bool conv2d_nhwc_qc8(const Conv2dShape &s, const Qc8Params &q, const int8_t *input, const int8_t *kernel,
                     const int32_t *bias, int8_t *output, pthreadpool_t pool) {
    ensure_initialized();
    const size_t channels_in = s.groups * s.group_in;
    const size_t out_stride = s.output_pixel_stride ? s.output_pixel_stride : s.groups * s.group_out;
    xnn_operator_t raw = nullptr;
    enum xnn_status st = create_operator(
        create_conv2d_qs8_qc8w, "create_conv2d_qs8_qc8w", &raw, s.pad_top, s.pad_right, s.pad_bottom, s.pad_left, s.kernel_h, s.kernel_w, s.stride_h, s.stride_w,
        s.dilation_h, s.dilation_w, s.groups, s.group_in, s.group_out, channels_in, out_stride,
        q.input_zero_point, q.input_scale, q.kernel_scales, kernel, bias, q.output_zero_point, q.output_scale,
        int8_t{-128}, int8_t{127}, operator_flags());
    if (st == xnn_status_unsupported_parameter || st == xnn_status_invalid_parameter) return false;
    check(st, "xnn_create_convolution2d_nhwc_qs8_qc8w (qc8)");
    Operator op(raw);
    Workspace ws;
    setup_conv2d_qs8_qc8w(raw, ws, s.batch, s.in_h, s.in_w, input, output, pool);
    run(op, pool);
    return true;
}

bool fully_connected_qu8(size_t k, size_t n, const Qu8Params &q, const uint8_t *weight, bool weight_kn,
                         const int32_t *bias, size_t batch, const uint8_t *x, uint8_t *y, size_t y_stride,
                         pthreadpool_t pool) {
    ensure_initialized();
    xnn_operator_t raw = nullptr;
    const uint32_t flags = (weight_kn ? XNN_FLAG_TRANSPOSE_WEIGHTS : 0) | operator_flags();
    enum xnn_status st = create_operator(
        xnn_create_fully_connected_nc_qu8, "xnn_create_fully_connected_nc_qu8", &raw, k, n, k, y_stride, q.input_zero_point, q.input_scale, q.kernel_zero_point, q.kernel_scale, weight, bias,
        q.output_zero_point, q.output_scale, uint8_t{0}, uint8_t{255}, flags);
    if (st == xnn_status_unsupported_parameter) return false;
    check(st, "xnn_create_fully_connected_nc_qu8");
    Operator op(raw);
    if (batch == 0) return true;
    setup_fully_connected_qu8(raw, batch, x, y, pool);
    run(op, pool);
    return true;
}

} // namespace onnxstream::xnn

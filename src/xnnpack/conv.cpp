#include "xnnpack/conv.h"

#include <limits>

#include "xnnpack/xnn.h"

namespace onnxstream::xnn {

void conv2d_nhwc_f32(const Conv2dShape &s, const float *input, const float *kernel, const float *bias,
                     float *output, pthreadpool_t pool) {
    ensure_initialized();
    const float inf = std::numeric_limits<float>::infinity();
    const size_t channels_in = s.groups * s.group_in, channels_out = s.groups * s.group_out;
    xnn_operator_t raw = nullptr;
    check(xnn_create_convolution2d_nhwc_f32(s.pad_top, s.pad_right, s.pad_bottom, s.pad_left, s.kernel_h,
                                            s.kernel_w, s.stride_h, s.stride_w, s.dilation_h, s.dilation_w,
                                            s.groups, s.group_in, s.group_out, channels_in, channels_out,
                                            kernel, bias, -inf, inf, 0, &raw),
          "xnn_create_convolution2d_nhwc_f32");
    Operator op(raw);
    check(xnn_setup_convolution2d_nhwc_f32(raw, s.batch, s.in_h, s.in_w, input, output, pool),
          "xnn_setup_convolution2d_nhwc_f32");
    run(op, pool);
}

void deconv2d_nhwc_f32(const Deconv2dShape &s, const float *input, const float *kernel, const float *bias,
                       float *output, pthreadpool_t pool) {
    ensure_initialized();
    const float inf = std::numeric_limits<float>::infinity();
    const size_t channels_in = s.groups * s.group_in, channels_out = s.groups * s.group_out;
    xnn_operator_t raw = nullptr;
    check(xnn_create_deconvolution2d_nhwc_f32(s.pad_top, s.pad_right, s.pad_bottom, s.pad_left, s.kernel_h,
                                              s.kernel_w, s.stride_h, s.stride_w, s.dilation_h, s.dilation_w,
                                              s.groups, s.group_in, s.group_out, channels_in, channels_out,
                                              kernel, bias, -inf, inf, 0, &raw),
          "xnn_create_deconvolution2d_nhwc_f32");
    Operator op(raw);
    check(xnn_setup_deconvolution2d_nhwc_f32(raw, s.batch, s.in_h, s.in_w, s.adjustment_h, s.adjustment_w,
                                             input, output, pool),
          "xnn_setup_deconvolution2d_nhwc_f32");
    run(op, pool);
}

} // namespace onnxstream::xnn

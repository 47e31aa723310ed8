// compat.h for XNNPACK's create/reshape/setup API (the 2024-11 snapshot of Debian 13): sizes go to
// xnn_reshape_*, buffers (and a convolution's workspace) to xnn_setup_*, and unary operators are one
// unary_elementwise operator with a kind.
#include "xnnpack/compat.h"

namespace onnxstream::xnn {

const char *api_description() { return "XNNPACK 2024-11 API (create, reshape, setup)"; }

namespace {
// Every convolution flavour has the same reshape/setup shapes, differing only in element types.
template <typename In, typename Out, typename Reshape, typename Setup>
void reshape_and_setup_conv(Reshape reshape, const char *reshape_name, Setup setup, const char *setup_name,
                            xnn_operator_t op, Workspace &ws, size_t batch, size_t in_h, size_t in_w,
                            const In *input, Out *output, pthreadpool_t pool) {
    size_t ws_bytes = 0, ws_alignment = 0;
    check(reshape(op, batch, in_h, in_w, &ws_bytes, &ws_alignment, /*output_height_out=*/nullptr,
                  /*output_width_out=*/nullptr, pool),
          reshape_name);
    check(setup(op, ws.reserve(ws_bytes, ws_alignment), input, output), setup_name);
}
} // namespace

#define ONNXSTREAM_XNN_CONV_FNS(suffix)                                                                      \
    xnn_reshape_convolution2d_nhwc_##suffix, "xnn_reshape_convolution2d_nhwc_" #suffix,                      \
        xnn_setup_convolution2d_nhwc_##suffix, "xnn_setup_convolution2d_nhwc_" #suffix

void setup_conv2d_f32(xnn_operator_t op, Workspace &ws, size_t batch, size_t in_h, size_t in_w, const float *input,
                      float *output, pthreadpool_t pool) {
    KernelPrepareTimer timer;
    reshape_and_setup_conv(ONNXSTREAM_XNN_CONV_FNS(f32), op, ws, batch, in_h, in_w, input, output, pool);
}

void setup_conv2d_f16(xnn_operator_t op, Workspace &ws, size_t batch, size_t in_h, size_t in_w, const void *input,
                      void *output, pthreadpool_t pool) {
    KernelPrepareTimer timer;
    reshape_and_setup_conv(ONNXSTREAM_XNN_CONV_FNS(f16), op, ws, batch, in_h, in_w, input, output, pool);
}

void setup_conv2d_qu8(xnn_operator_t op, Workspace &ws, size_t batch, size_t in_h, size_t in_w,
                      const uint8_t *input, uint8_t *output, pthreadpool_t pool) {
    KernelPrepareTimer timer;
    reshape_and_setup_conv(ONNXSTREAM_XNN_CONV_FNS(qu8), op, ws, batch, in_h, in_w, input, output, pool);
}

void setup_conv2d_qs8_qc8w(xnn_operator_t op, Workspace &ws, size_t batch, size_t in_h, size_t in_w,
                           const int8_t *input, int8_t *output, pthreadpool_t pool) {
    KernelPrepareTimer timer;
    reshape_and_setup_conv(ONNXSTREAM_XNN_CONV_FNS(qs8_qc8w), op, ws, batch, in_h, in_w, input, output, pool);
}

#undef ONNXSTREAM_XNN_CONV_FNS

void setup_deconv2d_f32(xnn_operator_t op, size_t batch, size_t in_h, size_t in_w, uint32_t adjustment_h,
                        uint32_t adjustment_w, const float *input, float *output, pthreadpool_t pool) {
    KernelPrepareTimer timer;
    check(xnn_reshape_deconvolution2d_nhwc_f32(op, batch, in_h, in_w, adjustment_h, adjustment_w,
                                               /*output_height_out=*/nullptr, /*output_width_out=*/nullptr, pool),
          "xnn_reshape_deconvolution2d_nhwc_f32");
    check(xnn_setup_deconvolution2d_nhwc_f32(op, input, output), "xnn_setup_deconvolution2d_nhwc_f32");
}

void setup_fully_connected_f32(xnn_operator_t op, size_t batch, const float *x, float *y, pthreadpool_t pool) {
    KernelPrepareTimer timer;
    check(xnn_reshape_fully_connected_nc_f32(op, batch, pool), "xnn_reshape_fully_connected_nc_f32");
    check(xnn_setup_fully_connected_nc_f32(op, x, y), "xnn_setup_fully_connected_nc_f32");
}

void setup_fully_connected_f16(xnn_operator_t op, size_t batch, const void *x, void *y, pthreadpool_t pool) {
    KernelPrepareTimer timer;
    check(xnn_reshape_fully_connected_nc_f16(op, batch, pool), "xnn_reshape_fully_connected_nc_f16");
    check(xnn_setup_fully_connected_nc_f16(op, x, y), "xnn_setup_fully_connected_nc_f16");
}

void setup_fully_connected_qu8(xnn_operator_t op, size_t batch, const uint8_t *x, uint8_t *y,
                               pthreadpool_t pool) {
    KernelPrepareTimer timer;
    check(xnn_reshape_fully_connected_nc_qu8(op, batch, pool), "xnn_reshape_fully_connected_nc_qu8");
    check(xnn_setup_fully_connected_nc_qu8(op, x, y), "xnn_setup_fully_connected_nc_qu8");
}

void run_softmax_f32(size_t rows, size_t channels, const float *x, float *y, pthreadpool_t pool) {
    xnn_operator_t raw = nullptr;
    check(xnn_create_softmax_nc_f32(operator_flags(), &raw), "xnn_create_softmax_nc_f32");
    Operator op(raw);
    check(xnn_reshape_softmax_nc_f32(raw, channels, channels, channels, rows, pool), "xnn_reshape_softmax_nc_f32");
    check(xnn_setup_softmax_nc_f32(raw, x, y), "xnn_setup_softmax_nc_f32");
    run(op, pool);
}

void run_unary_f32(UnaryKind kind, float param, const float *in, float *out, size_t n, pthreadpool_t pool) {
    enum xnn_unary_operator type = xnn_unary_invalid;
    union xnn_unary_params params {};
    const union xnn_unary_params *params_ptr = nullptr;
    switch (kind) {
    case UnaryKind::Abs: type = xnn_unary_abs; break;
    case UnaryKind::Negate: type = xnn_unary_negate; break;
    case UnaryKind::Floor: type = xnn_unary_floor; break;
    case UnaryKind::Ceiling: type = xnn_unary_ceiling; break;
    case UnaryKind::RoundEven: type = xnn_unary_bankers_rounding; break;
    case UnaryKind::Sigmoid: type = xnn_unary_sigmoid; break;
    case UnaryKind::HardSwish: type = xnn_unary_hardswish; break;
    case UnaryKind::LeakyRelu:
        type = xnn_unary_leaky_relu;
        params.leaky_relu.negative_slope = param;
        params_ptr = &params;
        break;
    case UnaryKind::Elu:
        type = xnn_unary_elu;
        params.elu.alpha = param;
        params_ptr = &params;
        break;
    }
    // One batch of n channels, as with the 2022 operators: XNNPACK splits the contiguous range itself.
    check(xnn_run_unary_elementwise_nc(type, xnn_datatype_fp32, xnn_datatype_fp32, params_ptr,
                                       /*input_quantization=*/nullptr, /*output_quantization=*/nullptr, operator_flags(),
                                       /*batch_size=*/1, n, n, n, pool, in, out),
          "xnn_run_unary_elementwise_nc");
}

} // namespace onnxstream::xnn

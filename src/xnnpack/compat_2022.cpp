// compat.h for the XNNPACK 2022-02 snapshot (Debian 12): setup takes the sizes and the buffers at once, and
// each unary operator has its own create/setup pair.
#include "xnnpack/compat.h"

namespace onnxstream::xnn {

const char *api_description() { return "XNNPACK 2022-02 API (create, setup)"; }

// The 2022 convolutions keep their scratch memory inside the operator: the workspace stays unused.
void setup_conv2d_f32(xnn_operator_t op, Workspace &, size_t batch, size_t in_h, size_t in_w, const float *input,
                      float *output, pthreadpool_t pool) {
    KernelPrepareTimer timer;
    check(xnn_setup_convolution2d_nhwc_f32(op, batch, in_h, in_w, input, output, pool),
          "xnn_setup_convolution2d_nhwc_f32");
}

void setup_conv2d_f16(xnn_operator_t op, Workspace &, size_t batch, size_t in_h, size_t in_w, const void *input,
                      void *output, pthreadpool_t pool) {
    KernelPrepareTimer timer;
    check(xnn_setup_convolution2d_nhwc_f16(op, batch, in_h, in_w, input, output, pool),
          "xnn_setup_convolution2d_nhwc_f16");
}

void setup_conv2d_qu8(xnn_operator_t op, Workspace &, size_t batch, size_t in_h, size_t in_w,
                      const uint8_t *input, uint8_t *output, pthreadpool_t pool) {
    KernelPrepareTimer timer;
    check(xnn_setup_convolution2d_nhwc_qu8(op, batch, in_h, in_w, input, output, pool),
          "xnn_setup_convolution2d_nhwc_qu8");
}

void setup_conv2d_qs8_qc8w(xnn_operator_t op, Workspace &, size_t batch, size_t in_h, size_t in_w,
                           const int8_t *input, int8_t *output, pthreadpool_t pool) {
    KernelPrepareTimer timer;
    check(xnn_setup_convolution2d_nhwc_qc8(op, batch, in_h, in_w, input, output, pool),
          "xnn_setup_convolution2d_nhwc_qc8");
}

void setup_deconv2d_f32(xnn_operator_t op, size_t batch, size_t in_h, size_t in_w, uint32_t adjustment_h,
                        uint32_t adjustment_w, const float *input, float *output, pthreadpool_t pool) {
    KernelPrepareTimer timer;
    check(xnn_setup_deconvolution2d_nhwc_f32(op, batch, in_h, in_w, adjustment_h, adjustment_w, input, output,
                                             pool),
          "xnn_setup_deconvolution2d_nhwc_f32");
}

void setup_fully_connected_f32(xnn_operator_t op, size_t batch, const float *x, float *y, pthreadpool_t pool) {
    KernelPrepareTimer timer;
    check(xnn_setup_fully_connected_nc_f32(op, batch, x, y, pool), "xnn_setup_fully_connected_nc_f32");
}

void setup_fully_connected_f16(xnn_operator_t op, size_t batch, const void *x, void *y, pthreadpool_t pool) {
    KernelPrepareTimer timer;
    check(xnn_setup_fully_connected_nc_f16(op, batch, x, y, pool), "xnn_setup_fully_connected_nc_f16");
}

void setup_fully_connected_qu8(xnn_operator_t op, size_t batch, const uint8_t *x, uint8_t *y,
                               pthreadpool_t pool) {
    KernelPrepareTimer timer;
    check(xnn_setup_fully_connected_nc_qu8(op, batch, x, y, pool), "xnn_setup_fully_connected_nc_qu8");
}

void run_softmax_f32(size_t rows, size_t channels, const float *x, float *y, pthreadpool_t pool) {
    xnn_operator_t raw = nullptr;
    check(xnn_create_softmax_nc_f32(channels, channels, channels, operator_flags(), &raw), "xnn_create_softmax_nc_f32");
    Operator op(raw);
    check(xnn_setup_softmax_nc_f32(raw, rows, x, y, pool), "xnn_setup_softmax_nc_f32");
    run(op, pool);
}

namespace {
// The nc unary operators, run as one batch of n channels: XNNPACK then splits the contiguous range itself.
using SetupFn = enum xnn_status (*)(xnn_operator_t, size_t, const float *, float *, pthreadpool_t);

void setup_and_run(enum xnn_status created, xnn_operator_t raw, const char *create_name, SetupFn setup,
                   const char *setup_name, const float *in, float *out, pthreadpool_t pool) {
    check(created, create_name);
    Operator guard(raw);
    check(setup(raw, 1, in, out, pool), setup_name);
    run(guard, pool);
}
} // namespace

// create_args: the parenthesised argument list of xnn_create_<name>_nc_f32.
#define ONNXSTREAM_XNN_UNARY(name, create_args)                                                              \
    do {                                                                                                     \
        const enum xnn_status created = xnn_create_##name##_nc_f32 create_args;                              \
        setup_and_run(created, raw, "xnn_create_" #name "_nc_f32", xnn_setup_##name##_nc_f32,                \
                      "xnn_setup_" #name "_nc_f32", in, out, pool);                                          \
    } while (0)

void run_unary_f32(UnaryKind kind, float param, const float *in, float *out, size_t n, pthreadpool_t pool) {
    xnn_operator_t raw = nullptr;
    switch (kind) {
    case UnaryKind::Abs: ONNXSTREAM_XNN_UNARY(abs, (n, n, n, operator_flags(), &raw)); break;
    case UnaryKind::Negate: ONNXSTREAM_XNN_UNARY(negate, (n, n, n, operator_flags(), &raw)); break;
    case UnaryKind::Floor: ONNXSTREAM_XNN_UNARY(floor, (n, n, n, operator_flags(), &raw)); break;
    case UnaryKind::Ceiling: ONNXSTREAM_XNN_UNARY(ceiling, (n, n, n, operator_flags(), &raw)); break;
    case UnaryKind::RoundEven: ONNXSTREAM_XNN_UNARY(bankers_rounding, (n, n, n, operator_flags(), &raw)); break;
    case UnaryKind::Sigmoid: ONNXSTREAM_XNN_UNARY(sigmoid, (n, n, n, operator_flags(), &raw)); break;
    case UnaryKind::HardSwish: ONNXSTREAM_XNN_UNARY(hardswish, (n, n, n, operator_flags(), &raw)); break;
    case UnaryKind::LeakyRelu: ONNXSTREAM_XNN_UNARY(leaky_relu, (n, n, n, param, operator_flags(), &raw)); break;
    case UnaryKind::Elu: ONNXSTREAM_XNN_UNARY(elu, (n, n, n, param, operator_flags(), &raw)); break;
    }
}

#undef ONNXSTREAM_XNN_UNARY

} // namespace onnxstream::xnn

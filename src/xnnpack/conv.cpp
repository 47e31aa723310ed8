#include "xnnpack/conv.h"

#include <limits>

#include <cpuinfo.h>

#include "xnnpack/compat.h"
#include "xnnpack/weights_cache.h"

namespace onnxstream::xnn {

size_t f32_conv_tile_columns() {
#if ONNXSTREAM_XNNPACK_2024 && (defined(__x86_64__) || defined(__i386__))
    static const size_t columns = cpuinfo_initialize() && cpuinfo_has_x86_avx512f() ? 32 : 0;
    return columns;
#else
    return 0;
#endif
}

struct Conv2dOperator::Impl {
    Operator op;
    Workspace workspace;
};

namespace {
enum xnn_status create_conv_f32(const Conv2dShape &s, const float *kernel, const float *bias, xnn_operator_t *out) {
    ensure_initialized();
    const float inf = std::numeric_limits<float>::infinity();
    const size_t channels_in = s.input_pixel_stride ? s.input_pixel_stride : s.groups * s.group_in;
    const size_t channels_out = s.output_pixel_stride ? s.output_pixel_stride : s.groups * s.group_out;
    return create_operator(xnn_create_convolution2d_nhwc_f32, "xnn_create_convolution2d_nhwc_f32", out, s.pad_top,
                           s.pad_right, s.pad_bottom, s.pad_left, s.kernel_h, s.kernel_w, s.stride_h, s.stride_w,
                           s.dilation_h, s.dilation_w, s.groups, s.group_in, s.group_out, channels_in, channels_out,
                           kernel, bias, -inf, inf, operator_flags());
}
} // namespace

Conv2dOperator::Conv2dOperator(const Conv2dShape &s, const float *kernel, const float *bias) {
    xnn_operator_t raw = nullptr;
    check(create_conv_f32(s, kernel, bias, &raw), "xnn_create_convolution2d_nhwc_f32");
    impl_ = std::make_unique<Impl>();
    impl_->op.reset(raw);
}

std::shared_ptr<Conv2dOperator> Conv2dOperator::from_store(PackingScope &packing, const Conv2dShape &s,
                                                           bool has_bias) {
    xnn_operator_t raw = nullptr;
    const bool created = create_from_store(packing, [&](const float *stand_in) {
        return create_conv_f32(s, stand_in, has_bias ? stand_in : nullptr, &raw) == xnn_status_success && raw;
    });
    if (!created) return nullptr;
    std::shared_ptr<Conv2dOperator> op(new Conv2dOperator());
    op->impl_ = std::make_unique<Impl>();
    op->impl_->op.reset(raw);
    return op;
}

Conv2dOperator::~Conv2dOperator() = default;

void Conv2dOperator::run(size_t batch, size_t in_h, size_t in_w, const float *input, float *output,
                         pthreadpool_t pool) {
    setup_conv2d_f32(impl_->op.get(), impl_->workspace, batch, in_h, in_w, input, output, pool);
    xnn::run(impl_->op, pool);
}

void Conv2dOperator::release_weight_pages() { idle_operator(impl_->op.get()); }

void conv2d_nhwc_f32(const Conv2dShape &s, const float *input, const float *kernel, const float *bias,
                     float *output, pthreadpool_t pool) {
    Conv2dOperator(s, kernel, bias).run(s.batch, s.in_h, s.in_w, input, output, pool);
}

struct Conv2dF16Operator::Impl {
    Operator op;
    Workspace workspace;
};

Conv2dF16Operator::Conv2dF16Operator() : impl_(std::make_unique<Impl>()) {}
Conv2dF16Operator::~Conv2dF16Operator() = default;

std::unique_ptr<Conv2dF16Operator> Conv2dF16Operator::create(const Conv2dShape &s, const void *kernel,
                                                             const void *bias, bool weights_f32) {
    ensure_initialized();
    const float inf = std::numeric_limits<float>::infinity();
    const size_t channels_in = s.groups * s.group_in;
    const size_t channels_out = s.output_pixel_stride ? s.output_pixel_stride : s.groups * s.group_out;
    xnn_operator_t raw = nullptr;
    const uint32_t flags = (weights_f32 ? XNN_FLAG_FP32_STATIC_WEIGHTS : 0) | operator_flags();
    const enum xnn_status status = create_operator(
        xnn_create_convolution2d_nhwc_f16, "xnn_create_convolution2d_nhwc_f16", &raw, s.pad_top, s.pad_right, s.pad_bottom, s.pad_left, s.kernel_h,
        s.kernel_w, s.stride_h, s.stride_w, s.dilation_h, s.dilation_w, s.groups, s.group_in, s.group_out,
        channels_in, channels_out, kernel, bias, -inf, inf, flags);
    if (status == xnn_status_unsupported_hardware) return nullptr;
    check(status, "xnn_create_convolution2d_nhwc_f16");
    std::unique_ptr<Conv2dF16Operator> op(new Conv2dF16Operator());
    op->impl_->op.reset(raw);
    return op;
}

void Conv2dF16Operator::run(size_t batch, size_t in_h, size_t in_w, const uint16_t *input, uint16_t *output,
                            pthreadpool_t pool) {
    setup_conv2d_f16(impl_->op.get(), impl_->workspace, batch, in_h, in_w, input, output, pool);
    xnn::run(impl_->op, pool);
}

void Conv2dF16Operator::release_weight_pages() { idle_operator(impl_->op.get()); }

void deconv2d_nhwc_f32(const Deconv2dShape &s, const float *input, const float *kernel, const float *bias,
                       float *output, pthreadpool_t pool) {
    ensure_initialized();
    const float inf = std::numeric_limits<float>::infinity();
    const size_t channels_in = s.groups * s.group_in, channels_out = s.groups * s.group_out;
    xnn_operator_t raw = nullptr;
    check(create_operator(xnn_create_deconvolution2d_nhwc_f32, "xnn_create_deconvolution2d_nhwc_f32", &raw, s.pad_top, s.pad_right, s.pad_bottom,
                          s.pad_left, s.kernel_h, s.kernel_w, s.stride_h, s.stride_w, s.dilation_h, s.dilation_w,
                          s.groups, s.group_in, s.group_out, channels_in, channels_out, kernel, bias, -inf, inf,
                          operator_flags()),
          "xnn_create_deconvolution2d_nhwc_f32");
    Operator op(raw);
    setup_deconv2d_f32(raw, s.batch, s.in_h, s.in_w, s.adjustment_h, s.adjustment_w, input, output, pool);
    run(op, pool);
}

} // namespace onnxstream::xnn

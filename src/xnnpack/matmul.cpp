#include "xnnpack/matmul.h"

#include <limits>

#include "xnnpack/compat.h"
#include "xnnpack/weights_cache.h"

namespace onnxstream::xnn {

void FcDeleter::operator()(struct xnn_operator *op) const { delete_operator(op); }

namespace {
enum xnn_status create_f32(xnn_operator_t *op, size_t k, size_t n, const float *weight, bool weight_kn,
                           const float *bias, size_t x_stride, size_t y_stride) {
    ensure_initialized();
    const float inf = std::numeric_limits<float>::infinity();
    const uint32_t flags = (weight_kn ? XNN_FLAG_TRANSPOSE_WEIGHTS : 0) | operator_flags();
    return create_operator(xnn_create_fully_connected_nc_f32, "xnn_create_fully_connected_nc_f32", op, k, n, x_stride,
                           y_stride, weight, bias, -inf, inf, flags);
}
} // namespace

FullyConnectedF32::FullyConnectedF32(size_t k, size_t n, const float *weight, bool weight_kn,
                                     const float *bias, size_t x_stride, size_t y_stride) {
    xnn_operator_t op = nullptr;
    check(create_f32(&op, k, n, weight, weight_kn, bias, x_stride, y_stride), "xnn_create_fully_connected_nc_f32");
    op_.reset(op);
}

std::shared_ptr<FullyConnectedF32> FullyConnectedF32::from_store(PackingScope &packing, size_t k, size_t n,
                                                                bool weight_kn, bool has_bias, size_t x_stride,
                                                                size_t y_stride) {
    xnn_operator_t op = nullptr;
    const bool created = create_from_store(packing, [&](const float *stand_in) {
        return create_f32(&op, k, n, stand_in, weight_kn, has_bias ? stand_in : nullptr, x_stride, y_stride) ==
                   xnn_status_success &&
               op;
    });
    if (!created) return nullptr;
    std::shared_ptr<FullyConnectedF32> fc(new FullyConnectedF32());
    fc->op_.reset(op);
    return fc;
}

void FullyConnectedF32::run(size_t batch, const float *x, float *y, pthreadpool_t pool) const {
    if (batch == 0) return;
    setup_fully_connected_f32(op_.get(), batch, x, y, pool);
    check(xnn_run_operator(op_.get(), pool), "xnn_run_operator");
}

std::unique_ptr<FullyConnectedF16> FullyConnectedF16::create(size_t k, size_t n, const void *weight, bool weight_kn,
                                                             const void *bias, bool weights_f32, size_t x_stride,
                                                             size_t y_stride) {
    ensure_initialized();
    const float inf = std::numeric_limits<float>::infinity();
    uint32_t flags = (weight_kn ? XNN_FLAG_TRANSPOSE_WEIGHTS : 0) | operator_flags();
    if (weights_f32) flags |= XNN_FLAG_FP32_STATIC_WEIGHTS;
    xnn_operator_t op = nullptr;
    const enum xnn_status status =
        create_operator(xnn_create_fully_connected_nc_f16, "xnn_create_fully_connected_nc_f16", &op, k, n, x_stride, y_stride, weight, bias, -inf, inf, flags);
    if (status == xnn_status_unsupported_hardware) return nullptr;
    check(status, "xnn_create_fully_connected_nc_f16");
    std::unique_ptr<FullyConnectedF16> fc(new FullyConnectedF16());
    fc->op_.reset(op);
    return fc;
}

void FullyConnectedF16::run(size_t batch, const uint16_t *x, uint16_t *y, pthreadpool_t pool) const {
    if (batch == 0) return;
    setup_fully_connected_f16(op_.get(), batch, x, y, pool);
    check(xnn_run_operator(op_.get(), pool), "xnn_run_operator");
}

void softmax_rows_f32(size_t rows, size_t channels, const float *x, float *y, pthreadpool_t pool) {
    if (rows == 0 || channels == 0) return;
    ensure_initialized();
    run_softmax_f32(rows, channels, x, y, pool);
}

} // namespace onnxstream::xnn

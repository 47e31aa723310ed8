#include "xnnpack/matmul.h"

#include <limits>

#include "xnnpack/xnn.h"

namespace onnxstream::xnn {

void FcDeleter::operator()(struct xnn_operator *op) const { xnn_delete_operator(op); }

FullyConnectedF32::FullyConnectedF32(size_t k, size_t n, const float *weight, bool weight_kn,
                                     const float *bias, size_t x_stride, size_t y_stride) {
    ensure_initialized();
    const float inf = std::numeric_limits<float>::infinity();
    xnn_operator_t op = nullptr;
    check(xnn_create_fully_connected_nc_f32(k, n, x_stride, y_stride, weight, bias, -inf, inf,
                                            weight_kn ? XNN_FLAG_TRANSPOSE_WEIGHTS : 0, &op),
          "xnn_create_fully_connected_nc_f32");
    op_.reset(op);
}

void FullyConnectedF32::run(size_t batch, const float *x, float *y, pthreadpool_t pool) const {
    if (batch == 0) return;
    check(xnn_setup_fully_connected_nc_f32(op_.get(), batch, x, y, pool), "xnn_setup_fully_connected_nc_f32");
    check(xnn_run_operator(op_.get(), pool), "xnn_run_operator");
}

void softmax_rows_f32(size_t rows, size_t channels, const float *x, float *y, pthreadpool_t pool) {
    if (rows == 0 || channels == 0) return;
    ensure_initialized();
    xnn_operator_t raw = nullptr;
    check(xnn_create_softmax_nc_f32(channels, channels, channels, 0, &raw), "xnn_create_softmax_nc_f32");
    Operator op(raw);
    check(xnn_setup_softmax_nc_f32(raw, rows, x, y, pool), "xnn_setup_softmax_nc_f32");
    run(op, pool);
}

} // namespace onnxstream::xnn

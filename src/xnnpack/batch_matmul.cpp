#include "xnnpack/batch_matmul.h"

#include <algorithm>

#include "xnnpack/compat.h"

namespace onnxstream::xnn {

// Built only against the 2024 API (src/xnnpack/meson.build), so the create/reshape/setup calls are made
// here directly instead of through compat_*.cpp.
#if !ONNXSTREAM_XNNPACK_2024
#error "batch_matmul.cpp needs XNNPACK's 2024 API"
#endif

struct BatchMatMulF32::Impl {
    Operator op;
    Workspace workspace;
};

BatchMatMulF32::BatchMatMulF32(bool b_nk) : impl_(std::make_unique<Impl>()) {
    ensure_initialized();
    xnn_operator_t raw = nullptr;
    const uint32_t flags = (b_nk ? XNN_FLAG_TRANSPOSE_B : 0) | operator_flags();
    check(xnn_create_batch_matrix_multiply_nc_f32(flags, &raw), "xnn_create_batch_matrix_multiply_nc_f32");
    impl_->op.reset(raw);
}

BatchMatMulF32::~BatchMatMulF32() = default;

void BatchMatMulF32::run(size_t batch, size_t m, size_t k, size_t n, const float *a, const float *b, float *y,
                         pthreadpool_t pool) {
    if (batch == 0 || m == 0 || n == 0) return;
    // An empty sum is zero, as matmul_f32 makes it; XNNPACK rejects k == 0.
    if (k == 0) {
        std::fill(y, y + batch * m * n, 0.0f);
        return;
    }
    {
        KernelPrepareTimer timer;
        size_t ws_bytes = 0, ws_alignment = 0;
        check(xnn_reshape_batch_matrix_multiply_nc_f32(impl_->op.get(), /*num_batch_dims=*/1, &batch, &batch, m, k,
                                                       n, &ws_bytes, &ws_alignment, pool),
              "xnn_reshape_batch_matrix_multiply_nc_f32");
        check(xnn_setup_batch_matrix_multiply_nc_f32(impl_->op.get(),
                                                     impl_->workspace.reserve(ws_bytes, ws_alignment), a, b, y),
              "xnn_setup_batch_matrix_multiply_nc_f32");
    }
    xnn::run(impl_->op, pool);
}

} // namespace onnxstream::xnn

#include "xnnpack/transpose.h"

#include "util/error.h"
#include "xnnpack/compat.h"

namespace onnxstream::xnn {

// Built only against the 2024 API (src/xnnpack/meson.build), so the create/reshape/setup calls are made
// here directly instead of through compat_*.cpp.
#if !ONNXSTREAM_XNNPACK_2024
#error "transpose.cpp needs XNNPACK's 2024 API"
#endif

struct TransposeX32::Impl {
    Operator op;
};

TransposeX32::TransposeX32() : impl_(std::make_unique<Impl>()) {
    ensure_initialized();
    xnn_operator_t raw = nullptr;
    check(xnn_create_transpose_nd_x32(operator_flags(), &raw), "xnn_create_transpose_nd_x32");
    impl_->op.reset(raw);
}

TransposeX32::~TransposeX32() = default;

void TransposeX32::run(const void *in, void *out, const std::vector<int64_t> &in_shape,
                       const std::vector<int64_t> &perm, pthreadpool_t pool) {
    if (perm.size() != in_shape.size())
        fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "transpose: ", perm.size(), " axes in perm for a rank-",
             in_shape.size(), " input");
    std::vector<size_t> shape(in_shape.size()), order(perm.size());
    size_t count = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
        if (in_shape[i] < 0 || perm[i] < 0 || static_cast<size_t>(perm[i]) >= shape.size())
            fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "transpose: bad dimension or axis at position ", i);
        shape[i] = static_cast<size_t>(in_shape[i]);
        order[i] = static_cast<size_t>(perm[i]);
        count *= shape[i];
    }
    // XNNPACK rejects zero-sized dimensions; an empty tensor has nothing to copy.
    if (count == 0) return;
    {
        KernelPrepareTimer timer;
        check(xnn_reshape_transpose_nd_x32(impl_->op.get(), shape.size(), shape.data(), order.data(), pool),
              "xnn_reshape_transpose_nd_x32");
        check(xnn_setup_transpose_nd_x32(impl_->op.get(), in, out), "xnn_setup_transpose_nd_x32");
    }
    xnn::run(impl_->op, pool);
}

} // namespace onnxstream::xnn

#include "xnnpack/elementwise.h"

#include "xnnpack/xnn.h"

namespace onnxstream::xnn {

namespace {
// The nc unary operators, run as one batch of n channels: XNNPACK then splits the contiguous range itself.
using CreateFn = enum xnn_status (*)(size_t, size_t, size_t, uint32_t, xnn_operator_t *);
using SetupFn = enum xnn_status (*)(xnn_operator_t, size_t, const float *, float *, pthreadpool_t);

void run_unary(xnn_operator_t raw, enum xnn_status created, const char *create_name, SetupFn setup,
               const char *setup_name, const float *in, float *out, pthreadpool_t pool) {
    check(created, create_name);
    Operator guard(raw);
    check(setup(raw, 1, in, out, pool), setup_name);
    run(guard, pool);
}

void simple_unary(CreateFn create, const char *create_name, SetupFn setup, const char *setup_name,
                  const float *in, float *out, size_t n, pthreadpool_t pool) {
    xnn_operator_t raw = nullptr;
    enum xnn_status s = create(n, n, n, 0, &raw);
    run_unary(raw, s, create_name, setup, setup_name, in, out, pool);
}
} // namespace

#define ONNXSTREAM_XNN_UNARY(name)                                                                           \
    xnn_create_##name##_nc_f32, "xnn_create_" #name "_nc_f32", xnn_setup_##name##_nc_f32,                    \
        "xnn_setup_" #name "_nc_f32"

void unary_f32(Unary op, const float *in, float *out, size_t n, pthreadpool_t pool) {
    if (n == 0) return;
    ensure_initialized();
    switch (op) {
    case Unary::Abs: simple_unary(ONNXSTREAM_XNN_UNARY(abs), in, out, n, pool); break;
    case Unary::Negate: simple_unary(ONNXSTREAM_XNN_UNARY(negate), in, out, n, pool); break;
    case Unary::SquareRoot: simple_unary(ONNXSTREAM_XNN_UNARY(square_root), in, out, n, pool); break;
    case Unary::Floor: simple_unary(ONNXSTREAM_XNN_UNARY(floor), in, out, n, pool); break;
    case Unary::Ceiling: simple_unary(ONNXSTREAM_XNN_UNARY(ceiling), in, out, n, pool); break;
    case Unary::RoundEven: simple_unary(ONNXSTREAM_XNN_UNARY(bankers_rounding), in, out, n, pool); break;
    case Unary::Sigmoid: simple_unary(ONNXSTREAM_XNN_UNARY(sigmoid), in, out, n, pool); break;
    case Unary::HardSwish: simple_unary(ONNXSTREAM_XNN_UNARY(hardswish), in, out, n, pool); break;
    }
}

#undef ONNXSTREAM_XNN_UNARY

void leaky_relu_f32(const float *in, float *out, size_t n, float slope, pthreadpool_t pool) {
    if (n == 0) return;
    ensure_initialized();
    xnn_operator_t raw = nullptr;
    enum xnn_status s = xnn_create_leaky_relu_nc_f32(n, n, n, slope, 0, &raw);
    run_unary(raw, s, "xnn_create_leaky_relu_nc_f32", xnn_setup_leaky_relu_nc_f32,
              "xnn_setup_leaky_relu_nc_f32", in, out, pool);
}

void elu_f32(const float *in, float *out, size_t n, float alpha, pthreadpool_t pool) {
    if (n == 0) return;
    ensure_initialized();
    xnn_operator_t raw = nullptr;
    enum xnn_status s = xnn_create_elu_nc_f32(n, n, n, alpha, 0, &raw);
    run_unary(raw, s, "xnn_create_elu_nc_f32", xnn_setup_elu_nc_f32, "xnn_setup_elu_nc_f32", in, out, pool);
}

} // namespace onnxstream::xnn

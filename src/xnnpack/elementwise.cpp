#include "xnnpack/elementwise.h"

#include "xnnpack/compat.h"

namespace onnxstream::xnn {

namespace {
UnaryKind kind_of(Unary op) {
    switch (op) {
    case Unary::Abs: return UnaryKind::Abs;
    case Unary::Negate: return UnaryKind::Negate;
    case Unary::Floor: return UnaryKind::Floor;
    case Unary::Ceiling: return UnaryKind::Ceiling;
    case Unary::RoundEven: return UnaryKind::RoundEven;
    case Unary::Sigmoid: return UnaryKind::Sigmoid;
    case Unary::HardSwish: return UnaryKind::HardSwish;
    }
    return UnaryKind::Abs; // unreachable: every enumerator is handled above
}
} // namespace

void unary_f32(Unary op, const float *in, float *out, size_t n, pthreadpool_t pool) {
    if (n == 0) return;
    ensure_initialized();
    run_unary_f32(kind_of(op), 0.0f, in, out, n, pool);
}

void leaky_relu_f32(const float *in, float *out, size_t n, float slope, pthreadpool_t pool) {
    if (n == 0) return;
    ensure_initialized();
    run_unary_f32(UnaryKind::LeakyRelu, slope, in, out, n, pool);
}

void elu_f32(const float *in, float *out, size_t n, float alpha, pthreadpool_t pool) {
    if (n == 0) return;
    ensure_initialized();
    run_unary_f32(UnaryKind::Elu, alpha, in, out, n, pool);
}

} // namespace onnxstream::xnn

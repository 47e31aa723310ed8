// HannWindow, HammingWindow and BlackmanWindow (opset 17): the cosine-sum windows
// y[i] = a0 - a1 cos(2 pi i / N) + a2 cos(4 pi i / N) of `size` samples, N = size (periodic, the default) or
// size - 1 (symmetric). The output length is the value of the scalar input `size`: known while planning when
// it is a weight (or pinned with --input-value), else taken from model.txt's declared shape and checked when
// the op runs. The sums run in double and convert once; integer output types truncate toward zero as ONNX
// Runtime's static_cast does.
#include <cmath>
#include <string>

#include "ops/registry.h"
#include "tensor/half.h"

namespace onnxstream {

namespace {

struct CosineSum {
    double a0, a1, a2;
};

constexpr double kPi = 3.14159265358979323846;

// Hamming's coefficients are 25/46 and 21/46 (ONNX's), not the rounded 0.54/0.46 of other libraries.
constexpr CosineSum kHann{0.5, 0.5, 0.0};
constexpr CosineSum kHamming{25.0 / 46.0, 21.0 / 46.0, 0.0};
constexpr CosineSum kBlackman{0.42, 0.5, 0.08};

// A window of more elements than this is a malformed size, not a request to allocate terabytes.
constexpr int64_t kMaxWindow = int64_t{1} << 40;

DType output_dtype(const std::string &where, int64_t onnx_type) {
    switch (onnx_type) {
    case 1: return DType::F32;
    case 10: return DType::F16;
    case 7: return DType::I64;
    case 6: return DType::I32;
    case 3: return DType::I8;
    case 2: return DType::U8;
    default:
        fail(ONNXSTREAM_ERR_UNSUPPORTED, where, ": output_datatype ", onnx_type,
             " is not supported; supported: 1 (float), 10 (float16), 7 (int64), 6 (int32), 3 (int8), 2 (uint8)");
    }
}

int64_t checked_size(const std::string &where, Status status, int64_t size) {
    // ONNX's shape inference (and so ONNX Runtime) rejects 0 too.
    if (size < 1) fail(status, where, ": size is ", size, "; a window has at least one sample");
    if (size > kMaxWindow) fail(status, where, ": size ", size, " is too large");
    return size;
}

std::vector<TensorInfo> window_infer(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    ctx.require_dtype(0, {DType::I64, DType::I32});
    const TensorInfo &size = ctx.input(0);
    if (shape_numel(size.shape) != 1 || size.shape.size() > 1)
        ctx.error("size must be a scalar, got shape ", shape_str(size.shape));
    const DType dt = output_dtype(ctx.node.where, ctx.attrs().get_int("output_datatype", 1));
    const int64_t periodic = ctx.attrs().get_int("periodic", 1);
    if (periodic != 0 && periodic != 1) ctx.error("periodic is ", periodic, "; expected 0 or 1");
    if (const Tensor *t = ctx.constant(0))
        return {TensorInfo{dt, {checked_size(ctx.node.where, ONNXSTREAM_ERR_INVALID_MODEL, int_at(*t, 0))}, {}}};
    const Shape &d = ctx.declared_shape(0);
    if (d.size() != 1) ctx.error("model.txt declares a rank-", d.size(), " output but windows are 1-D");
    TensorInfo out; // built field by field: GCC 14 warns (-Warray-bounds) on the aggregate's inlined copy of d
    out.dtype = dt;
    out.shape = d;
    return {out};
}

template <typename T> void store(Tensor &y, int64_t i, double v) { y.data<T>()[i] = static_cast<T>(v); }

void window_run(RunContext &ctx, const CosineSum &c) {
    const int64_t n = checked_size(ctx.node.where, ONNXSTREAM_ERR_INVALID_ARGUMENT, int_at(ctx.input(0), 0));
    const DType dt = ctx.output_info(0).dtype;
    Tensor &y = ctx.alloc_output(0, dt, {n});
    // A symmetric window of one sample divides by zero, as in ONNX Runtime and ONNX's own definition: NaN.
    const double denom = static_cast<double>(ctx.attrs().get_int("periodic", 1) ? n : n - 1);
    const double step = 2.0 * kPi / denom;
    for (int64_t i = 0; i < n; ++i) {
        const double a = step * static_cast<double>(i);
        const double v = c.a0 - c.a1 * std::cos(a) + (c.a2 == 0.0 ? 0.0 : c.a2 * std::cos(2.0 * a));
        switch (dt) {
        case DType::F32: store<float>(y, i, v); break;
        case DType::F16: y.data<uint16_t>()[i] = float_to_half(static_cast<float>(v)); break;
        case DType::I64: store<int64_t>(y, i, v); break;
        case DType::I32: store<int32_t>(y, i, v); break;
        case DType::I8: store<int8_t>(y, i, v); break;
        case DType::U8: store<uint8_t>(y, i, v); break;
        default: ctx.error(ONNXSTREAM_ERR_INTERNAL, "window of dtype ", dtype_name(dt));
        }
    }
}

void hann_run(RunContext &ctx) { window_run(ctx, kHann); }
void hamming_run(RunContext &ctx) { window_run(ctx, kHamming); }
void blackman_run(RunContext &ctx) { window_run(ctx, kBlackman); }

} // namespace

void register_window_function_ops(Registry &r) {
    r.add("HannWindow", window_infer, hann_run);
    r.add("HammingWindow", window_infer, hamming_run);
    r.add("BlackmanWindow", window_infer, blackman_run);
}

} // namespace onnxstream

// Cast and CastLike between every dtype (float to integer as x86's truncating conversions do it; float16 and
// bfloat16 staged through float32),
// Identity, and Dropout for inference.
#include "ops/elementwise.h"

#include <cstring>

#include "ops/elementwise_int.h"
#include "ops/registry.h"
#include "tensor/half.h"

namespace onnxstream {

namespace {

// Every dtype: the element-wise families' kAllTypes and bfloat16, which only Cast computes with.
const std::initializer_list<DType> kCastTypes = {DType::F32, DType::F16, DType::F64, DType::BF16, DType::I64,
                                                 DType::I32, DType::I16, DType::I8,  DType::U64,  DType::U32,
                                                 DType::U16, DType::U8,  DType::Bool};

std::vector<TensorInfo> infer_cast(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    ctx.require_dtype(0, kCastTypes);
    int64_t to = ctx.attrs().require_int("to");
    DType dtype;
    if (!dtype_from_onnx(to, dtype)) {
        if (to >= 1 && to <= 26)
            fail(ONNXSTREAM_ERR_UNSUPPORTED, ctx.node.where, ": cast to ONNX element type ", to,
                 " is not supported; supported: ", onnx_types_supported());
        ctx.error("attribute to is ", to, ", which is not an ONNX TensorProto element type");
    }
    return {TensorInfo{dtype, ctx.input(0).shape, {}}};
}

std::vector<TensorInfo> infer_cast_like(const InferContext &ctx) {
    ctx.require_inputs(2, 2);
    ctx.require_dtype(0, kCastTypes);
    ctx.require_dtype(1, kCastTypes);
    return {TensorInfo{ctx.input(1).dtype, ctx.input(0).shape, {}}};
}

// The 16-bit float types, converted through float32 in blocks.
struct HalfTag {};
struct BFloat16Tag {};
template <typename T> constexpr bool kStaged = std::is_same_v<T, HalfTag> || std::is_same_v<T, BFloat16Tag>;

void widen(HalfTag, const uint16_t *src, float *dst, size_t n) { half_to_float_n(src, dst, n); }
void widen(BFloat16Tag, const uint16_t *src, float *dst, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = bfloat16_to_float(src[i]);
}
void narrow(HalfTag, const float *src, uint16_t *dst, size_t n) { float_to_half_n(src, dst, n); }
void narrow(BFloat16Tag, const float *src, uint16_t *dst, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = float_to_bfloat16(src[i]);
}

template <typename D, typename S> D convert_value(S v) {
    if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>)
        return float_to_int<D>(double(v));
    else
        return static_cast<D>(v);
}

// Convert n elements from src (type S, or a 16-bit float tag) to dst (type D / tag).
template <typename S, typename D> void convert_range(const void *src, void *dst, size_t n, bool to_bool) {
    constexpr size_t kChunk = 1024;
    float buf[kChunk];
    for (size_t i = 0; i < n; i += kChunk) {
        const size_t len = std::min(kChunk, n - i);
        // Stage through float32 when either side is a 16-bit float.
        if constexpr (kStaged<S> || kStaged<D>) {
            if constexpr (kStaged<S>) {
                widen(S{}, static_cast<const uint16_t *>(src) + i, buf, len);
            } else {
                const S *s = static_cast<const S *>(src) + i;
                for (size_t j = 0; j < len; ++j) buf[j] = static_cast<float>(s[j]);
            }
            if constexpr (kStaged<D>) {
                narrow(D{}, buf, static_cast<uint16_t *>(dst) + i, len);
            } else {
                D *d = static_cast<D *>(dst) + i;
                if (to_bool)
                    for (size_t j = 0; j < len; ++j) d[j] = buf[j] != 0.0f;
                else
                    for (size_t j = 0; j < len; ++j) d[j] = convert_value<D>(buf[j]);
            }
        } else {
            const S *s = static_cast<const S *>(src) + i;
            D *d = static_cast<D *>(dst) + i;
            if (to_bool)
                for (size_t j = 0; j < len; ++j) d[j] = s[j] != 0;
            else
                for (size_t j = 0; j < len; ++j) d[j] = convert_value<D>(s[j]);
        }
    }
}

template <typename Fn> void dispatch_storage(DType d, Fn &&fn) {
    switch (d) {
    case DType::F32: fn(float{}); return;
    case DType::F16: fn(HalfTag{}); return;
    case DType::BF16: fn(BFloat16Tag{}); return;
    default: dispatch_exact(d, std::forward<Fn>(fn));
    }
}

void cast_into(RunContext &ctx, DType to) {
    const Tensor &x = ctx.input(0);
    if (x.dtype() == to) {
        ctx.set_output(0, x);
        return;
    }
    Tensor &out = ctx.alloc_output(0);
    const bool to_bool = to == DType::Bool;
    const size_t in_size = dtype_size(x.dtype()), out_size = dtype_size(to);
    const char *src = static_cast<const char *>(x.raw());
    char *dst = static_cast<char *>(out.raw());
    dispatch_storage(x.dtype(), [&](auto stag) {
        dispatch_storage(to, [&](auto dtag) {
            using S = decltype(stag);
            using D = decltype(dtag);
            parallel_for(ctx.pool(), static_cast<size_t>(x.numel()), kElementwiseTile,
                         [&](size_t b, size_t e) {
                             convert_range<S, D>(src + b * in_size, dst + b * out_size, e - b, to_bool);
                         });
        });
    });
}

void run_cast(RunContext &ctx) { cast_into(ctx, ctx.output_info(0).dtype); }

std::vector<TensorInfo> infer_identity(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    const TensorInfo &in = ctx.input(0);
    return {TensorInfo{in.dtype, in.shape, {}}};
}

void run_identity(RunContext &ctx) { ctx.set_output(0, ctx.input(0)); }

// Dropout for inference: the data unchanged and a mask of all true. Training mode drops at random unless
// the ratio is 0, so it is refused then (the importer removes a Dropout whose mask nobody reads).
std::vector<TensorInfo> infer_dropout(const InferContext &ctx) {
    ctx.require_inputs(1, 3);
    const TensorInfo &in = ctx.input(0);
    if (ctx.has_input(1) && (shape_numel(ctx.input(1).shape) != 1 || !is_float(ctx.input(1).dtype)))
        ctx.error("ratio must be one float, got ", dtype_name(ctx.input(1).dtype), " ", shape_str(ctx.input(1).shape));
    if (ctx.has_input(2) && (shape_numel(ctx.input(2).shape) != 1 || ctx.input(2).dtype != DType::Bool))
        ctx.error("training_mode must be one bool, got ", dtype_name(ctx.input(2).dtype), " ",
                  shape_str(ctx.input(2).shape));
    std::vector<TensorInfo> out{TensorInfo{in.dtype, in.shape, {}}};
    if (ctx.output_count() > 1) out.push_back(TensorInfo{DType::Bool, in.shape, {}});
    return out;
}

void run_dropout(RunContext &ctx) {
    const bool training = ctx.has_input(2) && int_at(ctx.input(2), 0) != 0;
    const float ratio = ctx.has_input(1) ? float_at(ctx.input(1), 0) : ctx.attrs().get_float("ratio", 0.5f);
    if (training && ratio != 0.0f)
        ctx.error(ONNXSTREAM_ERR_UNSUPPORTED, "training mode with ratio ", ratio,
                  " drops values at random; onnxstream runs inference only");
    ctx.set_output(0, ctx.input(0));
    if (ctx.output_count() > 1) {
        Tensor &mask = ctx.alloc_output(1);
        std::fill(mask.data<uint8_t>(), mask.data<uint8_t>() + mask.numel(), uint8_t(1));
    }
}

} // namespace

void register_cast_ops(Registry &r) {
    r.add("Cast", infer_cast, run_cast);
    r.add("CastLike", infer_cast_like, [](RunContext &ctx) { cast_into(ctx, ctx.output_info(0).dtype); });
    r.add("Identity", infer_identity, run_identity);
    r.add("Dropout", infer_dropout, run_dropout);
}

} // namespace onnxstream

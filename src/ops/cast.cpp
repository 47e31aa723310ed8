// Cast and CastLike between every dtype (float to integer as x86's truncating conversions do it; float16 and
// bfloat16 staged through float32, the float8 types through double, so that each value is rounded once;
// to int4 and uint4 clipped to their range, then rounded half to even, as ONNX's reference does),
// Identity, and Dropout for inference.
#include "ops/elementwise.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/elementwise_int.h"
#include "ops/registry.h"
#include "tensor/float8.h"
#include "tensor/half.h"

namespace onnxstream {

namespace {

// Every dtype: the element-wise families' kAllTypes, and bfloat16 and the float8 types, which only Cast
// computes with.
const std::initializer_list<DType> kCastTypes = {
    DType::F32,  DType::F16, DType::F64,      DType::BF16,       DType::I64,    DType::I32,
    DType::I16,  DType::I8,  DType::U64,      DType::U32,        DType::U16,    DType::U8,
    DType::Bool, DType::F8E4M3FN, DType::F8E4M3FNUZ, DType::F8E5M2, DType::F8E5M2FNUZ, DType::I4, DType::U4};

// Cast-19's saturate: only conversions to float8 read it.
void check_saturate(const InferContext &ctx) {
    const int64_t saturate = ctx.attrs().get_int("saturate", 1);
    if (saturate != 0 && saturate != 1) ctx.error("attribute saturate is ", saturate, "; it must be 0 or 1");
}

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
    check_saturate(ctx);
    return {TensorInfo{dtype, ctx.input(0).shape, {}}};
}

std::vector<TensorInfo> infer_cast_like(const InferContext &ctx) {
    ctx.require_inputs(2, 2);
    ctx.require_dtype(0, kCastTypes);
    ctx.require_dtype(1, kCastTypes);
    check_saturate(ctx);
    return {TensorInfo{ctx.input(1).dtype, ctx.input(0).shape, {}}};
}

// The 16-bit float types, converted through float32 in blocks.
struct HalfTag {};
struct BFloat16Tag {};
template <typename T> constexpr bool kStaged = std::is_same_v<T, HalfTag> || std::is_same_v<T, BFloat16Tag>;
// The float8 types, converted through double: a double holds every value of every source type exactly, so
// the conversion to float8 rounds once.
template <Float8Format F> struct Float8Tag {};
template <typename T> struct IsFloat8 : std::false_type {};
template <Float8Format F> struct IsFloat8<Float8Tag<F>> : std::true_type {};
template <typename T> constexpr bool kFloat8 = IsFloat8<T>::value;

// int4 and uint4, one value per byte: read as int8/uint8; written clipped and rounded.
template <bool Signed> struct Int4Tag {
    using Byte = std::conditional_t<Signed, int8_t, uint8_t>;
    static constexpr double kLow = Signed ? -8 : 0, kHigh = Signed ? 7 : 15;
};
template <typename T> struct IsInt4 : std::false_type {};
template <bool S> struct IsInt4<Int4Tag<S>> : std::true_type {};
template <typename T> constexpr bool kInt4 = IsInt4<T>::value;

struct CastOptions {
    bool to_bool = false;
    bool saturate = true;
};

template <typename S> double load_as_double(const void *src, size_t i) {
    if constexpr (kFloat8<S> || kInt4<S>) return 0.0; // not used: such sources are widened in convert_range
    else if constexpr (std::is_same_v<S, HalfTag>) return half_to_float(static_cast<const uint16_t *>(src)[i]);
    else if constexpr (std::is_same_v<S, BFloat16Tag>) return bfloat16_to_float(static_cast<const uint16_t *>(src)[i]);
    else return static_cast<double>(static_cast<const S *>(src)[i]);
}

template <Float8Format F> constexpr Float8Format format_of(Float8Tag<F>) { return F; }


template <typename T> constexpr size_t dtype_size_of() {
    if constexpr (kFloat8<T> || kInt4<T>) return 1;
    else if constexpr (kStaged<T>) return 2;
    else return sizeof(T);
}

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

template <typename S, typename D> void convert_range(const void *src, void *dst, size_t n, const CastOptions &opt);

// From a float8 type: widen to float32 (exact), then convert as from float32.
template <typename S, typename D>
void convert_from_float8(const uint8_t *src, void *dst, size_t n, const CastOptions &opt) {
    constexpr size_t kChunk = 1024;
    float buf[kChunk];
    const size_t out_size = dtype_size_of<D>();
    for (size_t i = 0; i < n; i += kChunk) {
        const size_t len = std::min(kChunk, n - i);
        for (size_t j = 0; j < len; ++j) buf[j] = float8_to_float(src[i + j], format_of(S{}));
        convert_range<float, D>(buf, static_cast<char *>(dst) + i * out_size, len, opt);
    }
}

// Convert n elements between types that are neither float8: S and D plain types or 16-bit float tags.
template <typename S, typename D> void convert_plain(const void *src, void *dst, size_t n, bool to_bool) {
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

// Convert n elements from src (type S, or a 16-bit float or float8 tag) to dst (type D / tag).
template <typename S, typename D> void convert_range(const void *src, void *dst, size_t n, const CastOptions &opt) {
    if constexpr (kFloat8<S>) {
        convert_from_float8<S, D>(static_cast<const uint8_t *>(src), dst, n, opt);
    } else if constexpr (kInt4<S>) {
        convert_range<typename S::Byte, D>(src, dst, n, opt);
    } else if constexpr (kInt4<D>) {
        auto *d = static_cast<typename D::Byte *>(dst);
        for (size_t i = 0; i < n; ++i) {
            const double v = load_as_double<S>(src, i);
            // NaN has no 4-bit value: 0, as for the float8 codes' integer casts.
            d[i] = static_cast<typename D::Byte>(std::isnan(v) ? 0.0 : std::nearbyint(std::clamp(v, D::kLow, D::kHigh)));
        }
    } else if constexpr (kFloat8<D>) {
        uint8_t *d = static_cast<uint8_t *>(dst);
        for (size_t i = 0; i < n; ++i)
            d[i] = double_to_float8(load_as_double<S>(src, i), format_of(D{}), opt.saturate);
    } else {
        convert_plain<S, D>(src, dst, n, opt.to_bool);
    }
}

template <typename Fn> void dispatch_storage(DType d, Fn &&fn) {
    switch (d) {
    case DType::F32: fn(float{}); return;
    case DType::F16: fn(HalfTag{}); return;
    case DType::BF16: fn(BFloat16Tag{}); return;
    case DType::F8E4M3FN: fn(Float8Tag<Float8Format::E4M3FN>{}); return;
    case DType::F8E4M3FNUZ: fn(Float8Tag<Float8Format::E4M3FNUZ>{}); return;
    case DType::F8E5M2: fn(Float8Tag<Float8Format::E5M2>{}); return;
    case DType::F8E5M2FNUZ: fn(Float8Tag<Float8Format::E5M2FNUZ>{}); return;
    case DType::I4: fn(Int4Tag<true>{}); return;
    case DType::U4: fn(Int4Tag<false>{}); return;
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
    CastOptions opt;
    opt.to_bool = to == DType::Bool;
    opt.saturate = ctx.attrs().get_int("saturate", 1) != 0;
    const size_t in_size = dtype_size(x.dtype()), out_size = dtype_size(to);
    const char *src = static_cast<const char *>(x.raw());
    char *dst = static_cast<char *>(out.raw());
    dispatch_storage(x.dtype(), [&](auto stag) {
        dispatch_storage(to, [&](auto dtag) {
            using S = decltype(stag);
            using D = decltype(dtag);
            parallel_for(ctx.pool(), static_cast<size_t>(x.numel()), kElementwiseTile,
                         [&](size_t b, size_t e) {
                             convert_range<S, D>(src + b * in_size, dst + b * out_size, e - b, opt);
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

// dtype sets, integer dispatch and exact integer arithmetic of the element-wise op families
// (arithmetic.cpp, comparison.cpp, unary_math.cpp, cast.cpp, bitwise.cpp).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <type_traits>
#include <utility>

#include "tensor/dtype.h"
#include "util/error.h"

namespace onnxstream {

// float32 and float16 (computed in float32).
const std::initializer_list<DType> kFloatTypes = {DType::F32, DType::F16};
// ... and float64, computed in double.
const std::initializer_list<DType> kAnyFloatTypes = {DType::F32, DType::F16, DType::F64};
const std::initializer_list<DType> kNumericTypes = {DType::F32, DType::F16, DType::F64, DType::I64,
                                                    DType::I32, DType::I16, DType::I8,  DType::U64,
                                                    DType::U32, DType::U16, DType::U8};
// The integer dtypes (Bool excluded), signed and unsigned: the bitwise family.
const std::initializer_list<DType> kIntegerTypes = {DType::I64, DType::I32, DType::I16, DType::I8,
                                                    DType::U64, DType::U32, DType::U16, DType::U8};
const std::initializer_list<DType> kAllTypes = {DType::F32, DType::F16, DType::F64, DType::I64,
                                                DType::I32, DType::I16, DType::I8,  DType::U64,
                                                DType::U32, DType::U16, DType::U8,  DType::Bool};

// Calls fn(T{}) with the storage type of an integer dtype (Bool is 0/1 bytes).
template <typename Fn> void dispatch_int(DType d, Fn &&fn) {
    switch (d) {
    case DType::I64: fn(int64_t{}); return;
    case DType::I32: fn(int32_t{}); return;
    case DType::I16: fn(int16_t{}); return;
    case DType::I8: fn(int8_t{}); return;
    case DType::U64: fn(uint64_t{}); return;
    case DType::U32: fn(uint32_t{}); return;
    case DType::U16: fn(uint16_t{}); return;
    case DType::U8:
    case DType::Bool: fn(uint8_t{}); return;
    default: fail(ONNXSTREAM_ERR_INTERNAL, "integer kernel called for dtype ", dtype_name(d));
    }
}

// Calls fn(T{}) for a dtype computed in its own C++ type: float64 as double, or an integer. (float32 and
// float16 go through the float32 paths, which use XNNPACK and float16 staging.)
template <typename Fn> void dispatch_exact(DType d, Fn &&fn) {
    if (d == DType::F64)
        fn(double{});
    else
        dispatch_int(d, std::forward<Fn>(fn));
}

// Integer add/sub/mul/neg wrap around like ONNX Runtime's two's-complement arithmetic, without the
// undefined behaviour of signed overflow in C++.
template <typename T> using Unsigned = std::make_unsigned_t<T>;
template <typename T> T wrap_add(T a, T b) { return static_cast<T>(Unsigned<T>(a) + Unsigned<T>(b)); }
template <typename T> T wrap_sub(T a, T b) { return static_cast<T>(Unsigned<T>(a) - Unsigned<T>(b)); }
template <typename T> T wrap_mul(T a, T b) { return static_cast<T>(Unsigned<T>(a) * Unsigned<T>(b)); }
template <typename T> T wrap_neg(T a) { return static_cast<T>(Unsigned<T>(0) - Unsigned<T>(a)); }

// Division truncates toward zero. Division by zero (undefined in ONNX, a crash in C++) gives 0, and
// MIN / -1 wraps to MIN.
template <typename T> T int_div(T a, T b) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>)
        if (b == T(-1)) return wrap_neg(a);
    return static_cast<T>(a / b);
}

// fmod=1: the sign of the dividend (C %); fmod=0: the sign of the divisor (Python %). x mod 0 gives 0.
template <typename T> T int_mod(T a, T b, bool c_style) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return 0;
        T r = static_cast<T>(a % b);
        if (!c_style && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
        return r;
    } else {
        return static_cast<T>(a % b);
    }
}

// Float to integer conversion as x86's truncating conversions do it (what ONNX Runtime's static_cast
// compiles to): out-of-range and NaN give the "integer indefinite" value, 8- and 16-bit targets go through
// int32, uint32 through int64 (its low 32 bits), uint64 above 2^63 through int64 of v - 2^63.
template <typename T> T float_to_int(double v) {
    constexpr double kTwo63 = 9223372036854775808.0;
    if constexpr (std::is_same_v<T, int64_t>) {
        if (v >= -kTwo63 && v < kTwo63) return static_cast<int64_t>(v);
        return std::numeric_limits<int64_t>::min();
    } else if constexpr (std::is_same_v<T, uint32_t>) {
        if (v >= -kTwo63 && v < kTwo63) return static_cast<uint32_t>(static_cast<int64_t>(v));
        return 0;
    } else if constexpr (std::is_same_v<T, uint64_t>) {
        if (v >= -kTwo63 && v < kTwo63) return static_cast<uint64_t>(static_cast<int64_t>(v));
        if (v >= kTwo63 && v < 2.0 * kTwo63) return static_cast<uint64_t>(static_cast<int64_t>(v - kTwo63)) ^ (uint64_t(1) << 63);
        return uint64_t(1) << 63;
    } else {
        int32_t i = std::numeric_limits<int32_t>::min();
        if (v > -2147483649.0 && v < 2147483648.0) i = static_cast<int32_t>(v);
        return static_cast<T>(i);
    }
}

// A double result stored as T: as is for double, else converted like float_to_int.
template <typename T> T from_double(double v) {
    if constexpr (std::is_floating_point_v<T>)
        return static_cast<T>(v);
    else
        return float_to_int<T>(v);
}

// Exact integer power by squaring (wrapping); negative exponents give the truncated value of 1/x^-e.
template <typename T, typename E> T int_pow(T base, E e) {
    if constexpr (std::is_signed_v<E>) {
        if (e < 0) {
            if (base == 1) return 1;
            if constexpr (std::is_signed_v<T>)
                if (base == T(-1)) return (e % 2 == 0) ? T(1) : T(-1);
            return 0;
        }
    }
    T result = 1;
    while (e > 0) {
        if (e & 1) result = wrap_mul(result, base);
        base = wrap_mul(base, base);
        e = static_cast<E>(e >> 1);
    }
    return result;
}

} // namespace onnxstream

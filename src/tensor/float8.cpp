#include "tensor/float8.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace onnxstream {

namespace {

struct Layout {
    int mantissa_bits;
    int bias;
    bool has_inf;       // float8e5m2: exponent all ones is infinity (mantissa 0) or NaN
    bool unsigned_zero; // the *fnuz formats: 1.0000000 is their only NaN, so there is no -0
    uint8_t max_code;   // the largest finite value, positive
};

Layout layout_of(Float8Format f) {
    switch (f) {
    case Float8Format::E4M3FN: return {3, 7, false, false, 0x7E};
    case Float8Format::E4M3FNUZ: return {3, 8, false, true, 0x7F};
    case Float8Format::E5M2: return {2, 15, true, false, 0x7B};
    case Float8Format::E5M2FNUZ: return {2, 16, false, true, 0x7F};
    }
    return {3, 7, false, false, 0x7E};
}

uint8_t nan_code(const Layout &l, uint8_t sign) { return l.unsigned_zero ? 0x80 : uint8_t(sign | 0x7F); }

// What a value too large for the format becomes.
uint8_t overflow_code(const Layout &l, uint8_t sign, bool saturate) {
    if (saturate) return uint8_t(sign | l.max_code);
    if (l.has_inf) return uint8_t(sign | 0x7C);
    return nan_code(l, sign);
}

// Round half to even, whatever the FPU's rounding mode: t >= 0 and exactly representable.
double round_half_even(double t) {
    const double k = std::floor(t), frac = t - k;
    if (frac > 0.5 || (frac == 0.5 && std::fmod(k, 2.0) != 0.0)) return k + 1.0;
    return k;
}

} // namespace

bool float8_format(DType dtype, Float8Format &out) {
    switch (dtype) {
    case DType::F8E4M3FN: out = Float8Format::E4M3FN; return true;
    case DType::F8E4M3FNUZ: out = Float8Format::E4M3FNUZ; return true;
    case DType::F8E5M2: out = Float8Format::E5M2; return true;
    case DType::F8E5M2FNUZ: out = Float8Format::E5M2FNUZ; return true;
    default: return false;
    }
}

float float8_to_float(uint8_t bits, Float8Format format) {
    const Layout l = layout_of(format);
    const bool negative = bits & 0x80;
    const int rest = bits & 0x7F, mbits = l.mantissa_bits;
    const int exponent = rest >> mbits, mantissa = rest & ((1 << mbits) - 1);
    const int top_exponent = (1 << (7 - mbits)) - 1;
    if (l.unsigned_zero && bits == 0x80) return std::numeric_limits<float>::quiet_NaN();
    if (!l.unsigned_zero && !l.has_inf && rest == 0x7F) return std::numeric_limits<float>::quiet_NaN();
    if (l.has_inf && exponent == top_exponent) {
        if (mantissa != 0) return std::numeric_limits<float>::quiet_NaN();
        return negative ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
    }
    // Subnormals have exponent field 0 and no implicit leading 1.
    const float magnitude = exponent == 0 ? std::ldexp(float(mantissa), 1 - l.bias - mbits)
                                          : std::ldexp(float((1 << mbits) + mantissa), exponent - l.bias - mbits);
    return negative ? -magnitude : magnitude;
}

uint8_t double_to_float8(double x, Float8Format format, bool saturate) {
    const Layout l = layout_of(format);
    const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
    if (std::isnan(x)) return nan_code(l, sign);
    if (std::isinf(x)) return overflow_code(l, sign, saturate);
    const double a = std::fabs(x);
    const int mbits = l.mantissa_bits, min_exponent = 1 - l.bias; // of the normal numbers
    if (a == 0.0) return l.unsigned_zero ? 0x00 : sign;
    int e2 = 0;
    std::frexp(a, &e2); // a = f * 2^e2, f in [0.5, 1)
    int exponent = std::max(e2 - 1, min_exponent);
    // a in units of the last mantissa bit at this exponent; scaling by a power of two is exact.
    double units = round_half_even(std::ldexp(a, mbits - exponent));
    if (units == 0.0) return l.unsigned_zero ? 0x00 : sign;
    if (units >= double(2 << mbits)) { // rounding carried into the next binade
        units /= 2;
        ++exponent;
    }
    const double largest = double(float8_to_float(l.max_code, format));
    if (std::ldexp(units, exponent - mbits) > largest) return overflow_code(l, sign, saturate);
    const int k = static_cast<int>(units);
    if (k < (1 << mbits)) return uint8_t(sign | k); // subnormal: exponent field 0
    const int field = exponent + l.bias;
    return uint8_t(sign | (field << mbits) | (k - (1 << mbits)));
}

} // namespace onnxstream

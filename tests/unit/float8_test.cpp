// The four float8 formats against their definitions: known codes from the ONNX specification's tables, and
// every conversion from a wider float against a brute-force search of the nearest of the format's 256
// codes (ties to the even code), which shares no arithmetic with the converter.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tensor/float8.h"

using namespace onnxstream;

namespace {

struct Spec {
    Float8Format format;
    const char *name;
    float largest;
    float smallest_subnormal;
    uint8_t nan;
    bool has_inf, unsigned_zero;
};

const Spec kSpecs[] = {
    {Float8Format::E4M3FN, "e4m3fn", 448.0f, 0x1p-9f, 0x7F, false, false},
    {Float8Format::E4M3FNUZ, "e4m3fnuz", 240.0f, 0x1p-10f, 0x80, false, true},
    {Float8Format::E5M2, "e5m2", 57344.0f, 0x1p-16f, 0x7F, true, false},
    {Float8Format::E5M2FNUZ, "e5m2fnuz", 57344.0f, 0x1p-17f, 0x80, false, true},
};

// The positive finite codes with their values, ascending, plus the value the next code up would have if
// the format went on: rounding past the largest value overflows when it would pick that one (by distance,
// or on a tie by its even code, as IEEE rounding to nearest treats the step to infinity).
struct Table {
    std::vector<std::pair<uint8_t, double>> codes;
    double beyond;
};

Table positive_codes(const Spec &s) {
    Table t;
    for (int c = 0; c < 0x80; ++c) {
        const float v = float8_to_float(static_cast<uint8_t>(c), s.format);
        if (std::isfinite(v)) t.codes.emplace_back(static_cast<uint8_t>(c), v);
    }
    const double last = t.codes.back().second, before = t.codes[t.codes.size() - 2].second;
    t.beyond = last + (last - before);
    return t;
}

// What converting x must give, found by search. -1 stands for "overflow".
int nearest_code(const Table &t, double a) {
    int best = -1;
    double best_distance = std::fabs(a - t.beyond);
    bool best_even = ((t.codes.back().first + 1) & 1) == 0; // the virtual code after the largest one
    for (const auto &[code, value] : t.codes) {
        const double d = std::fabs(a - value);
        const bool even = (code & 1) == 0;
        if (d < best_distance || (d == best_distance && even && !best_even)) {
            best = code;
            best_distance = d;
            best_even = even;
        }
    }
    return best;
}

uint8_t expected_code(const Spec &s, const Table &t, double x, bool saturate) {
    const uint8_t sign = std::signbit(x) ? 0x80 : 0;
    const int code = nearest_code(t, std::fabs(x));
    if (code < 0) {
        const uint8_t largest = t.codes.back().first;
        if (saturate) return sign | largest;
        return s.has_inf ? uint8_t(sign | 0x7C) : s.unsigned_zero ? uint8_t(0x80) : uint8_t(sign | 0x7F);
    }
    if (code == 0 && s.unsigned_zero) return 0;
    return static_cast<uint8_t>(sign | code);
}

} // namespace

TEST(Float8, KnownCodes) {
    for (const Spec &s : kSpecs) {
        SCOPED_TRACE(s.name);
        const Table t = positive_codes(s);
        EXPECT_EQ(t.codes.back().second, s.largest);
        EXPECT_EQ(float8_to_float(0x01, s.format), s.smallest_subnormal);
        EXPECT_TRUE(std::isnan(float8_to_float(s.nan, s.format)));
        EXPECT_EQ(float8_to_float(0x00, s.format), 0.0f);
        // One is 0 01..1 000 in every format but the fnuz ones, whose bias is one more.
        const uint8_t one = s.format == Float8Format::E4M3FN ? 0x38 : s.format == Float8Format::E4M3FNUZ ? 0x40
                          : s.format == Float8Format::E5M2   ? 0x3C : 0x40;
        EXPECT_EQ(float8_to_float(one, s.format), 1.0f);
        EXPECT_EQ(float8_to_float(one | 0x80, s.format), -1.0f);
        // Positive codes ascend.
        for (size_t i = 1; i < t.codes.size(); ++i) EXPECT_LT(t.codes[i - 1].second, t.codes[i].second);
    }
    EXPECT_EQ(float8_to_float(0x7C, Float8Format::E5M2), std::numeric_limits<float>::infinity());
    EXPECT_EQ(float8_to_float(0xFC, Float8Format::E5M2), -std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(float8_to_float(0xFF, Float8Format::E4M3FN)));
    EXPECT_TRUE(std::signbit(float8_to_float(0x80, Float8Format::E4M3FN))) << "-0";
}

TEST(Float8, EveryCodeRoundTrips) {
    for (const Spec &s : kSpecs)
        for (int c = 0; c < 256; ++c) {
            const float v = float8_to_float(static_cast<uint8_t>(c), s.format);
            if (std::isnan(v)) continue;
            EXPECT_EQ(double_to_float8(v, s.format, false), c) << s.name << " code " << c;
        }
}

TEST(Float8, NearestEvenAgainstSearch) {
    std::mt19937 rng(7);
    for (const Spec &s : kSpecs) {
        SCOPED_TRACE(s.name);
        const Table t = positive_codes(s);
        std::vector<double> xs;
        // Every code's value, the midpoints between neighbours (ties), and points just either side of them.
        for (size_t i = 0; i < t.codes.size(); ++i) {
            const double v = t.codes[i].second;
            const double next = i + 1 < t.codes.size() ? t.codes[i + 1].second : t.beyond;
            const double mid = (v + next) / 2;
            for (double x : {v, mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e9), next * 1.5})
                xs.insert(xs.end(), {x, -x});
        }
        std::uniform_real_distribution<double> exponent(-20, 18), unit(1, 2);
        for (int i = 0; i < 20000; ++i) xs.push_back((i % 2 ? -1 : 1) * std::ldexp(unit(rng), int(exponent(rng))));
        for (double x : xs) {
            const float xf = static_cast<float>(x); // the float32 Cast's inputs are
            for (bool saturate : {true, false})
                ASSERT_EQ(double_to_float8(xf, s.format, saturate), expected_code(s, t, xf, saturate))
                    << "x = " << xf << (saturate ? " saturating" : "");
        }
    }
}

TEST(Float8, SpecialValues) {
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    for (const Spec &s : kSpecs) {
        SCOPED_TRACE(s.name);
        const uint8_t largest = double_to_float8(s.largest, s.format, true);
        EXPECT_EQ(double_to_float8(inf, s.format, true), largest);
        EXPECT_EQ(double_to_float8(-inf, s.format, true), largest | 0x80);
        EXPECT_TRUE(std::isnan(float8_to_float(double_to_float8(nan, s.format, true), s.format)));
        const float inf_out = float8_to_float(double_to_float8(inf, s.format, false), s.format);
        if (s.has_inf)
            EXPECT_EQ(inf_out, std::numeric_limits<float>::infinity());
        else
            EXPECT_TRUE(std::isnan(inf_out));
        // -0 has no code in the fnuz formats: it becomes +0, not their NaN.
        EXPECT_EQ(double_to_float8(-0.0, s.format, true), s.unsigned_zero ? 0x00 : 0x80);
        EXPECT_EQ(double_to_float8(-1e-30, s.format, true), s.unsigned_zero ? 0x00 : 0x80);
    }
}

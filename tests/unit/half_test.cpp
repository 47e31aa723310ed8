// fp16 <-> fp32 conversion against known IEEE bit patterns, including denormals, infinities, NaN and
// round-to-nearest-even ties.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "tensor/half.h"

using namespace onnxstream;

namespace {
uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
} // namespace

TEST(Half, ToFloatKnownValues) {
    EXPECT_EQ(half_to_float(0x3C00), 1.0f);
    EXPECT_EQ(half_to_float(0xBC00), -1.0f);
    EXPECT_EQ(half_to_float(0x4000), 2.0f);
    EXPECT_EQ(half_to_float(0x3800), 0.5f);
    EXPECT_EQ(half_to_float(0x3555), 0x1.554p-2f);
    EXPECT_EQ(half_to_float(0x7BFF), 65504.0f);
    EXPECT_EQ(half_to_float(0xFBFF), -65504.0f);
    EXPECT_EQ(half_to_float(0x0400), std::ldexp(1.0f, -14)) << "smallest normal";
    EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24)) << "smallest denormal";
    EXPECT_EQ(half_to_float(0x03FF), std::ldexp(1023.0f, -24)) << "largest denormal";
    EXPECT_EQ(half_to_float(0x8001), -std::ldexp(1.0f, -24));
    EXPECT_EQ(bits(half_to_float(0x0000)), 0x00000000u);
    EXPECT_EQ(bits(half_to_float(0x8000)), 0x80000000u) << "-0 keeps its sign";
    EXPECT_EQ(half_to_float(0x7C00), std::numeric_limits<float>::infinity());
    EXPECT_EQ(half_to_float(0xFC00), -std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(half_to_float(0x7E00)));
    EXPECT_TRUE(std::isnan(half_to_float(0x7C01)));
    EXPECT_TRUE(std::isnan(half_to_float(0xFE00)));
}

TEST(Half, FromFloatKnownValues) {
    EXPECT_EQ(float_to_half(1.0f), 0x3C00);
    EXPECT_EQ(float_to_half(-1.0f), 0xBC00);
    EXPECT_EQ(float_to_half(0.5f), 0x3800);
    EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
    EXPECT_EQ(float_to_half(-65504.0f), 0xFBFF);
    EXPECT_EQ(float_to_half(0.0f), 0x0000);
    EXPECT_EQ(float_to_half(-0.0f), 0x8000);
    EXPECT_EQ(float_to_half(std::ldexp(1.0f, -14)), 0x0400);
    EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);
    EXPECT_EQ(float_to_half(std::ldexp(1023.0f, -24)), 0x03FF);
    EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7C00);
    EXPECT_EQ(float_to_half(-std::numeric_limits<float>::infinity()), 0xFC00);
    EXPECT_EQ(float_to_half(1e10f), 0x7C00) << "overflow goes to infinity";
    EXPECT_EQ(float_to_half(-1e10f), 0xFC00);
    EXPECT_EQ(float_to_half(1e-10f), 0x0000) << "underflow goes to zero";
    EXPECT_EQ(float_to_half(-1e-10f), 0x8000);
    uint16_t nan = float_to_half(std::numeric_limits<float>::quiet_NaN());
    EXPECT_EQ(nan & 0x7C00, 0x7C00);
    EXPECT_NE(nan & 0x03FF, 0);
}

TEST(Half, RoundsToNearestEven) {
    // Halfway between 1.0 (0x3C00, even) and 1+2^-10 (0x3C01): rounds down to even.
    EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
    // Halfway between 0x3C01 (odd) and 0x3C02: rounds up to even.
    EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
    // Just above the halfway point rounds up.
    EXPECT_EQ(float_to_half(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3C01);
    // Just below rounds down.
    EXPECT_EQ(float_to_half(std::nextafter(1.0f + 3 * std::ldexp(1.0f, -11), 0.0f)), 0x3C01);
    // 65520 is halfway between 65504 (odd mantissa 0x3FF) and 65536 (infinity): ties to even -> inf.
    EXPECT_EQ(float_to_half(65520.0f), 0x7C00);
    EXPECT_EQ(float_to_half(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
    // Denormal ties: 2^-25 is halfway between 0 and 0x0001 -> 0; 3*2^-25 between 0x0001 and 0x0002 -> 0x0002.
    EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);
    EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);
    EXPECT_EQ(float_to_half(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
    // Between the largest denormal and the smallest normal.
    EXPECT_EQ(float_to_half(std::ldexp(2047.0f, -25)), 0x0400);
}

TEST(Half, EveryHalfRoundTrips) {
    for (uint32_t h = 0; h < 0x10000; ++h) {
        float f = half_to_float(static_cast<uint16_t>(h));
        uint16_t back = float_to_half(f);
        if ((h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0) {
            EXPECT_TRUE(std::isnan(f)) << std::hex << h;
            EXPECT_EQ(back & 0x7C00, 0x7C00) << std::hex << h;
            EXPECT_NE(back & 0x03FF, 0) << std::hex << h;
            EXPECT_EQ(back & 0x8000, h & 0x8000) << std::hex << h;
        } else {
            ASSERT_EQ(back, h) << std::hex << h << " -> " << f;
        }
    }
}

TEST(Half, MatchesReferenceRoundingOnRandomFloats) {
    // Reference: pick the nearer of the two neighbouring halves (ties to the even one), by exact
    // comparison in double, for values in the normal and denormal half range.
    uint32_t state = 12345;
    for (int i = 0; i < 200000; ++i) {
        state = state * 1664525u + 1013904223u;
        float f = from_bits((state & 0x807FFFFFu) | ((((state >> 23) % 48) + 98) << 23)); // exponents 2^-29..2^18
        if (std::fabs(f) >= 65520.0f) continue;
        uint16_t got = float_to_half(f);
        double g = half_to_float(got);
        // Both neighbours of got must be no nearer.
        uint16_t up = static_cast<uint16_t>(got + 1), down = static_cast<uint16_t>(got - 1);
        double d = std::fabs(g - f);
        if ((got & 0x7FFF) != 0x7BFF) {
            double du = std::fabs(half_to_float(up) - static_cast<double>(f));
            EXPECT_LE(d, du) << f;
            if (d == du) {
                EXPECT_EQ(got & 1, 0) << "tie not rounded to even for " << f;
            }
        }
        if ((got & 0x7FFF) != 0) {
            double dd = std::fabs(half_to_float(down) - static_cast<double>(f));
            EXPECT_LE(d, dd) << f;
            if (d == dd) {
                EXPECT_EQ(got & 1, 0) << "tie not rounded to even for " << f;
            }
        }
    }
}

TEST(Half, BulkConversion) {
    std::vector<float> f = {0.0f, 1.0f, -2.0f, 65504.0f, 0.099975586f};
    std::vector<uint16_t> h(f.size());
    float_to_half_n(f.data(), h.data(), f.size());
    EXPECT_EQ(h, (std::vector<uint16_t>{0x0000, 0x3C00, 0xC000, 0x7BFF, 0x2E66}));
    std::vector<float> back(f.size());
    half_to_float_n(h.data(), back.data(), h.size());
    EXPECT_EQ(back, f);
}

// The bulk functions take a vector path (F16C, NEON) when the CPU has one: it must give the same bits as the
// scalar conversions checked above, for every half and for random floats (odd lengths hit the tails).
TEST(Half, BulkPathsMatchTheCheckedScalarConversions) {
    ::testing::Test::RecordProperty("vector_path", half_vector_conversions() ? "yes" : "no");
#if defined(__aarch64__) || (defined(__ARM_NEON) && (__ARM_FP & 2) && defined(__ARM_FP16_FORMAT_IEEE))
    // Every ARM CPU these builds run on (and the emulated ones of the tests) has the NEON conversions; a
    // silent fall back to the scalar code would leave the NEON path unchecked.
    ASSERT_TRUE(half_vector_conversions());
#endif
    std::vector<uint16_t> every(65536 + 3);
    for (size_t i = 0; i < every.size(); ++i) every[i] = static_cast<uint16_t>(i);
    std::vector<float> wide(every.size());
    half_to_float_n(every.data(), wide.data(), every.size());
    for (size_t i = 0; i < every.size(); ++i) {
        const float want = half_to_float(every[i]);
        if (std::isnan(want))
            ASSERT_TRUE(std::isnan(wide[i])) << std::hex << every[i];
        else
            ASSERT_EQ(bits(wide[i]), bits(want)) << std::hex << every[i];
    }
    uint32_t state = 777;
    std::vector<float> floats(100003);
    for (float &f : floats) {
        state = state * 1664525u + 1013904223u;
        f = from_bits((state & 0x807FFFFFu) | ((((state >> 23) % 60) + 90) << 23)); // 2^-37 .. 2^22
    }
    floats[17] = std::numeric_limits<float>::quiet_NaN();
    floats[18] = -std::numeric_limits<float>::infinity();
    floats[40001] = 65520.0f; // rounds to infinity
    floats[40002] = -std::numeric_limits<float>::quiet_NaN();
    floats[40003] = 65519.996f; // largest float that rounds to 65504
    floats[40004] = 0x1.0p-25f; // half of the smallest denormal half: ties to even, 0
    floats[40005] = 0x1.8p-25f; // rounds up to the smallest denormal half
    floats[40006] = 0x1.0p-140f; // a float denormal: flushed by AArch32 NEON's input, 0 either way
    std::vector<uint16_t> narrow(floats.size());
    float_to_half_n(floats.data(), narrow.data(), floats.size());
    for (size_t i = 0; i < floats.size(); ++i) ASSERT_EQ(narrow[i], float_to_half(floats[i])) << floats[i];
}

// bfloat16 keeps a float32's top 16 bits; narrowing adds half of the dropped low part, ties to even.
TEST(BFloat16, WidensExactly) {
    EXPECT_EQ(bfloat16_to_float(0x3f80), 1.0f);
    EXPECT_EQ(bfloat16_to_float(0xc040), -3.0f);
    EXPECT_EQ(bfloat16_to_float(0x7f80), INFINITY);
    EXPECT_TRUE(std::isnan(bfloat16_to_float(0x7fc0)));
    EXPECT_EQ(bfloat16_to_float(0x0001), 0x1.0p-133f); // the smallest denormal
}

TEST(BFloat16, NarrowsToNearestEven) {
    auto from_bits = [](uint32_t b) {
        float f;
        std::memcpy(&f, &b, 4);
        return f;
    };
    EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
    EXPECT_EQ(float_to_bfloat16(from_bits(0x3f807fffu)), 0x3f80); // below half: down
    EXPECT_EQ(float_to_bfloat16(from_bits(0x3f808000u)), 0x3f80); // tie, even below: down
    EXPECT_EQ(float_to_bfloat16(from_bits(0x3f818000u)), 0x3f82); // tie, odd below: up to even
    EXPECT_EQ(float_to_bfloat16(from_bits(0x3f808001u)), 0x3f81); // above half: up
    EXPECT_EQ(float_to_bfloat16(from_bits(0x7f7fffffu)), 0x7f80); // FLT_MAX rounds to infinity
    EXPECT_EQ(float_to_bfloat16(-INFINITY), 0xff80);
    EXPECT_EQ(float_to_bfloat16(from_bits(0x7f800001u)) & 0x7fc0, 0x7fc0); // a NaN stays a (quiet) NaN
    EXPECT_EQ(float_to_bfloat16(from_bits(0xffc00000u)), 0xffc0);
    for (uint32_t b = 0; b < 0x10000; ++b) { // every bfloat16 that is not a NaN round-trips
        if ((b & 0x7fff) > 0x7f80) continue;
        ASSERT_EQ(float_to_bfloat16(bfloat16_to_float(static_cast<uint16_t>(b))), b);
    }
}

// Name escaping (OnnxStream's _XX_ scheme) and the strict number parsing used by the parser.
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "util/strings.h"

using namespace onnxstream;

TEST(Escape, KnownNames) {
    EXPECT_EQ(escape_name("input.1"), "input_2E_1");
    EXPECT_EQ(escape_name("onnx::Gemm_5"), "onnx_3A__3A_Gemm_5F_5");
    EXPECT_EQ(escape_name("/model.0/conv/Conv_output_0"), "_2F_model_2E_0_2F_conv_2F_Conv_5F_output_5F_0");
    EXPECT_EQ(escape_name("images"), "images");
    EXPECT_EQ(escape_name("AZaz09"), "AZaz09");
    EXPECT_EQ(escape_name(""), "");
    EXPECT_EQ(escape_name(" "), "_20_");
    EXPECT_EQ(escape_name("\xC3\xA9"), "_C3__A9_") << "bytes >= 0x80 are escaped one by one, uppercase hex";
    EXPECT_EQ(escape_name(std::string("\0", 1)), "_00_");
}

TEST(Escape, Unescape) {
    EXPECT_EQ(unescape_name("input_2E_1"), "input.1");
    EXPECT_EQ(unescape_name("onnx_3A__3A_Gemm_5F_5"), "onnx::Gemm_5");
    EXPECT_EQ(unescape_name("_2f_"), "/") << "lowercase hex is accepted";
    // Text that is not a valid escape is kept.
    EXPECT_EQ(unescape_name("a_ZZ_b"), "a_ZZ_b");
    EXPECT_EQ(unescape_name("a_2E"), "a_2E");
    EXPECT_EQ(unescape_name("_"), "_");
    EXPECT_EQ(unescape_name("__"), "__");
    EXPECT_EQ(unescape_name("x_2E_"), "x.");
    EXPECT_EQ(unescape_name("_2E__2E_"), "..");
}

TEST(Escape, EveryByteRoundTrips) {
    for (int c = 0; c < 256; ++c) {
        std::string s(1, static_cast<char>(c));
        std::string e = escape_name(s);
        EXPECT_EQ(e.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"),
                  std::string::npos)
            << c;
        EXPECT_EQ(unescape_name(e), s) << c;
    }
}

TEST(Escape, RandomStringsRoundTrip) {
    std::mt19937 rng(1234);
    const std::string alphabet = "ab_.:/-09XZ_2E_5F";
    for (int i = 0; i < 2000; ++i) {
        std::string s;
        size_t n = rng() % 24;
        for (size_t k = 0; k < n; ++k) s += (rng() % 4 == 0) ? static_cast<char>(rng() % 256) : alphabet[rng() % alphabet.size()];
        EXPECT_EQ(unescape_name(escape_name(s)), s);
        // Escaping is injective, so an escaped name never needs escaping again to be told apart.
        EXPECT_EQ(escape_name(unescape_name(escape_name(s))), escape_name(s));
    }
}

TEST(Numbers, ParseInt64) {
    int64_t v = 0;
    EXPECT_TRUE(parse_int64("0", v));
    EXPECT_EQ(v, 0);
    EXPECT_TRUE(parse_int64("-42", v));
    EXPECT_EQ(v, -42);
    EXPECT_TRUE(parse_int64("9223372036854775807", v));
    EXPECT_EQ(v, INT64_MAX);
    EXPECT_TRUE(parse_int64("-9223372036854775808", v));
    EXPECT_EQ(v, INT64_MIN);
    EXPECT_FALSE(parse_int64("9223372036854775808", v));
    EXPECT_FALSE(parse_int64("", v));
    EXPECT_FALSE(parse_int64("1a", v));
    EXPECT_FALSE(parse_int64("abc", v));
    EXPECT_FALSE(parse_int64("1.5", v));
    EXPECT_FALSE(parse_int64("1 ", v));
}

TEST(Numbers, ParseDouble) {
    double v = 0;
    EXPECT_TRUE(parse_double("-0.75", v));
    EXPECT_DOUBLE_EQ(v, -0.75);
    EXPECT_TRUE(parse_double("1e-05", v));
    EXPECT_DOUBLE_EQ(v, 1e-5);
    EXPECT_TRUE(parse_double("3", v));
    EXPECT_FALSE(parse_double("", v));
    EXPECT_FALSE(parse_double("0.5x", v));
    EXPECT_FALSE(parse_double("abc", v));
}

TEST(Strings, SplitJoinEndsWith) {
    auto parts = split("a;;b;", ';');
    ASSERT_EQ(parts.size(), 4u);
    EXPECT_EQ(parts[0], "a");
    EXPECT_EQ(parts[1], "");
    EXPECT_EQ(parts[2], "b");
    EXPECT_EQ(parts[3], "");
    EXPECT_EQ(split("", ',').size(), 1u);
    EXPECT_EQ(join_ints({1, 3, 640, 640}), "1,3,640,640");
    EXPECT_EQ(join_ints({}), "");
    EXPECT_EQ(join_ints({-1, 2}, "x"), "-1x2");
    EXPECT_TRUE(ends_with("w_nchw.bin", "_nchw.bin"));
    EXPECT_FALSE(ends_with("bin", "_nchw.bin"));
}

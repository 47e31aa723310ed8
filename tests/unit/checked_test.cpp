// util/checked.h: element and byte counts from untrusted dims never wrap, on 64-bit builds and (through
// the size_t limit parameter) as a 32-bit build would see them.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tensor/tensor.h"
#include "util/checked.h"

namespace onnxstream {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr uint64_t k32 = std::numeric_limits<uint32_t>::max();

Status status_of(void (*f)()) {
    try {
        f();
    } catch (const Error &e) {
        return e.status();
    }
    return ONNXSTREAM_OK;
}

TEST(Checked, MultiplyAndAddAtTheBoundaries) {
    int64_t s = 0;
    EXPECT_TRUE(checked::mul(int64_t(1) << 31, int64_t(1) << 31, s));
    EXPECT_EQ(s, int64_t(1) << 62);
    EXPECT_FALSE(checked::mul(int64_t(1) << 32, int64_t(1) << 31, s)); // 2^63
    EXPECT_TRUE(checked::mul(kMax, int64_t(1), s));
    EXPECT_FALSE(checked::mul(kMax, int64_t(2), s));
    EXPECT_TRUE(checked::mul(int64_t(-1), kMax, s)); // unknown (-1) dims in the importer's types
    EXPECT_FALSE(checked::add(kMax, int64_t(1), s));
    uint64_t u = 0;
    EXPECT_TRUE(checked::mul(uint64_t(1) << 32, uint64_t(1) << 31, u));
    EXPECT_EQ(u, uint64_t(1) << 63);
    EXPECT_FALSE(checked::mul(uint64_t(1) << 32, uint64_t(1) << 32, u));
    EXPECT_FALSE(checked::add(std::numeric_limits<uint64_t>::max(), uint64_t(1), u));
}

TEST(Checked, ElementAndByteCounts) {
    int64_t n = 0;
    EXPECT_TRUE(checked::element_count({}, n));
    EXPECT_EQ(n, 1); // a scalar
    EXPECT_TRUE(checked::element_count({0, kMax, kMax}, n));
    EXPECT_EQ(n, 0);
    EXPECT_FALSE(checked::element_count({2, -3}, n));
    EXPECT_TRUE(checked::element_count({int64_t(1) << 62, 1}, n));
    EXPECT_FALSE(checked::element_count({int64_t(1) << 62, 2}, n)); // exactly 2^63
    uint64_t b = 0;
    EXPECT_TRUE(checked::byte_count({int64_t(1) << 60}, 8, b));
    EXPECT_EQ(b, uint64_t(1) << 63);
    EXPECT_FALSE(checked::byte_count({int64_t(1) << 61}, 8, b)); // 2^64 bytes
}

TEST(Checked, SizeLimitAsOn32BitBuilds) {
    // 3 GiB of float32: fits a 32-bit size_t. 4 GiB does not, and must fail rather than wrap to 0.
    const std::vector<int64_t> three_gib = {3, 1024, 1024, 256};
    const std::vector<int64_t> four_gib = {4, 1024, 1024, 256};
    EXPECT_EQ(checked::size_bytes(three_gib, 4, "t", k32), size_t(3) << 30);
    try {
        checked::size_bytes(four_gib, 4, "tensor 'x'", k32);
        FAIL() << "4 GiB passed a 32-bit size_t";
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), ONNXSTREAM_ERR_OUT_OF_MEMORY);
        EXPECT_NE(std::string(e.what()).find("tensor 'x' needs 4294967296 bytes"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(checked::fits_size(k32, k32));
    EXPECT_FALSE(checked::fits_size(k32 + 1, k32));
    // The native limit: on a 64-bit build 4 GiB fits; on a 32-bit one it does not.
    if (sizeof(size_t) == 8)
        EXPECT_EQ(checked::size_bytes(four_gib, 4, "t"), size_t(1) << 32);
    else
        EXPECT_EQ(status_of([] { checked::size_bytes({4, 1024, 1024, 256}, 4, "t"); }), ONNXSTREAM_ERR_OUT_OF_MEMORY);
}

TEST(Checked, ThrowingFormsNameTheTensor) {
    try {
        checked::numel_or_fail({int64_t(1) << 40, int64_t(1) << 40}, "initializer 'w'");
        FAIL();
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), ONNXSTREAM_ERR_INVALID_MODEL);
        EXPECT_NE(std::string(e.what()).find("initializer 'w' has shape (1099511627776,1099511627776)"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_EQ(status_of([] { checked::numel_or_fail({2, -1}, "w"); }), ONNXSTREAM_ERR_INVALID_MODEL);
    EXPECT_EQ(status_of([] { checked::bytes_or_fail({int64_t(1) << 62}, 4, "w"); }), ONNXSTREAM_ERR_INVALID_MODEL);
    EXPECT_EQ(checked::bytes_or_fail({int64_t(1) << 60}, 8, "w"), uint64_t(1) << 63);
}

TEST(Checked, ShapeNumelAndMakeTensorNeverWrap) {
    EXPECT_EQ(shape_numel({2, 3, 4}), 24);
    EXPECT_EQ(status_of([] { shape_numel({kMax, 2}); }), ONNXSTREAM_ERR_INVALID_MODEL);
    // 2^62 float32 elements: 2^64 bytes, which wrapped to 0 before and made a 0-byte allocation.
    EXPECT_EQ(status_of([] {
                  Allocator alloc;
                  make_tensor(alloc, DType::F32, {int64_t(1) << 31, int64_t(1) << 31});
              }),
              ONNXSTREAM_ERR_INVALID_MODEL);
}

} // namespace
} // namespace onnxstream

// weights/prepare: every conversion and reorder a kernel can ask for, checked element by element against
// the definitions (OIHW/OHWI index formulas, IEEE half decoding, (q - zero_point) * scale), the copies
// it counts, and the requests it refuses.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "test_util.h"
#include "weights/prepare.h"

using namespace onnxstream;
using onnxstream::test::expect_error;

namespace {

// A half's value from its bits (sign, 5-bit exponent, 10-bit mantissa), written out from IEEE 754's
// definition rather than through the engine's converters.
float half_value(uint16_t h) {
    const int sign = h >> 15, exponent = (h >> 10) & 31, mantissa = h & 1023;
    float v;
    if (exponent == 0) v = std::ldexp(static_cast<float>(mantissa), -24);
    else if (exponent == 31) v = mantissa ? NAN : INFINITY;
    else v = std::ldexp(static_cast<float>(1024 + mantissa), exponent - 25);
    return sign ? -v : v;
}

// Element (o, i, k) of a kernel with `positions` kernel positions, in each layout.
size_t plain_index(const Shape &s, size_t positions, int64_t o, int64_t i, size_t k) {
    return (static_cast<size_t>(o * s[1] + i)) * positions + k;
}
size_t ohwi_index(const Shape &s, size_t positions, int64_t o, int64_t i, size_t k) {
    return (static_cast<size_t>(o) * positions + k) * static_cast<size_t>(s[1]) + static_cast<size_t>(i);
}
size_t positions_of(const Shape &s) {
    size_t p = 1;
    for (size_t d = 2; d < s.size(); ++d) p *= static_cast<size_t>(s[d]);
    return p;
}

template <typename T> Tensor filled(Allocator &alloc, DType dtype, const Shape &shape, T (*value)(size_t)) {
    Tensor t = make_tensor(alloc, dtype, shape);
    for (size_t k = 0; k < static_cast<size_t>(t.numel()); ++k) static_cast<T *>(t.raw())[k] = value(k);
    return t;
}

float f32_value(size_t k) { return static_cast<float>(k) * 0.5f - 7.0f; }
uint16_t f16_bits(size_t k) { return static_cast<uint16_t>(0x3000 + k * 37 % 0x4000) | (k % 3 == 0 ? 0x8000 : 0); }
uint8_t u8_value(size_t k) { return static_cast<uint8_t>(k * 29 % 256); }
int8_t i8_value(size_t k) { return static_cast<int8_t>(static_cast<int>(k * 13 % 255) - 127); }

const Shape kConv = {4, 3, 2, 5}; // O, I, H, W all different so a wrong reorder shows

} // namespace

TEST(PrepareWeight, NothingToDoSharesTheStorage) {
    Allocator alloc;
    Tensor t = filled<float>(alloc, DType::F32, kConv, f32_value);
    uint64_t copied = 0;
    Tensor same = prepare_weight(t, WeightPrep{Layout::Plain, DType::F32}, 0, alloc, nullptr, &copied);
    EXPECT_EQ(same.raw(), t.raw());
    EXPECT_EQ(copied, 0u);
    // One input channel or one kernel position: OIHW and OHWI hold the same bytes, only the label moves.
    for (const Shape &s : {Shape{6, 1, 3, 3}, Shape{6, 4, 1, 1}}) {
        Tensor u = filled<float>(alloc, DType::F32, s, f32_value);
        Tensor v = prepare_weight(u, WeightPrep{Layout::OHWI, DType::F32}, 0, alloc, nullptr, &copied);
        EXPECT_EQ(v.raw(), u.raw());
        EXPECT_EQ(v.layout(), Layout::OHWI);
    }
    // A matrix has no kernel layout: OHWI asked of a rank-2 weight leaves it Plain.
    Tensor m = filled<float>(alloc, DType::F32, {5, 7}, f32_value);
    Tensor n = prepare_weight(m, WeightPrep{Layout::OHWI, DType::F32}, 0, alloc, nullptr, &copied);
    EXPECT_EQ(n.raw(), m.raw());
    EXPECT_EQ(n.layout(), Layout::Plain);
    EXPECT_EQ(copied, 0u);
}

TEST(PrepareWeight, ReordersEveryElementType) {
    Allocator alloc;
    const size_t positions = positions_of(kConv);
    Tensor f = filled<float>(alloc, DType::F32, kConv, f32_value);
    Tensor h = filled<uint16_t>(alloc, DType::F16, kConv, f16_bits);
    Tensor q = filled<uint8_t>(alloc, DType::U8, kConv, u8_value);
    q.set_quant(QuantParams{true, 0.25, 3, -1, nullptr, 0, {}});
    uint64_t copied = 0;
    Tensor fo = prepare_weight(f, WeightPrep{Layout::OHWI, DType::F32}, 0, alloc, nullptr, &copied);
    Tensor ho = prepare_weight(h, WeightPrep{Layout::OHWI, DType::F16}, 0, alloc, nullptr, &copied);
    Tensor qo = prepare_weight(q, WeightPrep{Layout::OHWI, DType::U8}, 0, alloc, nullptr, &copied);
    EXPECT_EQ(copied, static_cast<uint64_t>(f.byte_size() + h.byte_size() + q.byte_size()));
    EXPECT_EQ(qo.quant().scale, 0.25) << "a reorder keeps the quantization parameters";
    for (int64_t o = 0; o < kConv[0]; ++o)
        for (int64_t i = 0; i < kConv[1]; ++i)
            for (size_t k = 0; k < positions; ++k) {
                const size_t from = plain_index(kConv, positions, o, i, k), to = ohwi_index(kConv, positions, o, i, k);
                ASSERT_EQ(fo.data<float>()[to], f32_value(from));
                ASSERT_EQ(ho.data<uint16_t>()[to], f16_bits(from));
                ASSERT_EQ(qo.data<uint8_t>()[to], u8_value(from));
            }
    // And back: OHWI to Plain restores the original.
    Tensor back = prepare_weight(fo, WeightPrep{Layout::Plain, DType::F32}, 0, alloc, nullptr, nullptr);
    EXPECT_EQ(std::memcmp(back.raw(), f.raw(), f.byte_size()), 0);
}

TEST(PrepareWeight, WidensAndReordersInOnePass) {
    Allocator alloc;
    for (const Shape &s : {kConv, Shape{3, 4, 7}, Shape{2, 3, 2, 2, 3}}) { // 2-D, 1-D and 3-D kernels
        const size_t positions = positions_of(s);
        Tensor h = filled<uint16_t>(alloc, DType::F16, s, f16_bits);
        uint64_t copied = 0;
        Tensor w = prepare_weight(h, WeightPrep{Layout::OHWI, DType::F32}, 0, alloc, nullptr, &copied);
        EXPECT_EQ(w.dtype(), DType::F32);
        EXPECT_EQ(w.layout(), Layout::OHWI);
        EXPECT_EQ(w.shape(), s);
        EXPECT_EQ(copied, static_cast<uint64_t>(w.byte_size())) << "one output, no intermediate copy";
        for (int64_t o = 0; o < s[0]; ++o)
            for (int64_t i = 0; i < s[1]; ++i)
                for (size_t k = 0; k < positions; ++k)
                    ASSERT_EQ(w.data<float>()[ohwi_index(s, positions, o, i, k)],
                              half_value(f16_bits(plain_index(s, positions, o, i, k))))
                        << shape_str(s) << " o=" << o << " i=" << i << " k=" << k;
    }
    // Widening alone (a matrix), in the stored order.
    Tensor m = filled<uint16_t>(alloc, DType::F16, {70000, 3}, f16_bits); // more than one parallel tile
    Tensor mw = prepare_weight(m, WeightPrep{Layout::Plain, DType::F32}, 0, alloc, nullptr, nullptr);
    for (size_t k = 0; k < static_cast<size_t>(m.numel()); ++k) ASSERT_EQ(mw.data<float>()[k], half_value(f16_bits(k)));
}

TEST(PrepareWeight, DequantizesPerTensorAndPerChannelChunks) {
    Allocator alloc;
    const size_t positions = positions_of(kConv);
    Tensor q = filled<uint8_t>(alloc, DType::U8, kConv, u8_value);
    q.set_quant(QuantParams{true, 0.125, 100, -1, nullptr, 0, {}});
    Tensor w = prepare_weight(q, WeightPrep{Layout::OHWI, DType::F32}, 0, alloc, nullptr, nullptr);
    EXPECT_FALSE(w.quant().present);
    for (int64_t o = 0; o < kConv[0]; ++o)
        for (int64_t i = 0; i < kConv[1]; ++i)
            for (size_t k = 0; k < positions; ++k) {
                const int v = u8_value(plain_index(kConv, positions, o, i, k));
                ASSERT_EQ(w.data<float>()[ohwi_index(kConv, positions, o, i, k)], static_cast<float>(v - 100) * 0.125f);
            }
    // Rows 2..3 of a 6-row int8 weight with one scale per output channel: the chunk's rows take scales 2 and 3.
    auto scales = std::make_shared<const std::vector<float>>(std::vector<float>{1, 2, 0.5f, 0.25f, 8, 16});
    const Shape chunk = {2, 3, 2, 5};
    Tensor c = filled<int8_t>(alloc, DType::I8, chunk, i8_value);
    c.set_quant(QuantParams{true, 1.0, 0, 0, scales, 0, {}});
    for (Layout layout : {Layout::Plain, Layout::OHWI}) {
        Tensor d = prepare_weight(c, WeightPrep{layout, DType::F32}, 2, alloc, nullptr, nullptr);
        for (int64_t o = 0; o < chunk[0]; ++o)
            for (int64_t i = 0; i < chunk[1]; ++i)
                for (size_t k = 0; k < positions_of(chunk); ++k) {
                    const size_t from = plain_index(chunk, positions_of(chunk), o, i, k);
                    const size_t to = layout == Layout::OHWI ? ohwi_index(chunk, positions_of(chunk), o, i, k) : from;
                    ASSERT_EQ(d.data<float>()[to], static_cast<float>(i8_value(from)) * (*scales)[2 + static_cast<size_t>(o)]);
                }
    }
}

TEST(PrepareWeight, RefusesWhatItCannotDo) {
    Allocator alloc;
    Tensor f = filled<float>(alloc, DType::F32, kConv, f32_value);
    std::string msg = expect_error(ONNXSTREAM_ERR_UNSUPPORTED, [&] {
        prepare_weight(f, WeightPrep{Layout::Plain, DType::F16}, 0, alloc, nullptr, nullptr);
    });
    EXPECT_CONTAINS(msg, "float32");
    Tensor q = filled<uint8_t>(alloc, DType::U8, kConv, u8_value); // no quantization parameters
    msg = expect_error(ONNXSTREAM_ERR_INVALID_MODEL, [&] {
        prepare_weight(q, WeightPrep{Layout::OHWI, DType::F32}, 0, alloc, nullptr, nullptr);
    });
    EXPECT_CONTAINS(msg, "quantization parameters");
    // An allocation over the budget fails as OUT_OF_MEMORY, and nothing is left allocated.
    Allocator small;
    Tensor h = filled<uint16_t>(small, DType::F16, kConv, f16_bits);
    const size_t before = small.current_bytes();
    small.set_limit(before + 16);
    expect_error(ONNXSTREAM_ERR_OUT_OF_MEMORY, [&] {
        prepare_weight(h, WeightPrep{Layout::OHWI, DType::F32}, 0, small, nullptr, nullptr);
    });
    EXPECT_EQ(small.current_bytes(), before);
}

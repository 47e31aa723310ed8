#include "tensor/int4_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "tensor/half.h"
#include "util/error.h"
#include "util/strings.h"

namespace onnxstream::int4 {

std::string layout_of(const Shape &shape, int axis, int64_t block, RowLayout &out) {
    if (shape.size() != 2) return cat("an int4 weight must be 2-D, not ", shape_str(shape));
    if (axis != 0 && axis != 1) return cat("an int4 weight's axis must be 0 or 1 (the K axis), not ", axis);
    if (block < kBlockQuantum || block % kBlockQuantum != 0 || block > (int64_t{1} << 20))
        return cat("an int4 block must be a multiple of ", kBlockQuantum, " up to 2^20, not ", block);
    out.k = shape[static_cast<size_t>(axis)];
    out.n = shape[static_cast<size_t>(1 - axis)];
    out.block = block;
    if (out.k <= 0 || out.n <= 0 || out.k % block != 0)
        return cat("an int4 weight's K (", out.k, ", axis ", axis, " of ", shape_str(shape),
                   ") must be a positive multiple of its block ", block);
    return {};
}

namespace {

// `scale` as the bfloat16 bits the file stores: rounded to nearest even, and never below the smallest normal
// float (XNNPACK refuses a zero or subnormal scale).
uint16_t scale_bits(float scale) {
    uint16_t bits = float_to_bfloat16(std::max(scale, std::numeric_limits<float>::min()));
    if (bfloat16_to_float(bits) < std::numeric_limits<float>::min()) ++bits;
    return bits;
}

int code_of(float v, float scale) {
    return static_cast<int>(std::clamp(std::nearbyint(v / scale), -8.0f, 7.0f)) + static_cast<int>(kZeroCode);
}

} // namespace

void quantize_row(const float *w, int64_t stride, const RowLayout &l, uint8_t *row) {
    uint8_t *codes = row;
    uint8_t *scales = row + l.code_bytes();
    std::memset(codes, 0, static_cast<size_t>(l.code_bytes()));
    for (int64_t b = 0; b < l.scales_per_row(); ++b) {
        const int64_t first = b * l.block, end = first + l.block;
        float amax = 0.0f;
        for (int64_t i = first; i < end; ++i) amax = std::max(amax, std::fabs(w[i * stride]));
        // max|w| / 7 maps the block onto the codes without clipping; a smaller scale (clipping the largest
        // values, or using code -8) often lowers the block's error, so the candidates of kScaleSearch compete.
        uint16_t best = scale_bits(amax > 0.0f ? amax / 7.0f : 1.0f);
        if (amax > 0.0f) {
            double best_error = std::numeric_limits<double>::infinity();
            for (int step = 0; step < kScaleSearchSteps; ++step)
                for (const float divisor : {7.0f, 8.0f}) {
                    const float fraction = 1.0f - kScaleSearchStep * static_cast<float>(step);
                    const uint16_t bits = scale_bits(amax * fraction / divisor);
                    const float scale = bfloat16_to_float(bits);
                    double error = 0.0;
                    for (int64_t i = first; i < end; ++i) {
                        const float v = w[i * stride];
                        const double d = static_cast<double>(v) -
                                         static_cast<double>(code_of(v, scale) - static_cast<int>(kZeroCode)) * scale;
                        error += d * d;
                    }
                    if (error < best_error) {
                        best_error = error;
                        best = bits;
                    }
                }
        }
        const float scale = bfloat16_to_float(best);
        scales[2 * b] = static_cast<uint8_t>(best & 0xff);
        scales[2 * b + 1] = static_cast<uint8_t>(best >> 8);
        for (int64_t i = first; i < end; ++i)
            codes[i / 2] |= static_cast<uint8_t>(code_of(w[i * stride], scale) << ((i & 1) * 4));
    }
}

float value_at(const uint8_t *row, const RowLayout &l, int64_t k) {
    const int code = (row[k / 2] >> ((k & 1) * 4)) & 0xf;
    const uint8_t *s = row + l.code_bytes() + 2 * (k / l.block);
    const float scale = bfloat16_to_float(static_cast<uint16_t>(s[0] | (s[1] << 8)));
    return static_cast<float>(code - static_cast<int>(kZeroCode)) * scale;
}

void split_rows(const uint8_t *stored, int64_t first_row, int64_t rows, const RowLayout &l, int64_t k0, int64_t k1,
                uint8_t *codes, uint16_t *scales, const std::string &what) {
    if (k0 < 0 || k1 > l.k || k0 >= k1 || k0 % l.block != 0 || k1 % l.block != 0)
        fail(ONNXSTREAM_ERR_INTERNAL, what, ": int4 inputs [", k0, ", ", k1, ") are not whole blocks of ", l.block);
    const size_t code_bytes = static_cast<size_t>((k1 - k0) / 2);
    const int64_t per_row = (k1 - k0) / l.block;
    for (int64_t r = 0; r < rows; ++r) {
        const uint8_t *row = stored + r * l.row_bytes();
        std::memcpy(codes + static_cast<size_t>(r) * code_bytes, row + k0 / 2, code_bytes);
        const uint8_t *s = row + l.code_bytes() + 2 * (k0 / l.block);
        for (int64_t b = 0; b < per_row; ++b) {
            const uint16_t bits = static_cast<uint16_t>(s[2 * b] | (s[2 * b + 1] << 8));
            const float v = bfloat16_to_float(bits);
            if (!(v > 0.0f) || !std::isnormal(v))
                fail(ONNXSTREAM_ERR_INVALID_MODEL, what, ": int4 scale ", v, " of output channel ", first_row + r,
                     ", block ", k0 / l.block + b, " is not a positive normal number");
            scales[r * per_row + b] = bits;
        }
    }
}

} // namespace onnxstream::int4

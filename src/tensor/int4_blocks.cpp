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

void quantize_row(const float *w, int64_t stride, const RowLayout &l, uint8_t *row) {
    uint8_t *codes = row;
    uint8_t *scales = row + l.code_bytes();
    std::memset(codes, 0, static_cast<size_t>(l.code_bytes()));
    for (int64_t b = 0; b < l.scales_per_row(); ++b) {
        float amax = 0.0f;
        for (int64_t i = b * l.block; i < (b + 1) * l.block; ++i) amax = std::max(amax, std::fabs(w[i * stride]));
        float scale = amax > 0.0f ? amax / 7.0f : 1.0f;
        scale = std::max(scale, std::numeric_limits<float>::min());
        uint16_t bits = float_to_bfloat16(scale);
        if (bfloat16_to_float(bits) < std::numeric_limits<float>::min()) ++bits; // rounded down below normal
        const float rounded = bfloat16_to_float(bits);
        scales[2 * b] = static_cast<uint8_t>(bits & 0xff);
        scales[2 * b + 1] = static_cast<uint8_t>(bits >> 8);
        for (int64_t i = b * l.block; i < (b + 1) * l.block; ++i) {
            const float q = std::nearbyint(w[i * stride] / rounded);
            const int code = static_cast<int>(std::clamp(q, -8.0f, 7.0f)) + static_cast<int>(kZeroCode);
            codes[i / 2] |= static_cast<uint8_t>(code << ((i & 1) * 4));
        }
    }
}

float value_at(const uint8_t *row, const RowLayout &l, int64_t k) {
    const int code = (row[k / 2] >> ((k & 1) * 4)) & 0xf;
    const uint8_t *s = row + l.code_bytes() + 2 * (k / l.block);
    const float scale = bfloat16_to_float(static_cast<uint16_t>(s[0] | (s[1] << 8)));
    return static_cast<float>(code - static_cast<int>(kZeroCode)) * scale;
}

void split_rows(const uint8_t *stored, int64_t first_row, int64_t rows, const RowLayout &l, uint8_t *codes,
                uint16_t *scales, const std::string &what) {
    const size_t code_bytes = static_cast<size_t>(l.code_bytes());
    const int64_t per_row = l.scales_per_row();
    for (int64_t r = 0; r < rows; ++r) {
        const uint8_t *row = stored + r * l.row_bytes();
        std::memcpy(codes + static_cast<size_t>(r) * code_bytes, row, code_bytes);
        const uint8_t *s = row + code_bytes;
        for (int64_t b = 0; b < per_row; ++b) {
            const uint16_t bits = static_cast<uint16_t>(s[2 * b] | (s[2 * b + 1] << 8));
            const float v = bfloat16_to_float(bits);
            if (!(v > 0.0f) || !std::isnormal(v))
                fail(ONNXSTREAM_ERR_INVALID_MODEL, what, ": int4 scale ", v, " of output channel ", first_row + r,
                     ", block ", b, " is not a positive normal number");
            scales[r * per_row + b] = bits;
        }
    }
}

} // namespace onnxstream::int4

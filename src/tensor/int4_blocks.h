// Blockwise 4-bit weights (`onnxstream-convert --quantize w4`, model.txt `w.bin(int4[BLOCK,AXIS]:d0,d1)`).
//
// A 2-D MatMul or Gemm weight of N output channels and K inputs per channel; AXIS is the K axis of the
// declared shape (0 for a [K, N] weight, 1 for a Gemm transB=1 [N, K] weight). The file holds N rows, one per
// output channel, each:
//   K 4-bit codes, two per byte, the even k in the low nibble; value = (code - 8) * scale of its block,
//   then K / BLOCK bfloat16 scales (little-endian), one per run of BLOCK consecutive k.
// So the weight is read, chunked and cached as a uint8 [N, row_bytes] tensor, each chunk of output channels
// carrying its own scales, and it is packed for XNNPACK's qd8_f32_qb4w kernels as it is stored.
#pragma once

#include <cstdint>
#include <string>

#include "tensor/tensor.h"

namespace onnxstream::int4 {

// XNNPACK's smallest block (XNN_MIN_BLOCKSIZE); a block must be a multiple of it.
constexpr int64_t kBlockQuantum = 32;
// The block onnxstream-convert writes.
constexpr int64_t kDefaultBlock = 32;
constexpr unsigned kZeroCode = 8;

struct RowLayout {
    int64_t n = 0, k = 0, block = 0;
    int64_t code_bytes() const { return k / 2; }
    int64_t scales_per_row() const { return k / block; }
    int64_t row_bytes() const { return code_bytes() + 2 * scales_per_row(); }
    // The uint8 tensor the file holds: one row per output channel.
    Shape stored_shape() const { return {n, row_bytes()}; }
};

// The layout of a weight declared `int4[block,axis]` with `shape`; an empty string, or why it is not valid
// (rank, axis, block size, K not a multiple of the block).
std::string layout_of(const Shape &shape, int axis, int64_t block, RowLayout &out);

// The scales quantize_row tries per block: max|w| · f / 7 and max|w| · f / 8 for f = 1, 1 - step, ...
constexpr int kScaleSearchSteps = 17;
constexpr float kScaleSearchStep = 0.025f;

// Quantizes one output channel: k floats `stride` apart into one stored row (codes then scales). With a
// scale s, each value rounds half to even to the nearest code in [-8, 7]. Each block's s is, among the
// kScaleSearchSteps x 2 candidates above rounded to bfloat16, the one with the smallest squared error over
// the block (the first on a tie); 1 for an all-zero block; never below the smallest normal float, which
// XNNPACK requires.
void quantize_row(const float *w, int64_t stride, const RowLayout &l, uint8_t *row);

// The value of element k of a stored row (for references and tests).
float value_at(const uint8_t *row, const RowLayout &l, int64_t k);

// Splits `rows` stored rows, restricted to the inputs [k0, k1) (multiples of the block), into the two arrays
// XNNPACK takes: every row's codes back to back, and the scales [rows][(k1 - k0) / block] as bfloat16 bits.
// Throws INVALID_MODEL (naming `what` and the output channel, the stored rows being channels first_row...)
// when a scale is not positive, finite and normal.
void split_rows(const uint8_t *stored, int64_t first_row, int64_t rows, const RowLayout &l, int64_t k0, int64_t k1,
                uint8_t *codes, uint16_t *scales, const std::string &what);

} // namespace onnxstream::int4

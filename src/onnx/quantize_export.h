// --quantize w8: Conv / Gemm / MatMul weights stored as symmetric per-channel int8 (one float32 scale per
// output channel, in "<base>_scales.bin"), written into model.txt as `file.bin(int8[@scales.bin,axis]:...)`.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "onnx/ir.h"

namespace onnxstream::importer {

// Weights with fewer elements stay float: their bytes do not matter and they are often precision-critical.
constexpr int64_t kMinQuantizedElements = 4096;

// The constants to quantize, each with its channel axis: float32 constants with >= 2 dims and
// >= kMinQuantizedElements elements whose every reader takes them as the weight of a Conv (axis 0), a Gemm
// (axis 0 with transB=1, 1 with transB=0) or a MatMul with a 2-D weight [K, N] (axis 1). A constant read
// any other way, or along different axes by different readers, stays as it is.
std::map<std::string, int> plan_w8_weights(const IrGraph &g);

// Quantize `c` along `axis` and write the int8 data (plain order to plain_path, OHWI order to ohwi_path;
// an empty path is skipped) and the float32 scales to scales_path. Throws IO.
void write_w8_weight(const ConstantData &c, int axis, const std::string &plain_path, const std::string &ohwi_path,
                     const std::string &scales_path);

// --quantize w8a8: one uint8 asymmetric scale/zero point for the whole weight (OnnxStream's
// `uint8[scale,zero_point]`): the value range widened to contain 0, scale = (max - min) / 255 in float32
// (1 for an all-zero weight), zero_point = round(-min / scale); q = clamp(round(w / scale) + zero_point, 0, 255).
void u8_weight_params(const ConstantData &c, float &scale, int64_t &zero_point);
// Write the uint8 data like write_w8_weight (plain and/or OHWI order). Throws IO.
void write_u8_weight(const ConstantData &c, float scale, int64_t zero_point, const std::string &plain_path,
                     const std::string &ohwi_path);

// --quantize w4: the constants of plan_w8_weights whose every reader is input 1 (B) of a MatMul or a Gemm or
// input 1 or 3 (W1, W2, both or neither) of a GegluFeedForward, and whose K is a multiple of
// int4::kDefaultBlock, each with its K axis (0 for [K, N], 1 for [N, K]). They are stored as blockwise int4
// (tensor/int4_blocks.h); the other w8 weights as int8.
std::map<std::string, int> plan_w4_weights(const IrGraph &g);

// Quantize `c` (2-D, K along k_axis) to blockwise int4 rows of `block` and write them to path. Throws IO.
void write_w4_weight(const ConstantData &c, int k_axis, int64_t block, const std::string &path);

// "<base>_scales.bin" for the weight file base name.
std::string w8_scales_file(const std::string &base);

} // namespace onnxstream::importer

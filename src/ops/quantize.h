// Static W8A8 arithmetic (OnnxStream's uint8 arithmetic): Conv, MatMul and Gemm whose weight is uint8
// asymmetric with one scale/zero point and whose input and output have activation ranges
// (RunContext::activation_ranges, from range_data.txt) run as XNNPACK qu8 operators: the float input is
// quantized with its range, the op computes in uint8 with int32 accumulation, and the uint8 output
// (quantized with the output's range) is dequantized back to float for the next op.
//
// A Conv whose weight is per-channel symmetric int8 along the output channels (`int8[@scales.bin,0]`, what
// `--quantize w8` writes) runs the same way as XNNPACK qc8 with int8 activations (the uint8 grid shifted by
// 128). XNNPACK has no per-channel fully connected operator, so such MatMul/Gemm weights stay W8A32.
//
// Each function returns false, having done nothing, when the node does not qualify; the float op then
// runs as usual (W8A32: the weight is dequantized). Reasons: no ranges for the node, a weight that is not
// per-tensor uint8 (or, for Conv, per-channel int8), float16 activations, a non-2-D Conv or auto_pad SAME_*, a MatMul whose weight is not
// 2-D or is streamed in chunks (chunks split K, and uint8 partial sums cannot be added), Gemm with transA,
// alpha != 1 or a C that is not a vector of N, grouped Conv streamed in chunks, or scales XNNPACK rejects
// (input_scale * weight_scale / output_scale >= 256).
#pragma once

#include "ops/op.h"

namespace onnxstream {

bool run_conv_w8a8(RunContext &ctx);
bool run_matmul_w8a8(RunContext &ctx);
bool run_gemm_w8a8(RunContext &ctx);

// uint8 asymmetric parameters of a range: the range is widened to contain 0 (so zero padding is exact),
// scale = (max - min) / 255 (1 for an empty range), zero_point = round(-min / scale).
void range_to_qu8(const ActivationRange &r, float &scale, uint8_t &zero_point);

} // namespace onnxstream

// Floating-point operations of one op, for the profiler's GFLOP/s: 2 per multiply-add of the ops whose
// cost is matrix arithmetic (Conv, ConvTranspose, MatMul, Gemm, Einsum, and the fused attention and GEGLU
// feed-forward, counted as the matrix products they replace). Bias additions, activations and the
// memory-bound ops count 0: their time is bandwidth, which the profile shows as bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/attributes.h"
#include "tensor/tensor.h"

namespace onnxstream {

// inputs: the op's inputs' logical (NCHW) shapes, an empty shape for an absent optional input; outputs
// likewise. Returns 0 for an op type it does not count or shapes it cannot read.
uint64_t op_flops(const std::string &type, const Attributes &attrs, const std::vector<Shape> &inputs,
                  const std::vector<Shape> &outputs);

} // namespace onnxstream

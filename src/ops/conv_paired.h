// Narrow convolutions computed two output columns at a time.
//
// XNNPACK 2024 computes float32 convolutions on AVX-512 in tiles of 32 output channels: a convolution with
// 16 (YOLOv8n's first layers) computes 16 columns of zeros and takes as long as one with 32. The same
// convolution can be written as one with twice the output channels over half the output width: output
// pixels 2j and 2j+1 of M channels are pixel j of 2M channels, which is the same NHWC memory. The wider
// kernel covers both pixels' input columns (kernel width + stride, stride doubled): the first M output
// channels use its first kernel-width columns, the other M its last ones, zeros elsewhere. The arithmetic
// grows by (kernel width + stride) / kernel width, and the tile is full: a 3x3 convolution of 16 channels
// takes two thirds of its time.
#pragma once

#include <cstddef>

#include "xnnpack/conv.h"

namespace onnxstream {

// The paired form of s (whose input is in_w wide), or false when s does not gain from it: a tile no wider
// than twice its output channels, a grouped, dilated or sliced convolution, an odd output width, or padding
// the paired form cannot express.
bool paired_columns_shape(const xnn::Conv2dShape &s, xnn::Conv2dShape &paired);

// The paired kernel [2M][kh][kw + stride_w][C] and bias [2M] (bias_out untouched when bias is null) from
// s's OHWI kernel [M][kh][kw][C].
void paired_columns_kernel(const xnn::Conv2dShape &s, const float *kernel, const float *bias, float *kernel_out,
                           float *bias_out);

} // namespace onnxstream

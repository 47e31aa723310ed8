// Resize-18's antialias: the linear or cubic filter of a downscaled axis stretched by 1/scale (Pillow's and
// torchvision's resampling), with ONNX Runtime's float arithmetic for the window of input indices that
// each output reads, the weights, the border handling and their normalisation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace onnxstream {

enum class AntialiasFilter { Linear, Cubic };

// Per output index o: count[o] consecutive input indices from first[o], with weights
// weight[o * taps .. o * taps + count[o]) (the rest of the row is zero); taps is the window
// length, 2 * ceil(half-width of the stretched filter) + 1.
struct AntialiasWindows {
    size_t taps = 0;
    std::vector<int64_t> first;
    std::vector<uint32_t> count;
    std::vector<float> weight;
};

// The windows of one axis of `in` elements resized by `scale` (output / input, below 1 to widen the filter;
// 1 or more keeps its width). coords[o] is output o's source coordinate (the coordinate transformation of
// the Resize; output o of an axis whose scale is exactly 1 is at o). cubic_a is cubic_coeff_a;
// exclude_outside drops the filter taps outside the input instead of folding them onto the border.
AntialiasWindows antialias_windows(AntialiasFilter filter, float cubic_a, bool exclude_outside, int64_t in,
                                   float scale, const std::vector<float> &coords);

} // namespace onnxstream

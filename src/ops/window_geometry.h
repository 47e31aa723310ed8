// What the windowed ops (Conv, ConvInteger, ConvTranspose, the pools) read from their attributes and shapes
// alike: per-axis integer lists, auto_pad, and for the convolution family the whole forward geometry. One
// reading means one set of checks and one wording of their errors.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ops/attributes.h"
#include "tensor/tensor.h"

namespace onnxstream::window {

// XNNPACK takes 32-bit geometry, and indices computed from 32-bit values fit int64: larger values are valid
// ONNX but out of reach (ONNXSTREAM_ERR_UNSUPPORTED).
constexpr int64_t kMaxGeometry = std::numeric_limits<int32_t>::max();

enum class AutoPad { NotSet, SameUpper, SameLower, Valid };

// auto_pad (empty reads as NOTSET); an unknown value is an invalid model.
AutoPad parse_auto_pad(const Attributes &attrs, const std::string &where);

// An integer-list attribute with one value per axis (`count` values, or `fallback` for each when absent).
// Values below `min` are invalid, values above `max` unsupported.
std::vector<int64_t> per_axis(const Attributes &attrs, const std::string &where, const char *name, size_t count,
                              int64_t fallback, int64_t min, int64_t max = std::numeric_limits<int64_t>::max());

// SAME_UPPER / SAME_LOWER padding of one axis: the output is ceil(in / stride); an odd unit of padding
// goes to the end for SAME_UPPER, to the start for SAME_LOWER.
void same_padding(AutoPad mode, int64_t in, int64_t stride, int64_t dilated_kernel, int64_t &begin, int64_t &end);

// How errors name a convolution and its operands: Conv says "input"/"weight", ConvInteger "x"/"w".
struct ConvNames {
    const char *op;
    const char *x, *w;         // as a sentence's subject
    const char *the_x, *the_w; // elsewhere
};
extern const ConvNames kConvNames, kConvTransposeNames, kConvIntegerNames;

// Everything about a convolution that follows from the attributes and the x / weight shapes.
struct ConvGeometry {
    size_t spatial = 0;
    int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
    std::vector<int64_t> in, kernel, strides, dilations, pad_begin, pad_end, out;
};

// x of rank 3 to max_spatial + 2 (2 or 3) and a weight of the same rank.
void check_ranks(const std::string &where, const Shape &x, const Shape &w, const ConvNames &names,
                 size_t max_spatial = 2);

// kernel (the weight's spatial dims, checked against kernel_shape), strides, dilations and pads into g.
void read_window_attrs(const Attributes &attrs, const std::string &where, ConvGeometry &g, const Shape &w,
                       const ConvNames &names);

// The forward convolution (Conv, ConvInteger): weight (M, C/group, k...), auto_pad applied, output sizes.
ConvGeometry conv_geometry(const Attributes &attrs, const std::string &where, const Shape &x, const Shape &w,
                           const ConvNames &names);

} // namespace onnxstream::window

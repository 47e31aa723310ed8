#include "ops/conv_paired.h"

#include <cstring>

namespace onnxstream {

bool paired_columns_shape(const xnn::Conv2dShape &s, xnn::Conv2dShape &paired) {
    const size_t tile = xnn::f32_conv_tile_columns();
    if (tile == 0 || 2 * s.group_out > tile || s.groups != 1 || s.dilation_w != 1) return false;
    if ((s.output_pixel_stride && s.output_pixel_stride != s.group_out) ||
        (s.input_pixel_stride && s.input_pixel_stride != s.group_in))
        return false;
    const size_t padded_w = s.in_w + s.pad_left + s.pad_right;
    if (padded_w < s.kernel_w) return false;
    const size_t out_w = (padded_w - s.kernel_w) / s.stride_w + 1;
    if (out_w % 2 != 0) return false;
    // Pixel j of the paired form starts where pixel 2j did, covers the kernel_w + stride columns of pixels
    // 2j and 2j+1, and steps two strides: its right padding makes its width out_w / 2 exactly.
    const size_t kernel_w = s.kernel_w + s.stride_w, stride_w = 2 * s.stride_w;
    const size_t last_end = (out_w / 2 - 1) * stride_w + kernel_w; // one past the last padded column read
    if (last_end < s.in_w + s.pad_left) return false;               // it would need a negative right padding
    paired = s;
    paired.kernel_w = static_cast<uint32_t>(kernel_w);
    paired.stride_w = static_cast<uint32_t>(stride_w);
    paired.pad_right = static_cast<uint32_t>(last_end - s.in_w - s.pad_left);
    paired.group_out = 2 * s.group_out;
    paired.output_pixel_stride = 0;
    paired.input_pixel_stride = 0;
    return true;
}

void paired_columns_kernel(const xnn::Conv2dShape &s, const float *kernel, const float *bias, float *kernel_out,
                           float *bias_out) {
    const size_t m = s.group_out, kh = s.kernel_h, kw = s.kernel_w, c = s.group_in;
    const size_t pkw = kw + s.stride_w; // the paired kernel's width
    std::memset(kernel_out, 0, 2 * m * kh * pkw * c * sizeof(float));
    for (size_t half = 0; half < 2; ++half) {
        const size_t shift = half * s.stride_w; // the second pixel's columns start one stride later
        for (size_t o = 0; o < m; ++o)
            for (size_t y = 0; y < kh; ++y) {
                float *row = kernel_out + (((half * m + o) * kh + y) * pkw + shift) * c;
                std::memcpy(row, kernel + ((o * kh + y) * kw) * c, kw * c * sizeof(float));
            }
    }
    if (bias) {
        std::memcpy(bias_out, bias, m * sizeof(float));
        std::memcpy(bias_out + m, bias, m * sizeof(float));
    }
}

} // namespace onnxstream

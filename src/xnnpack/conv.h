// XNNPACK kernels for the conv family: 2-D convolution and deconvolution (transposed convolution) on NHWC
// float32 activations. 1-D convolutions are 2-D ones with a height of 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include <pthreadpool.h>

namespace onnxstream::xnn {

class PackingScope;

struct Conv2dShape {
    size_t batch = 1, in_h = 1, in_w = 1;
    uint32_t kernel_h = 1, kernel_w = 1;
    uint32_t stride_h = 1, stride_w = 1;
    uint32_t dilation_h = 1, dilation_w = 1;
    uint32_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
    uint32_t groups = 1;
    size_t group_in = 1, group_out = 1; // channels per group
    // Distance between output pixels in floats (0: groups * group_out). A larger stride writes a slice of
    // the output channels, e.g. one output-channel chunk of a weight streamed in chunks.
    size_t output_pixel_stride = 0;
    // Distance between input pixels in floats (0: groups * group_in). A larger stride reads a slice of
    // the input channels.
    size_t input_pixel_stride = 0;
};

// Output channels XNNPACK's float32 convolution computes per tile on this CPU, where known: 32 for the
// 2024 API on x86 with AVX-512 (perf annotate of its kernels: 7x32), else 0 (not known; the 2022 API's
// AVX-512 tile is 16 wide, ARM's 8 or 16). A convolution with fewer output channels computes zeros for
// the rest of the tile.
size_t f32_conv_tile_columns();

// output[n, oh, ow, g*group_out + o] = bias + sum over (kh, kw, i) of
//   input[n, oh*stride - pad + kh*dilation, ..., g*group_in + i] * kernel[g*group_out + o, kh, kw, i].
// kernel is OHWI ([groups*group_out][kernel_h][kernel_w][group_in]); bias (groups*group_out) may be null.
// input must stay readable 16 bytes past its end. The output size follows from the shape:
// (in + pads - dilated kernel) / stride + 1.
void conv2d_nhwc_f32(const Conv2dShape &s, const float *input, const float *kernel, const float *bias,
                     float *output, pthreadpool_t pool);

// The same convolution as a created operator: the weights are packed once, and later runs on inputs of
// the same size only rebase XNNPACK's indirection buffer instead of rebuilding it. kernel and bias need
// not outlive the constructor.
class Conv2dOperator {
public:
    Conv2dOperator(const Conv2dShape &s, const float *kernel, const float *bias);
    // The operator whose packed weights `packing` finds in its store, without the kernel itself; null when
    // the store does not hold them (or there is no store: builds against the 2022 API, a scope without
    // one). The bias is only said to be present or not: the packed bytes carry it.
    static std::shared_ptr<Conv2dOperator> from_store(PackingScope &packing, const Conv2dShape &s, bool has_bias);
    ~Conv2dOperator();
    Conv2dOperator(const Conv2dOperator &) = delete;
    Conv2dOperator &operator=(const Conv2dOperator &) = delete;
    void run(size_t batch, size_t in_h, size_t in_w, const float *input, float *output, pthreadpool_t pool);
    // For an operator kept between runs, after its run: packed weights mapped from a packed-weights file
    // leave the process's resident pages until the next run reads them (PackedStore::idle).
    void release_weight_pages();

private:
    Conv2dOperator() = default;
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// float16 arithmetic (XNNPACK's f16 kernels): the same convolution on NHWC float16 activations (output
// pixel stride in elements, as above). kernel/bias are float16 bits, or float32 when weights_f32
// (XNN_FLAG_FP32_STATIC_WEIGHTS; both then float32). create() returns null when this CPU has no float16
// kernels (xnn_status_unsupported_hardware) so the caller can compute in float32 instead; other failures
// throw like the float32 operator's.
class Conv2dF16Operator {
public:
    static std::unique_ptr<Conv2dF16Operator> create(const Conv2dShape &s, const void *kernel, const void *bias,
                                                     bool weights_f32);
    ~Conv2dF16Operator();
    Conv2dF16Operator(const Conv2dF16Operator &) = delete;
    Conv2dF16Operator &operator=(const Conv2dF16Operator &) = delete;
    // input must stay readable 16 bytes past its end.
    void run(size_t batch, size_t in_h, size_t in_w, const uint16_t *input, uint16_t *output, pthreadpool_t pool);
    void release_weight_pages(); // as Conv2dOperator's

private:
    Conv2dF16Operator();
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

struct Deconv2dShape {
    size_t batch = 1, in_h = 1, in_w = 1;
    uint32_t kernel_h = 1, kernel_w = 1;
    uint32_t stride_h = 1, stride_w = 1;
    uint32_t dilation_h = 1, dilation_w = 1;
    // Rows/columns cropped from each side of the full (stride*(in-1) + dilated kernel) output.
    uint32_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
    // Extra rows/columns appended at the bottom/right (ONNX output_padding); must be < stride.
    uint32_t adjustment_h = 0, adjustment_w = 0;
    uint32_t groups = 1;
    size_t group_in = 1, group_out = 1;
};

// Transposed convolution. kernel is [groups][group_out][kernel_h][kernel_w][group_in]; bias may be null.
// Output height: stride_h*(in_h-1) + adjustment_h + dilated kernel_h - pad_top - pad_bottom.
void deconv2d_nhwc_f32(const Deconv2dShape &s, const float *input, const float *kernel, const float *bias,
                       float *output, pthreadpool_t pool);

} // namespace onnxstream::xnn

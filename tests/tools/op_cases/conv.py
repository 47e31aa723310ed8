"""Conv and ConvTranspose, 1-D and 2-D (ConvTranspose 3-D too): padding (explicit, asymmetric, every auto_pad),
strides, dilations, groups (incl. depthwise and channel multipliers), optional bias, weights as files (OHWI path)
and as run-time inputs (plain OIHW path), float16, batches, and channel counts large enough to exercise XNNPACK's
tiling."""

from opcase import Case, rand, weight

CASES = []


def add(*args, **kw):
    CASES.append(Case(*args, **kw))


def conv(name, x, w, b=True, runtime_w=False, dtype="float32", **attrs):
    """x: input shape, w: weight shape (M, C/group, k...); the bias is a weight of M values."""
    opts = {}
    for k in ("atol", "rtol", "opset", "chunk_bytes"):
        if k in attrs:
            opts[k] = attrs.pop(k)
    wt = rand(*w, dtype=dtype) if runtime_w else weight(rand(*w, dtype=dtype))
    inputs = [rand(*x, dtype=dtype), wt]
    if b:
        inputs.append(weight(rand(w[0], dtype=dtype)))
    add(name, "Conv", inputs, attrs=attrs, **opts)


# --- 2-D -------------------------------------------------------------------------------------------------------
conv("conv2d_3x3_pad1", (1, 8, 12, 12), (16, 8, 3, 3), pads=[1, 1, 1, 1])
conv("conv2d_3x3_no_bias", (1, 8, 12, 12), (16, 8, 3, 3), b=False, pads=[1, 1, 1, 1])
conv("conv2d_no_pads_attr", (1, 4, 9, 7), (6, 4, 3, 2))
conv("conv2d_kernel_shape_attr", (1, 4, 9, 7), (6, 4, 3, 2), kernel_shape=[3, 2], pads=[1, 0, 1, 1])
conv("conv2d_stride2", (1, 8, 15, 16), (12, 8, 3, 3), strides=[2, 2], pads=[1, 1, 1, 1])
conv("conv2d_stride_hw", (1, 3, 17, 13), (5, 3, 3, 5), strides=[3, 2], pads=[0, 2, 1, 2])
conv("conv2d_asym_pads", (1, 6, 10, 11), (7, 6, 3, 3), pads=[0, 1, 2, 3])
conv("conv2d_dilation2", (1, 4, 16, 16), (8, 4, 3, 3), dilations=[2, 2], pads=[2, 2, 2, 2])
conv("conv2d_dilation_hw", (1, 4, 16, 18), (8, 4, 3, 2), dilations=[3, 2], strides=[1, 2], pads=[1, 0, 2, 1])
conv("conv2d_1x1", (1, 32, 10, 10), (24, 32, 1, 1))
conv("conv2d_1x1_stride2", (1, 16, 11, 11), (8, 16, 1, 1), strides=[2, 2])
conv("conv2d_5x5_even_pad", (1, 3, 20, 20), (4, 3, 5, 5), pads=[2, 2, 2, 2])
# 16 or fewer output channels over an even output width: on XNNPACK 2024 with AVX-512 these run as
# convolutions of twice the channels over half the width (src/ops/conv_paired.h); odd widths do not.
conv("conv2d_narrow_stem_s2", (1, 3, 32, 40), (16, 3, 3, 3), strides=[2, 2], pads=[1, 1, 1, 1])
conv("conv2d_narrow_asym_stride", (1, 4, 9, 17), (8, 4, 3, 5), strides=[1, 3], pads=[0, 2, 1, 1])
conv("conv2d_narrow_odd_width", (1, 16, 10, 11), (16, 16, 3, 3), pads=[1, 1, 1, 1])
conv("conv2d_narrow_batch2", (2, 16, 8, 20), (16, 16, 3, 3), pads=[1, 1, 1, 1])
# chunk_bytes: one more run with the weight streamed in output-channel chunks (the last one shorter).
conv("conv2d_3x3_chunked", (1, 8, 12, 12), (16, 8, 3, 3), pads=[1, 1, 1, 1], chunk_bytes=1024)
conv("conv2d_1x1_chunked", (2, 32, 10, 10), (24, 32, 1, 1), chunk_bytes=512)
# A whole weight over half of a thread's level-2 cache (1.5 MB): output-channel blocks that fit it, each its
# own convolution (src/ops/column_blocks.h), the last one shorter; with chunk_bytes also streamed in chunks
# wider than those blocks.
conv("conv2d_channel_blocks", (1, 256, 12, 12), (160, 256, 3, 3), pads=[1, 1, 1, 1], atol=2e-4)
conv("conv2d_channel_blocks_streamed", (1, 256, 9, 10), (160, 256, 3, 3), pads=[1, 1, 1, 1], atol=2e-4,
     chunk_bytes=1 << 20)
# A long reduction (3 x 3 over 1000 input channels): on x86, operators of a part of the input channels
# each, their partial sums added (src/ops/column_blocks.h, input_channel_part), the last part shorter; whole,
# streamed in output-channel chunks, and kept from run to run.
conv("conv2d_long_reduction", (1, 1000, 5, 6), (72, 1000, 3, 3), pads=[1, 1, 1, 1], atol=5e-4, rtol=5e-4)
conv("conv2d_long_reduction_streamed", (1, 1000, 4, 4), (40, 1000, 3, 3), pads=[1, 1, 1, 1], atol=5e-4,
     rtol=5e-4, chunk_bytes=1 << 20)
conv("conv2d_even_kernel", (1, 5, 10, 10), (6, 5, 4, 4), pads=[1, 2, 2, 1])
conv("conv2d_batch3", (3, 6, 9, 9), (10, 6, 3, 3), pads=[1, 1, 1, 1])
conv("conv2d_single_in_channel", (2, 1, 14, 14), (6, 1, 3, 3), pads=[1, 1, 1, 1])
conv("conv2d_single_out_channel", (2, 7, 14, 14), (1, 7, 3, 3), pads=[1, 1, 1, 1])
conv("conv2d_1x1_spatial", (2, 16, 1, 1), (8, 16, 1, 1))
conv("conv2d_kernel_covers_input", (1, 6, 5, 5), (9, 6, 5, 5))
conv("conv2d_first_layer_s2", (1, 3, 64, 64), (16, 3, 3, 3), strides=[2, 2], pads=[1, 1, 1, 1])
conv("conv2d_big_channels", (1, 96, 20, 20), (160, 96, 3, 3), pads=[1, 1, 1, 1], atol=5e-4, rtol=5e-4)
conv("conv2d_big_1x1", (1, 256, 12, 12), (300, 256, 1, 1), atol=5e-4, rtol=5e-4)
conv("conv2d_big_spatial", (1, 16, 80, 80), (32, 16, 3, 3), strides=[2, 2], pads=[1, 1, 1, 1])
conv("conv2d_odd_channels", (1, 13, 9, 9), (17, 13, 3, 3), pads=[1, 1, 1, 1])

# groups
conv("conv2d_group2", (1, 8, 10, 10), (12, 4, 3, 3), group=2, pads=[1, 1, 1, 1])
conv("conv2d_group4_stride2", (1, 16, 11, 11), (8, 4, 3, 3), group=4, strides=[2, 2], pads=[1, 1, 1, 1])
conv("conv2d_group3_1x1", (1, 12, 6, 6), (9, 4, 1, 1), group=3)
conv("conv2d_depthwise3x3", (1, 16, 12, 12), (16, 1, 3, 3), group=16, pads=[1, 1, 1, 1])
conv("conv2d_depthwise_stride2", (1, 32, 15, 15), (32, 1, 3, 3), group=32, strides=[2, 2], pads=[1, 1, 1, 1])
conv("conv2d_depthwise5x5_no_bias", (2, 8, 13, 13), (8, 1, 5, 5), b=False, group=8, pads=[2, 2, 2, 2])
conv("conv2d_depthwise_dilated", (1, 8, 16, 16), (8, 1, 3, 3), group=8, dilations=[2, 2], pads=[2, 2, 2, 2])
conv("conv2d_depthwise_multiplier2", (1, 6, 10, 10), (12, 1, 3, 3), group=6, pads=[1, 1, 1, 1])
conv("conv2d_depthwise_big", (1, 128, 20, 20), (128, 1, 3, 3), group=128, pads=[1, 1, 1, 1])
conv("conv2d_depthwise_asym", (1, 8, 9, 12), (8, 1, 3, 3), group=8, pads=[0, 1, 2, 0], strides=[2, 1])

# auto_pad
conv("conv2d_same_upper", (1, 4, 10, 11), (6, 4, 3, 3), auto_pad="SAME_UPPER")
conv("conv2d_same_upper_s2_even", (1, 4, 10, 11), (6, 4, 4, 4), auto_pad="SAME_UPPER", strides=[2, 2])
conv("conv2d_same_lower_s2_even", (1, 4, 10, 11), (6, 4, 4, 4), auto_pad="SAME_LOWER", strides=[2, 2])
conv("conv2d_valid", (1, 4, 10, 11), (6, 4, 3, 3), auto_pad="VALID", strides=[2, 2])
conv("conv2d_notset_explicit", (1, 4, 8, 8), (6, 4, 3, 3), auto_pad="NOTSET", pads=[1, 1, 1, 1])

# weight computed at run time: arrives in plain OIHW layout
conv("conv2d_runtime_weight", (1, 6, 9, 9), (8, 6, 3, 3), runtime_w=True, pads=[1, 1, 1, 1])
conv("conv2d_runtime_weight_group", (1, 6, 9, 9), (9, 2, 3, 3), runtime_w=True, group=3, pads=[1, 0, 1, 0])
conv("conv2d_runtime_weight_depthwise", (1, 6, 9, 9), (6, 1, 3, 3), runtime_w=True, group=6)

# float16 (computed in float32)
conv("conv2d_f16", (1, 8, 10, 10), (12, 8, 3, 3), dtype="float16", pads=[1, 1, 1, 1])
conv("conv2d_f16_depthwise", (1, 8, 10, 10), (8, 1, 3, 3), dtype="float16", group=8, pads=[1, 1, 1, 1])
conv("conv2d_f16_runtime_weight", (1, 4, 7, 7), (5, 4, 3, 3), dtype="float16", runtime_w=True)
conv("conv1d_f16", (1, 4, 20), (6, 4, 3), dtype="float16", pads=[1, 1])
conv("conv2d_f16_wide", (1, 32, 12, 12), (40, 32, 3, 3), dtype="float16", pads=[1, 1, 1, 1])

# older opsets
conv("conv2d_opset11", (1, 4, 8, 8), (6, 4, 3, 3), pads=[1, 1, 1, 1], opset=11)

# --- 1-D -------------------------------------------------------------------------------------------------------
conv("conv1d_basic", (1, 8, 30), (16, 8, 3), pads=[1, 1])
conv("conv1d_no_bias", (2, 4, 17), (6, 4, 5), b=False)
conv("conv1d_stride_dilation", (1, 6, 40), (10, 6, 3), strides=[2], dilations=[3], pads=[2, 1])
conv("conv1d_group", (1, 12, 25), (6, 4, 3), group=3, pads=[1, 1])
conv("conv1d_depthwise", (1, 16, 50), (16, 1, 7), group=16, pads=[3, 3])
conv("conv1d_same_upper", (1, 4, 21), (8, 4, 4), auto_pad="SAME_UPPER", strides=[2])
conv("conv1d_same_lower", (1, 4, 21), (8, 4, 4), auto_pad="SAME_LOWER", strides=[2])
conv("conv1d_valid", (1, 4, 21), (8, 4, 4), auto_pad="VALID", strides=[3])
conv("conv1d_runtime_weight", (1, 5, 19), (7, 5, 3), runtime_w=True, pads=[0, 2])
conv("conv1d_kernel1", (1, 64, 33), (48, 64, 1))


# --- ConvTranspose ---------------------------------------------------------------------------------------------
def deconv(name, x, w, group=1, b=True, runtime_w=False, dtype="float32", **attrs):
    """w: ONNX ConvTranspose weight shape (C, M/group, k...)."""
    opts = {}
    for k in ("atol", "rtol", "opset"):
        if k in attrs:
            opts[k] = attrs.pop(k)
    if group != 1:
        attrs["group"] = group
    wt = rand(*w, dtype=dtype) if runtime_w else weight(rand(*w, dtype=dtype))
    inputs = [rand(*x, dtype=dtype), wt]
    if b:
        inputs.append(weight(rand(w[1] * group, dtype=dtype)))
    add(name, "ConvTranspose", inputs, attrs=attrs, **opts)


deconv("deconv2d_basic", (1, 4, 5, 5), (4, 6, 3, 3))
deconv("deconv2d_no_bias", (1, 4, 5, 6), (4, 3, 3, 3), b=False)
deconv("deconv2d_stride2_pad1", (1, 8, 6, 6), (8, 4, 3, 3), strides=[2, 2], pads=[1, 1, 1, 1])
deconv("deconv2d_stride2_outpad", (1, 8, 6, 6), (8, 4, 3, 3), strides=[2, 2], pads=[1, 1, 1, 1],
       output_padding=[1, 1])
deconv("deconv2d_k2s2", (2, 16, 7, 7), (16, 8, 2, 2), strides=[2, 2])
deconv("deconv2d_k4s2p1", (1, 6, 8, 8), (6, 5, 4, 4), strides=[2, 2], pads=[1, 1, 1, 1])
deconv("deconv2d_asym_pads", (1, 4, 6, 7), (4, 3, 3, 3), strides=[2, 3], pads=[0, 1, 2, 1])
deconv("deconv2d_dilation", (1, 4, 6, 6), (4, 3, 3, 3), dilations=[2, 2], strides=[2, 1], pads=[1, 0, 1, 2])
deconv("deconv2d_group2", (1, 8, 5, 5), (8, 3, 3, 3), group=2, strides=[2, 2], pads=[1, 1, 1, 1])
deconv("deconv2d_depthwise", (1, 8, 6, 6), (8, 1, 3, 3), group=8, strides=[2, 2], pads=[1, 1, 1, 1],
       output_padding=[1, 1])
deconv("deconv2d_output_shape", (1, 4, 5, 5), (4, 3, 3, 3), strides=[2, 2], output_shape=[10, 10])
deconv("deconv2d_output_shape_odd", (1, 4, 5, 5), (4, 3, 3, 3), strides=[2, 2], output_shape=[9, 10])
deconv("deconv2d_output_shape_same_upper", (1, 4, 5, 5), (4, 3, 3, 3), strides=[2, 2], output_shape=[10, 9],
       auto_pad="SAME_UPPER")
deconv("deconv2d_same_upper", (1, 4, 5, 6), (4, 3, 3, 3), strides=[2, 2], auto_pad="SAME_UPPER")
deconv("deconv2d_same_lower", (1, 4, 5, 6), (4, 3, 3, 3), strides=[2, 2], auto_pad="SAME_LOWER")
deconv("deconv2d_valid", (1, 4, 5, 6), (4, 3, 3, 3), strides=[2, 2], auto_pad="VALID")
deconv("deconv2d_outpad_beyond", (1, 4, 5, 5), (4, 3, 3, 3), strides=[2, 2], output_padding=[1, 1])
deconv("deconv2d_runtime_weight", (1, 4, 5, 5), (4, 3, 3, 3), runtime_w=True, strides=[2, 2], pads=[1, 1, 1, 1])
deconv("deconv2d_big", (1, 64, 10, 10), (64, 32, 4, 4), strides=[2, 2], pads=[1, 1, 1, 1], atol=3e-4, rtol=3e-4)
deconv("deconv2d_f16", (1, 4, 5, 5), (4, 6, 3, 3), dtype="float16", strides=[2, 2], pads=[1, 1, 1, 1])
deconv("deconv1d_basic", (1, 4, 10), (4, 6, 3), strides=[2], pads=[1, 1], output_padding=[1])
deconv("deconv1d_group", (2, 6, 9), (6, 2, 4), group=3, strides=[3], pads=[1, 0])
deconv("deconv1d_no_bias_dilated", (1, 4, 8), (4, 5, 3), b=False, dilations=[2])
# 3-D: onnxstream's own loop (XNNPACK's deconvolution is 2-D only)
deconv("deconv3d_basic", (1, 2, 3, 4, 5), (2, 3, 2, 3, 2))
deconv("deconv3d_stride_pads_outpad", (1, 4, 3, 4, 5), (4, 2, 3, 3, 3), strides=[2, 1, 2],
       pads=[1, 0, 1, 0, 1, 1], output_padding=[1, 0, 1])
deconv("deconv3d_dilation_group", (2, 6, 3, 3, 4), (6, 2, 2, 3, 2), group=3, dilations=[2, 1, 2],
       strides=[1, 2, 2], pads=[0, 1, 1, 1, 0, 0])
deconv("deconv3d_depthwise_outpad", (1, 4, 4, 3, 3), (4, 1, 3, 2, 3), group=4, strides=[2, 3, 2],
       pads=[1, 0, 1, 1, 0, 0], output_padding=[1, 2, 0])
deconv("deconv3d_no_bias_runtime_weight", (1, 3, 4, 3, 5), (3, 2, 2, 2, 3), b=False, runtime_w=True,
       strides=[2, 2, 1])
deconv("deconv3d_output_shape_same_upper", (1, 2, 3, 3, 4), (2, 3, 3, 3, 3), strides=[2, 2, 2],
       output_shape=[6, 5, 8], auto_pad="SAME_UPPER")
deconv("deconv3d_f16", (1, 2, 3, 4, 3), (2, 2, 3, 2, 2), dtype="float16", strides=[2, 1, 2],
       pads=[1, 0, 0, 0, 1, 1])

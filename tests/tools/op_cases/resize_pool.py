"""Pooling and resizing: MaxPool/AveragePool (1-D/2-D/3-D, strides, dilations, asymmetric pads, ceil_mode,
auto_pad, count_include_pad), GlobalAveragePool/GlobalMaxPool, Resize (nearest with every nearest_mode,
linear and cubic, every coordinate_transformation_mode, scales or sizes, roi with tf_crop_and_resize, opset
10/11/13/18/19 input forms, axes, keep_aspect_ratio_policy and antialias), Upsample (opset 7 and 9) and GridSample
(every mode, padding mode and align_corners)."""

import numpy as np

from opcase import Case, const, rand, weight

CASES = []


def add(*args, **kw):
    CASES.append(Case(*args, **kw))


# --- MaxPool ---------------------------------------------------------------------------------------------------
def maxpool(name, shape, dtype="float32", **kw):
    opts = {k: kw.pop(k) for k in ("opset", "out_shapes", "outputs") if k in kw}
    x = rand(*shape, dtype=dtype, low=-100, high=100) if dtype in ("int8", "uint8") else rand(*shape, dtype=dtype)
    add(name, "MaxPool", [x], attrs=kw, **opts)


maxpool("maxpool_k2s2", (1, 3, 8, 8), kernel_shape=[2, 2], strides=[2, 2])
maxpool("maxpool_k3s1p1", (2, 4, 9, 10), kernel_shape=[3, 3], pads=[1, 1, 1, 1])
maxpool("maxpool_sppf_k5", (1, 128, 20, 20), kernel_shape=[5, 5], pads=[2, 2, 2, 2], dilations=[1, 1],
        ceil_mode=0, strides=[1, 1])
maxpool("maxpool_k3s2p1", (1, 16, 15, 16), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
maxpool("maxpool_asym_pads", (1, 2, 9, 11), kernel_shape=[3, 4], pads=[0, 1, 2, 3], strides=[1, 2])
maxpool("maxpool_dilation", (1, 3, 12, 12), kernel_shape=[3, 3], dilations=[2, 3], pads=[1, 2, 1, 2])
maxpool("maxpool_ceil", (1, 2, 10, 11), kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
maxpool("maxpool_ceil_pads", (1, 2, 10, 11), kernel_shape=[2, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)
# onnx 1.12's shape inference keeps a last window that starts past the input; ONNX Runtime drops it
maxpool("maxpool_ceil_last_window_dropped", (1, 2, 5, 7), kernel_shape=[1, 2], strides=[3, 3], ceil_mode=1,
        out_shapes=[(1, 2, 2, 3)])
maxpool("maxpool_stride_gt_kernel", (1, 2, 13, 13), kernel_shape=[2, 2], strides=[3, 3])
maxpool("maxpool_k1s2", (1, 4, 9, 8), kernel_shape=[1, 1], strides=[2, 2])
maxpool("maxpool_same_upper", (1, 3, 9, 10), kernel_shape=[3, 2], strides=[2, 2], auto_pad="SAME_UPPER")
maxpool("maxpool_same_lower", (1, 3, 9, 10), kernel_shape=[3, 2], strides=[2, 2], auto_pad="SAME_LOWER")
maxpool("maxpool_valid", (1, 3, 9, 10), kernel_shape=[3, 3], strides=[2, 2], auto_pad="VALID")
maxpool("maxpool_1d", (2, 3, 20), kernel_shape=[3], strides=[2], pads=[1, 1])
maxpool("maxpool_1d_ceil_dilated", (1, 3, 17), kernel_shape=[2], strides=[2], dilations=[2], ceil_mode=1)
maxpool("maxpool_3d", (1, 2, 6, 7, 8), kernel_shape=[2, 3, 2], strides=[2, 1, 2], pads=[0, 1, 1, 1, 1, 0])
maxpool("maxpool_f16", (1, 4, 10, 10), dtype="float16", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
# The window-by-window path: 8-bit integers and the Indices output (flat NCHW index of each maximum).
maxpool("maxpool_i8", (1, 3, 9, 10), dtype="int8", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], opset=12)
maxpool("maxpool_u8_ceil", (2, 2, 7, 7), dtype="uint8", kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1, opset=12)
maxpool("maxpool_indices", (2, 3, 8, 9), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], outputs=2)
maxpool("maxpool_indices_col_major", (1, 2, 6, 7), kernel_shape=[2, 3], strides=[2, 2], storage_order=1, outputs=2)
maxpool("maxpool_indices_dilated", (1, 2, 9, 9), kernel_shape=[2, 2], dilations=[2, 2], outputs=2, opset=12)
maxpool("maxpool_indices_1d", (2, 2, 11), kernel_shape=[3], strides=[2], outputs=2)
maxpool("maxpool_indices_3d", (1, 2, 4, 5, 6), kernel_shape=[2, 2, 2], strides=[2, 2, 2], outputs=2)
maxpool("maxpool_indices_f16", (1, 2, 6, 6), dtype="float16", kernel_shape=[2, 2], strides=[2, 2], outputs=2)
maxpool("maxpool_opset8", (1, 3, 8, 8), kernel_shape=[2, 2], strides=[2, 2], opset=8)
maxpool("maxpool_opset11", (1, 3, 8, 9), kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1, opset=11)


# --- AveragePool -----------------------------------------------------------------------------------------------
def avgpool(name, shape, dtype="float32", **kw):
    opts = {k: kw.pop(k) for k in ("opset", "out_shapes") if k in kw}
    add(name, "AveragePool", [rand(*shape, dtype=dtype)], attrs=kw, **opts)


avgpool("avgpool_k2s2", (1, 3, 8, 8), kernel_shape=[2, 2], strides=[2, 2])
avgpool("avgpool_k3s1p1_exclude_pad", (2, 4, 9, 10), kernel_shape=[3, 3], pads=[1, 1, 1, 1])
avgpool("avgpool_k3s1p1_include_pad", (2, 4, 9, 10), kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)
avgpool("avgpool_asym_exclude", (1, 2, 9, 11), kernel_shape=[3, 4], pads=[0, 1, 2, 3], strides=[1, 2])
avgpool("avgpool_asym_include", (1, 2, 9, 11), kernel_shape=[3, 4], pads=[0, 1, 2, 3], strides=[1, 2],
        count_include_pad=1)
avgpool("avgpool_ceil_exclude", (1, 2, 10, 11), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)
avgpool("avgpool_ceil_include", (1, 2, 10, 11), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1,
        count_include_pad=1)
avgpool("avgpool_ceil_no_pads", (1, 2, 10, 11), kernel_shape=[3, 2], strides=[2, 3], ceil_mode=1,
        count_include_pad=1)
avgpool("avgpool_same_upper", (1, 3, 9, 10), kernel_shape=[3, 2], strides=[2, 2], auto_pad="SAME_UPPER")
avgpool("avgpool_same_lower_include", (1, 3, 9, 10), kernel_shape=[3, 2], strides=[2, 2], auto_pad="SAME_LOWER",
        count_include_pad=1)
avgpool("avgpool_valid", (1, 3, 9, 10), kernel_shape=[3, 3], strides=[2, 2], auto_pad="VALID")
avgpool("avgpool_big", (1, 64, 40, 40), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
avgpool("avgpool_1d", (2, 3, 20), kernel_shape=[4], strides=[3], pads=[2, 1], count_include_pad=1)
avgpool("avgpool_3d", (1, 2, 6, 7, 8), kernel_shape=[2, 3, 2], strides=[2, 1, 2], pads=[0, 1, 1, 1, 1, 0])
avgpool("avgpool_3d_include_ceil", (1, 2, 6, 7, 8), kernel_shape=[3, 3, 2], strides=[2, 2, 2],
        pads=[1, 1, 0, 1, 1, 1], ceil_mode=1, count_include_pad=1, out_shapes=[(1, 2, 4, 4, 4)])
avgpool("avgpool_f16", (1, 4, 10, 10), dtype="float16", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
avgpool("avgpool_dilation_opset19", (1, 2, 9, 9), kernel_shape=[2, 2], dilations=[2, 2], pads=[1, 0, 1, 1],
        opset=19, out_shapes=[(1, 2, 9, 8)])
avgpool("avgpool_opset10", (1, 3, 8, 9), kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1, opset=10)

# --- Global pooling --------------------------------------------------------------------------------------------
for op, tag in (("GlobalAveragePool", "gap"), ("GlobalMaxPool", "gmp")):
    add(f"{tag}_4d", op, [rand(2, 5, 7, 9)])
    add(f"{tag}_3d", op, [rand(2, 6, 33)])
    add(f"{tag}_5d", op, [rand(1, 3, 4, 5, 6)])
    add(f"{tag}_big", op, [rand(1, 256, 40, 40)])
    add(f"{tag}_1x1", op, [rand(2, 8, 1, 1)])
    add(f"{tag}_f16", op, [rand(1, 4, 6, 6, dtype="float16")])


# --- Resize ----------------------------------------------------------------------------------------------------
def f32(values):
    return weight(const(values, "float32"))


def i64(values):
    return weight(const(values, "int64"))


def resize_scales(name, shape, scales, dtype="float32", opset=13, **attrs):
    """Resize with a scales weight: opset 11/12 need a roi input (empty), 13+ may omit it, 10 is (X, scales)."""
    opts = {k: attrs.pop(k) for k in ("out_shapes", "atol", "rtol") if k in attrs}
    x = rand(*shape, dtype=dtype) if dtype in ("float32", "float16") else rand(*shape, dtype=dtype, low=0, high=100)
    if opset == 10:
        inputs = [x, f32(scales)]
    elif opset < 13:
        inputs = [x, f32([]), f32(scales)]
    else:
        inputs = [x, None, f32(scales)]
    add(name, "Resize", inputs, attrs=attrs, opset=opset, **opts)


def resize_sizes(name, shape, sizes, opset=13, roi=None, **attrs):
    opts = {k: attrs.pop(k) for k in ("out_shapes", "atol", "rtol") if k in attrs}
    roi_in = f32(roi) if roi is not None else (f32([]) if opset < 13 else None)
    scales_in = f32([]) if opset < 13 else None
    add(name, "Resize", [rand(*shape), roi_in, scales_in, i64(sizes)], attrs=attrs, opset=opset, **opts)


# YOLOv8's upsample: nearest, asymmetric, floor, scales (1,1,2,2) from a weight
resize_scales("resize_yolo_nearest2x", (1, 64, 20, 20), [1, 1, 2, 2], mode="nearest",
              coordinate_transformation_mode="asymmetric", nearest_mode="floor", cubic_coeff_a=-0.75)
resize_scales("resize_yolo_nearest2x_opset11", (1, 8, 5, 6), [1, 1, 2, 2], opset=11, mode="nearest",
              coordinate_transformation_mode="asymmetric", nearest_mode="floor")
resize_scales("resize_nearest2x_batch", (3, 4, 5, 6), [1, 1, 2, 2], mode="nearest",
              coordinate_transformation_mode="asymmetric", nearest_mode="floor")
resize_scales("resize_nearest3x_default_modes", (1, 2, 4, 5), [1, 1, 3, 3], mode="nearest")

NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
COORD_MODES = ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "tf_half_pixel_for_nn")
for coord in COORD_MODES:
    for nm in NEAREST_MODES:
        resize_scales(f"resize_nearest_up_{coord}_{nm}", (1, 2, 5, 7), [1, 1, 1.7, 2.5], mode="nearest",
                      coordinate_transformation_mode=coord, nearest_mode=nm)
        resize_scales(f"resize_nearest_down_{coord}_{nm}", (1, 2, 11, 13), [1, 1, 0.6, 0.45], mode="nearest",
                      coordinate_transformation_mode=coord, nearest_mode=nm)
for nm in NEAREST_MODES:
    resize_scales(f"resize_nearest_2x_asym_{nm}", (1, 3, 4, 5), [1, 1, 2, 2], mode="nearest",
                  coordinate_transformation_mode="asymmetric", nearest_mode=nm)
# coordinates that land within float error of a half (4.5 / 0.6, 14.5 for 20 -> 6): treated as ties
for nm in ("round_prefer_floor", "round_prefer_ceil"):
    resize_scales(f"resize_nearest_near_tie_{nm}", (1, 1, 11, 40), [1, 1, 0.6, 0.3], mode="nearest",
                  coordinate_transformation_mode="tf_half_pixel_for_nn", nearest_mode=nm)
    resize_sizes(f"resize_nearest_near_tie_sizes_{nm}", (1, 1, 3, 20), [1, 1, 3, 6], mode="nearest", nearest_mode=nm)
resize_sizes("resize_nearest_sizes", (1, 2, 7, 9), [1, 2, 12, 5], mode="nearest")
resize_sizes("resize_nearest_sizes_opset11", (1, 2, 7, 9), [1, 2, 12, 5], opset=11, mode="nearest",
             coordinate_transformation_mode="align_corners", nearest_mode="ceil")
resize_scales("resize_nearest_1d", (9,), [1.8], mode="nearest")
resize_scales("resize_nearest_2d_input", (6, 7), [1.5, 0.7], mode="nearest", nearest_mode="floor")
resize_scales("resize_nearest_3d_input", (3, 4, 5), [2, 0.5, 1.5], mode="nearest")
resize_scales("resize_nearest_5d", (1, 2, 3, 4, 5), [1, 1, 2, 1.5, 0.8], mode="nearest")
resize_scales("resize_nearest_channels_too", (1, 3, 4, 4), [1, 2, 1.5, 1], mode="nearest")
resize_scales("resize_nearest_f16", (1, 3, 5, 6), [1, 1, 2, 1.5], dtype="float16", mode="nearest")
resize_scales("resize_nearest_uint8", (1, 3, 5, 6), [1, 1, 2, 2], dtype="uint8", mode="nearest")
resize_scales("resize_nearest_int32", (1, 3, 5, 6), [1, 1, 0.5, 3], dtype="int32", mode="nearest")
resize_scales("resize_identity_scales", (1, 3, 5, 6), [1, 1, 1, 1], mode="linear")
resize_scales("resize_nearest_opset10", (1, 2, 5, 6), [1, 1, 2, 3], opset=10, mode="nearest")
resize_scales("resize_nearest_opset10_down", (1, 2, 9, 8), [1, 1, 0.5, 0.7], opset=10, mode="nearest")

# linear: bilinear over H, W of NCHW, 2-D and 3-D (trilinear) inputs, 5-D with N, C untouched
LINEAR_COORDS = COORD_MODES[:4] + ("tf_half_pixel_for_nn",)
for coord in LINEAR_COORDS:
    resize_scales(f"resize_linear_up_{coord}", (2, 3, 5, 7), [1, 1, 2.0, 1.6], mode="linear",
                  coordinate_transformation_mode=coord)
    resize_scales(f"resize_linear_down_{coord}", (1, 3, 12, 10), [1, 1, 0.5, 0.7], mode="linear",
                  coordinate_transformation_mode=coord)
    resize_sizes(f"resize_linear_sizes_{coord}", (1, 2, 6, 7), [1, 2, 13, 4], mode="linear",
                 coordinate_transformation_mode=coord)
resize_scales("resize_bilinear_2x_big", (1, 32, 40, 40), [1, 1, 2, 2], mode="linear")
resize_scales("resize_linear_2d_input", (6, 7), [1.5, 0.6], mode="linear")
resize_scales("resize_linear_3d_input", (3, 4, 5), [2, 1.5, 0.5], mode="linear",
              coordinate_transformation_mode="align_corners")
resize_scales("resize_linear_5d", (1, 2, 3, 4, 5), [1, 1, 2, 1.5, 0.6], mode="linear")
resize_scales("resize_linear_f16", (1, 3, 5, 6), [1, 1, 2, 1.5], dtype="float16", mode="linear")
resize_scales("resize_linear_opset10", (1, 2, 5, 6), [1, 1, 2, 1.5], opset=10, mode="linear")
resize_scales("resize_linear_opset11", (1, 2, 5, 6), [1, 1, 2, 1.5], opset=11, mode="linear",
              coordinate_transformation_mode="pytorch_half_pixel")
resize_sizes("resize_linear_to_one_pixel", (1, 2, 6, 7), [1, 2, 1, 1], mode="linear",
             coordinate_transformation_mode="pytorch_half_pixel")
resize_sizes("resize_linear_align_corners_one", (1, 2, 6, 7), [1, 2, 1, 3], mode="linear",
             coordinate_transformation_mode="align_corners")

# cubic
for coord in ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"):
    resize_scales(f"resize_cubic_up_{coord}", (1, 2, 6, 7), [1, 1, 2.0, 1.5], mode="cubic",
                  coordinate_transformation_mode=coord)
    resize_scales(f"resize_cubic_down_{coord}", (1, 2, 12, 11), [1, 1, 0.5, 0.8], mode="cubic",
                  coordinate_transformation_mode=coord)
resize_scales("resize_cubic_exclude_outside", (1, 2, 6, 7), [1, 1, 1.6, 2.2], mode="cubic", exclude_outside=1)
resize_scales("resize_cubic_coeff_a", (1, 2, 6, 7), [1, 1, 1.6, 2.2], mode="cubic", cubic_coeff_a=-0.5)
resize_scales("resize_cubic_2d_input", (7, 8), [1.4, 0.6], mode="cubic", exclude_outside=1, cubic_coeff_a=-0.6)
resize_sizes("resize_cubic_sizes", (2, 3, 5, 6), [2, 3, 9, 4], mode="cubic")

# tf_crop_and_resize with a roi (per axis starts, then ends) and extrapolation outside it
ROI = [0, 0, 0.2, -0.1, 1, 1, 0.8, 1.3]
for mode in ("nearest", "linear", "cubic"):
    resize_sizes(f"resize_crop_{mode}", (1, 2, 8, 9), [1, 2, 6, 7], roi=ROI, mode=mode,
                 coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-3.5)
    resize_sizes(f"resize_crop_{mode}_opset11", (1, 2, 8, 9), [1, 2, 5, 11], roi=ROI, opset=11, mode=mode,
                 coordinate_transformation_mode="tf_crop_and_resize")
resize_sizes("resize_crop_linear_2d", (8, 9), [4, 13], roi=[0.1, -0.2, 0.7, 1.1], mode="linear",
             coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=2.0)

# opset 18: half_pixel_symmetric, axes, keep_aspect_ratio_policy (onnx 1.12 cannot infer these shapes)
resize_scales("resize18_half_pixel_symmetric_nearest", (1, 2, 5, 7), [1, 1, 1.7, 2.5], opset=18, mode="nearest",
              coordinate_transformation_mode="half_pixel_symmetric", out_shapes=[(1, 2, 8, 17)])
resize_scales("resize18_half_pixel_symmetric_linear", (1, 2, 5, 7), [1, 1, 1.7, 0.6], opset=18, mode="linear",
              coordinate_transformation_mode="half_pixel_symmetric", out_shapes=[(1, 2, 8, 4)])
add("resize18_axes_scales", "Resize", [rand(1, 2, 5, 7), None, f32([2.0, 1.5])], opset=18,
    attrs=dict(mode="linear", axes=[2, 3]), out_shapes=[(1, 2, 10, 10)])
add("resize18_axes_negative_sizes", "Resize", [rand(1, 2, 5, 7), None, None, i64([9, 3])], opset=18,
    attrs=dict(mode="nearest", axes=[-1, -2]), out_shapes=[(1, 2, 3, 9)])
add("resize18_not_larger", "Resize", [rand(1, 2, 6, 8), None, None, i64([9, 9])], opset=18,
    attrs=dict(mode="linear", axes=[2, 3], keep_aspect_ratio_policy="not_larger"), out_shapes=[(1, 2, 7, 9)])
add("resize18_not_smaller", "Resize", [rand(1, 2, 6, 8), None, None, i64([9, 9])], opset=18,
    attrs=dict(mode="nearest", axes=[2, 3], keep_aspect_ratio_policy="not_smaller"), out_shapes=[(1, 2, 9, 12)])
add("resize18_crop_axes", "Resize", [rand(1, 2, 8, 9), f32([0.2, -0.1, 0.8, 1.3]), None, i64([6, 7])], opset=18,
    attrs=dict(mode="linear", axes=[2, 3], coordinate_transformation_mode="tf_crop_and_resize",
               extrapolation_value=1.5), out_shapes=[(1, 2, 6, 7)])
resize_scales("resize18_cubic", (1, 2, 6, 7), [1, 1, 1.5, 0.7], opset=18, mode="cubic",
              out_shapes=[(1, 2, 9, 4)])

# opset 18 antialias=1: a downscaled axis's linear or cubic filter is stretched by 1/scale (ONNX Runtime's
# windows, border folding and normalisation); upscaled axes keep the plain filter.
def _aa_out(shape, scales=None, sizes=None):
    if sizes is not None:
        return [tuple(sizes)]
    return [tuple(int(np.float32(s) * np.float32(d)) for s, d in zip(scales, shape))]


def resize_aa(name, shape, scales, dtype="float32", **attrs):
    resize_scales(name, shape, scales, dtype=dtype, opset=18, antialias=1, out_shapes=_aa_out(shape, scales),
                  **attrs)


def resize_aa_sizes(name, shape, sizes, **attrs):
    resize_sizes(name, shape, sizes, opset=18, antialias=1, out_shapes=_aa_out(shape, sizes=sizes), **attrs)


for mode in ("linear", "cubic"):
    resize_aa(f"resize18_aa_{mode}_half", (1, 3, 12, 10), [1, 1, 0.5, 0.5], mode=mode)
    resize_aa(f"resize18_aa_{mode}_0p6", (2, 2, 15, 13), [1, 1, 0.6, 0.6], mode=mode)
    for coord in ("pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric"):
        resize_aa(f"resize18_aa_{mode}_{coord}", (1, 2, 14, 11), [1, 1, 0.6, 0.45], mode=mode,
                  coordinate_transformation_mode=coord)
    resize_aa_sizes(f"resize18_aa_{mode}_sizes", (1, 2, 13, 17), [1, 2, 5, 7], mode=mode)
    resize_aa_sizes(f"resize18_aa_{mode}_sizes_pytorch", (1, 2, 13, 17), [1, 2, 6, 4], mode=mode,
                    coordinate_transformation_mode="pytorch_half_pixel")
    resize_aa_sizes(f"resize18_aa_{mode}_to_one_pixel", (1, 2, 6, 7), [1, 2, 1, 1], mode=mode)
    resize_aa(f"resize18_aa_{mode}_big_factor", (1, 2, 40, 50), [1, 1, 0.25, 0.1], mode=mode)
    resize_aa(f"resize18_aa_{mode}_down_h_up_w", (1, 2, 12, 5), [1, 1, 0.5, 1.8], mode=mode)
    resize_aa(f"resize18_aa_{mode}_f16", (1, 3, 12, 10), [1, 1, 0.5, 0.6], dtype="float16", mode=mode)
    # upscaling: the same as antialias=0 (resize_linear_up_half_pixel, resize_cubic_up_half_pixel)
    resize_aa(f"resize18_aa_{mode}_upscale", (2, 3, 5, 7), [1, 1, 2.0, 1.6], mode=mode)
    resize_aa(f"resize18_aa_{mode}_2d_input", (13, 9), [0.6, 0.5], mode=mode)
resize_aa("resize18_aa_linear_w_only", (1, 2, 12, 16), [1, 1, 1, 0.4], mode="linear")
resize_aa("resize18_aa_cubic_h_only", (1, 2, 17, 6), [1, 1, 0.35, 1], mode="cubic")
resize_aa("resize18_aa_cubic_exclude_outside", (1, 2, 14, 11), [1, 1, 0.6, 0.45], mode="cubic", exclude_outside=1)
resize_aa("resize18_aa_cubic_coeff_a", (1, 2, 14, 11), [1, 1, 0.6, 0.45], mode="cubic", cubic_coeff_a=-0.5)
resize_aa("resize18_aa_cubic_pillow", (1, 3, 16, 12), [1, 1, 0.5, 0.7], mode="cubic", exclude_outside=1,
          cubic_coeff_a=-0.5)
resize_aa("resize18_aa_linear_5d", (1, 2, 6, 8, 10), [1, 1, 0.5, 0.6, 0.7], mode="linear")
add("resize18_aa_axes", "Resize", [rand(1, 2, 14, 11), None, f32([0.5, 0.6])], opset=18,
    attrs=dict(mode="linear", axes=[2, 3], antialias=1), out_shapes=[(1, 2, 7, 6)])
# (tf_crop_and_resize with antialias=1 fails in ONNX Runtime 1.30 with a narrowing_error: no case)

# scales computed at run time: the output shape comes from model.txt
add("resize_runtime_scales", "Resize", [rand(1, 3, 4, 5), None, const([1, 1, 2, 1.5], "float32")],
    attrs=dict(mode="linear"), out_shapes=[(1, 3, 8, 7)])
add("resize_runtime_sizes", "Resize", [rand(1, 3, 4, 5), None, None, const([1, 3, 3, 9], "int64")],
    attrs=dict(mode="nearest"), out_shapes=[(1, 3, 3, 9)])

# --- Upsample (deprecated) -------------------------------------------------------------------------------------
add("upsample9_nearest", "Upsample", [rand(1, 2, 4, 5), f32([1, 1, 2, 3])], attrs=dict(mode="nearest"), opset=9)
add("upsample9_linear", "Upsample", [rand(1, 2, 4, 5), f32([1, 1, 2, 1.5])], attrs=dict(mode="linear"), opset=9)
add("upsample7_nearest_attr", "Upsample", [rand(1, 2, 4, 5)], attrs=dict(mode="nearest", scales=[1.0, 1.0, 1.5, 2.0]),
    opset=7)
add("upsample7_linear_attr", "Upsample", [rand(1, 2, 4, 5)], attrs=dict(mode="linear", scales=[1.0, 1.0, 2.0, 2.0]),
    opset=7)

# --- GridSample ------------------------------------------------------------------------------------------------
# Grid points mostly in [-1, 1] with some beyond (low/high -1.3..1.3), so every padding mode is exercised.
for mode in ("bilinear", "nearest", "bicubic"):
    for padding in ("zeros", "border", "reflection"):
        for align in (0, 1):
            add(f"gridsample_{mode}_{padding}_align{align}", "GridSample",
                [rand(2, 3, 7, 9), rand(2, 5, 6, 2, low=-1.3, high=1.3)], opset=16,
                attrs=dict(mode=mode, padding_mode=padding, align_corners=align))
# far outside: reflection folds many times, zeros reads nothing
add("gridsample_reflection_far", "GridSample", [rand(1, 2, 5, 4), rand(1, 4, 4, 2, low=-9.0, high=9.0)], opset=16,
    attrs=dict(mode="bilinear", padding_mode="reflection"))
add("gridsample_bicubic_zeros_far", "GridSample", [rand(1, 2, 5, 4), rand(1, 4, 4, 2, low=-9.0, high=9.0)],
    opset=16, attrs=dict(mode="bicubic", padding_mode="zeros"))
add("gridsample_defaults_upsample", "GridSample", [rand(1, 4, 6, 5), rand(1, 12, 10, 2)], opset=16)
add("gridsample_f16", "GridSample", [rand(1, 3, 6, 7, dtype="float16"), rand(1, 4, 5, 2, dtype="float16")],
    opset=16, attrs=dict(mode="bilinear", padding_mode="border"))
add("gridsample_1px_align_reflection", "GridSample", [rand(1, 2, 1, 1), rand(1, 3, 3, 2, low=-2.0, high=2.0)],
    opset=16, attrs=dict(mode="bilinear", padding_mode="reflection", align_corners=1))

# --- Resize at opset 19 ----------------------------------------------------------------------------------------
# half_pixel_symmetric with every mode, axes listed out of order, keep_aspect_ratio_policy over chosen axes and
# over every axis (the policy then scales N and C too), tf_crop_and_resize over reversed axes. (ONNX Runtime
# runs cubic on 2-D and 4-D inputs only and linear over N or C on no 4-D input: those take other modes.)
resize_scales("resize19_half_pixel_symmetric_cubic", (1, 2, 6, 7), [1, 1, 1.5, 0.7], opset=19, mode="cubic",
              coordinate_transformation_mode="half_pixel_symmetric", out_shapes=[(1, 2, 9, 4)])
resize_scales("resize19_half_pixel_symmetric_nearest_down", (1, 2, 9, 8), [1, 1, 0.6, 0.45], opset=19,
              mode="nearest", coordinate_transformation_mode="half_pixel_symmetric", nearest_mode="floor",
              out_shapes=[(1, 2, 5, 3)])
resize_sizes("resize19_half_pixel_symmetric_sizes", (1, 2, 5, 7), [1, 2, 8, 3], opset=19, mode="linear",
             coordinate_transformation_mode="half_pixel_symmetric", out_shapes=[(1, 2, 8, 3)])
add("resize19_axes_reversed_scales", "Resize", [rand(1, 2, 5, 7), None, f32([0.6, 1.8])], opset=19,
    attrs=dict(mode="linear", axes=[3, 2]), out_shapes=[(1, 2, 9, 4)])
add("resize19_axes_one", "Resize", [rand(2, 6, 5), None, None, i64([11])], opset=19,
    attrs=dict(mode="linear", axes=[1]), out_shapes=[(2, 11, 5)])
add("resize19_not_larger_reversed_axes", "Resize", [rand(1, 2, 6, 8), None, None, i64([5, 9])], opset=19,
    attrs=dict(mode="nearest", axes=[3, 2], keep_aspect_ratio_policy="not_larger"), out_shapes=[(1, 2, 4, 5)])
add("resize19_not_smaller_down", "Resize", [rand(1, 2, 9, 12), None, None, i64([4, 3])], opset=19,
    attrs=dict(mode="linear", axes=[2, 3], keep_aspect_ratio_policy="not_smaller"), out_shapes=[(1, 2, 4, 5)])
add("resize19_not_smaller_every_axis", "Resize", [rand(1, 2, 6, 8), None, None, i64([1, 2, 9, 9])], opset=19,
    attrs=dict(mode="nearest", keep_aspect_ratio_policy="not_smaller"), out_shapes=[(2, 3, 9, 12)])
add("resize19_not_larger_every_axis", "Resize", [rand(1, 3, 6, 8), None, None, i64([2, 3, 3, 6])], opset=19,
    attrs=dict(mode="nearest", keep_aspect_ratio_policy="not_larger"), out_shapes=[(1, 2, 3, 4)])
add("resize19_crop_axes_reversed", "Resize", [rand(1, 2, 8, 9), f32([-0.1, 0.2, 1.3, 0.8]), None, i64([7, 6])],
    opset=19, attrs=dict(mode="nearest", axes=[3, 2], coordinate_transformation_mode="tf_crop_and_resize",
                         extrapolation_value=-1.0), out_shapes=[(1, 2, 6, 7)])

# === Dilated AveragePool, ceil_mode's dropped last window, volumetric GridSample ==============================
# (kept apart from the Resize cases above). out_shapes where onnx 1.12's shape inference is wrong (it ignores
# AveragePool's opset 19 dilations and keeps a ceil_mode window that would start in the end padding) or has no
# schema (GridSample opset 20); ONNX Runtime checks them against its own shapes.
def pool_out(shape, kernel_shape, strides=None, dilations=None, pads=None, ceil_mode=0, **_):
    """ONNX's pool output shape: a ceil_mode window must start inside the input or its leading padding."""
    sp = len(kernel_shape)
    strides, dilations, pads = strides or [1] * sp, dilations or [1] * sp, pads or [0] * (2 * sp)
    out = list(shape[:2])
    for i in range(sp):
        span = shape[2 + i] + pads[i] + pads[sp + i] - ((kernel_shape[i] - 1) * dilations[i] + 1)
        n = (-(-span // strides[i]) if ceil_mode else span // strides[i]) + 1
        if ceil_mode and (n - 1) * strides[i] >= shape[2 + i] + pads[i]:
            n -= 1
        out.append(n)
    return tuple(out)


def pool19(name, op, shape, **kw):
    add(name, op, [rand(*shape)], attrs=kw, opset=19, out_shapes=[pool_out(shape, **kw)])


for cip in (0, 1):
    pool19(f"avgpool_dil2d_pads_ceil_cip{cip}", "AveragePool", (1, 2, 10, 11), kernel_shape=[3, 2],
           dilations=[2, 3], strides=[2, 2], pads=[1, 1, 2, 1], ceil_mode=1, count_include_pad=cip)
    pool19(f"avgpool_dil3d_pads_cip{cip}", "AveragePool", (1, 2, 7, 8, 9), kernel_shape=[2, 3, 2],
           dilations=[2, 1, 3], strides=[2, 2, 1], pads=[1, 0, 1, 0, 1, 1], count_include_pad=cip)
    pool19(f"avgpool_dil3d_ceil_cip{cip}", "AveragePool", (2, 3, 6, 7, 8), kernel_shape=[3, 2, 2],
           dilations=[2, 2, 3], strides=[2, 3, 2], pads=[1, 1, 0, 2, 0, 1], ceil_mode=1, count_include_pad=cip)
    # the last window of each axis would start in the end padding: ceil_mode drops it
    pool19(f"avgpool_dil_ceil_drop_cip{cip}", "AveragePool", (1, 2, 5, 6), kernel_shape=[2, 2], dilations=[1, 2],
           strides=[3, 3], pads=[0, 0, 1, 1], ceil_mode=1, count_include_pad=cip)
# ONNX's test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_True, smaller: the last windows
# reach past the input; ONNX Runtime (and PyTorch) leave those taps out of the divisor, ONNX's reference does not
pool19("avgpool_dil3d_ceil_past_end_cip1", "AveragePool", (1, 1, 14, 14, 14), kernel_shape=[5, 5, 5],
       dilations=[2, 2, 2], strides=[3, 3, 3], ceil_mode=1, count_include_pad=1)
pool19("avgpool_dil1d_ceil", "AveragePool", (2, 3, 17), kernel_shape=[3], dilations=[3], strides=[2], pads=[2, 1],
       ceil_mode=1, count_include_pad=1)
pool19("avgpool_dil2d_valid", "AveragePool", (1, 3, 9, 10), kernel_shape=[2, 2], dilations=[3, 2],
       auto_pad="VALID")
# ONNX's test_maxpool_2d_ceil_output_size_reduce_by_one, and the same for AveragePool and a 3-D MaxPool
pool19("maxpool_ceil_reduce_by_one", "MaxPool", (1, 1, 2, 2), kernel_shape=[1, 1], strides=[2, 2], ceil_mode=1)
pool19("avgpool_ceil_reduce_by_one", "AveragePool", (1, 1, 2, 2), kernel_shape=[1, 1], strides=[2, 2], ceil_mode=1)
pool19("maxpool_3d_ceil_drop", "MaxPool", (1, 2, 5, 6, 5), kernel_shape=[2, 2, 2], strides=[3, 3, 3],
       pads=[0, 1, 1, 1, 1, 1], ceil_mode=1)

# GridSample over 3 spatial axes: X (N, C, D, H, W), grid (N, D_out, H_out, W_out, 3); ONNX Runtime has no cubic
# kernel for it, nor does onnxstream.
for mode in ("linear", "nearest"):
    for padding in ("zeros", "border", "reflection"):
        for align in (0, 1):
            add(f"gridsample3d_{mode}_{padding}_align{align}", "GridSample",
                [rand(2, 3, 4, 5, 6), rand(2, 3, 4, 5, 3, low=-1.3, high=1.3)], opset=20,
                attrs=dict(mode=mode, padding_mode=padding, align_corners=align), out_shapes=[(2, 3, 3, 4, 5)])
add("gridsample3d_reflection_far", "GridSample", [rand(1, 2, 3, 4, 5), rand(1, 2, 3, 4, 3, low=-7.0, high=7.0)],
    opset=20, attrs=dict(mode="linear", padding_mode="reflection"), out_shapes=[(1, 2, 2, 3, 4)])
add("gridsample3d_zeros_far", "GridSample", [rand(1, 2, 3, 4, 5), rand(1, 2, 3, 4, 3, low=-7.0, high=7.0)],
    opset=20, attrs=dict(mode="linear", padding_mode="zeros"), out_shapes=[(1, 2, 2, 3, 4)])
add("gridsample3d_f16", "GridSample", [rand(1, 2, 3, 4, 5, dtype="float16"), rand(1, 2, 3, 3, 3, dtype="float16")],
    opset=20, attrs=dict(mode="linear", padding_mode="border"), out_shapes=[(1, 2, 2, 3, 3)])

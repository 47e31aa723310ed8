"""Shape and data-movement ops: Reshape, Flatten, Transpose, Squeeze/Unsqueeze, Concat, Split, Slice, Gather,
GatherElements, GatherND, ScatterND, ScatterElements, Expand, Tile, Pad, Shape, Size, ConstantOfShape, Range,
Trilu, OneHot, DepthToSpace and SpaceToDepth. Every attribute/opset form (attributes that became inputs), negative
axes, shape inputs that are weights (known while planning) and pushed inputs (known only at run time: out_shapes),
all element sizes, and tensors large enough to take the multithreaded paths."""

import numpy as np

from opcase import Case, const, rand, randint, weight

CASES = []
I64_MAX = 9223372036854775807
I64_MIN = -9223372036854775808


def add(*args, **kw):
    CASES.append(Case(*args, **kw))


def i64(values):
    return weight(const(values, "int64"))


# One sample of every element size / dtype class.
DTYPES = {"f16": "float16", "i64": "int64", "u8": "uint8", "i8": "int8", "i32": "int32", "bool": "bool",
          "f64": "float64", "i16": "int16", "u16": "uint16", "u32": "uint32", "u64": "uint64"}

# --- Reshape --------------------------------------------------------------------------------------------------
add("reshape_basic", "Reshape", [rand(2, 3, 4), i64([4, 6])])
add("reshape_minus1", "Reshape", [rand(2, 3, 4), i64([-1, 4])])
add("reshape_zero_copies_dim", "Reshape", [rand(2, 3, 4), i64([0, -1])])
add("reshape_zero_middle", "Reshape", [rand(2, 3, 4), i64([2, 0, 2, 2])])
add("reshape_allowzero", "Reshape", [rand(0, 3), i64([3, 0])], attrs=dict(allowzero=1), opset=14)
add("reshape_allowzero_plain", "Reshape", [rand(2, 6), i64([3, 4])], attrs=dict(allowzero=1), opset=14)
add("reshape_to_scalar", "Reshape", [rand(1, 1), i64(np.zeros(0, np.int64))])
add("reshape_from_scalar", "Reshape", [rand(), i64([1, 1, 1])])
add("reshape_runtime_shape", "Reshape", [rand(2, 3, 4), const([6, -1], "int64")], out_shapes=[(6, 4)])
add("reshape_opset5", "Reshape", [rand(4, 5), i64([5, 2, 2])], opset=5)
for tag, dt in DTYPES.items():
    add(f"reshape_{tag}", "Reshape", [rand(3, 8, dtype=dt), i64([2, -1, 3])])

# --- Flatten --------------------------------------------------------------------------------------------------
for axis in (0, 1, 2, 4, -1, -4):
    add(f"flatten_axis{axis}".replace("-", "m"), "Flatten", [rand(2, 3, 4, 5)], attrs=dict(axis=axis))
add("flatten_default", "Flatten", [rand(2, 3, 4)])
add("flatten_i64", "Flatten", [rand(2, 3, 4, dtype="int64")], attrs=dict(axis=2))
add("flatten_opset9", "Flatten", [rand(3, 2, 2)], attrs=dict(axis=1), opset=9)

# --- Transpose ------------------------------------------------------------------------------------------------
add("transpose_2d", "Transpose", [rand(6, 5)])
add("transpose_2d_large", "Transpose", [rand(300, 257)], attrs=dict(perm=[1, 0]))
add("transpose_default_3d", "Transpose", [rand(2, 3, 4)])
add("transpose_3d_021", "Transpose", [rand(4, 33, 70)], attrs=dict(perm=[0, 2, 1]))
add("transpose_3d_102", "Transpose", [rand(4, 33, 70)], attrs=dict(perm=[1, 0, 2]))
add("transpose_nchw_to_nhwc", "Transpose", [rand(2, 64, 17, 19)], attrs=dict(perm=[0, 2, 3, 1]))
add("transpose_nhwc_to_nchw", "Transpose", [rand(2, 17, 19, 64)], attrs=dict(perm=[0, 3, 1, 2]))
add("transpose_nchw_to_nhwc_rgb", "Transpose", [rand(1, 3, 64, 64)], attrs=dict(perm=[0, 2, 3, 1]))
add("transpose_nchw_to_nhwc_big", "Transpose", [rand(1, 96, 80, 80)], attrs=dict(perm=[0, 2, 3, 1]))
add("transpose_nhwc_to_nchw_big", "Transpose", [rand(1, 80, 80, 96)], attrs=dict(perm=[0, 3, 1, 2]))
add("transpose_attention_heads", "Transpose", [rand(2, 77, 8, 40)], attrs=dict(perm=[0, 2, 1, 3]))
add("transpose_5d", "Transpose", [rand(2, 3, 4, 5, 6)], attrs=dict(perm=[4, 1, 3, 0, 2]))
add("transpose_6d", "Transpose", [rand(2, 3, 2, 3, 2, 4)], attrs=dict(perm=[0, 3, 5, 1, 4, 2]))
add("transpose_unit_dims_view", "Transpose", [rand(1, 4, 1, 5)], attrs=dict(perm=[2, 0, 1, 3]))
add("transpose_identity", "Transpose", [rand(3, 4)], attrs=dict(perm=[0, 1]))
add("transpose_1d", "Transpose", [rand(7)])
add("transpose_empty", "Transpose", [rand(0, 3, 2)], attrs=dict(perm=[2, 0, 1]))
# Large transposes at ranks 6 and 7 and of a 4-byte integer type: the multithreaded, cache-blocked path.
add("transpose_6d_large", "Transpose", [rand(4, 5, 6, 7, 4, 8)], attrs=dict(perm=[5, 3, 1, 0, 4, 2]))
add("transpose_i32_large", "Transpose", [rand(8, 64, 40, dtype="int32")], attrs=dict(perm=[2, 0, 1]))
add("transpose_7d_large", "Transpose", [rand(2, 3, 4, 5, 6, 7, 4)], attrs=dict(perm=[6, 5, 4, 3, 2, 1, 0]))
for tag, dt in DTYPES.items():
    add(f"transpose_{tag}", "Transpose", [rand(2, 5, 6, 7, dtype=dt)], attrs=dict(perm=[0, 2, 3, 1]))
    add(f"transpose_2d_{tag}", "Transpose", [rand(45, 70, dtype=dt)])
    add(f"transpose_2d_tiles_{tag}", "Transpose", [rand(130, 150, dtype=dt)])

# --- Squeeze / Unsqueeze --------------------------------------------------------------------------------------
add("squeeze_attr_axes", "Squeeze", [rand(1, 3, 1, 4)], attrs=dict(axes=[0, 2]), opset=11)
add("squeeze_attr_negative", "Squeeze", [rand(1, 3, 1, 4)], attrs=dict(axes=[-2]), opset=11)
add("squeeze_input_axes", "Squeeze", [rand(1, 3, 1, 4), i64([0, -2])], opset=13)
add("squeeze_all", "Squeeze", [rand(1, 3, 1, 4, 1)], opset=13)
add("squeeze_all_opset11", "Squeeze", [rand(1, 1)], opset=11, out_shapes=[()])
add("squeeze_runtime_axes", "Squeeze", [rand(2, 1, 4), const([1], "int64")], opset=13, out_shapes=[(2, 4)])
add("squeeze_i64", "Squeeze", [rand(1, 5, dtype="int64"), i64([0])], opset=13)
add("squeeze_bool", "Squeeze", [rand(3, 1, dtype="bool")], attrs=dict(axes=[1]), opset=11)
add("unsqueeze_attr_axes", "Unsqueeze", [rand(3, 4)], attrs=dict(axes=[0, 3]), opset=11)
add("unsqueeze_attr_negative", "Unsqueeze", [rand(3, 4)], attrs=dict(axes=[-1]), opset=11)
add("unsqueeze_input_axes", "Unsqueeze", [rand(3, 4), i64([-1, 0])], opset=13)
add("unsqueeze_unsorted", "Unsqueeze", [rand(3, 4, 5), i64([5, 1, 3])], opset=13)
add("unsqueeze_scalar", "Unsqueeze", [rand(), i64([0])], opset=13)
add("unsqueeze_runtime_axes", "Unsqueeze", [rand(2, 4), const([1], "int64")], opset=13, out_shapes=[(2, 1, 4)])
add("unsqueeze_f16", "Unsqueeze", [rand(2, 3, dtype="float16"), i64([1])], opset=13)
add("unsqueeze_i64", "Unsqueeze", [rand(2, 3, dtype="int64"), i64([0])], opset=13)

# --- Concat ---------------------------------------------------------------------------------------------------
add("concat_axis0", "Concat", [rand(2, 3), rand(4, 3)], attrs=dict(axis=0))
add("concat_axis1_three", "Concat", [rand(2, 3, 4), rand(2, 1, 4), rand(2, 5, 4)], attrs=dict(axis=1))
add("concat_negative_axis", "Concat", [rand(2, 3, 4), rand(2, 3, 2)], attrs=dict(axis=-1))
add("concat_single", "Concat", [rand(2, 3)], attrs=dict(axis=1))
add("concat_empty_part", "Concat", [rand(2, 0, 3), rand(2, 4, 3)], attrs=dict(axis=1))
add("concat_weight", "Concat", [rand(1, 3), weight(rand(2, 3))], attrs=dict(axis=0))
add("concat_channels_big", "Concat", [rand(1, 64, 40, 40), rand(1, 32, 40, 40)], attrs=dict(axis=1))
add("concat_channels_batch", "Concat", [rand(3, 16, 20, 20), rand(3, 8, 20, 20)], attrs=dict(axis=1))
add("concat_last_axis_many_rows", "Concat", [rand(4000, 3), rand(4000, 1)], attrs=dict(axis=1))
add("concat_1d", "Concat", [rand(3), rand(4), rand(1)], attrs=dict(axis=0))
for tag, dt in DTYPES.items():
    add(f"concat_{tag}", "Concat", [rand(2, 3, 4, dtype=dt), rand(2, 2, 4, dtype=dt)], attrs=dict(axis=-2))

# --- Split ----------------------------------------------------------------------------------------------------
add("split_attr_sizes", "Split", [rand(2, 6, 3)], attrs=dict(axis=1, split=[2, 4]), opset=11, outputs=2)
add("split_input_sizes", "Split", [rand(2, 6, 3), i64([1, 3, 2])], attrs=dict(axis=1), opset=13, outputs=3)
add("split_equal_outputs", "Split", [rand(6, 4)], opset=13, outputs=3)
add("split_equal_opset11", "Split", [rand(4, 6)], attrs=dict(axis=1), opset=11, outputs=2)
add("split_negative_axis", "Split", [rand(2, 3, 8)], attrs=dict(axis=-1), opset=13, outputs=4)
add("split_num_outputs", "Split", [rand(2, 6)], attrs=dict(axis=1, num_outputs=3), opset=18, outputs=3,
    out_shapes=[(2, 2), (2, 2), (2, 2)])
add("split_num_outputs_uneven", "Split", [rand(7, 3)], attrs=dict(axis=0, num_outputs=3), opset=18, outputs=3,
    out_shapes=[(3, 3), (3, 3), (1, 3)])
add("split_input_opset18", "Split", [rand(5, 3), i64([2, 3])], opset=18, outputs=2, out_shapes=[(2, 3), (3, 3)])
add("split_runtime_sizes", "Split", [rand(2, 5), const([3, 2], "int64")], attrs=dict(axis=1), opset=13,
    outputs=2, out_shapes=[(2, 3), (2, 2)])
add("split_zero_part", "Split", [rand(3, 4), i64([0, 4])], attrs=dict(axis=1), opset=13, outputs=2)
add("split_single_output_view", "Split", [rand(3, 4)], attrs=dict(axis=1), opset=13)
add("split_big_channels", "Split", [rand(1, 64, 80, 80)], attrs=dict(axis=1), opset=13, outputs=2)
add("split_big_rows", "Split", [rand(3000, 6)], attrs=dict(axis=1, split=[1, 5]), opset=11, outputs=2)
for tag, dt in DTYPES.items():
    add(f"split_{tag}", "Split", [rand(4, 6, dtype=dt), i64([2, 4])], attrs=dict(axis=1), opset=13, outputs=2)

# --- Slice ----------------------------------------------------------------------------------------------------
X = (4, 5, 6)
add("slice_basic", "Slice", [rand(*X), i64([1, 0]), i64([3, 4]), i64([0, 2])])
add("slice_no_axes", "Slice", [rand(*X), i64([1, 2]), i64([3, 5])])
add("slice_steps", "Slice", [rand(*X), i64([0, 1]), i64([6, 5]), i64([2, 1]), i64([2, 2])])
add("slice_negative_index", "Slice", [rand(*X), i64([-3]), i64([-1]), i64([1])])
add("slice_negative_axes", "Slice", [rand(*X), i64([1, 1]), i64([3, 4]), i64([-1, -3])])
add("slice_reverse", "Slice", [rand(*X), i64([-1]), i64([I64_MIN]), i64([2]), i64([-1])])
add("slice_reverse_step2", "Slice", [rand(*X), i64([4, 5]), i64([0, -100]), i64([1, 2]), i64([-2, -3])])
add("slice_end_int64_max", "Slice", [rand(*X), i64([2]), i64([I64_MAX]), i64([2]), i64([1])])
add("slice_clamp_out_of_range", "Slice", [rand(*X), i64([-100, 1]), i64([100, 1000]), i64([0, 1])])
add("slice_empty_result", "Slice", [rand(*X), i64([10]), i64([20]), i64([1])])
add("slice_start_after_end", "Slice", [rand(*X), i64([3]), i64([1]), i64([0])])
add("slice_huge_step", "Slice", [rand(*X), i64([1]), i64([I64_MAX]), i64([1]), i64([I64_MAX])])
add("slice_huge_negative_step", "Slice", [rand(*X), i64([-1]), i64([I64_MIN]), i64([2]), i64([I64_MIN])])
add("slice_empty_dim_negative_step", "Slice", [rand(0, 4), i64([-1]), i64([I64_MIN]), i64([0]), i64([-1])],
    out_shapes=[(0, 4)])  # onnx 1.12 shape inference says (1, 4)
add("slice_full_range_view", "Slice", [rand(*X), i64([0, 0]), i64([I64_MAX, 100]), i64([0, -1])])
add("slice_int32_indices", "Slice", [rand(*X), weight(const([1], "int32")), weight(const([-1], "int32")),
                                     weight(const([1], "int32"))])
add("slice_opset9_attrs", "Slice", [rand(*X)], attrs=dict(starts=[1, 0], ends=[3, -1], axes=[0, 2]), opset=9,
    out_shapes=[(2, 5, 5)])
add("slice_opset9_no_axes", "Slice", [rand(*X)], attrs=dict(starts=[1], ends=[1000]), opset=9)
add("slice_opset10", "Slice", [rand(*X), i64([0]), i64([2]), i64([1]), i64([1])], opset=10)
add("slice_omitted_axes_with_steps", "Slice", [rand(*X), i64([0, 0, 5]), i64([4, 5, 0]), None, i64([1, 1, -1])])
add("slice_runtime_starts", "Slice", [rand(*X), const([1], "int64"), i64([3]), i64([1])], out_shapes=[(4, 2, 6)])
add("slice_channels_big", "Slice", [rand(1, 64, 80, 80), i64([16]), i64([48]), i64([1])])
add("slice_spatial_step_big", "Slice", [rand(1, 32, 80, 80), i64([0, 1]), i64([80, 80]), i64([2, 3]),
                                        i64([2, 2])])
add("slice_yolo_last_axis", "Slice", [rand(1, 4, 8400), i64([0]), i64([2]), i64([1])])
for tag, dt in DTYPES.items():
    add(f"slice_{tag}", "Slice", [rand(*X, dtype=dt), i64([1, -2]), i64([4, 0]), i64([1, 2]), i64([2, -1])])

# --- Gather ---------------------------------------------------------------------------------------------------
add("gather_axis0", "Gather", [rand(5, 4), randint(2, 3, low=0, high=5)])
add("gather_axis1", "Gather", [rand(3, 5, 4), randint(4, low=0, high=5)], attrs=dict(axis=1))
add("gather_last_axis", "Gather", [rand(3, 5, 7), randint(2, 2, low=0, high=7)], attrs=dict(axis=-1))
add("gather_negative_indices", "Gather", [rand(6, 3), randint(5, low=-6, high=6)])
add("gather_int32_indices", "Gather", [rand(6, 3), randint(4, low=-6, high=6, dtype="int32")], attrs=dict(axis=0))
add("gather_scalar_index", "Gather", [rand(4, 5, 6), const(2, "int64")], attrs=dict(axis=1))
add("gather_scalar_index_weight", "Gather", [rand(4, 5), weight(const(-1, "int64"))], attrs=dict(axis=0))
add("gather_weight_table", "Gather", [weight(rand(100, 16)), randint(2, 7, low=0, high=100)])
add("gather_embedding_big", "Gather", [rand(1000, 64), randint(2, 77, low=0, high=1000)])
add("gather_last_axis_big", "Gather", [rand(200, 300), randint(150, low=-300, high=300)], attrs=dict(axis=1))
add("gather_rows_threaded", "Gather", [rand(4000, 256), randint(1000, low=-4000, high=4000)])
add("gather_scalars_threaded", "Gather", [rand(1000, 300), randint(300, low=0, high=300)], attrs=dict(axis=1))
add("gather_empty_indices", "Gather", [rand(4, 3), const(np.zeros((0,), np.int64), "int64")])
add("gather_1d", "Gather", [rand(10), randint(3, 2, low=0, high=10)])
for tag, dt in DTYPES.items():
    add(f"gather_{tag}", "Gather", [rand(4, 5, 3, dtype=dt), randint(2, 3, low=-5, high=5)], attrs=dict(axis=1))

# --- GatherElements -------------------------------------------------------------------------------------------
add("gather_elements_axis0", "GatherElements", [rand(3, 4), randint(2, 4, low=0, high=3)])
add("gather_elements_axis1", "GatherElements", [rand(3, 4), randint(3, 6, low=0, high=4)], attrs=dict(axis=1))
add("gather_elements_negative_axis", "GatherElements", [rand(2, 3, 5), randint(2, 3, 4, low=0, high=5)],
    attrs=dict(axis=-1))
add("gather_elements_middle_axis", "GatherElements", [rand(2, 6, 5), randint(2, 4, 5, low=-6, high=6)],
    attrs=dict(axis=1))
add("gather_elements_smaller_indices", "GatherElements", [rand(4, 6, 5), randint(2, 3, 4, low=0, high=4)])
add("gather_elements_int32", "GatherElements", [rand(4, 5), randint(4, 5, low=-5, high=5, dtype="int32")],
    attrs=dict(axis=1))
add("gather_elements_big", "GatherElements", [rand(64, 400), randint(64, 300, low=0, high=400)], attrs=dict(axis=1))
add("gather_elements_threaded", "GatherElements", [rand(256, 1024), randint(256, 1024, low=-256, high=256)])
for tag, dt in DTYPES.items():
    add(f"gather_elements_{tag}", "GatherElements", [rand(3, 4, dtype=dt), randint(3, 4, low=0, high=3)])

# --- ScatterND ------------------------------------------------------------------------------------------------
add("scatter_nd_slices", "ScatterND", [rand(4, 4, 4), const([[0], [2]], "int64"), rand(2, 4, 4)])
add("scatter_nd_elements", "ScatterND", [rand(8), const([[4], [3], [1], [7]], "int64"), rand(4)])
add("scatter_nd_full_index", "ScatterND", [rand(3, 4), const([[0, 1], [2, 3], [1, 0]], "int64"), rand(3)])
add("scatter_nd_batched_indices", "ScatterND", [rand(4, 5, 6), const([[[0, 1], [3, 4]], [[2, 2], [1, 0]]], "int64"),
                                                rand(2, 2, 6)])
add("scatter_nd_negative_index", "ScatterND", [rand(5, 3), const([[-1], [-5]], "int64"), rand(2, 3)])
add("scatter_nd_weight_indices", "ScatterND", [rand(6, 2), weight(const([[5], [0]], "int64")), rand(2, 2)])
add("scatter_nd_add", "ScatterND", [rand(4, 3), const([[1], [1], [3]], "int64"), rand(3, 3)],
    attrs=dict(reduction="add"), opset=16)
add("scatter_nd_mul", "ScatterND", [rand(4, 3), const([[0], [2], [0]], "int64"), rand(3, 3)],
    attrs=dict(reduction="mul"), opset=16)
add("scatter_nd_max", "ScatterND", [rand(4, 3), const([[0], [2], [0]], "int64"), rand(3, 3)],
    attrs=dict(reduction="max"), opset=18, out_shapes=[(4, 3)])
add("scatter_nd_min", "ScatterND", [rand(4, 3), const([[3], [2]], "int64"), rand(2, 3)],
    attrs=dict(reduction="min"), opset=18, out_shapes=[(4, 3)])
add("scatter_nd_add_i64", "ScatterND", [rand(5, 2, dtype="int64", low=-100, high=100), const([[4], [4]], "int64"),
                                        rand(2, 2, dtype="int64", low=-100, high=100)], attrs=dict(reduction="add"),
    opset=16)
add("scatter_nd_add_i32", "ScatterND", [rand(5, dtype="int32", low=-100, high=100), const([[0], [0], [1]], "int64"),
                                        rand(3, dtype="int32", low=-100, high=100)], attrs=dict(reduction="add"),
    opset=16)
add("scatter_nd_max_f64", "ScatterND", [rand(4, 3, dtype="float64"), const([[0], [2], [0]], "int64"),
                                        rand(3, 3, dtype="float64")], attrs=dict(reduction="max"), opset=18,
    out_shapes=[(4, 3)])
add("scatter_nd_add_f64", "ScatterND", [rand(4, 3, dtype="float64"), const([[1], [1]], "int64"),
                                        rand(2, 3, dtype="float64")], attrs=dict(reduction="add"), opset=16)
for tag, dt in DTYPES.items():
    add(f"scatter_nd_{tag}", "ScatterND", [rand(4, 3, dtype=dt), const([[3], [1]], "int64"), rand(2, 3, dtype=dt)])

# --- Expand ---------------------------------------------------------------------------------------------------
add("expand_column", "Expand", [rand(3, 1), i64([2, 3, 4])])
add("expand_scalar", "Expand", [rand(), i64([2, 3])])
add("expand_one", "Expand", [rand(1), i64([5])])
add("expand_smaller_shape", "Expand", [rand(2, 3, 4), i64([3, 1])])
add("expand_ones_in_shape", "Expand", [rand(2, 1, 4), i64([1, 1, 3, 1])])
add("expand_middle", "Expand", [rand(2, 1, 4), i64([2, 5, 4])])
add("expand_runtime_shape", "Expand", [rand(1, 4), const([3, 4], "int64")], out_shapes=[(3, 4)])
add("expand_big", "Expand", [rand(1, 64, 1, 1), i64([2, 64, 40, 40])])
add("expand_big_rows", "Expand", [rand(1, 300), i64([500, 300])])
add("expand_same_shape_view", "Expand", [rand(2, 3), i64([1, 3])])
add("expand_zero_dim", "Expand", [rand(1, 3), i64([0, 3])])
for tag, dt in DTYPES.items():
    add(f"expand_{tag}", "Expand", [rand(3, 1, dtype=dt), i64([2, 3, 5])])

# --- Tile -----------------------------------------------------------------------------------------------------
add("tile_2d", "Tile", [rand(2, 3), i64([2, 3])])
add("tile_ones", "Tile", [rand(2, 3), i64([1, 1])])
add("tile_3d", "Tile", [rand(2, 1, 3), i64([1, 4, 2])])
add("tile_1d", "Tile", [rand(5), i64([3])])
add("tile_zero_repeat", "Tile", [rand(2, 3), i64([0, 2])])
add("tile_runtime_repeats", "Tile", [rand(2, 3), const([2, 1], "int64")], out_shapes=[(4, 3)])
add("tile_big", "Tile", [rand(1, 32, 40, 40), i64([2, 1, 1, 2])])
for tag, dt in DTYPES.items():
    add(f"tile_{tag}", "Tile", [rand(2, 3, dtype=dt), i64([3, 2])])

# --- Pad ------------------------------------------------------------------------------------------------------
P = (1, 2, 4, 5)
add("pad_constant_value", "Pad", [rand(*P), i64([0, 0, 1, 2, 0, 0, 2, 1]), weight(const(0.5, "float32"))])
add("pad_constant_default", "Pad", [rand(*P), i64([0, 1, 1, 1, 1, 0, 1, 1])])
add("pad_constant_runtime_value", "Pad", [rand(*P), i64([0, 0, 1, 1, 0, 0, 1, 1]), const(-2.0, "float32")])
add("pad_reflect", "Pad", [rand(*P), i64([0, 0, 2, 3, 0, 0, 1, 2])], attrs=dict(mode="reflect"))
add("pad_edge", "Pad", [rand(*P), i64([0, 1, 3, 2, 0, 0, 1, 4])], attrs=dict(mode="edge"))
add("pad_negative_crop", "Pad", [rand(*P), i64([0, 0, -1, 2, 0, 0, 1, -2])])
add("pad_omitted_value_with_axes", "Pad", [rand(*P), i64([1, 2, 3, 0]), None, i64([-1, 2])], opset=18,
    out_shapes=[(1, 2, 6, 9)])
add("pad_axes_reflect", "Pad", [rand(*P), i64([1, 1]), None, i64([3])], attrs=dict(mode="reflect"), opset=18,
    out_shapes=[(1, 2, 4, 7)])
add("pad_opset2_attrs", "Pad", [rand(2, 3)], attrs=dict(pads=[1, 0, 0, 2], value=1.5), opset=2)
add("pad_opset2_edge", "Pad", [rand(2, 3)], attrs=dict(pads=[1, 2, 1, 2], mode="edge"), opset=2)
add("pad_runtime_pads", "Pad", [rand(2, 3), const([1, 0, 0, 1], "int64")], out_shapes=[(3, 4)])
add("pad_1d_reflect", "Pad", [rand(6), i64([3, 4])], attrs=dict(mode="reflect"))
add("pad_wrap", "Pad", [rand(3, 4), i64([1, 2, 2, 1])], attrs=dict(mode="wrap"), opset=19, out_shapes=[(6, 7)])
add("pad_wrap_axes", "Pad", [rand(*P), i64([2, 1, 1, 3]), None, i64([-1, 2])], attrs=dict(mode="wrap"), opset=19,
    out_shapes=[(1, 2, 8, 8)])
add("pad_wrap_crop", "Pad", [rand(*P), i64([0, 1, -1, 2, 0, 0, 2, -1])], attrs=dict(mode="wrap"), opset=19,
    out_shapes=[(1, 3, 5, 6)])
# negative pads crop first: the modes then read the kept part only (wrap its length, reflect and edge its ends)
# (a wrap pad longer than its axis has no case: ONNX Runtime 1.30 reads outside the input for it; the engine
# repeats the axis, as numpy.pad and the ONNX reference do)
add("pad_reflect_crop", "Pad", [rand(*P), i64([0, 0, 2, -2, 0, 0, -1, 2])], attrs=dict(mode="reflect"),
    out_shapes=[(1, 2, 5, 5)])
add("pad_edge_crop", "Pad", [rand(*P), i64([0, 0, -3, 2, 0, 0, 2, -1])], attrs=dict(mode="edge"),
    out_shapes=[(1, 2, 3, 6)])
add("pad_wrap_i64", "Pad", [rand(2, 3, dtype="int64"), i64([1, 3, 0, 2])], attrs=dict(mode="wrap"), opset=19,
    out_shapes=[(3, 8)])
add("pad_zero_view", "Pad", [rand(2, 3), i64([0, 0, 0, 0])])
add("pad_big", "Pad", [rand(1, 64, 80, 80), i64([0, 0, 1, 1, 0, 0, 1, 1])])
add("pad_big_reflect", "Pad", [rand(1, 32, 64, 64), i64([0, 0, 3, 3, 0, 0, 3, 3])], attrs=dict(mode="reflect"))
add("pad_i64", "Pad", [rand(3, 4, dtype="int64"), i64([1, 1, 1, 1]), weight(const(7, "int64"))])
add("pad_f16", "Pad", [rand(3, 4, dtype="float16"), i64([1, 0, 2, 1]), weight(const(1.25, "float16"))])
add("pad_u8_edge", "Pad", [rand(3, 4, dtype="uint8"), i64([2, 1, 0, 1])], attrs=dict(mode="edge"))
add("pad_i8", "Pad", [rand(3, 4, dtype="int8"), i64([0, 1, 1, 0]), weight(const(-3, "int8"))])
add("pad_i32_reflect", "Pad", [rand(3, 4, dtype="int32"), i64([1, 2, 1, 2])], attrs=dict(mode="reflect"))
add("pad_bool", "Pad", [rand(3, 4, dtype="bool"), i64([1, 1, 0, 0]), weight(const(True, "bool"))])

# --- Shape / Size ---------------------------------------------------------------------------------------------
add("shape_basic", "Shape", [rand(2, 3, 4)])
add("shape_scalar", "Shape", [rand()])
add("shape_start", "Shape", [rand(2, 3, 4, 5)], attrs=dict(start=1), opset=15)
add("shape_end_negative", "Shape", [rand(2, 3, 4, 5)], attrs=dict(end=-1), opset=15)
add("shape_start_end", "Shape", [rand(2, 3, 4, 5)], attrs=dict(start=-3, end=3), opset=15)
add("shape_clamped", "Shape", [rand(2, 3)], attrs=dict(start=-10, end=10), opset=15)
add("shape_empty_range", "Shape", [rand(2, 3, 4)], attrs=dict(start=2, end=1), opset=15)
add("shape_weight", "Shape", [weight(rand(7, 2))])
add("shape_zero_dim", "Shape", [rand(3, 0, 2)])
add("size_basic", "Size", [rand(2, 3, 4)])
add("size_scalar", "Size", [rand()])
add("size_zero", "Size", [rand(3, 0)])
for tag, dt in DTYPES.items():
    add(f"shape_{tag}", "Shape", [rand(2, 5, dtype=dt)])
    add(f"size_{tag}", "Size", [rand(2, 5, dtype=dt)])

# --- ConstantOfShape ------------------------------------------------------------------------------------------
add("constant_of_shape_default", "ConstantOfShape", [i64([2, 3])])
add("constant_of_shape_float", "ConstantOfShape", [i64([3, 1, 2])], attrs=dict(value=np.array([1.5], np.float32)))
add("constant_of_shape_int64", "ConstantOfShape", [i64([4])], attrs=dict(value=np.array([-7], np.int64)))
add("constant_of_shape_int64_big", "ConstantOfShape", [i64([2])],
    attrs=dict(value=np.array([9007199254740993], np.int64)))
add("constant_of_shape_runtime", "ConstantOfShape", [const([2, 5], "int64")],
    attrs=dict(value=np.array([0.25], np.float32)), out_shapes=[(2, 5)])
add("constant_of_shape_scalar", "ConstantOfShape", [i64(np.zeros(0, np.int64))],
    attrs=dict(value=np.array([3.0], np.float32)))
add("constant_of_shape_zero_dim", "ConstantOfShape", [i64([0, 3])])
add("constant_of_shape_big", "ConstantOfShape", [i64([2, 64, 80, 80])], attrs=dict(value=np.array([-1.0], np.float32)))
# The model.txt value carries no dtype (OnnxStream writes str() of the element): the dtype attribute says it.
add("constant_of_shape_bool", "ConstantOfShape", [i64([2, 2])], attrs=dict(value=np.array([True])),
    txt_attrs=dict(dtype="bool"))
add("constant_of_shape_int32", "ConstantOfShape", [i64([3])], attrs=dict(value=np.array([5], np.int32)),
    txt_attrs=dict(dtype="int32"))
add("constant_of_shape_f16", "ConstantOfShape", [i64([2, 3])], attrs=dict(value=np.array([0.5], np.float16)),
    txt_attrs=dict(dtype="float16"))
add("constant_of_shape_u8_onnx_type", "ConstantOfShape", [i64([4])], attrs=dict(value=np.array([200], np.uint8)),
    txt_attrs=dict(dtype="2"))
add("constant_of_shape_bool_python_text", "ConstantOfShape", [i64([3])], attrs=dict(value=np.array([True])),
    txt_attrs=dict(value="True"))

# --- Range ----------------------------------------------------------------------------------------------------
add("range_int64", "Range", [i64(0), i64(10), i64(3)])
add("range_int64_negative_delta", "Range", [i64(10), i64(-5), i64(-4)])
add("range_int64_empty", "Range", [i64(5), i64(5), i64(1)])
add("range_int64_wrong_direction", "Range", [i64(0), i64(5), i64(-1)])
# Beyond float32 precision but within double, where ONNX Runtime counts exactly too.
add("range_int64_big_values", "Range", [i64(100000001), i64(100000010), i64(2)])
add("range_int32", "Range", [weight(const(-3, "int32")), weight(const(4, "int32")), weight(const(2, "int32"))])
add("range_float", "Range", [weight(const(0.5, "float32")), weight(const(3.2, "float32")),
                             weight(const(0.3, "float32"))])
add("range_float_negative", "Range", [weight(const(1.0, "float32")), weight(const(-2.0, "float32")),
                                      weight(const(-0.25, "float32"))])
add("range_runtime_int64", "Range", [const(2, "int64"), const(20, "int64"), const(5, "int64")], out_shapes=[(4,)])
add("range_runtime_float", "Range", [const(0.0, "float32"), const(1.0, "float32"), const(0.1, "float32")],
    out_shapes=[(10,)])

# --- Trilu ----------------------------------------------------------------------------------------------------
add("trilu_upper", "Trilu", [rand(4, 5)], opset=14)
add("trilu_lower", "Trilu", [rand(4, 5)], attrs=dict(upper=0), opset=14)
add("trilu_upper_k1", "Trilu", [rand(5, 4), i64(1)], opset=14)
add("trilu_upper_k_negative", "Trilu", [rand(5, 4), i64(-2)], opset=14)
add("trilu_lower_k_negative", "Trilu", [rand(3, 6), i64(-1)], attrs=dict(upper=0), opset=14)
add("trilu_lower_k_big", "Trilu", [rand(3, 6), i64(10)], attrs=dict(upper=0), opset=14)
add("trilu_upper_k_big", "Trilu", [rand(3, 6), i64(7)], opset=14)
add("trilu_batched", "Trilu", [rand(2, 3, 4, 4)], attrs=dict(upper=0), opset=14)
add("trilu_runtime_k", "Trilu", [rand(4, 4), const(1, "int64")], opset=14)
add("trilu_big", "Trilu", [rand(2, 300, 200)], opset=14)
for tag, dt in DTYPES.items():
    if tag in ("u8", "i8", "i16", "u16", "u32", "u64"):  # ONNX Runtime has no such Trilu kernels
        continue
    add(f"trilu_{tag}", "Trilu", [rand(4, 4, dtype=dt)], attrs=dict(upper=0), opset=14)

# --- DepthToSpace / SpaceToDepth ------------------------------------------------------------------------------
add("depth_to_space_dcr", "DepthToSpace", [rand(1, 8, 3, 4)], attrs=dict(blocksize=2))
add("depth_to_space_dcr_explicit", "DepthToSpace", [rand(2, 18, 2, 3)], attrs=dict(blocksize=3, mode="DCR"))
add("depth_to_space_crd", "DepthToSpace", [rand(2, 8, 3, 4)], attrs=dict(blocksize=2, mode="CRD"))
add("depth_to_space_big", "DepthToSpace", [rand(1, 64, 40, 40)], attrs=dict(blocksize=2))
add("depth_to_space_f16", "DepthToSpace", [rand(1, 12, 2, 2, dtype="float16")], attrs=dict(blocksize=2, mode="CRD"))
add("depth_to_space_u8", "DepthToSpace", [rand(1, 4, 2, 3, dtype="uint8")], attrs=dict(blocksize=2))
add("space_to_depth", "SpaceToDepth", [rand(1, 2, 4, 6)], attrs=dict(blocksize=2))
add("space_to_depth_b3", "SpaceToDepth", [rand(2, 3, 6, 3)], attrs=dict(blocksize=3))
add("space_to_depth_big", "SpaceToDepth", [rand(1, 16, 80, 80)], attrs=dict(blocksize=2))
add("space_to_depth_u8", "SpaceToDepth", [rand(1, 3, 4, 4, dtype="uint8")], attrs=dict(blocksize=2))

# --- GatherND -------------------------------------------------------------------------------------------------
add("gather_nd_elements", "GatherND", [rand(3, 4), const([[0, 1], [2, 3], [1, 0]], "int64")])
add("gather_nd_slices", "GatherND", [rand(4, 5, 6), const([[1], [3], [0]], "int64")])
add("gather_nd_pairs_slices", "GatherND", [rand(4, 5, 6), const([[[0, 1], [3, 4]], [[2, 2], [1, 0]]], "int64")])
add("gather_nd_negative", "GatherND", [rand(5, 3), const([[-1, -3], [-5, 0]], "int64")])
add("gather_nd_random", "GatherND", [rand(6, 7, 8), randint(10, 2, low=-6, high=6)])
add("gather_nd_batch1", "GatherND", [rand(2, 5, 4), const([[[1], [4], [-2]], [[0], [0], [3]]], "int64")],
    attrs=dict(batch_dims=1))
add("gather_nd_batch1_elements", "GatherND", [rand(3, 4, 5), randint(3, 6, 2, low=-4, high=4)],
    attrs=dict(batch_dims=1))
add("gather_nd_batch2", "GatherND", [rand(2, 3, 4, 5), randint(2, 3, 2, 1, low=0, high=4)], attrs=dict(batch_dims=2))
add("gather_nd_weight_indices", "GatherND", [rand(6, 2), weight(const([[5], [0], [-1]], "int64"))])
add("gather_nd_big", "GatherND", [rand(500, 256), randint(300, 1, low=-500, high=500)])
for tag, dt in DTYPES.items():
    add(f"gather_nd_{tag}", "GatherND", [rand(4, 5, 3, dtype=dt), randint(2, 2, low=-4, high=4)])

# --- ScatterElements ------------------------------------------------------------------------------------------
add("scatter_elements_axis0", "ScatterElements", [rand(3, 3), const([[1, 0, 2], [0, 2, 1]], "int64"), rand(2, 3)])
add("scatter_elements_axis1", "ScatterElements", [rand(3, 5), const([[1, 3], [0, 4], [2, 2]], "int64"), rand(3, 2)],
    attrs=dict(axis=1))
add("scatter_elements_negative", "ScatterElements", [rand(2, 4, 5), const(np.full((2, 1, 3), -1), "int64"),
                                                     rand(2, 1, 3)], attrs=dict(axis=-2))
add("scatter_elements_int32", "ScatterElements", [rand(4, 6), const([[-1, 2], [0, -6]], "int32"), rand(2, 2)],
    attrs=dict(axis=1))
add("scatter_elements_weight_indices", "ScatterElements",
    [rand(5, 2), weight(const([[4, 0], [1, 3]], "int64")), rand(2, 2)])
for red, opset in (("add", 16), ("mul", 16), ("max", 18), ("min", 18)):
    kw = dict(out_shapes=[(4, 3)]) if opset == 18 else {}
    add(f"scatter_elements_{red}", "ScatterElements",
        [rand(4, 3), const([[1, 0, 1], [1, 3, 1], [0, 0, 1]], "int64"), rand(3, 3)],
        attrs=dict(reduction=red), opset=opset, **kw)
add("scatter_elements_min_f64", "ScatterElements",
    [rand(4, 3, dtype="float64"), const([[1, 0, 1], [1, 3, 1]], "int64"), rand(2, 3, dtype="float64")],
    attrs=dict(reduction="min"), opset=18, out_shapes=[(4, 3)])
add("scatter_elements_add_i64", "ScatterElements",
    [randint(3, 4, low=-50, high=50), const([[2, 2, 0, 1], [2, 2, 0, 1]], "int64"), randint(2, 4, low=-50, high=50)],
    attrs=dict(reduction="add"), opset=16)
for tag, dt in DTYPES.items():
    add(f"scatter_elements_{tag}", "ScatterElements",
        [rand(3, 4, dtype=dt), const([[0, 1, 2, 1], [2, 0, 1, 0]], "int64"), rand(2, 4, dtype=dt)])

# --- OneHot ---------------------------------------------------------------------------------------------------
def one_hot(name, indices, depth, values, out, **attrs):
    # onnx shape inference cannot see the depth: out is the output shape.
    add(name, "OneHot", [indices, depth, values], attrs=attrs, opset=11, out_shapes=[out])


one_hot("one_hot_basic", randint(2, 3, low=0, high=5), i64(5), weight(const([0, 1], "float32")), (2, 3, 5))
one_hot("one_hot_negative_indices", randint(4, 3, low=-6, high=6), i64(6), weight(const([-2.5, 3], "float32")), (4, 3, 6))
one_hot("one_hot_out_of_range_all_off", const([0, 3, 9, -9, -4, 4], "int64"), i64(4),
        weight(const([0, 1], "float32")), (6, 4))
one_hot("one_hot_axis0", randint(3, 4, low=0, high=7), i64(7), weight(const([0, 1], "float32")), (7, 3, 4), axis=0)
one_hot("one_hot_axis1", randint(3, 4, low=-7, high=7), i64(7), weight(const([5, 7], "int64")), (3, 7, 4), axis=1)
one_hot("one_hot_axis_negative", randint(2, 3, 4, low=0, high=3), i64(3), weight(const([0, 1], "float32")), (2, 3, 3, 4), axis=-3)
one_hot("one_hot_depth_1d", randint(5, low=0, high=4), i64([4]), weight(const([0, 1], "float32")), (5, 4))
one_hot("one_hot_int32_indices", randint(6, low=-3, high=3, dtype="int32"), weight(const(3, "int32")),
        weight(const([0, 1], "float32")), (6, 3))
one_hot("one_hot_float_depth", randint(2, 5, low=0, high=3), weight(const(3.0, "float32")),
        weight(const([0, 1], "float32")), (2, 5, 3))
one_hot("one_hot_runtime_values", randint(8, low=0, high=10), i64(10), rand(2), (8, 10))
one_hot("one_hot_big", randint(64, 77, low=0, high=100), i64(100), weight(const([0, 1], "float32")), (64, 77, 100))

# EyeLike (opset 9): the main, an upper and a lower diagonal, non-square shapes, a k past either side (all zero),
# the dtype attribute overriding the input's.
add("eye_like_square", "EyeLike", [rand(4, 4)], opset=9)
add("eye_like_wide_k1", "EyeLike", [rand(3, 5)], attrs=dict(k=1), opset=9)
add("eye_like_tall_k_neg", "EyeLike", [rand(5, 3)], attrs=dict(k=-2), opset=9)
add("eye_like_k_past_cols", "EyeLike", [rand(3, 4)], attrs=dict(k=4), opset=9)
add("eye_like_k_past_rows", "EyeLike", [rand(3, 4)], attrs=dict(k=-3), opset=9)
add("eye_like_i32_to_float", "EyeLike", [randint(4, 5, dtype="int32")], attrs=dict(dtype=1, k=1), opset=9)
add("eye_like_i64", "EyeLike", [randint(3, 3, dtype="int64")], opset=9)
add("eye_like_float_to_i32", "EyeLike", [rand(2, 6)], attrs=dict(dtype=6, k=3), opset=9)
add("eye_like_empty", "EyeLike", [rand(0, 4)], opset=9)

# Compress (opset 11; opset 9 has no negative axis): along each axis, a negative axis, no axis (flattened), a
# condition shorter than the axis, none true, a condition computed at run time. onnx shape inference does not
# read the condition, so every case declares its output shape.
def cond(*values):
    return weight(const(np.array(values, bool), "bool"))


add("compress_axis0", "Compress", [rand(4, 3), cond(True, False, True, True)], attrs=dict(axis=0),
    opset=11, out_shapes=[(3, 3)])
add("compress_axis1", "Compress", [rand(2, 5, 3), cond(False, True, False, True, True)], attrs=dict(axis=1),
    opset=11, out_shapes=[(2, 3, 3)])
add("compress_axis_neg", "Compress", [rand(2, 3, 4), cond(True, False, False, True)], attrs=dict(axis=-1),
    opset=11, out_shapes=[(2, 3, 2)])
add("compress_flat", "Compress", [rand(3, 4), cond(False, True, True, False, True, False, True)],
    opset=11, out_shapes=[(4,)])
add("compress_short_condition", "Compress", [rand(5, 2), cond(False, True)], attrs=dict(axis=0),
    opset=11, out_shapes=[(1, 2)])
add("compress_none_true", "Compress", [rand(3, 2), cond(False, False, False)], attrs=dict(axis=0),
    opset=11, out_shapes=[(0, 2)])
add("compress_opset9_i64", "Compress", [rand(3, 4, dtype="int64", low=-50, high=50), cond(True, False, True)],
    attrs=dict(axis=0), opset=9, out_shapes=[(2, 4)])
add("compress_f16", "Compress", [rand(2, 6, dtype="float16"), cond(True, True, False, False, True, True)],
    attrs=dict(axis=1), opset=11, out_shapes=[(2, 4)])
add("compress_runtime_condition", "Compress", [rand(4, 3), const(np.array([True, False, True, False]), "bool")],
    attrs=dict(axis=0), opset=11, out_shapes=[(2, 3)])

# ReverseSequence (opset 10): time-major and batch-major, trailing dimensions, lengths 0 and the full axis,
# integer data, lengths computed at run time.
add("reverse_sequence_time_major", "ReverseSequence", [rand(5, 4, 3), i64([5, 3, 1, 0])],
    attrs=dict(time_axis=0, batch_axis=1), opset=10)
add("reverse_sequence_batch_major", "ReverseSequence", [rand(3, 6), i64([2, 6, 4])],
    attrs=dict(time_axis=1, batch_axis=0), opset=10)
add("reverse_sequence_defaults", "ReverseSequence", [rand(4, 2, 2, 3), i64([4, 2])], opset=10)
add("reverse_sequence_i32", "ReverseSequence", [randint(4, 3, dtype="int32"), i64([1, 4, 3])], opset=10)
add("reverse_sequence_runtime_lens", "ReverseSequence", [rand(2, 5, 2), const([3, 5], "int64")],
    attrs=dict(time_axis=1, batch_axis=0), opset=10)

# HannWindow, HammingWindow, BlackmanWindow (opset 17): periodic and symmetric, int32/int64 sizes, float16
# output, a size computed at run time (declared output shape). ONNX rejects size 0, as the engine does.
for op in ("HannWindow", "HammingWindow", "BlackmanWindow"):
    n = op.lower()[:-len("window")]
    add(f"{n}_window_periodic", op, [weight(const(10, "int64"))], opset=17)
    add(f"{n}_window_symmetric", op, [weight(const(10, "int32"))], attrs=dict(periodic=0), opset=17)
    add(f"{n}_window_long", op, [weight(const(257, "int64"))], opset=17)
    add(f"{n}_window_f16", op, [weight(const(16, "int64"))], attrs=dict(output_datatype=10), opset=17)
    add(f"{n}_window_runtime_size", op, [const(12, "int32")], attrs=dict(periodic=0), opset=17, out_shapes=[(12,)])

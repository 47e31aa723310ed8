"""Ops that run along one axis: CumSum (exclusive, reverse, negative and run-time axes, float32/int64/int32),
TopK (largest/smallest, sorted or not, K as a weight or a run-time input, ties, every axis, integer inputs) and
Unique (sorted or in order of first occurrence, flattened or along an axis, negative axes, 3-D, one to four
outputs, -0 and 0, every engine dtype, the input pushed at run time)."""

import numpy as np

from opcase import Case, const, rand, randint, weight

CASES = []


def add(*args, **kw):
    CASES.append(Case(*args, **kw))


def axis_w(v, dtype="int64"):
    return weight(const(v, dtype))


# --- CumSum ---------------------------------------------------------------------------------------------------
for exclusive in (0, 1):
    for reverse in (0, 1):
        tag = f"ex{exclusive}_rev{reverse}"
        add(f"cumsum_{tag}", "CumSum", [rand(3, 5, 4), axis_w(1)], attrs=dict(exclusive=exclusive, reverse=reverse))
        add(f"cumsum_last_{tag}", "CumSum", [rand(4, 7), axis_w(-1)],
            attrs=dict(exclusive=exclusive, reverse=reverse))
add("cumsum_1d", "CumSum", [rand(10), axis_w(0)])
add("cumsum_axis0", "CumSum", [rand(6, 3, 2), axis_w(0)])
add("cumsum_negative_axis", "CumSum", [rand(2, 3, 4), axis_w(-3)])
add("cumsum_axis_1d_tensor", "CumSum", [rand(2, 5), axis_w([1])])
add("cumsum_axis_int32", "CumSum", [rand(3, 4), axis_w(0, "int32")])
add("cumsum_runtime_axis", "CumSum", [rand(3, 4, 5), const(-2, "int64")])
add("cumsum_i64", "CumSum", [randint(4, 6, low=-100, high=100), axis_w(1)], attrs=dict(exclusive=1))
add("cumsum_i32", "CumSum", [randint(5, 3, low=-100, high=100, dtype="int32"), axis_w(0)], attrs=dict(reverse=1))
add("cumsum_f64", "CumSum", [rand(4, 6, dtype="float64"), axis_w(1)], attrs=dict(exclusive=1, reverse=1))
add("cumsum_big", "CumSum", [rand(64, 300, 16), axis_w(1)])
add("cumsum_empty", "CumSum", [rand(0, 4), axis_w(1)])

# --- TopK -----------------------------------------------------------------------------------------------------
def topk(name, x, k, **attrs):
    add(name, "TopK", [x, k], attrs=attrs, outputs=2)


def kw(v):
    return weight(const([v], "int64"))


topk("topk_largest", rand(3, 10), kw(4))
topk("topk_smallest", rand(3, 10), kw(3), largest=0)
topk("topk_axis0", rand(8, 5), kw(2), axis=0)
topk("topk_f64", rand(3, 10, dtype="float64"), kw(4))
topk("topk_middle_axis", rand(2, 9, 4), kw(5), axis=1)
topk("topk_negative_axis", rand(2, 9, 4), kw(3), axis=-2, largest=0)
topk("topk_k_all", rand(4, 6), kw(6))
topk("topk_k1", rand(5, 20), kw(1))
topk("topk_k0", rand(3, 4), kw(0))
topk("topk_ties", randint(4, 12, low=0, high=3, dtype="int64"), kw(5))
topk("topk_ties_smallest", randint(4, 12, low=0, high=3, dtype="int32"), kw(7), largest=0)
topk("topk_ties_float", const([[1, 2, 2, 3, 3, 3, 0, 2]], "float32"), kw(5))
topk("topk_unsorted_k1", rand(3, 7), kw(1), sorted=0)  # ONNX leaves the order of unsorted results open
add("topk_runtime_k", "TopK", [rand(3, 10), const([4], "int64")], outputs=2, out_shapes=[(3, 4), (3, 4)])
topk("topk_f16", rand(4, 16, dtype="float16"), kw(5))
topk("topk_i64", randint(3, 50, low=-1000, high=1000), kw(10), largest=0)
topk("topk_big", rand(64, 1000), kw(50))
topk("topk_1d", rand(100), kw(7))

# --- Unique ---------------------------------------------------------------------------------------------------
# The number of distinct values is data-dependent (onnx shape inference leaves it open), so each case declares its
# output shapes, computed here with numpy (ONNX Runtime's outputs are checked against them too).
def unique(name, x, axis=None, sorted=1, outputs=4, runtime=False, dtype=None, reference=None):
    arr = np.asarray(x) if dtype is None else np.asarray(x, dtype=dtype)
    if axis is None:
        n, count = arr.size, len(np.unique(arr.reshape(-1)))
        y_shape = (count,)
    else:
        moved = np.moveaxis(arr, axis, 0).reshape(arr.shape[axis], -1)
        n, count = arr.shape[axis], len(np.unique(moved, axis=0))
        y_shape = tuple(count if i == axis % arr.ndim else d for i, d in enumerate(arr.shape))
    shapes = [y_shape, (count,), (n,), (count,)][:outputs]
    attrs = dict(sorted=sorted)
    if axis is not None:
        attrs["axis"] = axis
    data = const(arr, arr.dtype.name)
    add(name, "Unique", [data if runtime else weight(data)], attrs=attrs, opset=11, outputs=outputs,
        out_shapes=shapes, reference=reference)


def widened(narrow, wide):
    """For dtypes ONNX Runtime's Unique has no kernel for: the reference takes the unique values of the input
    widened to `wide` (order preserving and exact, so the groups and their order are the same) and narrows Y back
    to `narrow`."""
    def reference(helper, node):
        from onnx import TensorProto
        types = {"float32": TensorProto.FLOAT, "int64": TensorProto.INT64, "float16": TensorProto.FLOAT16,
                 "int32": TensorProto.INT32, "uint8": TensorProto.UINT8, "bool": TensorProto.BOOL,
                 "float64": TensorProto.DOUBLE, "uint16": TensorProto.UINT16, "uint64": TensorProto.UINT64}
        x, y = node.input[0], node.output[0]
        op = helper.make_node("Unique", [x + "_wide"], [y + "_wide"] + list(node.output[1:]))
        op.attribute.extend(node.attribute)
        return [helper.make_node("Cast", [x], [x + "_wide"], to=types[wide]), op,
                helper.make_node("Cast", [y + "_wide"], [y], to=types[narrow])]
    return reference


_u = np.random.default_rng(11)
UNIQUE_1D = np.array([2.0, 1.0, 1.0, 3.0, 4.0, 3.0], np.float32)
UNIQUE_2D = np.array([[1, 0, 0], [1, 0, 0], [2, 3, 4]], np.float32)
UNIQUE_3D = np.array([[[1, 1], [0, 1], [2, 1], [0, 1]], [[1, 1], [0, 1], [2, 1], [0, 1]]], np.float32)
for s in (0, 1):
    unique(f"unique_flat_sorted{s}", UNIQUE_1D, sorted=s)
    unique(f"unique_axis0_sorted{s}", UNIQUE_2D, axis=0, sorted=s)
    unique(f"unique_axis1_sorted{s}", _u.integers(0, 2, size=(2, 7)).astype(np.float32), axis=1, sorted=s)
    unique(f"unique_3d_axis1_sorted{s}", UNIQUE_3D, axis=1, sorted=s)
    unique(f"unique_random_sorted{s}", _u.integers(-20, 20, size=(6, 9)).astype(np.float32), sorted=s)
unique("unique_negative_axis", UNIQUE_2D, axis=-2)
unique("unique_3d_axis_neg1", _u.integers(0, 2, size=(2, 2, 6)).astype(np.float32), axis=-1)
unique("unique_3d_axis2", _u.integers(0, 2, size=(2, 3, 5)).astype(np.float32), axis=2, sorted=0)
unique("unique_3d_flat", UNIQUE_3D)
unique("unique_y_only", UNIQUE_1D, outputs=1)
unique("unique_two_outputs", UNIQUE_2D, axis=1, outputs=2)
unique("unique_negative_zero", np.array([0.0, -1.5, -0.0, 2.5, -1.5, 0.0], np.float32))
unique("unique_all_same", np.full((3, 4), 7.0, np.float32))
unique("unique_all_distinct", _u.permutation(12).astype(np.float32).reshape(3, 4), sorted=0)
unique("unique_i64", _u.integers(-5, 5, size=(4, 5)), dtype="int64")
unique("unique_i64_axis", np.array([[3, 1, 3, 1], [-2, 5, -2, 5], [3, 1, 3, 1]]), axis=0, dtype="int64")
unique("unique_i8", _u.integers(-100, 100, size=(30,)), dtype="int8", sorted=0)
unique("unique_runtime_input", _u.integers(0, 6, size=(3, 5)).astype(np.float32), runtime=True)
unique("unique_runtime_axis", UNIQUE_3D, axis=1, runtime=True, sorted=0)
unique("unique_empty", np.zeros((0,), np.float32))
unique("unique_i32", _u.integers(-4, 4, size=(5, 6)), dtype="int32", reference=widened("int32", "int64"))
unique("unique_i32_axis", np.array([[1, 2], [1, 2], [0, 9], [1, 2]]), axis=0, sorted=0, dtype="int32",
       reference=widened("int32", "int64"))
unique("unique_u8", _u.integers(0, 255, size=(40,)), dtype="uint8", reference=widened("uint8", "int64"))
unique("unique_f16", _u.integers(-8, 8, size=(4, 6)) / 4, dtype="float16", reference=widened("float16", "float32"))
unique("unique_f16_axis", (_u.integers(0, 2, size=(3, 6)) / 2), axis=1, dtype="float16",
       reference=widened("float16", "float32"))
unique("unique_f64", _u.integers(-8, 8, size=(4, 6)) / 4, dtype="float64", reference=widened("float64", "float32"))
unique("unique_u16_axis", np.array([[1, 2], [1, 2], [0, 9], [1, 2]]), axis=0, dtype="uint16",
       reference=widened("uint16", "int64"))
unique("unique_bool", _u.integers(0, 2, size=(3, 4)).astype(bool), reference=widened("bool", "int64"))

"""Bitwise ops: BitShift (opset 11, unsigned types, both directions, shifts by 0, by the width - 1 and by the
width or more, which give 0), BitwiseAnd/Or/Xor (opset 18, every integer type over its whole range, numpy
broadcasting at ranks 0-7 and empty tensors) and BitwiseNot."""

import numpy as np

from opcase import Case, const, weight

CASES = []
_rng = np.random.default_rng(20261128)  # fixed data built here (values over each type's whole range)

INT_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
WIDTH = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}
SHORT = {"int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
         "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64"}


def add(*args, **kw):
    CASES.append(Case(*args, **kw))


def full(shape, dtype):
    """Random values over the whole range of dtype (so every bit, the sign bit included, is exercised)."""
    info = np.iinfo(dtype)
    return const(_rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True), dtype)


def bcast(a, b):
    """The output shape, given to the case: ONNX 1.12's shape inference has no opset-18 Bitwise schemas."""
    return [tuple(np.broadcast_shapes(a, b))]


# --- BitShift -----------------------------------------------------------------------------------------------
# ONNX leaves a shift by the bit width or more undefined; onnxstream gives 0, as ONNX Runtime 1.30 does on
# every path of its uint8, uint32 and uint64 kernels (same-shape, scalar count, scalar value). It has no
# uint16 kernel: uint16 cases compare against numpy's shifts (with the same rule) through a Constant node in
# place of the op (`reference`), and ONNX's own node tests (test_bitshift_*_uint16) check it too.


def constant_reference(expected):
    """reference= for a case whose expected output numpy computes: model.onnx is one Constant node."""
    def nodes(helper, node):
        from onnx import numpy_helper
        return [helper.make_node("Constant", [], [node.output[0]], value=numpy_helper.from_array(expected))]
    return nodes


def shift_numpy(x, s, left):
    x, s = np.broadcast_arrays(x, s)
    out = np.zeros(x.shape, x.dtype)
    ok = s < WIDTH[x.dtype.name]
    out[ok] = (x[ok] << s[ok]) if left else (x[ok] >> s[ok])
    return out


def add_shift(name, x, s, direction):
    """A BitShift case on fixed data; uint16 ones get numpy's answer (no ONNX Runtime kernel)."""
    ref = None
    if x.array.dtype == np.uint16:
        ref = constant_reference(shift_numpy(x.array, s.array, direction == "LEFT"))
    add(name, "BitShift", [x, s], attrs=dict(direction=direction), opset=11, reference=ref)


for dt in UNSIGNED:
    w = WIDTH[dt]
    top = np.iinfo(dt).max
    t = SHORT[dt]
    # Values with the top and bottom bits set; counts 0, 1, the width - 1 and between.
    values = np.array([top, 1, top // 2 + 1, 0x5A, top - 1, 3], dt)
    in_range = np.array([0, 1, w - 1, w // 2, 3, w - 2], dt)
    beyond = np.array([w, w + 1, 2 * w, top, w * 3 - 1, 255 if w > 8 else 200], dt)
    # Every count from 0 to twice the width, broadcast against a column of values.
    column = np.array([[top], [1], [top // 2 + 1]], dt)
    counts = np.arange(0, 2 * w + 1).astype(dt)
    for direction in ("LEFT", "RIGHT"):
        d = direction.lower()
        add_shift(f"bitshift_{d}_{t}", full((3, 4), dt), const(_rng.integers(0, w, (3, 4)).astype(dt), dt),
                  direction)
        add_shift(f"bitshift_{d}_{t}_edges", const(values, dt), const(in_range, dt), direction)
        add_shift(f"bitshift_{d}_{t}_beyond", const(values, dt), const(beyond, dt), direction)
        add_shift(f"bitshift_{d}_{t}_all_counts", const(column, dt), const(counts, dt), direction)
        add_shift(f"bitshift_{d}_{t}_scalar", full((2, 3, 4), dt), const(w - 1, dt), direction)
        add_shift(f"bitshift_{d}_{t}_scalar_beyond", full((2, 3), dt), const(w, dt), direction)
        add_shift(f"bitshift_{d}_{t}_scalar_value", const(top, dt), const(counts, dt), direction)
        add_shift(f"bitshift_{d}_{t}_bcast", full((2, 1, 4), dt),
                  const(_rng.integers(0, w, (3, 1)).astype(dt), dt), direction)
add("bitshift_left_u8_weight", "BitShift", [full((2, 5), "uint8"), weight(const(np.array([1, 2, 3, 4, 7], "uint8"),
                                                                                  "uint8"))],
    attrs=dict(direction="LEFT"), opset=11)
add("bitshift_right_u32_empty", "BitShift", [const(np.zeros((0, 3), "uint32"), "uint32"),
                                             const(np.array([1, 2, 3], "uint32"), "uint32")],
    attrs=dict(direction="RIGHT"), opset=11)
add("bitshift_left_u64_d7", "BitShift", [full((2, 1, 3, 1, 2, 2, 3), "uint64"),
                                         const(_rng.integers(0, 64, (1, 2, 1, 3, 2, 1, 3)).astype("uint64"),
                                               "uint64")], attrs=dict(direction="LEFT"), opset=11)

# --- BitwiseAnd / BitwiseOr / BitwiseXor --------------------------------------------------------------------
BROADCAST = {
    "same": ((3, 4), (3, 4)),
    "scalar_b": ((2, 3, 4), ()),
    "scalar_a": ((), (3, 5)),
    "row": ((4, 5), (5,)),
    "column": ((4, 5), (4, 1)),
    "both": ((3, 1), (1, 4)),
    "rank_mismatch": ((5,), (2, 3, 5)),
    "d7": ((2, 1, 3, 1, 2, 2, 3), (1, 2, 1, 3, 2, 1, 3)),
    "empty": ((0, 3), (3,)),
}
for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
    n = op[len("Bitwise"):].lower()
    for dt in INT_TYPES:
        add(f"bitwise_{n}_{SHORT[dt]}", op, [full((3, 4), dt), full((3, 4), dt)], opset=18, out_shapes=[(3, 4)])
    for name, (a, b) in BROADCAST.items():
        dt = "int64" if name in ("d7", "scalar_a") else "int32"
        add(f"bitwise_{n}_{name}", op, [full(a, dt), full(b, dt)], opset=18, out_shapes=bcast(a, b))
    add(f"bitwise_{n}_u8_bcast", op, [full((2, 3, 4), "uint8"), full((3, 1), "uint8")], opset=18,
        out_shapes=[(2, 3, 4)])
    add(f"bitwise_{n}_u64_weight", op, [full((4, 6), "uint64"), weight(full((6,), "uint64"))], opset=18,
        out_shapes=[(4, 6)])
    add(f"bitwise_{n}_opset22", op, [full((3, 4), "int16"), full((4,), "int16")], opset=22,
        out_shapes=[(3, 4)])
add("bitwise_and_big", "BitwiseAnd", [full((1, 16, 64, 64), "int32"), full((64,), "int32")], opset=18,
    out_shapes=[(1, 16, 64, 64)])

# --- BitwiseNot ---------------------------------------------------------------------------------------------
for dt in INT_TYPES:
    info = np.iinfo(dt)
    add(f"bitwise_not_{SHORT[dt]}", "BitwiseNot", [full((3, 4), dt)], opset=18, out_shapes=[(3, 4)])
    add(f"bitwise_not_{SHORT[dt]}_edges", "BitwiseNot", [const(np.array([0, info.max, info.min, 1], dt), dt)],
        opset=18, out_shapes=[(4,)])
add("bitwise_not_scalar", "BitwiseNot", [const(np.int16(-5), "int16")], opset=18, out_shapes=[()])
add("bitwise_not_empty", "BitwiseNot", [const(np.zeros((2, 0), "uint16"), "uint16")], opset=18,
    out_shapes=[(2, 0)])
add("bitwise_not_d7", "BitwiseNot", [full((2, 1, 3, 1, 2, 2, 3), "int8")], opset=18,
    out_shapes=[(2, 1, 3, 1, 2, 2, 3)])
add("bitwise_not_big", "BitwiseNot", [full((1, 16, 64, 64), "uint8")], opset=18, out_shapes=[(1, 16, 64, 64)])
add("bitwise_not_opset22", "BitwiseNot", [full((5,), "uint32")], opset=22, out_shapes=[(5,)])

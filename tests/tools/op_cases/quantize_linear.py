"""ONNX's explicit quantization ops: QuantizeLinear and DequantizeLinear (per-tensor and per-axis, uint8 and
int8, saturation at both ends, ties to even, parameters as weights or run-time inputs, int32 x),
16-bit codes, float16 scales, blocked quantization and output_dtype at opset 21,
DynamicQuantizeLinear (all-positive, all-negative, mixed and all-zero inputs) and MatMulInteger (every
uint8/int8 pairing, with and without zero points, per-column zero points, batch broadcasting, B as a weight or
a run-time input)."""

import numpy as np

from opcase import Case, const, rand, randint, weight

CASES = []

# Dequantized values are (x - zero_point) * scale in float32, as ONNX Runtime computes them: no tolerance to
# speak of.
EXACT_FLOAT = dict(atol=0.0, rtol=1e-6)


def add(*args, **kw):
    CASES.append(Case(*args, **kw))


def f32(v):
    return const(v, "float32")


def u8(v):
    return const(v, "uint8")


def i8(v):
    return const(v, "int8")


# --- QuantizeLinear -------------------------------------------------------------------------------------------
# |x| / scale reaches 150: past both ends of uint8 around 128 and of int8 around -3.
add("q_u8_per_tensor", "QuantizeLinear", [rand(2, 3, 40, low=-3, high=3), weight(f32(0.02)), weight(u8(128))])
add("q_i8_per_tensor", "QuantizeLinear", [rand(4, 50, low=-1.5, high=1.5), weight(f32(0.01)), weight(i8(-3))])
add("q_u8_no_zero_point", "QuantizeLinear", [rand(5, 7, low=-1, high=2), weight(f32(0.007))])
add("q_u8_opset10", "QuantizeLinear", [rand(3, 8, low=-1, high=1), weight(f32(0.004)), weight(u8(200))],
    opset=10)
add("q_i8_opset13", "QuantizeLinear", [rand(3, 8, low=-1, high=1), weight(f32(0.005)), weight(i8(7))], opset=13)
# x / scale exactly k + 0.5 (the scale is a power of two): ties go to the even neighbour on both sides of 0.
TIES = [-3.25, -2.75, -2.25, -1.75, -1.25, -0.75, -0.25, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3.25]
add("q_ties_i8", "QuantizeLinear", [f32(TIES), weight(f32(0.5)), weight(i8(0))])
add("q_ties_u8", "QuantizeLinear", [f32(TIES), weight(f32(0.5)), weight(u8(10))])
add("q_saturate_extremes", "QuantizeLinear",
    [f32([-1e30, -1e6, -128.5, -128.0, 127.0, 127.5, 1e6, 1e30]), weight(f32(1.0)), weight(i8(0))])
add("q_one_element_scale_is_per_tensor", "QuantizeLinear",
    [rand(2, 3, 4), weight(f32([0.01])), weight(u8([100]))], attrs=dict(axis=2))
add("q_per_axis_default_axis", "QuantizeLinear",
    [rand(2, 4, 9, low=-2, high=2), weight(f32([0.01, 0.02, 0.005, 0.1])), weight(u8([0, 128, 255, 30]))])
add("q_per_axis_i8_axis0", "QuantizeLinear",
    [rand(3, 16, low=-2, high=2), weight(f32([0.01, 0.03, 0.02])), weight(i8([-128, 0, 127]))], attrs=dict(axis=0))
add("q_per_axis_negative_axis", "QuantizeLinear",
    [rand(2, 3, 5, low=-1, high=1), weight(f32([0.004, 0.008, 0.01, 0.02, 0.05])),
     weight(i8([1, -2, 3, -4, 5]))], attrs=dict(axis=-1))
add("q_per_axis_u8_axis_minus3", "QuantizeLinear",
    [rand(3, 2, 5, low=-1, high=1), weight(f32([0.004, 0.008, 0.01])), weight(u8([1, 120, 250]))],
    attrs=dict(axis=-3))
add("q_x_weight", "QuantizeLinear", [weight(rand(8, 32, low=-1, high=1)), weight(f32(0.01)), weight(i8(5))])
add("q_params_runtime", "QuantizeLinear", [rand(4, 6, low=-1, high=1), f32(0.006), u8(77)])
add("q_per_axis_params_runtime", "QuantizeLinear",
    [rand(3, 6, low=-1, high=1), f32([0.01, 0.002, 0.02, 0.004, 0.005, 0.1]), i8([0, 1, 2, 3, 4, 5])],
    attrs=dict(axis=1))
add("q_big", "QuantizeLinear", [rand(64, 1000, low=-3, high=3), weight(f32(0.02)), weight(u8(128))])
add("q_empty", "QuantizeLinear", [rand(0, 4), weight(f32(0.1)), weight(u8(3))])

# --- DequantizeLinear -----------------------------------------------------------------------------------------
def dq(name, inputs, **kw):
    add(name, "DequantizeLinear", inputs, **EXACT_FLOAT, **kw)


dq("dq_u8_per_tensor", [randint(3, 40, low=0, high=256, dtype="uint8"), weight(f32(0.02)), weight(u8(128))])
dq("dq_i8_per_tensor", [randint(3, 40, low=-128, high=128, dtype="int8"), weight(f32(0.013)), weight(i8(-7))])
dq("dq_u8_no_zero_point", [randint(5, 9, low=0, high=256, dtype="uint8"), weight(f32(0.3))])
dq("dq_i32_no_zero_point", [randint(4, 16, low=-2**31, high=2**31, dtype="int32"), weight(f32(1.5e-5))])
dq("dq_i32_zero_zero_point", [randint(4, 16, low=-100000, high=100000, dtype="int32"), weight(f32(0.002)),
                              weight(const(0, "int32"))])
dq("dq_u8_opset10", [randint(3, 8, low=0, high=256, dtype="uint8"), weight(f32(0.25)), weight(u8(3))], opset=10)
dq("dq_per_axis_u8", [randint(2, 4, 9, low=0, high=256, dtype="uint8"), weight(f32([0.01, 0.02, 0.5, 1.25])),
                      weight(u8([0, 128, 255, 30]))])
dq("dq_per_axis_i8_axis0_weight", [weight(randint(6, 32, low=-128, high=128, dtype="int8")),
                                   weight(f32([0.01, 0.02, 0.03, 0.04, 0.05, 0.06])),
                                   weight(i8([0, 1, -1, 127, -128, 3]))], attrs=dict(axis=0))
dq("dq_per_axis_negative_axis_weight", [weight(randint(16, 4, low=-128, high=128, dtype="int8")),
                                        weight(f32([0.5, 0.25, 0.125, 0.1])), weight(i8([0, 0, 0, 0]))],
   attrs=dict(axis=-1))
dq("dq_per_axis_no_zero_point", [randint(3, 5, 2, low=-128, high=128, dtype="int8"),
                                 weight(f32([0.1, 0.2, 0.3, 0.4, 0.5]))], attrs=dict(axis=-2))
dq("dq_params_runtime", [randint(4, 6, low=0, high=256, dtype="uint8"), f32(0.07), u8(9)])
dq("dq_big_weight", [weight(randint(256, 512, low=0, high=256, dtype="uint8")), weight(f32(0.004)),
                     weight(u8(131))])

# --- Opset 21: 16-bit codes, float16 scales, blocked quantization, output_dtype ---------------------------------
# (ONNX Runtime's float8 codes cannot cross onnxruntime-node's tensors, and this generator's ONNX 1.12 shape
# inference types a float16-scaled DequantizeLinear's or an output_dtype QuantizeLinear's output wrongly:
# ONNX's own node tests cover those.)
def i16(v):
    return const(v, "int16")


def u16(v):
    return const(v, "uint16")


add("q_u16_per_tensor", "QuantizeLinear", [rand(3, 40, low=-3, high=3), weight(f32(1e-4)), weight(u16(30000))],
    opset=21)
add("q_i16_per_axis_saturating", "QuantizeLinear",
    [rand(2, 3, 50, low=-4, high=4), weight(f32([1e-4, 2e-4, 5e-5])), weight(i16([0, -100, 2000]))],
    attrs=dict(axis=1), opset=21)
add("q_f16_x_and_scale", "QuantizeLinear",
    [rand(4, 30, low=-1, high=1, dtype="float16"), weight(const(0.01, "float16")), weight(u8(128))], opset=21)
# Blocks of 4 along an axis of 10: the last block has 2 channels.
add("q_blocked_axis1", "QuantizeLinear",
    [rand(3, 10, low=-2, high=2), weight(rand(3, 3, low=0.01, high=0.03)),
     weight(randint(3, 3, low=-20, high=20, dtype="int8"))], attrs=dict(axis=1, block_size=4), opset=21)
add("q_blocked_axis0_u8", "QuantizeLinear",
    [rand(6, 2, 5, low=-1, high=1), weight(rand(2, 2, 5, low=0.005, high=0.01)),
     weight(randint(2, 2, 5, low=100, high=150, dtype="uint8"))], attrs=dict(axis=0, block_size=3), opset=21)
dq("dq_u16_per_tensor", [randint(3, 40, low=0, high=65536, dtype="uint16"), weight(f32(1e-4)), weight(u16(40000))],
   opset=21)
dq("dq_i16_per_axis", [randint(2, 3, 7, low=-32768, high=32768, dtype="int16"), weight(f32([1e-3, 2e-3, 5e-4])),
                       weight(i16([0, -7, 300]))], attrs=dict(axis=1), opset=21)
dq("dq_blocked_axis1", [randint(3, 10, low=-128, high=128, dtype="int8"), weight(rand(3, 3, low=0.01, high=0.03)),
                        weight(randint(3, 3, low=-5, high=5, dtype="int8"))], attrs=dict(axis=1, block_size=4),
   opset=21)
dq("dq_blocked_axis_minus1_weight", [weight(randint(4, 2, 8, low=0, high=256, dtype="uint8")),
                                     weight(rand(4, 2, 4, low=0.01, high=0.03)),
                                     weight(randint(4, 2, 4, low=120, high=136, dtype="uint8"))],
   attrs=dict(axis=-1, block_size=2), opset=21)

# --- DynamicQuantizeLinear ------------------------------------------------------------------------------------
def dyn(name, x):
    add(name, "DynamicQuantizeLinear", [x], outputs=3, **EXACT_FLOAT)


dyn("dyn_mixed", rand(4, 30, low=-1, high=2))
dyn("dyn_all_positive", rand(3, 20, low=0.5, high=3))
dyn("dyn_all_negative", rand(3, 20, low=-4, high=-0.25))
dyn("dyn_all_zero", f32(np.zeros((2, 3))))
dyn("dyn_weight", weight(rand(16, 16, low=-0.3, high=0.9)))
dyn("dyn_scalar", f32(-2.5))
dyn("dyn_big", rand(128, 512, low=-5, high=3))

# --- MatMulInteger --------------------------------------------------------------------------------------------
def mmi(name, inputs, **kw):
    add(name, "MatMulInteger", inputs, **kw)


def ru8(*shape):
    return randint(*shape, low=0, high=256, dtype="uint8")


def ri8(*shape):
    return randint(*shape, low=-128, high=128, dtype="int8")


mmi("mmi_u8_u8_no_zero_points", [ru8(4, 8), weight(ru8(8, 5))])
mmi("mmi_u8_u8_zero_points", [ru8(4, 8), weight(ru8(8, 5)), u8(130), weight(u8(121))])
mmi("mmi_u8_i8_zero_points", [ru8(6, 32), weight(ri8(32, 7)), u8(3), weight(i8(-2))])
mmi("mmi_u8_i8_only_a_zero_point", [ru8(6, 32), weight(ri8(32, 7)), u8(255)])
mmi("mmi_u8_i8_only_b_zero_point", [ru8(6, 32), weight(ri8(32, 7)), None, weight(i8(9))])
mmi("mmi_i8_i8", [ri8(5, 12), ri8(12, 3), i8(-1), i8(4)])
mmi("mmi_i8_u8", [ri8(5, 12), weight(ru8(12, 3)), i8(1), weight(u8(128))])
mmi("mmi_b_per_column_zero_point", [ru8(4, 16), weight(ri8(16, 6)), u8(100),
                                    weight(i8([0, 1, -1, 127, -128, 5]))])
mmi("mmi_u8_b_per_column", [ru8(3, 10), weight(ru8(10, 4)), u8(7), weight(u8([0, 255, 128, 1]))])
mmi("mmi_one_element_zero_points", [ru8(3, 10), weight(ru8(10, 4)), u8([7]), weight(u8([200]))])
mmi("mmi_batch_a_3d", [ru8(2, 5, 24), weight(ri8(24, 9)), u8(128), weight(i8(0))])
mmi("mmi_batch_broadcast", [ru8(2, 1, 3, 8), ru8(4, 8, 5), u8(17), u8(201)])
mmi("mmi_batch_broadcast_b_batched", [ru8(3, 8), ri8(2, 8, 5), u8(5), i8(-9)])
mmi("mmi_vector_a", [ru8(16), weight(ri8(16, 4)), u8(100)])
mmi("mmi_vector_b", [ru8(3, 16), ri8(16), u8(100), i8(1)])
mmi("mmi_k_large", [ru8(2, 4096), weight(ri8(4096, 8)), u8(0), weight(i8(-128))])
mmi("mmi_alternating_b_zero_points", [ru8(7, 64), weight(ri8(64, 32)), u8(131),
                                     weight(i8([(-1) ** j * j for j in range(32)]))])
mmi("mmi_batch_a_u8_u8", [ru8(3, 2, 48), weight(ru8(48, 40)), u8(9), weight(u8(250))])
mmi("mmi_empty_m", [ru8(0, 8), weight(ru8(8, 5)), u8(1), weight(u8(2))])


# ONNX Runtime takes only one zero point for A, so per-row ones are checked against the op's definition
# written out in int32: (A - a_zero_point as a column) x (B - b_zero_point).
def int32_reference(a_zp_column_shape):
    def build(helper, node):
        from onnx import TensorProto
        a, b, za, zb = node.input
        y = node.output[0]
        shape = helper.make_tensor("ref_shape", TensorProto.INT64, [len(a_zp_column_shape)], a_zp_column_shape)
        return [
            helper.make_node("Cast", [a], ["ref_a"], to=TensorProto.INT32),
            helper.make_node("Cast", [b], ["ref_b"], to=TensorProto.INT32),
            helper.make_node("Cast", [za], ["ref_za"], to=TensorProto.INT32),
            helper.make_node("Cast", [zb], ["ref_zb"], to=TensorProto.INT32),
            helper.make_node("Constant", [], ["ref_za_shape"], value=shape),
            helper.make_node("Reshape", ["ref_za", "ref_za_shape"], ["ref_za_col"]),
            helper.make_node("Sub", ["ref_a", "ref_za_col"], ["ref_a0"]),
            helper.make_node("Sub", ["ref_b", "ref_zb"], ["ref_b0"]),
            helper.make_node("MatMul", ["ref_a0", "ref_b0"], [y]),
        ]
    return build


mmi("mmi_a_per_row_zero_point", [ru8(4, 8), weight(ru8(8, 5)), u8([1, 2, 250, 128]), weight(u8(3))],
    reference=int32_reference([4, 1]))
mmi("mmi_a_batched_zero_point", [ru8(2, 3, 8), ri8(8, 5), u8(np.array([[[1], [2], [3]], [[200], [0], [255]]])),
                                 i8(3)], reference=int32_reference([2, 3, 1]))
mmi("mmi_b_batched_zero_point", [ru8(3, 8), ri8(2, 8, 5), u8(9), i8(np.arange(-5, 5).reshape(2, 1, 5))])

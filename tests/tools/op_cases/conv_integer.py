"""ConvInteger (opset 10), 1-D and 2-D: every uint8/int8 pairing of x and w, with and without zero points (as
weights, run-time inputs, scalars and 1-element vectors), per-output-channel w_zero_point, groups (incl.
depthwise), strides, dilations, explicit and asymmetric pads (padding holds x's zero point: it contributes
nothing), every auto_pad, batches, w as a weight or a run-time input. Outputs are int32 and compared exactly."""

import numpy as np

from opcase import Case, const, randint, weight

CASES = []


def add(*args, **kw):
    CASES.append(Case(*args, **kw))


def u8(v):
    return const(v, "uint8")


def i8(v):
    return const(v, "int8")


def ru8(*shape):
    return randint(*shape, low=0, high=256, dtype="uint8")


def ri8(*shape):
    return randint(*shape, low=-128, high=128, dtype="int8")


def ci(name, inputs, **attrs):
    opts = {k: attrs.pop(k) for k in ("opset", "reference") if k in attrs}
    add(name, "ConvInteger", inputs, attrs=attrs, **opts)


# --- 2-D, one zero point each ------------------------------------------------------------------------------------
ci("ci_u8_u8_no_zero_points", [ru8(1, 3, 8, 8), weight(ru8(4, 3, 3, 3))])
ci("ci_u8_u8_zero_points_pad1", [ru8(1, 3, 8, 8), weight(ru8(4, 3, 3, 3)), u8(131), weight(u8(120))],
   pads=[1, 1, 1, 1])
ci("ci_u8_i8_zero_points", [ru8(1, 8, 10, 9), weight(ri8(6, 8, 3, 3)), u8(3), weight(i8(-2))], pads=[1, 1, 1, 1])
ci("ci_i8_i8", [ri8(1, 4, 7, 7), weight(ri8(5, 4, 3, 3)), i8(-1), weight(i8(4))], pads=[1, 0, 1, 2])
ci("ci_i8_u8", [ri8(2, 4, 7, 6), weight(ru8(3, 4, 2, 3)), i8(17), weight(u8(128))], pads=[0, 1, 1, 0])
ci("ci_only_x_zero_point", [ru8(1, 5, 9, 9), weight(ri8(4, 5, 3, 3)), u8(255)], pads=[2, 2, 2, 2])
ci("ci_only_w_zero_point", [ru8(1, 5, 9, 9), weight(ri8(4, 5, 3, 3)), None, weight(i8(9))], pads=[1, 1, 1, 1])
ci("ci_one_element_zero_points", [ru8(1, 3, 6, 6), weight(ru8(2, 3, 3, 3)), u8([7]), weight(u8([200]))],
   pads=[1, 1, 1, 1])
ci("ci_zero_points_runtime", [ru8(1, 3, 6, 7), weight(ri8(4, 3, 3, 3)), u8(90), i8(-30)], pads=[1, 1, 1, 1])
ci("ci_w_runtime", [ru8(1, 6, 8, 8), ri8(4, 6, 3, 3), u8(128), i8(1)], strides=[2, 2], pads=[1, 1, 1, 1])
ci("ci_opset10", [ru8(1, 2, 5, 5), weight(ru8(3, 2, 3, 3)), u8(3), weight(u8(1))], pads=[1, 1, 1, 1], opset=10)
ci("ci_kernel_shape_attr", [ru8(1, 4, 9, 7), weight(ri8(6, 4, 3, 2)), u8(100), weight(i8(0))],
   kernel_shape=[3, 2], pads=[1, 0, 1, 1])

# --- window: strides, dilations, pads ------------------------------------------------------------------------
ci("ci_stride2", [ru8(1, 8, 15, 16), weight(ri8(12, 8, 3, 3)), u8(128), weight(i8(0))], strides=[2, 2],
   pads=[1, 1, 1, 1])
ci("ci_stride_hw", [ru8(1, 3, 17, 13), weight(ri8(5, 3, 3, 5)), u8(64), weight(i8(3))], strides=[3, 2],
   pads=[0, 2, 1, 2])
ci("ci_dilation2", [ru8(1, 4, 16, 16), weight(ri8(8, 4, 3, 3)), u8(10), weight(i8(-5))], dilations=[2, 2],
   pads=[2, 2, 2, 2])
ci("ci_dilation_stride_pads", [ri8(1, 4, 16, 18), weight(ri8(8, 4, 3, 2)), i8(-128), weight(i8(127))],
   dilations=[3, 2], strides=[1, 2], pads=[1, 0, 2, 1])
ci("ci_pads_wider_than_kernel", [ru8(1, 2, 4, 5), weight(ru8(3, 2, 2, 2)), u8(50), weight(u8(60))],
   pads=[3, 2, 3, 4])
ci("ci_1x1", [ru8(1, 32, 10, 10), weight(ri8(24, 32, 1, 1)), u8(128), weight(i8(-1))])
ci("ci_kernel_covers_input", [ru8(1, 6, 5, 5), weight(ri8(9, 6, 5, 5)), u8(77), weight(i8(2))])
ci("ci_batch3", [ru8(3, 6, 9, 9), weight(ri8(10, 6, 3, 3)), u8(120), weight(i8(0))], pads=[1, 1, 1, 1])
ci("ci_big", [ru8(1, 64, 24, 24), weight(ri8(96, 64, 3, 3)), u8(128), weight(i8(1))], pads=[1, 1, 1, 1])

# --- groups ----------------------------------------------------------------------------------------------------
ci("ci_group2", [ru8(1, 8, 10, 10), weight(ri8(12, 4, 3, 3)), u8(128), weight(i8(0))], group=2, pads=[1, 1, 1, 1])
ci("ci_group4_stride2", [ru8(2, 16, 11, 11), weight(ru8(8, 4, 3, 3)), u8(3), weight(u8(250))], group=4,
   strides=[2, 2], pads=[1, 1, 1, 1])
ci("ci_depthwise", [ru8(1, 16, 12, 12), weight(ri8(16, 1, 3, 3)), u8(128), weight(i8(0))], group=16,
   pads=[1, 1, 1, 1])
ci("ci_depthwise_multiplier2_i8", [ri8(1, 6, 10, 10), weight(ri8(12, 1, 3, 3)), i8(5), weight(i8(-7))], group=6,
   pads=[1, 1, 1, 1])

# --- auto_pad --------------------------------------------------------------------------------------------------
ci("ci_same_upper", [ru8(1, 4, 10, 11), weight(ri8(6, 4, 3, 3)), u8(200), weight(i8(3))], auto_pad="SAME_UPPER")
ci("ci_same_upper_s2_even", [ru8(1, 4, 10, 11), weight(ri8(6, 4, 4, 4)), u8(30), weight(i8(-3))],
   auto_pad="SAME_UPPER", strides=[2, 2])
ci("ci_same_lower_s2_even", [ru8(1, 4, 10, 11), weight(ri8(6, 4, 4, 4)), u8(30), weight(i8(-3))],
   auto_pad="SAME_LOWER", strides=[2, 2])
ci("ci_valid", [ru8(1, 4, 10, 11), weight(ri8(6, 4, 3, 3)), u8(9), weight(i8(1))], auto_pad="VALID",
   strides=[2, 2])

# --- 1-D -------------------------------------------------------------------------------------------------------
ci("ci1d_u8_i8", [ru8(2, 4, 20), weight(ri8(6, 4, 3)), u8(128), weight(i8(1))], pads=[1, 1])
ci("ci1d_stride_dilation_group", [ri8(1, 6, 31), weight(ri8(9, 2, 4)), i8(-3), weight(i8(0))], strides=[3],
   dilations=[2], pads=[2, 1], group=3)
ci("ci1d_same_upper", [ru8(1, 3, 9), weight(ru8(2, 3, 4)), u8(1), weight(u8(254))], auto_pad="SAME_UPPER",
   strides=[2])


# --- per-output-channel w_zero_point ---------------------------------------------------------------------------
# ONNX Runtime takes only one w_zero_point, so these are checked against the op's definition written out: a float
# Conv of (x - x_zero_point) and (w - w_zero_point per output channel), whose padding (0) is what x's zero point
# contributes. Every product and partial sum is an integer below 2^24 here (K = C/group * kernel <= 256, |values|
# <= 255), so float32 holds them exactly and the int32 Cast gives the exact result.
def per_channel(out_channels, rank):
    """The reference for a w of `rank` dims with `out_channels` (M) output channels."""
    def build(helper, node):
        from onnx import TensorProto
        x, w, xz, wz = node.input
        y = node.output[0]
        # w_zero_point [M] as [M, 1, ..., 1] against w [M, C/group, k...].
        col = [out_channels] + [1] * (rank - 1)
        shape = helper.make_tensor("ref_shape", TensorProto.INT64, [rank], col)
        conv = helper.make_node("Conv", ["ref_x0", "ref_w0"], ["ref_yf"])
        conv.attribute.extend(node.attribute)
        return [
            helper.make_node("Cast", [x], ["ref_x"], to=TensorProto.FLOAT),
            helper.make_node("Cast", [w], ["ref_w"], to=TensorProto.FLOAT),
            helper.make_node("Cast", [xz], ["ref_xz"], to=TensorProto.FLOAT),
            helper.make_node("Cast", [wz], ["ref_wz"], to=TensorProto.FLOAT),
            helper.make_node("Sub", ["ref_x", "ref_xz"], ["ref_x0"]),
            helper.make_node("Constant", [], ["ref_wz_shape"], value=shape),
            helper.make_node("Reshape", ["ref_wz", "ref_wz_shape"], ["ref_wz_col"]),
            helper.make_node("Sub", ["ref_w", "ref_wz_col"], ["ref_w0"]),
            conv,
            helper.make_node("Cast", ["ref_yf"], [y], to=TensorProto.INT32),
        ]
    return build


ci("ci_per_channel_u8_i8", [ru8(1, 4, 8, 8), weight(ri8(6, 4, 3, 3)), u8(128), weight(i8([0, 1, -1, 127, -128, 5]))],
   pads=[1, 1, 1, 1], reference=per_channel(6, 4))
ci("ci_per_channel_u8_u8", [ru8(2, 3, 7, 9), weight(ru8(4, 3, 3, 3)), u8(7), weight(u8([0, 255, 128, 1]))],
   strides=[2, 1], pads=[1, 2, 0, 1], reference=per_channel(4, 4))
ci("ci_per_channel_i8_group", [ri8(1, 8, 9, 9), weight(ri8(12, 2, 3, 3)), i8(-20),
                               weight(i8([(-1) ** j * 10 * j for j in range(12)]))],
   group=4, dilations=[2, 1], pads=[2, 1, 1, 0], reference=per_channel(12, 4))
# (ONNX Runtime's float Conv refuses dilations with SAME_*, so this one has none.)
ci("ci_per_channel_same_upper", [ru8(1, 3, 10, 11), weight(ri8(4, 3, 4, 4)), u8(60), weight(i8([-9, 0, 9, 90]))],
   auto_pad="SAME_UPPER", strides=[2, 2], reference=per_channel(4, 4))
ci("ci_per_channel_depthwise", [ru8(1, 8, 10, 10), weight(ru8(8, 1, 3, 3)), u8(100),
                                weight(u8(np.arange(8) * 30))],
   group=8, pads=[1, 1, 1, 1], reference=per_channel(8, 4))
ci("ci1d_per_channel", [ru8(1, 4, 17), weight(ri8(5, 4, 3)), u8(128), weight(i8([3, -3, 0, 100, -100]))],
   pads=[1, 1], reference=per_channel(5, 3))

# --- edge shapes -----------------------------------------------------------------------------------------------
ci("ci_empty_batch", [ru8(0, 3, 6, 6), weight(ri8(4, 3, 3, 3)), u8(1), weight(i8(2))], pads=[1, 1, 1, 1])
ci("ci_wide_row_stride1", [ru8(1, 2, 3, 257), weight(ri8(3, 2, 3, 5)), u8(128), weight(i8(-1))], pads=[1, 2, 1, 2])

import numpy as np

from opcase import Case, rand, weight

CASES = []


def add(*args, **kw):
    CASES.append(Case(*args, **kw))


def bn_inputs(shape, dtype="float32"):
    c = shape[1]
    return [rand(*shape, dtype=dtype), weight(rand(c, dtype=dtype)), weight(rand(c, dtype=dtype)),
            weight(rand(c, dtype=dtype)), weight(rand(c, dtype=dtype, low=0.1, high=2.0))]


# BatchNormalization (inference), every rank, the opset 9 / 14 / 15 forms.
for shape in ((2, 3), (2, 3, 7), (2, 3, 5, 6), (1, 4, 2, 3, 5)):
    add(f"batchnorm_rank{len(shape)}", "BatchNormalization", bn_inputs(shape), opset=15)
add("batchnorm_eps", "BatchNormalization", bn_inputs((2, 8, 4, 4)), attrs=dict(epsilon=1e-2), opset=9)
add("batchnorm_opset14", "BatchNormalization", bn_inputs((2, 8, 4, 4)), attrs=dict(training_mode=0), opset=14)
add("batchnorm_large", "BatchNormalization", bn_inputs((1, 32, 40, 40)), opset=15)
add("batchnorm_training", "BatchNormalization", bn_inputs((3, 4, 5, 6)), attrs=dict(training_mode=1, momentum=0.8),
    opset=15, outputs=3)
add("batchnorm_f16", "BatchNormalization", bn_inputs((2, 3, 5, 6), "float16"), opset=15)

# InstanceNormalization.
for shape in ((2, 3, 7), (2, 3, 5, 6), (1, 2, 3, 4, 5), (1, 8, 64, 64)):
    c = shape[1]
    add(f"instancenorm_rank{len(shape)}_{shape[-1]}", "InstanceNormalization",
        [rand(*shape), weight(rand(c)), weight(rand(c))])
add("instancenorm_eps_offset", "InstanceNormalization", [rand(2, 3, 9, low=50, high=52), weight(rand(3)),
                                                         weight(rand(3))], attrs=dict(epsilon=1e-3))
add("instancenorm_f16", "InstanceNormalization",
    [rand(2, 3, 5, 6, dtype="float16"), weight(rand(3, dtype="float16")), weight(rand(3, dtype="float16"))])

# LayerNormalization: every axis (negative too), epsilon, no bias, Mean/InvStdDev outputs, f16.
X = (2, 3, 4, 5)
for axis in range(-4, 4):
    norm = X[axis:]
    add(f"layernorm_axis{axis}".replace("-", "m"), "LayerNormalization",
        [rand(*X), weight(rand(*norm)), weight(rand(*norm))], attrs=dict(axis=axis))
add("layernorm_default_axis", "LayerNormalization", [rand(2, 7, 64), weight(rand(64)), weight(rand(64))])
add("layernorm_eps", "LayerNormalization", [rand(2, 7, 64), weight(rand(64)), weight(rand(64))],
    attrs=dict(epsilon=0.1))
add("layernorm_no_bias", "LayerNormalization", [rand(3, 10), weight(rand(10))])
add("layernorm_offset", "LayerNormalization", [rand(3, 300, low=100, high=101), weight(rand(300)),
                                               weight(rand(300))])
add("layernorm_scale_bcast", "LayerNormalization", [rand(2, 3, 4), weight(rand(1, 4)), weight(rand(4))],
    attrs=dict(axis=-2))
add("layernorm_stats", "LayerNormalization", [rand(2, 3, 8), weight(rand(8)), weight(rand(8))], outputs=3)
add("layernorm_stats_axis1", "LayerNormalization", [rand(2, 3, 8), weight(rand(3, 8)), weight(rand(3, 8))],
    attrs=dict(axis=1), outputs=3)
add("layernorm_large", "LayerNormalization", [rand(4, 77, 768), weight(rand(768)), weight(rand(768))])
add("layernorm_f16", "LayerNormalization",
    [rand(2, 7, 64, dtype="float16"), weight(rand(64, dtype="float16")), weight(rand(64, dtype="float16"))])

# GroupNormalization: opset 18 (scale/bias per group) and opset 21 (per channel).
for groups, shape in ((2, (2, 4, 5, 5)), (1, (1, 6, 3, 3)), (3, (2, 6, 7)), (32, (1, 64, 8, 8))):
    add(f"groupnorm18_g{groups}_rank{len(shape)}", "GroupNormalization",
        [rand(*shape), weight(rand(groups)), weight(rand(groups))], attrs=dict(num_groups=groups), opset=18,
        out_shapes=[shape])
    add(f"groupnorm21_g{groups}_rank{len(shape)}", "GroupNormalization",
        [rand(*shape), weight(rand(shape[1])), weight(rand(shape[1]))], attrs=dict(num_groups=groups), opset=21,
        out_shapes=[shape])
add("groupnorm18_eps", "GroupNormalization", [rand(2, 4, 6, low=3, high=4), weight(rand(2)), weight(rand(2))],
    attrs=dict(num_groups=2, epsilon=1e-2), opset=18, out_shapes=[(2, 4, 6)])

# Softmax / LogSoftmax at every axis, opset 13 (one axis) and opset 11 (coerced to 2-D at the axis; model.txt
# has no opset, so it says so with an `opset` attribute).
S = (2, 3, 4, 5)
for op in ("Softmax", "LogSoftmax"):
    low = op.lower()
    for axis in range(-4, 4):
        tag = str(axis).replace("-", "m")
        add(f"{low}13_axis{tag}", op, [rand(*S, low=-5, high=5)], attrs=dict(axis=axis), opset=13)
        add(f"{low}11_axis{tag}", op, [rand(*S, low=-5, high=5)], attrs=dict(axis=axis), opset=11,
            txt_attrs=dict(opset=11))
    add(f"{low}13_default", op, [rand(*S, low=-5, high=5)], opset=13)
    add(f"{low}11_default", op, [rand(*S, low=-5, high=5)], opset=11, txt_attrs=dict(opset=11))
    add(f"{low}_rank1", op, [rand(9)])
    add(f"{low}_long_rows", op, [rand(3, 1001, low=-20, high=20)])
    add(f"{low}_wide_inner", op, [rand(2, 7, 300, low=-20, high=20)], attrs=dict(axis=1))
    add(f"{low}_large_values", op, [rand(4, 33, low=-300, high=300)])
    add(f"{low}_f16", op, [rand(2, 3, 17, dtype="float16", low=-4, high=4)], atol=2e-3)
    add(f"{low}_f16_axis0", op, [rand(5, 6, dtype="float16", low=-4, high=4)], attrs=dict(axis=0), atol=2e-3)
add("softmax_attention", "Softmax", [rand(2, 8, 77, 77, low=-10, high=10)], attrs=dict(axis=-1))
add("softmax_weight_input", "Softmax", [weight(rand(3, 10))])

# LpNormalization.
for p in (1, 2):
    for axis in (-1, 0, 1):
        add(f"lpnorm_p{p}_axis{axis}".replace("-", "m"), "LpNormalization", [rand(3, 4, 5)],
            attrs=dict(p=p, axis=axis))
add("lpnorm_default", "LpNormalization", [rand(6, 300)])

# Hardmax (same axis rules as Softmax); small integer values make ties, which go to the first maximum.
for axis in (-1, 0, 1, 2):
    add(f"hardmax13_axis{axis}".replace("-", "m"), "Hardmax", [rand(2, 3, 4)], attrs=dict(axis=axis), opset=13)
    add(f"hardmax11_axis{axis}".replace("-", "m"), "Hardmax", [rand(2, 3, 4)], attrs=dict(axis=axis), opset=11,
        txt_attrs=dict(opset=11))
add("hardmax_ties", "Hardmax", [((np.arange(60) * 7) % 3).astype(np.float32).reshape(3, 4, 5)], opset=13)
add("hardmax_f16", "Hardmax", [rand(3, 9, dtype="float16")], opset=13)

# LRN (opsets 1 and 13; ONNX Runtime takes 4-D inputs and odd sizes only): default and custom alpha/beta/bias, a
# size wider than the channels, size 1, float16.
add("lrn_default", "LRN", [rand(2, 5, 4, 4)], attrs=dict(size=3), opset=13)
add("lrn_custom", "LRN", [rand(1, 7, 3, 5, low=-3.0, high=3.0)], attrs=dict(size=5, alpha=0.02, beta=0.6, bias=2.0),
    opset=13)
add("lrn_size_past_channels", "LRN", [rand(2, 3, 2, 2, low=-2.0, high=2.0)], attrs=dict(size=7, alpha=0.5),
    opset=13)
add("lrn_size1", "LRN", [rand(1, 4, 3, 3)], attrs=dict(size=1, alpha=0.3, beta=1.0), opset=1)
add("lrn_f16", "LRN", [rand(1, 6, 4, 4, dtype="float16", low=-2.0, high=2.0)], attrs=dict(size=3, alpha=0.1),
    opset=13)
add("lrn_big", "LRN", [rand(1, 32, 28, 28)], attrs=dict(size=5, alpha=1e-3), opset=13)

# MeanVarianceNormalization (opsets 9 and 13): default axes (0, 2, 3), custom and negative axes, all axes, a
# large mean (variance from deviations, not E[x^2] - E[x]^2), float16. No constant slice: ONNX's definition
# (epsilon 1e-9 under the square root) gives 0 there, as the engine does, but ONNX Runtime's kernel gives NaN.
add("mvn_default", "MeanVarianceNormalization", [rand(3, 4, 2, 5)], opset=13)
add("mvn_opset9", "MeanVarianceNormalization", [rand(2, 3, 3, 3, low=-4.0, high=2.0)], opset=9)
add("mvn_axes_hw", "MeanVarianceNormalization", [rand(2, 3, 4, 5)], attrs=dict(axes=[2, 3]), opset=13)
add("mvn_axes_neg", "MeanVarianceNormalization", [rand(4, 6, 3)], attrs=dict(axes=[-1]), opset=13)
add("mvn_axes_all", "MeanVarianceNormalization", [rand(2, 3, 4)], attrs=dict(axes=[0, 1, 2]), opset=13)
add("mvn_axes_middle", "MeanVarianceNormalization", [rand(2, 5, 3, 2)], attrs=dict(axes=[1, 3]), opset=13)
add("mvn_large_mean", "MeanVarianceNormalization", [rand(2, 3, 4, 4, low=1000.0, high=1001.0)], opset=13,
    atol=1e-3, rtol=1e-3)


def through_f32(helper, node):
    """ONNX Runtime cannot build MeanVarianceNormalization's function body for float16 (its constants are
    float); the engine computes in float32 and rounds, so the reference is the op in float32 between Casts."""
    from onnx import TensorProto
    op = helper.make_node(node.op_type, ["x_f32"], ["y_f32"])
    op.attribute.extend(node.attribute)
    return [helper.make_node("Cast", [node.input[0]], ["x_f32"], to=TensorProto.FLOAT), op,
            helper.make_node("Cast", ["y_f32"], [node.output[0]], to=TensorProto.FLOAT16)]


add("mvn_f16", "MeanVarianceNormalization", [rand(2, 3, 4, 4, dtype="float16")], opset=13, reference=through_f32)

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

"""Activation functions: default and custom attributes, float16, NaN/inf, big tensors (the parallel paths
YOLOv8 relies on), Clip in both the attribute (opset 6) and the optional-input (opset 11+) forms, PRelu
broadcasting."""

import numpy as np

from opcase import Case, const, rand, randint, weight

CASES = []


def add(*args, **kw):
    CASES.append(Case(*args, **kw))


EDGES = np.array([0.0, -0.0, 1e-6, -1e-6, 3.0, -3.0, 6.0, -6.0, 20.0, -20.0, 90.0, -90.0, np.inf, -np.inf,
                  np.nan], "float32")

# (op, attrs, opset, input range)
SIMPLE = [
    ("Sigmoid", {}, 13, 8.0),
    ("Relu", {}, 14, 4.0),
    ("LeakyRelu", {}, 16, 4.0),
    ("Elu", {}, 6, 4.0),
    ("Selu", {}, 6, 4.0),
    ("Celu", {}, 12, 4.0),
    ("HardSigmoid", {}, 6, 5.0),
    ("HardSwish", {}, 14, 5.0),
    ("Softplus", {}, 1, 10.0),
    ("Softsign", {}, 1, 10.0),
    ("ThresholdedRelu", {}, 10, 3.0),
    ("Mish", {}, 18, 6.0),
    ("Swish", {}, 24, 8.0),
]


def same_shape(shape, opset):
    # onnx 1.12's shape inference stops at opset 17; newer cases declare their (element-wise) output shape.
    return [shape] if opset > 17 else None


# float16 at the op's newest version: ONNX Runtime mishandles float16 Softplus/Softsign at opset 1.
F16_OPSET = {"Softplus": 22, "Softsign": 22}
for op, attrs, opset, r in SIMPLE:
    n = op.lower()
    shapes = {"f32": (3, 4, 5), "big": (1, 16, 64, 64), "edges": EDGES.shape, "scalar": (), "empty": (0, 3)}
    kw = lambda k, o=opset: dict(attrs=attrs, opset=o, out_shapes=same_shape(shapes.get(k, (3, 4, 5)), o))
    add(f"{n}_f32", op, [rand(3, 4, 5, low=-r, high=r)], **kw("f32"))
    if op != "Celu":  # float only in ONNX
        f16_opset = F16_OPSET.get(op, opset)
        add(f"{n}_f16", op, [rand(3, 4, 5, low=-r, high=r, dtype="float16")], **kw("f16", f16_opset))
    add(f"{n}_big", op, [rand(1, 16, 64, 64, low=-r, high=r)], **kw("big"))
    add(f"{n}_edges", op, [const(EDGES, "float32")], **kw("edges"))
    add(f"{n}_scalar", op, [const(np.float32(-0.7), "float32")], **kw("scalar"))
    add(f"{n}_empty", op, [rand(0, 3)], **kw("empty"))

# Custom attributes.
add("leakyrelu_alpha", "LeakyRelu", [rand(4, 5, low=-4.0, high=4.0)], attrs=dict(alpha=0.2))
add("leakyrelu_alpha_neg", "LeakyRelu", [rand(4, 5, low=-4.0, high=4.0)], attrs=dict(alpha=-0.5))
add("leakyrelu_alpha_f16", "LeakyRelu", [rand(4, 5, low=-4.0, high=4.0, dtype="float16")],
    attrs=dict(alpha=0.3))
add("leakyrelu_opset6", "LeakyRelu", [rand(4, 5, low=-4.0, high=4.0)], attrs=dict(alpha=0.1), opset=6)
add("elu_alpha", "Elu", [rand(4, 5, low=-4.0, high=4.0)], attrs=dict(alpha=0.5))
add("elu_alpha_zero", "Elu", [rand(4, 5, low=-4.0, high=4.0)], attrs=dict(alpha=0.0))
add("elu_alpha_neg", "Elu", [rand(4, 5, low=-4.0, high=4.0)], attrs=dict(alpha=-1.5))
add("selu_custom", "Selu", [rand(4, 5, low=-4.0, high=4.0)], attrs=dict(alpha=2.0, gamma=0.5))
add("celu_alpha", "Celu", [rand(4, 5, low=-4.0, high=4.0)], attrs=dict(alpha=2.5), opset=12)
add("hardsigmoid_custom", "HardSigmoid", [rand(4, 5, low=-5.0, high=5.0)], attrs=dict(alpha=0.25, beta=0.4))
add("hardsigmoid_f16_custom", "HardSigmoid", [rand(4, 5, low=-5.0, high=5.0, dtype="float16")],
    attrs=dict(alpha=0.1, beta=0.6))
add("thresholdedrelu_alpha", "ThresholdedRelu", [rand(4, 5, low=-3.0, high=3.0)], attrs=dict(alpha=0.5))
add("thresholdedrelu_alpha_neg", "ThresholdedRelu", [rand(4, 5, low=-3.0, high=3.0)], attrs=dict(alpha=-1.0))
add("sigmoid_opset6", "Sigmoid", [rand(3, 4, low=-5.0, high=5.0)], opset=6)
add("sigmoid_d7", "Sigmoid", [rand(2, 1, 3, 1, 2, 2, 3, low=-5.0, high=5.0)])
add("sigmoid_yolo", "Sigmoid", [rand(1, 16, 160, 160, low=-6.0, high=6.0)])
add("sigmoid_odd", "Sigmoid", [rand(1, 3, 17, 19, low=-6.0, high=6.0)])
add("relu_opset6", "Relu", [rand(3, 4)], opset=6)
add("relu_i32", "Relu", [randint(3, 4, low=-1000, high=1000, dtype="int32")], opset=14)
add("relu_i8", "Relu", [randint(3, 4, low=-100, high=100, dtype="int8")], opset=14)

# Swish (opset 24) with other alphas (the importer's SiLU fusion writes alpha 1).
add("swish_alpha", "Swish", [rand(4, 5, low=-6.0, high=6.0)], attrs=dict(alpha=0.5), opset=24, out_shapes=[(4, 5)])
add("swish_alpha_neg", "Swish", [rand(4, 5, low=-6.0, high=6.0)], attrs=dict(alpha=-1.5), opset=24,
    out_shapes=[(4, 5)])
add("swish_alpha_edges", "Swish", [const(EDGES, "float32")], attrs=dict(alpha=2.0), opset=24,
    out_shapes=[EDGES.shape])

# Gelu (opset 20): exact erf form and the tanh approximation.
G = dict(opset=20, out_shapes=[(3, 4, 5)])
add("gelu_f32", "Gelu", [rand(3, 4, 5, low=-5.0, high=5.0)], **G)
add("gelu_none", "Gelu", [rand(3, 4, 5, low=-5.0, high=5.0)], attrs=dict(approximate="none"), **G)
add("gelu_tanh", "Gelu", [rand(3, 4, 5, low=-5.0, high=5.0)], attrs=dict(approximate="tanh"), **G)
add("gelu_f16", "Gelu", [rand(3, 4, 5, low=-5.0, high=5.0, dtype="float16")], **G)
add("gelu_tanh_f16", "Gelu", [rand(3, 4, 5, low=-5.0, high=5.0, dtype="float16")],
    attrs=dict(approximate="tanh"), **G)
add("gelu_big", "Gelu", [rand(1, 8, 64, 64, low=-5.0, high=5.0)], opset=20, out_shapes=[(1, 8, 64, 64)])
add("gelu_edges", "Gelu", [const(EDGES, "float32")], opset=20, out_shapes=[EDGES.shape])

# --- Clip ---------------------------------------------------------------------------------------------------
X = dict(low=-3.0, high=3.0)
# Opset 6: bounds are attributes, each optional.
add("clip6_both", "Clip", [rand(4, 5, **X)], attrs=dict(min=-1.0, max=1.5), opset=6)
add("clip6_min", "Clip", [rand(4, 5, **X)], attrs=dict(min=-0.5), opset=6)
add("clip6_max", "Clip", [rand(4, 5, **X)], attrs=dict(max=0.5), opset=6)
add("clip6_none", "Clip", [rand(4, 5, **X)], opset=6)
add("clip6_relu6", "Clip", [rand(1, 16, 32, 32, low=-8.0, high=8.0)], attrs=dict(min=0.0, max=6.0), opset=6)
add("clip6_f16", "Clip", [rand(4, 5, dtype="float16", **X)], attrs=dict(min=-1.0, max=1.0), opset=6)
# Opset 11+: bounds are optional scalar inputs, pushed or weights, either may be omitted.
add("clip11_both", "Clip", [rand(4, 5, **X), const(-1.0, "float32"), const(1.5, "float32")], opset=11)
add("clip11_both_weights", "Clip", [rand(4, 5, **X), weight(const(-1.0, "float32")),
                                    weight(const(1.5, "float32"))], opset=11)
add("clip11_min_only", "Clip", [rand(4, 5, **X), const(-0.5, "float32")], opset=11)
add("clip11_min_omitted_max", "Clip", [rand(4, 5, **X), const(-0.5, "float32"), None], opset=11)
add("clip11_max_only", "Clip", [rand(4, 5, **X), None, weight(const(0.5, "float32"))], opset=11)
add("clip11_none", "Clip", [rand(4, 5, **X)], opset=11)
add("clip11_both_omitted", "Clip", [rand(4, 5, **X), None, None], opset=11)
add("clip11_equal", "Clip", [rand(4, 5, **X), const(0.25, "float32"), const(0.25, "float32")], opset=11)
add("clip11_min_gt_max", "Clip", [rand(4, 5, **X), const(1.0, "float32"), const(-1.0, "float32")], opset=11)
add("clip11_f16", "Clip", [rand(4, 5, dtype="float16", **X), const(-1.0, "float16"), const(0.5, "float16")],
    opset=11)
add("clip11_big", "Clip", [rand(1, 16, 64, 64, low=-8.0, high=8.0), weight(const(0.0, "float32")),
                           weight(const(6.0, "float32"))], opset=11)
add("clip13_both", "Clip", [rand(2, 3, 4, **X), const(-2.0, "float32"), const(2.0, "float32")], opset=13)
add("clip13_i64", "Clip", [randint(4, 5, low=-2 ** 62, high=2 ** 62), const(-2 ** 60, "int64"),
                           const(2 ** 61 + 3, "int64")], opset=13)
add("clip13_i64_max_only", "Clip", [randint(4, 5, low=-100, high=100), None, const(7, "int64")], opset=13)
add("clip13_i32", "Clip", [randint(4, 5, low=-100, high=100, dtype="int32"), const(-10, "int32"),
                           const(20, "int32")], opset=13)
add("clip13_u8", "Clip", [randint(4, 5, low=0, high=255, dtype="uint8"), const(10, "uint8"),
                          const(200, "uint8")], opset=13)
add("clip13_i8", "Clip", [randint(4, 5, low=-100, high=100, dtype="int8"), const(-10, "int8")], opset=13)
add("clip13_edges", "Clip", [const(np.array([np.inf, -np.inf, 0.0, -0.0, 5.0, np.nan], "float32"),
                                   "float32"), const(-1.0, "float32"), const(1.0, "float32")], opset=13)

# --- PRelu: slope broadcasts to X ---------------------------------------------------------------------------
PRELU = { "channel": ((2, 3, 4, 5), (3, 1, 1)), "scalar": ((2, 3, 4), (1,)), "rank0": ((2, 3, 4), ()),
         "same": ((3, 4), (3, 4)), "last": ((2, 3, 4), (4,)), "middle": ((2, 3, 4, 5), (1, 3, 1, 5)),
         "d7": ((2, 1, 3, 1, 2, 2, 3), (1, 3, 1, 2, 1, 3)), }
for name, (xs, ss) in PRELU.items():
    add(f"prelu_{name}", "PRelu", [rand(*xs, low=-3.0, high=3.0), weight(rand(*ss, low=-1.0, high=1.0))],
        opset=16)
add("prelu_pushed_slope", "PRelu", [rand(2, 3, 4, low=-3.0, high=3.0), rand(4, low=0.0, high=1.0)])
add("prelu_f16", "PRelu", [rand(2, 3, 4, 5, low=-3.0, high=3.0, dtype="float16"),
                           weight(rand(3, 1, 1, low=0.0, high=1.0, dtype="float16"))])
add("prelu_big", "PRelu", [rand(1, 16, 64, 64, low=-3.0, high=3.0),
                           weight(rand(16, 1, 1, low=0.0, high=0.5))])
add("prelu_opset9", "PRelu", [rand(2, 3, 4, 5, low=-3.0, high=3.0), weight(rand(3, 1, 1))], opset=9)
add("clip6_edges", "Clip", [const(np.array([np.inf, -np.inf, 0.0, 5.0, np.nan], "float32"), "float32")],
    attrs=dict(min=-1.0, max=1.0), opset=6)

# Shrink (opset 9): hard (bias 0) and soft shrink, the default lambd 0.5, a negative bias, edges, integers
# (computed in float, truncated toward zero), float16.
add("shrink_default", "Shrink", [rand(4, 5, low=-2.0, high=2.0)], opset=9)
add("shrink_hard", "Shrink", [rand(3, 4, 5, low=-3.0, high=3.0)], attrs=dict(lambd=1.5), opset=9)
add("shrink_soft", "Shrink", [rand(3, 4, 5, low=-3.0, high=3.0)], attrs=dict(lambd=1.5, bias=1.5), opset=9)
add("shrink_bias_neg", "Shrink", [rand(4, 5, low=-3.0, high=3.0)], attrs=dict(lambd=0.25, bias=-0.75), opset=9)
add("shrink_edges", "Shrink", [const(EDGES, "float32")], attrs=dict(lambd=3.0, bias=1.0), opset=9)
add("shrink_f16", "Shrink", [rand(4, 5, low=-3.0, high=3.0, dtype="float16")], attrs=dict(lambd=1.0, bias=0.5),
    opset=9)
add("shrink_big", "Shrink", [rand(1, 16, 64, 64, low=-2.0, high=2.0)], attrs=dict(lambd=0.7, bias=0.2), opset=9)
add("shrink_empty", "Shrink", [rand(0, 3)], opset=9)
add("shrink_i32", "Shrink", [randint(4, 6, low=-10, high=10, dtype="int32")], attrs=dict(lambd=2.0, bias=1.5),
    opset=9)
add("shrink_i64", "Shrink", [randint(4, 6, low=-10, high=10, dtype="int64")], attrs=dict(lambd=3.0, bias=2.0),
    opset=9)
add("shrink_i8", "Shrink", [randint(4, 6, low=-100, high=100, dtype="int8")], attrs=dict(lambd=10.0, bias=5.0),
    opset=9)

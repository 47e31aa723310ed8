"""Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on (N, C) and (N, C, d1, ..., dk) inputs, every
reduction, with and without class weights, with ignore_index (targets equal to it, a negative one, one outside
0..C-1), int32 and int64 targets, SoftmaxCrossEntropyLoss's log_prob output, float16."""

import numpy as np

from opcase import Case, const, rand, randint, weight

CASES = []
REDUCTIONS = ("none", "sum", "mean")


def add(*args, **kw):
    CASES.append(Case(*args, **kw))


def targets(shape, classes, ignore=None, dtype="int64", seed=0):
    """Class indices in [0, classes), with every third element set to `ignore` when given (so some targets are
    always ignored, whatever the seed)."""
    rng = np.random.default_rng(seed)
    t = rng.integers(0, classes, size=shape)
    if ignore is not None:
        t.reshape(-1)[::3] = ignore
    return const(t, dtype)


def f16_through_f32(helper, node):
    """ONNX Runtime's float16 forms of these ops compute in float16; the engine computes in float32 and rounds
    the results. The reference does the same: the op in float32 between Casts."""
    from onnx import TensorProto
    ins = list(node.input)
    nodes, new_in = [], []
    for i, name in enumerate(ins):
        if i == 1 or not name:  # the targets, an omitted input
            new_in.append(name)
            continue
        nodes.append(helper.make_node("Cast", [name], [name + "_f32"], to=TensorProto.FLOAT))
        new_in.append(name + "_f32")
    outs = [o + "_f32" for o in node.output]
    op = helper.make_node(node.op_type, new_in, outs)
    op.attribute.extend(node.attribute)
    nodes.append(op)
    nodes += [helper.make_node("Cast", [o + "_f32"], [o], to=TensorProto.FLOAT16) for o in node.output]
    return nodes


for op, tag in (("NegativeLogLikelihoodLoss", "nll"), ("SoftmaxCrossEntropyLoss", "sce")):
    # NegativeLogLikelihoodLoss reads log-probabilities, which are at most 0.
    low, high = (-5.0, 0.0) if tag == "nll" else (-3.0, 3.0)
    opset = 13

    for red in REDUCTIONS:
        add(f"{tag}_nc_{red}", op, [rand(6, 5, low=low, high=high), targets((6,), 5, seed=1)],
            attrs=dict(reduction=red), opset=opset)
        add(f"{tag}_nc_weight_{red}", op,
            [rand(6, 5, low=low, high=high), targets((6,), 5, seed=2), rand(5, low=0.1, high=2.0)],
            attrs=dict(reduction=red), opset=opset)
        add(f"{tag}_4d_{red}", op, [rand(2, 4, 3, 5, low=low, high=high), targets((2, 3, 5), 4, seed=3)],
            attrs=dict(reduction=red), opset=opset)
        add(f"{tag}_4d_weight_{red}", op,
            [rand(2, 4, 3, 5, low=low, high=high), targets((2, 3, 5), 4, seed=4),
             weight(rand(4, low=0.1, high=2.0))],
            attrs=dict(reduction=red), opset=opset)
        add(f"{tag}_4d_ii_{red}", op,
            [rand(2, 4, 3, 5, low=low, high=high), targets((2, 3, 5), 4, ignore=2, seed=5)],
            attrs=dict(reduction=red, ignore_index=2), opset=opset)
        add(f"{tag}_4d_weight_negative_ii_{red}", op,
            [rand(2, 4, 3, 5, low=low, high=high), targets((2, 3, 5), 4, ignore=-1, seed=6),
             rand(4, low=0.1, high=2.0)],
            attrs=dict(reduction=red, ignore_index=-1), opset=opset)

    add(f"{tag}_3d_mean", op, [rand(3, 6, 7, low=low, high=high), targets((3, 7), 6, seed=7)], opset=opset)
    add(f"{tag}_6d_sum", op, [rand(2, 3, 2, 2, 3, 2, low=low, high=high), targets((2, 2, 2, 3, 2), 3, seed=8)],
        attrs=dict(reduction="sum"), opset=opset)
    # ignore_index outside 0..C-1 (above it), with weights: the ignored targets must not read a weight.
    add(f"{tag}_weight_high_ii_mean", op,
        [rand(4, 3, 5, low=low, high=high), targets((4, 5), 3, ignore=10, seed=9), rand(3, low=0.1, high=2.0)],
        attrs=dict(reduction="mean", ignore_index=10), opset=opset)
    # ignore_index that no target equals.
    add(f"{tag}_unused_ii_mean", op, [rand(5, 4, low=low, high=high), targets((5,), 3, seed=10)],
        attrs=dict(ignore_index=3), opset=opset)
    for red in ("sum", "none"):
        add(f"{tag}_int32_{red}", op,
            [rand(3, 4, 6, low=low, high=high), targets((3, 6), 4, ignore=0, dtype="int32", seed=11)],
            attrs=dict(reduction=red, ignore_index=0), opset=opset)
    add(f"{tag}_int32_weight_mean", op,
        [rand(7, 5, low=low, high=high), targets((7,), 5, dtype="int32", seed=12), rand(5, low=0.1, high=2.0)],
        opset=opset)
    # Every target ignored: the sum is 0 and the mean divides 0 by 0, NaN in ONNX Runtime too.
    for red in ("sum", "mean"):
        add(f"{tag}_all_ignored_{red}", op, [rand(3, 4, low=low, high=high), const([1, 1, 1], "int64")],
            attrs=dict(reduction=red, ignore_index=1), opset=opset)
    add(f"{tag}_big", op, [rand(8, 10, 32, 32, low=low, high=high), randint(8, 32, 32, low=0, high=10)],
        attrs=dict(reduction="mean"), opset=opset)
    add(f"{tag}_f16_mean", op,
        [rand(4, 5, 6, low=low, high=high, dtype="float16"), targets((4, 6), 5, ignore=-100, seed=13),
         rand(5, low=0.1, high=2.0, dtype="float16")],
        attrs=dict(ignore_index=-100), opset=opset, reference=f16_through_f32)
    add(f"{tag}_f16_none", op,
        [rand(4, 5, 6, low=low, high=high, dtype="float16"), targets((4, 6), 5, seed=14)],
        attrs=dict(reduction="none"), opset=opset, reference=f16_through_f32)

# The opset-12 form (the same attributes) and opset 22 NegativeLogLikelihoodLoss (new types only).
add("nll_opset12", "NegativeLogLikelihoodLoss", [rand(4, 3, low=-5.0, high=0.0), targets((4,), 3, seed=15)],
    attrs=dict(reduction="sum"), opset=12)
add("nll_opset22", "NegativeLogLikelihoodLoss",
    [rand(4, 3, 2, low=-5.0, high=0.0), targets((4, 2), 3, ignore=1, seed=21), rand(3, low=0.1, high=2.0)],
    attrs=dict(ignore_index=1), opset=22, out_shapes=[()])
add("sce_opset12", "SoftmaxCrossEntropyLoss", [rand(4, 3), targets((4,), 3, seed=16)], opset=12)

# SoftmaxCrossEntropyLoss's log_prob output.
for red in REDUCTIONS:
    add(f"sce_log_prob_{red}", "SoftmaxCrossEntropyLoss",
        [rand(3, 5, 2, 4), targets((3, 2, 4), 5, ignore=-7, seed=17), rand(5, low=0.1, high=2.0)],
        attrs=dict(reduction=red, ignore_index=-7), outputs=2, opset=13)
add("sce_log_prob_nc", "SoftmaxCrossEntropyLoss", [rand(5, 6), targets((5,), 6, seed=18)], outputs=2, opset=13)
add("sce_log_prob_f16", "SoftmaxCrossEntropyLoss",
    [rand(3, 4, 5, dtype="float16"), targets((3, 5), 4, seed=19)], outputs=2, opset=13, reference=f16_through_f32)
# Scores far apart (a softmax without the max subtracted would overflow exp).
add("sce_large_scores", "SoftmaxCrossEntropyLoss",
    [rand(4, 6, 3, low=-200.0, high=200.0), targets((4, 3), 6, seed=20)], outputs=2, opset=13,
    attrs=dict(reduction="none"))

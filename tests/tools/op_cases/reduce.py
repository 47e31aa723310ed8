import itertools

import numpy as np

from opcase import Case, const, rand, randint, weight

CASES = []


def add(*args, **kw):
    CASES.append(Case(*args, **kw))


def out_shape(shape, axes, keepdims, noop=False):
    # onnx 1.12 cannot infer opset-18 reductions; the shape is easy to state.
    if not axes:
        if noop:
            return tuple(shape)
        axes = range(len(shape))
    axes = {a % len(shape) for a in axes}
    return tuple(1 if i in axes else d for i, d in enumerate(shape) if keepdims or i not in axes)


def reduce_case(name, op, x_data, shape, axes, keepdims=1, form="attr", noop=None, axes_kind="weight", **kw):
    """form: "attr" (axes attribute; opset 17, or 11 for ReduceSum) or "input" (axes input; opset 18, or 13 for
    ReduceSum)."""
    attrs = dict(keepdims=keepdims)
    if noop is not None:
        attrs["noop_with_empty_axes"] = noop
    inputs = [x_data]
    if form == "attr":
        opset = 11 if op == "ReduceSum" else 17
        if axes is not None:
            attrs["axes"] = list(axes)
    else:
        opset = 13 if op == "ReduceSum" else 18
        if axes is not None:
            a = const(list(axes), "int64")
            inputs.append(weight(a) if axes_kind == "weight" else a)
    add(name, op, inputs, attrs=attrs, opset=opset,
        out_shapes=[out_shape(shape, axes, keepdims, noop=bool(noop))], **kw)


X = (2, 3, 4, 5)

# Every axis subset, keepdims on and off, both forms, for ReduceSum and ReduceMean.
for op in ("ReduceSum", "ReduceMean"):
    for n in range(0, 5):
        for axes in itertools.combinations(range(4), n):
            for keepdims in (0, 1):
                for form in ("attr", "input"):
                    tag = "".join(map(str, axes)) if axes else "all"
                    reduce_case(f"{op[6:].lower()}_{form}_{tag}_k{keepdims}", op, rand(*X), X,
                                axes if axes else None, keepdims, form)

# Every op on a few axis sets (negative axes included), both forms.
OPS = ["ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum",
       "ReduceLogSumExp"]
for op in OPS:
    positive = op in ("ReduceLogSum",)
    for axes in ((1,), (-1,), (0, 2), (-3, -1), (1, 2, 3), None):
        for form in ("attr", "input"):
            tag = "all" if axes is None else "_".join(str(a).replace("-", "m") for a in axes)
            data = rand(*X, low=0.1, high=2.0) if positive else rand(*X, low=-2.0, high=2.0)
            reduce_case(f"{op[6:].lower()}_{form}_{tag}", op, data, X, axes, 1, form)
    reduce_case(f"{op[6:].lower()}_nokeep", op, rand(*X, low=0.1, high=2.0), X, (0, 3), 0)

# noop_with_empty_axes: no axes means identity (each op maps its elements, e.g. SumSquare squares).
for op in ["ReduceSum", "ReduceMean"] + OPS:
    reduce_case(f"{op[6:].lower()}_noop", op, rand(3, 4, low=0.1, high=2.0), (3, 4), None, 1, "input", noop=1)
reduce_case("sum_empty_axes_input", "ReduceSum", rand(3, 4), (3, 4), [], 1, "input", noop=0)
reduce_case("max_empty_axes_input_noop", "ReduceMax", rand(3, 4), (3, 4), [], 1, "input", noop=1)
reduce_case("sum_noop0_no_axes", "ReduceSum", rand(3, 4), (3, 4), None, 0, "input", noop=0)
# An axes input computed at run time (shape from model.txt's declaration).
reduce_case("mean_axes_runtime", "ReduceMean", rand(*X), X, (1, 3), 1, "input", axes_kind="input")
reduce_case("sum_axes_runtime", "ReduceSum", rand(*X), X, (-1,), 0, "input", axes_kind="input")

# Size-1 and large reductions, rank 1, f16, integers.
reduce_case("mean_size1_axis", "ReduceMean", rand(3, 1, 4), (3, 1, 4), (1,), 0)
reduce_case("sumsquare_size1_axis", "ReduceSumSquare", rand(3, 1, 4), (3, 1, 4), (1,), 1)
reduce_case("sum_rank1", "ReduceSum", rand(17), (17,), None, 0)
reduce_case("mean_global_pool", "ReduceMean", rand(1, 64, 32, 32), (1, 64, 32, 32), (2, 3), 1)
# ONNX Runtime sums in float: over 300000 values its result is ~8e-4 off the exact sum (we accumulate in double).
reduce_case("sum_full_large", "ReduceSum", rand(300000), (300000,), None, 0, atol=1e-3)
reduce_case("max_full_large", "ReduceMax", rand(200000), (200000,), None, 0)
reduce_case("logsumexp_full_large", "ReduceLogSumExp", rand(100000, low=-50, high=50), (100000,), None, 0)
reduce_case("mean_rows_large", "ReduceMean", rand(2, 70000), (2, 70000), (1,), 1)
reduce_case("mean_axis0_wide", "ReduceMean", rand(50, 1000), (50, 1000), (0,), 0)
reduce_case("logsumexp_extreme", "ReduceLogSumExp", rand(4, 33, low=-300, high=300), (4, 33), (1,), 1)
reduce_case("logsumexp_axis0_extreme", "ReduceLogSumExp", rand(33, 4, low=-300, high=300), (33, 4), (0,), 1)
for op in ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL2", "ReduceLogSumExp"]:
    reduce_case(f"{op[6:].lower()}_f16", op, rand(2, 3, 16, dtype="float16", low=0.1, high=2.0), (2, 3, 16),
                (2,), 1, atol=2e-3 if op != "ReduceSum" else 2e-2)
for op in ["ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare", "ReduceMean", "ReduceL1"]:
    reduce_case(f"{op[6:].lower()}_i64", op, randint(3, 4, 5, low=-20, high=20), (3, 4, 5), (1,), 1)
    reduce_case(f"{op[6:].lower()}_i64_all", op, randint(3, 4, low=-5, high=5), (3, 4), None, 0)
reduce_case("sum_i64_big", "ReduceSum", randint(3, 4, low=2**40, high=2**41), (3, 4), (0,), 1)
reduce_case("sum_i32", "ReduceSum", randint(3, 4, 5, low=-99, high=99, dtype="int32"), (3, 4, 5), (0, 2), 0)
reduce_case("max_u8", "ReduceMax", randint(3, 7, low=0, high=255, dtype="uint8"), (3, 7), (1,), 1)
reduce_case("min_i8", "ReduceMin", randint(3, 7, low=-100, high=100, dtype="int8"), (3, 7), (0,), 0)

# ArgMax / ArgMin: every axis, keepdims, select_last_index (ties from small integer ranges).
for op in ("ArgMax", "ArgMin"):
    low = op.lower()
    for axis in range(-3, 3):
        for keepdims in (0, 1):
            add(f"{low}_axis{axis}_k{keepdims}".replace("-", "m"), op, [rand(3, 4, 5)],
                attrs=dict(axis=axis, keepdims=keepdims), opset=13)
    for last in (0, 1):
        for axis in (0, 1, 2):
            ties = ((np.arange(60) * 7) % 3).astype(np.float32).reshape(3, 4, 5)
            add(f"{low}_ties_last{last}_axis{axis}", op, [ties],
                attrs=dict(axis=axis, select_last_index=last), opset=13)
    add(f"{low}_default", op, [rand(4, 3)], opset=13)
    add(f"{low}_f16", op, [rand(3, 40, dtype="float16")], attrs=dict(axis=1), opset=13)
    add(f"{low}_i32", op, [randint(6, 7, low=-50, high=50, dtype="int32")], attrs=dict(axis=1), opset=13)
    add(f"{low}_u8", op, [randint(6, 7, low=0, high=250, dtype="uint8")], attrs=dict(axis=0), opset=13)
    add(f"{low}_wide", op, [rand(8, 1000)], attrs=dict(axis=0, keepdims=0), opset=13)
    add(f"{low}_long", op, [rand(3, 5000)], attrs=dict(axis=1), opset=13)

# float64 is reduced in double; Max/Min also take bool.
for op in ["ReduceSum", "ReduceMean"] + OPS:
    reduce_case(f"{op[6:].lower()}_f64", op, rand(*X, low=0.1, high=2.0, dtype="float64"), X, (1, 3), 1)
for op in ("ReduceMax", "ReduceMin"):  # bool since opset 20
    add(f"{op[6:].lower()}_bool", op, [rand(3, 4, 5, dtype="bool"), weight(const([1], "int64"))],
        attrs=dict(keepdims=0), opset=20, out_shapes=[(3, 5)])

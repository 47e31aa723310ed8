"""Ops that run along one axis: CumSum (exclusive, reverse, negative and run-time axes, float32/int64/int32) and
TopK (largest/smallest, sorted or not, K as a weight or a run-time input, ties, every axis, integer inputs)."""

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

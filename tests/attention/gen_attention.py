#!/usr/bin/python3
"""Writes the ScaledDotProductAttention test cases: one folder per case with model.txt, weight .bin files,
the pushed inputs (in_<name>.npy), the expected output (expected.npy, from an explicit float64
softmax(q @ kᵀ * scale + mask) @ v in numpy) and meta.txt ("tol <max error / max |expected|>" or
"bad <status>" for models that must be rejected)."""
import argparse
import os
import shutil

import numpy as np

RNG = np.random.default_rng(1234)


def rand(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, size=shape)


def shape_txt(shape):
    return "(" + ",".join(str(d) for d in shape) + ")"


def reference(q, k, v, mask, scale, transpose_k):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    kt = k if transpose_k else np.swapaxes(k, -1, -2)
    s = np.matmul(q, kt) * scale
    if mask is not None:
        s = s + mask.astype(np.float64)
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    return np.matmul(p, v)


class Case:
    """inputs: list of (name, array, is_weight) for Q, K, V and the optional mask; extra_ops: model.txt
    lines computing a mask from pushed inputs (their inputs are listed in pushed)."""

    def __init__(self, name, q, k, v, mask=None, mask_weight=False, transpose_k=0, scale=None,
                 dtype="float32", tol=None, bad=None, computed_mask=None, out_shape=None):
        self.name, self.q, self.k, self.v, self.mask = name, q, k, v, mask
        self.mask_weight, self.transpose_k, self.scale, self.dtype = mask_weight, transpose_k, scale, dtype
        self.tol = tol if tol is not None else (1e-5 if dtype == "float32" else 1e-2)
        self.bad, self.computed_mask, self.out_shape = bad, computed_mask, out_shape


def write_case(root, c):
    d = os.path.join(root, c.name)
    os.makedirs(d)
    np_dt = np.float32 if c.dtype == "float32" else np.float16
    q, k, v = (x.astype(np_dt) for x in (c.q, c.k, c.v))
    mask = None if c.mask is None else c.mask.astype(np_dt)
    refs = [f"q{shape_txt(q.shape)}", f"k{shape_txt(k.shape)}", f"v{shape_txt(v.shape)}"]
    pushed = {"q": q, "k": k, "v": v}
    lines = []
    if mask is not None:
        if c.mask_weight:
            mask.tofile(os.path.join(d, "mask.bin"))
            refs.append(f"mask.bin({c.dtype}:{','.join(str(x) for x in mask.shape)})")
        elif c.computed_mask is not None:
            # mask = m0 + bias (bias a weight over the last axis): a mask that only exists at run time.
            bias = c.computed_mask.astype(np_dt)
            m0 = (mask.astype(np.float64) - bias.astype(np.float64)).astype(np_dt)
            mask = (m0.astype(np.float32) + bias.astype(np.float32)).astype(np_dt)
            bias.tofile(os.path.join(d, "bias.bin"))
            pushed["m0"] = m0
            lines.append(f"mask_add:Add*input:m0{shape_txt(m0.shape)};bias.bin({c.dtype}:{bias.shape[0]})"
                         f"*output:mask{shape_txt(mask.shape)}")
            refs.append(f"mask{shape_txt(mask.shape)}")
        else:
            pushed["mask"] = mask
            refs.append(f"mask{shape_txt(mask.shape)}")
    attrs = []
    if c.scale is not None:
        attrs.append(f"scale:{c.scale!r}")
    if c.transpose_k:
        attrs.append(f"transpose_k:{c.transpose_k}")
    scale = c.scale if c.scale is not None else 1.0 / np.sqrt(np.float32(q.shape[-1]))
    if c.bad is None:
        ref = reference(q, k, v, mask, float(np.float32(scale)), c.transpose_k)
        out_shape = ref.shape
    else:
        ref, out_shape = None, c.out_shape
    attr_txt = ("*" + ";".join(attrs)) if attrs else ""
    lines.append(f"attn:ScaledDotProductAttention*input:{';'.join(refs)}"
                 f"*output:y{shape_txt(out_shape)}{attr_txt}")
    with open(os.path.join(d, "model.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    for name, arr in pushed.items():
        np.save(os.path.join(d, f"in_{name}.npy"), arr)
    with open(os.path.join(d, "meta.txt"), "w") as f:
        if c.bad is None:
            np.save(os.path.join(d, "expected.npy"), ref.astype(np.float32))
            f.write(f"tol {c.tol}\n")
        else:
            f.write(f"bad {c.bad}\n")


def causal(n, fill):
    m = np.zeros((n, n))
    m[np.triu_indices(n, 1)] = fill
    return m


def cases():
    f32min = float(np.finfo(np.float32).min)
    return [
        Case("sd_self", rand(16, 256, 40), rand(16, 256, 40), rand(16, 256, 40)),
        # Big enough for the pool to be used by every algorithm (slices of 256 rows included).
        Case("big_causal", rand(4, 512, 64), rand(4, 512, 64), rand(4, 512, 64),
             mask=causal(512, f32min), mask_weight=True),
        Case("cross_t77", rand(8, 300, 64), rand(8, 77, 64), rand(8, 77, 64)),
        Case("rank4_dv", rand(2, 4, 100, 32), rand(2, 4, 120, 32), rand(2, 4, 120, 48)),
        Case("causal_weight_inf", rand(1, 2, 77, 64), rand(1, 2, 77, 64), rand(1, 2, 77, 64),
             mask=causal(77, -np.inf), mask_weight=True),
        Case("causal_weight_4d", rand(2, 2, 77, 64), rand(2, 2, 77, 64), rand(2, 2, 77, 64),
             mask=causal(77, f32min)[None, None], mask_weight=True),
        Case("computed_mask", rand(2, 3, 50, 16), rand(2, 3, 60, 16), rand(2, 3, 60, 16),
             mask=np.where(rand(2, 1, 1, 60) > 0.6, -1e4, 0.0) + rand(2, 1, 1, 60),
             computed_mask=rand(60)),
        Case("pushed_mask_full", rand(3, 40, 24), rand(3, 45, 24), rand(3, 45, 24), mask=rand(3, 40, 45) * 2),
        Case("mask_column", rand(2, 33, 8), rand(2, 21, 8), rand(2, 21, 8), mask=rand(33, 1) * 3),
        Case("transpose_k", rand(4, 70, 40), rand(4, 40, 90), rand(4, 90, 40), transpose_k=1, scale=0.3),
        Case("f16", rand(4, 130, 40), rand(4, 130, 40), rand(4, 130, 40), mask=rand(130, 130),
             mask_weight=True, dtype="float16"),
        Case("f16_transpose_k", rand(2, 2, 65, 32), rand(2, 2, 32, 70), rand(2, 2, 70, 20), transpose_k=1,
             dtype="float16", scale=0.25),
        Case("s_prime", rand(3, 97, 40), rand(3, 131, 40), rand(3, 131, 40)),
        Case("s1", rand(8, 1, 40), rand(8, 77, 40), rand(8, 77, 40)),
        Case("t1", rand(8, 50, 40), rand(8, 1, 40), rand(8, 1, 40)),
        Case("broadcast_kv", rand(2, 8, 64, 40), rand(2, 1, 80, 40), rand(1, 1, 80, 40)),
        Case("broadcast_q", rand(1, 4, 30, 16), rand(3, 1, 40, 16), rand(3, 4, 40, 16)),
        Case("rank2", rand(20, 12), rand(30, 12), rand(30, 7), scale=1.5),
        Case("long_keys", rand(1, 40, 8), rand(1, 1500, 8), rand(1, 1500, 8), scale=2.0),
        # Rejected models.
        Case("bad_d_mismatch", rand(2, 10, 8), rand(2, 12, 9), rand(2, 12, 8), bad="INVALID_MODEL",
             out_shape=(2, 10, 8)),
        Case("bad_t_mismatch", rand(2, 10, 8), rand(2, 12, 8), rand(2, 11, 8), bad="INVALID_MODEL",
             out_shape=(2, 10, 8)),
        Case("bad_mask_shape", rand(2, 10, 8), rand(2, 12, 8), rand(2, 12, 8), mask=rand(3, 12),
             bad="INVALID_MODEL", out_shape=(2, 10, 8)),
        Case("bad_batch", rand(2, 10, 8), rand(3, 12, 8), rand(3, 12, 8), bad="INVALID_MODEL",
             out_shape=(2, 10, 8)),
        Case("bad_rank", rand(10), rand(12, 10), rand(12, 8), bad="INVALID_MODEL", out_shape=(8,)),
        Case("bad_transpose_k", rand(2, 10, 8), rand(2, 12, 8), rand(2, 12, 8), transpose_k=2,
             bad="INVALID_MODEL", out_shape=(2, 10, 8)),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--stamp", required=True)
    args = ap.parse_args()
    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    for c in cases():
        write_case(args.out, c)
    with open(args.stamp, "w") as f:
        f.write("ok\n")


if __name__ == "__main__":
    main()

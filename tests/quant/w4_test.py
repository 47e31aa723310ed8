#!/usr/bin/python3
"""Blockwise int4 weights end to end: onnxstream-convert --quantize w4, then our run against ONNX Runtime.

usage: w4_test.py --convert EXE --run EXE --node NODE --work DIR

1. A float model with every fully connected form the converter writes as int4: MatMul with 2-D and 3-D A,
   Gemm transB=1 with a bias, Gemm transB=0 with alpha and beta, a 2048 x 1024 MatMul weight big enough to
   stream in chunks, diffusers' GEGLU feed-forward (fused into GegluFeedForward, W1 transposed), and a
   MatMul whose K (80) is not a multiple of 32, which stays int8.
2. The files are decoded here in numpy from the documented layout (docs/model-format.md: N rows of K 4-bit
   codes, low nibble first, value = code - 8, then K/32 bfloat16 scales) and checked against the documented
   rule, recomputed from the float weights: each code is its value over the block's scale rounded half to
   even and clamped to [-8, 7], and each block's scale has the smallest squared error among the candidates
   max|w| * f / 7 and max|w| * f / 8, f = 1, 0.975, ..., 0.6, rounded to bfloat16.
3. The decoded twin: the float model with each quantized weight replaced by its decoded float32 values;
   ONNX Runtime's output of it is the exact product of the stored weights. Ours differs by the int8
   quantization of the activations (one scale per row), so the bound is 1e-2 rel L2 (2e-2 for the
   feed-forward, which quantizes its input and then its GEGLU activations). The float model's output is
   printed beside it: that gap is int4's own error.
4. The same outputs in every way the weights can be served: `--memory-mode min`, 1 MiB chunks, the
   persistent cache with XNNPACK's packed weights (first and second process), and model.safetensors.
5. Bad input: a block that is not a multiple of 32, an axis of 2, an int4 weight read by an Add, and (where
   the kernels exist) a truncated int4 file and a NaN scale each fail with a message naming the problem.
On a build against XNNPACK's 2022-02 API every int4 model must be refused at load with
ONNXSTREAM_ERR_UNSUPPORTED naming the missing kernels.
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))

import case_output  # noqa: E402
import cross_exe  # noqa: E402
from checklist import check, finish  # noqa: E402
import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

BLOCK = 32
INPUTS = {"x": (5, 256), "x3": (2, 3, 256), "x2": (5, 80), "xb": (4, 2048), "xf": (4096, 64)}
OUTPUTS = {"y": (5, 96), "z": (5, 64), "h": (5, 48), "y3": (2, 3, 96), "u": (5, 64), "yb": (4, 1024),
           "f": (4096, 48)}  # 4096 tokens: in `min` the feed-forward runs in blocks of hidden columns


def float_model(rng):
    w = {"W": rng.normal(0, 0.1, (256, 96)), "G": rng.normal(0, 0.1, (64, 256)), "bG": rng.normal(0, 0.1, 64),
         "H": rng.normal(0, 0.1, (256, 48)), "cH": rng.normal(0, 0.1, 48), "U": rng.normal(0, 0.1, (80, 64)),
         "B": rng.normal(0, 0.03, (2048, 1024)), "F1": rng.normal(0, 0.1, (64, 256)), "fb1": rng.normal(0, 0.1, 256),
         "F2": rng.normal(0, 0.1, (128, 48)), "fb2": rng.normal(0, 0.1, 48), "half": np.array([128, 128])}
    w["W"][3, :] *= 20  # one large row: blocks must keep their own scales
    inits = [numpy_helper.from_array(v.astype(np.int64 if k == "half" else np.float32), k) for k, v in w.items()]
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["y"], name="mm"),
        helper.make_node("Gemm", ["x", "G", "bG"], ["z"], name="gemm_tb", transB=1),
        helper.make_node("Gemm", ["x", "H", "cH"], ["h"], name="gemm_ab", alpha=0.5, beta=2.0),
        helper.make_node("MatMul", ["x3", "W"], ["y3"], name="mm3"),
        helper.make_node("MatMul", ["x2", "U"], ["u"], name="mm_k80"),
        helper.make_node("MatMul", ["xb", "B"], ["yb"], name="mm_big"),
        # diffusers' GEGLU feed-forward, which the converter fuses into GegluFeedForward (W1 transposed).
        helper.make_node("MatMul", ["xf", "F1"], ["f1"], name="ff_proj"),
        helper.make_node("Add", ["f1", "fb1"], ["f1b"], name="ff_proj_bias"),
        helper.make_node("Split", ["f1b", "half"], ["fa", "fg"], name="ff_split", axis=-1),
        helper.make_node("Gelu", ["fg"], ["fgelu"], name="ff_gelu"),
        helper.make_node("Mul", ["fa", "fgelu"], ["fm"], name="ff_mul"),
        helper.make_node("MatMul", ["fm", "F2"], ["f2"], name="ff_out"),
        helper.make_node("Add", ["f2", "fb2"], ["f"], name="ff_out_bias"),
    ]
    graph = helper.make_graph(
        nodes, "w4", [helper.make_tensor_value_info(k, TensorProto.FLOAT, s) for k, s in INPUTS.items()],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, s) for k, s in OUTPUTS.items()], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


def bf16_round(v):
    """float32 -> nearest-even bfloat16, as float32 (finite values)."""
    bits = np.asarray(v, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def decode_int4(path, shape, block, axis):
    """(weight in the declared orientation, codes [N, K], scales [N, K/block]) from an int4 file."""
    k, n = shape[axis], shape[1 - axis]
    row = k // 2 + 2 * (k // block)
    raw = np.fromfile(path, dtype=np.uint8)
    assert raw.size == n * row, f"{path}: {raw.size} bytes, expected {n * row}"
    raw = raw.reshape(n, row)
    codes = np.empty((n, k), np.int32)
    codes[:, 0::2] = raw[:, :k // 2] & 0xF
    codes[:, 1::2] = raw[:, :k // 2] >> 4
    scales = (raw[:, k // 2:].copy().view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    values = (codes - 8).astype(np.float32) * np.repeat(scales, block, axis=1)
    return (values.T if axis == 0 else values), codes, scales


def codes_for(blocks, scale):
    """Codes of [n, blocks, block] floats with one scale per block: round half to even, clamp to [-8, 7]."""
    return np.clip(np.rint(blocks / scale[:, :, None]), -8, 7).astype(np.int32) + 8


def block_errors(blocks, scale):
    deq = (codes_for(blocks, scale) - 8).astype(np.float64) * scale[:, :, None].astype(np.float64)
    return ((blocks.astype(np.float64) - deq) ** 2).sum(axis=2)


def expected_quantization(w, axis, block):
    """The documented quantization of a float weight as rows of [N, K] blocks: for each block the smallest
    squared error over the candidate scales max|w| * f / 7 and max|w| * f / 8, f = 1, 0.975, ..., 0.6
    (rounded to bfloat16). Returns the blocks and that smallest error per block."""
    rows = (w.T if axis == 0 else w).astype(np.float32)
    n, k = rows.shape
    blocks = rows.reshape(n, k // block, block)
    amax = np.abs(blocks).max(axis=2)
    best = np.full(amax.shape, np.inf)
    for step in range(17):
        for divisor in (7, 8):
            fraction = np.float32(1) - np.float32(0.025) * np.float32(step)
            scale = bf16_round(np.maximum(amax * fraction / np.float32(divisor), np.finfo(np.float32).tiny))
            best = np.minimum(best, block_errors(blocks, scale))
    return blocks, best


def parse_weights(model_txt):
    """weight file -> (dtype text, quantization text, dims) for every quantized weight reference."""
    found = {}
    for m in re.finditer(r"([A-Za-z0-9_]+\.bin)\((int4|int8)\[([^\]]*)\]:([0-9,]+)\)", open(model_txt).read()):
        found[m.group(1)] = (m.group(2), m.group(3), [int(d) for d in m.group(4).split(",")])
    return found


def ort_outputs(a, model, inputs, label):
    cases = os.path.join(a.work, "ort_" + label)
    case_dir = os.path.join(cases, "w4", label)
    os.makedirs(case_dir)
    onnx.save(model, os.path.join(case_dir, "model.onnx"))
    meta = {"inputs": [], "outputs": []}
    for i, (name, arr) in enumerate(inputs.items()):
        np.save(os.path.join(case_dir, f"input_{i}.npy"), arr)
        meta["inputs"].append({"index": i, "name": name, "kind": "input", "file": f"input_{i}.npy",
                               "dtype": "float32", "shape": list(arr.shape)})
    for k, (name, shape) in enumerate(OUTPUTS.items()):
        meta["outputs"].append({"index": k, "name": name, "file": f"expected_{k}.npy", "shape": list(shape)})
    with open(os.path.join(case_dir, "case.json"), "w") as f:
        json.dump(meta, f)
    case_output.add_ort_reference(a.node, cases, "w4_test")
    err = os.path.join(case_dir, "error.txt")
    check(not os.path.exists(err), f"ONNX Runtime runs the {label} model" +
          (": " + open(err).read() if os.path.exists(err) else ""))
    return {name: np.load(os.path.join(case_dir, f"expected_{k}.npy")) for k, name in enumerate(OUTPUTS)}


def run_ours(a, model_dir, label, extra=()):
    out = os.path.join(a.work, "out_" + label)
    os.makedirs(out, exist_ok=True)
    args = [a.run, model_dir, "--output-dir", out, *extra]
    for name in INPUTS:
        args += ["--input", f"{name}={os.path.join(a.work, name + '.npy')}"]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        return p, None
    return p, {name: np.load(os.path.join(out, name + ".npy")) for name in OUTPUTS}


def rel_l2(a, b):
    return float(np.linalg.norm((a - b).ravel()) / max(np.linalg.norm(b.ravel()), 1e-30))


def same_as_default(label, other, ours, ref_twin):
    """Every output as in the default run, but the feed-forward's: in 1 MiB chunks it runs in two blocks of
    hidden columns, each quantizing its own GEGLU activations, so it is held to the decoded twin instead."""
    worst = max(rel_l2(other[n], ours[n]) for n in OUTPUTS if n != "f")
    check(worst <= 1e-6, f"{label} gives the default run's outputs (largest rel L2 {worst:.2g})")
    err = rel_l2(other["f"], ref_twin["f"])
    check(err <= 2e-2, f"{label}: the feed-forward within 2e-2 of the decoded twin ({err:.3g})")


def bad_inputs(a, folder, has_kernels):
    def variant(label, edit):
        d = os.path.join(a.work, "bad_" + label)
        shutil.copytree(folder, d)
        edit(d)
        p, _ = run_ours(a, d, "bad_" + label)
        return p

    def truncate(d):
        path = os.path.join(d, "W.bin")
        data = open(path, "rb").read()
        open(path, "wb").write(data[:-7])

    def edit_text(old, new):
        def edit(d):
            path = os.path.join(d, "model.txt")
            text = open(path).read()
            assert old in text, old
            open(path, "w").write(text.replace(old, new, 1))
        return edit

    p = variant("block48", edit_text("W.bin(int4[32,0]", "W.bin(int4[48,0]"))
    check(p.returncode != 0 and "multiple of 32" in p.stderr, f"an int4 block of 48 fails: {p.stderr.strip()}")
    p = variant("axis", edit_text("W.bin(int4[32,0]", "W.bin(int4[32,2]"))
    check(p.returncode != 0 and "axis" in p.stderr, f"an int4 axis of 2 fails: {p.stderr.strip()}")

    def add_reader(d):
        path = os.path.join(d, "model.txt")
        text = open(path).read()
        decl = re.search(r"W\.bin\(int4\[32,0\]:256,96\)", text).group(0)
        open(path, "a").write(f"extra_add:Add*input:y(5,96);{decl}*output:extra(5,96)\n")

    p = variant("add", add_reader)
    check(p.returncode != 0 and "only be input 1 (B) of MatMul or Gemm" in p.stderr,
          f"an int4 weight read by Add fails: {p.stderr.strip()}")
    if not has_kernels:
        return
    p = variant("truncated", truncate)
    check(p.returncode != 0 and "W.bin" in p.stderr and "bytes" in p.stderr,
          f"a truncated int4 file fails: {p.stderr.strip()}")

    def nan_scale(d):
        path = os.path.join(d, "G.bin")
        data = bytearray(open(path, "rb").read())
        data[128:130] = b"\xc0\x7f"  # the first scale of row 0 (after 128 code bytes): bfloat16 NaN
        open(path, "wb").write(bytes(data))

    p = variant("nan_scale", nan_scale)
    check(p.returncode != 0 and "int4 scale" in p.stderr, f"a NaN int4 scale fails: {p.stderr.strip()}")


def main():
    a = cross_exe.convert_and_run_args()
    rng = np.random.default_rng(11)
    model = float_model(rng)
    onnx_path = os.path.join(a.work, "model.onnx")
    onnx.save(model, onnx_path)
    inputs = {k: rng.normal(0, 1, s).astype(np.float32) for k, s in INPUTS.items()}
    for k, v in inputs.items():
        np.save(os.path.join(a.work, k + ".npy"), v)
    version = subprocess.run([a.run, "--version"], capture_output=True, text=True).stdout
    has_kernels = "2024" in version
    print(f"     {version.strip()}")

    folder = os.path.join(a.work, "w4")
    p = subprocess.run([a.convert, onnx_path, folder, "--quantize", "w4", "--report"], capture_output=True, text=True)
    check(p.returncode == 0, "convert --quantize w4: " + (p.stderr.strip() or "ok"))
    if p.returncode != 0:
        return
    check("int4 blockwise weights: 6" in p.stdout, "the report counts 6 int4 weights")
    found = parse_weights(os.path.join(folder, "model.txt"))
    want = {"W.bin": ("int4", "32,0"), "G.bin": ("int4", "32,1"), "H.bin": ("int4", "32,0"),
            "B.bin": ("int4", "32,0"), "U.bin": ("int8", "@U_scales.bin,1"),
            "F1_5F_t.bin": ("int4", "32,1"), "F2.bin": ("int4", "32,0")}
    check({k: v[:2] for k, v in found.items()} == want, f"model.txt declares {sorted(found.items())}")

    floats = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    floats["F1_5F_t"] = floats["F1"].T  # the fused GEGLU's W1, written transposed ([2H, C])
    decoded = {}
    for file, (dtype, quant, dims) in found.items():
        name = file[:-4]
        if dtype == "int4":
            axis = int(quant.split(",")[1])
            decoded[name], codes, scales = decode_int4(os.path.join(folder, file), dims, BLOCK, axis)
            blocks, best = expected_quantization(floats[name], axis, BLOCK)
            check(np.array_equal(codes, codes_for(blocks, scales).reshape(codes.shape)),
                  f"{file}: every code is its value rounded with the block's stored scale")
            ours = block_errors(blocks, scales)
            check(np.all(ours <= best * (1 + 1e-6) + 1e-30),
                  f"{file}: every block's scale has the smallest error of the documented candidates "
                  f"(worst ratio {np.max(ours / np.maximum(best, 1e-30)):.6f})")
        else:
            scales = np.fromfile(os.path.join(folder, name + "_scales.bin"), dtype=np.float32)
            decoded[name] = np.fromfile(os.path.join(folder, file), dtype=np.int8).reshape(dims) * scales
    werr = rel_l2(decoded["W"], floats["W"])
    check(werr <= 0.15, f"decoded W within 0.15 (rel L2) of the float weight: {werr:.4f}")

    decoded["F1"] = decoded.pop("F1_5F_t").T
    twin = onnx.ModelProto()
    twin.CopyFrom(model)
    for init in twin.graph.initializer:
        if init.name in decoded:
            init.CopyFrom(numpy_helper.from_array(decoded[init.name].astype(np.float32), init.name))
    ref_twin = ort_outputs(a, twin, inputs, "twin")
    ref_float = ort_outputs(a, model, inputs, "float")

    p, ours = run_ours(a, folder, "default")
    if not has_kernels:
        check(p.returncode != 0 and "qd8_f32_qb4w" in p.stderr and "2024" in p.stderr,
              f"the 2022-02 API build refuses int4 weights: {p.stderr.strip()}")
        bad_inputs(a, folder, has_kernels)
        return
    check(p.returncode == 0, "onnxstream-run of the int4 model: " + (p.stderr.strip() or "ok"))
    if ours is None:
        return
    for name in OUTPUTS:
        twin_err, float_err = rel_l2(ours[name], ref_twin[name]), rel_l2(ours[name], ref_float[name])
        print(f"     {name}: rel L2 {twin_err:.3g} vs the decoded twin, {float_err:.3g} vs the float model")
        bound = 2e-2 if name == "f" else 1e-2  # the feed-forward quantizes twice: x, then a * gelu(g)
        check(twin_err <= bound, f"{name} within {bound:g} of ONNX Runtime on the decoded weights")
        check(float_err <= 0.15, f"{name} within 0.15 of ONNX Runtime on the float weights")

    cache = os.path.join(a.work, "weights.oswc")
    ways = [("min", ["--memory-mode", "min"]), ("chunks", ["--chunk-mb", "1"]),
            ("cache_first", ["--cache", cache, "--json"]), ("cache_second", ["--cache", cache, "--json"])]
    for label, extra in ways:
        p, other = run_ours(a, folder, label, extra)
        check(p.returncode == 0 and other is not None, f"{label}: " + (p.stderr.strip() or "runs"))
        if other is None:
            continue
        same_as_default(label, other, ours, ref_twin)
        if label == "cache_second":
            mapped = json.loads(p.stdout.strip().splitlines()[-1])["weights"][0].get("packed_weights_mapped", 0)
            check(mapped >= 4, f"the second cached process maps packed int4 weights ({mapped} operators)")

    st = os.path.join(a.work, "w4_st")
    p = subprocess.run([a.convert, onnx_path, st, "--quantize", "w4", "--weights", "safetensors"],
                       capture_output=True, text=True)
    check(p.returncode == 0, "convert --quantize w4 --weights safetensors: " + (p.stderr.strip() or "ok"))
    p, other = run_ours(a, st, "safetensors", ["--chunk-mb", "1"])
    check(p.returncode == 0 and other is not None, "safetensors: " + (p.stderr.strip() or "runs"))
    if other is not None:
        same_as_default("model.safetensors", other, ours, ref_twin)
    bad_inputs(a, folder, has_kernels)


if __name__ == "__main__":
    main()
    finish()

#!/usr/bin/python3
"""Static W8A8 end to end: onnxstream-convert --quantize w8a8 --calibration-inputs, then our uint8 run against
ONNX Runtime on a QDQ twin, plus bad range data.

usage: w8a8_test.py --convert EXE --run EXE --node NODE --work DIR

1. A float model (Conv -> Relu -> Conv(stride 2) -> Relu -> Flatten -> Gemm 2048x640 -> MatMul) and 4 random calibration
   runs; the converter writes uint8 weights (model.txt `uint8[scale,zero_point]`) and range_data.txt.
2. The QDQ twin: the float ONNX model with every quantized weight replaced by DequantizeLinear of the same
   uint8 values (recomputed here in numpy from model.txt's scale/zero point) and QuantizeLinear ->
   DequantizeLinear around each quantized op's input and output with the scales of range_data.txt. ONNX
   Runtime's output of the twin is what exact uint8 arithmetic gives; ours may differ by XNNPACK's
   requantization rounding (one quantum of an op's output, which later ops can carry), so the bound is 3
   quanta of the last output and most elements must match within one.
3. Bad range data: malformed line, unknown name, min > max -> onnxstream-run fails naming the problem.
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

def float_model(rng):
    def init(name, arr):
        return numpy_helper.from_array(arr.astype(np.float32), name)
    inits = [
        init("w1", rng.normal(0, 0.2, (64, 8, 3, 3))), init("b1", rng.normal(0, 0.1, 64)),
        init("w2", rng.normal(0, 0.05, (32, 64, 3, 3))), init("b2", rng.normal(0, 0.1, 32)),
        init("w3", rng.normal(0, 0.03, (640, 2048))), init("b3", rng.normal(0, 0.1, 640)),
        init("w4", rng.normal(0, 0.1, (640, 64))),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1], strides=[2, 2],
                         kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Flatten", ["r2"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["g"], name="gemm", transB=1),
        helper.make_node("MatMul", ["g", "w4"], ["y"], name="mm"),
    ]
    graph = helper.make_graph(nodes, "w8a8", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def qu8(lo, hi):
    lo, hi = np.float32(min(lo, 0.0)), np.float32(max(hi, 0.0))
    scale = np.float32((hi - lo) / np.float32(255)) if hi > lo else np.float32(1)
    zp = int(np.clip(np.rint(-lo / scale), 0, 255))
    return scale, zp


def parse_model_txt(path):
    """op name -> (type, input tensor name, weight scale, weight zero point) for uint8-weight ops."""
    ops = {}
    for line in open(path):
        name, rest = line.split(":", 1)
        m = re.search(r"\(uint8\[([^,\]]+),(\d+)\]", line)
        if m:
            ops[name] = (float(np.float32(float(m.group(1)))), int(m.group(2)))
    return ops


def weight_dq(w, quant, wname, nodes):
    """Initializers + a DequantizeLinear node producing `wname` from the same 8-bit values our model holds."""
    if len(quant) == 2:  # per-tensor uint8 (scale, zero point)
        ws, wz = quant
        q = np.clip(np.rint(w / np.float32(ws)) + wz, 0, 255).astype(np.uint8)
        nodes.append(helper.make_node("DequantizeLinear", [wname + "_q", wname + "_s", wname + "_z"], [wname]))
        return [numpy_helper.from_array(q, wname + "_q"), numpy_helper.from_array(np.float32(ws), wname + "_s"),
                numpy_helper.from_array(np.uint8(wz), wname + "_z")]
    _, scales, axis = quant  # per-channel symmetric int8
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.rint(w / scales.reshape(shape)), -127, 127).astype(np.int8)
    nodes.append(helper.make_node("DequantizeLinear", [wname + "_q", wname + "_s", wname + "_z"], [wname], axis=axis))
    return [numpy_helper.from_array(q, wname + "_q"), numpy_helper.from_array(scales.astype(np.float32), wname + "_s"),
            numpy_helper.from_array(np.zeros(len(scales), np.int8), wname + "_z")]


def qdq_twin(model, wq, ranges, producer_key, float_weights=None):
    """wq: op name -> quantization of its weight, for ops computing in 8 bits (QDQ around input and output);
    float_weights: op name -> quantization of weights that are only dequantized (W8A32, no activation QDQ)."""
    g = model.graph
    inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    new_inits, new_nodes = [], []
    keep = {i.name: i for i in g.initializer}
    for n in g.node:
        if float_weights and n.name in float_weights:
            wname = n.input[1]
            del keep[wname]
            new_inits += weight_dq(inits[wname], float_weights[n.name], wname, new_nodes)
            new_nodes.append(n)
            continue
        if n.name not in wq or n.input[0] not in producer_key or producer_key[n.input[0]] not in ranges \
                or n.name not in ranges:
            new_nodes.append(n)
            continue
        wname = n.input[1]
        del keep[wname]
        new_inits += weight_dq(inits[wname], wq[n.name], wname, new_nodes)
        ins, inz = qu8(*ranges[producer_key[n.input[0]]])
        outs, outz = qu8(*ranges[n.name])
        x = n.input[0]
        new_inits += [numpy_helper.from_array(np.float32(ins), n.name + "_is"),
                      numpy_helper.from_array(np.uint8(inz), n.name + "_iz"),
                      numpy_helper.from_array(np.float32(outs), n.name + "_os"),
                      numpy_helper.from_array(np.uint8(outz), n.name + "_oz")]
        new_nodes.append(helper.make_node("QuantizeLinear", [x, n.name + "_is", n.name + "_iz"], [n.name + "_xq"]))
        new_nodes.append(helper.make_node("DequantizeLinear", [n.name + "_xq", n.name + "_is", n.name + "_iz"],
                                          [n.name + "_xd"]))
        out = n.output[0]
        body = helper.make_node(n.op_type, [n.name + "_xd"] + list(n.input[1:]), [n.name + "_raw"], name=n.name)
        body.attribute.extend(n.attribute)
        new_nodes.append(body)
        new_nodes.append(helper.make_node("QuantizeLinear", [n.name + "_raw", n.name + "_os", n.name + "_oz"],
                                          [n.name + "_yq"]))
        new_nodes.append(helper.make_node("DequantizeLinear", [n.name + "_yq", n.name + "_os", n.name + "_oz"], [out]))
    graph = helper.make_graph(new_nodes, "twin", list(g.input), list(g.output), list(keep.values()) + new_inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def ort_output(a, model, x, label):
    cases = os.path.join(a.work, "ort_" + label)
    case_dir = os.path.join(cases, "w8a8", label)
    os.makedirs(case_dir)
    onnx.save(model, os.path.join(case_dir, "model.onnx"))
    np.save(os.path.join(case_dir, "input_0.npy"), x)
    with open(os.path.join(case_dir, "case.json"), "w") as f:
        json.dump({"inputs": [{"index": 0, "name": "x", "kind": "input", "file": "input_0.npy", "dtype": "float32",
                               "shape": list(x.shape)}],
                   "outputs": [{"index": 0, "name": "y", "file": "expected_0.npy", "shape": [1, 64]}]}, f)
    case_output.add_ort_reference(a.node, cases, "w8a8_test")
    err = os.path.join(case_dir, "error.txt")
    check(not os.path.exists(err), f"ONNX Runtime runs the {label} model" +
          (": " + open(err).read() if os.path.exists(err) else ""))
    return np.load(os.path.join(case_dir, "expected_0.npy"))


def read_ranges(path):
    ranges = {}
    for line in open(path):
        name, lo, hi = line.strip().split(",")
        ranges[name] = (float(lo), float(hi))
    return ranges


def run_ours(run_exe, model_dir, x_path, out_dir, extra=()):
    os.makedirs(out_dir, exist_ok=True)
    p = subprocess.run([run_exe, model_dir, "--input", "x=" + x_path, "--output-dir", out_dir, *extra],
                       capture_output=True, text=True)
    return p


def main():
    a = cross_exe.convert_and_run_args()
    rng = np.random.default_rng(7)
    model = float_model(rng)
    onnx_path = os.path.join(a.work, "model.onnx")
    onnx.save(model, onnx_path)
    calib = os.path.join(a.work, "calib")
    for r in range(4):
        os.makedirs(os.path.join(calib, str(r)))
        np.save(os.path.join(calib, str(r), "x.npy"), rng.normal(0, 1, (1, 8, 16, 16)).astype(np.float32))
    x = rng.normal(0, 1, (1, 8, 16, 16)).astype(np.float32)
    x_path = os.path.join(a.work, "x.npy")
    np.save(x_path, x)

    out = os.path.join(a.work, "w8a8")
    p = subprocess.run([a.convert, onnx_path, out, "--quantize", "w8a8", "--calibration-inputs", calib],
                       capture_output=True, text=True)
    check(p.returncode == 0, "convert --quantize w8a8: " + (p.stderr.strip() or "ok"))
    if p.returncode != 0:
        return
    wq = parse_model_txt(os.path.join(out, "model.txt"))
    check(set(wq) == {"conv1", "conv2", "gemm", "mm"}, f"uint8 weights for conv1, conv2, gemm, mm: {sorted(wq)}")
    ranges = read_ranges(os.path.join(out, "range_data.txt"))
    check({"x", "conv1", "relu1", "flat", "gemm", "mm"} <= set(ranges), f"ranges recorded: {sorted(ranges)}")
    producer_key = {"x": "x"}
    for n in model.graph.node:
        producer_key[n.output[0]] = n.name

    twin = qdq_twin(model, wq, ranges, producer_key)
    ref = ort_output(a, twin, x, "twin")

    p = run_ours(a.run, out, x_path, os.path.join(a.work, "ours"))
    check(p.returncode == 0, "onnxstream-run of the w8a8 model: " + (p.stderr.strip() or "ok"))
    ours = np.load(os.path.join(a.work, "ours", "y.npy"))
    q_last, _ = qu8(*ranges["mm"])
    diff = np.abs(ours - ref)
    within1 = float(np.mean(diff <= q_last * 1.01))
    print(f"     max |ours - ORT twin| = {diff.max():.6g} ({diff.max() / q_last:.2f} quanta of {q_last:.6g}), "
          f"{within1 * 100:.1f} % within one quantum; output range {np.abs(ref).max():.4g}")
    check(diff.max() <= 3 * q_last * 1.01, "W8A8 output within 3 quanta of the QDQ twin")
    check(within1 >= 0.9, "W8A8 output: >= 90 % of elements within one quantum")

    # The same model with the Gemm's 1.25 MiB uint8 weight streamed in 1 MiB output-row chunks: each chunk is
    # its own qu8 operator writing its columns, so the output is identical.
    p = run_ours(a.run, out, x_path, os.path.join(a.work, "chunked"), ["--chunk-mb", "1"])
    check(p.returncode == 0, "onnxstream-run --chunk-mb 1: " + (p.stderr.strip() or "ok"))
    if p.returncode == 0:
        chunked = np.load(os.path.join(a.work, "chunked", "y.npy"))
        check(np.array_equal(chunked, ours), "chunked weights give the same W8A8 output")

    # Float reference of the same uint8 weights without ranges (W8A32): W8A8 stays close to it.
    nor = os.path.join(a.work, "w8a32")
    shutil.copytree(out, nor)
    os.remove(os.path.join(nor, "range_data.txt"))
    p = run_ours(a.run, nor, x_path, os.path.join(a.work, "w8a32_out"))
    if p.returncode == 0:
        f = np.load(os.path.join(a.work, "w8a32_out", "y.npy"))
        rel = float(np.linalg.norm(ours - f) / np.linalg.norm(f))
        print(f"     rel L2 W8A8 vs W8A32 = {rel:.4g}")
        check(rel < 0.05, "W8A8 within 5 % (rel L2) of the W8A32 run")

    # Bad range data.
    for label, text, needle in [("malformed line", "x,1\n", "expected `name,min,max`"),
                                ("unknown name", "nosuchop,0,1\n", "neither an op nor a graph input"),
                                ("min > max", "x,2,1\n", "min 2 > max 1"),
                                ("not a number", "x,a,1\n", "decimal numbers")]:
        bad = os.path.join(a.work, "bad_range.txt")
        with open(bad, "w") as fh:
            fh.write(text)
        p = run_ours(a.run, out, x_path, os.path.join(a.work, "bad"), ["--range-data", bad])
        check(p.returncode != 0 and needle in p.stderr, f"bad range data ({label}) fails: {p.stderr.strip()}")

    # Per-channel int8 weights (--quantize w8) plus ranges calibrated by onnxstream-run: the Convs compute in
    # XNNPACK qc8 (int8 activations), Gemm/MatMul stay W8A32 (no per-channel fully connected in XNNPACK).
    w8 = os.path.join(a.work, "w8")
    p = subprocess.run([a.convert, onnx_path, w8, "--quantize", "w8"], capture_output=True, text=True)
    check(p.returncode == 0, "convert --quantize w8: " + (p.stderr.strip() or "ok"))
    p = run_ours(a.run, w8, os.path.join(calib, "0", "x.npy"), os.path.join(a.work, "w8_cal"),
                 ["--calibrate", os.path.join(w8, "range_data.txt")])
    check(p.returncode == 0, "onnxstream-run --calibrate into the w8 model: " + (p.stderr.strip() or "ok"))
    s8 = {}
    for line in open(os.path.join(w8, "model.txt")):
        m = re.search(r"\(int8\[@([^,\]]+),(\d+)\]", line)
        if m:
            scales = np.fromfile(os.path.join(w8, m.group(1)), dtype=np.float32)
            s8[line.split(":", 1)[0]] = ("s8", scales, int(m.group(2)))
    check(set(s8) == {"conv1", "conv2", "gemm", "mm"}, f"int8 weights for conv1, conv2, gemm, mm: {sorted(s8)}")
    ranges8 = read_ranges(os.path.join(w8, "range_data.txt"))
    twin8 = qdq_twin(model, {k: v for k, v in s8.items() if k.startswith("conv")}, ranges8, producer_key,
                     {k: v for k, v in s8.items() if not k.startswith("conv")})
    ref8 = ort_output(a, twin8, x, "twin_qc8")
    # --dequantize-weights keeps Gemm and MatMul in float32 (W8A32) as the twin computes them; without it,
    # XNNPACK 2024 builds compute them in int8 with dynamically quantized activations (tests/quant/quant_test).
    p = run_ours(a.run, w8, x_path, os.path.join(a.work, "w8_out"), ["--dequantize-weights"])
    check(p.returncode == 0, "onnxstream-run of the w8 model with ranges: " + (p.stderr.strip() or "ok"))
    ours8 = np.load(os.path.join(a.work, "w8_out", "y.npy"))
    # The last quantized output is conv2's; Gemm and MatMul (float) scale its quantum by their weights.
    d8 = np.abs(ours8 - ref8)
    rel8 = float(np.linalg.norm(ours8 - ref8) / np.linalg.norm(ref8))
    print(f"     qc8: max |ours - ORT twin| = {d8.max():.6g}, rel L2 {rel8:.3g}, output range {np.abs(ref8).max():.4g}")
    check(rel8 < 2e-3, "per-channel int8 Conv (qc8) W8A8 matches its QDQ twin (rel L2 < 2e-3)")

    # Calibration through onnxstream-run writes the same kind of file.
    cal_out = os.path.join(a.work, "cal_range.txt")
    p = run_ours(a.run, nor, x_path, os.path.join(a.work, "cal"), ["--calibrate", cal_out])
    check(p.returncode == 0 and os.path.exists(cal_out) and "conv1," in open(cal_out).read(),
          "onnxstream-run --calibrate writes range data")


if __name__ == "__main__":
    main()
    finish()

#!/usr/bin/python3
"""The per-op profile (`onnxstream-run --profile/--profile-summary`) against the ONNX graphs it came from.

The references are computed here, not by the engine: from the ONNX file with the onnx package's shape
inference, or by PyTorch's profiler: for every op of the converted model, its type, its output shapes, the bytes of its weights and,
for the matrix ops, its FLOPs (2 per multiply-add: Conv 2·|Y|·Cin/g·kH·kW, MatMul/Gemm 2·|Y|·K).
- YOLOv8n (../shared): one trace slice per ONNX node with the node's name, type, output shape, initializer
  bytes and, for every Conv, the FLOPs; the ops' slices follow each other on the run thread's track, each
  followed by a memory counter; the summary's per-type counts and totals agree with the trace.
- The small Stable Diffusion UNet (tests/sd/gen_sd.py): its attention and GEGLU feed-forward blocks are fused
  by the converter, so the profile's ops are not the ONNX nodes (and ONNX shape inference leaves the shapes
  of its computed-shape chains unknown); the FLOPs of the whole run must equal what PyTorch's profiler counts
  running the same module (the fused ops count the products they replace).
usage: profile_test.py --run RUN --convert CONVERT --shared SHARED_DIR --sd-cases DIR --work DIR
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import cross_exe  # noqa: E402
from checklist import check, finish  # noqa: E402


class OnnxGraph:
    """Node types, inferred shapes and constant bytes of an ONNX model."""

    def __init__(self, path):
        model = shape_inference.infer_shapes(onnx.load(path), data_prop=True)
        g = model.graph
        self.nodes = [n for n in g.node if n.op_type != "Constant"]
        self.shapes = {}
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            if not vi.type.tensor_type.HasField("shape"):
                continue
            dims = vi.type.tensor_type.shape.dim
            if all(d.HasField("dim_value") for d in dims):
                self.shapes[vi.name] = [d.dim_value for d in dims]
        self.const_bytes = {}
        for init in g.initializer:
            a = numpy_helper.to_array(init)
            self.const_bytes[init.name] = a.nbytes
            self.shapes[init.name] = list(a.shape)
        for n in g.node:
            if n.op_type == "Constant":
                a = numpy_helper.to_array(n.attribute[0].t)
                self.const_bytes[n.output[0]] = a.nbytes
                self.shapes[n.output[0]] = list(a.shape)

    def shape(self, name):
        return self.shapes.get(name)

    def flops(self, n):
        """2 per multiply-add of a Conv, MatMul or Gemm node; None when a shape is unknown."""
        y = self.shape(n.output[0])
        if n.op_type not in ("Conv", "MatMul", "Gemm"):
            return 0
        if y is None:
            return None
        if n.op_type == "Conv":
            w = self.shape(n.input[1])
            return None if w is None else 2 * int(np.prod(y)) * int(np.prod(w[1:]))
        a = self.shape(n.input[0])
        if a is None:
            return None
        if n.op_type == "MatMul":
            return 2 * int(np.prod(y)) * a[-1]
        trans_a = next((at.i for at in n.attribute if at.name == "transA"), 0)
        return 2 * int(np.prod(y)) * (a[0] if trans_a else a[1])


def run_profiled(run_exe, model, inputs, work, tag):
    trace = os.path.join(work, tag + ".json")
    cmd = [run_exe, model, "--threads", "2", "--runs", "2", "--profile", trace, "--profile-summary", "--json"]
    for name, path in inputs:
        cmd += ["--input", "%s=%s" % (name, path)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("onnxstream-run %s failed (%d): %s" % (model, p.returncode, p.stderr))
    return json.load(open(trace)), p.stderr


def parse_summary(text):
    """{type: (count, total_ms)} from the summary table, and the 'total' row."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^(\S+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s", line)
        if m:
            rows[m.group(1)] = (int(m.group(2)), float(m.group(3)), float(m.group(4)))
    return rows


def check_trace_shape(trace, tag):
    events = trace["traceEvents"]
    ops = [e for e in events if e["ph"] == "X" and e.get("cat") == "op"]
    counters = [e for e in events if e["ph"] == "C"]
    names = [e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"]
    check(len(counters) == len(ops) and len(ops) > 0, "%s: %d op slices, one memory counter each" % (tag, len(ops)))
    check(any("run thread" in n for n in names), "%s: the run thread's track is named" % tag)
    ordered = all(a["args"]["index"] + 1 == b["args"]["index"] and a["ts"] + a["dur"] <= b["ts"] + 1e-3
                  for a, b in zip(ops, ops[1:]))
    check(ordered, "%s: op slices follow each other in op order without overlapping" % tag)
    busy = sum(e["dur"] for e in ops)
    run_us = trace["otherData"]["run_us"]
    check(0 < busy <= run_us * 1.0001, "%s: ops take %.1f of the run's %.1f ms" % (tag, busy / 1e3, run_us / 1e3))
    reads = [e for e in events if e.get("cat") == "weight read"]
    check(len(reads) > 0 and all(e["args"]["bytes"] > 0 for e in reads),
          "%s: %d weight reads recorded with their sizes" % (tag, len(reads)))
    return ops


def check_summary(summary, ops, tag):
    rows = parse_summary(summary)
    by_type = {}
    for e in ops:
        count, ms = by_type.get(e["name"], (0, 0.0))
        by_type[e["name"]] = (count + 1, ms + e["dur"] / 1e3)
    total = rows.pop("total", None)
    rows.pop("op", None)
    same = set(rows) == set(by_type) and all(
        rows[t][0] == by_type[t][0] and abs(rows[t][1] - by_type[t][1]) <= 0.002 * len(ops) + 0.01 for t in rows)
    check(same, "%s: the summary's %d op types, counts and times match the trace" % (tag, len(rows)))
    check(total is not None and total[0] == len(ops) and total[2] <= 100.5,
          "%s: summary total %s ops, %s%% of the run" % (tag, total and total[0], total and total[2]))


def test_yolov8n(a, run_exe, convert_exe):
    onnx_path = os.path.join(a.shared, "data", "yolov8n", "yolov8n.onnx")
    model = os.path.join(a.work, "yolov8n")
    subprocess.run([convert_exe, onnx_path, model], check=True, stdout=subprocess.DEVNULL)
    image = os.path.join(a.shared, "data", "yolov8n", "input_images_1x3x640x640_f32.bin")
    trace, summary = run_profiled(run_exe, model, [("images", image)], a.work, "yolov8n")
    ops = check_trace_shape(trace, "yolov8n")
    check_summary(summary, ops, "yolov8n")

    g = OnnxGraph(onnx_path)
    nodes = {n.name: n for n in g.nodes}
    producers = {o: n for n in g.nodes for o in n.output}
    # The converter writes each SiLU, Mul(x, Sigmoid(x)), as one Swish named after the Mul.
    swish = sum(e["name"] == "Swish" for e in ops)
    check(len(ops) + swish == len(g.nodes),
          "yolov8n: %d profiled ops (%d of them Swish, Sigmoid + Mul) for %d ONNX nodes" % (len(ops), swish, len(g.nodes)))
    bad = []
    conv_flops = 0

    def is_silu(n):
        sig = [producers.get(i) for i in n.input]
        return n.op_type == "Mul" and any(p is not None and p.op_type == "Sigmoid" and p.input[0] in n.input
                                          for p in sig)

    for e in ops:
        args = e["args"]
        n = nodes.get(args["op"])
        if n is None or (n.op_type != e["name"] and not (e["name"] == "Swish" and is_silu(n))):
            bad.append("%s: no ONNX node of type %s" % (args["op"], e["name"]))
            continue
        want_out = g.shape(n.output[0])
        got_out = [int(d) for d in re.match(r"\w+\[([\d,]*)\]", args["outputs"]).group(1).split(",") if d]
        if want_out is not None and got_out != want_out:
            bad.append("%s: output %s, ONNX %s" % (args["op"], got_out, want_out))
        want_bytes = sum(g.const_bytes.get(i, 0) for i in n.input)
        if args["weight_bytes"] != want_bytes:
            bad.append("%s: weight bytes %d, ONNX initializers %d" % (args["op"], args["weight_bytes"], want_bytes))
        if n.op_type == "Conv":
            want = g.flops(n)
            conv_flops += want or 0
            if want is None or args["flops"] != want:
                bad.append("%s: %d FLOPs, ONNX shapes give %s" % (args["op"], args["flops"], want))
        elif args["flops"] != 0:
            bad.append("%s: %s counts %d FLOPs" % (args["op"], n.op_type, args["flops"]))
    for b in bad[:10]:
        print("   " + b)
    check(not bad, "yolov8n: every op's name, type, output shape, weight bytes and FLOPs match the ONNX graph "
          "(Conv total %.3f GFLOP)" % (conv_flops / 1e9))


def test_sd_unet(a, run_exe, convert_exe):
    case = os.path.join(a.sd_cases, "sd", "unet")
    onnx_path = os.path.join(case, "model.onnx")
    model = os.path.join(a.work, "unet")
    subprocess.run([convert_exe, onnx_path, model], check=True, stdout=subprocess.DEVNULL)
    spec = json.load(open(os.path.join(case, "case.json")))
    inputs = [(i["name"], os.path.join(case, i["file"])) for i in spec["inputs"] if i.get("kind") == "input"]
    trace, summary = run_profiled(run_exe, model, inputs, a.work, "unet")
    ops = check_trace_shape(trace, "sd unet")
    check_summary(summary, ops, "sd unet")
    types = {e["name"] for e in ops}
    check({"ScaledDotProductAttention", "GegluFeedForward"} <= types,
          "sd unet: the converter fused attention and the GEGLU feed-forward (%s)" % ", ".join(sorted(types & {
              "ScaledDotProductAttention", "GegluFeedForward", "Einsum"})))

    want = torch_flops("unet")
    got = sum(e["args"]["flops"] for e in ops)
    check(got == want, "sd unet: profiled FLOPs %d == PyTorch profiler's FLOPs of its convolutions and matrix products %d" % (got, want))


def torch_flops(name):
    """FLOPs of gen_sd.py's small model `name` as torch.profiler counts them (with_flops: 2 per multiply-add of
    convolutions and matrix products; shapes are what matter, the weights' values do not)."""
    import torch
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sd"))
    import gen_sd
    for model_name, module, inputs, _ in gen_sd.make_models("small", 1234):
        if model_name == name:
            args = tuple(torch.from_numpy(arr) for _, arr in inputs)
            with torch.no_grad(), torch.profiler.profile(with_flops=True) as prof:
                module(*args)
            # Every op the profiler gives FLOPs to but the elementwise ones (which count 1 per element);
            # which ATen op carries a convolution's count differs between torch versions.
            elementwise = {"aten::mul", "aten::add", "aten::sub", "aten::div", "aten::mul_", "aten::add_"}
            return sum(e.flops for e in prof.key_averages() if e.flops and e.key not in elementwise)
    raise KeyError(name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--convert", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--sd-cases", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    run_exe, convert_exe = cross_exe.wrap(a.run), cross_exe.wrap(a.convert)
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    test_yolov8n(a, run_exe, convert_exe)
    test_sd_unet(a, run_exe, convert_exe)
    shutil.rmtree(a.work, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Generate the models of the 8-bit weight tests (onnxstream-convert --quantize w8).

OUT/models/<case>/        a float PyTorch model (model.onnx, input_<i>.npy, torch_<k>.npy; with --node ONNX
                          Runtime adds expected_<k>.npy)
OUT/models/<case>_qdq/    its QDQ twin: every weight the converter quantizes replaced by the same int8 values
                          and per-channel scales, computed here in numpy, through DequantizeLinear(axis), so
                          ONNX Runtime computes the exact reference of the quantized model
OUT/handwritten/conv_u8/  a model.txt with an OnnxStream per-tensor uint8 Conv weight, its .bin files, input
                          and numpy's output (expected_0.npy)

The selection rule mirrors src/onnx/quantize_export.cpp: float32 weights (input 1) of Conv (axis 0), Gemm
(axis 0 when transB=1, else 1) and 2-D MatMul weights (axis 1) with >= 2 dims and >= 4096 elements.
"""

import argparse
import io
import json
import os
import shutil
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))

import case_output  # noqa: E402
import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

MIN_ELEMENTS = 4096


def write_case(case_dir, model, inputs, torch_outputs=None):
    os.makedirs(case_dir, exist_ok=True)
    onnx.save(model, os.path.join(case_dir, "model.onnx"))
    meta = {"inputs": [], "outputs": []}
    for i, (name, arr) in enumerate(inputs):
        np.save(os.path.join(case_dir, f"input_{i}.npy"), arr)
        meta["inputs"].append({"index": i, "name": name, "kind": "input", "file": f"input_{i}.npy",
                               "dtype": str(arr.dtype), "shape": list(arr.shape)})
    for k, out in enumerate(model.graph.output):
        entry = {"index": k, "name": out.name, "file": f"expected_{k}.npy"}
        if torch_outputs is not None:
            np.save(os.path.join(case_dir, f"torch_{k}.npy"), torch_outputs[k])
            entry["shape"] = list(torch_outputs[k].shape)
        else:
            entry["shape"] = [d.dim_value for d in out.type.tensor_type.shape.dim]
        meta["outputs"].append(entry)
    with open(os.path.join(case_dir, "case.json"), "w") as f:
        json.dump(meta, f, indent=1)
    with open(os.path.join(case_dir, "names.txt"), "w") as f:
        for e in meta["inputs"]:
            f.write(f"input {e['index']} {e['name']}\n")
        for e in meta["outputs"]:
            f.write(f"output {e['index']} {e['name']}\n")


def torch_models():
    import torch
    import torch.nn as nn

    class SmallCnn(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 32, 3, padding=1)             # 864 weights: stays float
            self.conv2 = nn.Conv2d(32, 64, 3, stride=2, padding=1)  # 18432: int8
            self.conv3 = nn.Conv2d(64, 64, 1)                       # 4096: int8
            self.fc = nn.Linear(64, 128)                            # Gemm transB=1, 8192: int8

        def forward(self, x):
            x = torch.relu(self.conv1(x))
            x = torch.relu(self.conv2(x))
            x = torch.relu(self.conv3(x)) + x
            return self.fc(x.mean(dim=(2, 3)))

    class MlpBlock(nn.Module):
        """A transformer feed-forward block: LayerNorm, Linear (MatMul [K,N]), GELU, Linear, residual."""

        def __init__(self, d=64, ff=256):
            super().__init__()
            self.norm = nn.LayerNorm(d)
            self.fc1 = nn.Linear(d, ff)
            self.fc2 = nn.Linear(ff, d)

        def forward(self, x):
            return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(x))))

    return torch, {"cnn": (SmallCnn, (1, 3, 16, 16)), "mlp": (MlpBlock, (1, 16, 64))}


def export(torch, cls, shape, seed):
    torch.manual_seed(seed)
    model = cls().eval()
    gen = torch.Generator().manual_seed(seed + 100)
    x = torch.rand(*shape, generator=gen) * 2 - 1
    with torch.no_grad():
        out = model(x)
    buf = io.BytesIO()
    torch.onnx.export(model, (x,), buf, opset_version=17, input_names=["x"], output_names=["y"],
                      do_constant_folding=True)
    return onnx.load_from_string(buf.getvalue()), [("x", x.numpy())], [out.numpy()]


def quantize_per_channel(w, axis):
    """Symmetric int8 per channel, float32 arithmetic, round half to even, clamp +-127."""
    w = w.astype(np.float32)
    other = tuple(d for d in range(w.ndim) if d != axis)
    amax = np.abs(w).max(axis=other).astype(np.float32)
    scales = np.where(amax > 0, amax / np.float32(127), np.float32(1)).astype(np.float32)
    bshape = [1] * w.ndim
    bshape[axis] = -1
    q = np.clip(np.round(w / scales.reshape(bshape)), -127, 127).astype(np.int8)
    return q, scales


def weight_axis(node, index, arr):
    if index != 1 or arr.dtype != np.float32 or arr.ndim < 2 or arr.size < MIN_ELEMENTS:
        return None
    if node.op_type == "Conv":
        return 0
    if node.op_type == "Gemm" and arr.ndim == 2:
        trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
        return 0 if trans_b else 1
    if node.op_type == "MatMul" and arr.ndim == 2:
        return 1
    return None


def qdq_twin(model):
    """The same graph with the converter's int8 weights behind DequantizeLinear; returns (model, count)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    uses = {}
    for node in g.node:
        for k, name in enumerate(node.input):
            uses.setdefault(name, []).append((node, k))
    new_nodes, count = [], 0
    for node in g.node:
        for k, name in enumerate(node.input):
            if name not in inits or len(uses[name]) != 1:
                continue
            arr = numpy_helper.to_array(inits[name])
            axis = weight_axis(node, k, arr)
            if axis is None:
                continue
            q, scales = quantize_per_channel(arr, axis)
            g.initializer.remove(inits[name])
            g.initializer.extend([numpy_helper.from_array(q, name + "_q"),
                                  numpy_helper.from_array(scales, name + "_scale")])
            new_nodes.append(helper.make_node("DequantizeLinear", [name + "_q", name + "_scale"], [name],
                                              name=name + "_dq", axis=axis))
            count += 1
    nodes = list(g.node)
    del g.node[:]
    g.node.extend(new_nodes + nodes)
    onnx.checker.check_model(model)
    return model, count


def conv_u8_case(case_dir, rng):
    """OnnxStream's W8A32 syntax: `w_nchw.bin(uint8[scale,zero_point]:O,I,H,W)`, stored OHWI in w_nhwc.bin."""
    os.makedirs(case_dir)
    O, I, H, W = 8, 4, 3, 3
    scale, zp = 0.0035, 134
    q = rng.integers(0, 256, (O, I, H, W), dtype=np.uint8)
    b = rng.uniform(-1, 1, O).astype(np.float32)
    x = rng.uniform(-1, 1, (1, I, 7, 7)).astype(np.float32)
    q.transpose(0, 2, 3, 1).tofile(os.path.join(case_dir, "w_nhwc.bin"))
    b.tofile(os.path.join(case_dir, "b.bin"))
    w = ((q.astype(np.float32) - zp) * np.float32(scale)).astype(np.float64)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((1, O, 7, 7))
    for i in range(7):
        for j in range(7):
            y[0, :, i, j] = np.einsum("oihw,ihw->o", w, xp[0, :, i:i + 3, j:j + 3])
    y += b.reshape(1, O, 1, 1)
    with open(os.path.join(case_dir, "model.txt"), "w") as f:
        f.write(f"conv:Conv*input:x(1,{I},7,7);w_nchw.bin(uint8[{scale},{zp}]:{O},{I},{H},{W});b.bin(float32:{O})"
                f"*output:y(1,{O},7,7)*dilations:1,1;group:1;kernel_shape:3,3;pads:1,1,1,1;strides:1,1\n")
    np.save(os.path.join(case_dir, "input_0.npy"), x)
    np.save(os.path.join(case_dir, "expected_0.npy"), y.astype(np.float32))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--node")
    ap.add_argument("--stamp")
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    models_dir = os.path.join(tmp, "models")
    os.makedirs(models_dir)
    torch, specs = torch_models()
    for seed, (name, (cls, shape)) in enumerate(sorted(specs.items())):
        model, inputs, outs = export(torch, cls, shape, seed)
        write_case(os.path.join(models_dir, name), model, inputs, outs)
        twin, count = qdq_twin(model)
        if count == 0:
            sys.exit(f"gen_quant.py: {name} has no weight to quantize")
        write_case(os.path.join(models_dir, name + "_qdq"), twin, inputs)
        with open(os.path.join(models_dir, name, "quantized_count.txt"), "w") as f:
            f.write(f"{count}\n")
    rng = np.random.default_rng(11)
    conv_u8_case(os.path.join(tmp, "handwritten", "conv_u8"), rng)
    case_output.publish(tmp, out, args.node, "gen_quant.py")
    if args.stamp:
        with open(args.stamp, "w") as f:
            f.write("ok\n")


if __name__ == "__main__":
    main()

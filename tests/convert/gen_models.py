#!/usr/bin/python3
"""Generate the ONNX models of the onnxstream-convert tests.

Writes OUT/models/<case>/ with model.onnx (plus external data where the case needs it), input_<i>.npy,
torch_<k>.npy (PyTorch's own outputs, when the model comes from PyTorch) and case.json (the layout
tests/tools/ort_reference.js reads); with --node, ort_reference.js then adds expected_<k>.npy, ONNX
Runtime's outputs on the same ONNX file. OUT/bad/<case>/ holds inputs the converter must reject.

Models are small, seeded and built with Debian's python3-torch (torch.onnx.export works offline) and
python3-onnx. The output is built in OUT.tmp and renamed at the end.
"""

import argparse
import json
import math
import os
import shutil
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS_DIR = os.path.join(HERE, "..", "tools")
sys.path.insert(0, TOOLS_DIR)

import case_output  # noqa: E402
import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def write_case(case_dir, model, inputs, torch_outputs=None, output_names=None, save=None):
    """inputs: list of (name, array). torch_outputs: list of arrays in graph output order."""
    os.makedirs(case_dir, exist_ok=True)
    if save is None:
        onnx.save(model, os.path.join(case_dir, "model.onnx"))
    else:
        save(model, case_dir)
    meta = {"inputs": [], "outputs": []}
    for i, (name, arr) in enumerate(inputs):
        np.save(os.path.join(case_dir, f"input_{i}.npy"), arr)
        meta["inputs"].append({"index": i, "name": name, "kind": "input", "file": f"input_{i}.npy",
                               "dtype": str(arr.dtype), "shape": list(arr.shape)})
    names = output_names or [o.name for o in model.graph.output]
    for k, name in enumerate(names):
        entry = {"index": k, "name": name, "file": f"expected_{k}.npy"}
        if torch_outputs is not None:
            np.save(os.path.join(case_dir, f"torch_{k}.npy"), torch_outputs[k])
            entry["shape"] = list(torch_outputs[k].shape)
        else:
            vi = model.graph.output[k]
            entry["shape"] = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        meta["outputs"].append(entry)
    with open(os.path.join(case_dir, "case.json"), "w") as f:
        json.dump(meta, f, indent=1)
    # The same names in a form the C++ test reads without a JSON parser.
    with open(os.path.join(case_dir, "names.txt"), "w") as f:
        for e in meta["inputs"]:
            f.write(f"input {e['index']} {e['name']}\n")
        for e in meta["outputs"]:
            f.write(f"output {e['index']} {e['name']}\n")


# ----------------------------------------------------------------------------------------------------------
# PyTorch models

def torch_models():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class CnnBn(nn.Module):
        """Conv+BN+ReLU stages, a Conv without bias before its BN, a residual add, pooling and a Linear."""

        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
            self.bn1 = nn.BatchNorm2d(8)
            self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(16)
            self.conv3 = nn.Conv2d(16, 16, 1)
            self.bn3 = nn.BatchNorm2d(16)
            self.fc = nn.Linear(16, 10)

        def forward(self, x):
            x = F.relu(self.bn1(self.conv1(x)))
            x = F.relu(self.bn2(self.conv2(x)))
            x = F.relu(x + self.bn3(self.conv3(x)))
            x = x.mean(dim=(2, 3))
            return self.fc(x)

    class MobileNetBlock(nn.Module):
        """MobileNetV2 inverted residual: 1x1 expand, 3x3 depthwise, 1x1 project, each with BN; ReLU6."""

        def __init__(self, c=16, expand=4):
            super().__init__()
            h = c * expand
            self.expand = nn.Conv2d(c, h, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(h)
            self.dw = nn.Conv2d(h, h, 3, padding=1, groups=h, bias=False)
            self.bn2 = nn.BatchNorm2d(h)
            self.project = nn.Conv2d(h, c, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(c)
            self.dw_s2 = nn.Conv2d(c, c, 3, stride=2, padding=1, groups=c)
            self.pw = nn.Conv2d(c, 24, 1)
            self.bn4 = nn.BatchNorm2d(24)

        def forward(self, x):
            y = F.relu6(self.bn1(self.expand(x)))
            y = F.relu6(self.bn2(self.dw(y)))
            x = x + self.bn3(self.project(y))
            return F.relu6(self.bn4(self.pw(self.dw_s2(x))))

    class TransformerBlock(nn.Module):
        """Pre-norm GPT-style block: LayerNorm, fused QKV Linear, causal softmax attention, GELU MLP.
        Sizes come from x.shape, so the export is full of Shape/Gather/Concat chains to fold."""

        def __init__(self, d=64, heads=4, ff=128, max_t=32):
            super().__init__()
            self.heads = heads
            self.scale = 1.0 / math.sqrt(d // heads)
            self.ln1 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d)
            self.fc1 = nn.Linear(d, ff)
            self.fc2 = nn.Linear(ff, d)
            mask = torch.triu(torch.full((max_t, max_t), -1e4), diagonal=1)
            self.register_buffer("mask", mask)

        def forward(self, x):
            b, t, c = x.shape
            hd = c // self.heads
            q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
            q = q.view(b, t, self.heads, hd).transpose(1, 2)
            k = k.view(b, t, self.heads, hd).transpose(1, 2)
            v = v.view(b, t, self.heads, hd).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * self.scale
            att = att + self.mask[:t, :t]
            att = att.softmax(dim=-1)
            y = (att @ v).transpose(1, 2).reshape(b, t, c)
            x = x + self.proj(y)
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    return torch, {
        "cnn_bn": (CnnBn, [("input", (1, 3, 32, 32))], 13),
        "mobilenet_block": (MobileNetBlock, [("input", (1, 16, 16, 16))], 13),
        "transformer_block": (TransformerBlock, [("x", (1, 16, 64))], 17),
        "transformer_block_opset14": (TransformerBlock, [("x", (1, 16, 64))], 14),
        # The sequence length is symbolic ("seq"): converting needs --input-shape x=1,16,64.
        "transformer_block_dynamic": (TransformerBlock, [("x", (1, 16, 64))], 17, {"x": {1: "seq"}}),
    }


def export_torch(torch, cls, input_specs, opset, seed, dynamic_axes=None):
    torch.manual_seed(seed)
    model = cls().eval()
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    gen = torch.Generator().manual_seed(seed + 1)
    inputs = [torch.rand(*shape, generator=gen) * 2 - 1 for _, shape in input_specs]
    with torch.no_grad():
        outs = model(*inputs)
    outs = [outs] if isinstance(outs, torch.Tensor) else list(outs)
    import io
    buf = io.BytesIO()
    torch.onnx.export(model, tuple(inputs), buf, opset_version=opset,
                      input_names=[n for n, _ in input_specs], output_names=[f"out{k}" for k in range(len(outs))],
                      do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE,
                      dynamic_axes=dynamic_axes)
    onnx_model = onnx.load_from_string(buf.getvalue())
    return onnx_model, [(n, t.numpy()) for (n, _), t in zip(input_specs, inputs)], [o.numpy() for o in outs]


def save_external(model, case_dir):
    """Every initializer in one external file weights.bin (offset/length per tensor)."""
    onnx.save_model(model, os.path.join(case_dir, "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)


# ----------------------------------------------------------------------------------------------------------
# Hand-built ONNX graphs

def make_model(nodes, inputs, outputs, initializers=(), opset=17, functions=None, name="g"):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    kwargs = {"opset_imports": [helper.make_opsetid("", opset)], "producer_name": "onnxstream-convert-test"}
    if functions:
        kwargs["functions"] = functions
        kwargs["opset_imports"].append(helper.make_opsetid("custom.fn", 1))
    model = helper.make_model(graph, **kwargs)
    model.ir_version = 8
    return model


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def noop_model(rng):
    """Identity, Dropout (inference), Cast to float of a float, Reshape to the same shape, identity
    Transpose, single-input Concat: all must vanish, leaving the two Adds."""
    w = numpy_helper.from_array(rng.uniform(-1, 1, (2, 3, 4)).astype(np.float32), "w")
    shape = numpy_helper.from_array(np.array([2, 3, 4], dtype=np.int64), "same_shape")
    nodes = [
        helper.make_node("Identity", ["x"], ["a"], name="identity"),
        helper.make_node("Dropout", ["a"], ["b"], name="dropout"),
        helper.make_node("Cast", ["b"], ["c"], name="cast_same", to=TensorProto.FLOAT),
        helper.make_node("Add", ["c", "w"], ["d"], name="add"),
        helper.make_node("Reshape", ["d", "same_shape"], ["e"], name="reshape_same"),
        helper.make_node("Transpose", ["e"], ["f"], name="transpose_id", perm=[0, 1, 2]),
        helper.make_node("Concat", ["f"], ["g"], name="concat_one", axis=1),
        helper.make_node("Add", ["g", "g"], ["h"], name="add2"),
        helper.make_node("Identity", ["h"], ["y"], name="identity_out"),
    ]
    return make_model(nodes, [f32("x", (2, 3, 4))], [f32("y", (2, 3, 4))], [w, shape], opset=13)


def function_model():
    """A model-local function ScaledAdd(x, y) = x * alpha + y, alpha an attribute reference, called twice
    with different alphas; the converter must inline it."""
    alpha = helper.make_node("Constant", [], ["alpha"], name="alpha_const")
    ref = onnx.AttributeProto()
    ref.name = "value_float"
    ref.ref_attr_name = "alpha"
    ref.type = onnx.AttributeProto.FLOAT
    alpha.attribute.append(ref)
    fn = helper.make_function(
        "custom.fn", "ScaledAdd", ["x", "y"], ["z"],
        [alpha, helper.make_node("Mul", ["x", "alpha"], ["xs"], name="mul"),
         helper.make_node("Add", ["xs", "y"], ["z"], name="add")],
        [helper.make_opsetid("", 17)], ["alpha"])
    nodes = [
        helper.make_node("ScaledAdd", ["a", "b"], ["t"], name="call1", domain="custom.fn", alpha=2.0),
        helper.make_node("ScaledAdd", ["t", "a"], ["y"], name="call2", domain="custom.fn", alpha=-0.5),
    ]
    return make_model(nodes, [f32("a", (3, 5)), f32("b", (3, 5))], [f32("y", (3, 5))], functions=[fn])


def dead_code_model(rng):
    """A branch nobody reads (Mul -> Relu, not a graph output) and an initializer nobody uses: only the
    Add and its one weight may be written."""
    w_used = numpy_helper.from_array(rng.uniform(-1, 1, (4, 8)).astype(np.float32), "w_used")
    w_dead = numpy_helper.from_array(rng.uniform(-1, 1, (4, 8)).astype(np.float32), "w_dead")
    w_unused = numpy_helper.from_array(rng.uniform(-1, 1, (100,)).astype(np.float32), "w_unused")
    nodes = [
        helper.make_node("Mul", ["x", "w_dead"], ["dead"], name="dead_mul"),
        helper.make_node("Add", ["x", "w_used"], ["y"], name="live_add"),
        helper.make_node("Relu", ["dead"], ["dead2"], name="dead_relu"),
    ]
    return make_model(nodes, [f32("x", (4, 8))], [f32("y", (4, 8))], [w_used, w_dead, w_unused])


def fold_limit_model():
    """Two Expands of a constant: to 16x16 (1 KiB, folded) and to 1024x1024 (4 MiB from 12 bytes of
    inputs: folding would inflate the model, so it must stay an op)."""
    c = numpy_helper.from_array(np.array([0.5], dtype=np.float32), "half")
    small = numpy_helper.from_array(np.array([16, 16], dtype=np.int64), "small_shape")
    big = numpy_helper.from_array(np.array([1024, 1024], dtype=np.int64), "big_shape")
    nodes = [
        helper.make_node("Expand", ["half", "small_shape"], ["small_fill"], name="expand_small"),
        helper.make_node("Expand", ["half", "big_shape"], ["big_fill"], name="expand_big"),
        helper.make_node("Add", ["a", "small_fill"], ["y"], name="add_small"),
        helper.make_node("Add", ["b", "big_fill"], ["z"], name="add_big"),
    ]
    return make_model(nodes, [f32("a", (16, 16)), f32("b", (1024, 1024))], [f32("y", (16, 16)), f32("z", (1024, 1024))],
                      [c, small, big])


def old_opset_model(rng):
    """Opset 9 (before the importer's minimum of 11): Unsqueeze takes axes as an attribute, Upsample has
    not become Resize. ONNX's version converter must bring it up to 11."""
    w = numpy_helper.from_array(rng.uniform(-1, 1, (1, 3, 1, 1)).astype(np.float32), "w")
    nodes = [
        helper.make_node("Unsqueeze", ["x"], ["x4"], name="unsqueeze", axes=[0]),
        helper.make_node("Add", ["x4", "w"], ["s"], name="add"),
        helper.make_node("Relu", ["s"], ["y"], name="relu"),
    ]
    return make_model(nodes, [f32("x", (3, 4, 4))], [f32("y", (1, 3, 4, 4))], [w], opset=9)


def big_offset_model(case_dir, rng):
    """A weight stored 5 GB into a sparse external data file: offsets past 4 GB must work (models over
    2 GB keep their weights this way). The file's holes take no disk space."""
    w = rng.uniform(-1, 1, (4, 4)).astype(np.float32)
    offset = 5 * 1024 ** 3
    with open(os.path.join(case_dir, "big.data"), "wb") as f:
        f.seek(offset)
        f.write(w.tobytes())
    t = onnx.TensorProto()
    t.name = "w"
    t.data_type = TensorProto.FLOAT
    t.dims.extend([4, 4])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "big.data"), ("offset", str(offset)), ("length", str(w.nbytes))):
        e = t.external_data.add()
        e.key, e.value = k, v
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")]
    return make_model(nodes, [f32("x", (2, 4))], [f32("y", (2, 4))], [t])


def unsupported_model():
    """Two ops no engine has: a custom-domain op (twice) and ONNX's Det."""
    nodes = [
        helper.make_node("Frobnicate", ["x"], ["a"], name="frob_first", domain="com.example"),
        helper.make_node("Frobnicate", ["a"], ["b"], name="frob_second", domain="com.example"),
        helper.make_node("Det", ["b"], ["y"], name="det"),
    ]
    model = make_model(nodes, [f32("x", (2, 4, 4))], [f32("y", (2,))])
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    return model


def cycle_model():
    """y = x + z, z = Relu(y): a cycle (ONNX forbids it; the converter must say so)."""
    nodes = [
        helper.make_node("Add", ["x", "z"], ["y"], name="add_in_cycle"),
        helper.make_node("Relu", ["y"], ["z"], name="relu_in_cycle"),
        helper.make_node("Neg", ["y"], ["out"], name="after_cycle"),
    ]
    return make_model(nodes, [f32("x", (4,))], [f32("out", (4,))])


# ----------------------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder (replaced)")
    ap.add_argument("--node", help="node executable: also compute ONNX Runtime's outputs")
    ap.add_argument("--stamp", help="file to write when everything was generated")
    args = ap.parse_args()

    out = os.path.abspath(args.out)
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    models_dir = os.path.join(tmp, "models")
    bad_dir = os.path.join(tmp, "bad")
    os.makedirs(models_dir)
    os.makedirs(bad_dir)

    torch, specs = torch_models()
    for seed, (name, spec) in enumerate(sorted(specs.items())):
        cls, input_specs, opset = spec[:3]
        model, inputs, outs = export_torch(torch, cls, input_specs, opset, seed, spec[3] if len(spec) > 3 else None)
        write_case(os.path.join(models_dir, name), model, inputs, outs)
        if name == "cnn_bn":
            write_case(os.path.join(models_dir, "cnn_bn_external"), model, inputs, outs, save=save_external)

    rng = np.random.default_rng(7)
    write_case(os.path.join(models_dir, "noop_ops"), noop_model(rng),
               [("x", rng.uniform(-1, 1, (2, 3, 4)).astype(np.float32))])
    write_case(os.path.join(models_dir, "dead_code"), dead_code_model(rng),
               [("x", rng.uniform(-1, 1, (4, 8)).astype(np.float32))])
    write_case(os.path.join(models_dir, "fold_limit"), fold_limit_model(),
               [("a", rng.uniform(-1, 1, (16, 16)).astype(np.float32)),
                ("b", rng.uniform(-1, 1, (1024, 1024)).astype(np.float32))])
    write_case(os.path.join(models_dir, "old_opset"), old_opset_model(rng),
               [("x", rng.uniform(-1, 1, (3, 4, 4)).astype(np.float32))])
    big_dir = os.path.join(models_dir, "big_offset")
    os.makedirs(big_dir)
    write_case(big_dir, big_offset_model(big_dir, rng), [("x", rng.uniform(-1, 1, (2, 4)).astype(np.float32))])
    write_case(os.path.join(models_dir, "local_function"), function_model(),
               [("a", rng.uniform(-1, 1, (3, 5)).astype(np.float32)),
                ("b", rng.uniform(-1, 1, (3, 5)).astype(np.float32))])

    # Bad inputs: no case.json, so ONNX Runtime skips them.
    with open(os.path.join(models_dir, "cnn_bn", "model.onnx"), "rb") as f:
        whole = f.read()
    os.makedirs(os.path.join(bad_dir, "truncated"))
    with open(os.path.join(bad_dir, "truncated", "model.onnx"), "wb") as f:
        f.write(whole[:len(whole) // 2])
    os.makedirs(os.path.join(bad_dir, "missing_external"))
    shutil.copy(os.path.join(models_dir, "cnn_bn_external", "model.onnx"),
                os.path.join(bad_dir, "missing_external", "model.onnx"))
    too_new = make_model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [f32("x", (4,))], [f32("y", (4,))],
                         opset=99)
    for name, model in [("unsupported", unsupported_model()), ("cycle", cycle_model()), ("opset_too_new", too_new)]:
        os.makedirs(os.path.join(bad_dir, name))
        onnx.save(model, os.path.join(bad_dir, name, "model.onnx"))

    case_output.publish(tmp, out, args.node, "gen_models.py")
    if args.stamp:
        with open(args.stamp, "w") as f:
            f.write("ok\n")


if __name__ == "__main__":
    main()

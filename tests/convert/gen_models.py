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
import warnings

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

    class SharedOutput(nn.Module):
        """Returns y, which the graph also reads (z = y * 2 + 1): model.txt alone cannot list it as an output."""

        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, x):
            y = torch.relu(self.fc(x))
            return y, y * 2.0 + 1.0

    return torch, {
        "shared_output": (SharedOutput, [("x", (2, 8))], 17),
        "cnn_bn": (CnnBn, [("input", (1, 3, 32, 32))], 13),
        "mobilenet_block": (MobileNetBlock, [("input", (1, 16, 16, 16))], 13),
        "transformer_block": (TransformerBlock, [("x", (1, 16, 64))], 17),
        "transformer_block_opset14": (TransformerBlock, [("x", (1, 16, 64))], 14),
        # The sequence length is symbolic ("seq"): converting needs --input-shape x=1,16,64.
        "transformer_block_dynamic": (TransformerBlock, [("x", (1, 16, 64))], 17, {"x": {1: "seq"}}),
    }


def torch_recurrent_models(torch):
    """PyTorch's recurrent layers, exported as ONNX LSTM/GRU/RNN nodes (seeded apart from torch_models' ones, so
    adding a model here changes no other model's weights)."""
    nn = torch.nn

    class LstmStack(nn.Module):
        """nn.LSTM: 2 layers, bidirectional, batch_first; returns the sequence and the final h and c."""

        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(16, 32, num_layers=2, bidirectional=True, batch_first=True)

        def forward(self, x):
            y, (h, c) = self.lstm(x)
            return y, h, c

    class GruWithState(nn.Module):
        """nn.GRU (batch_first) from a given initial state, then a Linear on its outputs."""

        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(12, 24, batch_first=True)
            self.fc = nn.Linear(24, 5)

        def forward(self, x, h0):
            y, h = self.gru(x, h0)
            return self.fc(y), h

    class RnnLastState(nn.Module):
        """nn.RNN (ReLU, bidirectional) of which only the final state is used."""

        def __init__(self):
            super().__init__()
            self.rnn = nn.RNN(10, 20, nonlinearity="relu", bidirectional=True)

        def forward(self, x):
            _, h = self.rnn(x)
            return h

    return {
        "lstm_stack": (LstmStack, [("x", (2, 7, 16))], 14),
        "gru_with_state": (GruWithState, [("x", (3, 6, 12)), ("h0", (1, 3, 24))], 13),
        "rnn_last_state": (RnnLastState, [("x", (5, 2, 10))], 15),
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


def malformed_models():
    """Graphs the importer's validation rejects before any ONNX library pass sees them (convert_test.cpp's
    MalformedGraphs lists the status and message each must give). onnx.save does not check models."""
    x = [f32("x", (1, 4, 5, 5))]
    y = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    w = numpy_helper.from_array(np.ones((8, 4, 3, 3), np.float32), "w")
    out = {}
    out["arity_missing_input"] = make_model([helper.make_node("Add", ["x"], ["y"], name="add_one")], x, y)
    out["arity_extra_output"] = make_model([helper.make_node("Relu", ["x"], ["y", "z"], name="relu_two")], x, y)
    out["required_input_empty"] = make_model([helper.make_node("Conv", ["x", ""], ["y"], name="conv_no_w")], x, y)
    wrong = helper.make_node("Transpose", ["x"], ["y"], name="transpose_float_perm")
    wrong.attribute.append(helper.make_attribute("perm", [0.0, 1.0, 3.0, 2.0]))
    out["attr_wrong_type"] = make_model([wrong], x, y)
    out["attr_unknown"] = make_model([helper.make_node("Relu", ["x"], ["y"], name="relu_alpha", alpha=0.5)], x, y)
    out["attr_required_missing"] = make_model([helper.make_node("Cast", ["x"], ["y"], name="cast_no_to")], x, y)
    out["dangling_name"] = make_model([helper.make_node("Add", ["x", "ghost"], ["y"], name="add_ghost")], x, y)
    out["output_written_twice"] = make_model([helper.make_node("Relu", ["x"], ["y"], name="first"),
                                              helper.make_node("Neg", ["x"], ["y"], name="second")], x, y)
    short = numpy_helper.from_array(np.ones((2, 4), np.float32), "w_short")
    short.raw_data = short.raw_data[:28]
    out["initializer_raw_size"] = make_model([helper.make_node("Add", ["x", "w_short"], ["y"], name="add")],
                                             [f32("x", (2, 4))], y, [short])
    typed = helper.make_tensor("w_typed", TensorProto.FLOAT, [2, 4], [1.0] * 8)
    del typed.float_data[7]
    out["initializer_typed_count"] = make_model([helper.make_node("Add", ["x", "w_typed"], ["y"], name="add")],
                                                [f32("x", (2, 4))], y, [typed])
    huge = TensorProto(name="w_huge", data_type=TensorProto.FLOAT, dims=[1 << 32, 1 << 32, 4])
    out["initializer_count_overflow"] = make_model([helper.make_node("Add", ["x", "w_huge"], ["y"], name="add")],
                                                   x, y, [huge])
    w3 = numpy_helper.from_array(np.ones((8, 4, 3), np.float32), "w3")
    out["conv_weight_rank"] = make_model([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                                          helper.make_node("Conv", ["r", "w3"], ["y"], name="conv_rank")], x, y, [w3])
    out["conv_zero_stride"] = make_model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv_stride",
                                                           strides=[1, 0])], x, y, [w])
    w1 = numpy_helper.from_array(np.ones((8,), np.float32), "w1")
    out["convtranspose_weight_rank1"] = make_model(
        [helper.make_node("ConvTranspose", ["x", "w1"], ["y"], name="deconv", kernel_shape=[3, 3])], x, y, [w1])
    then_g = helper.make_graph([helper.make_node("Add", ["x", "ghost"], ["t"], name="then_add")], "then", [],
                               [f32("t", (1, 4, 5, 5))])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="else_neg")], "else", [],
                               [f32("e", (1, 4, 5, 5))])
    out["subgraph_dangling_name"] = make_model(
        [helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then_g, else_branch=else_g)],
        x + [helper.make_tensor_value_info("c", TensorProto.BOOL, [])], y)
    out["upsample9_no_scales"] = make_model(
        [helper.make_node("Upsample", ["x"], ["y"], name="upsample", mode="nearest")], x, y, opset=9)
    return out


# Simplification passes: each model holds the pattern, and a copy of it the pass must leave alone.

def i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def dedup_model(rng):
    """w_a and w_c hold the same bytes under two names (merged into one file); w_b has the same shape but
    other values, and w_d the same values but another shape (both kept)."""
    same = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    inits = [numpy_helper.from_array(same, "w_a"), numpy_helper.from_array(same.copy(), "w_c"),
             numpy_helper.from_array(rng.uniform(-1, 1, (3, 4)).astype(np.float32), "w_b"),
             numpy_helper.from_array(same.reshape(1, 3, 4).copy(), "w_d")]
    nodes = [
        helper.make_node("Add", ["x", "w_a"], ["a"], name="add_a"),
        helper.make_node("Mul", ["a", "w_b"], ["b"], name="mul_b"),
        helper.make_node("Sub", ["b", "w_c"], ["c"], name="sub_c"),
        helper.make_node("Add", ["c", "w_d"], ["y"], name="add_d"),
    ]
    return make_model(nodes, [f32("x", (2, 3, 4))], [f32("y", (2, 3, 4))], inits, opset=13)


def fuse_chains_model():
    """Transpose pairs (one composing to the identity, one to a single Transpose, one whose middle value
    is also a graph output: kept), a Reshape/Unsqueeze/Flatten/Reshape chain (one Reshape), an Unsqueeze
    whose output is read twice (kept), Slices on disjoint axes (one Slice) and on the same axis (kept)."""
    nodes = [
        helper.make_node("Transpose", ["x"], ["t1"], name="t_id_1", perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["t1"], ["t2"], name="t_id_2", perm=[0, 3, 1, 2]),
        helper.make_node("Relu", ["t2"], ["out_identity"], name="relu_identity"),
        helper.make_node("Transpose", ["x"], ["u1"], name="t_pair_1", perm=[1, 0, 2, 3]),
        helper.make_node("Transpose", ["u1"], ["out_pair"], name="t_pair_2", perm=[0, 1, 3, 2]),
        helper.make_node("Transpose", ["x"], ["v1"], name="t_shared_1", perm=[0, 1, 3, 2]),
        helper.make_node("Transpose", ["v1"], ["out_shared"], name="t_shared_2", perm=[0, 2, 1, 3]),
        helper.make_node("Sigmoid", ["v1"], ["out_shared_mid"], name="sigmoid_shared"),
        helper.make_node("Reshape", ["x", "shape_6_20"], ["r1"], name="reshape_1"),
        helper.make_node("Unsqueeze", ["r1", "axes_0"], ["r2"], name="unsqueeze_2"),
        helper.make_node("Flatten", ["r2"], ["r3"], name="flatten_3", axis=2),
        helper.make_node("Reshape", ["r3", "shape_3_40"], ["r4"], name="reshape_4"),
        helper.make_node("Relu", ["r4"], ["out_reshape"], name="relu_reshape"),
        helper.make_node("Unsqueeze", ["x", "axes_0"], ["q1"], name="unsqueeze_shared"),
        helper.make_node("Squeeze", ["q1", "axes_0"], ["q2"], name="squeeze_after_shared"),
        helper.make_node("Neg", ["q2"], ["out_q"], name="neg_q"),
        helper.make_node("Neg", ["q1"], ["out_q_mid"], name="neg_q_mid"),
        helper.make_node("Slice", ["x", "s_start_1", "s_end_3", "s_axis_1"], ["s1"], name="slice_1"),
        helper.make_node("Slice", ["s1", "s_start_0", "s_end_5", "s_axis_m1", "s_step_2"], ["out_slice"],
                         name="slice_2"),
        helper.make_node("Slice", ["x", "s_start_0", "s_end_3", "s_axis_2"], ["p1"], name="slice_same_1"),
        helper.make_node("Slice", ["p1", "s_start_1", "s_end_3", "s_axis_2"], ["out_slice_same"],
                         name="slice_same_2"),
    ]
    inits = [i64("shape_6_20", [6, 20]), i64("shape_3_40", [3, 40]), i64("axes_0", [0]),
             i64("s_start_0", [0]), i64("s_start_1", [1]), i64("s_end_3", [3]), i64("s_end_5", [5]),
             i64("s_axis_1", [1]), i64("s_axis_2", [2]), i64("s_axis_m1", [-1]), i64("s_step_2", [2])]
    outputs = [f32("out_identity", (2, 3, 4, 5)), f32("out_pair", (3, 2, 5, 4)), f32("out_shared", (2, 5, 3, 4)),
               f32("out_shared_mid", (2, 3, 5, 4)), f32("out_reshape", (3, 40)), f32("out_q", (2, 3, 4, 5)),
               f32("out_q_mid", (1, 2, 3, 4, 5)), f32("out_slice", (2, 2, 4, 3)),
               f32("out_slice_same", (2, 3, 2, 5))]
    return make_model(nodes, [f32("x", (2, 3, 4, 5))], outputs, inits, opset=13)


def fuse_pad_model(rng):
    """Pads folded into a Conv (added to its own pads), an AveragePool (count_include_pad switched on) and a
    MaxPool (-inf padding); left alone: zero padding before a MaxPool, -inf padding as wide as the MaxPool
    window (a window wholly in it gives -inf, in the pool's own padding the lowest float), a Pad read twice,
    a Pad of channels and a reflect Pad."""
    w = numpy_helper.from_array(rng.uniform(-1, 1, (4, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.uniform(-1, 1, (4,)).astype(np.float32), "b")
    inits = [w, b, i64("pads_hw", [0, 0, 1, 2, 0, 0, 2, 1]), i64("pads_c", [0, 1, 1, 1, 0, 0, 1, 1]),
             i64("pads_1", [0, 0, 1, 1, 0, 0, 1, 1]),
             numpy_helper.from_array(np.array(-np.inf, dtype=np.float32), "minus_inf"),
             numpy_helper.from_array(np.array(-100, dtype=np.float32), "minus_100")]
    nodes = [
        helper.make_node("Pad", ["x", "pads_hw"], ["p_conv"], name="pad_conv"),
        helper.make_node("Conv", ["p_conv", "w", "b"], ["out_conv"], name="conv", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("Pad", ["x", "pads_hw"], ["p_avg"], name="pad_avg"),
        helper.make_node("AveragePool", ["p_avg"], ["out_avg"], name="avg", kernel_shape=[3, 3]),
        helper.make_node("Pad", ["x", "pads_1", "minus_inf"], ["p_max"], name="pad_max_inf"),
        helper.make_node("MaxPool", ["p_max"], ["out_max"], name="max_inf", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Pad", ["x", "pads_hw", "minus_inf"], ["p_max_wide"], name="pad_max_inf_wide"),
        helper.make_node("MaxPool", ["p_max_wide"], ["m_wide"], name="max_inf_wide", kernel_shape=[2, 2],
                         strides=[2, 2]),
        # Windows wholly in the padding give -inf: clamp so the output compares as numbers.
        helper.make_node("Max", ["m_wide", "minus_100"], ["out_max_wide"], name="clamp_wide"),
        helper.make_node("Pad", ["x", "pads_hw"], ["p_max0"], name="pad_max_zero"),
        helper.make_node("MaxPool", ["p_max0"], ["out_max0"], name="max_zero", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Pad", ["x", "pads_hw"], ["p_shared"], name="pad_shared"),
        helper.make_node("Conv", ["p_shared", "w", "b"], ["out_conv_shared"], name="conv_shared", kernel_shape=[3, 3]),
        helper.make_node("Relu", ["p_shared"], ["out_pad_shared"], name="relu_shared"),
        helper.make_node("Pad", ["x", "pads_c"], ["p_chan"], name="pad_channels"),
        helper.make_node("AveragePool", ["p_chan"], ["out_avg_chan"], name="avg_chan", kernel_shape=[3, 3],
                         count_include_pad=1),
        helper.make_node("Pad", ["x", "pads_hw"], ["p_refl"], name="pad_reflect", mode="reflect"),
        helper.make_node("Conv", ["p_refl", "w"], ["out_conv_reflect"], name="conv_reflect", kernel_shape=[3, 3]),
    ]
    outputs = [f32("out_conv", (1, 4, 11, 11)), f32("out_avg", (1, 3, 9, 9)), f32("out_max", (1, 3, 5, 5)),
               f32("out_max_wide", (1, 3, 5, 5)), f32("out_max0", (1, 3, 5, 5)), f32("out_conv_shared", (1, 4, 9, 9)),
               f32("out_pad_shared", (1, 3, 11, 11)), f32("out_avg_chan", (1, 4, 8, 8)),
               f32("out_conv_reflect", (1, 4, 9, 9))]
    return make_model(nodes, [f32("x", (1, 3, 8, 8))], outputs, inits, opset=13)


def matmul_add_model(rng, m=4, k=16, n=8, bias_is_input=False):
    """MatMul + Add with the bias on either side (both become Gemm), a 3-D MatMul + Add (a MatMul with the
    bias as its third input); left alone: a MatMul whose product is also read by a Relu. bias_is_input: the bias is a graph input, so nothing fuses (the
    speed reference)."""
    def arr(*shape):
        return rng.uniform(-1, 1, shape).astype(np.float32)
    inits = [numpy_helper.from_array(arr(k, n), "w"), numpy_helper.from_array(arr(m, n), "bias_mn")]
    inputs = [f32("x", (m, k))]
    if bias_is_input:
        inputs.append(f32("bias_n", (n,)))
        nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"], name="matmul"),
                 helper.make_node("Add", ["mm", "bias_n"], ["y"], name="add")]
        return make_model(nodes, inputs, [f32("y", (m, n))], inits[:1], opset=13)
    inits.append(numpy_helper.from_array(arr(n), "bias_n"))
    inputs.append(f32("x3", (2, m, k)))
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["mm1"], name="matmul_1"),
        helper.make_node("Add", ["mm1", "bias_n"], ["out_gemm"], name="add_1"),
        helper.make_node("MatMul", ["x", "w"], ["mm2"], name="matmul_2"),
        helper.make_node("Add", ["bias_mn", "mm2"], ["out_gemm_left"], name="add_2"),
        helper.make_node("MatMul", ["x3", "w"], ["mm3"], name="matmul_3d"),
        helper.make_node("Add", ["mm3", "bias_n"], ["out_3d"], name="add_3d"),
        helper.make_node("MatMul", ["x", "w"], ["mm_shared"], name="matmul_shared"),
        helper.make_node("Add", ["mm_shared", "bias_n"], ["out_add_shared"], name="add_shared"),
        helper.make_node("Relu", ["mm_shared"], ["out_relu_shared"], name="relu_shared"),
    ]
    outputs = [f32("out_gemm", (m, n)), f32("out_gemm_left", (m, n)), f32("out_3d", (2, m, n)),
               f32("out_add_shared", (m, n)), f32("out_relu_shared", (m, n))]
    return make_model(nodes, inputs, outputs, inits, opset=13)


def conv1d_model(rng, opset):
    """Three 1-D Convs (padded; grouped with stride and dilation; back to back with the previous one, so
    the Squeeze/Unsqueeze between them cancels)."""
    def arr(*shape):
        return rng.uniform(-1, 1, shape).astype(np.float32)
    inits = [numpy_helper.from_array(arr(8, 4, 3), "w_a"), numpy_helper.from_array(arr(8), "b_a"),
             numpy_helper.from_array(arr(8, 2, 5), "w_b"), numpy_helper.from_array(arr(6, 8, 1), "w_c")]
    nodes = [
        helper.make_node("Conv", ["x", "w_a", "b_a"], ["a"], name="conv_a", pads=[1, 1], kernel_shape=[3]),
        helper.make_node("Relu", ["a"], ["ra"], name="relu"),
        helper.make_node("Conv", ["ra", "w_b"], ["b"], name="conv_b", group=4, strides=[2], dilations=[2],
                         pads=[2, 3]),
        helper.make_node("Conv", ["b", "w_c"], ["y"], name="conv_c", auto_pad="SAME_UPPER"),
    ]
    return make_model(nodes, [f32("x", (1, 4, 32))], [f32("y", (1, 6, 15))], inits, opset=opset)


# ----------------------------------------------------------------------------------------------------------

def index_ops_model():
    """TopK -> OneHot of its indices (constant depth: ONNX's inference leaves that dimension open, the importer
    fills it in) -> CumSum -> GatherND, then ScatterElements of the TopK values into it: a chain of the
    index ops whose every shape the converter must know."""
    inits = [numpy_helper.from_array(np.array([3], np.int64), "k"),
             numpy_helper.from_array(np.array(6, np.int64), "depth"),
             numpy_helper.from_array(np.array([0, 1], np.float32), "on_off"),
             numpy_helper.from_array(np.array(-1, np.int64), "axis"),
             numpy_helper.from_array(np.array([[0, 1], [1, -1]], np.int64), "nd_idx"),
             numpy_helper.from_array(np.array([[0, 5, 3], [2, -4, 1]], np.int64), "el_idx")]
    nodes = [
        helper.make_node("TopK", ["x", "k"], ["values", "indices"], name="topk"),
        helper.make_node("OneHot", ["indices", "depth", "on_off"], ["hot"], name="one_hot"),
        helper.make_node("CumSum", ["hot", "axis"], ["sums"], name="cumsum", exclusive=1),
        helper.make_node("GatherND", ["sums", "nd_idx"], ["picked"], name="gather_nd"),
        helper.make_node("ScatterElements", ["picked", "el_idx", "values"], ["y"], name="scatter",
                         axis=1, reduction="add"),
    ]
    return make_model(nodes, [f32("x", (2, 6))], [f32("y", (2, 6))], inits, opset=16)


def lstm_attributes_model(rng):
    """An LSTM whose attributes are lists: activations (strings) and activation_alpha/beta (floats), plus clip
    and peepholes; model.txt must carry them as written."""
    h, i = 8, 6
    def arr(*shape):
        return rng.uniform(-0.4, 0.4, shape).astype(np.float32)
    inits = [numpy_helper.from_array(arr(1, 4 * h, i), "W"), numpy_helper.from_array(arr(1, 4 * h, h), "R"),
             numpy_helper.from_array(arr(1, 8 * h), "B"), numpy_helper.from_array(arr(1, 3 * h), "P")]
    node = helper.make_node("LSTM", ["x", "W", "R", "B", "", "", "", "P"], ["y", "y_h"], name="lstm", hidden_size=h,
                            activations=["HardSigmoid", "Tanh", "ScaledTanh"], activation_alpha=[0.25, 0.8],
                            activation_beta=[0.55, 1.25], clip=2.5)
    return make_model([node], [f32("x", (4, 2, i))], [f32("y", (4, 1, 2, h)), f32("y_h", (1, 2, h))], inits,
                      opset=14)


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
    for seed, (name, (cls, input_specs, opset)) in enumerate(sorted(torch_recurrent_models(torch).items()), 100):
        with warnings.catch_warnings():
            # About running the export at another batch size than the traced one; these shapes are fixed.
            warnings.filterwarnings("ignore", message="Exporting a model to ONNX with a batch_size other than 1")
            model, inputs, outs = export_torch(torch, cls, input_specs, opset, seed)
        write_case(os.path.join(models_dir, name), model, inputs, outs)

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

    def rand(*shape):
        return rng.uniform(-1, 1, shape).astype(np.float32)
    dedup = dedup_model(rng)
    write_case(os.path.join(models_dir, "dedup_constants"), dedup, [("x", rand(2, 3, 4))])
    write_case(os.path.join(models_dir, "dedup_constants_external"), dedup, [("x", rand(2, 3, 4))],
               save=save_external)
    write_case(os.path.join(models_dir, "fuse_chains"), fuse_chains_model(), [("x", rand(2, 3, 4, 5))])
    write_case(os.path.join(models_dir, "fuse_pad"), fuse_pad_model(rng), [("x", rand(1, 3, 8, 8))])
    write_case(os.path.join(models_dir, "matmul_add"), matmul_add_model(rng),
               [("x", rand(4, 16)), ("x3", rand(2, 4, 16))])
    write_case(os.path.join(models_dir, "conv1d"), conv1d_model(rng, 13), [("x", rand(1, 4, 32))])
    write_case(os.path.join(models_dir, "conv1d_opset11"), conv1d_model(rng, 11), [("x", rand(1, 4, 32))])
    write_case(os.path.join(models_dir, "index_ops"), index_ops_model(), [("x", rand(2, 6))])
    write_case(os.path.join(models_dir, "lstm_attributes"), lstm_attributes_model(rng), [("x", rand(4, 2, 6))])

    # Bad inputs: no case.json, so ONNX Runtime skips them.
    with open(os.path.join(models_dir, "cnn_bn", "model.onnx"), "rb") as f:
        whole = f.read()
    os.makedirs(os.path.join(bad_dir, "truncated"))
    with open(os.path.join(bad_dir, "truncated", "model.onnx"), "wb") as f:
        f.write(whole[:len(whole) // 2])
    os.makedirs(os.path.join(bad_dir, "missing_external"))
    shutil.copy(os.path.join(models_dir, "cnn_bn_external", "model.onnx"),
                os.path.join(bad_dir, "missing_external", "model.onnx"))
    # The same external-data model whose data file is a link to a file outside its folder.
    os.makedirs(os.path.join(bad_dir, "external_link_outside"))
    shutil.copy(os.path.join(models_dir, "cnn_bn_external", "model.onnx"),
                os.path.join(bad_dir, "external_link_outside", "model.onnx"))
    os.symlink(os.path.join("..", "..", "models", "cnn_bn_external", "weights.bin"),
               os.path.join(bad_dir, "external_link_outside", "weights.bin"))
    too_new = make_model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [f32("x", (4,))], [f32("y", (4,))],
                         opset=99)
    bad_models = [("unsupported", unsupported_model()), ("cycle", cycle_model()), ("opset_too_new", too_new)]
    for name, model in bad_models + sorted(malformed_models().items()):
        os.makedirs(os.path.join(bad_dir, name))
        onnx.save(model, os.path.join(bad_dir, name, "model.onnx"))

    case_output.publish(tmp, out, args.node, "gen_models.py")
    if args.stamp:
        with open(args.stamp, "w") as f:
            f.write("ok\n")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Generate the models of the importer recognition-pass tests (GroupNorm, LayerNorm, GELU, attention).

Writes OUT/models/<case>/ with model.onnx exported by torch.onnx.export at opset 13 or 14 (the opsets
where these ops are decomposed), input_<i>.npy, torch_<k>.npy, case.json and names.txt (the layout
tests/tools/ort_reference.js and tests/common/conversion_util.cpp read), plus expect.txt: one
"<op type> <count>" line per op whose count the converted model.txt must have. With --node, ONNX Runtime
adds expected_<k>.npy. The output is built in OUT.tmp and renamed at the end.
"""

import argparse
import io
import json
import math
import os
import shutil
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))

import case_output  # noqa: E402
import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def write_case(case_dir, model, inputs, outputs, expect):
    os.makedirs(case_dir)
    onnx.save(model, os.path.join(case_dir, "model.onnx"))
    meta = {"inputs": [], "outputs": []}
    for i, (name, arr) in enumerate(inputs):
        np.save(os.path.join(case_dir, f"input_{i}.npy"), arr)
        meta["inputs"].append({"index": i, "name": name, "kind": "input", "file": f"input_{i}.npy",
                               "dtype": str(arr.dtype), "shape": list(arr.shape)})
    for k, out in enumerate(outputs):
        np.save(os.path.join(case_dir, f"torch_{k}.npy"), out)
        meta["outputs"].append({"index": k, "name": model.graph.output[k].name, "file": f"expected_{k}.npy",
                                "shape": list(out.shape)})
    with open(os.path.join(case_dir, "case.json"), "w") as f:
        json.dump(meta, f, indent=1)
    with open(os.path.join(case_dir, "names.txt"), "w") as f:
        for e in meta["inputs"]:
            f.write(f"input {e['index']} {e['name']}\n")
        for e in meta["outputs"]:
            f.write(f"output {e['index']} {e['name']}\n")
    with open(os.path.join(case_dir, "expect.txt"), "w") as f:
        for op, count in expect.items():
            f.write(f"{op} {count}\n")


def export(module, input_specs, opset, seed):
    torch.manual_seed(seed)
    model = module().eval()
    with torch.no_grad():  # non-trivial affine parameters, so a dropped gamma/beta shows
        for name, p in model.named_parameters():
            if name.endswith("weight") and p.dim() == 1:
                p.uniform_(0.5, 1.5)
            elif name.endswith("bias") and p.dim() == 1:
                p.uniform_(-0.5, 0.5)
    gen = torch.Generator().manual_seed(seed + 1)
    inputs = [torch.rand(*shape, generator=gen) * 4 - 2 for _, shape in input_specs]
    with torch.no_grad():
        outs = model(*inputs)
    outs = [outs] if isinstance(outs, torch.Tensor) else list(outs)
    buf = io.BytesIO()
    torch.onnx.export(model, tuple(inputs), buf, opset_version=opset,
                      input_names=[n for n, _ in input_specs], output_names=[f"out{k}" for k in range(len(outs))],
                      do_constant_folding=False)
    return onnx.load_from_string(buf.getvalue()), [(n, t.numpy()) for (n, _), t in zip(input_specs, inputs)], \
        [o.numpy() for o in outs]


# ----------------------------------------------------------------------------------------------------------
# Modules

class GroupNorm4d(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.GroupNorm(4, 16, eps=1e-6)

    def forward(self, x):
        return self.norm(x)


class GroupNormVae(nn.Module):
    """The VAE attention's GroupNorm on a (B, C, H*W) tensor, a SiLU (Swish), then one with a group per channel
    and no affine (its reshapes are no-ops: it stays an InstanceNormalization with the export's Mul(1)/Add(0)
    folded in)."""

    def __init__(self):
        super().__init__()
        self.norm = nn.GroupNorm(2, 8)
        self.plain = nn.GroupNorm(8, 8, affine=False)

    def forward(self, x):
        return self.plain(F.silu(self.norm(x)))


class GroupNormSiluShared(nn.Module):
    """A GroupNorm read by a SiLU and by an Add: the SiLU does not join the norm (GroupNormSwish), since the Add
    needs the norm's own output."""

    def __init__(self):
        super().__init__()
        self.norm = nn.GroupNorm(4, 16)

    def forward(self, x):
        y = self.norm(x)
        return F.silu(y) + y


class GroupNormVaeView(nn.Module):
    """diffusers' VAE attention: GroupNorm applied to a (B, C, H*W) view of a (B, C, H, W) tensor between
    transposes, so after the importer merges the views the GroupNorm's reshapes no longer mirror each other."""

    def __init__(self):
        super().__init__()
        self.norm = nn.GroupNorm(4, 16, eps=1e-6)

    def forward(self, x):
        b, c, h, w = x.shape
        y = x.view(b, c, h * w).transpose(1, 2)
        y = self.norm(y.transpose(1, 2)).transpose(1, 2)
        return y * 3.0


class LayerNormLast(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(32)
        self.plain = nn.LayerNorm(32, elementwise_affine=False, eps=1e-6)

    def forward(self, x):
        return self.plain(self.norm(x) * 2.0)


class LayerNormTwoAxes(nn.Module):
    """Normalised over the last two axes: exactly LayerNormalization(axis=-2)."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm((4, 8))

    def forward(self, x):
        return self.norm(x)


class NormMiddleAxis(nn.Module):
    """The LayerNorm formula over a non-trailing axis: not a LayerNormalization."""

    def forward(self, x):
        d = x - x.mean(dim=1, keepdim=True)
        return d / torch.sqrt(d.pow(2).mean(dim=1, keepdim=True) + 1e-5)


class NormMixedAxes(nn.Module):
    """Mean over the last axis but variance over the last two: not a LayerNormalization."""

    def forward(self, x):
        d = x - x.mean(dim=-1, keepdim=True)
        return d / torch.sqrt(d.pow(2).mean(dim=(-2, -1), keepdim=True) + 1e-5)


class GeluForms(nn.Module):
    """torch's erf GELU, the tanh approximation and the hand-written HF form 0.5 * x * (1 + erf(x / sqrt 2))."""

    def forward(self, x):
        a = F.gelu(x)
        b = F.gelu(x * 0.5, approximate="tanh")
        y = x + 1.0
        c = 0.5 * y * (1.0 + torch.erf(y / math.sqrt(2.0)))
        return a + b + c


class GeluNotQuite(nn.Module):
    """x * (1 + erf(x / sqrt 2)) without the 0.5: not GELU."""

    def forward(self, x):
        return x * (1.0 + torch.erf(x / math.sqrt(2.0)))


class SiluForms(nn.Module):
    """F.silu, x * sigmoid(x), sigmoid(x) * x (all x * Sigmoid(x) at opset 14), and a SiLU output read twice."""

    def forward(self, x):
        a = F.silu(x)
        b = (x + 1.0) * torch.sigmoid(x + 1.0)
        c = torch.sigmoid(x * 2.0) * (x * 2.0)
        return a + b + c + a * 0.5


class QuickGeluForms(nn.Module):
    """CLIP's QuickGELU, x * sigmoid(1.702 * x), in both operand orders: Swish with alpha 1.702."""

    def forward(self, x):
        y = x + 1.0
        return x * torch.sigmoid(1.702 * x) + torch.sigmoid(y * 1.702) * y


class SiluNotQuite(nn.Module):
    """x * sigmoid(y) for y != x, a sigmoid that is also an operand elsewhere, and x * sigmoid(x * y) for a
    computed y: not Swish."""

    def forward(self, x):
        s = torch.sigmoid(x)
        return x * torch.sigmoid(x + 1.0) + x * s + s + x * torch.sigmoid(x * x.mean())


class GegluFeedForward(nn.Module):
    """diffusers' FeedForward with GEGLU (chunk -> two Slices at opset 14), then the block's residual Add."""

    def __init__(self, dim=32, mult=4):
        super().__init__()
        self.proj = nn.Linear(dim, dim * mult * 2)
        self.out = nn.Linear(dim * mult, dim)

    def forward(self, x):
        h, gate = self.proj(x).chunk(2, dim=-1)
        return self.out(h * F.gelu(gate)) + x


class GegluSplit2d(nn.Module):
    """2-D tokens (Linear exports as Gemm), torch.split (a Split node), tanh GELU, gate times hidden."""

    def __init__(self, dim=24, hidden=40):
        super().__init__()
        self.proj = nn.Linear(dim, hidden * 2)
        self.out = nn.Linear(hidden, 16)

    def forward(self, x):
        h, gate = torch.split(self.proj(x), [40, 40], dim=-1)
        return self.out(F.gelu(gate, approximate="tanh") * h)


class GegluFirstHalfGated(nn.Module):
    """gelu of the FIRST half times the second: not diffusers' GEGLU, left alone."""

    def __init__(self, dim=32):
        super().__init__()
        self.proj = nn.Linear(dim, dim * 8)
        self.out = nn.Linear(dim * 4, dim)

    def forward(self, x):
        gate, h = self.proj(x).chunk(2, dim=-1)
        return self.out(h * F.gelu(gate))


class CrossAttention(nn.Module):
    """diffusers' CrossAttention (AttnProcessor): heads folded into the batch, bmm * scale, softmax, bmm."""

    def __init__(self, dim=32, context_dim=24, heads=4):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_k = nn.Linear(context_dim, dim, bias=False)
        self.to_v = nn.Linear(context_dim, dim, bias=False)
        self.to_out = nn.Linear(dim, dim)
        self.to_k1 = nn.Linear(dim, dim, bias=False)
        self.to_v1 = nn.Linear(dim, dim, bias=False)

    def head_to_batch(self, x):
        b, n, c = x.shape
        return x.reshape(b, n, self.heads, c // self.heads).permute(0, 2, 1, 3).reshape(b * self.heads, n,
                                                                                        c // self.heads)

    def batch_to_head(self, x):
        bh, n, d = x.shape
        return x.reshape(bh // self.heads, self.heads, n, d).permute(0, 2, 1, 3).reshape(bh // self.heads, n,
                                                                                         d * self.heads)

    def attend(self, q, k, v):
        scores = torch.bmm(q, k.transpose(-1, -2)) * self.scale
        return torch.bmm(scores.softmax(dim=-1), v)

    def forward(self, x, context):
        q = self.head_to_batch(self.to_q(x))
        self_out = self.attend(q, self.head_to_batch(self.to_k1(x)), self.head_to_batch(self.to_v1(x)))
        cross_out = self.attend(q, self.head_to_batch(self.to_k(context)), self.head_to_batch(self.to_v(context)))
        return self.to_out(self.batch_to_head(self_out + cross_out))


class ClipAttention(nn.Module):
    """CLIP's causal self-attention (transformers CLIPAttention): q pre-scaled, mask added to a 4-D view."""

    def __init__(self, width=32, heads=4):
        super().__init__()
        self.heads = heads
        self.head_dim = width // heads
        self.scale = self.head_dim ** -0.5
        self.q_proj = nn.Linear(width, width)
        self.k_proj = nn.Linear(width, width)
        self.v_proj = nn.Linear(width, width)
        self.out_proj = nn.Linear(width, width)

    def _shape(self, x, t, b):
        return x.view(b, t, self.heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, x):
        b, t, c = x.size()
        mask = torch.empty(b, t, t, dtype=x.dtype)
        mask.fill_(torch.tensor(torch.finfo(x.dtype).min))
        mask.triu_(1)
        mask = mask.unsqueeze(1)
        q = self.q_proj(x) * self.scale
        k = self._shape(self.k_proj(x), -1, b)
        v = self._shape(self.v_proj(x), -1, b)
        shape = (b * self.heads, -1, self.head_dim)
        q = self._shape(q, t, b).view(*shape)
        k = k.view(*shape)
        v = v.view(*shape)
        w = torch.bmm(q, k.transpose(1, 2))
        w = w.view(b, self.heads, t, t) + mask
        w = w.view(b * self.heads, t, t).softmax(dim=-1)
        out = torch.bmm(w, v).view(b, self.heads, t, self.head_dim).transpose(1, 2).reshape(b, t, c)
        return self.out_proj(out)


class GptAttention(nn.Module):
    """4-D heads, scores divided by sqrt(d), an additive causal mask buffer sliced to t."""

    def __init__(self, d=32, heads=2, max_t=16):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.register_buffer("mask", torch.triu(torch.full((max_t, max_t), -1e4), diagonal=1))

    def forward(self, x):
        b, t, c = x.shape
        hd = c // self.heads
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, hd).transpose(1, 2)
        k = k.view(b, t, self.heads, hd).transpose(1, 2)
        v = v.view(b, t, self.heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hd) + self.mask[:t, :t]
        y = att.softmax(dim=-1) @ v
        return y.transpose(1, 2).reshape(b, t, c)


class SoftmaxOtherAxis(nn.Module):
    """Softmax over the query axis: not attention."""

    def __init__(self):
        super().__init__()
        self.q = nn.Linear(16, 16, bias=False)

    def forward(self, x):
        q = self.q(x)
        return torch.bmm(torch.bmm(q, x.transpose(1, 2)).softmax(dim=1), x)


class LinearLayers(nn.Module):
    """nn.Linear on 3-D and 4-D activations (MatMul + Add(bias) in the export): the bias joins the MatMul.
    The last Add adds a computed value, which stays an Add."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 48)
        self.fc2 = nn.Linear(48, 16)
        self.gate = nn.Linear(32, 16, bias=False)

    def forward(self, x):
        h = self.fc2(F.gelu(self.fc1(x)))
        return h + self.gate(x), self.fc1(x.unsqueeze(1).expand(-1, 2, -1, -1))


class LinearBiasRead(nn.Module):
    """A MatMul whose product is also read before the bias: the bias cannot join it."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(32, 24) / 8)
        self.b = nn.Parameter(torch.randn(24))

    def forward(self, x):
        p = x @ self.w
        return p + self.b, p * 2


# name: (module, inputs, opset, expected op counts)
CASES = {
    "groupnorm_opset14": (GroupNorm4d, [("x", (2, 16, 6, 5))], 14,
                          {"GroupNormalization": 1, "InstanceNormalization": 0, "Reshape": 0, "Mul": 0, "Add": 0}),
    "groupnorm_vae_opset13": (GroupNormVae, [("x", (1, 8, 12))], 13,
                              {"GroupNormSwish": 1, "GroupNormalization": 0, "InstanceNormalization": 1,
                               "Reshape": 0, "Mul": 0, "Add": 0, "Swish": 0}),
    "groupnorm_silu_shared": (GroupNormSiluShared, [("x", (2, 16, 5, 6))], 14,
                              {"GroupNormSwish": 0, "GroupNormalization": 1, "Swish": 1}),
    "groupnorm_vae_view_opset14": (GroupNormVaeView, [("x", (1, 16, 4, 3))], 14,
                                   {"GroupNormalization": 1, "InstanceNormalization": 0, "Add": 0}),
    "layernorm_opset14": (LayerNormLast, [("x", (2, 5, 32))], 14,
                          {"LayerNormalization": 2, "ReduceMean": 0, "Sqrt": 0, "Pow": 0, "Div": 0}),
    "layernorm_two_axes_opset13": (LayerNormTwoAxes, [("x", (2, 3, 4, 8))], 13,
                                   {"LayerNormalization": 1, "ReduceMean": 0}),
    "norm_middle_axis": (NormMiddleAxis, [("x", (2, 6, 8))], 14, {"LayerNormalization": 0, "ReduceMean": 2}),
    "norm_mixed_axes": (NormMixedAxes, [("x", (2, 6, 8))], 14, {"LayerNormalization": 0, "ReduceMean": 2}),
    "gelu_opset14": (GeluForms, [("x", (2, 3, 40))], 14, {"Gelu": 3, "Erf": 0, "Tanh": 0, "Pow": 0, "Mul": 1}),
    "gelu_opset13": (GeluForms, [("x", (4, 50))], 13, {"Gelu": 3, "Erf": 0, "Tanh": 0}),
    "gelu_not_quite": (GeluNotQuite, [("x", (4, 50))], 14, {"Gelu": 0, "Erf": 1}),
    "silu_opset14": (SiluForms, [("x", (2, 8, 5, 5))], 14, {"Swish": 3, "Sigmoid": 0}),
    "quick_gelu_opset14": (QuickGeluForms, [("x", (2, 7, 24))], 14, {"Swish": 2, "Sigmoid": 0, "Mul": 0, "Add": 2}),
    "silu_not_quite": (SiluNotQuite, [("x", (3, 40))], 14, {"Swish": 0, "Sigmoid": 3}),
    "geglu_ffn_opset14": (GegluFeedForward, [("x", (2, 24, 32))], 14,
                          {"GegluFeedForward": 1, "Gelu": 0, "Erf": 0, "Slice": 0, "MatMul": 0, "Mul": 0, "Add": 1}),
    # W1 3.3 MB and W2 1.6 MB: hidden blocks whose weights fit half of a thread's L2 (feed_forward.cpp).
    "geglu_ffn_l2_blocks": (lambda: GegluFeedForward(dim=320), [("x", (1, 64, 320))], 14,
                            {"GegluFeedForward": 1, "Gelu": 0, "MatMul": 0, "Add": 1}),
    "geglu_split_2d_opset13": (GegluSplit2d, [("x", (20, 24))], 13,
                               {"GegluFeedForward": 1, "Gelu": 0, "Split": 0, "Gemm": 0, "MatMul": 0}),
    "geglu_first_half_gated": (GegluFirstHalfGated, [("x", (2, 6, 32))], 14,
                               {"GegluFeedForward": 0, "Gelu": 1, "Slice": 2}),
    "attention_cross_opset14": (CrossAttention, [("x", (2, 10, 32)), ("context", (2, 7, 24))], 14,
                                {"ScaledDotProductAttention": 2, "Softmax": 0, "Transpose": 6}),
    "attention_clip_opset14": (ClipAttention, [("x", (1, 9, 32))], 14,
                               {"ScaledDotProductAttention": 1, "Softmax": 0}),
    "attention_gpt_opset13": (GptAttention, [("x", (1, 12, 32))], 13,
                              {"ScaledDotProductAttention": 1, "Softmax": 0, "Div": 0}),
    "linear_3d_4d": (LinearLayers, [("x", (2, 7, 32))], 14, {"MatMul": 4, "Add": 1, "Gemm": 0}),
    "linear_product_read_twice": (LinearBiasRead, [("x", (2, 5, 32))], 14, {"MatMul": 1, "Add": 1}),
    "softmax_other_axis": (SoftmaxOtherAxis, [("x", (2, 5, 16))], 14,
                           {"ScaledDotProductAttention": 0, "Softmax": 1}),
}


def generate(cases, who, description, expect_of=lambda extra: extra):
    """The generator command line shared with tests/layout: exports each case of
    {name: (module, input specs, opset, extra)} into OUT/models/<name> (extra -> expect.json through
    expect_of), adds ONNX Runtime's outputs when --node is given, and writes --stamp."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder (replaced)")
    ap.add_argument("--node", help="node executable: also compute ONNX Runtime's outputs")
    ap.add_argument("--stamp", help="file to write when everything was generated")
    args = ap.parse_args()

    out = os.path.abspath(args.out)
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    models_dir = os.path.join(tmp, "models")
    os.makedirs(models_dir)
    for seed, (name, (module, input_specs, opset, extra)) in enumerate(sorted(cases.items())):
        model, inputs, outs = export(module, input_specs, opset, seed)
        write_case(os.path.join(models_dir, name), model, inputs, outs, expect_of(extra))
    case_output.publish(tmp, out, args.node, who)
    if args.stamp:
        with open(args.stamp, "w") as f:
            f.write("ok\n")


if __name__ == "__main__":
    generate(CASES, "gen_patterns.py", __doc__)

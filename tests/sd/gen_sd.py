#!/usr/bin/python3
"""Stable Diffusion 1.5 architecture, random weights: text encoder, UNet and VAE decoder as ONNX.

The three networks are written here in plain PyTorch at SD 1.5's published hyper-parameters (CLIP ViT-L/14
text encoder; UNet with model channels 320, mult 1,2,4,4, 8 heads, context 768; KL-f8 VAE decoder), with
the module structure and forward code of transformers' CLIPTextModel and diffusers' UNet2DConditionModel /
AutoencoderKL.decoder, so torch.onnx.export produces the same graph patterns as a real SD 1.5 export
(decomposed LayerNorm and GroupNorm, Trilu causal mask, GEGLU, Resize upsampling, shape chains). Tensor
names follow OnnxStream's published SD 1.5 models: text encoder input `onnx::Reshape_0` (1,77) int64,
UNet inputs `sample`, `timestep` (1,) float32, `encoder_hidden_states`, VAE decoder input `input.1`.

The building blocks also take the keyword parameters SDXL needs (tests/sd/gen_sdxl.py: exact GELU in CLIP,
the hidden states of every layer, several transformer blocks per level, linear proj_in/proj_out, per-level
head counts, the text_time addition embedding); their defaults are SD 1.5's.

--size small keeps every block type and connection but shrinks widths, depths and resolutions so the three
models export and run in seconds (the 'sd' meson test suite); --size full is SD 1.5 itself (the UNet's
3.4 GB of float32 weights go to external data files, as torch.onnx.export writes them past 2 GB).

Writes OUT/sd/<model>/ with model.onnx, input_<i>.npy, case.json and names.txt (the layout
tests/tools/ort_reference.js reads); with --node, ort_reference.js adds expected_<k>.npy, ONNX Runtime's
outputs on the same ONNX file. Everything is seeded. The output is built in OUT.tmp and renamed at the end.
"""

import argparse
import json
import math
import os
import shutil
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS_DIR = os.path.join(HERE, "..", "tools")
sys.path.insert(0, TOOLS_DIR)

import case_output  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

OPSET = 14

# Published SD 1.5 hyper-parameters, and the small variants with the same topology.
CONFIGS = {
    "full": {
        "text": dict(vocab=49408, positions=77, width=768, layers=12, heads=12),
        "unet": dict(in_channels=4, out_channels=4, channels=(320, 640, 1280, 1280),
                     attention=(True, True, True, False), layers_per_block=2, heads=8, context=768,
                     groups=32, sample=64, tokens=77),
        "vae": dict(latent=4, channels=(128, 256, 512, 512), layers_per_block=2, groups=32, latent_size=64),
    },
    "small": {
        "text": dict(vocab=49408, positions=77, width=64, layers=2, heads=2),
        "unet": dict(in_channels=4, out_channels=4, channels=(32, 64, 64),
                     attention=(True, True, False), layers_per_block=2, heads=2, context=64,
                     groups=32, sample=16, tokens=77),
        "vae": dict(latent=4, channels=(32, 32, 64), layers_per_block=2, groups=32, latent_size=16),
    },
}


# ----------------------------------------------------------------------------------------------------------
# CLIP text encoder (transformers' CLIPTextModel, quick_gelu, causal mask, final LayerNorm)

class ClipAttention(nn.Module):
    def __init__(self, width, heads):
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

    def forward(self, x, causal_mask):
        b, t, c = x.size()
        q = self.q_proj(x) * self.scale
        k = self._shape(self.k_proj(x), -1, b)
        v = self._shape(self.v_proj(x), -1, b)
        shape = (b * self.heads, -1, self.head_dim)
        q = self._shape(q, t, b).view(*shape)
        k = k.view(*shape)
        v = v.view(*shape)
        w = torch.bmm(q, k.transpose(1, 2))
        w = w.view(b, self.heads, t, t) + causal_mask
        w = w.view(b * self.heads, t, t).softmax(dim=-1)
        out = torch.bmm(w, v).view(b, self.heads, t, self.head_dim).transpose(1, 2).reshape(b, t, c)
        return self.out_proj(out)


class ClipLayer(nn.Module):
    def __init__(self, width, heads, hidden_act="quick_gelu"):
        super().__init__()
        assert hidden_act in ("quick_gelu", "gelu")
        self.hidden_act = hidden_act
        self.self_attn = ClipAttention(width, heads)
        self.layer_norm1 = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, width)
        self.layer_norm2 = nn.LayerNorm(width)

    def forward(self, x, causal_mask):
        x = x + self.self_attn(self.layer_norm1(x), causal_mask)
        h = self.fc1(self.layer_norm2(x))
        if self.hidden_act == "quick_gelu":
            h = h * torch.sigmoid(1.702 * h)
        else:
            h = F.gelu(h)  # transformers' "gelu": the exact erf form
        return x + self.fc2(h)


class ClipTextEncoder(nn.Module):
    def __init__(self, vocab, positions, width, layers, heads, hidden_act="quick_gelu"):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, width)
        self.position_embedding = nn.Embedding(positions, width)
        self.register_buffer("position_ids", torch.arange(positions).expand((1, -1)))
        self.layers = nn.ModuleList([ClipLayer(width, heads, hidden_act) for _ in range(layers)])
        self.final_layer_norm = nn.LayerNorm(width)
        with torch.no_grad():  # CLIP's initialisation scale, so 12 layers keep activations in range
            self.token_embedding.weight.normal_(0, 0.02)
            self.position_embedding.weight.normal_(0, 0.01)

    def forward(self, input_ids):
        return self.encode(input_ids)[0]

    def encode(self, input_ids):
        """(last_hidden_state, hidden_states) as transformers returns them with output_hidden_states=True:
        hidden_states[0] is the embeddings, hidden_states[i] the i-th layer's output (the last one without
        final_layer_norm)."""
        shape = input_ids.size()
        input_ids = input_ids.view(-1, shape[-1])
        t = input_ids.shape[-1]
        x = self.token_embedding(input_ids) + self.position_embedding(self.position_ids[:, :t])
        b = x.shape[0]
        mask = torch.empty(b, t, t, dtype=x.dtype)
        mask.fill_(torch.tensor(torch.finfo(x.dtype).min))
        mask.triu_(1)
        mask = mask.unsqueeze(1)
        hidden_states = [x]
        for layer in self.layers:
            x = layer(x, mask)
            hidden_states.append(x)
        return self.final_layer_norm(x), tuple(hidden_states)


# ----------------------------------------------------------------------------------------------------------
# Building blocks shared by the UNet and the VAE decoder (diffusers)

class ResnetBlock(nn.Module):
    def __init__(self, cin, cout, groups, eps, temb_channels=None):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, cin, eps=eps)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.time_emb_proj = nn.Linear(temb_channels, cout) if temb_channels else None
        self.norm2 = nn.GroupNorm(groups, cout, eps=eps)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.conv_shortcut = nn.Conv2d(cin, cout, 1) if cin != cout else None

    def forward(self, x, temb=None):
        h = self.conv1(F.silu(self.norm1(x)))
        if self.time_emb_proj is not None:
            h = h + self.time_emb_proj(F.silu(temb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        if self.conv_shortcut is not None:
            x = self.conv_shortcut(x)
        return x + h


class Downsample(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, stride=2, padding=1)

    def forward(self, x):
        return self.conv(x)


class Upsample(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return self.conv(F.interpolate(x, scale_factor=2.0, mode="nearest"))


# ----------------------------------------------------------------------------------------------------------
# UNet (diffusers UNet2DConditionModel as configured for SD 1.5)

class CrossAttention(nn.Module):
    def __init__(self, query_dim, context_dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (query_dim // heads) ** -0.5
        self.to_q = nn.Linear(query_dim, query_dim, bias=False)
        self.to_k = nn.Linear(context_dim, query_dim, bias=False)
        self.to_v = nn.Linear(context_dim, query_dim, bias=False)
        self.to_out = nn.ModuleList([nn.Linear(query_dim, query_dim), nn.Dropout(0.0)])

    def head_to_batch(self, x):
        b, n, c = x.shape
        return x.reshape(b, n, self.heads, c // self.heads).permute(0, 2, 1, 3).reshape(b * self.heads, n, c // self.heads)

    def batch_to_head(self, x):
        bh, n, d = x.shape
        return x.reshape(bh // self.heads, self.heads, n, d).permute(0, 2, 1, 3).reshape(bh // self.heads, n, d * self.heads)

    def forward(self, x, context=None):
        context = x if context is None else context
        q = self.head_to_batch(self.to_q(x))
        k = self.head_to_batch(self.to_k(context))
        v = self.head_to_batch(self.to_v(context))
        # diffusers' AttnProcessor: baddbmm(empty, q, k^T, beta=0, alpha=scale) exports as MatMul + Mul.
        scores = torch.bmm(q, k.transpose(-1, -2)) * self.scale
        out = torch.bmm(scores.softmax(dim=-1), v)
        out = self.batch_to_head(out)
        return self.to_out[1](self.to_out[0](out))


class GEGLU(nn.Module):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.proj = nn.Linear(dim_in, dim_out * 2)

    def forward(self, x):
        h, gate = self.proj(x).chunk(2, dim=-1)
        return h * F.gelu(gate)


class FeedForward(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.net = nn.ModuleList([GEGLU(dim, 4 * dim), nn.Dropout(0.0), nn.Linear(4 * dim, dim)])

    def forward(self, x):
        for m in self.net:
            x = m(x)
        return x


class BasicTransformerBlock(nn.Module):
    def __init__(self, dim, heads, context_dim):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn1 = CrossAttention(dim, dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.attn2 = CrossAttention(dim, context_dim, heads)
        self.norm3 = nn.LayerNorm(dim)
        self.ff = FeedForward(dim)

    def forward(self, x, context):
        x = self.attn1(self.norm1(x)) + x
        x = self.attn2(self.norm2(x), context) + x
        return self.ff(self.norm3(x)) + x


class Transformer2D(nn.Module):
    """diffusers Transformer2DModel: `depth` BasicTransformerBlocks; proj_in/proj_out are 1x1 convolutions
    (SD 1.5) or, with use_linear_projection (SD 2, SDXL), Linear layers applied to the tokens."""

    def __init__(self, c, heads, context_dim, groups, depth=1, use_linear_projection=False):
        super().__init__()
        self.use_linear_projection = use_linear_projection
        self.norm = nn.GroupNorm(groups, c, eps=1e-6)
        self.proj_in = nn.Linear(c, c) if use_linear_projection else nn.Conv2d(c, c, 1)
        self.transformer_blocks = nn.ModuleList([BasicTransformerBlock(c, heads, context_dim) for _ in range(depth)])
        self.proj_out = nn.Linear(c, c) if use_linear_projection else nn.Conv2d(c, c, 1)

    def forward(self, x, context):
        b, c, h, w = x.shape
        residual = x
        x = self.norm(x)
        if not self.use_linear_projection:
            x = self.proj_in(x)
            x = x.permute(0, 2, 3, 1).reshape(b, h * w, c)
        else:
            x = x.permute(0, 2, 3, 1).reshape(b, h * w, c)
            x = self.proj_in(x)
        for blk in self.transformer_blocks:
            x = blk(x, context)
        if not self.use_linear_projection:
            x = x.reshape(b, h, w, c).permute(0, 3, 1, 2).contiguous()
            x = self.proj_out(x)
        else:
            x = self.proj_out(x)
            x = x.reshape(b, h, w, c).permute(0, 3, 1, 2).contiguous()
        return x + residual


class DownBlock(nn.Module):
    def __init__(self, cin, cout, temb, layers, attention, heads, context_dim, groups, downsample, depth=1,
                 use_linear_projection=False):
        super().__init__()
        self.resnets = nn.ModuleList([ResnetBlock(cin if i == 0 else cout, cout, groups, 1e-5, temb)
                                      for i in range(layers)])
        self.attentions = nn.ModuleList([Transformer2D(cout, heads, context_dim, groups, depth, use_linear_projection)
                                         for _ in range(layers)]) if attention else None
        self.downsamplers = nn.ModuleList([Downsample(cout)]) if downsample else None

    def forward(self, x, temb, context):
        skips = []
        for i, resnet in enumerate(self.resnets):
            x = resnet(x, temb)
            if self.attentions is not None:
                x = self.attentions[i](x, context)
            skips.append(x)
        if self.downsamplers is not None:
            x = self.downsamplers[0](x)
            skips.append(x)
        return x, skips


class UpBlock(nn.Module):
    def __init__(self, cin, cprev, cout, temb, layers, attention, heads, context_dim, groups, upsample, depth=1,
                 use_linear_projection=False):
        super().__init__()
        resnets = []
        for i in range(layers):
            skip = cin if i == layers - 1 else cout
            resnets.append(ResnetBlock((cprev if i == 0 else cout) + skip, cout, groups, 1e-5, temb))
        self.resnets = nn.ModuleList(resnets)
        self.attentions = nn.ModuleList([Transformer2D(cout, heads, context_dim, groups, depth, use_linear_projection)
                                         for _ in range(layers)]) if attention else None
        self.upsamplers = nn.ModuleList([Upsample(cout)]) if upsample else None

    def forward(self, x, skips, temb, context):
        for i, resnet in enumerate(self.resnets):
            x = torch.cat([x, skips.pop()], dim=1)
            x = resnet(x, temb)
            if self.attentions is not None:
                x = self.attentions[i](x, context)
        if self.upsamplers is not None:
            x = self.upsamplers[0](x)
        return x


class MidBlock(nn.Module):
    def __init__(self, c, temb, heads, context_dim, groups, depth=1, use_linear_projection=False):
        super().__init__()
        self.resnets = nn.ModuleList([ResnetBlock(c, c, groups, 1e-5, temb), ResnetBlock(c, c, groups, 1e-5, temb)])
        self.attentions = nn.ModuleList([Transformer2D(c, heads, context_dim, groups, depth, use_linear_projection)])

    def forward(self, x, temb, context):
        x = self.resnets[0](x, temb)
        x = self.attentions[0](x, context)
        return self.resnets[1](x, temb)


class TimestepEmbedding(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.linear_1 = nn.Linear(cin, cout)
        self.linear_2 = nn.Linear(cout, cout)

    def forward(self, x):
        return self.linear_2(F.silu(self.linear_1(x)))


def timestep_embedding(timesteps, dim, max_period=10000):
    """diffusers get_timestep_embedding with flip_sin_to_cos=True, downscale_freq_shift=0."""
    half = dim // 2
    exponent = -math.log(max_period) * torch.arange(start=0, end=half, dtype=torch.float32)
    exponent = exponent / half
    emb = timesteps[:, None].float() * torch.exp(exponent)[None, :]
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
    return torch.cat([emb[:, half:], emb[:, :half]], dim=-1)


class UNet(nn.Module):
    """heads and transformer_depth: one value for every level or one per level (diffusers' attention_head_dim,
    which it uses as the head count, and transformer_layers_per_block; the up blocks take them reversed, the
    mid block the last level's unless mid_depth is given). addition_time_embed_dim: diffusers'
    addition_embed_type "text_time" (SDXL): forward then also takes text_embeds (B, P) and time_ids (B, 6),
    and projection_class_embeddings_input_dim is P + 6 * addition_time_embed_dim."""

    def __init__(self, in_channels, out_channels, channels, attention, layers_per_block, heads, context, groups,
                 transformer_depth=1, mid_depth=None, use_linear_projection=False, addition_time_embed_dim=None,
                 projection_class_embeddings_input_dim=None, **_):
        super().__init__()
        n = len(channels)
        heads = (heads,) * n if isinstance(heads, int) else tuple(heads)
        depth = (transformer_depth,) * n if isinstance(transformer_depth, int) else tuple(transformer_depth)
        mid_depth = depth[-1] if mid_depth is None else mid_depth
        c0 = channels[0]
        temb = 4 * c0
        self.c0 = c0
        self.time_embedding = TimestepEmbedding(c0, temb)
        self.addition_time_embed_dim = addition_time_embed_dim
        if addition_time_embed_dim:
            self.add_embedding = TimestepEmbedding(projection_class_embeddings_input_dim, temb)
        self.conv_in = nn.Conv2d(in_channels, c0, 3, padding=1)
        self.down_blocks = nn.ModuleList()
        cout = c0
        for i, c in enumerate(channels):
            cin, cout = cout, c
            self.down_blocks.append(DownBlock(cin, cout, temb, layers_per_block, attention[i], heads[i], context,
                                              groups, downsample=i < n - 1, depth=depth[i],
                                              use_linear_projection=use_linear_projection))
        self.mid_block = MidBlock(channels[-1], temb, heads[-1], context, groups, mid_depth, use_linear_projection)
        self.up_blocks = nn.ModuleList()
        rev = list(reversed(channels))
        rev_attention = list(reversed(attention))
        rev_heads = list(reversed(heads))
        rev_depth = list(reversed(depth))
        cout = rev[0]
        for i, c in enumerate(rev):
            cprev, cout = cout, c
            cin = rev[min(i + 1, len(rev) - 1)]
            self.up_blocks.append(UpBlock(cin, cprev, cout, temb, layers_per_block + 1, rev_attention[i], rev_heads[i],
                                          context, groups, upsample=i < len(rev) - 1, depth=rev_depth[i],
                                          use_linear_projection=use_linear_projection))
        self.conv_norm_out = nn.GroupNorm(groups, c0, eps=1e-5)
        self.conv_out = nn.Conv2d(c0, out_channels, 3, padding=1)

    def forward(self, sample, timestep, encoder_hidden_states, text_embeds=None, time_ids=None):
        timesteps = timestep.expand(sample.shape[0])
        temb = self.time_embedding(timestep_embedding(timesteps, self.c0))
        if self.addition_time_embed_dim:
            # diffusers' add_time_proj (Timesteps(addition_time_embed_dim, True, 0)) on every time id, then
            # add_embedding on [text_embeds, time embeddings].
            time_embeds = timestep_embedding(time_ids.flatten(), self.addition_time_embed_dim)
            time_embeds = time_embeds.reshape((text_embeds.shape[0], -1))
            add_embeds = torch.concat([text_embeds, time_embeds], dim=-1)
            add_embeds = add_embeds.to(temb.dtype)
            temb = temb + self.add_embedding(add_embeds)
        x = self.conv_in(sample)
        skips = [x]
        for block in self.down_blocks:
            x, s = block(x, temb, encoder_hidden_states)
            skips += s
        x = self.mid_block(x, temb, encoder_hidden_states)
        for block in self.up_blocks:
            n = len(block.resnets)
            x = block(x, skips[-n:], temb, encoder_hidden_states)
            skips = skips[:-n]
        return self.conv_out(F.silu(self.conv_norm_out(x)))


# ----------------------------------------------------------------------------------------------------------
# VAE decoder (diffusers AutoencoderKL: post_quant_conv + Decoder)

class VaeAttention(nn.Module):
    """Single-head spatial self-attention of the VAE's mid block (diffusers Attention, heads=1)."""

    def __init__(self, c, groups):
        super().__init__()
        self.group_norm = nn.GroupNorm(groups, c, eps=1e-6)
        self.to_q = nn.Linear(c, c)
        self.to_k = nn.Linear(c, c)
        self.to_v = nn.Linear(c, c)
        self.to_out = nn.ModuleList([nn.Linear(c, c), nn.Dropout(0.0)])
        self.scale = c ** -0.5

    def forward(self, x):
        residual = x
        b, c, h, w = x.shape
        x = x.view(b, c, h * w).transpose(1, 2)
        x = self.group_norm(x.transpose(1, 2)).transpose(1, 2)
        q, k, v = self.to_q(x), self.to_k(x), self.to_v(x)
        scores = torch.bmm(q, k.transpose(-1, -2)) * self.scale
        out = torch.bmm(scores.softmax(dim=-1), v)
        out = self.to_out[1](self.to_out[0](out))
        out = out.transpose(-1, -2).reshape(b, c, h, w)
        return out + residual


class VaeUpBlock(nn.Module):
    def __init__(self, cin, cout, layers, groups, upsample):
        super().__init__()
        self.resnets = nn.ModuleList([ResnetBlock(cin if i == 0 else cout, cout, groups, 1e-6) for i in range(layers)])
        self.upsamplers = nn.ModuleList([Upsample(cout)]) if upsample else None

    def forward(self, x):
        for r in self.resnets:
            x = r(x)
        if self.upsamplers is not None:
            x = self.upsamplers[0](x)
        return x


class VaeDecoder(nn.Module):
    def __init__(self, latent, channels, layers_per_block, groups, **_):
        super().__init__()
        top = channels[-1]
        self.post_quant_conv = nn.Conv2d(latent, latent, 1)
        self.conv_in = nn.Conv2d(latent, top, 3, padding=1)
        self.mid_resnet_0 = ResnetBlock(top, top, groups, 1e-6)
        self.mid_attention = VaeAttention(top, groups)
        self.mid_resnet_1 = ResnetBlock(top, top, groups, 1e-6)
        rev = list(reversed(channels))
        self.up_blocks = nn.ModuleList()
        cout = rev[0]
        for i, c in enumerate(rev):
            cin, cout = cout, c
            self.up_blocks.append(VaeUpBlock(cin, cout, layers_per_block + 1, groups, upsample=i < len(rev) - 1))
        self.conv_norm_out = nn.GroupNorm(groups, channels[0], eps=1e-6)
        self.conv_out = nn.Conv2d(channels[0], 3, 3, padding=1)

    def forward(self, z):
        x = self.conv_in(self.post_quant_conv(z))
        x = self.mid_resnet_1(self.mid_attention(self.mid_resnet_0(x)))
        for block in self.up_blocks:
            x = block(x)
        return self.conv_out(F.silu(self.conv_norm_out(x)))


# ----------------------------------------------------------------------------------------------------------

def make_models(size, seed):
    """[(name, module, [(input name, array)], output name)] with seeded weights and inputs."""
    cfg = CONFIGS[size]
    rng = np.random.default_rng(seed)
    out = []

    torch.manual_seed(seed)
    text = ClipTextEncoder(**cfg["text"]).eval()
    t = cfg["text"]["positions"]
    # A realistic prompt layout: start token, a few words, end token, padding with the end token.
    ids = np.full((1, t), 49407, dtype=np.int64)
    ids[0, 0] = 49406
    ids[0, 1:9] = rng.integers(0, 49406, 8)
    out.append(("text_encoder", text, [("onnx::Reshape_0", ids)], "last_hidden_state"))

    torch.manual_seed(seed + 1)
    u = cfg["unet"]
    unet = UNet(**u).eval()
    s = u["sample"]
    out.append(("unet", unet, [
        ("sample", rng.standard_normal((1, u["in_channels"], s, s)).astype(np.float32)),
        ("timestep", np.array([981.0], dtype=np.float32)),
        ("encoder_hidden_states", rng.standard_normal((1, u["tokens"], u["context"])).astype(np.float32)),
    ], "out_sample"))

    torch.manual_seed(seed + 2)
    v = cfg["vae"]
    vae = VaeDecoder(**v).eval()
    ls = v["latent_size"]
    out.append(("vae_decoder", vae, [("input.1", rng.standard_normal((1, v["latent"], ls, ls)).astype(np.float32))],
                "sample"))

    # The same weights at other input sizes (OnnxStream's graphs have static shapes): the decoder for half-
    # and quarter-size latent tiles (tiled decoding, OnnxStream's vae_decoder_fp16_l32; _l16) and the UNet for
    # prompts of two 77-token chunks.
    ts = ls // 2
    out.append(("vae_decoder_tile", vae,
                [("input.1", rng.standard_normal((1, v["latent"], ts, ts)).astype(np.float32))], "sample"))
    q = ls // 4
    out.append(("vae_decoder_tile_small", vae,
                [("input.1", rng.standard_normal((1, v["latent"], q, q)).astype(np.float32))], "sample"))
    out.append(("unet_batch2", unet, [  # cond + uncond in one run: the weights stream once per step
        ("sample", rng.standard_normal((2, u["in_channels"], s, s)).astype(np.float32)),
        ("timestep", np.array([761.0], dtype=np.float32)),
        ("encoder_hidden_states", rng.standard_normal((2, u["tokens"], u["context"])).astype(np.float32)),
    ], "out_sample"))
    out.append(("unet_long", unet, [
        ("sample", rng.standard_normal((1, u["in_channels"], s, s)).astype(np.float32)),
        ("timestep", np.array([501.0], dtype=np.float32)),
        ("encoder_hidden_states", rng.standard_normal((1, 2 * u["tokens"], u["context"])).astype(np.float32)),
    ], "out_sample"))
    return out


# The spatial axes a resizable export leaves symbolic (diffusers' own ONNX exports do the same), so that
# onnxstream-convert --resizable can convert the UNet and the VAE decoder for any image size.
RESIZABLE_AXES = {"unet": {"sample": {2: "height", 3: "width"}},
                  "vae_decoder": {"input.1": {2: "height", 3: "width"}}}


def export(name, module, inputs, output_name, case_dir, dynamic_axes=None):
    """Export at opset 14 like a real SD 1.5 export (file path, so torch writes external data past 2 GB);
    output_name: one name, or a list of names for a module returning a tuple; dynamic_axes as
    torch.onnx.export takes them. Writes the case files (torch_<k>.npy: PyTorch's outputs) and returns
    (parameter count, seconds)."""
    os.makedirs(case_dir)
    output_names = [output_name] if isinstance(output_name, str) else list(output_name)
    t0 = time.time()
    args = tuple(torch.from_numpy(a) for _, a in inputs)
    with torch.no_grad():
        refs = module(*args)
        refs = [r.numpy() for r in (refs if isinstance(refs, tuple) else (refs,))]
        torch.onnx.export(module, args, os.path.join(case_dir, "model.onnx"), opset_version=OPSET,
                          input_names=[n for n, _ in inputs], output_names=output_names,
                          dynamic_axes=dynamic_axes, do_constant_folding=True)
    params = sum(p.numel() for p in module.parameters())
    meta = {"inputs": [], "outputs": [{"index": k, "name": n, "file": f"expected_{k}.npy", "shape": list(r.shape)}
                                      for k, (n, r) in enumerate(zip(output_names, refs))], "parameters": params}
    for i, (n, a) in enumerate(inputs):
        np.save(os.path.join(case_dir, f"input_{i}.npy"), a)
        meta["inputs"].append({"index": i, "name": n, "kind": "input", "file": f"input_{i}.npy",
                               "dtype": str(a.dtype), "shape": list(a.shape)})
    for k, r in enumerate(refs):
        np.save(os.path.join(case_dir, f"torch_{k}.npy"), r)
    with open(os.path.join(case_dir, "case.json"), "w") as f:
        json.dump(meta, f, indent=1)
    with open(os.path.join(case_dir, "names.txt"), "w") as f:
        for e in meta["inputs"]:
            f.write(f"input {e['index']} {e['name']}\n")
        for e in meta["outputs"]:
            f.write(f"output {e['index']} {e['name']}\n")
    return params, time.time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder (replaced)")
    ap.add_argument("--size", choices=sorted(CONFIGS), default="small")
    ap.add_argument("--models", default="text_encoder,unet,vae_decoder,vae_decoder_tile,vae_decoder_tile_small,unet_long,"
                                        "unet_batch2",
                    help="comma-separated subset")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--node", help="node executable: also compute ONNX Runtime's outputs")
    ap.add_argument("--stamp", help="file to write when everything was generated")
    ap.add_argument("--resizable", action="store_true",
                    help="export the UNet and the VAE decoder with symbolic height and width (RESIZABLE_AXES)")
    args = ap.parse_args()

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    out = os.path.abspath(args.out)
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "sd"))
    wanted = set(args.models.split(","))
    for name, module, inputs, output_name in make_models(args.size, args.seed):
        if name not in wanted:
            continue
        axes = RESIZABLE_AXES.get(name) if args.resizable else None
        params, secs = export(name, module, inputs, output_name, os.path.join(tmp, "sd", name), axes)
        print(f"gen_sd.py: {args.size} {name}: {params / 1e6:.2f} M parameters, exported in {secs:.1f} s",
              flush=True)
        del module

    case_output.publish(tmp, out, args.node, "gen_sd.py")
    if args.stamp:
        with open(args.stamp, "w") as f:
            f.write("ok\n")


if __name__ == "__main__":
    main()

"""SD 1.5 checkpoints as model hubs publish them, written from PyTorch weights (tests and benchmarks).

The weights come by their diffusers names ({component: {key: float32 array}}, components text_encoder, unet
and vae, keys as examples/sd/graphs/make_graphs.py's diffusers_key gives them). write_ldm writes the
single-file A1111/ldm layout (the original SD 1.5 release's names, derived here from the diffusers ones
independently of onnxstream-sd-import's own mapping, src/tools/sd15_keys.cpp); write_diffusers the diffusers
folder layout.
"""
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "sd", "graphs"))
from lora_test import write_safetensors  # noqa: E402
from make_graphs import diffusers_key  # noqa: E402

COMPONENTS = (("text_encoder", "text_encoder"), ("unet", "unet"), ("vae_decoder", "vae"))  # gen_sd model, component


def module_weights(models):
    """{component: {diffusers key: float32 array}} of gen_sd's models ({name: module})."""
    return {component: {diffusers_key(component, n): p.detach().numpy().copy()
                        for n, p in models[name].named_parameters()}
            for name, component in COMPONENTS}


LAYERS = 2  # SD 1.5's layers_per_block
UNET_RESNET = {"norm1": "in_layers.0", "conv1": "in_layers.2", "norm2": "out_layers.0", "conv2": "out_layers.3",
               "time_emb_proj": "emb_layers.1", "conv_shortcut": "skip_connection"}
VAE_ATTENTION = {"group_norm": "norm", "to_q": "q", "to_k": "k", "to_v": "v", "to_out.0": "proj_out"}


def rename(rest, table):
    for new, old in table.items():
        if rest.startswith(new + "."):
            return old + rest[len(new):]
    return rest


def ldm_key(component, key, vae_levels, up_attention):
    """The A1111/ldm name of a diffusers parameter name (the layout of the original SD 1.5 release)."""
    if component == "text_encoder":
        return "cond_stage_model.transformer." + key
    if component == "vae":
        if key.startswith("post_quant_conv."):
            return "first_stage_model." + key
        k = key[len("decoder."):]
        if m := re.match(r"up_blocks\.(\d+)\.resnets\.(\d+)\.(.*)", k):
            k = f"up.{vae_levels - 1 - int(m[1])}.block.{m[2]}.{m[3]}"
        elif m := re.match(r"up_blocks\.(\d+)\.upsamplers\.0\.(.*)", k):
            k = f"up.{vae_levels - 1 - int(m[1])}.upsample.{m[2]}"
        elif m := re.match(r"mid_block\.resnets\.(\d)\.(.*)", k):
            k = f"mid.block_{int(m[1]) + 1}.{m[2]}"
        elif m := re.match(r"mid_block\.attentions\.0\.(.*)", k):
            k = "mid.attn_1." + rename(m[1], VAE_ATTENTION)
        k = k.replace("conv_norm_out.", "norm_out.").replace("conv_shortcut.", "nin_shortcut.")
        return "first_stage_model.decoder." + k
    k = key
    for new, old in (("time_embedding.linear_1.", "time_embed.0."), ("time_embedding.linear_2.", "time_embed.2."),
                     ("conv_in.", "input_blocks.0.0."), ("conv_norm_out.", "out.0."), ("conv_out.", "out.2.")):
        if k.startswith(new):
            return "model.diffusion_model." + old + k[len(new):]
    if m := re.match(r"down_blocks\.(\d+)\.resnets\.(\d+)\.(.*)", k):
        k = f"input_blocks.{1 + int(m[1]) * (LAYERS + 1) + int(m[2])}.0.{rename(m[3], UNET_RESNET)}"
    elif m := re.match(r"down_blocks\.(\d+)\.attentions\.(\d+)\.(.*)", k):
        k = f"input_blocks.{1 + int(m[1]) * (LAYERS + 1) + int(m[2])}.1.{m[3]}"
    elif m := re.match(r"down_blocks\.(\d+)\.downsamplers\.0\.conv\.(.*)", k):
        k = f"input_blocks.{1 + int(m[1]) * (LAYERS + 1) + LAYERS}.0.op.{m[2]}"
    elif m := re.match(r"mid_block\.(resnets|attentions)\.(\d)\.(.*)", k):
        index = 1 if m[1] == "attentions" else 2 * int(m[2])
        k = f"middle_block.{index}.{rename(m[3], UNET_RESNET) if m[1] == 'resnets' else m[3]}"
    elif m := re.match(r"up_blocks\.(\d+)\.resnets\.(\d+)\.(.*)", k):
        k = f"output_blocks.{int(m[1]) * (LAYERS + 1) + int(m[2])}.0.{rename(m[3], UNET_RESNET)}"
    elif m := re.match(r"up_blocks\.(\d+)\.attentions\.(\d+)\.(.*)", k):
        k = f"output_blocks.{int(m[1]) * (LAYERS + 1) + int(m[2])}.1.{m[3]}"
    elif m := re.match(r"up_blocks\.(\d+)\.upsamplers\.0\.conv\.(.*)", k):
        b = int(m[1])
        k = f"output_blocks.{b * (LAYERS + 1) + LAYERS}.{2 if b in up_attention else 1}.conv.{m[2]}"
    else:
        raise KeyError(key)
    return "model.diffusion_model." + k




def write_ldm(path, weights, drop=(), reshape=None):
    """weights ({component: {diffusers key: float32 array}}) as one file in the ldm layout, float16, plus
    tensors an import skips. drop: ldm keys left out; reshape: {ldm key: shape} written as zeros of that shape."""
    vae_levels = 1 + max(int(k.split(".")[2]) for k in weights["vae"] if k.startswith("decoder.up_blocks."))
    up_attention = {int(k.split(".")[1]) for k in weights["unet"] if re.match(r"up_blocks\.\d+\.attentions", k)}
    tensors = {}
    for component, of_component in weights.items():
        for key, value in of_component.items():
            name = ldm_key(component, key, vae_levels, up_attention)
            if name in drop:
                continue
            if re.match(r"first_stage_model\.decoder\.mid\.attn_1\.(q|k|v|proj_out)\.weight", name):
                value = value.reshape(value.shape + (1, 1))  # ldm's 1x1 convolutions
            if reshape and name in reshape:
                value = np.zeros(reshape[name], np.float32)
            tensors[name] = value.astype(np.float16)
    tensors["first_stage_model.encoder.conv_in.weight"] = np.zeros((8, 3, 3, 3), np.float16)
    tensors["model_ema.decay"] = np.ones((), np.float32)
    tensors["cond_stage_model.transformer.text_model.embeddings.position_ids"] = np.arange(77, dtype=np.float32)[None]
    write_safetensors(path, tensors)


def write_diffusers(folder, weights):
    """weights as a diffusers folder: the text encoder in bfloat16, the UNet in float32, the VAE in float16
    (as its .fp16 variant)."""
    for sub, file, component, form in (("text_encoder", "model.safetensors", "text_encoder", "BF16"),
                                       ("unet", "diffusion_pytorch_model.safetensors", "unet", "F32"),
                                       ("vae", "diffusion_pytorch_model.fp16.safetensors", "vae", "F16")):
        os.makedirs(os.path.join(folder, sub))
        tensors = {k: ("BF16", v) if form == "BF16" else v.astype(np.float16) if form == "F16" else v
                   for k, v in weights[component].items()}
        write_safetensors(os.path.join(folder, sub, file), tensors)

#!/usr/bin/python3
"""Stable Diffusion XL 1.0 / SDXL Turbo architecture, random weights: both text encoders, UNet and VAE decoder as ONNX.

The networks are gen_sd.py's plain PyTorch building blocks at SDXL's published hyper-parameters, with the
module structure and forward code of transformers' CLIPTextModel / CLIPTextModelWithProjection and diffusers'
UNet2DConditionModel / AutoencoderKL.decoder:

- sdxl_text_encoder_1: CLIP ViT-L/14 text model (width 768, 12 layers, 12 heads, quick_gelu). Input
  `input_ids` (1,77) int64; output `hidden_states_penultimate` (1,77,768), the hidden state after the 11th
  layer (what SDXL's pipeline takes: hidden_states[-2], no final LayerNorm; the 12th layer and the final
  LayerNorm are unused, so the export leaves them out).
- sdxl_text_encoder_2: OpenCLIP ViT-bigG/14 text model as CLIPTextModelWithProjection (width 1280, 32 layers,
  20 heads, exact erf GELU, text_projection 1280->1280 without bias). Input `input_ids` (1,77) int64; outputs
  `text_embeds` (1,1280), the projection of the final LayerNorm's state at the first end token (argmax of the
  ids, transformers' pooling for eos_token_id 2), and `hidden_states_penultimate` (1,77,1280).
- sdxl_unet: UNet2DConditionModel with SDXL's configuration: channels 320, 640, 1280; levels 2 and 3 with 2
  and 10 transformer blocks per Transformer2DModel (mid block 10), 5, 10, 20 heads of 64, linear proj_in /
  proj_out, context 2048 (the two encoders' hidden states concatenated), addition_embed_type "text_time"
  (the pooled text_embeds (B,1280) and the six size/crop time_ids (B,6) through sinusoidal embeddings of 256
  and add_embedding 2816->1280). Inputs `sample` (B,4,h,w), `timestep` (1,) float32,
  `encoder_hidden_states` (B,77,2048), `text_embeds` (B,1280), `time_ids` (B,6) float32; output `out_sample`.
  sdxl_unet_batch2 is the same UNet at batch 2 (cond + uncond in one run, classifier-free guidance).
- sdxl_vae_decoder: SDXL's VAE decoder has SD 1.5's architecture (gen_sd.VaeDecoder): input `input.1`, output
  `sample`; sdxl_vae_decoder_tile and _tile_small are the same weights at half and a quarter of the latent
  size (tiled decoding).

--size full is SDXL itself at a 64x64 latent (512x512 images, SDXL Turbo's size; --latent 128 for SDXL 1.0's
1024x1024); the UNet's 10 GB and the second encoder's 2.8 GB of float32 weights go to external data files, as
torch.onnx.export writes them past 2 GB. --size small keeps every block type and connection (three levels,
the first without attention, several transformer blocks per level, linear projections, text_time embedding,
two encoders of different widths whose hidden states concatenate into the context) but shrinks widths,
depths and the latent to 16x16 so everything exports and runs in seconds (the 'sd' meson test suite). With
--count-only nothing is exported: each model is built in turn and its parameter count printed, at --size
full next to the published one (exit status 1 on a mismatch).

Writes OUT/sd/<model>/ with model.onnx, input_<i>.npy, case.json and names.txt (the layout
tests/tools/ort_reference.js reads); with --node, ort_reference.js adds expected_<k>.npy, ONNX Runtime's
outputs on the same ONNX file. Everything is seeded. The output is built in OUT.tmp and renamed at the end.
"""

import argparse
import gc
import os
import shutil
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, HERE)

import case_output  # noqa: E402
import gen_sd  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

# Published SDXL 1.0 hyper-parameters (SDXL Turbo has the same networks), and small variants with the same
# topology. "transformer_depth" is diffusers' transformer_layers_per_block (level 1 has no attention, its 1 is
# unused); "heads" is diffusers' attention_head_dim, which it uses as the head count.
CONFIGS = {
    "full": {
        "text_1": dict(vocab=49408, positions=77, width=768, layers=12, heads=12, hidden_act="quick_gelu"),
        "text_2": dict(vocab=49408, positions=77, width=1280, layers=32, heads=20, hidden_act="gelu",
                       projection_dim=1280),
        "unet": dict(in_channels=4, out_channels=4, channels=(320, 640, 1280), attention=(False, True, True),
                     layers_per_block=2, heads=(5, 10, 20), transformer_depth=(1, 2, 10), context=2048,
                     use_linear_projection=True, addition_time_embed_dim=256,
                     projection_class_embeddings_input_dim=1280 + 6 * 256, groups=32, tokens=77),
        "vae": gen_sd.CONFIGS["full"]["vae"],
        "latent": 64,
    },
    "small": {
        "text_1": dict(vocab=49408, positions=77, width=32, layers=2, heads=2, hidden_act="quick_gelu"),
        "text_2": dict(vocab=49408, positions=77, width=48, layers=2, heads=3, hidden_act="gelu",
                       projection_dim=32),
        "unet": dict(in_channels=4, out_channels=4, channels=(32, 64, 128), attention=(False, True, True),
                     layers_per_block=2, heads=(1, 2, 4), transformer_depth=(1, 1, 2), context=32 + 48,
                     use_linear_projection=True, addition_time_embed_dim=8,
                     projection_class_embeddings_input_dim=32 + 6 * 8, groups=32, tokens=77),
        "vae": gen_sd.CONFIGS["small"]["vae"],
        "latent": 16,
    },
}

# Parameter counts of the published modules (transformers' CLIPTextModel ViT-L/14 and
# CLIPTextModelWithProjection bigG/14, diffusers' SDXL UNet2DConditionModel; the VAE decoder with its
# post_quant_conv is AutoencoderKL's decoder slice, SD 1.5's and SDXL's alike).
PUBLISHED = {
    "sdxl_text_encoder_1": 123_060_480,
    "sdxl_text_encoder_2": 694_659_840,
    "sdxl_unet": 2_567_463_684,
    "sdxl_vae_decoder": 49_490_199,
}

MODELS = ["sdxl_text_encoder_1", "sdxl_text_encoder_2", "sdxl_unet", "sdxl_vae_decoder", "sdxl_vae_decoder_tile",
          "sdxl_unet_batch2", "sdxl_vae_decoder_tile_small"]

BOS, EOS = 49406, 49407


# ----------------------------------------------------------------------------------------------------------
# Text encoders (transformers' CLIPTextModel / CLIPTextModelWithProjection as SDXL's pipeline calls them,
# with output_hidden_states=True)

class ClipTextEncoderPenultimate(gen_sd.ClipTextEncoder):
    """CLIPTextModel returning hidden_states[-2] only (SDXL's first encoder: its pooled output is unused)."""

    def forward(self, input_ids):
        return self.encode(input_ids)[1][-2]


class ClipTextEncoderWithProjection(gen_sd.ClipTextEncoder):
    """CLIPTextModelWithProjection: (text_embeds, hidden_states[-2])."""

    def __init__(self, vocab, positions, width, layers, heads, hidden_act, projection_dim):
        super().__init__(vocab, positions, width, layers, heads, hidden_act)
        self.text_projection = nn.Linear(width, projection_dim, bias=False)

    def forward(self, input_ids):
        last_hidden_state, hidden_states = self.encode(input_ids)
        # transformers' pooling when eos_token_id == 2 (SDXL's configs): the state at the highest id, i.e.
        # the first end token 49407 (the ids are (batch, tokens) already, so its view(-1, tokens) is a no-op).
        pooled_output = last_hidden_state[
            torch.arange(last_hidden_state.shape[0]),
            input_ids.to(dtype=torch.int).argmax(dim=-1),
        ]
        return self.text_projection(pooled_output), hidden_states[-2]


def prompt_ids(rng, positions, pad):
    """A realistic prompt layout: start token, a few words, end token, then padding."""
    ids = np.full((1, positions), pad, dtype=np.int64)
    ids[0, 0] = BOS
    ids[0, 1:9] = rng.integers(0, BOS, 8)
    ids[0, 9] = EOS
    return ids


# ----------------------------------------------------------------------------------------------------------

def build(family, cfg):
    """A freshly initialised module of one family: text_1, text_2, unet or vae."""
    if family == "text_1":
        return ClipTextEncoderPenultimate(**cfg["text_1"])
    if family == "text_2":
        return ClipTextEncoderWithProjection(**cfg["text_2"])
    if family == "unet":
        return gen_sd.UNet(**cfg["unet"])
    return gen_sd.VaeDecoder(**cfg["vae"])


FAMILY = {"sdxl_text_encoder_1": "text_1", "sdxl_text_encoder_2": "text_2", "sdxl_unet": "unet",
          "sdxl_unet_batch2": "unet", "sdxl_vae_decoder": "vae", "sdxl_vae_decoder_tile": "vae",
          "sdxl_vae_decoder_tile_small": "vae"}
SEED_OFFSET = {"text_1": 0, "text_2": 1, "unet": 2, "vae": 3}


def cases(size, seed, wanted, latent):
    """Yields (name, module, [(input name, array)], output names) for the wanted models, one family at a time:
    a family's module is built (seeded) when first needed and dropped before the next family's, so the full
    models never sit in memory together. Each model's inputs come from its own seeded generator."""
    cfg = CONFIGS[size]
    u = cfg["unet"]
    image = 8 * latent if size == "full" else 512  # the small latent stands for a 512x512 image
    # SDXL's add_time_ids: original size (h, w), crop top-left (0, 0), target size (h, w).
    time_ids = [image, image, 0, 0, image, image]
    by_family = {}
    for name in MODELS:
        if name in wanted:
            by_family.setdefault(FAMILY[name], []).append(name)
    for family, names in by_family.items():
        torch.manual_seed(seed + SEED_OFFSET[family])
        module = build(family, cfg).eval()
        for name in names:
            rng = np.random.default_rng([seed, MODELS.index(name)])
            if name == "sdxl_text_encoder_1":
                # The first tokenizer pads with the end token, the second with "!" (id 0).
                inputs = [("input_ids", prompt_ids(rng, cfg["text_1"]["positions"], EOS))]
                outputs = ["hidden_states_penultimate"]
            elif name == "sdxl_text_encoder_2":
                inputs = [("input_ids", prompt_ids(rng, cfg["text_2"]["positions"], 0))]
                outputs = ["text_embeds", "hidden_states_penultimate"]
            elif family == "unet":
                b = 2 if name == "sdxl_unet_batch2" else 1
                inputs = [
                    ("sample", rng.standard_normal((b, u["in_channels"], latent, latent)).astype(np.float32)),
                    ("timestep", np.array([999.0 if b == 1 else 761.0], dtype=np.float32)),
                    ("encoder_hidden_states", rng.standard_normal((b, u["tokens"], u["context"])).astype(np.float32)),
                    ("text_embeds", rng.standard_normal((b, cfg["text_2"]["projection_dim"])).astype(np.float32)),
                    ("time_ids", np.array([time_ids] * b, dtype=np.float32)),
                ]
                outputs = ["out_sample"]
            else:
                ls = {"sdxl_vae_decoder": latent, "sdxl_vae_decoder_tile": latent // 2}.get(name, latent // 4)
                inputs = [("input.1", rng.standard_normal((1, cfg["vae"]["latent"], ls, ls)).astype(np.float32))]
                outputs = ["sample"]
            yield name, module, inputs, outputs
        del module
        gc.collect()


def count_only(size):
    """Builds each family in turn and prints its parameter count; returns the number of mismatches with the
    published counts (at --size full)."""
    cfg = CONFIGS[size]
    mismatches = 0
    for name, family in [("sdxl_text_encoder_1", "text_1"), ("sdxl_text_encoder_2", "text_2"),
                         ("sdxl_unet", "unet"), ("sdxl_vae_decoder", "vae")]:
        torch.manual_seed(0)
        module = build(family, cfg)
        params = sum(p.numel() for p in module.parameters())
        del module
        gc.collect()
        if size == "full":
            ok = params == PUBLISHED[name]
            mismatches += not ok
            print(f"gen_sdxl.py: {name}: {params:,} parameters, published {PUBLISHED[name]:,}: "
                  f"{'match' if ok else 'MISMATCH'}", flush=True)
        else:
            print(f"gen_sdxl.py: {size} {name}: {params:,} parameters", flush=True)
    return mismatches


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="output folder (replaced); required unless --count-only")
    ap.add_argument("--size", choices=sorted(CONFIGS), default="small")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated subset")
    ap.add_argument("--latent", type=int, help="latent size of the UNet and the VAE decoder (default: 64 at "
                                               "--size full, 16 at --size small; the tile decoder takes half)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--node", help="node executable: also compute ONNX Runtime's outputs")
    ap.add_argument("--stamp", help="file to write when everything was generated")
    ap.add_argument("--count-only", action="store_true",
                    help="print each model's parameter count (and the published one at --size full); no export")
    args = ap.parse_args()

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    if args.count_only:
        sys.exit(1 if count_only(args.size) else 0)
    if not args.out:
        ap.error("--out is required")
    wanted = set(args.models.split(","))
    unknown = wanted - set(MODELS)
    if unknown:
        ap.error(f"unknown models {sorted(unknown)}; known: {','.join(MODELS)}")
    latent = args.latent or CONFIGS[args.size]["latent"]
    if latent % 8:
        ap.error("--latent must be a multiple of 8 (the UNet halves it twice, the tile decoder takes half)")

    out = os.path.abspath(args.out)
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "sd"))
    for name, module, inputs, outputs in cases(args.size, args.seed, wanted, latent):
        params, secs = gen_sd.export(name, module, inputs, outputs, os.path.join(tmp, "sd", name))
        print(f"gen_sdxl.py: {args.size} {name}: {params / 1e6:.2f} M parameters, exported in {secs:.1f} s",
              flush=True)
        del module  # the generator drops its own reference before building the next family
    case_output.publish(tmp, out, args.node, "gen_sdxl.py")
    if args.stamp:
        with open(args.stamp, "w") as f:
            f.write("ok\n")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Make a Stable Diffusion 1.5-architecture models folder for `sd` when you do not have trained weights.

Generates the text encoder, UNet, VAE decoder and 32x32-tile VAE decoder with tests/sd/gen_sd.py (PyTorch
from Debian, RANDOM weights: the images are coloured noise, but every op of the real pipeline runs) and
converts them with onnxstream-convert into OnnxStream's folder layout:
  OUT/text_encoder_fp32/  OUT/unet_fp16/  OUT/vae_decoder_fp32/  OUT/vae_decoder_fp32_l32/ and _l16/
(the tile decoders: half and quarter of the latent size, named after SD 1.5's 64x64 latents)
--size small (default) takes seconds and a few MB; --size full is SD 1.5's published size (860 M UNet
parameters: ~10 minutes and ~10 GB of temporary disk).

usage: examples/sd/make_models.py --build BUILD_DIR --out DIR [--size small|full] [--onnx GEN_DIR]
  --onnx  reuse a gen_sd.py output folder (sd/<model>/model.onnx); missing models are generated
Then: BUILD_DIR/examples/sd/sd --models-path DIR --tokenizer ../shared/data/clip/bpe_simple_vocab_16e6.txt.gz ...
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GEN = os.path.join(ROOT, "tests", "sd", "gen_sd.py")
MODELS = {  # gen_sd.py model -> (folder in the SD layout, converter flags)
    "text_encoder": ("text_encoder_fp32", []),
    "unet": ("unet_fp16", ["--fp16"]),
    "vae_decoder": ("vae_decoder_fp32", []),
    "vae_decoder_tile": ("vae_decoder_fp32_l32", []),        # half the latent: 32x32 at full size
    "vae_decoder_tile_small": ("vae_decoder_fp32_l16", []),  # a quarter: 16x16 at full size
}


def log(msg):
    print(f"make_models.py: {msg}", file=sys.stderr, flush=True)


def make_models(build, out, size="small", onnx_dir=None, work=None):
    """Generate what onnx_dir lacks into work (default OUT.onnx), convert everything into out.
    Returns {folder: conversion seconds} for the models converted (up-to-date folders are kept)."""
    convert = os.path.join(os.path.abspath(build), "src", "tools", "onnxstream-convert")
    if not os.access(convert, os.X_OK):
        sys.exit(f"make_models.py: {convert} not found; build first (ninja -C {build})")
    out = os.path.abspath(out)
    work = os.path.abspath(work or out.rstrip("/") + ".onnx")
    onnx = {m: os.path.join(os.path.abspath(onnx_dir), "sd", m, "model.onnx") for m in MODELS} if onnx_dir else {}
    missing = [m for m in MODELS if not os.path.exists(onnx.get(m, ""))]
    if missing:
        if not all(os.path.exists(os.path.join(work, "sd", m, "model.onnx")) for m in missing):
            log(f"generating {', '.join(missing)} ({size}, random weights) with gen_sd.py")
            subprocess.run(["/usr/bin/python3", GEN, "--size", size, "--out", work, "--models", ",".join(missing)],
                           check=True, stdout=sys.stderr)
        for m in missing:
            onnx[m] = os.path.join(work, "sd", m, "model.onnx")

    os.makedirs(out, exist_ok=True)
    timings = {}
    for m, (folder, flags) in MODELS.items():
        dst = os.path.join(out, folder)
        stamp = os.path.join(dst, "model.txt")
        if os.path.exists(stamp) and os.path.getmtime(stamp) > max(os.path.getmtime(onnx[m]), os.path.getmtime(convert)):
            continue
        shutil.rmtree(dst, ignore_errors=True)
        log(f"converting {m} -> {folder}")
        t0 = time.time()
        subprocess.run([convert, onnx[m], dst] + flags, check=True, stdout=subprocess.DEVNULL)
        timings[folder] = round(time.time() - t0, 1)
    return timings


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--size", choices=["small", "full"], default="small")
    ap.add_argument("--onnx")
    args = ap.parse_args()
    make_models(args.build, args.out, args.size, args.onnx)
    log(f"models ready in {os.path.abspath(args.out)} (random weights)")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Make a Stable Diffusion models folder for `sd` when you do not have trained weights.

Generates the models with tests/sd/gen_sd.py or gen_sdxl.py (PyTorch from Debian, RANDOM weights: the images
are coloured noise, but every op of the real pipeline runs) and converts them with onnxstream-convert into
OnnxStream's folder layout:
  --family sd15 (default): OUT/text_encoder_fp32/  OUT/unet_fp16/  OUT/vae_decoder_fp32/
                           OUT/vae_decoder_fp32_l32/ and _l16/
  --family sdxl:           OUT/sdxl_text_encoder_1_fp32/  OUT/sdxl_text_encoder_2_fp32/  OUT/sdxl_unet_fp16/
                           OUT/sdxl_vae_decoder_fp32/  OUT/sdxl_vae_decoder_fp32_l32/ and _l16/
(the tile decoders: half and quarter of the latent size). The SDXL UNet is made for 64x64 latents (512x512
images, SDXL Turbo's size): run it with `sd --turbo`, or `sd --xl` for the base model's pipeline.
--size small (default) takes seconds and a few MB; --size full is the published size (SD 1.5: 860 M UNet
parameters, ~10 minutes and ~10 GB of temporary disk; SDXL: 2.6 G UNet parameters, about 3 times that).

--resizable (SD 1.5) converts the UNet and the VAE decoder for any image size (`sd --width W --height H`).
usage: examples/sd/make_models.py --build BUILD_DIR --out DIR [--family sd15|sdxl] [--size small|full] [--resizable]
                                  [--onnx GEN_DIR]
  --onnx  reuse a gen_sd.py / gen_sdxl.py output folder (sd/<model>/model.onnx); missing models are generated
Then: BUILD_DIR/examples/sd/sd --models-path DIR [--turbo] --tokenizer ../shared/data/clip/bpe_simple_vocab_16e6.txt.gz ...
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FAMILIES = {  # family -> (generator, {generator's model -> (folder in the layout, converter flags)})
    "sd15": (os.path.join(ROOT, "tests", "sd", "gen_sd.py"), {
        "text_encoder": ("text_encoder_fp32", []),
        "unet": ("unet_fp16", ["--fp16"]),
        "vae_decoder": ("vae_decoder_fp32", []),
        "vae_decoder_tile": ("vae_decoder_fp32_l32", []),        # half the latent: 32x32 at full size
        "vae_decoder_tile_small": ("vae_decoder_fp32_l16", []),  # a quarter: 16x16 at full size
    }),
    # SDXL's VAE decoder stays float32: with its published weights it overflows float16.
    "sdxl": (os.path.join(ROOT, "tests", "sd", "gen_sdxl.py"), {
        "sdxl_text_encoder_1": ("sdxl_text_encoder_1_fp32", []),
        "sdxl_text_encoder_2": ("sdxl_text_encoder_2_fp32", []),
        "sdxl_unet": ("sdxl_unet_fp16", ["--fp16"]),
        "sdxl_vae_decoder": ("sdxl_vae_decoder_fp32", []),
        "sdxl_vae_decoder_tile": ("sdxl_vae_decoder_fp32_l32", []),
        "sdxl_vae_decoder_tile_small": ("sdxl_vae_decoder_fp32_l16", []),
    }),
}


def log(msg):
    print(f"make_models.py: {msg}", file=sys.stderr, flush=True)


# --resizable: the models converted for any image size (onnxstream-convert --resizable), with the probe size
# each needs: 3/2 of the latent height and 5/4 of its width, which every UNet level still divides.
RESIZABLE = {"unet": "sample", "vae_decoder": "input.1"}


def resizable_flags(onnx_path, input_name):
    """--input-shape (the exported size) and --resizable (the probe size) for a model exported with
    gen_sd's RESIZABLE_AXES."""
    import onnx
    model = onnx.load(onnx_path, load_external_data=False)
    inp = next(i for i in model.graph.input if i.name == input_name)
    dims = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    case = json.load(open(os.path.join(os.path.dirname(onnx_path), "case.json")))
    shape = next(e["shape"] for e in case["inputs"] if e["name"] == input_name)
    probe = list(shape[:2]) + [shape[2] * 3 // 2, shape[3] * 5 // 4]
    if dims[2] != 0 or dims[3] != 0:
        sys.exit(f"make_models.py: {onnx_path}: {input_name} has a fixed size; export it with gen_sd.py --resizable")
    return ["--input-shape", f"{input_name}={','.join(map(str, shape))}",
            "--resizable", f"{input_name}={','.join(map(str, probe))}"]


def make_models(build, out, size="small", onnx_dir=None, work=None, family="sd15", convert=None, resizable=False):
    """Generate what onnx_dir lacks into work (default OUT.onnx), convert everything into out with convert
    (default: build's onnxstream-convert). Returns {folder: conversion seconds} for the models converted
    (up-to-date folders are kept)."""
    gen, models = FAMILIES[family]
    convert = convert or os.path.join(os.path.abspath(build), "src", "tools", "onnxstream-convert")
    if not os.access(convert, os.X_OK):
        sys.exit(f"make_models.py: {convert} not found; build first (ninja -C {build})")
    out = os.path.abspath(out)
    work = os.path.abspath(work or out.rstrip("/") + (".onnx-resizable" if resizable else ".onnx"))
    if onnx_dir and os.path.abspath(onnx_dir) == work:
        sys.exit("make_models.py: the folder for generated models must not be the --onnx folder (generating "
                 "replaces it)")
    onnx = {m: os.path.join(os.path.abspath(onnx_dir), "sd", m, "model.onnx") for m in models} if onnx_dir else {}
    missing = [m for m in models if not os.path.exists(onnx.get(m, ""))]
    if missing:
        if not all(os.path.exists(os.path.join(work, "sd", m, "model.onnx")) for m in missing):
            log(f"generating {', '.join(missing)} ({size}, random weights) with {os.path.basename(gen)}")
            subprocess.run(["/usr/bin/python3", gen, "--size", size, "--out", work, "--models", ",".join(missing)]
                           + (["--resizable"] if resizable else []), check=True, stdout=sys.stderr)
        for m in missing:
            onnx[m] = os.path.join(work, "sd", m, "model.onnx")

    os.makedirs(out, exist_ok=True)
    timings = {}
    for m, (folder, flags) in models.items():
        dst = os.path.join(out, folder)
        stamp = os.path.join(dst, "model.txt")
        if os.path.exists(stamp) and os.path.getmtime(stamp) > max(os.path.getmtime(onnx[m]), os.path.getmtime(convert)):
            continue
        shutil.rmtree(dst, ignore_errors=True)
        log(f"converting {m} -> {folder}")
        t0 = time.time()
        extra = resizable_flags(onnx[m], RESIZABLE[m]) if resizable and m in RESIZABLE else []
        subprocess.run([convert, onnx[m], dst] + flags + extra, check=True, stdout=subprocess.DEVNULL)
        timings[folder] = round(time.time() - t0, 1)
    return timings


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--family", choices=sorted(FAMILIES), default="sd15")
    ap.add_argument("--size", choices=["small", "full"], default="small")
    ap.add_argument("--onnx")
    ap.add_argument("--resizable", action="store_true",
                    help="SD 1.5: the UNet and the VAE decoder for any image size (sd --width/--height)")
    args = ap.parse_args()
    if args.resizable and args.family != "sd15":
        ap.error("--resizable is for --family sd15")
    make_models(args.build, args.out, args.size, args.onnx, family=args.family, resizable=args.resizable)
    log(f"models ready in {os.path.abspath(args.out)} (random weights)")


if __name__ == "__main__":
    main()

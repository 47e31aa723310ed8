#!/usr/bin/env python3
"""onnxstream-sd-import against PyTorch: SD 1.5 checkpoints in both layouts, imported and run.

The graph data of the small SD-architecture models is made first (examples/sd/graphs/make_graphs.py --size
small). Then gen_sd.py's small text encoder, UNet and VAE decoder with other weights than the graph data's
(another seed) are written as checkpoints the way model hubs publish them:
  - one file in the A1111/ldm layout (cond_stage_model.transformer.*, model.diffusion_model.*,
    first_stage_model.*), float16, with the tensors the import must skip (the VAE encoder, EMA, position ids);
  - a diffusers folder: text_encoder/model.safetensors in bfloat16, unet/diffusion_pytorch_model.safetensors
    in float32, vae/diffusion_pytorch_model.fp16.safetensors in float16.
The ldm names here are written independently of the tool's mapping (src/tools/sd15_keys.cpp). Each import
is run by onnxstream-run model by model against PyTorch running the checkpoint's weights (float32 models
within 1e-4, the float16 UNet within 1e-2), and `sd` makes an image from it. Then the bad checkpoints:
missing and mis-shaped tensors (one error listing them all, nothing written), an existing output folder, a
file that is no safetensors.

usage: sd_import_test.py --convert onnxstream-convert --run onnxstream-run --importer onnxstream-sd-import
                         --work DIR [--sd sd --tokenizer VOCAB]
"""
import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, os.path.join(ROOT, "examples", "sd", "graphs"))
import cross_exe  # noqa: E402
from checklist import check, finish, rel_l2  # noqa: E402
from run_folder import run_folder  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import gen_sd  # noqa: E402
from lora_test import bf16_rounded  # noqa: E402
from sd15_checkpoint import COMPONENTS, module_weights, write_diffusers, write_ldm  # noqa: E402
from make_graphs import diffusers_key  # noqa: E402

MODELS = {  # folder -> (gen_sd model, component, float16 weights)
    "text_encoder_fp32": ("text_encoder", "text_encoder", False),
    "unet_fp16": ("unet", "unet", True),
    "vae_decoder_fp32": ("vae_decoder", "vae", False),
    "vae_decoder_fp32_l32": ("vae_decoder_tile", "vae", False),
    "vae_decoder_fp32_l16": ("vae_decoder_tile_small", "vae", False),
}


class User:
    """The checkpoint's models (gen_sd's small ones, seed 777) and their inputs."""

    def __init__(self):
        self.models = {name: (module, inputs, output) for name, module, inputs, output in gen_sd.make_models("small", 777)}
        self.weights = module_weights({name: m[0] for name, m in self.models.items()})

    def load(self, rounded):
        """Puts rounded(component, key, value) of every weight into the PyTorch models."""
        for name, component in COMPONENTS:
            module = self.models[name][0]
            with torch.no_grad():
                for n, p in module.named_parameters():
                    key = diffusers_key(component, n)
                    p.copy_(torch.from_numpy(rounded(component, key, self.weights[component][key])))


def write_hf_tokenizer(folder, bpe_gz):
    """Hugging Face's CLIP tokenizer files (vocab.json, merges.txt), as model hubs ship them, made from OpenAI's
    bpe_simple_vocab_16e6.txt.gz the way CLIP's SimpleTokenizer builds its vocabulary."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) + \
        list(range(ord("\u00ae"), ord("\u00ff") + 1))
    chars, extra = printable[:], 0
    for b in range(256):
        if b not in printable:
            chars.append(256 + extra)
            extra += 1
    byte_tokens = [chr(c) for c in chars]
    merges = gzip.open(bpe_gz).read().decode("utf-8").split("\n")[1:49152 - 256 - 2 + 1]
    vocab = byte_tokens + [t + "</w>" for t in byte_tokens] + ["".join(m.split()) for m in merges]
    vocab += ["<|startoftext|>", "<|endoftext|>"]
    os.makedirs(folder)
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump({t: i for i, t in enumerate(vocab)}, f, ensure_ascii=False)
    with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "\n".join(merges) + "\n")


def import_into(args, checkpoint, out):
    return subprocess.run([args.importer, "--graphs", args.graphs, checkpoint, out], capture_output=True, text=True)


def compare(args, user, out, label):
    """Each imported model run by onnxstream-run against PyTorch with the checkpoint's weights."""
    for folder, (model, component, fp16) in MODELS.items():
        module, inputs, output = user.models[model]
        with torch.no_grad():
            want = module(*[torch.from_numpy(a) for _, a in inputs])
        want = (want[0] if isinstance(want, tuple) else want).numpy()
        p, got = run_folder(args.run, os.path.join(out, folder), inputs, args.work)
        check(p.returncode == 0, f"{label}: onnxstream-run {folder}" + (f" ({p.stderr.strip()[-300:]})" if p.returncode else ""))
        if p.returncode != 0:
            continue
        err, bound = rel_l2(got, want), 1e-2 if fp16 else 1e-4
        check(got.shape == want.shape and err <= bound,
              f"{label}: {folder} vs PyTorch with the checkpoint's weights: rel L2 {err:.3g} (bound {bound:g})")
        names = sorted(os.listdir(os.path.join(out, folder)))
        check(not any(n.endswith(".bin") for n in names) and "model.safetensors" in names,
              f"{label}: {folder} holds its weights in one file ({', '.join(names)})")


def bad_checkpoints(args, user):
    base = os.path.join(args.work, "bad")
    os.makedirs(base)
    missing = ["model.diffusion_model.input_blocks.1.1.proj_in.weight", "first_stage_model.decoder.up.0.block.1.conv2.bias"]
    misshaped = "model.diffusion_model.out.2.weight"
    ckpt = os.path.join(base, "bad.safetensors")
    write_ldm(ckpt, user.weights, drop=missing, reshape={misshaped: (4, 32, 3, 1)})
    out = os.path.join(base, "out")
    r = import_into(args, ckpt, out)
    named = all(k in r.stderr for k in ("unet:down_blocks.0.attentions.0.proj_in.weight",
                                        "vae:decoder.up_blocks.2.resnets.1.conv2.bias", "unet:conv_out.weight"))
    check(r.returncode == 1 and named, f"missing and mis-shaped tensors: one error naming all three ({r.stderr.strip()[-600:]})")
    check(not os.path.exists(out) or not os.listdir(out), "a refused checkpoint writes no model folder")

    good = os.path.join(args.work, "ldm.safetensors")
    os.makedirs(os.path.join(base, "taken", "unet_fp16"))
    r = import_into(args, good, os.path.join(base, "taken"))
    check(r.returncode == 1 and "unet_fp16" in r.stderr, f"an existing model folder is refused ({r.stderr.strip()[-200:]})")

    for what, data in (("a pickle checkpoint", b"\x80\x02}q\x00(X\x05\x00\x00\x00state"),
                       ("a truncated header", open(good, "rb").read(4000))):
        path = os.path.join(base, "x.safetensors")
        with open(path, "wb") as f:
            f.write(data)
        r = import_into(args, path, os.path.join(base, "out2"))
        check(r.returncode == 1 and r.stderr.startswith("onnxstream-sd-import: ") and "Traceback" not in r.stderr,
              f"{what}: a clear error ({r.stderr.strip()[-200:]})")
    r = import_into(args, base, os.path.join(base, "out3"))
    check(r.returncode == 1 and "diffusers" in r.stderr, f"a folder without a diffusers layout ({r.stderr.strip()[-200:]})")


def main():
    ap = argparse.ArgumentParser()
    for flag in ("--convert", "--run", "--importer", "--work"):
        ap.add_argument(flag, required=True)
    ap.add_argument("--sd")
    ap.add_argument("--tokenizer")
    args = ap.parse_args()
    args.convert, args.run, args.importer = (cross_exe.wrap(p) for p in (args.convert, args.run, args.importer))
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    args.graphs = os.path.join(args.work, "graphs")
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "examples", "sd", "graphs", "make_graphs.py"),
                    "--convert", args.convert, "--size", "small", "--out", args.graphs], check=True)

    user = User()
    ldm = os.path.join(args.work, "ldm.safetensors")
    write_ldm(ldm, user.weights)
    out = os.path.join(args.work, "imported_ldm")
    r = import_into(args, ldm, out)
    check(r.returncode == 0, f"single-file float16 checkpoint imports ({r.stderr.strip()[-300:]})")
    if r.returncode == 0:
        user.load(lambda c, k, v: v.astype(np.float16).astype(np.float32))
        compare(args, user, out, "single file")
        if args.sd:
            png = os.path.join(args.work, "image.png")
            s = subprocess.run([cross_exe.wrap(args.sd), "--models-path", out, "--tokenizer", args.tokenizer,
                                "--prompt", "a lighthouse", "--steps", "2", "--seed", "5", "--output", png],
                               capture_output=True, text=True)
            check(s.returncode == 0 and os.path.getsize(png) > 0, f"sd makes an image from the import ({s.stderr.strip()[-300:]})")
            # The graphs are resizable: another size from the same folders (small VAE: 4 pixels per latent).
            s = subprocess.run([cross_exe.wrap(args.sd), "--models-path", out, "--tokenizer", args.tokenizer,
                                "--prompt", "a lighthouse", "--steps", "2", "--seed", "5", "--width", "96",
                                "--height", "64", "--output", png], capture_output=True, text=True)
            from PIL import Image
            size = Image.open(png).size if s.returncode == 0 else None
            check(size == (48, 32), f"sd --width 96 --height 64 from the import: a {size} image ({s.stderr.strip()[-200:]})")

    diffusers = os.path.join(args.work, "diffusers")
    write_diffusers(diffusers, user.weights)
    if args.tokenizer:
        write_hf_tokenizer(os.path.join(diffusers, "tokenizer"), args.tokenizer)
    out = os.path.join(args.work, "imported_diffusers")
    r = import_into(args, diffusers, out)
    check(r.returncode == 0, f"diffusers folder (bf16, f32, f16) imports ({r.stderr.strip()[-300:]})")
    if r.returncode == 0 and args.sd:
        prompt = "A (very) detailed lighthouse, at night: Kodachrome, 35mm! naïve café"
        ids = [subprocess.run([cross_exe.wrap(args.sd), *where, "--print-tokens", "--prompt", prompt],
                              capture_output=True, text=True).stdout
               for where in (["--models-path", out], ["--tokenizer", args.tokenizer])]
        check(ids[0] and ids[0] == ids[1],
              f"the tokenizer imported from vocab.json + merges.txt gives the CLIP vocabulary's ids ({ids[0].strip()[:80]})")
    if r.returncode == 0:
        rounding = {"text_encoder": bf16_rounded, "unet": lambda v: v,
                    "vae": lambda v: v.astype(np.float16).astype(np.float32)}
        user.load(lambda c, k, v: rounding[c](v))
        compare(args, user, out, "diffusers")

    bad_checkpoints(args, user)
    finish()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""LoRA while streaming against PyTorch with the merged weights.

gen_sd.py's small UNet and text encoder (the weights of the sd cases, rebuilt from the same seed) get two
LoRAs: one in kohya/A1111 form (lora_unet_* / lora_te_* keys, float32, with alpha) on every Linear and Conv2d
layer, one in diffusers/PEFT form (unet.*.lora_A/lora_B keys, float16, no alpha) on the attention
projections. PyTorch merges them into the weights (W + scale * alpha / rank * up @ down) and runs the merged
model; onnxstream-run runs the unmerged converted folder with --lora and must agree. Then the bad inputs:
modules of another model, shapes that do not fit, LoRA variants that are not up/down pairs.

usage: lora_test.py --cases SD_CASES --convert onnxstream-convert --run onnxstream-run --work DIR
"""
import argparse
import copy
import json
import os
import shutil
import struct
import subprocess
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import cross_exe  # noqa: E402
from checklist import check, finish, rel_l2  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import gen_sd  # noqa: E402

RANK = 4


def bf16_bits(a):
    """float32 -> bfloat16 bits, rounded to nearest even."""
    bits = a.astype(np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_rounded(a):
    return (bf16_bits(a).astype(np.uint32) << 16).view(np.float32)


def write_safetensors(path, tensors):
    """tensors: name -> numpy array (float32, float16) or ("BF16", float32 array). The format's layout:
    8-byte header length, JSON header, data in header order."""
    header, blobs, offset = {}, [], 0
    for name, value in tensors.items():
        if isinstance(value, tuple):  # ("BF16", float32 array)
            raw, dtype, shape = bf16_bits(value[1]).tobytes(), "BF16", value[1].shape
        else:
            raw = np.ascontiguousarray(value).tobytes()
            dtype, shape = {np.float32: "F32", np.float16: "F16"}[value.dtype.type], value.shape
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def layers(module):
    """(path, module) of every Linear and Conv2d."""
    return [(n, m) for n, m in module.named_modules() if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d))]


def make_factors(rng, m):
    """Random up/down for a layer: Linear [out, r] x [r, in]; Conv2d [out, r, 1, 1] x [r, in, kh, kw]."""
    w = m.weight
    if isinstance(m, torch.nn.Linear):
        up_shape, down_shape = (w.shape[0], RANK), (RANK, w.shape[1])
    else:
        up_shape, down_shape = (w.shape[0], RANK, 1, 1), (RANK,) + tuple(w.shape[1:])
    fan_in = int(np.prod(down_shape[1:]))
    # float32 at the end: NumPy 2 keeps float64 for a float32 array divided by a NumPy float64 scalar.
    return ((rng.standard_normal(up_shape) * 0.1).astype(np.float32),
            (rng.standard_normal(down_shape) / np.sqrt(fan_in)).astype(np.float32))


def merge(module, entries):
    """A copy of module with W += factor * up @ down for each (path, up, down, factor)."""
    merged = copy.deepcopy(module)
    mods = dict(merged.named_modules())
    with torch.no_grad():
        for path, up, down, factor in entries:
            w = mods[path].weight
            delta = factor * (up.reshape(up.shape[0], -1).astype(np.float64) @ down.reshape(down.shape[0], -1))
            w += torch.from_numpy(delta.reshape(tuple(w.shape)).astype(np.float32))
    return merged


def kohya_key(prefix, path):
    return prefix + path.replace(".", "_")


class Case:
    """A gen_sd case: its inputs and output names, the converted folders, and runs of onnxstream-run."""

    def __init__(self, args, name):
        self.dir = os.path.join(args.cases, "sd", name)
        with open(os.path.join(self.dir, "case.json")) as f:
            meta = json.load(f)
        self.inputs = [(e["name"], os.path.join(self.dir, e["file"])) for e in meta["inputs"]]
        self.output = meta["outputs"][0]["name"]
        self.args, self.name = args, name

    def arrays(self):
        return [torch.from_numpy(np.load(f)) for _, f in self.inputs]

    def convert(self, *flags):
        folder = os.path.join(self.args.work, self.name + "".join(flags).replace("-", "_"))
        subprocess.run([self.args.convert, os.path.join(self.dir, "model.onnx"), folder, *flags], check=True,
                       stdout=subprocess.DEVNULL)
        return folder

    def run(self, folder, *extra):
        out = os.path.join(self.args.work, "out")
        shutil.rmtree(out, ignore_errors=True)
        cmd = [self.args.run, folder, "--output-dir", out, *extra]
        for n, f in self.inputs:
            cmd += ["--input", f"{n}={f}"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        got = None
        if p.returncode == 0:  # one output, written under its escaped name
            got = np.load(os.path.join(out, os.listdir(out)[0]))
        return p, got


def torch_output(module, case):
    with torch.no_grad():
        y = module(*case.arrays())
    return (y[0] if isinstance(y, tuple) else y).numpy()


def sd_cli(args, ucase, tcase, unet_merged, text_merged, lora1, lora2, s1, s2):
    """`sd --lora` on folders of the unmerged models gives the latents of the same run on folders converted
    from PyTorch's merged models (exported to ONNX here)."""
    base, merged = os.path.join(args.work, "base"), os.path.join(args.work, "merged")
    vae = Case(args, "vae_decoder")
    for folder, te_onnx, unet_onnx in ((base, None, None), (merged, "te_merged", "unet_merged")):
        os.makedirs(folder)
        for case, module, exported, dst in ((tcase, text_merged, te_onnx, "text_encoder_fp32"),
                                            (ucase, unet_merged, unet_onnx, "unet_fp32"),
                                            (vae, None, None, "vae_decoder_fp32")):
            onnx = os.path.join(case.dir, "model.onnx")
            if exported:
                out_dir = os.path.join(args.work, exported)
                gen_sd.export(exported, module, [(n, np.load(f)) for n, f in case.inputs], case.output, out_dir)
                onnx = os.path.join(out_dir, "model.onnx")
            subprocess.run([args.convert, onnx, os.path.join(folder, dst)], check=True, stdout=subprocess.DEVNULL)
    common = [args.sd, "--tokenizer", args.tokenizer, "--prompt", "a lighthouse in a storm", "--steps", "2",
              "--seed", "11", "--latents-only"]
    lat_base, lat_merged = os.path.join(args.work, "base.bin"), os.path.join(args.work, "merged.bin")
    r = subprocess.run(common + ["--models-path", base, "--lora", f"{lora1}:{s1}", "--lora", f"{lora2}:{s2}",
                                 "--save-latents", lat_base], capture_output=True, text=True)
    check(r.returncode == 0, f"sd --lora runs ({r.stderr.strip()[-300:]})")
    check("module(s) in the text encoder" in r.stderr and "module(s) in the unet" in r.stderr,
          "sd --lora reports the modules each model took")
    m = subprocess.run(common + ["--models-path", merged, "--save-latents", lat_merged], capture_output=True, text=True)
    check(m.returncode == 0, f"sd runs the merged models ({m.stderr.strip()[-200:]})")
    if r.returncode == 0 and m.returncode == 0:
        got, want = np.fromfile(lat_base, np.float32), np.fromfile(lat_merged, np.float32)
        err = rel_l2(got, want)
        check(err <= 1e-4, f"sd --lora latents vs the merged models' latents: rel L2 {err:.3g} (bound 1e-4)")
    other = os.path.join(args.work, "other.safetensors")
    write_safetensors(other, {"lora_te1_text_model_x.lora_up.weight": np.zeros((4, 1), np.float32),
                              "lora_te1_text_model_x.lora_down.weight": np.zeros((1, 4), np.float32)})
    r = subprocess.run(common + ["--models-path", base, "--lora", other, "--save-latents", lat_base],
                       capture_output=True, text=True)
    check(r.returncode != 0 and "no module for this model" in r.stderr,
          f"sd refuses a LoRA with no module for SD 1.5 ({r.stderr.strip()[-200:]})")
    r = subprocess.run([args.sd, "--models-path", base, "--decode-latents", lat_merged, "--lora", lora1],
                       capture_output=True, text=True)
    check(r.returncode != 0 and "--decode-latents" in r.stderr, "sd refuses --lora with --decode-latents")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", required=True)
    ap.add_argument("--convert", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--sd", help="the sd example: check `sd --lora` instead of onnxstream-run --lora")
    ap.add_argument("--tokenizer", help="with --sd: the CLIP vocabulary (bpe_simple_vocab_16e6.txt.gz)")
    args = ap.parse_args()
    args.convert, args.run = cross_exe.wrap(args.convert), cross_exe.wrap(args.run)
    if args.sd:
        args.sd = cross_exe.wrap(args.sd)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)

    modules = {name: module for name, module, _, _ in gen_sd.make_models("small", 1234)}
    unet, text = modules["unet"], modules["text_encoder"]
    rng = np.random.default_rng(7)

    # LoRA 1, kohya form: every Linear/Conv2d of the UNet and the text encoder, float32, alpha 2 (rank 4).
    # LoRA 2, PEFT form: the UNet's attention projections again, float16 (the merge uses the rounded
    # values), no alpha (alpha = rank), plus a bfloat16 pair on the first conv and diffusers' older forms.
    kohya, peft = {}, {}
    unet_merge, text_merge = [], []
    s1, alpha1, s2 = 0.7, 2.0, 0.5
    for prefix, module, merges in (("lora_unet_", unet, unet_merge), ("lora_te_text_model_encoder_", text, text_merge)):
        for path, m in layers(module):
            up, down = make_factors(rng, m)
            key = kohya_key(prefix, path)
            kohya[key + ".lora_up.weight"], kohya[key + ".lora_down.weight"] = up, down
            kohya[key + ".alpha"] = np.array(alpha1, np.float32)
            merges.append((path, up, down, s1 * alpha1 / RANK))
    for path, m in layers(unet):
        if path.endswith(("to_q", "to_k", "to_v", "to_out.0")):
            up, down = make_factors(rng, m)
            up16, down16 = up.astype(np.float16), down.astype(np.float16)
            peft[f"unet.{path}.lora_B.weight"], peft[f"unet.{path}.lora_A.weight"] = up16, down16
            unet_merge.append((path, up16.astype(np.float32), down16.astype(np.float32), s2))
    # diffusers' older attention-processor spelling, on the first cross-attention's output projection.
    path = next(p for p, _ in layers(unet) if p.endswith("attn2.to_out.0"))
    up, down = make_factors(rng, dict(unet.named_modules())[path])
    stem = path[: -len(".to_out.0")]
    peft[f"unet.{stem}.processor.to_out_lora.up.weight"] = up
    peft[f"unet.{stem}.processor.to_out_lora.down.weight"] = down
    unet_merge.append((path, up, down, s2))
    # and diffusers' older LoRA linear layers, on the first feed-forward output layer.
    path = next(p for p, _ in layers(unet) if p.endswith("ff.net.2"))
    up, down = make_factors(rng, dict(unet.named_modules())[path])
    peft[f"unet.{path}.lora_linear_layer.up.weight"], peft[f"unet.{path}.lora_linear_layer.down.weight"] = up, down
    unet_merge.append((path, up, down, s2))
    up, down = make_factors(rng, dict(unet.named_modules())["conv_in"])
    peft["unet.conv_in.lora_B.weight"], peft["unet.conv_in.lora_A.weight"] = ("BF16", up), ("BF16", down)
    unet_merge.append(("conv_in", bf16_rounded(up), bf16_rounded(down), s2))
    lora1, lora2 = os.path.join(args.work, "kohya.safetensors"), os.path.join(args.work, "peft.safetensors")
    write_safetensors(lora1, kohya)
    write_safetensors(lora2, peft)
    print(f"info LoRA 1: {len(kohya) // 3} modules, LoRA 2: {len(peft) // 2} modules")

    ucase, tcase = Case(args, "unet"), Case(args, "text_encoder")
    if args.sd:
        sd_cli(args, ucase, tcase, merge(unet, unet_merge), merge(text, text_merge), lora1, lora2, s1, s2)
        shutil.rmtree(args.work, ignore_errors=True)
        finish()
        return
    want_unet = torch_output(merge(unet, unet_merge), ucase)
    want_text = torch_output(merge(text, text_merge), tcase)
    base_unet = torch_output(unet, ucase)
    check(rel_l2(base_unet, want_unet) > 0.05, f"the LoRAs change the UNet's output (rel L2 {rel_l2(base_unet, want_unet):.3g})")

    fp32, fp16 = ucase.convert(), ucase.convert("--fp16")

    # onnxstream-run takes one --lora-prefix for all its --lora files: give each model a file of its own.
    unet_only = {k: v for k, v in kohya.items() if k.startswith("lora_unet_")}
    text_only = {k: v for k, v in kohya.items() if k.startswith("lora_te_")}
    lora1u = os.path.join(args.work, "kohya_unet.safetensors")
    write_safetensors(lora1u, unet_only)
    unet_lora = ["--lora", f"{lora1u}:{s1}", "--lora", f"{lora2}:{s2}"]
    cache = os.path.join(args.work, "unet_fp16.cache")  # holds the weights without the LoRAs
    for folder, extra, bound, what in (
            (fp32, [], 2e-5, "float32 folder"),
            (fp32, ["--memory-mode", "min", "--provider", "nocache"], 2e-5, "float32, memory mode min, nocache"),
            (fp32, ["--provider", "ram", "--memory-mode", "max-speed", "--runs", "3"], 2e-5,
             "float32, ram provider, max-speed, 3 runs (each fetch adds the deltas to a copy)"),
            (fp32, ["--provider", "mmap"], 2e-5, "float32, mmap provider"),
            (fp16, ["--cache", cache], 3e-3, "float16 folder, persistent cache built"),
            (fp16, ["--cache", cache], 3e-3, "float16 folder, persistent cache reused"),
            (fp16, [], 3e-3, "float16 folder")):
        p, got = ucase.run(folder, *unet_lora, *extra)
        err = rel_l2(got, want_unet) if got is not None else float("inf")
        check(p.returncode == 0 and err <= bound,
              f"UNet, {what}: rel L2 vs PyTorch merged {err:.3g} (bound {bound:g}) {p.stderr.strip()[-300:]}")
        check(f"{len(unet_only) // 3} module(s)" in p.stderr, f"UNet, {what}: modules taken reported")

    p, got = ucase.run(fp16, "--cache", cache)
    err = rel_l2(got, base_unet) if got is not None else float("inf")
    check(p.returncode == 0 and err <= 3e-3, f"the cache built with the LoRAs serves the weights without them: "
          f"rel L2 vs PyTorch unmerged {err:.3g}")

    # The text encoder from the combined kohya file, with the prefix choosing its modules.
    tfolder = tcase.convert()
    p, got = tcase.run(tfolder, "--lora-prefix", "lora_te_", "--lora", f"{lora1}:{s1}")
    err = rel_l2(got, want_text) if got is not None else float("inf")
    check(p.returncode == 0 and err <= 2e-5, f"text encoder, kohya lora_te_ modules: rel L2 {err:.3g} {p.stderr.strip()[-300:]}")
    check(f"{len(text_only) // 3} module(s)" in p.stderr, "text encoder: only the lora_te_ modules are taken")

    # Bad input: each is one clear error, exit status non-zero, no output.
    def refused(what, tensors, needle, prefix="", folder=fp32, case=ucase):
        path = os.path.join(args.work, "bad.safetensors")
        write_safetensors(path, tensors)
        p, got = case.run(folder, "--lora-prefix", prefix, "--lora", path)
        check(p.returncode != 0 and got is None and needle in p.stderr,
              f"refused: {what} ({p.stderr.strip().splitlines()[-1][:200] if p.stderr.strip() else 'no message'})")

    up, down = np.zeros((32, RANK), np.float32), np.zeros((RANK, 32), np.float32)
    refused("the text encoder's modules on the UNet", text_only, "match no MatMul, Gemm or Conv layer",
            prefix="lora_te_")
    refused("a module without its down weight", {"lora_unet_conv_in.lora_up.weight": up}, "no down weight")
    refused("up and down of different ranks",
            {"lora_unet_conv_in.lora_up.weight": np.zeros((32, 3, 1, 1), np.float32),
             "lora_unet_conv_in.lora_down.weight": np.zeros((4, 4, 3, 3), np.float32)}, "disagree on the rank")
    refused("shapes that do not fit the weight",
            {"lora_unet_conv_in.lora_up.weight": np.zeros((32, RANK, 1, 1), np.float32),
             "lora_unet_conv_in.lora_down.weight": np.zeros((RANK, 5, 3, 3), np.float32)}, "do not fit weight")
    refused("a LoHa module", {"lora_unet_conv_in.hada_w1_a": up, "lora_unet_conv_in.hada_w1_b": down},
            "not LoRA up/down/alpha tensors")
    refused("a module on an 8-bit weight", {
        "lora_unet_down_blocks_0_resnets_0_conv1.lora_up.weight": np.zeros((32, RANK, 1, 1), np.float32),
        "lora_unet_down_blocks_0_resnets_0_conv1.lora_down.weight": np.zeros((RANK, 32, 3, 3), np.float32)},
        "8-bit quantized", folder=ucase.convert("--quantize", "w8"))
    with open(os.path.join(args.work, "garbage.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", 1 << 40) + b"{}")
    p, got = ucase.run(fp32, "--lora", os.path.join(args.work, "garbage.safetensors"))
    check(p.returncode != 0 and got is None and "garbage.safetensors" in p.stderr,
          f"refused: a safetensors header longer than the file ({p.stderr.strip()[-160:]})")
    p, got = ucase.run(fp32, "--lora", os.path.join(args.work, "missing.safetensors"))
    check(p.returncode != 0 and "missing.safetensors" in p.stderr, "refused: a missing LoRA file")
    p, got = ucase.run(fp32, "--lora-prefix", "nothing_has_this_prefix_", "--lora", lora1)
    check(p.returncode == 0 and "0 module(s)" in p.stderr and rel_l2(got, base_unet) < 1e-5,
          "a prefix no key has takes nothing and changes nothing")

    shutil.rmtree(args.work, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()

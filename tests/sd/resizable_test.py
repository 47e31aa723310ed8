#!/usr/bin/env python3
"""Any image size from one model folder (onnxstream-convert --resizable, sd --width/--height).

gen_sd.py's small UNet and VAE decoder, exported with symbolic height and width like diffusers' own exports,
are converted once with --resizable and run by onnxstream-run at three sizes each against PyTorch running the
same modules at those sizes (float32 weights: rel L2 within 1e-4). `sd --width W --height H` on the resizable
folders must give the latents that `sd` gives on folders converted for that one size (the pipeline adds
nothing of its own to a size). Then the refusals: a size the UNet's levels do not divide, a UNet converted for
one size asked for another, and a model that cannot be made resizable (YOLOv8n, whose anchor grid is a
constant computed for 640x640, made symbolic here) with the constant named.

usage: resizable_test.py --convert onnxstream-convert --run onnxstream-run --work DIR [--sd sd --tokenizer VOCAB]
                         [--yolo ../shared/data/yolov8n/yolov8n.onnx]
"""
import argparse
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, os.path.join(ROOT, "examples", "sd"))
import cross_exe  # noqa: E402
from checklist import check, finish, rel_l2  # noqa: E402
from run_folder import run_folder  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import gen_sd  # noqa: E402
from make_models import RESIZABLE, make_models, resizable_flags  # noqa: E402

SIZES = {"unet": [(16, 16), (24, 12), (8, 20)], "vae_decoder": [(16, 16), (10, 6), (7, 13)]}


def engine_vs_pytorch(args, models):
    """Each resizable model at its three sizes against PyTorch."""
    rng = np.random.default_rng(5)
    for name, sizes in SIZES.items():
        module, inputs, _ = models[name]
        onnx = os.path.join(args.onnx, "sd", name, "model.onnx")
        folder = os.path.join(args.work, name + "_any")
        r = subprocess.run([args.convert, onnx, folder] + resizable_flags(onnx, RESIZABLE[name]),
                           capture_output=True, text=True)
        check(r.returncode == 0, f"{name}: converts with --resizable ({r.stderr.strip()[-300:]})")
        if r.returncode:
            continue
        with open(os.path.join(folder, "model.txt")) as f:
            text = f.read()
        check("(1,4,?,?)" in text, f"{name}: model.txt declares its input (1,4,?,?)")
        for h, w in sizes:
            sized = [(n, rng.standard_normal(a.shape[:2] + (h, w)).astype(np.float32) if a.ndim == 4 else a)
                     for n, a in inputs]
            with torch.no_grad():
                want = module(*[torch.from_numpy(a) for _, a in sized]).numpy()
            p, got = run_folder(args.run, folder, sized, args.work)
            ok = p.returncode == 0 and got.shape == want.shape
            err = rel_l2(got, want) if ok else float("inf")
            check(ok and err <= 1e-4, f"{name} at {h}x{w} latents vs PyTorch: shape {None if got is None else got.shape}, "
                                      f"rel L2 {err:.3g} (bound 1e-4){'' if p.returncode == 0 else ' ' + p.stderr.strip()[-300:]}")
        if name == "unet":
            bad = [(n, np.zeros(a.shape[:2] + (10, 10), np.float32) if a.ndim == 4 else a) for n, a in inputs]
            p, _ = run_folder(args.run, folder, bad, args.work)
            check(p.returncode != 0 and "multiple of 4" in p.stderr,
                  f"unet at 10x10 (its two downsamplings need multiples of 4): a clear error ({p.stderr.strip()[-200:]})")


def sd_sizes(args):
    """sd --width/--height on resizable folders = sd on folders converted for that size."""
    any_dir, fixed_dir = os.path.join(args.work, "sd_any"), os.path.join(args.work, "sd_fixed")
    make_models(None, any_dir, "small", args.onnx, convert=args.convert, resizable=True)
    common = [args.sd, "--tokenizer", args.tokenizer, "--prompt", "a lighthouse in a storm", "--steps", "2",
              "--seed", "9"]
    for w, h in ((96, 64), (64, 128)):  # small UNet: 4x latent per level pair, VAE x4: latents w/8 x h/8
        lat_h, lat_w = h // 8, w // 8
        if os.path.exists(fixed_dir):
            shutil.rmtree(fixed_dir)
        os.makedirs(fixed_dir)
        for model, folder, flags, input_name in (("unet", "unet_fp16", ["--fp16"], "sample"),
                                                 ("vae_decoder", "vae_decoder_fp32", [], "input.1")):
            onnx = os.path.join(args.onnx, "sd", model, "model.onnx")
            subprocess.run([args.convert, onnx, os.path.join(fixed_dir, folder), *flags, "--input-shape",
                            f"{input_name}=1,4,{lat_h},{lat_w}"], check=True, stdout=subprocess.DEVNULL)
        os.symlink(os.path.join(any_dir, "text_encoder_fp32"), os.path.join(fixed_dir, "text_encoder_fp32"))
        lat = {}
        for label, folder, extra in (("resizable", any_dir, ["--width", str(w), "--height", str(h)]),
                                     ("fixed", fixed_dir, [])):
            path = os.path.join(args.work, f"{label}_{w}x{h}.bin")
            png = os.path.join(args.work, f"{label}_{w}x{h}.png")
            r = subprocess.run(common + ["--models-path", folder, "--save-latents", path, "--output", png] + extra,
                               capture_output=True, text=True)
            check(r.returncode == 0, f"sd {label} {w}x{h} runs ({r.stderr.strip()[-300:]})")
            lat[label] = np.fromfile(path, np.float32) if r.returncode == 0 else None
        if lat["resizable"] is not None and lat["fixed"] is not None:
            same = lat["resizable"].size == 4 * lat_h * lat_w and np.array_equal(lat["resizable"], lat["fixed"])
            check(same, f"sd --width {w} --height {h}: the latents of the folders converted for {lat_w}x{lat_h} "
                        f"latents, bit for bit (max diff {np.abs(lat['resizable'] - lat['fixed']).max():.3g})")
    # --decode-latents of a resizable decoder takes the size again and gives the same pixels.
    from PIL import Image
    png = os.path.join(args.work, "decoded_96x64.png")
    r = subprocess.run([args.sd, "--models-path", any_dir, "--decode-latents", os.path.join(args.work, "resizable_96x64.bin"),
                        "--width", "96", "--height", "64", "--output", png], capture_output=True, text=True)
    same = r.returncode == 0 and np.array_equal(np.asarray(Image.open(png)),
                                                np.asarray(Image.open(os.path.join(args.work, "resizable_96x64.png"))))
    check(same, f"sd --decode-latents --width 96 --height 64 gives the run's pixels ({r.stderr.strip()[-200:]})")
    r = subprocess.run(common + ["--models-path", fixed_dir, "--width", "96", "--height", "96", "--output",
                                 os.path.join(args.work, "x.png")], capture_output=True, text=True)
    check(r.returncode != 0 and "--resizable" in r.stderr,
          f"a UNet converted for one size refuses another, saying how to convert it ({r.stderr.strip()[-200:]})")


def yolo_refused(args):
    """YOLOv8n made symbolic in height and width: its anchors are a float constant for 640x640."""
    import onnx
    model = onnx.load(args.yolo)
    dims = model.graph.input[0].type.tensor_type.shape.dim
    dims[2].dim_param, dims[3].dim_param = "height", "width"
    path = os.path.join(args.work, "yolov8n_symbolic.onnx")
    onnx.save(model, path)
    r = subprocess.run([args.convert, path, os.path.join(args.work, "yolo_any"), "--input-shape", "images=1,3,640,640",
                        "--resizable", "images=1,3,480,320"], capture_output=True, text=True)
    check(r.returncode != 0 and "cannot be made resizable" in r.stderr and "constant" in r.stderr
          and not os.path.exists(os.path.join(args.work, "yolo_any")),
          f"YOLOv8n (anchors computed for one size) is refused, naming what depends on the size ({r.stderr.strip()[-300:]})")


def main():
    ap = argparse.ArgumentParser()
    for flag in ("--convert", "--run", "--work"):
        ap.add_argument(flag, required=True)
    ap.add_argument("--sd")
    ap.add_argument("--tokenizer")
    ap.add_argument("--yolo")
    args = ap.parse_args()
    args.convert, args.run = cross_exe.wrap(args.convert), cross_exe.wrap(args.run)
    if args.sd:
        args.sd = cross_exe.wrap(args.sd)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    args.onnx = os.path.join(args.work, "onnx")
    subprocess.run(["/usr/bin/python3", os.path.join(HERE, "gen_sd.py"), "--size", "small", "--resizable", "--out",
                    args.onnx], check=True, stdout=subprocess.DEVNULL)
    models = {name: (module, inputs, output) for name, module, inputs, output in gen_sd.make_models("small", 1234)}
    engine_vs_pytorch(args, models)
    if args.sd:
        sd_sizes(args)
    if args.yolo:
        yolo_refused(args)
    finish()


if __name__ == "__main__":
    main()

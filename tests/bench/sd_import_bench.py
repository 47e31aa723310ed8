#!/usr/bin/python3
"""A full-size SD 1.5 checkpoint imported and run (a benchmark, not a test).

PyTorch writes gen_sd.py's full-size SD 1.5 text encoder, UNet and VAE (random weights at their default
initialisation) as one float16 .safetensors file in the A1111/ldm layout, as model hubs publish fine-tunes;
onnxstream-sd-import turns it into an `sd` folder with the graphs shipped in examples/sd/graphs/sd15; then
`sd --rpi-lowmem --steps 2 --width 512 --height 768` runs from that folder without and with a LoRA (kohya's
default modules of the UNet, rank 32, tests/bench/lora_overhead.py's) at scale 0.7. Every program runs under
/usr/bin/time -v. The script prints the import's time and peak RSS, the folder's file count and size, and
each sd run's seconds per step (its own figure), total time and peak RSS.

usage: tests/bench/sd_import_bench.py --build BUILD [--work DIR] [--keep]
"""
import argparse
import os
import shutil
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "sd"))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
from lora_overhead import kohya_lora  # noqa: E402
from sd_e2e import PROMPT, parse_sd, time_v  # noqa: E402

TOKENIZER = os.path.join(ROOT, "..", "shared", "data", "clip", "bpe_simple_vocab_16e6.txt.gz")


def log(msg):
    print(f"sd_import_bench.py: {msg}", file=sys.stderr, flush=True)


def full_models():
    """gen_sd's full-size modules with the checkpoint's weights (seeded: built again the same way)."""
    import torch
    import gen_sd
    torch.manual_seed(1)
    return {"text_encoder": gen_sd.ClipTextEncoder(**gen_sd.CONFIGS["full"]["text"]),
            "unet": gen_sd.UNet(**gen_sd.CONFIGS["full"]["unet"]),
            "vae_decoder": gen_sd.VaeDecoder(**gen_sd.CONFIGS["full"]["vae"])}


def write_checkpoint(path):
    from sd15_checkpoint import module_weights, write_ldm
    write_ldm(path, module_weights(full_models()))


def compare_with_pytorch(run, models_dir, work):
    """Each imported model at 512x768 (latents 96x64) by onnxstream-run against PyTorch running the
    checkpoint's float16 weights in float32; returns table rows."""
    import numpy as np
    import torch
    from checklist import rel_l2
    from run_folder import run_folder
    rng = np.random.default_rng(3)
    ids = np.full((1, 77), 49407, np.int64)
    ids[0, :9] = [49406, 320, 1125, 539, 550, 18376, 525, 7496, 49407]
    cases = {"text_encoder_fp32": ("text_encoder", [("onnx::Reshape_0", ids)], 1e-4),
             "unet_fp16": ("unet", [("sample", rng.standard_normal((1, 4, 96, 64)).astype(np.float32)),
                                    ("timestep", np.array([981.0], np.float32)),
                                    ("encoder_hidden_states", rng.standard_normal((1, 77, 768)).astype(np.float32))], 1e-2),
             "vae_decoder_fp32": ("vae_decoder", [("input.1", rng.standard_normal((1, 4, 96, 64)).astype(np.float32))], 1e-4)}
    modules = full_models()
    rows = []
    with torch.no_grad():
        for m in modules.values():
            for p in m.parameters():
                p.copy_(p.half().float())  # the checkpoint holds float16
        for folder, (name, inputs, bound) in cases.items():
            want = modules[name](*[torch.from_numpy(a) for _, a in inputs])
            want = (want[0] if isinstance(want, tuple) else want).numpy()
            p, got = run_folder(run, os.path.join(models_dir, folder), inputs, work)
            if p.returncode != 0:
                sys.exit(f"sd_import_bench.py: onnxstream-run {folder} failed: {p.stderr[-1000:]}")
            err = rel_l2(got, want)
            log(f"{folder} vs PyTorch: rel L2 {err:.3g}")
            rows.append((f"{folder} {list(got.shape)} vs PyTorch", f"rel L2 {err:.3g} (test bound {bound:g})"))
    return rows


def folder_stats(folder):
    files = [os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs]
    return len(files), sum(os.path.getsize(f) for f in files) / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", default="/var/tmp/onnxstream-sd-import-bench")
    ap.add_argument("--keep", action="store_true", help="keep the checkpoint and the imported folder")
    ap.add_argument("--compare", action="store_true",
                    help="also run each imported model at 512x768 against PyTorch with the checkpoint's weights")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    importer = os.path.join(build, "src", "tools", "onnxstream-sd-import")
    sd = os.path.join(build, "examples", "sd", "sd")
    os.makedirs(args.work, exist_ok=True)
    ckpt = os.path.join(args.work, "sd15-fp16.safetensors")
    models = os.path.join(args.work, "models")
    lora = os.path.join(args.work, "lora.safetensors")

    if not os.path.exists(ckpt):
        t0 = time.time()
        log("writing the full-size float16 checkpoint (PyTorch, random weights)")
        write_checkpoint(ckpt + ".tmp")
        os.rename(ckpt + ".tmp", ckpt)
        log(f"checkpoint written in {time.time() - t0:.0f} s")
    shutil.rmtree(models, ignore_errors=True)
    log("importing")
    text, wall, rss, code = time_v([importer, ckpt, models], os.path.join(args.work, "import.log"))
    if code != 0:
        sys.exit(f"sd_import_bench.py: the import failed:\n{text[-2000:]}")
    files, mb = folder_stats(models)
    results = [("checkpoint", f"{os.path.getsize(ckpt) / 1e6:.0f} MB float16, ldm layout"),
               ("import", f"{wall:.0f} s, peak RSS {rss:.1f} MB"),
               ("imported folder", f"{files} files, {mb:.0f} MB")]

    if args.compare:
        results += compare_with_pytorch(os.path.join(build, "src", "tools", "onnxstream-run"), models, args.work)
    modules, params = kohya_lora(lora)
    results.append(("LoRA", f"{modules} modules, {params / 1e6:.1f} M parameters, rank 32, float16"))
    for label, extra in (("sd without LoRA", []), ("sd with the LoRA at 0.7", ["--lora", lora + ":0.7"])):
        logfile = os.path.join(args.work, label.replace(" ", "_") + ".log")
        cmd = [sd, "--models-path", models, "--tokenizer", TOKENIZER, "--prompt", PROMPT, "--steps", "2",
               "--seed", "42", "--rpi-lowmem", "--width", "512", "--height", "768",
               "--output", os.path.join(args.work, "image.png")] + extra
        log(f"running {label}")
        text, wall, rss, code = time_v(cmd, logfile)
        if code != 0:
            sys.exit(f"sd_import_bench.py: {label} failed:\n{text[-2000:]}")
        f = parse_sd(text)
        results.append((label, f"{f.get('seconds_per_step', '?')} s/step, {wall:.0f} s in all, peak RSS {rss:.1f} MB"))
    print("\n| what | figures |\n|---|---|")
    for what, figures in results:
        print(f"| {what} | {figures} |")
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What a LoRA applied while streaming costs: the full-size SD 1.5 UNet (fp16 folder) run by onnxstream-run
with and without --lora, in one script run (a benchmark, not a test).

The LoRA is what kohya's trainer makes by default for SD 1.5: every Linear of the transformer blocks (the
attention projections and both feed-forward layers) plus proj_in/proj_out, rank 32, alpha 16, float16, random
values; its keys come from gen_sd.py's full-size UNet. Each configuration runs --runs times, alternating, under
/usr/bin/time -v; the script prints the time per run (onnxstream-run's own figure), the peak RSS and the ratios.

usage: lora_overhead.py --build BUILD --unet UNET_FP16_FOLDER [--work DIR] [--memory-mode min] [--runs 2]
  UNET_FP16_FOLDER: a full-size gen_sd.py UNet converted with --fp16 (tests/bench/sd_e2e.py makes one in
  WORK/models/unet_fp16)
"""
import argparse
import json
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "sd"))
sys.path.insert(0, os.path.join(ROOT, "tests", "bench"))

import numpy as np  # noqa: E402

from lora_test import write_safetensors  # noqa: E402
from sd_e2e import peak_rss_mb  # noqa: E402

RANK, ALPHA = 32, 16.0


def log(msg):
    print(f"lora_overhead.py: {msg}", file=sys.stderr, flush=True)


def kohya_lora(path, seed=5):
    """The default kohya LoRA of gen_sd.py's full-size UNet, written to path; returns (modules, parameters)."""
    import torch
    import gen_sd
    unet = gen_sd.UNet(**gen_sd.CONFIGS["full"]["unet"])  # only its layer names and shapes are used
    rng = np.random.default_rng(seed)
    tensors, params = {}, 0
    for name, m in unet.named_modules():
        in_block = ".transformer_blocks." in name and isinstance(m, torch.nn.Linear)
        if not (in_block or name.endswith(("proj_in", "proj_out"))):
            continue
        w = m.weight.shape
        key = "lora_unet_" + name.replace(".", "_")
        up_shape = (w[0], RANK) + tuple(1 for _ in w[2:])
        down_shape = (RANK,) + tuple(w[1:])
        tensors[key + ".lora_up.weight"] = (rng.standard_normal(up_shape) * 0.01).astype(np.float16)
        tensors[key + ".lora_down.weight"] = (rng.standard_normal(down_shape) / np.sqrt(np.prod(w[1:]))).astype(np.float16)
        tensors[key + ".alpha"] = np.array(ALPHA, np.float32)
        params += int(np.prod(up_shape) + np.prod(down_shape))
    write_safetensors(path, tensors)
    return len(tensors) // 3, params


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--unet", required=True)
    ap.add_argument("--work", default="/tmp/onnxstream-lora-bench")
    ap.add_argument("--memory-mode", default="min")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    run_exe = os.path.join(args.build, "src", "tools", "onnxstream-run")

    lora = os.path.join(args.work, "unet_lora_r32.safetensors")
    log("writing a rank-32 LoRA of the full-size UNet's transformer blocks")
    modules, params = kohya_lora(lora)
    lora_mb = os.path.getsize(lora) / 1e6
    log(f"{modules} modules, {params / 1e6:.1f} M parameters, {lora_mb:.1f} MB")

    rng = np.random.default_rng(3)
    inputs = {"sample": rng.standard_normal((1, 4, 64, 64)).astype(np.float32),
              "timestep": np.array([981.0], np.float32),
              "encoder_hidden_states": rng.standard_normal((1, 77, 768)).astype(np.float32)}
    cmd = [run_exe, args.unet, "--memory-mode", args.memory_mode, "--threads", str(args.threads)]
    for name, a in inputs.items():
        f = os.path.join(args.work, name + ".npy")
        np.save(f, a)
        cmd += ["--input", f"{name}={f}"]

    results = {"without": [], "with": []}
    for r in range(args.runs):
        for which in ("without", "with"):
            extra = ["--lora", lora] if which == "with" else []
            p = subprocess.run(["/usr/bin/time", "-v"] + cmd + extra, capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"lora_overhead.py: onnxstream-run failed:\n{p.stderr[-2000:]}")
            seconds = float(re.search(r"run 1: ([\d.]+) s", p.stdout + p.stderr).group(1))
            rss = peak_rss_mb(p.stderr)
            results[which].append({"seconds": seconds, "peak_rss_mb": rss})
            log(f"run {r + 1} {which} LoRA: {seconds:.1f} s, peak RSS {rss:.1f} MB")

    def best(which, key):
        return min(x[key] for x in results[which])
    summary = {"modules": modules, "lora_parameters": params, "lora_file_mb": round(lora_mb, 1),
               "memory_mode": args.memory_mode, "threads": args.threads, "runs": results}
    with open(os.path.join(args.work, "lora_overhead.json"), "w") as f:
        json.dump(summary, f, indent=1)
    t0, t1 = best("without", "seconds"), best("with", "seconds")
    m0, m1 = max(x["peak_rss_mb"] for x in results["without"]), max(x["peak_rss_mb"] for x in results["with"])
    print(f"\nSD 1.5 UNet (full size, fp16), memory mode {args.memory_mode}, {args.threads} threads, "
          f"best of {args.runs}; LoRA: {modules} modules, rank {RANK}, {lora_mb:.0f} MB")
    print(f"{'':14} {'s per run':>10} {'peak RSS MB':>12}")
    print(f"{'without LoRA':14} {t0:10.1f} {m0:12.1f}")
    print(f"{'with LoRA':14} {t1:10.1f} {m1:12.1f}")
    print(f"{'ratio':14} {t1 / t0:10.3f} {m1 / m0:12.3f}")


if __name__ == "__main__":
    main()

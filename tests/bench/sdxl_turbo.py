#!/usr/bin/python3
"""Full-size SDXL Turbo with the `sd` example, and the SDXL UNet beside ONNX Runtime (a benchmark, not a test).

Generates (or reuses) the full-size SDXL-architecture models with tests/sd/gen_sdxl.py (random weights: the
image is noise, the figures are what matter; 2.6 G UNet parameters at 64x64 latents, i.e. 512x512 images)
and converts them into OnnxStream's SDXL folder layout with examples/sd/make_models.py --family sdxl, then:
  - `sd --turbo --rpi-lowmem` (1 step, 512x512: memory mode min, weights read per op, flash attention, tiled
    VAE decode) inside a memory cgroup limited to --limit-mb (default 300 MB: OnnxStream's published
    "under 300 MB"), under /usr/bin/time -v;
  - the fp16 UNet alone in memory modes min and balanced (onnxstream-run, --unet-runs runs; min's --profile
    gives the peak tracked tensor memory per UNet level) and ONNX Runtime on the float32
    ONNX file (tests/bench/ort_case_run.js, its default graph optimisations, same thread count), each under
    /usr/bin/time -v (ONNX Runtime needs about 10 GB for the float32 weights; leave it out with --parts).
Prints exit status, seconds, peak RSS and the cgroup's peak charge of each run; writes WORK/sdxl_turbo.json.

usage: tests/bench/sdxl_turbo.py --build BUILD_DIR [--work DIR] [--onnx GEN_DIR] [--threads N]
                                 [--limit-mb 300] [--size full|small] [--parts turbo,unet,ort]
                                 [--unet-modes min,balanced] [--unet-runs N]
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "examples", "sd"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_models import make_models  # noqa: E402
from sd_e2e import parse_sd, run_in_cgroup, time_v  # noqa: E402

PROMPT = "a photograph of an astronaut riding a horse on mars, highly detailed"


def log(msg):
    print(f"sdxl_turbo.py: {msg}", flush=True)


def level_peaks(trace):
    """Peak tracked tensor memory (MB) per UNet level, from the profile's per-op memory: ops are grouped by the
    first component of their ONNX node name (/down_blocks.1/attentions.0/... -> down_blocks.1)."""
    with open(trace) as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    peaks = {}
    for e in events:
        args = e.get("args") or {}
        if e.get("ph") != "X" or "memory_bytes" not in args:
            continue
        parts = [p for p in str(args.get("op", "")).split("/") if p]
        level = parts[0] if len(parts) > 1 else "(top level)"
        peaks[level] = max(peaks.get(level, 0.0), args["memory_bytes"] / 2**20)
    return {k: round(v, 1) for k, v in peaks.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", default="/tmp/onnxstream-sdxl")
    ap.add_argument("--onnx", help="reuse gen_sdxl.py --size full output (sd/<model>/model.onnx)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--limit-mb", type=int, default=300)
    ap.add_argument("--size", choices=["full", "small"], default="full", help="small: a quick check of this script")
    ap.add_argument("--unet-runs", type=int, default=1)
    ap.add_argument("--parts", default="turbo,unet,ort", help="which runs: turbo, unet, ort")
    ap.add_argument("--unet-modes", default="min,balanced", help="memory modes of the onnxstream UNet runs")
    args = ap.parse_args()

    build = os.path.abspath(args.build)
    sd = os.path.join(build, "examples", "sd", "sd")
    run = os.path.join(build, "src", "tools", "onnxstream-run")
    for exe in (sd, run):
        if not os.access(exe, os.X_OK):
            sys.exit(f"sdxl_turbo.py: {exe} not found; build first (ninja -C {args.build})")
    tokenizer = os.path.join(ROOT, "..", "shared", "data", "clip", "bpe_simple_vocab_16e6.txt.gz")
    work = os.path.abspath(args.work)
    logs = os.path.join(work, "logs")
    os.makedirs(logs, exist_ok=True)
    results = {"size": args.size, "threads": args.threads, "limit_mb": args.limit_mb}
    generated = os.path.join(work, "onnx")  # what --onnx lacks is generated here (never into --onnx itself)

    models = os.path.join(work, "models")
    log(f"models ({args.size}) into {models}")
    results["convert_seconds"] = make_models(build, models, args.size, args.onnx, generated, family="sdxl")

    parts = set(args.parts.split(","))
    # 1. SDXL Turbo, one step, --rpi-lowmem inside the memory cgroup.
    if "turbo" in parts:
        log(f"sd --turbo --rpi-lowmem inside a {args.limit_mb} MB memory cgroup")
        cmd = [sd, "--turbo", "--rpi-lowmem", "--models-path", models, "--tokenizer", tokenizer, "--prompt",
               PROMPT, "--seed", "42", "--threads", str(args.threads), "--output", os.path.join(work, "turbo.png")]
        (err, wall, rss, rc), cgroup = run_in_cgroup(cmd, os.path.join(logs, "sd_turbo_lowmem.log"), args.limit_mb,
                                                     results)
        entry = dict(parse_sd(err), exit_code=rc, wall_seconds=round(wall, 1), peak_rss_mb=rss)
        entry["text_encoder_seconds"] = round(sum(float(v) for v in re.findall(r"text encoder: .* in ([\d.]+) s",
                                                                                  err)), 1)
        if cgroup:
            entry["cgroup"] = cgroup
        results["turbo_rpi_lowmem"] = entry

    # 2. The UNet alone: onnxstream fp16 in each memory mode, ONNX Runtime float32.
    case = os.path.join(args.onnx or generated, "sd", "sdxl_unet")
    if not os.path.exists(os.path.join(case, "case.json")):
        case = os.path.join(generated, "sd", "sdxl_unet")
    meta = json.load(open(os.path.join(case, "case.json")))
    threads = args.threads or os.cpu_count()
    for mode in args.unet_modes.split(",") if "unet" in parts else []:
        log(f"sdxl_unet_fp16, onnxstream-run --memory-mode {mode}")
        trace = os.path.join(work, f"unet_{mode}_profile.json")
        cmd = [run, os.path.join(models, "sdxl_unet_fp16"), "--memory-mode", mode, "--threads", str(threads),
               "--runs", str(args.unet_runs), "--json", "--output-dir", os.path.join(work, "unet_out")]
        cmd += ["--profile", trace] if mode == "min" else []
        for inp in meta["inputs"]:
            cmd += ["--input", f"{inp['name']}={os.path.join(case, inp['file'])}"]
        os.makedirs(os.path.join(work, "unet_out"), exist_ok=True)
        log_file = os.path.join(logs, f"unet_{mode}.log")
        _, wall, rss, rc = time_v(cmd, log_file)
        stats = [json.loads(line) for line in open(log_file).read().splitlines() if line.startswith("{")]
        results[f"unet_{mode}"] = dict(exit_code=rc, wall_seconds=round(wall, 1), peak_rss_mb=rss,
                                       runs_s=stats[-1]["runs_s"] if stats else None)
        if mode == "min" and rc == 0:
            results["unet_min"]["tracked_peak_mb_per_level"] = level_peaks(trace)
    if "ort" in parts:
        node = subprocess.run(["sh", "-c", "command -v node || command -v nodejs"], capture_output=True,
                              text=True).stdout.strip()
        log("ONNX Runtime, float32 UNet")
        log_file = os.path.join(logs, "unet_ort.log")
        _, wall, rss, rc = time_v([node, os.path.join(ROOT, "tests", "bench", "ort_case_run.js"), case, str(threads),
                                   str(args.unet_runs)], log_file)
        stats = [json.loads(line) for line in open(log_file).read().splitlines() if line.startswith("{")]
        results["unet_ort_fp32"] = dict(exit_code=rc, wall_seconds=round(wall, 1), peak_rss_mb=rss,
                                        runs_s=stats[-1]["runs_s"] if stats else None)

    with open(os.path.join(work, "sdxl_turbo.json"), "w") as f:
        json.dump(results, f, indent=1)
    fmt = lambda v, p=1: "-" if v is None else f"{v:.{p}f}"  # noqa: E731
    t = results.get("turbo_rpi_lowmem")
    if t:
        print(f"\nSDXL Turbo ({args.size}), sd --turbo --rpi-lowmem, 1 step, {args.limit_mb} MB cgroup")
        print(f"exit {t['exit_code']}, unet {fmt(t.get('unet_seconds'))} s, text encoders "
              f"{fmt(t.get('text_encoder_seconds'))} s, vae {fmt(t.get('vae_seconds'))} s, total "
              f"{fmt(t.get('total_seconds'))} s, peak RSS {fmt(t.get('peak_rss_mb'))} MB, cgroup peak "
              f"{fmt((t.get('cgroup') or {}).get('peak_charge_mb'))} MB, OOM kills {(t.get('cgroup') or {}).get('oom_kills')}")
    unet_runs = [n for n in results if n.startswith("unet_")]
    if unet_runs:
        print(f"\nSDXL UNet ({args.size}), {args.unet_runs} run(s) of one denoising step, {threads} threads")
    ort = (results.get("unet_ort_fp32") or {}).get("runs_s")
    for name in unet_runs:
        r = results[name]
        runs = r.get("runs_s") or []
        ratio = f"  {runs[-1] / ort[-1]:.2f}x ONNX Runtime's time" if runs and ort else ""
        print(f"{name:<14} exit {r['exit_code']}  run(s) {', '.join(f'{v:.1f}' for v in runs)} s{ratio}  process "
              f"{fmt(r['wall_seconds'])} s  peak RSS {fmt(r['peak_rss_mb'])} MB")
    levels = (results.get("unet_min") or {}).get("tracked_peak_mb_per_level") or {}
    if levels:
        print("\npeak tracked tensor memory per UNet level, memory mode min (MB): " +
              ", ".join(f"{k} {v}" for k, v in levels.items()))
    bad = [n for n in results if isinstance(results[n], dict) and results[n].get("exit_code")]
    if bad:
        sys.exit(f"sdxl_turbo.py: {', '.join(bad)} failed; see {logs}")


if __name__ == "__main__":
    main()

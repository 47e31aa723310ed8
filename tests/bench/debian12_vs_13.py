#!/usr/bin/python3
"""Debian 12 and Debian 13 builds side by side (a benchmark, not a test), with ONNX Runtime in the same run.

The Debian 12 build (XNNPACK 2022-02, --build) runs on this machine; the Debian 13 build (XNNPACK 2024-11,
--build13, made by scripts/debian13.sh) runs in the trixie root through `scripts/debian13.sh exec`. Both
run the same converted models:
  - YOLOv8n (../shared/models/yolov8n), its output compared with ../shared/data/yolov8n's reference;
  - the full-size SD 1.5 UNet with fp16 weights (random weights, generated once into --work by
    tests/bench/sd15.py's generator), in the memory modes of --modes, compared with ONNX Runtime's output.
Time per run is the last of --runs runs in one process; peak RSS is /usr/bin/time -v's for the process.
ONNX Runtime (onnxruntime-node on this machine) runs each model too. Prints a Markdown table.

usage: tests/bench/debian12_vs_13.py [--build build] [--build13 build-debian13] [--work /tmp/onnxstream-sd15]
                                     [--modes balanced,min] [--runs 2] [--threads 2] [--skip-unet]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))
sys.path.insert(0, HERE)
from sd15 import ensure_case  # noqa: E402
from sd15_convert import last_json, rel_l2, timed  # noqa: E402

DEBIAN13 = os.path.join(ROOT, "scripts", "debian13.sh")


def run_json(cmd, log, in_debian13, work):
    """Runs onnxstream-run (cmd) natively or in the Debian 13 root; returns (its --json object, peak RSS MB)."""
    if in_debian13:
        env = dict(os.environ, DEBIAN13_MOUNTS=work)
        p = subprocess.run([DEBIAN13, "exec", "/usr/bin/time", "-v"] + cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, env=env)
        with open(log, "w") as f:
            f.write(p.stdout)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed in the Debian 13 root (log {log})")
        out = p.stdout
        rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", out).group(1)) / 1024
    else:
        out, _, rss = timed(cmd, log)
    stats = last_json(out)
    return stats, rss


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--build13", default=os.path.join(ROOT, "build-debian13"))
    ap.add_argument("--work", default="/tmp/onnxstream-sd15")
    ap.add_argument("--modes", default="balanced,min")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--size", choices=["full", "small"], default="full")
    ap.add_argument("--skip-unet", action="store_true")
    args = ap.parse_args()

    import numpy as np
    builds = [("Debian 12", os.path.abspath(args.build), False), ("Debian 13", os.path.abspath(args.build13), True)]
    for _, b, _ in builds:
        if not os.access(os.path.join(b, "src", "tools", "onnxstream-run"), os.X_OK):
            sys.exit(f"debian12_vs_13.py: no onnxstream-run in {b}: build it first")
    node = shutil.which("node")
    work = os.path.abspath(args.work)
    logs = os.path.join(work, "logs")
    os.makedirs(logs, exist_ok=True)
    rows = []

    # YOLOv8n, the real model from ../shared.
    data = os.path.join(SHARED, "data", "yolov8n")
    image = os.path.join(data, "input_images_1x3x640x640_f32.bin")
    want = np.fromfile(os.path.join(data, "expected_output0_1x84x8400_f32.bin"), dtype=np.float32)
    out, _, rss = timed([node, os.path.join(HERE, "ort_run.js"), os.path.join(data, "yolov8n.onnx"), str(args.threads),
                         str(args.runs + 1), f"images={image}:1,3,640,640"], os.path.join(logs, "ort_yolov8n.log"))
    ort = last_json(out)
    rows.append(("YOLOv8n", "fp32", "ONNX Runtime", "-", ort["runs_s"][-1], rss, None))
    for name, build, in13 in builds:
        outputs = os.path.join(work, "outputs", f"yolov8n_{name.replace(' ', '')}")
        shutil.rmtree(outputs, ignore_errors=True)
        os.makedirs(outputs)
        cmd = [os.path.join(build, "src", "tools", "onnxstream-run"), os.path.join(SHARED, "models", "yolov8n"),
               "--input", f"images={image}", "--threads", str(args.threads), "--runs", str(args.runs),
               "--output-dir", outputs, "--json"]
        stats, rss = run_json(cmd, os.path.join(logs, f"yolov8n_{name.replace(' ', '')}.log"), in13, work)
        got = [f for f in os.listdir(outputs) if f.endswith(".npy")]
        err, _ = rel_l2(np.load(os.path.join(outputs, got[0])).reshape(-1), want)
        rows.append(("YOLOv8n", "fp32", f"onnxstream, {name}", "balanced", stats["runs_s"][-1], rss, err))
        print(rows[-1], stats.get("kernels"), flush=True)

    if not args.skip_unet:
        case = ensure_case(args, node, work, "unet")
        meta = json.load(open(os.path.join(case, "case.json")))
        want = np.load(os.path.join(case, "expected_0.npy"))
        out, _, rss = timed([node, os.path.join(HERE, "ort_case_run.js"), case, str(args.threads), str(args.runs)],
                            os.path.join(logs, "ort_unet.log"))
        ort = last_json(out)
        rows.append(("SD 1.5 UNet", "fp16", "ONNX Runtime (fp32)", "-", ort["runs_s"][-1], rss, None))
        converted = os.path.join(work, "converted", "unet_fp16_d12vs13")
        if not os.path.exists(os.path.join(converted, "model.txt")):
            shutil.rmtree(converted, ignore_errors=True)
            timed([os.path.join(builds[0][1], "src", "tools", "onnxstream-convert"), os.path.join(case, "model.onnx"),
                   converted, "--fp16"], os.path.join(logs, "convert_unet_d12vs13.log"))
        for mode in [m for m in args.modes.split(",") if m]:
            for name, build, in13 in builds:
                outputs = os.path.join(work, "outputs", f"unet_{mode}_{name.replace(' ', '')}")
                shutil.rmtree(outputs, ignore_errors=True)
                os.makedirs(outputs)
                cmd = [os.path.join(build, "src", "tools", "onnxstream-run"), converted, "--output-dir", outputs,
                       "--memory-mode", mode, "--threads", str(args.threads), "--runs", str(args.runs), "--json"]
                for inp in meta["inputs"]:
                    cmd += ["--input", f"{inp['name']}={os.path.join(case, inp['file'])}"]
                stats, rss = run_json(cmd, os.path.join(logs, f"unet_{mode}_{name.replace(' ', '')}.log"), in13, work)
                got = [f for f in os.listdir(outputs) if f.endswith(".npy")]
                err, _ = rel_l2(np.load(os.path.join(outputs, got[0])), want)
                rows.append(("SD 1.5 UNet", "fp16", f"onnxstream, {name}", mode, stats["runs_s"][-1], rss, err))
                print(rows[-1], flush=True)

    print(f"\n{args.threads} threads, {args.runs} runs per process, time = last run\n")
    print("| model | weights | engine | mode | s per run | x ORT | peak RSS MB | rel L2 vs reference |")
    print("|---|---|---|---|---|---|---|---|")
    ort_time = {}
    for model, weights, engine, mode, secs, rss, err in rows:
        if err is None:
            ort_time[model] = secs
        ratio = secs / ort_time[model]
        err_text = "-" if err is None else f"{err:.2g}"
        print(f"| {model} | {weights} | {engine} | {mode} | {secs:.2f} | {ratio:.2f} | {rss:.0f} | {err_text} |")


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as e:
        sys.exit(f"debian12_vs_13.py: {e}")

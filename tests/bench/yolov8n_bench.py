#!/usr/bin/python3
"""YOLOv8n benchmark: onnxstream (every provider) vs ONNX Runtime, measured in the same run.

Prints per-run seconds, peak RSS (from /usr/bin/time -v, the whole process) and onnxstream's peak
tensor bytes, plus time and memory ratios against ONNX Runtime with the same thread count.
usage: tests/bench/yolov8n_bench.py [BUILD_DIR] [--runs N] [--threads N] [--nchw-only]
--nchw-only adds a row per provider with the NHWC layout plan off (onnxstream-run --nchw-only), so both
layouts are measured in the same run.
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(ROOT, "..", "shared")


def timed(cmd):
    """Run cmd under /usr/bin/time -v; return (stdout, peak RSS bytes)."""
    p = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))
    return p.stdout, rss_kb * 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir", nargs="?", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--nchw-only", action="store_true", help="also run every provider with the layout plan off")
    args = ap.parse_args()

    model_dir = os.path.join(SHARED, "models", "yolov8n")
    data = os.path.join(SHARED, "data", "yolov8n")
    image = os.path.join(data, "input_images_1x3x640x640_f32.bin")
    run_tool = os.path.join(args.build_dir, "src", "tools", "onnxstream-run")

    rows = []
    out, rss = timed(["node", os.path.join(ROOT, "tests", "bench", "ort_run.js"), os.path.join(data, "yolov8n.onnx"),
                      str(args.threads), str(args.runs + 1), f"images={image}:1,3,640,640"])
    ort_runs = json.loads(out.strip().splitlines()[-1])["runs_s"][1:]  # first run is ORT's warm-up
    rows.append(("onnxruntime", ort_runs, rss, None))
    for provider in ["nocache", "prefetch", "mmap", "ram"]:
        for extra in [[], ["--nchw-only"]] if args.nchw_only else [[]]:
            out, rss = timed([run_tool, model_dir, "--input", f"images={image}", "--threads", str(args.threads),
                              "--provider", provider, "--runs", str(args.runs), "--json"] + extra)
            result = json.loads(out.strip().splitlines()[-1])
            name = f"onnxstream {provider}" + (" nchw" if extra else "")
            rows.append((name, result["runs_s"], rss, result["peak_tensor_bytes"]))

    ort_best, ort_rss = min(rows[0][1]), rows[0][2]
    print(f"YOLOv8n 1x3x640x640, {args.threads} threads, {args.runs} runs each "
          "(ONNX Runtime: after 1 warm-up run)")
    print(f"{'engine':22} {'runs (s)':28} {'best/ORT':>9} {'peak RSS':>10} {'RSS/ORT':>8} {'peak tensors':>13}")
    for name, runs, rss, tensors in rows:
        runs_text = " ".join(f"{t:.3f}" for t in runs)
        tensors_text = f"{tensors / 1e6:.1f} MB" if tensors is not None else "-"
        print(f"{name:22} {runs_text:28} {min(runs) / ort_best:9.2f} {rss / 1e6:8.1f}MB {rss / ort_rss:8.2f} "
              f"{tensors_text:>13}")


if __name__ == "__main__":
    main()

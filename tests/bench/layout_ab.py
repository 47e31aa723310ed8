#!/usr/bin/python3
"""Per-run time of one model with the NHWC layout plan on and off (onnxstream-run --nchw-only), alternating
the two in the same script run so machine load hits both alike; prints best and median per-run seconds
(the first run of every process is left out: it loads and prepares the weights) and transposes per run.

usage: tests/bench/layout_ab.py MODEL_DIR NAME=FILE[,NAME=FILE...] [--build build] [--rounds 3] [--runs 5]
                                [--threads 1] [-- EXTRA onnxstream-run ARGS]
example: tests/bench/layout_ab.py ../shared/models/yolov8n \\
             images=../shared/data/yolov8n/input_images_1x3x640x640_f32.bin -- --provider ram
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("inputs", help="comma-separated NAME=FILE list")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    tool = os.path.join(args.build, "src", "tools", "onnxstream-run")
    times = {"on": [], "off": []}
    transposes = {}
    for _ in range(args.rounds):
        for key, flag in (("on", []), ("off", ["--nchw-only"])):
            cmd = [tool, args.model, "--threads", str(args.threads), "--runs", str(args.runs), "--json"]
            for i in args.inputs.split(","):
                cmd += ["--input", i]
            p = subprocess.run(cmd + extra + flag, capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"onnxstream-run failed: {p.stderr.strip()}")
            result = json.loads(p.stdout.strip().splitlines()[-1])
            times[key] += result["runs_s"][1:]
            transposes[key] = result["weights"][-1]["transposes"]
    for key in ("on", "off"):
        t = sorted(times[key])
        print(f"layout plan {key:3}: best {t[0]:.3f} s, median {t[len(t) // 2]:.3f} s over {len(t)} runs, "
              f"{transposes[key]} layout transposes per run")


if __name__ == "__main__":
    main()

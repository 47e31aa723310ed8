#!/usr/bin/python3
"""fp32 vs fp16 arithmetic on float16 activations (a benchmark, not a test).

Writes a float16 model (a 320->320 3x3 Conv at 64x64 and a 4096x320 x 320x1280 MatMul: 10.9 GFLOP, UNet-sized
layers) to a temporary folder, runs it with `onnxstream-run --arithmetic fp32` and `fp16` alternately (RAM
provider, 2 threads, the second run of each counts) and prints each time and the fp16/fp32 ratio.

usage: fp16_arith.py BUILD/src/tools/onnxstream-run [--pairs N]
"""
import argparse
import os
import re
import subprocess
import tempfile

import numpy as np


def write_model(d):
    rng = np.random.default_rng(0)
    (rng.standard_normal((320, 320, 3, 3)) * 0.05).astype(np.float16).tofile(os.path.join(d, "w.bin"))
    (rng.standard_normal(320) * 0.1).astype(np.float16).tofile(os.path.join(d, "b.bin"))
    (rng.standard_normal((320, 1280)) * 0.05).astype(np.float16).tofile(os.path.join(d, "m.bin"))
    rng.standard_normal((1, 320, 64, 64)).astype(np.float16).tofile(os.path.join(d, "x.bin"))
    rng.standard_normal((4096, 320)).astype(np.float16).tofile(os.path.join(d, "z.bin"))
    with open(os.path.join(d, "model.txt"), "w") as f:
        f.write("conv:Conv*input:x(1,320,64,64);w.bin(float16:320,320,3,3);b.bin(float16:320)*output:y(1,320,64,64)"
                "*kernel_shape:3,3;pads:1,1,1,1\n"
                "mm:MatMul*input:z(4096,320);m.bin(float16:320,1280)*output:u(4096,1280)\n")


def run(exe, d, arithmetic):
    r = subprocess.run([exe, d, "--input", "x=" + os.path.join(d, "x.bin"), "--input", "z=" + os.path.join(d, "z.bin"),
                        "--threads", "2", "--runs", "2", "--provider", "ram", "--arithmetic", arithmetic],
                       capture_output=True, text=True, check=True)
    runs = re.findall(r"run \d+: ([0-9.]+) s .*arithmetic (\w+), (\d+) ops in fp16", r.stdout)
    secs, used, ops = runs[-1]
    return float(secs), used, int(ops)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", help="onnxstream-run executable")
    ap.add_argument("--pairs", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="onnxstream-fp16-") as d:
        write_model(d)
        for _ in range(args.pairs):
            t32, a32, _ = run(args.run, d, "fp32")
            t16, a16, ops = run(args.run, d, "fp16")
            print(f"fp32 ({a32}) {t32:.3f} s, fp16 ({a16}, {ops} ops in fp16) {t16:.3f} s: ratio {t16 / t32:.2f}")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""`onnxstream-convert --check` against an error it must find and one it must not.

The check runs ONNX Runtime (onnxruntime-node from tests/tools) and the converted folder on the same inputs
and prints each output's errors. Here:
- YOLOv8n (../shared) converted with --check: passes, and the relative L2 error it prints for output0
  agrees with one computed here with NumPy from the folder's output (onnxstream-run on the inputs the check
  used, kept with --check-inputs) and ONNX Runtime's reference output of ../shared for the real picture;
- the same folder with one weight file's values changed: --check-only fails (exit status 1) and says so;
- --fp16 picks the looser default tolerance and passes;
- without onnxruntime-node (NODE_PATH pointing nowhere): exit status 1 with a message naming the npm
  package; with a --node that does not exist: a message naming Node.js.
usage: convert_check_test.py --convert CONVERT --run RUN --node-modules DIR --shared SHARED_DIR --work DIR
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import cross_exe  # noqa: E402
from checklist import check, finish  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--convert", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--node-modules", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    convert, run = cross_exe.wrap(a.convert), cross_exe.wrap(a.run)
    data = os.path.join(a.shared, "data", "yolov8n")
    onnx_path = os.path.join(data, "yolov8n.onnx")
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    env = dict(os.environ, NODE_PATH=os.path.abspath(a.node_modules))

    def cli(*args, environment=env):
        return subprocess.run([convert] + list(args), capture_output=True, text=True, env=environment)

    # The real picture as the check's input, so the result can be compared with ../shared's reference.
    inputs = os.path.join(a.work, "inputs")
    os.makedirs(inputs)
    image = np.fromfile(os.path.join(data, "input_images_1x3x640x640_f32.bin"), np.float32).reshape(1, 3, 640, 640)
    np.save(os.path.join(inputs, "images.npy"), image)
    folder = os.path.join(a.work, "yolov8n")
    p = cli(onnx_path, folder, "--check", "--check-inputs", inputs)
    line = next((l for l in p.stdout.splitlines() if l.startswith("output0 ")), "")
    check(p.returncode == 0 and "check passed" in p.stdout, "YOLOv8n --check passes (exit %d)" % p.returncode)
    printed = float(line.split()[2]) if line else float("nan")

    out = os.path.join(a.work, "out")
    subprocess.run([run, folder, "--input", "images=" + os.path.join(inputs, "images.npy"), "--output-dir", out],
                   check=True, stdout=subprocess.DEVNULL)
    ours = np.load(os.path.join(out, "output0.npy")).astype(np.float64).ravel()
    ref = np.fromfile(os.path.join(data, "expected_output0_1x84x8400_f32.bin"), np.float32).astype(np.float64)
    rel = float(np.linalg.norm(ours - ref) / np.linalg.norm(ref))
    check(abs(printed - rel) <= 0.5 * max(rel, 1e-7) + 1e-7,
          "printed relative L2 %.3g agrees with NumPy's against the reference output (%.3g)" % (printed, rel))

    # Break one weight: the check must see it.
    weights = sorted(f for f in os.listdir(folder) if f.endswith(".bin"))
    biggest = max(weights, key=lambda f: os.path.getsize(os.path.join(folder, f)))
    w = np.fromfile(os.path.join(folder, biggest), np.float32)
    (w * 1.5).astype(np.float32).tofile(os.path.join(folder, biggest))
    p = cli(onnx_path, folder, "--check-only")
    check(p.returncode == 1 and "OVER the tolerance" in p.stdout and "check FAILED" in p.stdout,
          "a changed weight (%s) fails --check-only (exit %d)" % (biggest, p.returncode))

    p = cli(onnx_path, os.path.join(a.work, "fp16"), "--fp16", "--check")
    check(p.returncode == 0 and "tolerance 0.01" in p.stdout, "--fp16 --check passes at tolerance 1e-2")

    p = cli(onnx_path, os.path.join(a.work, "no_ort"), "--check",
            environment=dict(os.environ, NODE_PATH=os.path.join(a.work, "nowhere")))
    check(p.returncode == 1 and "onnxruntime-node" in p.stderr, "without onnxruntime-node: %s" % p.stderr.strip())
    p = cli(onnx_path, os.path.join(a.work, "no_node"), "--check", "--node", os.path.join(a.work, "no-such-node"))
    check(p.returncode == 1 and "Node.js" in p.stderr, "without Node.js: %s" % p.stderr.strip())

    shutil.rmtree(a.work, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()

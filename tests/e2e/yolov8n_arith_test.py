#!/usr/bin/python3
"""YOLOv8n through onnxstream-run with float32, float16 and int8 weights against ONNX Runtime's float32 output.

- the float32 model of ../shared (arithmetic auto: always float32): relative L2 <= 1e-4;
- yolov8n.onnx converted with `onnxstream-convert --fp16`, --arithmetic auto: relative L2 <= 1e-2, whichever
  arithmetic auto picked (float16 weights widened, or XNNPACK's f16 kernels on CPUs with float16 arithmetic);
- the same with --arithmetic fp16 forced: completes on every CPU, relative L2 <= 1e-2.
`--fp16` stores weights as float16 but keeps float32 activations, and the arithmetic option only changes ops
on float16 activations (docs/memory-and-speed.md): the run reports the resolved arithmetic while every
op still computes in float32 (0 fp16 ops, 0 fallbacks), which is checked too. The f16 kernels themselves are
checked by the ops suite's float16 cases.
- yolov8n.onnx converted with `onnxstream-convert --quantize w8` (per-channel int8 weights): relative L2
  <= 2e-2; on a build against XNNPACK's 2024 API every quantized Conv computes in int8 arithmetic (int8_ops
  > 0), on a 2022 one none does (the weights are dequantized).
ONNXSTREAM_EXPECT_FP16_ARITHMETIC=1 (an ARMv8.2 CPU with FP16, e.g. qemu -cpu max) requires auto to resolve
to fp16; =0 (e.g. qemu -cpu cortex-a53) to fp32. Prints each figure.
usage: yolov8n_arith_test.py --run RUN --convert CONVERT --shared SHARED_DIR --work DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import cross_exe  # noqa: E402
from checklist import check, finish  # noqa: E402


def run(exe, model, image, out, arithmetic, want_report=False, runs=1):
    p = subprocess.run([exe, model, "--input", "images=" + image, "--output-dir", out, "--arithmetic", arithmetic,
                        "--threads", "2", "--json", "--runs", str(runs)], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("onnxstream-run %s --arithmetic %s failed (%d): %s" % (model, arithmetic, p.returncode, p.stderr))
    report = json.loads(p.stdout.strip().splitlines()[-1])
    got = np.load(report["outputs"][0]["file"]).astype(np.float64).ravel()
    return (got, report["weights"][-1]) + ((report,) if want_report else ())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--convert", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    run_exe, convert_exe = cross_exe.wrap(a.run), cross_exe.wrap(a.convert)
    data = os.path.join(a.shared, "data", "yolov8n")
    image = os.path.join(data, "input_images_1x3x640x640_f32.bin")
    ref = np.fromfile(os.path.join(data, "expected_output0_1x84x8400_f32.bin"), dtype=np.float32).astype(np.float64)
    expect = os.environ.get("ONNXSTREAM_EXPECT_FP16_ARITHMETIC")

    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    fp16_model = os.path.join(a.work, "yolov8n_fp16")
    subprocess.run([convert_exe, os.path.join(data, "yolov8n.onnx"), fp16_model, "--fp16"], check=True,
                   stdout=subprocess.DEVNULL)

    def rel_l2(got):
        return float(np.sqrt(np.sum((got - ref) ** 2) / np.sum(ref ** 2)))

    # Three runs: the output is the third's, through the convolutions balanced kept after the first.
    got, st = run(run_exe, os.path.join(a.shared, "models", "yolov8n"), image, os.path.join(a.work, "fp32"), "auto",
                  runs=3)
    e = rel_l2(got)
    check(st["arithmetic"] == "fp32" and e <= 1e-4,
          "float32 weights, auto: arithmetic %s, relative L2 %.3g (<= 1e-4)" % (st["arithmetic"], e))
    # Under qemu (QEMU_CPU set) preparation costs little next to the emulated arithmetic: few or none are kept.
    kept = st.get("kept_kernels", 0)
    check(kept > 0 or "QEMU_CPU" in os.environ,
          "balanced kept %d prepared convolutions (%.1f MB) for the third run" % (kept, st.get("kept_kernel_bytes", 0) / 1e6))

    got, st = run(run_exe, fp16_model, image, os.path.join(a.work, "fp16_auto"), "auto")
    e = rel_l2(got)
    check(e <= 1e-2, "float16 weights, auto: arithmetic %s (%d ops in fp16, %d fell back), relative L2 %.3g "
          "(<= 1e-2)" % (st["arithmetic"], st["fp16_ops"], st["fp16_fallbacks"], e))
    if expect is not None:
        want = "fp16" if expect == "1" else "fp32"
        check(st["arithmetic"] == want, "auto picks %s on this CPU (ONNXSTREAM_EXPECT_FP16_ARITHMETIC=%s)" % (want, expect))

    got, st = run(run_exe, fp16_model, image, os.path.join(a.work, "fp16_forced"), "fp16")
    e = rel_l2(got)
    check(e <= 1e-2, "float16 weights, fp16 forced: arithmetic %s, relative L2 %.3g (<= 1e-2)" % (st["arithmetic"], e))
    check(st["arithmetic"] == "fp16" and st["fp16_ops"] == 0 and st["fp16_fallbacks"] == 0,
          "float32 activations compute in float32 (%d ops in fp16, %d fell back)" % (st["fp16_ops"], st["fp16_fallbacks"]))

    w8_model = os.path.join(a.work, "yolov8n_w8")
    subprocess.run([convert_exe, os.path.join(data, "yolov8n.onnx"), w8_model, "--quantize", "w8"], check=True,
                   stdout=subprocess.DEVNULL)
    quantized = sum(line.count("(int8[@") for line in open(os.path.join(w8_model, "model.txt")))
    got, st, report = run(run_exe, w8_model, image, os.path.join(a.work, "w8"), "auto", want_report=True)
    e = rel_l2(got)
    check(e <= 2e-2, "int8 weights (%d quantized), %d ops in int8 arithmetic, relative L2 %.3g (<= 2e-2)"
          % (quantized, st["int8_ops"], e))
    int8_kernels = "2024" in report["kernels"]
    check(st["int8_ops"] == (quantized if int8_kernels else 0),
          "%s: %d of the %d quantized ops in int8 arithmetic" % (report["kernels"], st["int8_ops"], quantized))
    shutil.rmtree(a.work, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Static W8A8 on the small SD VAE decoder (gen_sd.py's case): onnxstream-convert --quantize w8a8 calibrated
on 4 random latents, run on the held-out latent of the case, compared with ONNX Runtime's float32 output of
the same ONNX file (expected_0.npy).

PSNR is measured on the image the SD pipeline makes of the decoder output ((x + 1) / 2 clipped to [0, 1],
8-bit), and must be >= 30 dB; the PSNR over the output's own value range and the rel L2 error are printed.

usage: sd_w8a8_test.py --cases DIR --convert EXE --run EXE --work DIR
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import cross_exe  # noqa: E402


def image(x):
    return np.round(np.clip((x + 1) / 2, 0, 1) * 255)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", required=True)
    ap.add_argument("--convert", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    a.convert, a.run = cross_exe.wrap(a.convert), cross_exe.wrap(a.run)
    case = os.path.join(a.cases, "sd", "vae_decoder")
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    held_out = np.load(os.path.join(case, "input_0.npy"))
    rng = np.random.default_rng(1)
    calib = os.path.join(a.work, "calib")
    for r in range(4):
        os.makedirs(os.path.join(calib, str(r)))
        np.save(os.path.join(calib, str(r), "input.1.npy"), rng.normal(0, 1, held_out.shape).astype(np.float32))
    out = os.path.join(a.work, "vae_w8a8")
    p = subprocess.run([a.convert, os.path.join(case, "model.onnx"), out, "--quantize", "w8a8",
                        "--calibration-inputs", calib], capture_output=True, text=True)
    if p.returncode != 0:
        print("FAIL convert: " + p.stderr)
        return 1
    n_u8 = open(os.path.join(out, "model.txt")).read().count("(uint8[")
    n_ranges = sum(1 for _ in open(os.path.join(out, "range_data.txt")))
    p = subprocess.run([a.run, out, "--input", "input.1=" + os.path.join(case, "input_0.npy"), "--output-dir",
                        os.path.join(a.work, "out")], capture_output=True, text=True)
    if p.returncode != 0:
        print("FAIL run: " + p.stderr)
        return 1
    ours = np.load(os.path.join(a.work, "out", "sample.npy"))
    ref = np.load(os.path.join(case, "expected_0.npy"))
    img_mse = float(np.mean((image(ours) - image(ref)) ** 2))
    psnr_img = 10 * np.log10(255.0 ** 2 / max(img_mse, 1e-12))
    span = float(ref.max() - ref.min())
    psnr_range = 20 * np.log10(span / np.sqrt(np.mean((ours - ref) ** 2)))
    rel = float(np.linalg.norm(ours - ref) / np.linalg.norm(ref))
    print(f"{n_u8} uint8 weights, {n_ranges} ranges; image PSNR {psnr_img:.2f} dB, PSNR over the output range "
          f"{span:.3f}: {psnr_range:.2f} dB, rel L2 {rel:.4f}")
    ok = psnr_img >= 30.0 and n_u8 > 0
    print(("ok" if ok else "FAIL") + " W8A8 VAE decoder image PSNR >= 30 dB vs ONNX Runtime float32")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

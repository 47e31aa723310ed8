#!/usr/bin/python3
"""End to end: the `sd` example on the small SD-architecture models (random weights) made by gen_sd.py.

Converts the three ONNX models into OnnxStream's folder layout with onnxstream-convert, then checks that
`sd` writes a valid PNG of the size the VAE produces with the `parameters` text chunk, that the same seed
gives a byte-identical file, that --decode-latents of --save-latents output gives the same image, and that a
missing models folder fails with a clear one-line error.
usage: sd_cli_test.py SD_EXE CONVERT_EXE CASES_DIR SHARED_DIR
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

failures = []
passes = 0


def check(cond, what):
    global passes
    if cond:
        passes += 1
        print(f"ok   {what}")
    else:
        failures.append(what)
        print(f"FAIL {what}")


def png_info(path):
    """(width, height, {keyword: text}) from a PNG's IHDR and tEXt chunks."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, width, height, texts = 8, None, None, {}
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            texts[key.decode()] = value.decode("latin-1")
        pos += 12 + length
    return width, height, texts


def main():
    sd, convert, cases, shared = sys.argv[1:5]
    tokenizer = os.path.join(shared, "data", "clip", "bpe_simple_vocab_16e6.txt.gz")
    work = tempfile.mkdtemp(prefix="onnxstream-sd-")
    try:
        models = os.path.join(work, "models")
        os.mkdir(models)
        for src, dst in [("text_encoder", "text_encoder_fp32"), ("unet", "unet_fp16"),
                         ("vae_decoder", "vae_decoder_fp32")]:
            args = [convert, os.path.join(cases, "sd", src, "model.onnx"), os.path.join(models, dst)]
            if dst.endswith("fp16"):
                args.append("--fp16")
            subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        common = [sd, "--models-path", models, "--tokenizer", tokenizer, "--prompt", "an astronaut riding a horse",
                  "--neg-prompt", "blurry", "--steps", "3", "--seed", "18446744073709551615", "--cfg", "5"]
        out1, out2, out3 = (os.path.join(work, f"out{i}.png") for i in (1, 2, 3))
        latents = os.path.join(work, "latents.bin")
        r = subprocess.run(common + ["--output", out1, "--save-latents", latents], capture_output=True, text=True)
        check(r.returncode == 0, f"sd runs ({r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''})")
        if r.returncode != 0:
            print(r.stderr)
            return
        width, height, texts = png_info(out1)
        check((width, height) == (64, 64), f"image is the VAE's output size (got {width}x{height})")
        params = texts.get("parameters", "")
        check(params.startswith("an astronaut riding a horse\nNegative prompt: blurry\nSteps: 3, Sampler: euler_a"),
              "parameters chunk holds prompt, negative prompt, steps and sampler")
        check("Seed: 18446744073709551615" in params and "CFG scale: 5" in params and "Size: 64x64" in params,
              "parameters chunk holds the full 64-bit seed, cfg and size")
        subprocess.run(common + ["--output", out2], check=True, capture_output=True)
        check(open(out1, "rb").read() == open(out2, "rb").read(), "same seed gives a byte-identical PNG")
        # The small UNet works on (1,4,16,16) latents; the small VAE upsamples them 4x to 64x64.
        check(os.path.getsize(latents) == 4 * 4 * 16 * 16, "latents file holds raw float32 (1,4,16,16)")
        subprocess.run(common + ["--decode-latents", latents, "--output", out3], check=True, capture_output=True)
        check(open(out1, "rb").read() == open(out3, "rb").read(), "--decode-latents of --save-latents gives the same image")
        r = subprocess.run(common[:1] + ["--models-path", os.path.join(work, "nope"), "--prompt", "x"],
                           capture_output=True, text=True)
        check(r.returncode != 0 and "nope" in r.stderr and len(r.stderr.strip().splitlines()) == 1,
              "a missing models folder is one clear error line")
        r = subprocess.run([sd, "--print-tokens", "--tokenizer", tokenizer, "--prompt", "a photo of an astronaut riding a horse on mars"],
                           capture_output=True, text=True)
        check(r.stdout.strip() == "320 1125 539 550 18376 6765 320 4558 525 7496", "--print-tokens prints CLIP ids")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        print(f"{passes} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

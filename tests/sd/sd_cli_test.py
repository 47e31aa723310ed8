#!/usr/bin/python3
"""End to end: the `sd` example on the small SD-architecture models (random weights) made by gen_sd.py.

Converts the three ONNX models into OnnxStream's folder layout with onnxstream-convert, then checks that
`sd` writes a valid PNG of the size the VAE produces with the `parameters` text chunk, that the same seed
gives a byte-identical file, that --decode-latents of --save-latents output gives the same image, and that a
missing models folder fails with a clear one-line error.
Tiled decoding is checked against an independent reference: the same latent tiles decoded by ONNX Runtime
(the tile decoder's ONNX) and blended here in NumPy must give the PNG's pixels. Long prompts (two 75-token
chunks) run on a UNet converted for 154 context tokens and fail clearly on the 77-token one.
usage: sd_cli_test.py SD_EXE CONVERT_EXE CASES_DIR SHARED_DIR NODE
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import case_output  # noqa: E402
import cross_exe  # noqa: E402
import tile_blend  # noqa: E402
from checklist import check, finish  # noqa: E402

LATENT_SCALE = 0.18215

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


def tiled_reference(latents, tile_onnx, tile, overlap, node, work):
    """The tiled decode of latents (1,4,h,w) with ONNX Runtime on each tile, blended in NumPy -> uint8 HxWx3."""
    h = latents.shape[2]
    starts = tile_blend.tile_starts(h, tile, overlap)
    cases = os.path.join(work, "tile_cases")
    with open(os.path.join(os.path.dirname(tile_onnx), "case.json")) as f:
        tile_outputs = json.load(f)["outputs"]  # the tile model's own case: output name and shape
    tiles = {}
    for y in starts:
        for x in starts:
            d = os.path.join(cases, "tiles", f"t{y}_{x}")
            os.makedirs(d)
            os.symlink(tile_onnx, os.path.join(d, "model.onnx"))
            z = np.ascontiguousarray(latents[:, :, y:y + tile, x:x + tile] / np.float32(LATENT_SCALE)).astype(np.float32)
            np.save(os.path.join(d, "input_0.npy"), z)
            meta = {"inputs": [{"index": 0, "name": "input.1", "kind": "input", "file": "input_0.npy",
                                "dtype": "float32", "shape": list(z.shape)}],
                    "outputs": tile_outputs}
            with open(os.path.join(d, "case.json"), "w") as f:
                json.dump(meta, f)
            tiles[(y, x)] = d
    case_output.add_ort_reference(node, cases, "sd_cli_test.py")
    decoded = {yx: np.load(os.path.join(d, "expected_0.npy"))[0] for yx, d in tiles.items()}
    return tile_blend.blend(decoded, starts, tile, h)


def convert_case(convert, cases, name, dst, *flags):
    """onnxstream-convert gen_sd.py's model `name` into folder dst."""
    subprocess.run([convert, os.path.join(cases, "sd", name, "model.onnx"), dst, *flags], check=True,
                   stdout=subprocess.DEVNULL)


def unet_variant(convert, cases, models, folder, unet_case):
    """A models folder sharing `models`' text encoder and VAE decoder, with the UNet converted from unet_case."""
    os.mkdir(folder)
    for d in ("text_encoder_fp32", "vae_decoder_fp32"):
        os.symlink(os.path.join(models, d), os.path.join(folder, d))
    convert_case(convert, cases, unet_case, os.path.join(folder, "unet_fp16"), "--fp16")
    return folder


def check_tile_cache(decode, work, want_png):
    """--tile-cache: a stopped tiled decode resumes from the tiles it kept, to the same image."""
    cache, out = os.path.join(work, "tiles"), os.path.join(work, "cached.png")
    run = lambda extra=(): subprocess.run(decode + ["--tile-cache", cache, "--output", out] + list(extra),
                                          capture_output=True, text=True)
    r = run()
    tiles = sorted(os.listdir(cache)) if os.path.isdir(cache) else []
    check(r.returncode == 0 and open(out, "rb").read() == want_png and len(tiles) == 9 and
          "read from the tile cache" not in r.stderr,
          f"--tile-cache decodes all 9 tiles, keeps them and writes the same image ({len(tiles)} files)")
    # A run stopped after 5 tiles: the 4 later files are missing, and one kept file is cut short.
    for name in tiles[5:]:
        os.remove(os.path.join(cache, name))
    with open(os.path.join(cache, tiles[0]), "r+b") as f:
        f.truncate(100)
    r = run()
    check(r.returncode == 0 and "4 of 9 read from the tile cache" in r.stderr and
          open(out, "rb").read() == want_png and len(os.listdir(cache)) == 9,
          f"a resumed decode reads the 4 whole tiles, decodes the other 5, same image ({r.stderr.strip()[-120:]})")
    r = run(["--steps", "3"])
    check("9 of 9 read from the tile cache" in r.stderr, "a finished decode reads every tile back")
    other = os.path.join(work, "other_latents.bin")
    (np.fromfile(decode[decode.index("--decode-latents") + 1], dtype=np.float32) * 0.5).tofile(other)
    r = subprocess.run([a if a != decode[decode.index("--decode-latents") + 1] else other for a in decode] +
                       ["--tile-cache", cache, "--output", out], capture_output=True, text=True)
    check(r.returncode == 0 and "read from the tile cache" not in r.stderr and len(os.listdir(cache)) == 18,
          "other latents never reuse the kept tiles")
    r = subprocess.run([a for a in decode if a != "--tiled-decode"] +
                       ["--tile-cache", cache, "--output", out, "--memory-mode", "balanced"],
                       capture_output=True, text=True)
    check(r.returncode != 0 and "--tile-cache needs tiled decoding" in r.stderr,
          f"--tile-cache without tiled decoding is refused ({r.stderr.strip()[-100:]})")


def folder_weight_mb(folder):
    """MB of a converted folder's weight files."""
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder) if f.endswith(".bin")) / 1e6


def check_weights_read(stderr, models):
    """The weight MB each model reports against the sizes of its folder's files: in memory mode min every
    UNet run and every decoder tile reads each weight once; the text encoder reads only the embedding rows of
    its tokens, so less than its files (two prompts)."""
    unet = re.search(r"unet: 6 run\(s\), ([\d.]+) MB of weights read \(([\d.]+) MB per run\)", stderr)
    want = folder_weight_mb(os.path.join(models, "unet_fp16"))
    check(unet and abs(float(unet.group(2)) - want) <= 0.05 + 0.01 * want and
          abs(float(unet.group(1)) - 6 * float(unet.group(2))) <= 0.1,
          f"sd reports the UNet's weight MB per run: its files' {want:.2f} MB ({unet and unet.group(0)})")
    vae = re.search(r"vae decoder \(tiled\) \([^)]*\): [\d.]+ s, ([\d.]+) MB of weights read", stderr)
    want = 25 * folder_weight_mb(os.path.join(models, "vae_decoder_fp32_l16"))
    check(vae and abs(float(vae.group(1)) - want) <= 0.05 + 0.01 * want,
          f"sd reports the tile decoder's weight MB: 25 tiles x its files = {want:.1f} MB ({vae and vae.group(0)})")
    te = re.search(r"text encoder: .* ([\d.]+) MB of weights read", stderr)
    files = folder_weight_mb(os.path.join(models, "text_encoder_fp32"))
    check(te and 0 < float(te.group(1)) < 2 * files,
          f"sd reports the text encoder's weight MB: some, under twice its files' {files:.1f} MB "
          f"({te and te.group(0)})")


def main():
    sd, convert, cases, shared, node = sys.argv[1:6]
    sd, convert = cross_exe.wrap(sd), cross_exe.wrap(convert)
    tokenizer = os.path.join(shared, "data", "clip", "bpe_simple_vocab_16e6.txt.gz")
    work = tempfile.mkdtemp(prefix="onnxstream-sd-")
    try:
        models = os.path.join(work, "models")
        os.mkdir(models)
        for src, dst in [("text_encoder", "text_encoder_fp32"), ("unet", "unet_fp16"),
                         ("vae_decoder", "vae_decoder_fp32")]:
            convert_case(convert, cases, src, os.path.join(models, dst), *(["--fp16"] if dst.endswith("fp16") else []))
        # The tile decoders next to the full one, and a UNet for two 75-token chunks in a second folder.
        tile_onnx = os.path.join(cases, "sd", "vae_decoder_tile", "model.onnx")
        convert_case(convert, cases, "vae_decoder_tile", os.path.join(models, "vae_decoder_fp32_l32"))
        convert_case(convert, cases, "vae_decoder_tile_small", os.path.join(models, "vae_decoder_fp32_l16"))
        models_long = unet_variant(convert, cases, models, os.path.join(work, "models_long"), "unet_long")
        common = [sd, "--models-path", models, "--tokenizer", tokenizer, "--prompt", "an astronaut riding a horse",
                  "--neg-prompt", "blurry", "--steps", "3", "--seed", "18446744073709551615", "--cfg", "5"]
        out1, out2, out3 = (os.path.join(work, f"out{i}.png") for i in (1, 2, 3))
        latents = os.path.join(work, "latents.bin")
        r = subprocess.run(common + ["--output", out1, "--save-latents", latents], capture_output=True, text=True)
        first_stderr = r.stderr
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
        # --weights-cache: the first process builds each model's cache (and, on XNNPACK 2024 builds, its packed
        # weights), the second maps them; both give the image the run without a cache gave.
        wcache = os.path.join(work, "wcache")
        for k in (1, 2):
            outk = os.path.join(work, f"wcache{k}.png")
            r = subprocess.run(common + ["--output", outk, "--weights-cache", wcache], capture_output=True, text=True)
            check(r.returncode == 0 and open(outk, "rb").read() == open(out1, "rb").read(),
                  f"--weights-cache run {k} gives the same image ({r.stderr.strip()[-160:]})")
        caches = sorted(f for f in os.listdir(wcache) if f.endswith(".oswc")) if os.path.isdir(wcache) else []
        check(caches == ["text_encoder_fp32.oswc", "unet_fp16.oswc", "vae_decoder_fp32.oswc"],
              f"--weights-cache keeps one cache per model ({caches})")
        # The small UNet works on (1,4,16,16) latents; the small VAE upsamples them 4x to 64x64.
        check(os.path.getsize(latents) == 4 * 4 * 16 * 16, "latents file holds raw float32 (1,4,16,16)")
        subprocess.run(common + ["--decode-latents", latents, "--output", out3], check=True, capture_output=True)
        check(open(out1, "rb").read() == open(out3, "rb").read(), "--decode-latents of --save-latents gives the same image")
        # The pipeline in two processes: --latents-only writes the same latents and no image.
        latents2, out5 = os.path.join(work, "latents2.bin"), os.path.join(work, "out5.png")
        r = subprocess.run(common + ["--output", out5, "--save-latents", latents2, "--latents-only"],
                           capture_output=True, text=True)
        check(r.returncode == 0 and not os.path.exists(out5), "--latents-only stops before decoding (no image)")
        check(os.path.exists(latents2) and open(latents2, "rb").read() == open(latents, "rb").read(),
              "--latents-only saves the latents a whole run saves")
        r = subprocess.run(common + ["--latents-only"], capture_output=True, text=True)
        check(r.returncode != 0 and "--latents-only needs --save-latents" in r.stderr,
              "--latents-only without --save-latents is refused")
        # Tiled decoding of the same latents vs ONNX Runtime's tiles blended in NumPy.
        out4 = os.path.join(work, "tiled.png")
        r = subprocess.run(common + ["--decode-latents", latents, "--tiled-decode", "--tile-overlap", "2",
                                     "--output", out4], capture_output=True, text=True)
        check(r.returncode == 0, f"--tiled-decode runs ({r.stderr.strip()[-200:]})")
        if r.returncode == 0:
            lat = np.fromfile(latents, dtype=np.float32).reshape(1, 4, 16, 16)
            want = tiled_reference(lat, tile_onnx, 8, 2, node, work)
            got = np.asarray(Image.open(out4).convert("RGB"))
            diff = np.abs(got.astype(int) - want.astype(int))
            check(got.shape == want.shape and diff.max() <= 2 and diff.mean() < 0.05,
                  f"tiled decode matches ONNX Runtime tiles blended in NumPy (max diff {diff.max()}, "
                  f"mean {diff.mean():.4f})")
            full = np.asarray(Image.open(out1).convert("RGB"))
            check(np.abs(full.astype(int) - got.astype(int)).max() > 0, "tiled output is really tiled (differs "
                  "from the full decode: the tiles' GroupNorm and attention only see the tile)")
            check_tile_cache(common + ["--decode-latents", latents, "--tiled-decode", "--tile-overlap", "2"],
                             work, open(out4, "rb").read())
        # --rpi-lowmem: memory mode min, nocache, flash attention, tiles because tile decoders exist; min picks
        # the smaller tiles (_l16: 4x4 latent tiles overlapping by 1 -> 5 x 5 tiles of the 16x16 latent).
        out5 = os.path.join(work, "lowmem.png")
        r = subprocess.run(common + ["--rpi-lowmem", "--output", out5], capture_output=True, text=True)
        check(r.returncode == 0 and "vae tiles: 25 steps" in r.stderr and "peak RSS" in r.stderr,
              f"--rpi-lowmem runs, decodes in the smaller tiles and reports peak RSS ({r.stderr.strip()[-160:]})")
        if r.returncode == 0:
            check(png_info(out5)[:2] == (64, 64), "--rpi-lowmem writes a 64x64 PNG")
            check_weights_read(r.stderr, models)
        # Long prompts: 2 chunks of 75 tokens, concatenated.
        long_prompt = ", ".join(["a very detailed photograph of an astronaut riding a horse on mars"] * 8)
        r = subprocess.run([sd, "--print-tokens", "--tokenizer", tokenizer, "--prompt", long_prompt],
                           capture_output=True, text=True)
        lines = r.stdout.strip().splitlines()
        check(len(lines) == 2 and len(lines[0].split()) == 75, "a long prompt prints two chunk lines (75 + rest)")
        r = subprocess.run(common[:5] + ["--prompt", long_prompt, "--steps", "2", "--output", out5],
                           capture_output=True, text=True)
        check(r.returncode != 0 and "--input-shape encoder_hidden_states=1,154,64" in r.stderr,
              "a long prompt on a 77-token UNet names the conversion that fixes it")
        out6 = os.path.join(work, "long.png")
        r = subprocess.run([sd, "--models-path", models_long, "--tokenizer", tokenizer, "--prompt", long_prompt,
                            "--steps", "2", "--output", out6], capture_output=True, text=True)
        check(r.returncode == 0 and png_info(out6)[:2] == (64, 64),
              f"a long prompt runs on a UNet converted for 154 tokens ({r.stderr.strip()[-160:]})")
        # W8A8 decoder: converted with calibration on two random latents as the decoder sees them (scaled by
        # 1/0.18215, with the spread of this run's latents), used by --decoder-qu8; its image must stay close
        # to the float32 decoder's (PSNR >= 30 dB, the bar for W8A8).
        calib = os.path.join(work, "calib")
        spread = float(np.fromfile(latents, dtype=np.float32).std()) / LATENT_SCALE
        for k in range(2):
            os.makedirs(os.path.join(calib, str(k)))
            z = (np.random.default_rng(100 + k).standard_normal((1, 4, 16, 16)) * spread).astype(np.float32)
            np.save(os.path.join(calib, str(k), "input.1.npy"), z)
        qu8 = os.path.join(models, "vae_decoder_qu8")
        convert_case(convert, cases, "vae_decoder", qu8, "--quantize", "w8a8", "--calibration-inputs", calib)
        out8 = os.path.join(work, "qu8.png")
        r = subprocess.run(common + ["--decode-latents", latents, "--decoder-qu8", "--output", out8],
                           capture_output=True, text=True)
        check(r.returncode == 0 and "vae_decoder_qu8" in r.stderr, f"--decoder-qu8 decodes with vae_decoder_qu8 "
              f"({r.stderr.strip()[-160:]})")
        if r.returncode == 0:
            a = np.asarray(Image.open(out1).convert("RGB")).astype(float)
            b = np.asarray(Image.open(out8).convert("RGB")).astype(float)
            psnr = 10 * np.log10(255.0 ** 2 / max(np.mean((a - b) ** 2), 1e-12))
            check(psnr >= 30, f"W8A8 decoder image vs float32 decoder image: PSNR {psnr:.1f} dB >= 30")
        # --decoder-calibrate rewrites vae_decoder_qu8/range_data.txt from this decode's activations.
        ranges = os.path.join(qu8, "range_data.txt")
        before = open(ranges).read()
        os.remove(ranges)
        r = subprocess.run(common + ["--decode-latents", latents, "--decoder-calibrate", "--output", out8],
                           capture_output=True, text=True)
        lines = open(ranges).read().splitlines() if os.path.exists(ranges) else []
        names = lambda text: sorted(line.split(",")[0] for line in text.splitlines())  # noqa: E731
        check(r.returncode == 0 and lines and all(len(line.split(",")) == 3 for line in lines) and
              names("\n".join(lines)) == names(before),
              f"--decoder-calibrate writes range_data.txt for the same tensors as the converter ({len(lines)} lines)")
        # Batch 2: a UNet taking (2,4,h,w) runs cond + uncond in one run per step; same image as two runs.
        models_b2 = unet_variant(convert, cases, models, os.path.join(work, "models_b2"), "unet_batch2")
        out7 = os.path.join(work, "batch2.png")
        r = subprocess.run([common[0], "--models-path", models_b2] + common[3:] + ["--output", out7],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"sd runs with a batch-2 UNet ({r.stderr.strip()[-160:]})")
        if r.returncode == 0:
            a = np.asarray(Image.open(out1).convert("RGB")).astype(int)
            b = np.asarray(Image.open(out7).convert("RGB")).astype(int)
            check(a.shape == b.shape and np.abs(a - b).max() <= 2,
                  f"batch-2 guidance gives the batch-1 image (max pixel diff {np.abs(a - b).max()})")
            step = lambda text: float(re.search(r"\(([\d.]+) s/step\)", text).group(1))  # noqa: E731
            print(f"info batch-2 UNet: {step(r.stderr):.3f} s/step (batch 1: {step(first_stderr):.3f} s/step)")
        r = subprocess.run(common[:1] + ["--models-path", os.path.join(work, "nope"), "--prompt", "x"],
                           capture_output=True, text=True)
        check(r.returncode != 0 and "nope" in r.stderr and len(r.stderr.strip().splitlines()) == 1,
              "a missing models folder is one clear error line")
        r = subprocess.run([sd, "--print-tokens", "--tokenizer", tokenizer, "--prompt", "a photo of an astronaut riding a horse on mars"],
                           capture_output=True, text=True)
        check(r.stdout.strip() == "320 1125 539 550 18376 6765 320 4558 525 7496", "--print-tokens prints CLIP ids")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Whole SD 1.5 txt2img at fp16, int8 and int4 weights against an ONNX Runtime float32 pipeline (a benchmark, not a
test).

The reference pipeline is built here, independently of onnxstream and of the `sd` example: ONNX Runtime
(tests/bench/ort_serve.js, float32, default graph optimisations) runs the text encoder, the UNet and the VAE
decoder ONNX models, and NumPy does the rest with examples/sd/tests/scheduler_reference.py (k-diffusion's Euler
sampler and linspace schedule, the xoshiro256** / polar-method latent noise that `sd --seed` documents). The
prompt's token ids are the reference CLIP tokenizer's from ../shared/data/clip/tokens.tsv; the negative prompt
is empty. The image is made from the decoder's output with the usual (x + 1) / 2, clamped, times 255, rounded.

Then the `sd` example of the Debian 13 build (--build13, XNNPACK's 2024 API: int8 and int4 weights compute in
int8 there) runs the same txt2img (--sampler euler, --steps, --seed, guidance 7.5) for each precision of
--precisions in each memory mode of --modes, one process each under /usr/bin/time -v:
  fp16  the default folder layout: text encoder float32, UNet float16, VAE decoder float32
  int8  every model converted with --quantize w8 (per-channel int8 weights)
  int4  every model converted with --quantize w4 (blockwise int4 MatMul/Gemm/GEGLU weights, int8 for the rest)
`min` decodes in 16x16-latent tiles (--tiled-decode), the way a small board runs, and its picture is compared
with the reference's latent decoded the same way (ONNX Runtime on each tile of the tile decoder, blended in NumPy
by tests/tools/tile_blend.py); `balanced` decodes the whole latent. Printed per run: time per UNet step, total
time, peak RSS, weight MB read (text encoder + UNet + decoder, as `sd` reports them), rel L2 of the final latent
against the reference's, and the picture's PSNR against the reference picture. The models are the published
SD 1.5 architecture with random weights (tests/sd/gen_sd.py), so the picture is coloured noise: the PSNR
measures how far the precision moves a 10-step run, not how good a trained model's picture stays.

usage: tests/bench/txt2img_precisions.py [--build build] [--build13 build-debian13] [--work /tmp/onnxstream-sd15]
                                         [--precisions fp16,int8,int4] [--modes balanced,min] [--steps 10]
                                         [--seed 42] [--threads 2] [--size full|small]
  --build converts (any build); --work is shared with tests/bench/sd15.py and int8_weights.py (the ONNX models
  are generated once: ~10 minutes and ~10 GB of RAM at full size).
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "examples", "sd", "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
from debian12_vs_13 import DEBIAN13  # noqa: E402
from sd15_convert import generate_missing, rel_l2, timed  # noqa: E402
import scheduler_reference as ref  # noqa: E402
import sd_e2e  # noqa: E402
import tile_blend  # noqa: E402

TOKENIZER = os.path.join(SHARED, "data", "clip", "bpe_simple_vocab_16e6.txt.gz")
# (generator's model, folder in the sd layout); the tile decoder takes 16x16 latents at full size, the tiles
# sd picks in memory mode min when its folder is there.
MODELS = [("text_encoder", "text_encoder_fp32"), ("unet", "unet_fp16"), ("vae_decoder", "vae_decoder_fp32"),
          ("vae_decoder_tile_small", "vae_decoder_fp32_l16")]
PRECISIONS = {  # precision -> converter flags per generator model (default: none)
    "fp16": {"unet": ["--fp16"]},
    "int8": {m: ["--quantize", "w8"] for m, _ in MODELS},
    "int4": {m: ["--quantize", "w4"] for m, _ in MODELS},
}
START, END = 49406, 49407  # CLIP's <|startoftext|>, <|endoftext|> (SD 1.x pads with the latter)
CFG = 7.5
LATENT_SCALE = 0.18215


def log(msg):
    print(f"txt2img_precisions.py: {msg}", flush=True)


class OrtWorker:
    """One ort_serve.js process holding a model."""

    def __init__(self, node, model, threads, logfile):
        self.log = open(logfile, "w")
        self.p = subprocess.Popen(["/usr/bin/time", "-v", node, os.path.join(HERE, "ort_serve.js"), model,
                                   str(threads)], text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.log)
        self.load_s = self._answer("ready")["load_s"]
        self.run_s = 0.0

    def _answer(self, key):
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"ort_serve.js ended; see {self.log.name}")
        answer = json.loads(line)
        if not answer.get(key):
            raise RuntimeError(f"ort_serve.js: {answer.get('error', answer)}")
        return answer

    def run(self, feeds, scratch):
        """feeds: {name: numpy array (float32 or int64)}; returns (first output, seconds)."""
        import numpy as np
        spec = {}
        for i, (name, value) in enumerate(feeds.items()):
            path = os.path.join(scratch, f"feed_{i}.bin")
            value.tofile(path)
            spec[name] = {"file": path, "dtype": str(value.dtype), "shape": list(value.shape)}
        out = os.path.join(scratch, "out.bin")
        self.p.stdin.write(json.dumps({"feeds": spec, "out": out}) + "\n")
        self.p.stdin.flush()
        answer = self._answer("ok")
        self.run_s += answer["run_s"]
        return np.fromfile(out, np.float32).reshape(answer["dims"]), answer["run_s"]

    def close(self):
        """Ends the worker; returns its peak RSS in MB."""
        self.p.stdin.close()
        self.p.wait()
        self.log.close()
        with open(self.log.name) as f:
            return sd_e2e.peak_rss_mb(f.read()) or 0.0


def prompt_ids():
    """The first prompt of tokens.tsv with its reference ids, and (cond, uncond) as (1,77) int64."""
    import numpy as np
    with open(os.path.join(SHARED, "data", "clip", "tokens.tsv")) as f:
        prompt, ids = next(line.rstrip("\n").split("\t") for line in f if not line.startswith("#"))
    rows = []
    for body in ([int(t) for t in ids.split()], []):
        row = np.full((1, 77), END, dtype=np.int64)
        row[0, :len(body) + 2] = [START] + body + [END]
        rows.append(row)
    return prompt, rows[0], rows[1]


def tile_size(onnx):
    """The tile decoder's latent tile (cells) and the overlap the benchmark asks sd for (--tile-overlap)."""
    case = os.path.join(os.path.dirname(onnx["vae_decoder_tile_small"]), "case.json")
    tile = json.load(open(case))["inputs"][0]["shape"][2]
    return tile, tile // 4


def reference_pipeline(node, onnx, steps, seed, threads, tile, overlap, scratch, logs):
    """The ONNX Runtime float32 txt2img: (final latent (1,4,h,w), {"full": image, "tiled": image} as uint8
    (H,W,3), its figures: seconds per UNet step, total seconds (the whole decode), the largest of the ONNX
    Runtime processes' peak RSS). "tiled" decodes the latent in tile x tile cells overlapping by `overlap` with
    the tile decoder and blends them (tests/tools/tile_blend.py), the reference of sd --tiled-decode."""
    import numpy as np
    t0 = time.time()
    _, cond_ids, uncond_ids = prompt_ids()
    te = OrtWorker(node, onnx["text_encoder"], threads, os.path.join(logs, "txt2img_ort_text_encoder.log"))
    cond = te.run({"onnx::Reshape_0": cond_ids}, scratch)[0]
    uncond = te.run({"onnx::Reshape_0": uncond_ids}, scratch)[0]
    peaks = [te.close()]

    unet = OrtWorker(node, onnx["unet"], threads, os.path.join(logs, "txt2img_ort_unet.log"))
    shape = json.load(open(os.path.join(os.path.dirname(onnx["unet"]), "case.json")))["inputs"][0]["shape"]
    n = int(np.prod(shape))
    rng = ref.Rng(seed)
    sigmas, ts = ref.sigmas_linspace(steps)
    x = np.array([rng.normal() for _ in range(n)], dtype=np.float64).reshape(shape) * sigmas[0]

    def eps(sample, t, context):
        return unet.run({"sample": sample.astype(np.float32), "timestep": np.array([t], dtype=np.float32),
                         "encoder_hidden_states": context}, scratch)[0].astype(np.float64)

    for i in range(steps):
        sigma = sigmas[i]
        sample = x / math.sqrt(sigma * sigma + 1.0)  # c_in
        e_u, e_c = eps(sample, ts[i], uncond), eps(sample, ts[i], cond)
        denoised = x - sigma * (e_u + CFG * (e_c - e_u))
        x = x + ref.to_d(x, sigma, denoised) * (sigmas[i + 1] - sigma)  # k-diffusion sample_euler
        log(f"reference step {i + 1}/{steps}")
    unet_s = unet.run_s
    peaks.append(unet.close())

    vae = OrtWorker(node, onnx["vae_decoder"], threads, os.path.join(logs, "txt2img_ort_vae_decoder.log"))
    y = vae.run({"input.1": (x / LATENT_SCALE).astype(np.float32)}, scratch)[0]
    peaks.append(vae.close())
    image = np.floor(np.clip(y[0].astype(np.float64) * 0.5 + 0.5, 0, 1) * 255 + 0.5).astype(np.uint8)
    figures = {"precision": "fp32", "mode": "ONNX Runtime", "seconds_per_step": unet_s / steps,
               "total_seconds": time.time() - t0, "peak_rss_mb": max(peaks), "weights_read_mb": None,
               "latent_rel_l2": 0.0, "psnr_db": float("inf")}

    starts = tile_blend.tile_starts(x.shape[2], tile, overlap)
    vae = OrtWorker(node, onnx["vae_decoder_tile_small"], threads, os.path.join(logs, "txt2img_ort_vae_tiles.log"))
    decoded = {(ty, tx): vae.run({"input.1": np.ascontiguousarray(
        x[:, :, ty:ty + tile, tx:tx + tile] / LATENT_SCALE).astype(np.float32)}, scratch)[0][0]
        for ty in starts for tx in starts}
    vae.close()
    images = {"full": image.transpose(1, 2, 0), "tiled": tile_blend.blend(decoded, starts, tile, x.shape[2])}
    return x.astype(np.float32), images, figures


def psnr(a, b):
    import numpy as np
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * math.log10(255.0 ** 2 / mse)


def parse_sd(text):
    """sd_e2e.py's figures of sd's progress lines, /usr/bin/time -v's peak RSS, and the weight MB read: the text
    encoder, the UNet (its total) and the decoder each print one "MB of weights read"."""
    out = sd_e2e.parse_sd(text)
    read = [float(v) for v in re.findall(r"([\d.]+) MB of weights read", text)]
    out["weights_read_mb"] = sum(read) if read else None
    out["peak_rss_mb"] = sd_e2e.peak_rss_mb(text)
    return out


def convert_folders(convert, onnx, work, logs):
    """WORK/txt2img/<precision>/ in sd's layout, converted unless there already."""
    folders = {}
    for precision, flags in PRECISIONS.items():
        root = os.path.join(work, "txt2img", precision)
        for model, folder in MODELS:
            dst = os.path.join(root, folder)
            if os.path.exists(os.path.join(dst, "model.txt")):
                continue
            shutil.rmtree(dst, ignore_errors=True)
            os.makedirs(root, exist_ok=True)
            log(f"converting {model} ({precision})")
            timed([convert, onnx[model], dst] + flags.get(model, []),
                  os.path.join(logs, f"txt2img_convert_{precision}_{model}.log"))
        folders[precision] = root
    return folders


def add_arguments(ap, prefix=""):
    """This script's options (with prefix, as int8_weights.py takes them for its txt2img rows)."""
    ap.add_argument(f"--{prefix}precisions", default="fp16,int8,int4")
    ap.add_argument(f"--{prefix}steps", type=int, default=10)
    ap.add_argument(f"--{prefix}seed", type=int, default=42)


def txt2img(build, build13, work, precisions, modes, steps, seed, threads, size):
    """Generates and converts what is missing, runs the reference and every (precision, mode); returns the rows,
    the reference's first."""
    import numpy as np
    from PIL import Image
    convert = os.path.join(os.path.abspath(build), "src", "tools", "onnxstream-convert")
    sd = os.path.join(os.path.abspath(build13), "examples", "sd", "sd")
    for exe in (convert, sd):
        if not os.access(exe, os.X_OK):
            sys.exit(f"txt2img_precisions.py: {exe} not found: build it first")
    node = shutil.which("node")
    if not node:
        sys.exit("txt2img_precisions.py: node not found (ONNX Runtime runs through onnxruntime-node)")
    work = os.path.abspath(work)
    logs = os.path.join(work, "logs")
    scratch = os.path.join(work, "txt2img", "scratch")
    os.makedirs(logs, exist_ok=True)
    os.makedirs(scratch, exist_ok=True)

    onnx = {m: os.path.join(work, "onnx", "sd", m, "model.onnx") for m, _ in MODELS}
    generate_missing(os.path.join(work, "onnx"), size, [m for m, _ in MODELS], os.path.join(logs, "txt2img_gen.log"))
    folders = convert_folders(convert, onnx, work, logs)

    log(f"ONNX Runtime float32 pipeline, {steps} steps")
    tile, overlap = tile_size(onnx)
    latent_ref, images_ref, reference = reference_pipeline(node, onnx, steps, seed, threads, tile, overlap, scratch,
                                                           logs)
    for kind, image in images_ref.items():
        Image.fromarray(image).save(os.path.join(work, "txt2img", f"ort_{kind}.png"))

    prompt = prompt_ids()[0]
    rows = [reference]
    env = dict(os.environ, DEBIAN13_MOUNTS=work)
    for precision in precisions:
        for mode in modes:
            name = f"{precision}_{mode}"
            png, latents = (os.path.join(work, "txt2img", f"{name}.{ext}") for ext in ("png", "latents"))
            cmd = [sd, "--models-path", folders[precision], "--tokenizer", TOKENIZER, "--prompt", prompt,
                   "--sampler", "euler", "--steps", str(steps), "--seed", str(seed), "--cfg", str(CFG),
                   "--threads", str(threads), "--memory-mode", mode, "--output", png, "--save-latents", latents]
            if mode == "min":
                cmd += ["--tiled-decode", "--tile-overlap", str(overlap)]
            log(f"sd {name}")
            p = subprocess.run([DEBIAN13, "exec", "/usr/bin/time", "-v"] + cmd, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=env)
            with open(os.path.join(logs, f"txt2img_sd_{name}.log"), "w") as f:
                f.write(p.stdout)
            if p.returncode != 0:
                sys.exit(f"txt2img_precisions.py: sd {name} failed; see {logs}/txt2img_sd_{name}.log")
            row = dict(parse_sd(p.stdout), precision=precision, mode=mode)
            row["latent_rel_l2"] = rel_l2(np.fromfile(latents, np.float32), latent_ref.reshape(-1))[0]
            want = images_ref["tiled" if mode == "min" else "full"]
            row["psnr_db"] = psnr(np.asarray(Image.open(png).convert("RGB")), want)
            rows.append(row)
            log(json.dumps(row))
    with open(os.path.join(work, "txt2img", "results.json"), "w") as f:
        json.dump({"steps": steps, "seed": seed, "threads": threads, "rows": rows}, f, indent=1)
    return rows


def print_table(rows, steps, seed, threads, size):
    print(f"\nSD 1.5 txt2img ({size} size, random weights): {steps} Euler steps, guidance {CFG}, seed {seed}, "
          f"{threads} threads; accuracy against the ONNX Runtime float32 pipeline (min: tiled decode, against "
          f"the reference decoded in the same tiles)")
    print(f"{'weights':<8} {'engine / mode':<22} {'s/step':>7} {'total s':>8} {'x ORT':>6} {'peak RSS MB':>12}"
          f" {'weights MB read':>16} {'latent rel L2':>14} {'PSNR dB':>8}")
    ort_total = rows[0]["total_seconds"]
    for r in rows:
        engine = r["mode"] if r["mode"] == "ONNX Runtime" else f"onnxstream {r['mode']}"
        read = r.get("weights_read_mb")
        print(f"{r['precision']:<8} {engine:<22} {r.get('seconds_per_step', 0):>7.2f} {r.get('total_seconds', 0):>8.1f}"
              f" {r.get('total_seconds', 0) / ort_total:>6.2f} {r.get('peak_rss_mb', 0):>12.1f}"
              f" {'-' if read is None else f'{read:.1f}':>16} {r['latent_rel_l2']:>14.4f} {r['psnr_db']:>8.1f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="converts the models (any build)")
    ap.add_argument("--build13", default=os.path.join(ROOT, "build-debian13"), help="runs sd (XNNPACK 2024)")
    ap.add_argument("--work", default="/tmp/onnxstream-sd15")
    ap.add_argument("--modes", default="balanced,min")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--size", choices=["full", "small"], default="full")
    add_arguments(ap)
    args = ap.parse_args()
    rows = txt2img(args.build, args.build13, args.work, [p for p in args.precisions.split(",") if p],
                   [m for m in args.modes.split(",") if m], args.steps, args.seed, args.threads, args.size)
    print_table(rows, args.steps, args.seed, args.threads, args.size)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""End to end: `sd --turbo` and `sd --xl` on the small SDXL-architecture models (random weights) of gen_sdxl.py.

Converts the models into OnnxStream's SDXL folder layout, runs `sd`, and recomputes each run independently:
token ids from `sd --print-tokens` (the tokenizer is tested against CLIP's reference ids elsewhere), both text
encoders, the UNet and the VAE decoder run by ONNX Runtime on the ONNX files, and everything between them
written here in NumPy from diffusers' formulas: SDXL's second tokenizer padding with 0, the per-token
concatenation of the two penultimate hidden states, the pooled embedding, time_ids = (h, w, 0, 0, h, w),
zero unconditional embeddings without a negative prompt, classifier-free guidance, Turbo's trailing timestep
999 at sigma_max, the Euler step, and the 0.13025 latent scale. The initial noise comes from the NumPy
implementation of sd's portable RNG in examples/sd/tests/scheduler_reference.py.
Also checked: byte-identical reruns, batch-2 guidance, tiled decoding with OnnxStream's tile folder name,
and clear errors for a negative prompt with --turbo and for a folder without SDXL models.
usage: sdxl_cli_test.py SD_EXE CONVERT_EXE CASES_DIR SHARED_DIR NODE
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "sd", "tests"))
import case_output  # noqa: E402
import cross_exe  # noqa: E402
from checklist import check, finish, rel_l2  # noqa: E402
import scheduler_reference as ref  # noqa: E402
from sd_cli_test import convert_case  # noqa: E402

LATENT_SCALE = 0.13025
BOS, EOS = 49406, 49407

class Ort:
    """ONNX Runtime on gen_sdxl.py's ONNX files, through tests/tools/ort_reference.js (one node run per call)."""

    def __init__(self, node, cases, work):
        self.node, self.cases, self.work, self.calls = node, cases, work, 0

    def run(self, jobs):
        """jobs: [(model case name, {input name: array})] -> [{output name: array}] in the same order."""
        self.calls += 1
        root = os.path.join(self.work, f"ort{self.calls}")
        dirs = []
        for k, (model, feeds) in enumerate(jobs):
            d = os.path.join(root, "c", f"j{k}")
            os.makedirs(d)
            src = os.path.join(self.cases, "sd", model)
            os.symlink(os.path.join(src, "model.onnx"), os.path.join(d, "model.onnx"))
            with open(os.path.join(src, "case.json")) as f:
                outputs = json.load(f)["outputs"]
            meta = {"inputs": [], "outputs": []}
            for i, (name, a) in enumerate(feeds.items()):
                np.save(os.path.join(d, f"input_{i}.npy"), a)
                meta["inputs"].append({"index": i, "name": name, "kind": "input", "file": f"input_{i}.npy",
                                       "dtype": str(a.dtype), "shape": list(a.shape)})
            batch = next(iter(feeds.values())).shape[0]
            for o in outputs:  # the case's own outputs, at this run's batch size
                meta["outputs"].append(dict(o, shape=[batch] + o["shape"][1:]))
            with open(os.path.join(d, "case.json"), "w") as f:
                json.dump(meta, f)
            dirs.append((d, meta["outputs"]))
        case_output.add_ort_reference(self.node, root, "sdxl_cli_test.py")
        return [{o["name"]: np.load(os.path.join(d, o["file"])) for o in outs} for d, outs in dirs]


def token_ids(sd, tokenizer, prompt):
    """One 77-id chunk as sd builds it: BOS, the prompt's ids, EOS, EOS padding."""
    r = subprocess.run([sd, "--print-tokens", "--tokenizer", tokenizer, "--prompt", prompt], capture_output=True,
                       text=True, check=True)
    ids = [int(v) for v in r.stdout.split()]
    chunk = np.full((1, 77), EOS, dtype=np.int64)
    chunk[0, 0] = BOS
    chunk[0, 1:1 + len(ids)] = ids
    return chunk


def conditioning(ort, sd, tokenizer, prompt):
    """(context (1,77,W1+W2), pooled (1,P)) for one prompt, as diffusers' SDXL encode_prompt builds them."""
    ids1 = token_ids(sd, tokenizer, prompt)
    ids2 = ids1.copy()
    end = int(np.argmax(ids2[0] == EOS))
    ids2[0, end + 1:] = 0  # the OpenCLIP tokenizer pads with "!" (id 0)
    out1, out2 = ort.run([("sdxl_text_encoder_1", {"input_ids": ids1}), ("sdxl_text_encoder_2", {"input_ids": ids2})])
    h1 = out1["hidden_states_penultimate"]
    return np.concatenate([h1, out2["hidden_states_penultimate"]], axis=-1), out2["text_embeds"]


def initial_noise(seed, n):
    rng = ref.Rng(seed)
    return np.array([rng.normal() for _ in range(n)], dtype=np.float64)


def reference_latents(ort, shape, seed, sigmas, timesteps, cond, uncond, cfg):
    """k-diffusion Euler from sigmas[0] (no noise drawn after the start), with guidance when uncond is given."""
    n = int(np.prod(shape))
    x = initial_noise(seed, n).reshape(shape) * sigmas[0]
    h, w = shape[2] * 8, shape[3] * 8
    time_ids = np.array([[h, w, 0, 0, h, w]], dtype=np.float32)
    for i in range(len(sigmas) - 1):
        sigma = sigmas[i]
        x_in = (x / np.sqrt(sigma ** 2 + 1)).astype(np.float32)
        feeds = lambda c: {"sample": x_in, "timestep": np.array([timesteps[i]], dtype=np.float32),  # noqa: E731
                           "encoder_hidden_states": c[0].astype(np.float32),
                           "text_embeds": c[1].astype(np.float32), "time_ids": time_ids}
        jobs = [("sdxl_unet", feeds(cond))] + ([("sdxl_unet", feeds(uncond))] if uncond is not None else [])
        outs = ort.run(jobs)
        eps = outs[0]["out_sample"].astype(np.float64)
        if uncond is not None:
            eps_u = outs[1]["out_sample"].astype(np.float64)
            eps = eps_u + cfg * (eps - eps_u)
        denoised = x - sigma * eps
        x = x + (x - denoised) / sigma * (sigmas[i + 1] - sigma)
    return x


def decode_reference(ort, latents):
    out = ort.run([("sdxl_vae_decoder", {"input.1": (latents / LATENT_SCALE).astype(np.float32)})])[0]["sample"]
    img = np.clip(out[0].astype(np.float64) * 0.5 + 0.5, 0, 1)
    return np.floor(img * 255 + 0.5).astype(np.uint8).transpose(1, 2, 0)


def compare_run(what, latents_file, png, want_latents, ort):
    got = np.fromfile(latents_file, dtype=np.float32).reshape(want_latents.shape)
    err = rel_l2(got, want_latents)
    check(err <= 1e-4, f"{what}: latents vs the NumPy + ONNX Runtime pipeline, rel L2 {err:.2e} <= 1e-4")
    want = decode_reference(ort, got.astype(np.float64))
    img = np.asarray(Image.open(png).convert("RGB")).astype(int)
    diff = np.abs(img - want.astype(int))
    check(img.shape == want.shape and diff.max() <= 1,
          f"{what}: PNG vs ONNX Runtime's decode of the same latents / 0.13025 (max pixel diff {diff.max()})")


def main():
    sd, convert, cases, shared, node = sys.argv[1:6]
    sd, convert = cross_exe.wrap(sd), cross_exe.wrap(convert)
    tokenizer = os.path.join(shared, "data", "clip", "bpe_simple_vocab_16e6.txt.gz")
    work = tempfile.mkdtemp(prefix="onnxstream-sdxl-")
    try:
        ort = Ort(node, cases, work)
        models = os.path.join(work, "models")
        os.mkdir(models)
        for src, dst in [("sdxl_text_encoder_1", "sdxl_text_encoder_1_fp32"),
                         ("sdxl_text_encoder_2", "sdxl_text_encoder_2_fp32"), ("sdxl_unet", "sdxl_unet_fp32"),
                         ("sdxl_vae_decoder", "sdxl_vae_decoder_fp32"),
                         ("sdxl_vae_decoder_tile", "sdxl_vae_decoder_32x32_fp32")]:  # OnnxStream's tile name
            convert_case(convert, cases, src, os.path.join(models, dst))
        with open(os.path.join(cases, "sd", "sdxl_unet", "case.json")) as f:
            latent_shape = tuple(json.load(f)["inputs"][0]["shape"])
        prompt, seed = "an astronaut riding a horse", 12345
        base = [sd, "--models-path", models, "--tokenizer", tokenizer, "--prompt", prompt, "--seed", str(seed)]

        # SDXL Turbo, 1 step: timestep 999, x0 = x - sigma_max * eps.
        lat, out1, out2 = (os.path.join(work, f) for f in ("turbo.bin", "turbo1.png", "turbo2.png"))
        r = subprocess.run(base + ["--turbo", "--save-latents", lat, "--output", out1], capture_output=True, text=True)
        check(r.returncode == 0, f"sd --turbo runs ({r.stderr.strip()[-200:]})")
        if r.returncode != 0:
            return
        cond = conditioning(ort, sd, tokenizer, prompt)
        sigmas, timesteps = ref.sigmas_trailing(1)
        check(timesteps[0] == 999, "Turbo's one trailing step is timestep 999")
        want = reference_latents(ort, latent_shape, seed, sigmas, timesteps, cond, None, 1.0)
        compare_run("--turbo 1 step", lat, out1, want, ort)
        subprocess.run(base + ["--turbo", "--output", out2], check=True, capture_output=True)
        check(open(out1, "rb").read() == open(out2, "rb").read(), "--turbo: same seed, byte-identical PNG")

        # SDXL, 2 Euler steps with guidance: zero unconditional embeddings without a negative prompt.
        lat, out3 = os.path.join(work, "xl.bin"), os.path.join(work, "xl.png")
        xl = base + ["--xl", "--steps", "2", "--sampler", "euler", "--cfg", "4"]
        r = subprocess.run(xl + ["--save-latents", lat, "--output", out3], capture_output=True, text=True)
        check(r.returncode == 0, f"sd --xl runs ({r.stderr.strip()[-200:]})")
        if r.returncode == 0:
            sigmas, timesteps = ref.sigmas_linspace(2)
            zeros = (np.zeros_like(cond[0]), np.zeros_like(cond[1]))
            want = reference_latents(ort, latent_shape, seed, sigmas, timesteps, cond, zeros, 4.0)
            compare_run("--xl 2 steps, no negative prompt", lat, out3, want, ort)
            again = os.path.join(work, "xl_again.png")
            subprocess.run(xl + ["--output", again], check=True, capture_output=True)
            check(open(out3, "rb").read() == open(again, "rb").read(), "--xl: same seed, byte-identical PNG")
        # With a negative prompt, its own embeddings.
        lat_n, out4 = os.path.join(work, "xl_neg.bin"), os.path.join(work, "xl_neg.png")
        r = subprocess.run(xl + ["--neg-prompt", "blurry", "--save-latents", lat_n, "--output", out4],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"sd --xl --neg-prompt runs ({r.stderr.strip()[-200:]})")
        if r.returncode == 0:
            uncond = conditioning(ort, sd, tokenizer, "blurry")
            want = reference_latents(ort, latent_shape, seed, sigmas, timesteps, cond, uncond, 4.0)
            compare_run("--xl 2 steps, negative prompt", lat_n, out4, want, ort)

        # Batch 2: cond + uncond in one UNet run per step, same image.
        models_b2 = os.path.join(work, "models_b2")
        os.mkdir(models_b2)
        for d in os.listdir(models):
            if d != "sdxl_unet_fp32":
                os.symlink(os.path.join(models, d), os.path.join(models_b2, d))
        convert_case(convert, cases, "sdxl_unet_batch2", os.path.join(models_b2, "sdxl_unet_fp32"))
        out5 = os.path.join(work, "b2.png")
        r = subprocess.run([a if a != models else models_b2 for a in xl] + ["--neg-prompt", "blurry", "--output", out5],
                           capture_output=True, text=True)
        if r.returncode == 0:
            a = np.asarray(Image.open(out4).convert("RGB")).astype(int)
            b = np.asarray(Image.open(out5).convert("RGB")).astype(int)
            check(a.shape == b.shape and np.abs(a - b).max() <= 2,
                  f"--xl with a batch-2 UNet gives the batch-1 image (max pixel diff {np.abs(a - b).max()})")
        else:
            check(False, f"--xl runs with a batch-2 UNet ({r.stderr.strip()[-200:]})")
        r = subprocess.run([a if a != models else models_b2 for a in base] + ["--turbo", "--output", out5],
                           capture_output=True, text=True)
        check(r.returncode != 0 and "use a batch-1 unet" in r.stderr,
              f"--turbo refuses a batch-2 UNet clearly ({r.stderr.strip()[-120:]})")

        # Tiled decoding through OnnxStream's sdxl_vae_decoder_32x32_* folder name.
        out6 = os.path.join(work, "tiled.png")
        r = subprocess.run(base + ["--xl", "--decode-latents", lat, "--tiled-decode", "--tile-overlap", "2",
                                   "--output", out6], capture_output=True, text=True)
        check(r.returncode == 0 and "sdxl_vae_decoder_32x32_fp32" in r.stderr,
              f"--xl --tiled-decode uses sdxl_vae_decoder_32x32_fp32 ({r.stderr.strip()[-160:]})")

        # Errors.
        r = subprocess.run(base + ["--turbo", "--neg-prompt", "blurry", "--output", out6], capture_output=True,
                           text=True)
        check(r.returncode != 0 and "no negative prompt" in r.stderr and len(r.stderr.strip().splitlines()) == 1,
              "--turbo with a negative prompt is one clear error line")
        r = subprocess.run(base + ["--turbo", "--cfg", "3", "--output", out6], capture_output=True, text=True)
        check(r.returncode != 0 and "without guidance" in r.stderr, "--turbo with --cfg is refused")
        empty = os.path.join(work, "sd15_only")
        os.mkdir(empty)
        r = subprocess.run([sd, "--models-path", empty, "--xl", "--tokenizer", tokenizer, "--prompt", "x"],
                           capture_output=True, text=True)
        check(r.returncode != 0 and "sdxl_text_encoder_1_fp32" in r.stderr,
              f"a folder without SDXL models names the missing folder ({r.stderr.strip()[-160:]})")
        print(f"info {ort.calls} ONNX Runtime calls")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()

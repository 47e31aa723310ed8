#!/usr/bin/python3
"""Full-size Stable Diffusion 1.5 end to end with the `sd` example (a benchmark, not a test).

Generates (or reuses) the full-size SD 1.5-architecture ONNX models with tests/sd/gen_sd.py (random weights:
the image is noise, the figures are what matter), converts them into OnnxStream's folder layout with
onnxstream-convert (text_encoder_fp32, unet_fp16, vae_decoder_fp32 and the 32x32 tile decoder
vae_decoder_fp32_l32), then runs `sd --steps 2`:
  - default settings (balanced memory mode, full VAE decode), under /usr/bin/time -v;
  - --rpi-lowmem (memory mode min, nocache, flash attention, tiled decode) inside a memory cgroup limited to
    --limit-mb (default 350 MB; cgroup v1 memory controller, or v2 when that is what the machine has);
  - the tiled VAE decode alone (--decode-latents of the default run's latents, --rpi-lowmem).
Prints time per step, total time and peak RSS of each run, the cgroup's peak charge and OOM count, and
writes everything to WORK/sd_e2e.json.

usage: tests/bench/sd_e2e.py --build BUILD_DIR [--work DIR] [--onnx GEN_DIR] [--threads N] [--limit-mb 350]
  --onnx  a gen_sd.py --size full output folder to reuse (sd/<model>/model.onnx); missing models are generated
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "examples", "sd"))
from make_models import make_models  # noqa: E402
PROMPT = "a photograph of an astronaut riding a horse on mars, highly detailed"


def log(msg):
    print(f"sd_e2e.py: {msg}", flush=True)


def time_v(cmd, logfile, prefix=()):
    """Run cmd under /usr/bin/time -v; returns (stderr text, wall seconds, peak RSS MB, exit code)."""
    t0 = time.time()
    with open(logfile, "w") as f:
        p = subprocess.run(list(prefix) + ["/usr/bin/time", "-v"] + cmd, stdout=f, stderr=subprocess.PIPE, text=True)
        f.write(p.stderr)
    return p.stderr, time.time() - t0, peak_rss_mb(p.stderr), p.returncode


def peak_rss_mb(time_v_text):
    """The peak RSS in MB that /usr/bin/time -v printed, or None."""
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", time_v_text)
    return int(rss.group(1)) / 1024 if rss else None


class MemoryCgroup:
    """A memory cgroup with a hard limit that a child process joins before exec'ing the program."""

    def __init__(self, limit_bytes):
        self.v1 = "/sys/fs/cgroup/memory"
        self.path = None
        self._remove_stale()
        if os.path.isdir(self.v1):
            self.path = os.path.join(self.v1, f"onnxstream-sd-e2e-{os.getpid()}")
            os.mkdir(self.path)
            self._write("memory.limit_in_bytes", limit_bytes)
            if os.path.exists(os.path.join(self.path, "memory.memsw.limit_in_bytes")):
                self._write("memory.memsw.limit_in_bytes", limit_bytes)  # no escape into swap
            self.peak_file, self.procs = "memory.max_usage_in_bytes", "cgroup.procs"
        elif os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
            self.path = f"/sys/fs/cgroup/onnxstream-sd-e2e-{os.getpid()}"
            os.mkdir(self.path)
            self._write("memory.max", limit_bytes)
            self._write("memory.swap.max", 0)
            self.peak_file, self.procs = "memory.peak", "cgroup.procs"
        else:
            raise OSError("no memory cgroup controller at /sys/fs/cgroup")

    @staticmethod
    def _remove_stale():
        """Removes the cgroups of earlier runs that were killed before remove() (their script is gone)."""
        for parent in ("/sys/fs/cgroup/memory", "/sys/fs/cgroup"):
            if not os.path.isdir(parent):
                continue
            for name in os.listdir(parent):
                pid = name[len("onnxstream-sd-e2e-"):] if name.startswith("onnxstream-sd-e2e-") else ""
                if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
                    try:
                        os.rmdir(os.path.join(parent, name))  # fails, harmlessly, while processes remain
                    except OSError:
                        pass

    def _write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(str(value))

    def _read(self, name):
        try:
            with open(os.path.join(self.path, name)) as f:
                return f.read()
        except OSError:
            return ""

    def prefix(self):
        """A command prefix that moves the shell into the cgroup, then execs the rest."""
        return ["sh", "-c", f'echo $$ > {os.path.join(self.path, self.procs)} && exec "$@"', "sh"]

    def report(self):
        peak = self._read(self.peak_file).strip()
        events = self._read("memory.events") or self._read("memory.oom_control")
        ooms = re.search(r"oom_kill (\d+)", events)
        return {"peak_charge_mb": int(peak) / 2**20 if peak else None,
                "oom_kills": int(ooms.group(1)) if ooms else None,
                "failcnt": self._read("memory.failcnt").strip() or None}

    def remove(self):
        try:
            os.rmdir(self.path)
        except OSError:
            pass


def run_in_cgroup(cmd, logfile, limit_mb, results):
    """time_v(cmd) inside a memory cgroup of limit_mb; without a cgroup controller, unlimited (noted in
    results["cgroup_error"]). Returns time_v's (stderr, wall, peak RSS MB, exit code) and the cgroup's report
    (None without one)."""
    try:
        cg = MemoryCgroup(limit_mb * 2**20)
    except OSError as e:
        cg = None
        results["cgroup_error"] = str(e)
        log(f"no memory cgroup ({e}); running without the limit")
    try:
        measured = time_v(cmd, logfile, cg.prefix() if cg else ())
        return measured, cg.report() if cg else None
    finally:
        if cg:
            cg.remove()


def parse_sd(stderr):
    out = {}
    m = re.search(r"unet: (\d+) steps in ([\d.]+) s \(([\d.]+) s/step\)", stderr)
    if m:
        out["unet_seconds"], out["seconds_per_step"] = float(m.group(2)), float(m.group(3))
    m = re.search(r"text encoder: .* in ([\d.]+) s", stderr)
    if m:
        out["text_encoder_seconds"] = float(m.group(1))
    m = re.search(r"vae decoder(?: \(tiled\))?(?: \([^)]*\))?: ([\d.]+) s", stderr)
    if m:
        out["vae_seconds"] = float(m.group(1))
    m = re.search(r"done in ([\d.]+) s, peak RSS ([\d.]+) MB", stderr)
    if m:
        out["total_seconds"], out["sd_peak_rss_mb"] = float(m.group(1)), float(m.group(2))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", default="/tmp/onnxstream-sd-e2e")
    ap.add_argument("--onnx", help="reuse gen_sd.py --size full output (sd/<model>/model.onnx)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--limit-mb", type=int, default=350)
    ap.add_argument("--size", choices=["full", "small"], default="full", help="small: a quick check of this script")
    ap.add_argument("--runs", default="default,rpi-lowmem,vae-tiled",
                    help="which sd runs: default, rpi-lowmem, vae-tiled (needs default's latents)")
    args = ap.parse_args()

    build = os.path.abspath(args.build)
    sd = os.path.join(build, "examples", "sd", "sd")
    for exe in (sd,):
        if not os.access(exe, os.X_OK):
            sys.exit(f"sd_e2e.py: {exe} not found; build first (ninja -C {args.build})")
    tokenizer = os.path.join(ROOT, "..", "shared", "data", "clip", "bpe_simple_vocab_16e6.txt.gz")
    work = os.path.abspath(args.work)
    logs = os.path.join(work, "logs")
    os.makedirs(logs, exist_ok=True)
    results = {"steps": args.steps, "threads": args.threads, "size": args.size}

    # 1. ONNX models (reused from --onnx, the rest generated) converted into the SD folder layout.
    models = os.path.join(work, "models")
    results["convert_seconds"] = make_models(build, models, args.size, args.onnx, os.path.join(work, "onnx"))

    common = [sd, "--models-path", models, "--tokenizer", tokenizer, "--prompt", PROMPT, "--neg-prompt", "blurry",
              "--steps", str(args.steps), "--seed", "42", "--threads", str(args.threads)]
    runs = [r for r in args.runs.split(",") if r]

    # 2. Default settings.
    if "default" in runs:
        log("sd default settings")
        err, wall, rss, rc = time_v(common + ["--output", os.path.join(work, "default.png"), "--save-latents",
                                              os.path.join(work, "latents.bin")],
                                    os.path.join(logs, "sd_default.log"))
        results["default"] = dict(parse_sd(err), exit_code=rc, wall_seconds=round(wall, 1), peak_rss_mb=rss)

    # 3. --rpi-lowmem inside a memory cgroup.
    if "rpi-lowmem" in runs:
        log(f"sd --rpi-lowmem inside a {args.limit_mb} MB memory cgroup")
        (err, wall, rss, rc), cgroup = run_in_cgroup(
            common + ["--rpi-lowmem", "--output", os.path.join(work, "lowmem.png")],
            os.path.join(logs, "sd_rpi_lowmem.log"), args.limit_mb, results)
        entry = dict(parse_sd(err), exit_code=rc, wall_seconds=round(wall, 1), peak_rss_mb=rss,
                     limit_mb=args.limit_mb if cgroup else None)
        if cgroup:
            entry["cgroup"] = cgroup
        results["rpi_lowmem"] = entry

    # 4. The VAE alone, tiled, in memory mode min (issue 4's VAE working-set target) on the default run's latents.
    latents = os.path.join(work, "latents.bin")
    if "vae-tiled" in runs and not os.path.exists(latents):
        import numpy as np  # no default run: a seeded latent of the size the UNet works on
        side = 64 if args.size == "full" else 16
        (np.random.default_rng(42).standard_normal((1, 4, side, side)) * 0.18215).astype(np.float32).tofile(latents)
    if "vae-tiled" in runs:
        log("sd --decode-latents --rpi-lowmem (tiled VAE decode alone)")
        err, wall, rss, rc = time_v(common + ["--rpi-lowmem", "--tiled-decode", "--decode-latents", latents,
                                              "--output", os.path.join(work, "vae_tiled.png")],
                                    os.path.join(logs, "sd_vae_tiled.log"))
        results["vae_tiled"] = dict(parse_sd(err), exit_code=rc, wall_seconds=round(wall, 1), peak_rss_mb=rss)

    with open(os.path.join(work, "sd_e2e.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(f"\nSD 1.5 ({args.size}), sd --steps {args.steps}, {args.threads or 'default'} threads")
    print(f"{'run':<12} {'exit':>4} {'s/step':>8} {'text enc s':>10} {'vae s':>7} {'total s':>8} {'peak RSS MB':>12}"
          f" {'cgroup peak MB':>15}")
    for name in ("default", "rpi_lowmem", "vae_tiled"):
        r = results.get(name)
        if not r:
            continue
        cgp = (r.get("cgroup") or {}).get("peak_charge_mb")
        fmt = lambda v, p=1: "-" if v is None else f"{v:.{p}f}"  # noqa: E731
        print(f"{name:<12} {r['exit_code']:>4} {fmt(r.get('seconds_per_step'), 2):>8} "
              f"{fmt(r.get('text_encoder_seconds')):>10} {fmt(r.get('vae_seconds')):>7} "
              f"{fmt(r.get('total_seconds')):>8} {fmt(r.get('peak_rss_mb')):>12} {fmt(cgp):>15}")
    bad = [n for n in ("default", "rpi_lowmem", "vae_tiled") if n in results and results[n]["exit_code"] != 0]
    if bad:
        sys.exit(f"sd_e2e.py: {', '.join(bad)} failed; see {logs}")


if __name__ == "__main__":
    main()

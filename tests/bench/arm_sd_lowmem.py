#!/usr/bin/python3
"""Full-size Stable Diffusion 1.5 on emulated 512 MB ARM boards (a benchmark, not a test).

The models of tests/bench/sd_e2e.py (full-size SD 1.5 architecture, random weights), converted by the x86
build, run by the cross-built `sd` under qemu-user with `--rpi-lowmem --steps 1` inside a memory cgroup of
--limit-mb (default 512 MB, cgroup v1 or v2): aarch64 under `-cpu cortex-a53` (a Pi Zero 2 / Pi 3) and
armhf under `-cpu cortex-a7` (32-bit Raspberry Pi OS on the same boards). For each: exit status, peak RSS of
the qemu process (guest program + qemu) and qemu's own RSS for an empty program of the same architecture
under the same qemu, emulated wall time (only meaningful relative to the others), the cgroup's peak charge,
and whether the PNG equals the x86 build's for the same seed (else the largest pixel difference).

qemu's overhead grows with the program it runs (translated code, its page tables), so an empty program
understates it. The guest's own RSS is therefore also measured: qemu runs with a fixed guest base (-B) and a
4 GiB guest address space (-R for aarch64; qemu-arm reserves it for a 32-bit guest), so every guest page lies
in [base, base + 4 GiB) of the qemu process, and /proc/PID/smaps is sampled every --sample-s seconds (default
1 s; emulation is slow, so peaks last far longer):
`guest peak MB` is the largest sum of the Rss of the mappings in that range, the figure to set beside the x86
build's peak RSS, and `qemu peak MB` the largest sum of the others.

Emulation is slow (the full pipeline takes hours per board on a 2-core machine), so --phase splits each
board's run into two processes that may run on different days: `generate` (text encoder and UNet, `sd
--save-latents --latents-only`) and `decode` (`sd --decode-latents`, the tiled VAE). Each phase runs in its
own cgroup of the same limit and keeps its result in WORK/<board>-<phase>.json; a board's figures are the
worse of its two phases, and the image is the decode phase's (the split gives the same image as one process:
tests/sd/sd_cli_test.py checks it). The decode phase keeps its decoded tiles in WORK/<board>-tiles (`sd
--tile-cache`): a decode phase stopped part way resumes at its first missing tile when run again, and the
board's decode figures are then those of all its runs (wall times added, the worse peaks). A running phase
writes its figures so far to WORK/<board>-<phase>.partial.json every minute, so a run that is killed still
counts. With --latents-from x86 the decode phase decodes the x86 run's latents (WORK/x86.latents) instead of
the board's, so it can run before, or without, the board's generate phase; its PNG is then compared with the
x86 PNG made from the same latents.

usage: tests/bench/arm_sd_lowmem.py --build build [--arm build-arm64:aarch64,build-armhf:armhf] [--work DIR]
       [--onnx GEN_DIR] [--limit-mb 512] [--steps 1] [--threads 0] [--reuse-x86] [--phase all|generate|decode]
       [--latents-from board|x86]
  --reuse-x86  take the x86 reference (PNG, log, latents) from an earlier run in --work instead of running it again
"""
import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "examples", "sd"))
from make_models import make_models  # noqa: E402
from sd_e2e import PROMPT, MemoryCgroup, parse_sd, peak_rss_mb, time_v  # noqa: E402

ARCHES = {
    "aarch64": {"qemu": "qemu-aarch64-static", "cpu": "cortex-a53", "gcc": "aarch64-linux-gnu-gcc",
                "sysroot": "/opt/onnxstream-cross/aarch64-linux-gnu", "flags": []},
    "armhf": {"qemu": "qemu-arm-static", "cpu": "cortex-a7", "gcc": "arm-linux-gnueabihf-gcc",
              "sysroot": "/opt/onnxstream-cross/arm-linux-gnueabihf",
              "flags": ["-march=armv7-a", "-mfpu=neon-vfpv4", "-mfloat-abi=hard"]},
}


# Each architecture's guest base is its own, so the boards' runs can go at the same time without one
# sampler counting the other's qemu (the sampler finds its qemu by the base on its command line).
GUEST_BASES = {"aarch64": 0x100000000000, "armhf": 0x200000000000}
GUEST_SPACE = 0x100000000  # 4 GiB: a 32-bit guest's whole address space, plenty for sd on aarch64


class GuestRssSampler:
    """Samples the split of a qemu-user process's RSS into guest pages and qemu's own, keeping the peaks."""

    def __init__(self, base, period_s, partial_path=None, cgroup=None, resumes=None):
        self.base, self.marker, self.period_s = base, hex(base).encode(), period_s
        self.partial_path, self.cgroup, self.resumes = partial_path, cgroup, resumes
        self.guest_kb = self.qemu_kb = 0
        self.samples = 0
        self.started = time.time()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _qemu_pids(self):
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            except OSError:
                continue
            if argv and argv[0].startswith(b"qemu-") and self.marker in argv:
                yield pid

    def _sample(self, pid):
        guest = qemu = 0
        inside = False
        try:
            with open(f"/proc/{pid}/smaps") as f:
                for line in f:
                    if line[0] in "0123456789abcdef" and "-" in line.split(" ", 1)[0]:
                        lo = int(line.split("-", 1)[0], 16)
                        inside = self.base <= lo < self.base + GUEST_SPACE
                    elif line.startswith("Rss:"):
                        kb = int(line.split()[1])
                        if inside:
                            guest += kb
                        else:
                            qemu += kb
        except OSError:  # the process ended between listing and reading
            return
        self.guest_kb, self.qemu_kb = max(self.guest_kb, guest), max(self.qemu_kb, qemu)
        self.samples += 1

    def _run(self):
        while not self._stop.wait(self.period_s):
            for pid in self._qemu_pids():
                self._sample(pid)
            if self.partial_path and self.samples and self.samples % 60 == 0:
                self._write_partial()

    def _write_partial(self):
        """The figures so far, for a run that is stopped before it ends (then the next run merges them)."""
        r = dict(self.report(), exit_code=-1, wall_seconds=round(time.time() - self.started, 1), peak_rss_mb=None,
                 cgroup=self.cgroup.report() if self.cgroup else {})
        if self.resumes:  # the killed runs this one resumes count too
            r = dict(merge_resumed(self.resumes, r), exit_code=-1)
        with open(self.partial_path + ".tmp", "w") as f:
            json.dump(r, f, indent=1)
        os.replace(self.partial_path + ".tmp", self.partial_path)

    def report(self):
        if not self.samples:
            return {}
        return {"guest_peak_rss_mb": round(self.guest_kb / 1024, 1), "qemu_peak_rss_mb": round(self.qemu_kb / 1024, 1),
                "rss_samples": self.samples}


def log(msg):
    print(f"arm_sd_lowmem.py: {msg}", flush=True)


def combine_phases(work, arch):
    """A board's figures from its generate and decode phases: the worse of each, wall times added."""
    parts, phases = [], []
    for phase in ("generate", "decode"):
        path = os.path.join(work, f"{arch}-{phase}.json")
        if os.path.exists(path):
            parts.append(json.load(open(path)))
            phases.append(phase)
    r = dict(parts[-1])
    r["exit_code"] = max(p["exit_code"] for p in parts)
    # A decode of the x86 run's latents (--latents-from x86) makes the picture without a generate phase.
    r["complete"] = len(parts) == 2 or (phases == ["decode"] and parts[0].get("latents_from") == "x86")
    r["wall_seconds"] = round(sum(p["wall_seconds"] for p in parts), 1)
    r["peak_rss_mb"] = max((p["peak_rss_mb"] or 0) for p in parts)
    for key in ("guest_peak_rss_mb", "qemu_peak_rss_mb"):
        # A phase measured before the guest sampling existed has no split: the board's split is then unknown.
        values = [p.get(key) for p in parts]
        r[key] = None if None in values else max(values)
    peaks = [(p.get("cgroup") or {}).get("peak_charge_mb") or 0 for p in parts]
    r["cgroup"] = dict(r.get("cgroup") or {}, peak_charge_mb=max(peaks))
    return r


def merge_resumed(previous, current):
    """One decode phase from two runs, the second resuming the first's tiles: wall time added, worse peaks."""
    r = dict(current)
    r["wall_seconds"] = round(previous["wall_seconds"] + current["wall_seconds"], 1)
    r["runs"] = previous.get("runs", 1) + 1
    for key in ("peak_rss_mb", "guest_peak_rss_mb", "qemu_peak_rss_mb"):
        values = [v for v in (previous.get(key), current.get(key)) if v is not None]
        r[key] = max(values) if values else None
    peaks = [(p.get("cgroup") or {}).get("peak_charge_mb") or 0 for p in (previous, current)]
    r["cgroup"] = dict(r.get("cgroup") or {}, peak_charge_mb=max(peaks))
    return r


def png_pixels(path):
    from PIL import Image
    return np.asarray(Image.open(path).convert("RGB"), dtype=np.int16)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the x86 build (converts the models, makes the reference PNG)")
    ap.add_argument("--arm", default="build-arm64:aarch64,build-armhf:armhf")
    ap.add_argument("--work", default="/tmp/onnxstream-arm-sd")
    ap.add_argument("--onnx", help="reuse gen_sd.py --size full output (sd/<model>/model.onnx)")
    ap.add_argument("--limit-mb", type=int, default=512)
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--size", choices=["full", "small"], default="full", help="small: a quick check of this script")
    ap.add_argument("--phase", choices=["all", "generate", "decode"], default="all")
    ap.add_argument("--sample-s", type=float, default=1.0, help="period of the guest RSS sampling")
    ap.add_argument("--latents-from", choices=["board", "x86"], default="board",
                    help="the decode phase's latents: the board's own generate phase, or the x86 run's (so a "
                         "board's decode can run without its generate phase)")
    ap.add_argument("--reuse-x86", action="store_true",
                    help="reuse x86.png and logs/x86.log of an earlier run with the same models and options")
    args = ap.parse_args()

    work = os.path.abspath(args.work)
    logs = os.path.join(work, "logs")
    os.makedirs(logs, exist_ok=True)
    models = os.path.join(work, "models")
    make_models(args.build, models, args.size, args.onnx, os.path.join(work, "onnx"))
    tokenizer = os.path.join(ROOT, "..", "shared", "data", "clip", "bpe_simple_vocab_16e6.txt.gz")
    sd_args = ["--models-path", models, "--tokenizer", tokenizer, "--prompt", PROMPT, "--neg-prompt", "blurry",
               "--steps", str(args.steps), "--seed", "42", "--threads", str(args.threads), "--rpi-lowmem"]
    results = {"steps": args.steps, "limit_mb": args.limit_mb, "size": args.size}

    ref_png = os.path.join(work, "x86.png")
    x86_latents = os.path.join(work, "x86.latents")
    x86_log = os.path.join(logs, "x86.log")
    if args.reuse_x86 and all(os.path.exists(p) for p in (ref_png, x86_log, x86_latents)):
        log(f"x86 reference image: reusing {ref_png}")
        err = open(x86_log).read()
        rss = peak_rss_mb(err)
        wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", err)
        wall = (int(wall.group(1) or 0) * 3600 + int(wall.group(2)) * 60 + float(wall.group(3))) if wall else 0.0
        rc = 0 if "Exit status: 0" in err else 1
    else:
        log("x86 reference image")
        err, wall, rss, rc = time_v([os.path.join(args.build, "examples", "sd", "sd")] + sd_args +
                                    ["--output", ref_png, "--save-latents", x86_latents], x86_log)
    results["x86"] = dict(parse_sd(err), exit_code=rc, wall_seconds=round(wall, 1), peak_rss_mb=rss)
    if rc != 0:
        sys.exit(f"arm_sd_lowmem.py: the x86 run failed; see {logs}/x86.log")

    for entry in args.arm.split(","):
        build, arch = entry.split(":")
        a = ARCHES[arch]
        qemu = [a["qemu"], "-cpu", a["cpu"], "-L", a["sysroot"], "-B", hex(GUEST_BASES[arch])]
        if arch == "aarch64":  # qemu-arm reserves a 32-bit guest's 4 GiB itself (and asserts when given -R)
            qemu += ["-R", hex(GUEST_SPACE)]
        # qemu's own footprint: an empty program of the same architecture under the same qemu.
        empty = os.path.join(work, f"empty_{arch}")
        with open(empty + ".c", "w") as f:
            f.write("int main(void) { return 0; }\n")
        subprocess.run([a["gcc"], *a["flags"], "-O2", empty + ".c", "-o", empty], check=True)
        _, _, qemu_rss, _ = time_v(qemu + [empty], os.path.join(logs, f"empty_{arch}.log"))

        png = os.path.join(work, f"{arch}.png")
        latents = os.path.join(work, f"{arch}.latents")
        decode_latents = x86_latents if args.latents_from == "x86" else latents
        phases = {"all": sd_args + ["--output", png],
                  "generate": sd_args + ["--save-latents", latents, "--latents-only"],
                  "decode": sd_args + ["--decode-latents", decode_latents, "--output", png,
                                       "--tile-cache", os.path.join(work, f"{arch}-tiles")]}
        log(f"{arch} (qemu -cpu {a['cpu']}): sd --rpi-lowmem ({args.phase}) inside a {args.limit_mb} MB memory cgroup")
        cg = MemoryCgroup(args.limit_mb * 2**20)
        partial = os.path.join(work, f"{arch}-{args.phase}.partial.json")
        # A decode stopped before it ended: this run resumes its tiles, and its figures count.
        killed = json.load(open(partial)) if args.phase == "decode" and os.path.exists(partial) else None
        try:
            with GuestRssSampler(GUEST_BASES[arch], args.sample_s, partial, cg, killed) as sampler:
                err, wall, rss, rc = time_v(qemu + [os.path.join(build, "examples", "sd", "sd")] + phases[args.phase],
                                            os.path.join(logs, f"{arch}-{args.phase}.log"), cg.prefix())
            r = dict(parse_sd(err), exit_code=rc, wall_seconds=round(wall, 1), peak_rss_mb=rss,
                     qemu_empty_rss_mb=qemu_rss, cgroup=cg.report(), cpu=a["cpu"], **sampler.report())
            if args.phase == "decode":
                r["latents_from"] = args.latents_from
        finally:
            cg.remove()
        m = re.search(r"vae tiles: (\d+) of (\d+) read from the tile cache", open(os.path.join(
            logs, f"{arch}-{args.phase}.log"), errors="replace").read())
        if m:
            r["tiles_from_cache"] = int(m.group(1))
        phase_json = os.path.join(work, f"{arch}-{args.phase}.json")
        if args.phase == "decode" and r.get("tiles_from_cache"):  # this run resumed an earlier one's tiles
            previous = killed or (json.load(open(phase_json)) if os.path.exists(phase_json) else None)
            if previous and previous["exit_code"] != 0:
                r = merge_resumed(previous, r)
        if os.path.exists(partial):
            os.remove(partial)
        if args.phase != "all":
            with open(phase_json, "w") as f:
                json.dump(r, f, indent=1)
            r = combine_phases(work, arch)
            rc = r["exit_code"] if r["complete"] else -1  # no image yet: the decode phase is still to run
        if rc == 0:
            same = open(png, "rb").read() == open(ref_png, "rb").read()
            r["png_identical_to_x86"] = same
            if not same:
                d = np.abs(png_pixels(png) - png_pixels(ref_png))
                r["max_pixel_diff"], r["mean_pixel_diff"] = int(d.max()), round(float(d.mean()), 4)
        results[arch] = r

    with open(os.path.join(work, "arm_sd_lowmem.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(f"\nSD 1.5 ({args.size}), sd --rpi-lowmem --steps {args.steps}, {args.limit_mb} MB cgroup")
    print(f"{'run':<8} {'cpu':<11} {'exit':>4} {'wall s':>8} {'peak RSS MB':>11} {'guest peak MB':>13} "
          f"{'qemu peak MB':>12} {'qemu alone MB':>13} {'cgroup peak MB':>14}  PNG vs x86")
    for name in ["x86"] + [e.split(":")[1] for e in args.arm.split(",")]:
        r = results.get(name)
        if not r:
            continue
        cgp = (r.get("cgroup") or {}).get("peak_charge_mb")
        png = ("identical" if r.get("png_identical_to_x86") else
               f"max diff {r.get('max_pixel_diff')}, mean {r.get('mean_pixel_diff')}") if name != "x86" else "-"
        if r.get("complete") is False:
            png = "decode phase still to run"
        elif r["exit_code"] != 0:
            png = "no image (the run failed)"
        fmt = lambda v: "-" if v is None else f"{v:.1f}"  # noqa: E731
        print(f"{name:<8} {r.get('cpu', 'host'):<11} {r['exit_code']:>4} {fmt(r['wall_seconds']):>8} "
              f"{fmt(r['peak_rss_mb']):>11} {fmt(r.get('guest_peak_rss_mb')):>13} {fmt(r.get('qemu_peak_rss_mb')):>12} "
              f"{fmt(r.get('qemu_empty_rss_mb')):>13} {fmt(cgp):>14}  {png}")
    if any(results[n]["exit_code"] != 0 for n in results if isinstance(results[n], dict)):
        sys.exit(f"arm_sd_lowmem.py: a run failed; see {logs}")


if __name__ == "__main__":
    main()

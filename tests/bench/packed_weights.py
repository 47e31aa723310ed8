#!/usr/bin/python3
"""XNNPACK's packed weights kept beside the persistent weights cache (a benchmark, not a test).

On a build against XNNPACK's 2024 API (the Debian 13 build, --build13, run in its trixie root through
`scripts/debian13.sh exec`), `onnxstream-run --cache PATH` keeps the weights XNNPACK packs in
PATH.xnnpack: the first process writes them, later processes and runs map them instead of packing
(docs/memory-and-speed.md). This script measures, in one script run per model:
  - ONNX Runtime on the float32 ONNX model (the peer, and the accuracy reference);
  - onnxstream in `balanced` without a cache (every run packs every weight);
  - the first process with a fresh --cache (builds the weights cache, then the packed-weights file), whose
    files then leave the page cache (as after a reboot: drop_cached_pages);
  - a second process on the same cache, in `balanced` and in `min`, and in `balanced` keeping no prepared
    convolutions between runs (`--kept-kernels-mb 0`);
  - two processes at once on the same cache: the sum of their proportional set sizes (Pss, shared pages
    counted once) and of their RSS, sampled every 0.1 s.
Figures: process start (load and weights cache) and first-run time, the median of the later runs (--runs in
one process), x ONNX Runtime, peak RSS (/usr/bin/time -v), packed weights mapped and stored per run, rel L2
against ONNX Runtime's output, the prepared convolutions kept between runs and their memory. With --rounds N,
N more rounds of processes follow, ONNX Runtime, then onnxstream's next `--cache` `balanced` process keeping
no prepared convolutions, then one with the default: the script prints each round's ratios and their
medians: on a shared machine the load drifts within a minute, and alternating spreads that drift over all.

usage: tests/bench/packed_weights.py [--build build] [--build13 build-debian13] [--work /tmp/onnxstream-sd15]
                                     [--models yolov8n,text_encoder,unet,vae_decoder] [--runs 4] [--threads 2]
                                     [--rounds N]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
DEBIAN13 = os.path.join(ROOT, "scripts", "debian13.sh")
sys.path.insert(0, HERE)
from sd15 import ensure_case, ensure_converted  # noqa: E402
from sd15_convert import debian13_tools, last_json, rel_l2, timed  # noqa: E402

TITLES = {"yolov8n": "YOLOv8n", "text_encoder": "SD 1.5 text encoder", "unet": "SD 1.5 UNet",
          "vae_decoder": "SD 1.5 VAE decoder"}


def median_after_first(runs):
    rest = sorted(runs[1:] or runs)
    return rest[len(rest) // 2]


def in_debian13(cmd, work, log):
    """Starts cmd in the Debian 13 root under /usr/bin/time -v; returns the Popen (stdout to log)."""
    env = dict(os.environ, DEBIAN13_MOUNTS=work)
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.Popen([DEBIAN13, "exec", "/usr/bin/time", "-v"] + cmd, stdout=open(log, "w"),
                            stderr=subprocess.STDOUT, env=env)


def finish(p, cmd, log):
    """Waits for p; returns (its --json object, peak RSS MB, wall s)."""
    t = time.time()
    if p.wait() != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed in the Debian 13 root (log {log})")
    out = open(log).read()
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", out).group(1)) / 1024
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", out)
    secs = int(wall.group(1) or 0) * 3600 + int(wall.group(2)) * 60 + float(wall.group(3)) if wall else t
    return last_json(out), rss, secs


def drop_cached_pages(paths):
    """Writes back and drops the page cache of the files the first process wrote, so later processes read them
    as after a reboot: pages the writer left in the page cache come in small folios, pages read back from disk in
    large ones, which the packed-weights file's mapping then maps a 2 MiB PMD at a time (the text encoder's
    next process: about 24,000 page faults in 7 runs on the written pages, 7,300 on pages read back)."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def fresh_cache(work, model):
    """WORK/cache/MODEL.oswc, with neither it nor its packed weights left from an earlier run."""
    cache = os.path.join(work, "cache", f"{model}.oswc")
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    for stale in [cache, cache + ".xnnpack"]:
        if os.path.exists(stale):
            os.remove(stale)
    return cache


def run_command(run, folder, case, meta, outputs, mode, threads, cache=None):
    """onnxstream-run on a converted folder with the case's inputs and --json, its outputs to a new OUTPUTS."""
    shutil.rmtree(outputs, ignore_errors=True)
    os.makedirs(outputs)
    cmd = [run, folder, "--output-dir", outputs, "--memory-mode", mode, "--threads", str(threads), "--json"]
    cmd += ["--cache", cache] if cache else []
    for i in meta["inputs"]:
        cmd += ["--input", f"{i['name']}={os.path.join(case, i['file'])}"]
    return cmd


class MemorySampler:
    """Samples the summed Pss and Rss (smaps_rollup) of every onnxstream-run whose command line has `tag`."""

    def __init__(self, tag):
        self.tag, self.peak_pss, self.peak_rss, self.stop = tag, 0, 0, False
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.stop:
            pss = rss = 0
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    cmdline = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
                    if not cmdline[0].endswith(b"onnxstream-run") or self.tag.encode() not in b" ".join(cmdline):
                        continue
                    text = open(f"/proc/{pid}/smaps_rollup").read()
                except OSError:
                    continue
                pss += int(re.search(r"^Pss:\s+(\d+)", text, re.M).group(1))
                rss += int(re.search(r"^Rss:\s+(\d+)", text, re.M).group(1))
            self.peak_pss, self.peak_rss = max(self.peak_pss, pss), max(self.peak_rss, rss)
            time.sleep(0.1)

    def done(self):
        self.stop = True
        self.thread.join()
        return self.peak_pss / 1024, self.peak_rss / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="converts the models (any build)")
    ap.add_argument("--build13", default=os.path.join(ROOT, "build-debian13"), help="runs them (XNNPACK 2024)")
    ap.add_argument("--work", default="/tmp/onnxstream-sd15")
    ap.add_argument("--models", default="yolov8n,text_encoder,unet")
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--size", choices=["full", "small"], default="full")
    ap.add_argument("--rounds", type=int, default=0,
                    help="then N more rounds of ONNX Runtime and the next --cache balanced process, alternating, "
                         "for a ratio that drifts of a shared machine between them affect less")
    args = ap.parse_args()

    import numpy as np
    convert, run, node, work, logs = debian13_tools(args, "packed_weights.py")
    rows = []
    rounds = {}

    def ort_median(case, tag):
        out, _, rss = timed([node, os.path.join(HERE, "ort_case_run.js"), case, str(args.threads), str(args.runs)],
                            os.path.join(logs, f"packed_ort_{tag}.log"))
        return last_json(out), rss

    for model in [m for m in args.models.split(",") if m]:
        if model not in TITLES:
            sys.exit(f"packed_weights.py: unknown model {model} (expected {', '.join(TITLES)})")
        title = TITLES[model]
        case = ensure_case(args, node, work, model)
        meta = json.load(open(os.path.join(case, "case.json")))
        want = np.load(os.path.join(case, "expected_0.npy")).reshape(-1)
        ort, rss = ort_median(case, model)
        rows.append(dict(model=title, engine="ONNX Runtime 1.30 (fp32)", start=ort["load_s"],
                         first=ort["runs_s"][0], median=median_after_first(ort["runs_s"]), rss=rss))
        print(rows[-1], flush=True)

        folder = ensure_converted(convert, work, case, model, logs)
        cache = fresh_cache(work, model)

        def command(tag, mode, with_cache, extra=()):
            outputs = os.path.join(work, "outputs", f"packed_{model}_{tag}")
            cmd = run_command(run, folder, case, meta, outputs, mode, args.threads, cache if with_cache else None)
            return cmd + ["--runs", str(args.runs)] + list(extra), outputs

        def row(label, mode, stats, rss, wall, outputs, extra=None):
            got = [f for f in sorted(os.listdir(outputs)) if f.endswith(".npy")]
            err, _ = rel_l2(np.load(os.path.join(outputs, got[0])).reshape(-1), want)
            runs = stats["runs_s"]
            rows.append(dict(model=title, engine=label, mode=mode, start=wall - sum(runs), first=runs[0],
                             median=median_after_first(runs), rss=rss, err=err,
                             mapped=stats["weights"][-1].get("packed_weights_mapped"),
                             stored=stats["weights"][0].get("packed_weights_stored"),
                             kept=stats["weights"][-1].get("kept_kernels", 0),
                             kept_mb=stats["weights"][-1].get("kept_kernel_bytes", 0) / 1e6, **(extra or {})))
            print(rows[-1], flush=True)

        no_kept = ["--kept-kernels-mb", "0"]
        for label, tag, mode, with_cache, extra in [
                ("no cache", "nocache", "balanced", False, []),
                ("--cache, first process", "first", "balanced", True, []),
                ("--cache, next process", "next", "balanced", True, []),
                ("--cache, next process, no kept kernels", "next_nokept", "balanced", True, no_kept),
                ("--cache, next process", "next_min", "min", True, [])]:
            cmd, outputs = command(tag, mode, with_cache, extra)
            log = os.path.join(logs, f"packed_{model}_{tag}.log")
            stats, rss, wall = finish(in_debian13(cmd, work, log), cmd, log)
            row(label, mode, stats, rss, wall, outputs)
            if tag == "first":
                drop_cached_pages([cache, cache + ".xnnpack"])

        sampler = MemorySampler(cache)
        pair = []
        for k in (1, 2):
            cmd, outputs = command(f"pair{k}", "balanced", True)
            log = os.path.join(logs, f"packed_{model}_pair{k}.log")
            pair.append((in_debian13(cmd, work, log), cmd, log, outputs))
        results = [finish(p, cmd, log) + (outputs,) for p, cmd, log, outputs in pair]
        pss, both_rss = sampler.done()
        for k, (stats, rss, wall, outputs) in enumerate(results, 1):
            row(f"--cache, two processes at once ({k})", "balanced", stats, rss, wall, outputs,
                dict(pair_pss=pss, pair_rss=both_rss))

        for k in range(args.rounds):
            ort, _ = ort_median(case, f"{model}_round{k}")
            ratios = []
            for tag, extra in [("nokept", no_kept), ("kept", [])]:
                cmd, _ = command(f"round{k}_{tag}", "balanced", True, extra)
                log = os.path.join(logs, f"packed_{model}_round{k}_{tag}.log")
                stats, _, _ = finish(in_debian13(cmd, work, log), cmd, log)
                ratios.append(median_after_first(stats["runs_s"]) / median_after_first(ort["runs_s"]))
            rounds.setdefault(title, []).append(ratios)
            print(f"{title}: round {k + 1}: {ratios[0]:.3f} x ORT keeping no kernels, {ratios[1]:.3f} keeping them",
                  flush=True)

    print(f"\n{args.threads} threads, {args.runs} runs per process; time per run = median of the runs after the first\n")
    print("| model | engine | mode | start s | first run s | s per run | x ORT | peak RSS MB | packed mapped / stored "
          "| kept kernels (MB) | rel L2 vs ORT |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ort_time = {}
    for r in rows:
        if "err" not in r:
            ort_time[r["model"]] = r["median"]
        packed = "-" if r.get("mapped") is None else f"{r['mapped']} / {r['stored']}"
        err = "-" if "err" not in r else f"{r['err']:.2g}"
        kept = "-" if "err" not in r else f"{r['kept']} ({r['kept_mb']:.1f})"
        print(f"| {r['model']} | {r['engine']} | {r.get('mode', '-')} | {r['start']:.2f} | {r['first']:.3f} "
              f"| {r['median']:.3f} | {r['median'] / ort_time[r['model']]:.2f} | {r['rss']:.0f} | {packed} | {kept} "
              f"| {err} |")
    for title, pairs in rounds.items():
        for i, what in enumerate(["keeping no prepared kernels", "keeping them (the default)"]):
            ratios = [p[i] for p in pairs]
            print(f"{title}: {len(ratios)} alternating rounds, `--cache` balanced {what}: "
                  f"{' '.join(f'{x:.3f}' for x in ratios)} x ORT, median {sorted(ratios)[len(ratios) // 2]:.3f}")
    for r in rows:
        if r["engine"].endswith("(1)"):
            print(f"{r['model']}: two processes at once on one cache: {r['pair_pss']:.0f} MB Pss together "
                  f"(shared pages counted once), {r['pair_rss']:.0f} MB RSS together")


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as e:
        sys.exit(f"packed_weights.py: {e}")

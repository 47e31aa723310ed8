#!/usr/bin/python3
"""Full-size Stable Diffusion 1.5 architecture through onnxstream-convert (a benchmark, not a test).

Generates the full-size text encoder, UNet and VAE decoder with tests/sd/gen_sd.py (random weights, opset 14,
the UNet with external data), then for each model: ONNX Runtime's output (tests/tools/ort_reference.js: one
thread, graph optimisations off), onnxstream-convert with float32 and with --fp16 weights (--report), one
onnxstream-run of each, and the relative L2 error against ONNX Runtime (targets: fp32 <= 1e-4, fp16 <= 1e-2).
Wall time and peak RSS of every step come from /usr/bin/time -v. Prints a table and writes results.json.

usage: tests/bench/sd15_convert.py --build BUILD_DIR [--work DIR] [--reuse] [--models text_encoder,unet,...]
                                  [--size full|small] [--threads N]
  --work   scratch folder (default /tmp/onnxstream-sd15); needs ~12 GB of disk, the UNet export ~10 GB of RAM
  --reuse  keep already generated ONNX models and ONNX Runtime outputs in --work
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
GEN = os.path.join(ROOT, "tests", "sd", "gen_sd.py")
ORT_REFERENCE = os.path.join(ROOT, "tests", "tools", "ort_reference.js")
MODELS = ["text_encoder", "unet", "vae_decoder"]


def generate_missing(onnx_dir, size, models, log):
    """Generates with gen_sd.py the models of `models` that onnx_dir/sd/<model>/model.onnx lacks, into a folder
    of their own (gen_sd.py replaces its --out folder) from which each moves into onnx_dir/sd/."""
    missing = [m for m in models if not os.path.exists(os.path.join(onnx_dir, "sd", m, "model.onnx"))]
    if not missing:
        return
    gen_out = onnx_dir.rstrip("/") + ".gen"
    timed(["/usr/bin/python3", GEN, "--size", size, "--out", gen_out, "--models", ",".join(missing)], log)
    os.makedirs(os.path.join(onnx_dir, "sd"), exist_ok=True)
    for m in missing:
        shutil.rmtree(os.path.join(onnx_dir, "sd", m), ignore_errors=True)
        os.rename(os.path.join(gen_out, "sd", m), os.path.join(onnx_dir, "sd", m))
    shutil.rmtree(gen_out, ignore_errors=True)


def timed(cmd, log):
    """Runs cmd under /usr/bin/time -v; returns (stdout+stderr text, seconds, peak RSS in MB)."""
    print("+ " + " ".join(cmd), flush=True)
    p = subprocess.run(["/usr/bin/time", "-v"] + cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with open(log, "w") as f:
        f.write(p.stdout)
    if p.returncode != 0:
        tail = "\n".join(p.stdout.splitlines()[-15:])
        raise RuntimeError(f"{cmd[0]} failed (exit status {p.returncode}, log {log}):\n{tail}")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", p.stdout)
    secs = (int(wall.group(1) or 0) * 3600 + int(wall.group(2)) * 60 + float(wall.group(3))) if wall else float("nan")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stdout)
    return p.stdout, secs, int(rss.group(1)) / 1024 if rss else float("nan")


def last_json(text):
    """The last JSON line of a tool's output (onnxstream-run --json, the ONNX Runtime runners)."""
    return json.loads([line for line in text.splitlines() if line.startswith("{")][-1])


def debian13_tools(args, script):
    """The converter of --build and the onnxstream-run of --build13 (exiting when either is missing), node,
    and the --work folder with its logs/ subfolder made: what the Debian 13 benchmarks share."""
    convert = os.path.join(os.path.abspath(args.build), "src", "tools", "onnxstream-convert")
    run = os.path.join(os.path.abspath(args.build13), "src", "tools", "onnxstream-run")
    for exe in (convert, run):
        if not os.access(exe, os.X_OK):
            sys.exit(f"{script}: {exe} not found: build it first")
    work = os.path.abspath(args.work)
    logs = os.path.join(work, "logs")
    os.makedirs(logs, exist_ok=True)
    return convert, run, shutil.which("node"), work, logs


def rel_l2(got, want):
    import numpy as np
    got = got.astype(np.float64)
    want = want.astype(np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)), float(np.abs(got - want).max())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="meson build folder with src/tools/onnxstream-{convert,run}")
    ap.add_argument("--work", default="/tmp/onnxstream-sd15")
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--size", choices=["full", "small"], default="full", help="small: a quick check of this script")
    ap.add_argument("--threads", type=int, default=0, help="onnxstream-run --threads (0: its default)")
    args = ap.parse_args()

    import numpy as np
    convert_exe = os.path.join(os.path.abspath(args.build), "src", "tools", "onnxstream-convert")
    run_exe = os.path.join(os.path.abspath(args.build), "src", "tools", "onnxstream-run")
    for exe in (convert_exe, run_exe):
        if not os.access(exe, os.X_OK):
            sys.exit(f"sd15_convert.py: {exe} not found; build it first (ninja -C {args.build})")
    node = shutil.which("node")
    if not node:
        sys.exit("sd15_convert.py: node not found (ONNX Runtime runs through onnxruntime-node)")
    models = [m for m in args.models.split(",") if m]
    work = os.path.abspath(args.work)
    gen_dir = os.path.join(work, "onnx")
    logs = os.path.join(work, "logs")
    os.makedirs(logs, exist_ok=True)
    results = {}

    if not (args.reuse and all(os.path.exists(os.path.join(gen_dir, "sd", m, "model.onnx")) for m in models)):
        out, secs, rss = timed(["/usr/bin/python3", GEN, "--size", args.size, "--out", gen_dir, "--models", ",".join(models)],
                               os.path.join(logs, "gen_sd.log"))
        results["generate"] = {"seconds": secs, "peak_rss_mb": rss,
                               "lines": [l for l in out.splitlines() if l.startswith("gen_sd.py:")]}

    for m in models:
        case = os.path.join(gen_dir, "sd", m)
        r = results[m] = {}
        with open(os.path.join(case, "case.json")) as f:
            meta = json.load(f)
        r["parameters"] = meta.get("parameters")
        r["onnx_bytes"] = sum(os.path.getsize(os.path.join(case, f)) for f in os.listdir(case)
                              if not f.endswith(".npy") and f not in ("case.json", "names.txt"))
        expected = os.path.join(case, "expected_0.npy")
        if not (args.reuse and os.path.exists(expected)):
            # ort_reference.js walks ROOT/<family>/<case>/: a root holding just this model.
            root = os.path.join(work, "ort_" + m)
            shutil.rmtree(root, ignore_errors=True)
            os.makedirs(os.path.join(root, "sd"))
            os.symlink(case, os.path.join(root, "sd", m))
            _, secs, rss = timed([node, ORT_REFERENCE, root], os.path.join(logs, f"ort_{m}.log"))
            r["ort"] = {"seconds": secs, "peak_rss_mb": rss, "config": "1 thread, graph optimisations off, incl. load"}
            if not os.path.exists(expected):
                err = os.path.join(case, "error.txt")
                raise RuntimeError(open(err).read() if os.path.exists(err) else f"ONNX Runtime wrote no {expected}")
        want = np.load(expected)

        for precision in ("fp32", "fp16"):
            out_dir = os.path.join(work, "converted", f"{m}_{precision}")
            shutil.rmtree(out_dir, ignore_errors=True)
            os.makedirs(os.path.dirname(out_dir), exist_ok=True)
            cmd = [convert_exe, os.path.join(case, "model.onnx"), out_dir, "--report"] + (["--fp16"] if precision == "fp16" else [])
            rep, secs, rss = timed(cmd, os.path.join(logs, f"convert_{m}_{precision}.log"))
            counts = re.search(r"(\d+) nodes before simplification, (\d+) after", rep)
            weights = re.search(r"weights: (\d+) files, (\d+) bytes", rep)
            entry = r[precision] = {
                "convert_seconds": secs, "convert_peak_rss_mb": rss,
                "nodes_before": int(counts.group(1)) if counts else None,
                "nodes_after": int(counts.group(2)) if counts else None,
                "weight_bytes": int(weights.group(2)) if weights else None,
                "report": [l for l in rep.splitlines() if l.startswith("  ")],
            }
            outputs = os.path.join(work, "outputs", f"{m}_{precision}")
            shutil.rmtree(outputs, ignore_errors=True)
            os.makedirs(outputs)
            cmd = [run_exe, out_dir, "--output-dir", outputs]
            if args.threads:
                cmd += ["--threads", str(args.threads)]
            for i, inp in enumerate(meta["inputs"]):
                cmd += ["--input", f"{inp['name']}={os.path.join(case, inp['file'])}"]
            log, secs, rss = timed(cmd, os.path.join(logs, f"run_{m}_{precision}.log"))
            run_line = re.search(r"run 1: ([\d.]+) s", log)
            got = [f for f in os.listdir(outputs) if f.endswith(".npy")]
            if len(got) != 1:
                raise RuntimeError(f"onnxstream-run wrote {got} into {outputs}, expected one output")
            err, max_abs = rel_l2(np.load(os.path.join(outputs, got[0])), want)
            entry.update({"run_seconds": float(run_line.group(1)) if run_line else None,
                          "run_process_seconds": secs, "run_peak_rss_mb": rss, "rel_l2": err, "max_abs": max_abs,
                          "ok": err <= (1e-4 if precision == "fp32" else 1e-2)})
            print(f"{m} {precision}: nodes {entry['nodes_before']} -> {entry['nodes_after']}, convert {entry['convert_seconds']:.1f} s "
                  f"({entry['convert_peak_rss_mb']:.0f} MB), run {entry['run_seconds']} s ({rss:.0f} MB), rel L2 {err:.3g} "
                  f"({'ok' if entry['ok'] else 'FAIL'})", flush=True)
            shutil.rmtree(out_dir, ignore_errors=True)  # the next conversion needs the disk space

    with open(os.path.join(work, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print("\nmodel         prec  params(M)  nodes before->after  convert s  convert MB  run s  run MB  "
          "ORT s  ORT MB  rel L2")
    for m in models:
        r = results[m]
        ort = r.get("ort", {})
        for p in ("fp32", "fp16"):
            e = r[p]
            print(f"{m:13s} {p}  {(r['parameters'] or 0) / 1e6:9.2f}  {e['nodes_before']:>6} -> {e['nodes_after']:<9}  "
                  f"{e['convert_seconds']:9.1f}  {e['convert_peak_rss_mb']:10.0f}  {e['run_seconds'] or 0:5.1f}  "
                  f"{e['run_peak_rss_mb']:6.0f}  {ort.get('seconds', float('nan')):5.1f}  "
                  f"{ort.get('peak_rss_mb', float('nan')):6.0f}  {e['rel_l2']:.3g}")
    print(f"results: {os.path.join(work, 'results.json')}")
    if not all(results[m][p]["ok"] for m in models for p in ("fp32", "fp16")):
        sys.exit(1)


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as e:
        sys.exit(f"sd15_convert.py: {e}")

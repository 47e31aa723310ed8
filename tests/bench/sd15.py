#!/usr/bin/python3
"""Stable Diffusion 1.5 and YOLOv8n benchmark: every memory mode next to ONNX Runtime, in one script run (not
a test).

For the text encoder (fp32 weights), the UNet (fp16 weights) and the VAE decoder (fp32 weights) at their
published sizes (random weights, tests/sd/gen_sd.py; generated once into --work and reused), and the real
YOLOv8n of ../shared (fp32, its real picture as input; --models yolov8n adds it):
  1. ONNX Runtime (onnxruntime-node, default graph optimisations, --threads threads) runs the ONNX model
     --runs times: load time, per-run time, peak RSS (/usr/bin/time -v) - the peer.
  2. onnxstream-convert writes the model (UNet with --fp16), with its node counts.
  3. onnxstream-run runs it --runs times in each memory mode (min, balanced, max-speed): per-run time,
     peak RSS, peak tensor bytes, and the relative L2 error of the output against ONNX Runtime's
     (tests/tools/ort_reference.js output: one thread, optimisations off).
The reported time is the median of the runs after the first (the first warms the caches, and max-speed's
also prepares its kernels; --runs 4 gives the median of 3), and ratios are against ONNX Runtime's median
measured the same way in this same script run. Prints a table and writes results.json into --work.

usage: tests/bench/sd15.py --build BUILD_DIR [--work DIR] [--models yolov8n,text_encoder,unet,vae_decoder]
                           [--modes min,balanced,max-speed] [--threads 2] [--runs 4] [--size full|small]
  --work  scratch folder (default /tmp/onnxstream-sd15): ~12 GB of disk; generating the full UNet takes
          ~10 GB of RAM and ~10 minutes the first time.
"""

import argparse
import json
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from sd15_convert import ORT_REFERENCE, generate_missing, last_json, rel_l2, timed  # noqa: E402

ORT_CASE_RUN = os.path.join(HERE, "ort_case_run.js")
PRECISION = {"yolov8n": "fp32", "text_encoder": "fp32", "unet": "fp16", "vae_decoder": "fp32"}
SHARED_YOLO = os.path.join(HERE, "..", "..", "..", "shared", "data", "yolov8n")
TOLERANCE = {"fp32": 1e-4, "fp16": 1e-2}


def yolov8n_case(case):
    """A case folder for ../shared's YOLOv8n: the model, its real picture as input_0.npy, case.json."""
    import numpy as np
    os.makedirs(case, exist_ok=True)
    if not os.path.exists(os.path.join(case, "model.onnx")):
        os.symlink(os.path.abspath(os.path.join(SHARED_YOLO, "yolov8n.onnx")), os.path.join(case, "model.onnx"))
    image = np.fromfile(os.path.join(SHARED_YOLO, "input_images_1x3x640x640_f32.bin"), np.float32)
    np.save(os.path.join(case, "input_0.npy"), image.reshape(1, 3, 640, 640))
    meta = {"inputs": [{"index": 0, "name": "images", "kind": "input", "file": "input_0.npy",
                        "dtype": "float32", "shape": [1, 3, 640, 640]}],
            "outputs": [{"index": 0, "name": "output0", "file": "expected_0.npy", "shape": [1, 84, 8400]}]}
    with open(os.path.join(case, "case.json"), "w") as f:
        json.dump(meta, f)


def median_after_warmup(runs):
    rest = sorted(runs[1:] or runs)
    return rest[len(rest) // 2]


def ensure_case(args, node, work, model):
    """Generates the ONNX model and ONNX Runtime's reference output unless they are in --work already."""
    case = os.path.join(work, "onnx", "sd", model)
    logs = os.path.join(work, "logs")
    if model == "yolov8n" and not os.path.exists(os.path.join(case, "case.json")):
        yolov8n_case(case)
    if model != "yolov8n":
        generate_missing(os.path.join(work, "onnx"), args.size, [model], os.path.join(logs, f"gen_{model}.log"))
    if not os.path.exists(os.path.join(case, "expected_0.npy")):
        root = os.path.join(work, "ort_" + model)
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(os.path.join(root, "sd"))
        os.symlink(case, os.path.join(root, "sd", model))
        timed([node, ORT_REFERENCE, root], os.path.join(logs, f"ort_reference_{model}.log"))
    return case


def ensure_converted(convert, work, case, model, logs):
    """The model's onnxstream folder, WORK/converted/MODEL_PRECISION, converted unless it is there already."""
    precision = PRECISION[model]
    folder = os.path.join(work, "converted", f"{model}_{precision}")
    if not os.path.exists(os.path.join(folder, "model.txt")):
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(os.path.dirname(folder), exist_ok=True)
        timed([convert, os.path.join(case, "model.onnx"), folder] + (["--fp16"] if precision == "fp16" else []),
              os.path.join(logs, f"packed_convert_{model}.log"))
    return folder


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", default="/tmp/onnxstream-sd15")
    ap.add_argument("--models", default="yolov8n,text_encoder,unet,vae_decoder")
    ap.add_argument("--modes", default="min,balanced,max-speed")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--size", choices=["full", "small"], default="full")
    ap.add_argument("--skip-ort", action="store_true", help="reuse ONNX Runtime's figures from results.json")
    args = ap.parse_args()

    import numpy as np
    tools = os.path.join(os.path.abspath(args.build), "src", "tools")
    convert_exe, run_exe = os.path.join(tools, "onnxstream-convert"), os.path.join(tools, "onnxstream-run")
    for exe in (convert_exe, run_exe):
        if not os.access(exe, os.X_OK):
            sys.exit(f"sd15.py: {exe} not found; build it first (ninja -C {args.build})")
    node = shutil.which("node")
    if not node:
        sys.exit("sd15.py: node not found (ONNX Runtime runs through onnxruntime-node)")
    work = os.path.abspath(args.work)
    logs = os.path.join(work, "logs")
    os.makedirs(logs, exist_ok=True)
    results_path = os.path.join(work, "results.json")
    previous = json.load(open(results_path)) if args.skip_ort and os.path.exists(results_path) else {}
    results = {"threads": args.threads, "runs": args.runs}
    models = [m for m in args.models.split(",") if m]
    modes = [m for m in args.modes.split(",") if m]

    for model in models:
        case = ensure_case(args, node, work, model)
        meta = json.load(open(os.path.join(case, "case.json")))
        want = np.load(os.path.join(case, "expected_0.npy"))
        precision = PRECISION[model]
        r = results[model] = {"precision": precision, "parameters": meta.get("parameters")}

        if args.skip_ort and model in previous and "ort" in previous[model]:
            r["ort"] = previous[model]["ort"]
        else:
            out, _, rss = timed([node, ORT_CASE_RUN, case, str(args.threads), str(args.runs)],
                                os.path.join(logs, f"ort_{model}.log"))
            line = [l for l in out.splitlines() if l.startswith("{")][-1]
            ort = json.loads(line)
            r["ort"] = {"load_s": ort["load_s"], "run_s": median_after_warmup(ort["runs_s"]), "runs_s": ort["runs_s"],
                        "peak_rss_mb": rss}
        print(f"{model}: ONNX Runtime {r['ort']['run_s']:.2f} s per run, {r['ort']['peak_rss_mb']:.0f} MB", flush=True)

        converted = os.path.join(work, "converted", f"{model}_{precision}")
        shutil.rmtree(converted, ignore_errors=True)
        os.makedirs(os.path.dirname(converted), exist_ok=True)
        cmd = [convert_exe, os.path.join(case, "model.onnx"), converted, "--report"]
        if precision == "fp16":
            cmd.append("--fp16")
        rep, secs, rss = timed(cmd, os.path.join(logs, f"convert_{model}.log"))
        counts = re.search(r"(\d+) nodes before simplification, (\d+) after", rep)
        r["convert"] = {"seconds": secs, "peak_rss_mb": rss,
                        "nodes_before": int(counts.group(1)) if counts else None,
                        "nodes_after": int(counts.group(2)) if counts else None}

        for mode in modes:
            outputs = os.path.join(work, "outputs", f"{model}_{mode}")
            shutil.rmtree(outputs, ignore_errors=True)
            os.makedirs(outputs)
            cmd = [run_exe, converted, "--output-dir", outputs, "--memory-mode", mode, "--threads", str(args.threads),
                   "--runs", str(args.runs), "--json"]
            for inp in meta["inputs"]:
                cmd += ["--input", f"{inp['name']}={os.path.join(case, inp['file'])}"]
            out, secs, rss = timed(cmd, os.path.join(logs, f"run_{model}_{mode}.log"))
            stats = last_json(out)
            got = [f for f in os.listdir(outputs) if f.endswith(".npy")]
            err, max_abs = rel_l2(np.load(os.path.join(outputs, got[0])), want)
            e = r[mode] = {"run_s": median_after_warmup(stats["runs_s"]), "runs_s": stats["runs_s"], "peak_rss_mb": rss,
                           "peak_tensor_mb": stats["peak_tensor_bytes"] / 2 ** 20, "rel_l2": err, "max_abs": max_abs,
                           "ok": err <= TOLERANCE[precision]}
            print(f"{model} {mode}: {e['run_s']:.2f} s per run ({e['run_s'] / r['ort']['run_s']:.2f}x ONNX Runtime), "
                  f"{rss:.0f} MB peak RSS, rel L2 {err:.3g}", flush=True)
        shutil.rmtree(converted, ignore_errors=True)

    with open(results_path, "w") as f:
        json.dump(results, f, indent=1)
    print(f"\nthreads {args.threads}, {args.runs} runs per process, time = median of the runs after the first\n")
    print("| model | weights | engine / mode | s per run | x ORT time | peak RSS MB | ORT RSS / RSS | rel L2 vs ORT |")
    print("|---|---|---|---|---|---|---|---|")
    for model in models:
        r = results[model]
        ort = r["ort"]
        print(f"| {model} | {r['precision']} | ONNX Runtime 1.30 | {ort['run_s']:.2f} | 1.00 | {ort['peak_rss_mb']:.0f} | 1 | - |")
        for mode in modes:
            e = r[mode]
            print(f"| {model} | {r['precision']} | onnxstream {mode} | {e['run_s']:.2f} | {e['run_s'] / ort['run_s']:.2f} | "
                  f"{e['peak_rss_mb']:.0f} | {ort['peak_rss_mb'] / e['peak_rss_mb']:.1f} | {e['rel_l2']:.2g} |")
    print(f"\nresults: {results_path}")
    if not all(results[m][mode]["ok"] for m in models for mode in modes):
        sys.exit(1)


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as e:
        sys.exit(f"sd15.py: {e}")

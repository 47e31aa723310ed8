#!/usr/bin/python3
"""8-bit and 4-bit weights computed in int8 arithmetic against the other weight precisions (a benchmark, not a
test).

On a build against XNNPACK's 2024 API (the Debian 13 build, --build13, made by scripts/debian13.sh and run
in its trixie root through `scripts/debian13.sh exec`), per-channel int8 weights (`onnxstream-convert
--quantize w8`) of MatMul, Gemm and Conv compute in int8: activations are quantized row by row (per image
for Conv) when the op runs, through XNNPACK's dynamically quantized kernels. This script runs, in one
process per row and one script run:
  - ONNX Runtime on the float32 ONNX model (the peer, and the accuracy reference);
  - onnxstream with fp16 weights (`--fp16`), float32 arithmetic;
  - onnxstream with int8 weights (`--quantize w8`) in int8 arithmetic;
  - the same int8 weights dequantized to float32 (`onnxstream-run --dequantize-weights`, W8A32);
  - blockwise int4 MatMul/Gemm weights and int8 for the rest (`--quantize w4`), in int8 arithmetic,
in each memory mode of --modes, for YOLOv8n (../shared/data/yolov8n, its reference output), the full-size
SD 1.5 text encoder and UNet (random weights, tests/bench/sd15.py's generator; ONNX Runtime's output as the
reference); `--models ...,txt2img` adds the whole txt2img pipeline at fp16, int8 and int4 weights against ONNX
Runtime's float32 pipeline (tests/bench/txt2img_precisions.py, run in the same script run, in the same modes). Figures: time of the last of --runs runs in one process, x ONNX Runtime, peak RSS
(/usr/bin/time -v), weight bytes read per run, ops computed in int8, rel L2 against the reference.

usage: tests/bench/int8_weights.py [--build build] [--build13 build-debian13] [--work /tmp/onnxstream-sd15]
                                   [--modes balanced,min] [--runs 2] [--threads 2]
                                   [--models yolov8n,text_encoder,unet,txt2img]
                                   [--txt2img-precisions fp16,int8,int4] [--txt2img-steps 10] [--txt2img-seed 42]
"""

import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))
sys.path.insert(0, HERE)
from debian12_vs_13 import run_json  # noqa: E402
from sd15 import ensure_case  # noqa: E402
from sd15_convert import debian13_tools, last_json, rel_l2, timed  # noqa: E402
import txt2img_precisions  # noqa: E402

# (label, converter options, onnxstream-run options)
VARIANTS = [
    ("fp16", ["--fp16"], []),
    ("int8 (int8 arithmetic)", ["--quantize", "w8"], []),
    ("int8, dequantized (W8A32)", ["--quantize", "w8"], ["--dequantize-weights"]),
    ("int4 + int8 (int8 arithmetic)", ["--quantize", "w4"], []),
]
TITLES = {"unet": "SD 1.5 UNet", "text_encoder": "SD 1.5 text encoder"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="converts the models (any build)")
    ap.add_argument("--build13", default=os.path.join(ROOT, "build-debian13"), help="runs them (XNNPACK 2024)")
    ap.add_argument("--work", default="/tmp/onnxstream-sd15")
    ap.add_argument("--modes", default="balanced,min")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--size", choices=["full", "small"], default="full")
    ap.add_argument("--models", default="yolov8n,unet",
                    help="of yolov8n, text_encoder, unet and txt2img (the whole pipeline: txt2img_precisions.py)")
    txt2img_precisions.add_arguments(ap, "txt2img-")
    args = ap.parse_args()

    import numpy as np
    convert, run, node, work, logs = debian13_tools(args, "int8_weights.py")
    rows = []

    models = [m for m in args.models.split(",") if m]
    for model in [m for m in models if m != "txt2img"]:
        if model == "yolov8n":
            data = os.path.join(SHARED, "data", "yolov8n")
            onnx = os.path.join(data, "yolov8n.onnx")
            image = os.path.join(data, "input_images_1x3x640x640_f32.bin")
            want = np.fromfile(os.path.join(data, "expected_output0_1x84x8400_f32.bin"), dtype=np.float32)
            inputs = [f"images={image}"]
            out, _, rss = timed([node, os.path.join(HERE, "ort_run.js"), onnx, str(args.threads), str(args.runs + 1),
                                 f"images={image}:1,3,640,640"], os.path.join(logs, "int8_ort_yolov8n.log"))
            title = "YOLOv8n"
        elif model in TITLES:
            case = ensure_case(args, node, work, model)
            meta = json.load(open(os.path.join(case, "case.json")))
            onnx = os.path.join(case, "model.onnx")
            want = np.load(os.path.join(case, "expected_0.npy")).reshape(-1)
            inputs = [f"{i['name']}={os.path.join(case, i['file'])}" for i in meta["inputs"]]
            out, _, rss = timed([node, os.path.join(HERE, "ort_case_run.js"), case, str(args.threads), str(args.runs)],
                                os.path.join(logs, f"int8_ort_{model}.log"))
            title = TITLES[model]
        else:
            sys.exit(f"int8_weights.py: unknown model {model} (expected yolov8n, text_encoder, unet or txt2img)")
        rows.append((title, "fp32", "ONNX Runtime", "-", last_json(out)["runs_s"][-1], rss, None, None, None))
        print(rows[-1], flush=True)

        for label, convert_opts, run_opts in VARIANTS:
            folder = os.path.join(work, "converted", f"{model}_{convert_opts[-1].strip('-')}")
            if not os.path.exists(os.path.join(folder, "model.txt")):
                shutil.rmtree(folder, ignore_errors=True)
                os.makedirs(os.path.dirname(folder), exist_ok=True)
                timed([convert, onnx, folder] + convert_opts, os.path.join(logs, f"int8_convert_{model}.log"))
            for mode in [m for m in args.modes.split(",") if m]:
                tag = f"{model}_{label.split(' ')[0].strip(',')}_{'deq' if run_opts else 'q'}_{mode}"
                outputs = os.path.join(work, "outputs", tag)
                shutil.rmtree(outputs, ignore_errors=True)
                os.makedirs(outputs)
                cmd = [run, folder, "--output-dir", outputs, "--memory-mode", mode, "--threads", str(args.threads),
                       "--runs", str(args.runs), "--json"] + run_opts
                for i in inputs:
                    cmd += ["--input", i]
                stats, rss = run_json(cmd, os.path.join(logs, f"int8_{tag}.log"), True, work)
                got = [f for f in sorted(os.listdir(outputs)) if f.endswith(".npy")]
                err, _ = rel_l2(np.load(os.path.join(outputs, got[0])).reshape(-1), want)
                weights = stats["weights"][-1]
                rows.append((title, label, "onnxstream (Debian 13)", mode, stats["runs_s"][-1], rss,
                             weights["bytes_read"] / 1e6, weights.get("int8_ops"), err))
                print(rows[-1], stats.get("kernels"), flush=True)

    print(f"\n{args.threads} threads, {args.runs} runs per process, time = last run\n")
    print("| model | weights | engine | mode | s per run | x ORT | peak RSS MB | MB read per run | int8 ops "
          "| rel L2 vs ORT fp32 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    ort_time = {}
    for model, weights, engine, mode, secs, rss, read_mb, int8_ops, err in rows:
        if err is None:
            ort_time[model] = secs
        fmt = lambda v, f: "-" if v is None else format(v, f)  # noqa: E731
        print(f"| {model} | {weights} | {engine} | {mode} | {secs:.2f} | {secs / ort_time[model]:.2f} | {rss:.0f} "
              f"| {fmt(read_mb, '.1f')} | {fmt(int8_ops, 'd')} | {fmt(err, '.2g')} |")

    if "txt2img" in models:
        steps, seed = args.txt2img_steps, args.txt2img_seed
        precisions = [p for p in args.txt2img_precisions.split(",") if p]
        txt_rows = txt2img_precisions.txt2img(args.build, args.build13, args.work, precisions,
                                              [m for m in args.modes.split(",") if m], steps, seed, args.threads,
                                              args.size)
        txt2img_precisions.print_table(txt_rows, steps, seed, args.threads, args.size)


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as e:
        sys.exit(f"int8_weights.py: {e}")

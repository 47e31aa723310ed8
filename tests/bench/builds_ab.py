#!/usr/bin/python3
"""Two builds of onnxstream on the same converted models (a benchmark, not a test): are the outputs
bit-identical with every provider and memory mode, how many bytes does each copy on the weight path
(run stats `weight_bytes_copied`), and what does a YOLOv8n run cost in each (alternating the builds in one
script run so machine load hits both alike; the first run of every process is left out).

Models: YOLOv8n from ../shared (float32, and float16 weights from `onnxstream-convert --fp16`) and the
small SD 1.5-architecture models (examples/sd/make_models.py --size small), each converted once by the
--after build, plus any --model DIR=CASE_JSON (e.g. a full-size fp16 UNet from make_models.py --size full
with its gen_sd.py case.json, run in `min` only).

usage: tests/bench/builds_ab.py --before BUILD --after BUILD [--work DIR] [--rounds 3] [--runs 4]
                                [--model DIR=CASE_JSON]...
"""
import argparse
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SHARED = os.path.join(ROOT, "..", "shared", "data")
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "examples", "sd"))
from make_models import make_models  # noqa: E402

# (label, onnxstream-run arguments): every provider, every memory mode, the persistent cache.
CONFIGS = [
    ("min/nocache", ["--memory-mode", "min", "--provider", "nocache"]),
    ("balanced/prefetch", ["--memory-mode", "balanced", "--provider", "prefetch"]),
    ("balanced/mmap", ["--memory-mode", "balanced", "--provider", "mmap"]),
    ("max-speed/ram", ["--memory-mode", "max-speed", "--provider", "ram"]),
    ("balanced/cache", ["--memory-mode", "balanced", "--cache", "{work}/{build}-{model}.cache"]),
    ("min/nchw-only", ["--memory-mode", "min", "--nchw-only"]),
]


def log(msg):
    print(f"builds_ab.py: {msg}", file=sys.stderr, flush=True)


def run(build, model_dir, inputs, extra, out_dir=None, runs=2):
    cmd = [os.path.join(build, "src", "tools", "onnxstream-run"), model_dir, "--json", "--runs", str(runs)]
    for name, path in inputs:
        cmd += ["--input", f"{name}={path}"]
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        cmd += ["--output-dir", out_dir]
    p = subprocess.run(cmd + extra, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"builds_ab.py: {' '.join(cmd + extra)} failed:\n{p.stderr.strip()}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def plain_kernel_copy(src, dst):
    """A copy of converted folder src whose conv kernels are OIHW "_nchw.bin" files instead of the converter's
    OHWI "_nhwc.bin" twins (as in folders that ship only ONNX order): the op must then reorder them."""
    if os.path.exists(os.path.join(dst, "model.txt")):
        return
    shutil.copytree(src, dst)
    text = open(os.path.join(src, "model.txt")).read()
    dtypes = {"float32": np.float32, "float16": np.float16, "int8": np.int8, "uint8": np.uint8}
    for name, dtype, dims in set(re.findall(r"([^;:*(]+_nchw\.bin)\((\w+)[^:]*:([\d,]+)\)", text)):
        twin = os.path.join(dst, name[:-len("_nchw.bin")] + "_nhwc.bin")
        o, i, h, w = (int(d) for d in dims.split(","))
        ohwi = np.fromfile(twin, dtype=dtypes[dtype]).reshape(o, h, w, i)
        np.ascontiguousarray(ohwi.transpose(0, 3, 1, 2)).tofile(os.path.join(dst, name))
        os.remove(twin)


def case_inputs(case_json):
    case = json.load(open(case_json))
    folder = os.path.dirname(case_json)
    return [(i["name"], os.path.join(folder, i["file"])) for i in case["inputs"] if i.get("kind", "input") == "input"]


def same_outputs(a, b):
    names = sorted(os.listdir(a))
    if names != sorted(os.listdir(b)) or not names:
        return False
    return all(filecmp.cmp(os.path.join(a, n), os.path.join(b, n), shallow=False) for n in names)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--work", default="/tmp/onnxstream-builds-ab")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--model", action="append", default=[], help="DIR=CASE_JSON, run in min only")
    args = ap.parse_args()
    work = os.path.abspath(args.work)
    builds = {"before": os.path.abspath(args.before), "after": os.path.abspath(args.after)}
    convert = os.path.join(builds["after"], "src", "tools", "onnxstream-convert")
    os.makedirs(work, exist_ok=True)

    yolo_onnx = os.path.join(SHARED, "yolov8n", "yolov8n.onnx")
    yolo_in = [("images", os.path.join(SHARED, "yolov8n", "input_images_1x3x640x640_f32.bin"))]
    models = {}
    for name, flags in (("yolov8n", []), ("yolov8n_fp16", ["--fp16"]), ("yolov8n_w8", ["--quantize", "w8"])):
        out = os.path.join(work, name)
        if not os.path.exists(os.path.join(out, "model.txt")):
            log(f"converting {name}")
            subprocess.run([convert, yolo_onnx, out] + flags, check=True, stdout=subprocess.DEVNULL)
        models[name] = (out, yolo_in, CONFIGS)
        if name != "yolov8n":
            plain_kernel_copy(out, out + "_oihw")
            models[name + " oihw"] = (out + "_oihw", yolo_in, CONFIGS)
    sd = os.path.join(work, "sd")
    make_models(builds["after"], sd, "small")
    for gen, folder in (("text_encoder", "text_encoder_fp32"), ("unet", "unet_fp16"), ("vae_decoder", "vae_decoder_fp32")):
        case = os.path.join(sd + ".onnx", "sd", gen, "case.json")
        models[f"sd-small {folder}"] = (os.path.join(sd, folder), case_inputs(case), CONFIGS)
    for spec in args.model:
        folder, case = spec.split("=", 1)
        models[os.path.basename(os.path.normpath(folder))] = (folder, case_inputs(case), CONFIGS[:1])

    rows, identical = [], True
    for name, (folder, inputs, configs) in models.items():
        for label, extra in configs:
            copied, outs = {}, {}
            for key, build in builds.items():
                tag = f"{name}-{label}".replace("/", "_").replace(" ", "_")
                extra_k = [a.format(work=work, build=key, model=tag) for a in extra]
                outs[key] = os.path.join(work, "out", key, tag)
                r = run(build, folder, inputs, extra_k, outs[key])
                copied[key] = r["weights"][-1].get("weight_bytes_copied")
            same = same_outputs(outs["before"], outs["after"])
            identical &= same
            rows.append((name, label, copied["before"], copied["after"], same))
            log(f"{name} {label}: copied {copied['before']} -> {copied['after']} bytes, "
                f"outputs {'identical' if same else 'DIFFER'}")

    print(f"\n{'model':<28} {'config':<18} {'copied before':>15} {'copied after':>15}  outputs")
    for name, label, b, a, same in rows:
        fmt = lambda v: "-" if v is None else f"{v / 1e6:.2f} MB"  # noqa: E731
        print(f"{name:<28} {label:<18} {fmt(b):>15} {fmt(a):>15}  {'bit-identical' if same else 'DIFFERENT'}")

    times = {k: [] for k in builds}
    folder = models["yolov8n"][0]
    for _ in range(args.rounds):
        for key, build in builds.items():
            times[key] += run(build, folder, yolo_in, ["--provider", "ram"], runs=args.runs)["runs_s"][1:]
    med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    best = {k: min(v) for k, v in times.items()}
    print(f"\nYOLOv8n per run (ram provider, {len(times['after'])} runs each, alternating builds): "
          f"before best {best['before']:.3f} s median {med['before']:.3f} s; after best {best['after']:.3f} s "
          f"median {med['after']:.3f} s; after/before median {med['after'] / med['before']:.3f}")
    if not identical:
        sys.exit("builds_ab.py: outputs differ between the builds")


if __name__ == "__main__":
    main()

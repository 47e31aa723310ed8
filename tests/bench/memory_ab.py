#!/usr/bin/python3
"""Two builds of onnxstream side by side on memory (a benchmark, not a test): peak RSS, minor page faults
(each a fresh page the kernel mapped and cleared) and time per run, from /usr/bin/time -v and
`onnxstream-run --json`, alternating the builds so machine load hits both alike. The first run of every
process is left out of the times; RSS and faults are the whole process's.

Models: YOLOv8n from ../shared (converted by the --after build) in every memory mode, plus any
--model DIR=CASE_JSON (a converted folder and the gen_sd.py case.json naming its inputs, e.g. the full-size
fp16 UNet of examples/sd/make_models.py --size full) in `min` and `balanced`.

usage: tests/bench/memory_ab.py --before BUILD --after BUILD [--work DIR] [--rounds 2] [--runs 3]
                                [--threads 2] [--model DIR=CASE_JSON]...
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SHARED = os.path.join(ROOT, "..", "shared", "data")


def run(build, model, inputs, mode, runs, threads):
    exe = os.path.join(build, "src", "tools", "onnxstream-run")
    cmd = ["/usr/bin/time", "-v", exe, model, "--memory-mode", mode, "--runs", str(runs), "--threads", str(threads),
           "--json"]
    for name, path in inputs:
        cmd += ["--input", "%s=%s" % (name, path)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr[-2000:]))
    report = json.loads(p.stdout.strip().splitlines()[-1])
    faults = int(re.search(r"Minor \(reclaiming a frame\) page faults: (\d+)", p.stderr).group(1))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1)) * 1024
    return {"times": report["runs_s"][1:] or report["runs_s"], "faults": faults, "rss": rss}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--work", default="/tmp/onnxstream-memory-ab")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", action="append", default=[], help="DIR=CASE_JSON")
    a = ap.parse_args()

    os.makedirs(a.work, exist_ok=True)
    yolo = os.path.join(a.work, "yolov8n")
    if not os.path.exists(os.path.join(yolo, "model.txt")):
        subprocess.run([os.path.join(a.after, "src", "tools", "onnxstream-convert"),
                        os.path.join(SHARED, "yolov8n", "yolov8n.onnx"), yolo], check=True, stdout=subprocess.DEVNULL)
    cases = [("yolov8n", yolo, [("images", os.path.join(SHARED, "yolov8n", "input_images_1x3x640x640_f32.bin"))],
              ["min", "balanced", "max-speed"])]
    for spec in a.model:
        folder, case_json = spec.split("=", 1)
        case = json.load(open(case_json))
        inputs = [(i["name"], os.path.join(os.path.dirname(case_json), i["file"])) for i in case["inputs"]]
        cases.append((os.path.basename(folder.rstrip("/")), folder, inputs, ["min", "balanced"]))

    print("%-18s %-10s %-7s %10s %10s %12s" % ("model", "mode", "build", "peak RSS", "faults", "median s"))
    for name, folder, inputs, modes in cases:
        for mode in modes:
            got = {"before": [], "after": []}
            for _ in range(a.rounds):
                for tag in ("before", "after"):
                    got[tag].append(run(getattr(a, tag), folder, inputs, mode, a.runs, a.threads))
            for tag in ("before", "after"):
                rs = got[tag]
                times = [t for r in rs for t in r["times"]]
                print("%-18s %-10s %-7s %8.1f MB %10d %12.3f" % (
                    name, mode, tag, max(r["rss"] for r in rs) / 1e6, min(r["faults"] for r in rs),
                    statistics.median(times)), flush=True)


if __name__ == "__main__":
    main()

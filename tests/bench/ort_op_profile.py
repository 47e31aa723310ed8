#!/usr/bin/python3
"""Where onnxstream and ONNX Runtime spend their time, operator by operator (a benchmark, not a test).

For each model, in one script run: ONNX Runtime (onnxruntime-node, default graph optimisations, its own
profiler on) and `onnxstream-run --profile` (Debian 13 build, the packed-weights cache of
tests/bench/packed_weights.py, `balanced`), the same thread count, --runs runs each; the last run of each is
compared. Prints two tables:
  - time per operator type for each engine (their graphs differ: ONNX Runtime fuses Conv+activation and
    MatMul+scale, onnxstream fuses attention and the GEGLU feed-forward, so the rows are side by side, not
    matched);
  - every Conv matched by its input and weight shapes (the same in both graphs): count, time in each engine,
    GFLOP/s, and onnxstream's share spent creating operators and mapping packed weights ("prepare").
Both profilers add some time to a run; the whole-run times printed are from these profiled runs.

usage: tests/bench/ort_op_profile.py [--build build] [--build13 build-debian13] [--work /tmp/onnxstream-sd15]
                                     [--models yolov8n,unet] [--runs 3] [--threads 2] [--mode balanced]
"""

import argparse
import collections
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from packed_weights import finish, fresh_cache, in_debian13, run_command  # noqa: E402
from sd15 import ensure_case, ensure_converted  # noqa: E402
from sd15_convert import debian13_tools, last_json, timed  # noqa: E402

# ONNX Runtime's names for what is a Conv in the ONNX graph (after its NCHWc and activation fusions).
ORT_CONV = {"Conv", "FusedConv", "NchwcConv"}


def ort_last_run(trace_path):
    """[(op type, µs, input shapes)] of the last model_run in an ONNX Runtime trace, and that run's ms."""
    events = json.load(open(trace_path))
    runs = [e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"]
    if not runs:
        raise RuntimeError(f"{trace_path}: no model_run event")
    last = runs[-1]
    t0, t1 = last["ts"], last["ts"] + last["dur"]
    ops = []
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time") and t0 <= e["ts"] <= t1:
            shapes = [list(d.values())[0] for d in e["args"].get("input_type_shape", [])]
            ops.append((e["args"].get("op_name", "?"), e["dur"], shapes))
    return ops, last["dur"] / 1e3


def ours_run(trace_path):
    """[(op type, µs, input shapes, prepare µs, FLOPs)] of onnxstream-run's --profile trace (its last run)."""
    trace = json.load(open(trace_path))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    ops = []
    for e in events:
        if e.get("cat") != "op":
            continue
        a = e["args"]
        shapes = [[int(d) for d in m.split(",") if d] for m in re.findall(r"\[([\d,]*)\]", a.get("inputs", ""))]
        ops.append((e["name"], e["dur"], shapes, a.get("kernel_prepare_us", 0) + a.get("weight_wait_us", 0),
                    a.get("flops", 0)))
    return ops


def by_type(ops):
    table = collections.defaultdict(lambda: [0, 0.0])
    for op in ops:
        table[op[0]][0] += 1
        table[op[0]][1] += op[1] / 1e3
    return sorted(table.items(), key=lambda kv: -kv[1][1])


def shape_key(shapes):
    """A Conv's input and weight shapes, e.g. 1x1280x8x8 * 1280x1280x3x3."""
    return " * ".join("x".join(map(str, s)) for s in shapes[:2])


def print_tables(title, ours, ours_ms, ort, ort_ms):
    print(f"\n## {title}: onnxstream {ours_ms:.1f} ms, ONNX Runtime {ort_ms:.1f} ms "
          f"({ours_ms / ort_ms:.2f}x) in the profiled runs\n")
    a, b = by_type(ours), by_type(ort)
    print("| onnxstream op | count | ms | ONNX Runtime op | count | ms |")
    print("|---|---|---|---|---|---|")
    for i in range(max(len(a), len(b))):
        left = f"{a[i][0]} | {a[i][1][0]} | {a[i][1][1]:.1f}" if i < len(a) else " | | "
        right = f"{b[i][0]} | {b[i][1][0]} | {b[i][1][1]:.1f}" if i < len(b) else " | | "
        print(f"| {left} | {right} |")

    convs = collections.defaultdict(lambda: dict(n=0, ours=0.0, prepare=0.0, flops=0, ort=[]))
    for name, us, shapes, prepare, flops in ours:
        if name == "Conv":
            c = convs[shape_key(shapes)]
            c["n"] += 1
            c["ours"] += us / 1e3
            c["prepare"] += prepare / 1e3
            c["flops"] += flops
    for name, us, shapes in ort:
        if name in ORT_CONV and shape_key(shapes) in convs:
            convs[shape_key(shapes)]["ort"].append(us / 1e3)
    print("\n| Conv input * weight | count | onnxstream ms (prepare) | ONNX Runtime ms | x ORT "
          "| GFLOP/s onnxstream | GFLOP/s ORT |")
    print("|---|---|---|---|---|---|---|")
    total = [0.0, 0.0]
    for key, c in sorted(convs.items(), key=lambda kv: -(kv[1]["ours"] - sum(kv[1]["ort"]))):
        if len(c["ort"]) != c["n"]:  # shapes ONNX Runtime changed (a fused or reordered Conv): not comparable
            print(f"| {key} | {c['n']} | {c['ours']:.1f} ({c['prepare']:.1f}) | not matched | | | |")
            continue
        ort_ms = sum(c["ort"])
        total[0] += c["ours"]
        total[1] += ort_ms
        print(f"| {key} | {c['n']} | {c['ours']:.1f} ({c['prepare']:.1f}) | {ort_ms:.1f} | "
              f"{c['ours'] / max(ort_ms, 1e-9):.2f} | {c['flops'] / c['ours'] / 1e6:.0f} | "
              f"{c['flops'] / max(ort_ms, 1e-9) / 1e6:.0f} |")
    if total[1]:
        print(f"| all matched Convs | | {total[0]:.1f} | {total[1]:.1f} | {total[0] / total[1]:.2f} | | |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="converts the models (any build)")
    ap.add_argument("--build13", default=os.path.join(ROOT, "build-debian13"), help="runs them (XNNPACK 2024)")
    ap.add_argument("--work", default="/tmp/onnxstream-sd15")
    ap.add_argument("--models", default="yolov8n,unet")
    ap.add_argument("--size", choices=["full", "small"], default="full")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--mode", default="balanced")
    args = ap.parse_args()
    convert, run, node, work, logs = debian13_tools(args, "ort_op_profile.py")
    profiles = os.path.join(work, "profiles")
    os.makedirs(profiles, exist_ok=True)

    for model in args.models.split(","):
        case = ensure_case(args, node, work, model)
        meta = json.load(open(os.path.join(case, "case.json")))
        for old in os.listdir(profiles):
            if old.startswith(f"ort_{model}_"):
                os.remove(os.path.join(profiles, old))
        out, _, _ = timed([node, os.path.join(HERE, "ort_case_run.js"), case, str(args.threads), str(args.runs),
                           os.path.join(profiles, f"ort_{model}")], os.path.join(logs, f"ort_profile_{model}.log"))
        ort_trace = last_json(out)["profile"]

        folder = ensure_converted(convert, work, case, model, logs)
        # The packed-weights cache: a first process builds it afresh (not timed here), the profiled one maps it.
        cache = fresh_cache(work, model)
        ours_trace = os.path.join(profiles, f"onnxstream_{model}.json")
        cmd = run_command(run, folder, case, meta, os.path.join(work, "outputs", f"profile_{model}"), args.mode,
                          args.threads, cache)
        log = os.path.join(logs, f"profile_{model}_cache.log")
        finish(in_debian13(cmd + ["--runs", "1"], work, log), cmd, log)
        log = os.path.join(logs, f"profile_{model}.log")
        stats, _, _ = finish(in_debian13(cmd + ["--runs", str(args.runs), "--profile", ours_trace], work, log), cmd, log)

        ort_ops, ort_ms = ort_last_run(ort_trace)
        print_tables(model, ours_run(ours_trace), stats["runs_s"][-1] * 1e3, ort_ops, ort_ms)
        print(f"\ntraces: {ours_trace} (onnxstream), {ort_trace} (ONNX Runtime)", flush=True)


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as e:
        sys.exit(f"ort_op_profile.py: {e}")

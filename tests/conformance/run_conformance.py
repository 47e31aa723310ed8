#!/usr/bin/python3
"""ONNX's backend node tests (onnx/backend/test/data/node), converted and run by onnxstream.

Every test is one small model with its inputs and expected outputs. Each is converted with onnxstream-convert
(symbolic input dimensions fixed with --input-shape from the input files; when the conversion stops at a
shape that an input's values decide, converted again with that input pinned by --input-value, as the
converter's message says), run with onnxstream-run, and
compared the way ONNX's backend test runner compares: the same number of outputs, each with the same shape
and dtype, within np.testing.assert_allclose(rtol=1e-3, atol=1e-7) (NaN equal to NaN). One exception:
onnxstream-run writes float16 outputs as float32, so a float16 output is compared as float32. ONNX stores
bfloat16 and float8 test data as bit patterns (uint16, uint8): such inputs go to onnxstream-run with
--input-dtype NAME=bfloat16 (float8e4m3fn, ...), and such outputs, which onnxstream-run writes as float32, are
compared with the float32 values of their bits (ONNX's own float8 decoding).

Each test ends in one category: pass, refused-at-conversion, refused-at-run, wrong-result, crash, timeout.
expected_failures_onnx-VERSION.tsv beside this file lists the tests that do not pass and why; the run
fails on a failure that is not listed or listed with another category, and on a listed test that passes.
--update rewrites the list from this run's results.

usage: run_conformance.py --convert EXE --run EXE --fetch SCRIPT --work DIR [--list-ops EXE]
                          [--onnx-version V] [--data DIR] [--jobs N] [--timeout S] [--filter REGEX] [--update]
"""
import argparse
import collections
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import cross_exe  # noqa: E402

CATEGORIES = ["pass", "refused-at-conversion", "refused-at-run", "wrong-result", "crash", "timeout"]
# A failure of these categories is a bug, never a limitation: it is printed in full, every time.
LOUD = {"wrong-result", "crash", "timeout"}
RTOL, ATOL = 1e-3, 1e-7
SKIP = 77  # meson's "skipped"


def first_line(text):
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[0] if lines else ""


def shorten(message, test_dir, limit=240):
    """A reason that reads the same on every machine: no temporary paths, no tool prefix."""
    message = message.replace(test_dir + "/", "").replace(test_dir, "")
    message = re.sub(r"^onnxstream-(convert|run): ", "", message)
    message = re.sub(r"\S*/work/(?:tests/)?[^/\s]+/", "", message)  # this run's folders, relative or absolute
    message = re.sub(r"^model\.onnx: ", "", message)
    message = re.sub(r"^the converted model does not pass the engine's checks: model\.txt:\d+ \([^)]*\): ", "engine: ",
                     message)
    message = message.replace("the converted model does not pass the engine's checks: ", "engine: ")
    unsupported = re.match(r"\d+ operator types? cannot run in onnxstream: (.*?)(; a \w+ converts .*)?$", message)
    if unsupported:
        ops = re.findall(r"(?:^|; )(\w+) x\d+ \(first: '[^']*'\)", unsupported.group(1))
        message = "no onnxstream op: " + ", ".join(ops) + (unsupported.group(2) or "")
    return message if len(message) <= limit else message[:limit - 3] + "..."


def camel_key(name):
    return name.lower().replace("_", "")


def op_type_of(test_dir, model):
    """The ONNX op a test is about: the graph's op whose name starts the test's name, the single op of the
    graph, or for an *_expanded test (the op's function body) the op of its unexpanded twin."""
    name = os.path.basename(test_dir)
    twin = os.path.join(os.path.dirname(test_dir), name[:-len("_expanded")])
    if name.endswith("_expanded") and os.path.exists(os.path.join(twin, "model.onnx")):
        return op_type_of(twin, onnx.load(os.path.join(twin, "model.onnx")))
    ops = [n.op_type for n in model.graph.node]
    key = camel_key(name[len("test_"):])
    matches = [op for op in set(ops) if key.startswith(camel_key(op))]
    if matches:
        return max(matches, key=len)
    distinct = [op for op in dict.fromkeys(ops) if op != "Constant"] or ops
    return distinct[-1] if distinct else "?"


def graph_inputs(model):
    initializers = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initializers]


def read_tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def escape(name):
    return re.sub(r"[^A-Za-z0-9]", lambda m: "_%02X_" % ord(m.group(0)), name)


def model_txt_inputs(folder):
    """The graph inputs of a converted model: the activations that no op of model.txt produces. The
    converter leaves out ONNX inputs whose values nothing reads (CastLike's `like` once folded)."""
    used, produced = set(), set()
    with open(os.path.join(folder, "model.txt")) as f:
        for line in f:
            for section in line.rstrip("\r\n").split("*")[1:]:
                key, _, value = section.partition(":")
                if key in ("input", "output"):
                    names = {e.split("(")[0] for e in value.split(";") if e and ".bin(" not in e}
                    (used if key == "input" else produced).update(names)
    return used - produced


def run_tool(cmd, timeout):
    """(category or None, returncode, stdout, stderr); a signal is a crash, an overrun a timeout."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", None, "", "over %d s" % timeout
    if p.returncode < 0:
        return "crash", p.returncode, "", "killed by %s %s" % (signal.Signals(-p.returncode).name, first_line(p.stderr))
    return None, p.returncode, p.stdout, p.stderr


def bfloat16_bits_to_float32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def float8_decoder(fn, uz, e5m2=False):
    def decode(bits):
        convert = numpy_helper.float8e5m2_to_float32 if e5m2 else numpy_helper.float8e4m3_to_float32
        return convert(bits.view(np.uint8), fn=fn, uz=uz).astype(np.float32).reshape(bits.shape)
    return decode


# ONNX element types whose test data holds bit patterns: the engine's dtype name, the bits' numpy dtype and
# their float32 values.
BIT_PATTERN_TYPES = {onnx.TensorProto.BFLOAT16: ("bfloat16", np.uint16, bfloat16_bits_to_float32)}
for _name, _args in (("FLOAT8E4M3FN", (True, False)), ("FLOAT8E4M3FNUZ", (True, True)),
                     ("FLOAT8E5M2", (False, False, True)), ("FLOAT8E5M2FNUZ", (True, True, True))):
    if hasattr(onnx.TensorProto, _name):  # ONNX 1.14 and later
        BIT_PATTERN_TYPES[getattr(onnx.TensorProto, _name)] = (_name.lower(), np.uint8, float8_decoder(*_args))
# int4 and uint4 (ONNX 1.16 and later): ONNX's arrays hold one value per byte, as int8 and uint8 with their own
# dtype name; onnxstream-run takes and writes them as int8 and uint8.
for _name, _bits in (("INT4", np.int8), ("UINT4", np.uint8)):
    if hasattr(onnx.TensorProto, _name):
        BIT_PATTERN_TYPES[getattr(onnx.TensorProto, _name)] = (_name.lower(), _bits, lambda bits: bits)


def compare(expected, got, elem_type=None):
    """None when got matches expected as ONNX's backend runner requires, else what differs. elem_type: the
    output's ONNX type; for the BIT_PATTERN_TYPES, expected holds bit patterns and onnxstream-run wrote float32."""
    if elem_type in BIT_PATTERN_TYPES:
        _, bits_dtype, to_float32 = BIT_PATTERN_TYPES[elem_type]
        if expected.dtype.itemsize == np.dtype(bits_dtype).itemsize and expected.dtype.kind in "uiV":
            expected = to_float32(expected.view(bits_dtype))
    if got.shape != expected.shape:
        return "shape %s, expected %s" % (list(got.shape), list(expected.shape))
    if expected.dtype == np.float16 and got.dtype == np.float32:
        # onnxstream-run writes float16 outputs as float32 (its --help says so); the values still count.
        expected = expected.astype(np.float32)
    if got.dtype != expected.dtype:
        return "dtype %s, expected %s" % (got.dtype, expected.dtype)
    try:
        if expected.dtype == object:
            np.testing.assert_array_equal(got, expected)
        else:
            np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)
    except AssertionError as e:
        detail = " ".join(ln.strip() for ln in str(e).splitlines() if ln.strip().startswith(("Mismatch", "Max")))
        return "values differ: " + (detail or first_line(str(e)))
    return None


def pins_for(message, feeds, pinned):
    """The inputs to pin with --input-value after a conversion stopped at a shape that input values decide: the
    ones the message names, else the shape-like inputs (integers of rank <= 1 and up to 64 values, floats of
    rank 1 and up to 8 values: shapes, axes, pads, scales, depths) not pinned yet, the first input last."""
    named = {n for names in re.findall(r"values of ((?:'[^']+'(?:, | and )?)+)", message)
             for n in re.findall(r"'([^']+)'", names)}
    chosen = [(n, p) for n, p in feeds if n in named and n not in pinned]
    if chosen:
        return chosen

    def shape_like(p):
        x = np.load(p, mmap_mode="r")
        return (x.dtype.kind in "iu" and x.ndim <= 1 and x.size <= 64) or (
            x.dtype.kind == "f" and x.ndim == 1 and x.size <= 8)
    # The first input is usually the data itself (pinning it leaves nothing to compute): the others first.
    for candidates in (feeds[1:], feeds[:1]):
        chosen = [(n, p) for n, p in candidates if n not in pinned and shape_like(p)]
        if chosen:
            return chosen
    return []


def run_test(test_dir, a):
    name = os.path.basename(test_dir)
    r = {"name": name, "op": "?", "category": "pass", "reason": ""}
    work = os.path.join(a.work, "tests", name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    try:
        model = onnx.load(os.path.join(test_dir, "model.onnx"))
        r["op"] = op_type_of(test_dir, model)
        data = os.path.join(test_dir, "test_data_set_0")
        inputs = graph_inputs(model)
        n_in = len([f for f in os.listdir(data) if re.fullmatch(r"input_\d+\.pb", f)])
        n_out = len([f for f in os.listdir(data) if re.fullmatch(r"output_\d+\.pb", f)])

        convert = [a.convert, os.path.join(test_dir, "model.onnx"), os.path.join(work, "model")]
        feeds, bit_inputs = [], []
        for i, inp in enumerate(inputs[:n_in]):
            if not inp.type.HasField("tensor_type"):
                feeds = None
                break
            x = read_tensor(os.path.join(data, "input_%d.pb" % i))
            dims = inp.type.tensor_type.shape.dim
            if inp.type.tensor_type.HasField("shape") and any(not d.HasField("dim_value") for d in dims):
                convert += ["--input-shape", "%s=%s" % (inp.name, ",".join(map(str, x.shape)))]
            path = os.path.join(work, "input_%d.npy" % i)
            pattern = BIT_PATTERN_TYPES.get(inp.type.tensor_type.elem_type)
            if pattern and x.dtype.itemsize == np.dtype(pattern[1]).itemsize:
                x = x.view(pattern[1])  # ONNX's float8 arrays are structured uint8
                bit_inputs.append((inp.name, pattern[0]))
            np.save(path, x)
            feeds.append((inp.name, path))

        cat, rc, out, err = run_tool(convert, a.timeout)
        # A shape that only an input's values decide: do what the converter's message says and pin those
        # inputs with --input-value (as a user converting the model would), up to three rounds.
        pinned = []
        for _ in range(3):
            if cat or rc == 0 or ("no static shape" not in err + out and "--input-value" not in err + out):
                break
            pin = pins_for(err + out, feeds or [], pinned)
            if not pin:
                break
            for n, path in pin:
                x = np.load(path)
                convert += ["--input-value", "%s=%s" % (n, ",".join(repr(v) for v in x.ravel().tolist()))]
                pinned.append(n)
            shutil.rmtree(os.path.join(work, "model"), ignore_errors=True)
            cat, rc, out, err = run_tool(convert, a.timeout)
        r["pinned"] = pinned
        if cat or rc != 0:
            r["category"] = cat or "refused-at-conversion"
            r["reason"] = shorten(first_line(err or out) or "exit status %d" % rc, test_dir)
            return r
        if feeds is None:
            r["category"] = "refused-at-run"
            r["reason"] = "an input is a sequence, map or optional; onnxstream-run feeds tensors only"
            return r

        out_dir = os.path.join(work, "out")
        declared = model_txt_inputs(os.path.join(work, "model"))
        feeds = [arg for n, path in feeds if escape(n) in declared for arg in ("--input", "%s=%s" % (n, path))] + [
            arg for n, dtype in bit_inputs if escape(n) in declared for arg in ("--input-dtype", n + "=" + dtype)]
        cat, rc, out, err = run_tool([a.run, os.path.join(work, "model"), "--threads", "1", "--output-dir", out_dir,
                                      "--json"] + feeds, a.timeout)
        if cat or rc != 0:
            r["category"] = cat or "refused-at-run"
            r["reason"] = shorten(first_line(err or out) or "exit status %d" % rc, test_dir)
            return r
        got = {o["name"]: o for o in json.loads(out.strip().splitlines()[-1])["outputs"]}
        problems = []
        for j, o in enumerate(model.graph.output[:n_out]):
            expected = read_tensor(os.path.join(data, "output_%d.pb" % j))
            mine = got.get(o.name) or got.get(escape(o.name))  # model.txt's names are escaped
            if mine is None:
                problems.append("%s: missing" % o.name)
                continue
            problem = compare(expected, np.load(mine["file"], allow_pickle=False), o.type.tensor_type.elem_type)
            if problem:
                problems.append("%s: %s" % (o.name, problem))
        if problems:
            r["category"] = "wrong-result"
            r["reason"] = "; ".join(problems)
    except Exception as e:  # the harness itself: reported, never mistaken for a pass
        r["category"] = "refused-at-run"
        r["reason"] = "harness: %s: %s" % (type(e).__name__, first_line(str(e)))
    finally:
        if r["category"] not in LOUD:
            shutil.rmtree(work, ignore_errors=True)
    return r


def read_expected(path):
    expected = {}
    if not os.path.exists(path):
        return expected
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) < 2 or fields[1] not in CATEGORIES[1:]:
                sys.exit("%s:%d: expected test<TAB>category<TAB>reason with a category of %s" %
                         (path, n, ", ".join(CATEGORIES[1:])))
            expected[fields[0]] = (fields[1], fields[2] if len(fields) > 2 else "")
    return expected


# Differences from ONNX's expected data that onnxstream makes deliberately: where it gives what ONNX Runtime
# gives (checked with onnxstream-convert --check on the same inputs), and bfloat16 rounding, where it gives
# what PyTorch gives.
BF16_ROUNDING = ("rounds float32 to bfloat16 to nearest even, as PyTorch does (the same bits on these inputs); "
                 "ONNX's reference data truncates")
DELIBERATE = {
    "test_cast_FLOAT_to_BFLOAT16": BF16_ROUNDING,
    "test_castlike_FLOAT_to_BFLOAT16": BF16_ROUNDING,
    "test_castlike_FLOAT_to_BFLOAT16_expanded": BF16_ROUNDING,
    "test_resize_downsample_scales_cubic_align_corners":
        "as ONNX Runtime, whose align_corners maps by the integer output length; ONNX's reference data uses "
        "scale x input length",
    "test_resize_downsample_scales_linear_align_corners":
        "as ONNX Runtime, whose align_corners maps by the integer output length; ONNX's reference data uses "
        "scale x input length",
    "test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_True":
        "as ONNX Runtime and PyTorch, which divide a ceil_mode window reaching past the padded input by its taps "
        "inside the padded input; ONNX's reference data divides by all of them",
}


def out_of_scope(r):
    """Why a test is not this engine's business (or differs on purpose), or ''."""
    if r["name"] in DELIBERATE and r["category"] == "wrong-result":
        return DELIBERATE[r["name"]]
    if r["op"] in {"Gradient", "Momentum", "Adagrad", "Adam"}:
        return "out of scope: training op (ai.onnx.preview.training)"
    if r["op"].startswith("String") or r["op"] == "RegexFullMatch" or "has type string" in r["reason"]:
        return "out of scope: strings"
    return ""


def write_expected(path, results, version):
    with open(path, "w") as f:
        f.write("# ONNX %s backend node tests that onnxstream does not pass: test, category, reason.\n" % version)
        f.write("# Written by tests/conformance/run_conformance.py --update; see docs/testing.md.\n")
        for r in sorted(results, key=lambda r: r["name"]):
            if r["category"] != "pass":
                scope = out_of_scope(r)
                reason = (scope + "; " if scope else "") + r["reason"]
                f.write("%s\t%s\t%s\n" % (r["name"], r["category"], reason.replace("\t", " ")))


def registered_ops(a, results):
    """The engine's op types: from the list-ops helper when given, else every op type seen in a test minus
    those the converter's refusals name ("N operator types cannot run in onnxstream: X x1 (...); Y x2",
    shortened by shorten() to "no onnxstream op: X, Y")."""
    if a.list_ops:
        out = subprocess.run([a.list_ops], capture_output=True, text=True, check=True).stdout
        return set(out.split()), "the engine's registry (list_registered_ops)"
    refused = set()
    for r in results:
        m = re.match(r"no onnxstream op: ([\w, ]+)", r["reason"])
        if m:
            refused |= set(m.group(1).split(", "))
    return {r["op"] for r in results} - refused, "op types no conversion refusal names"


def print_summary(results, registered, source, version, elapsed):
    by_op = collections.defaultdict(collections.Counter)
    for r in results:
        by_op[r["op"]][r["category"]] += 1
    short = {"pass": "pass", "refused-at-conversion": "conv", "refused-at-run": "run", "wrong-result": "WRONG",
             "crash": "CRASH", "timeout": "TIMEOUT"}
    print("\n%-28s %5s %s %s" % ("op type", "tests", " ".join("%7s" % short[c] for c in CATEGORIES), "registered"))
    for op in sorted(by_op):
        c = by_op[op]
        print("%-28s %5d %s %s" % (op, sum(c.values()), " ".join("%7s" % (c[k] or "") for k in CATEGORIES),
                                   "yes" if op in registered else ""))
    total = collections.Counter(r["category"] for r in results)
    reg = [r for r in results if r["op"] in registered]
    print("\nregistered op types from %s" % source)
    pinned = sum(1 for r in results if r["category"] == "pass" and r.get("pinned"))
    print("conformance (ONNX %s node tests): %d/%d pass (%d with --input-value); %d/%d among tests of registered "
          "op types; %s; %.0f s" % (
              version, total["pass"], len(results), pinned, sum(r["category"] == "pass" for r in reg), len(reg),
              ", ".join("%s %d" % (c, total[c]) for c in CATEGORIES[1:]), elapsed))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--convert", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--fetch", default=os.path.join(HERE, "fetch_onnx_node_tests.sh"))
    ap.add_argument("--work", required=True, help="scratch folder; the test data goes to WORK/onnx-VERSION")
    ap.add_argument("--list-ops", help="program printing the engine's registered op types")
    ap.add_argument("--onnx-version", default=onnx.__version__, help="default: the installed python3-onnx's")
    ap.add_argument("--data", help="a folder with node/<test> (default: fetched into WORK)")
    ap.add_argument("--expected", help="default: expected_failures_onnx-VERSION.tsv beside this script")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=60, help="seconds for each conversion and each run")
    ap.add_argument("--filter", help="only the tests whose name matches this regular expression")
    ap.add_argument("--update", action="store_true", help="rewrite the expected-failures list from this run")
    a = ap.parse_args()
    a.convert, a.run = cross_exe.wrap(a.convert), cross_exe.wrap(a.run)
    a.list_ops = a.list_ops and cross_exe.wrap(a.list_ops)
    version = a.onnx_version
    expected_path = a.expected or os.path.join(HERE, "expected_failures_onnx-%s.tsv" % version)
    os.makedirs(a.work, exist_ok=True)

    data = a.data or os.path.join(a.work, "onnx-%s" % version)
    if not a.data and subprocess.run(["sh", a.fetch, version, data]).returncode != 0:
        if os.environ.get("CI"):
            sys.exit("conformance: FAILED: ONNX %s's node tests could not be fetched (see above)" % version)
        print("conformance: skipped: ONNX %s's node tests could not be fetched (see above); CI=1 makes this fail"
              % version)
        sys.exit(SKIP)
    node_dir = os.path.join(data, "node")
    tests = sorted(os.path.join(node_dir, t) for t in os.listdir(node_dir)
                   if os.path.exists(os.path.join(node_dir, t, "model.onnx")))
    if a.filter:
        tests = [t for t in tests if re.search(a.filter, os.path.basename(t))]

    start = time.time()
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for r in pool.map(lambda t: run_test(t, a), tests):
            results.append(r)
            if r["category"] in LOUD:
                print("%s: %s %s: %s" % (r["name"], r["category"].upper(), r["op"], r["reason"]), flush=True)
    elapsed = time.time() - start
    with open(os.path.join(a.work, "results.tsv"), "w") as f:
        for r in results:
            f.write("%s\t%s\t%s\t%s\n" % (r["name"], r["op"], r["category"], r["reason"]))
    registered, source = registered_ops(a, results)
    print_summary(results, registered, source, version, elapsed)

    if a.update:
        if a.filter:
            sys.exit("--update needs every test: leave out --filter")
        write_expected(expected_path, results, version)
        print("wrote %s" % expected_path)
        return 0
    expected = read_expected(expected_path)
    problems = []
    for r in results:
        listed = expected.get(r["name"])
        if r["category"] == "pass" and listed:
            problems.append("%s: unexpected pass: remove it from the list" % r["name"])
        elif r["category"] != "pass" and not listed:
            problems.append("%s: %s, not in the list: %s" % (r["name"], r["category"], r["reason"]))
        elif r["category"] != "pass" and listed[0] != r["category"]:
            problems.append("%s: %s, listed as %s: %s" % (r["name"], r["category"], listed[0], r["reason"]))
    seen = {r["name"] for r in results}
    if not a.filter:
        problems += ["%s: listed, but ONNX %s has no such test" % (t, version) for t in sorted(expected) if t not in seen]
    if problems:
        print("\nconformance: FAILED against %s (%d):" % (os.path.relpath(expected_path), len(problems)))
        for p in problems:
            print("  " + p)
        print("a change that is right: rerun with --update and review the list's diff")
        return 1
    print("conformance: every result as %s lists" % os.path.basename(expected_path))
    return 0


if __name__ == "__main__":
    sys.exit(main())

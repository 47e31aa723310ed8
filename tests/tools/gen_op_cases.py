#!/usr/bin/python3
"""Generate the op conformance cases of every tests/tools/op_cases/<family>.py module.

Writes OUT/<family>/<case>/ with model.onnx, model.txt, the weight .bin files, input_<i>.npy (pushed inputs)
and case.json; with --node, then runs ort_reference.js to add expected_<k>.npy (ONNX Runtime's outputs).

One broken family or case must not hide the results of the others (several people write case files at the
same time), so errors are recorded where the C++ harness turns them into failing tests:
  OUT/<family>/generation_error.txt  the module failed to import or has no usable CASES
  OUT/<family>/<case>/error.txt      this case could not be generated or ONNX Runtime rejected it
and printed to stderr. Problems with the tools themselves (no onnx module, no onnxruntime-node) exit non-zero.

The output is built in OUT.tmp and moved into place at the end, so an interrupted run never leaves a mix of
old and new cases.
"""

import argparse
import importlib
import os
import shutil
import sys
import time
import traceback

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
TOOLS_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TOOLS_DIR)

import case_output  # noqa: E402

import opcase  # noqa: E402


def family_names():
    folder = os.path.join(TOOLS_DIR, "op_cases")
    return sorted(f[:-3] for f in os.listdir(folder) if f.endswith(".py") and not f.startswith("_"))


def load_family(family):
    module = importlib.import_module(f"op_cases.{family}")
    cases = getattr(module, "CASES", None)
    if not isinstance(cases, (list, tuple)):
        raise opcase.OpCaseError(f"op_cases/{family}.py must define CASES as a list of Case objects")
    seen = set()
    for c in cases:
        if not isinstance(c, opcase.Case):
            raise opcase.OpCaseError(f"op_cases/{family}.py: CASES holds a {type(c).__name__}, not a Case")
        if c.name in seen:
            raise opcase.OpCaseError(f"op_cases/{family}.py: two cases are named '{c.name}'")
        seen.add(c.name)
        c.family = family
    return cases


def write_text(path, text):
    with open(path, "w") as f:
        f.write(text if text.endswith("\n") else text + "\n")


def write_depfile(path, target):
    folder = os.path.join(TOOLS_DIR, "op_cases")
    deps = [os.path.join(TOOLS_DIR, f) for f in
            ("opcase.py", "gen_op_cases.py", "ort_reference.js", "package.json", "package-lock.json")]
    deps.append(folder)  # its mtime changes when a case file is added or removed
    deps += sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".py"))
    esc = lambda p: p.replace(" ", "\\ ")
    write_text(path, f"{esc(target)}: " + " \\\n  ".join(esc(d) for d in deps))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder (replaced)")
    ap.add_argument("--family", action="append", help="only this family (repeatable); default: all")
    ap.add_argument("--node", help="node executable: also compute the expected outputs with ort_reference.js")
    ap.add_argument("--stamp", help="file to touch when everything was written")
    ap.add_argument("--depfile", help="write a Makefile-style depfile for --stamp (for ninja): the tools, every "
                    "case module and the op_cases folder itself, so adding a case file regenerates")
    args = ap.parse_args()

    try:
        import onnx  # noqa: F401  (checked here so the message says how to install it)
    except ImportError:
        sys.exit("gen_op_cases.py: the python3 'onnx' module is missing (Debian: apt install python3-onnx)")

    start = time.time()
    out = os.path.abspath(args.out)
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)

    families = args.family or family_names()
    n_cases = n_errors = 0
    for family in families:
        fam_dir = os.path.join(tmp, family)
        os.makedirs(fam_dir)
        try:
            cases = load_family(family)
        except Exception as e:
            detail = str(e) if isinstance(e, opcase.OpCaseError) else traceback.format_exc()
            msg = f"op_cases/{family}.py could not be loaded: {detail}"
            write_text(os.path.join(fam_dir, "generation_error.txt"), msg)
            print(f"gen_op_cases.py: {msg}", file=sys.stderr)
            n_errors += 1
            continue
        for case in cases:
            case_dir = os.path.join(fam_dir, case.name)
            n_cases += 1
            try:
                opcase.write_case(case, case_dir)
            except Exception as e:
                detail = str(e) if isinstance(e, opcase.OpCaseError) else traceback.format_exc()
                msg = f"case {family}/{case.name} ({case.op}) could not be generated: {detail}"
                shutil.rmtree(case_dir, ignore_errors=True)
                os.makedirs(case_dir)
                write_text(os.path.join(case_dir, "error.txt"), msg)
                print(f"gen_op_cases.py: {msg}", file=sys.stderr)
                n_errors += 1
    gen_time = time.time() - start

    case_output.publish(tmp, out, args.node, "gen_op_cases.py")
    print(f"gen_op_cases.py: {n_cases} cases in {len(families)} families, {n_errors} generation errors, "
          f"{gen_time:.1f}s to generate, {time.time() - start:.1f}s in all")
    if args.stamp:
        write_text(args.stamp, f"{n_cases} cases")
    if args.depfile:
        write_depfile(args.depfile, args.stamp or args.out)


if __name__ == "__main__":
    main()

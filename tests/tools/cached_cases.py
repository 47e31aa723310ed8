#!/usr/bin/env python3
"""Runs a test-case generator, or copies its earlier output from a cache shared by build folders.

    cached_cases.py --inputs FILE... -- GENERATOR_COMMAND... --out DIR [--stamp FILE] ...

Without ONNXSTREAM_TEST_CASE_CACHE in the environment this only runs GENERATOR_COMMAND. With it, the
generator's output folder (--out) is kept under that folder, named by a hash of: the contents of the
--inputs files (the generator and everything it reads), the generator's arguments other than --out and
--stamp, the Python version and the Debian release. A later build folder that asks for the same cases
(another configuration of the same checkout: the ASan build, a cross build whose tests run under qemu)
gets a copy instead of exporting the models with PyTorch and running ONNX Runtime again. The generators are
seeded, so the copy is what the generator would have written.
"""
import hashlib
import os
import platform
import shutil
import subprocess
import sys


def os_release():
    try:
        with open("/etc/os-release") as f:
            return f.read()
    except OSError:
        return ""


def option_value(args, name):
    if name in args:
        i = args.index(name)
        if i + 1 < len(args):
            return args[i + 1]
    return None


def cache_key(inputs, command):
    h = hashlib.sha256()
    for path in inputs:
        with open(path, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    skip_next = False
    for i, a in enumerate(command):
        if skip_next:
            skip_next = False
            continue
        if a in ("--out", "--stamp"):
            skip_next = True
            continue
        # The generator and the interpreter are identified by content and version, not by path.
        if i < 2 and os.path.isfile(a):
            continue
        h.update(a.encode() + b"\0")
    h.update(platform.python_version().encode() + b"\0" + os_release().encode())
    return h.hexdigest()[:24]


def main():
    argv = sys.argv[1:]
    if "--" not in argv or argv[:1] != ["--inputs"]:
        sys.exit("usage: cached_cases.py --inputs FILE... -- GENERATOR_COMMAND...")
    sep = argv.index("--")
    inputs, command = argv[1:sep], argv[sep + 1:]
    out, stamp = option_value(command, "--out"), option_value(command, "--stamp")
    if not out:
        sys.exit("cached_cases.py: the generator command has no --out")
    cache_root = os.environ.get("ONNXSTREAM_TEST_CASE_CACHE")
    if not cache_root:
        sys.exit(subprocess.call(command))

    entry = os.path.join(os.path.abspath(cache_root), cache_key(inputs, command))
    name = os.path.basename(os.path.normpath(out))
    if os.path.isdir(entry):
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(entry, out)
        print(f"cached_cases.py: {name}: copied from {entry}", flush=True)
    else:
        status = subprocess.call(command)
        if status != 0:
            sys.exit(status)
        # Copied under a temporary name and renamed, so that a stopped copy never looks complete.
        tmp = f"{entry}.tmp{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(out, tmp)
        try:
            os.rename(tmp, entry)
        except OSError:  # another build folder stored the same cases first
            shutil.rmtree(tmp, ignore_errors=True)
        print(f"cached_cases.py: {name}: stored in {entry}", flush=True)
    if stamp:
        with open(stamp, "w") as f:
            f.write("ok\n")


if __name__ == "__main__":
    main()

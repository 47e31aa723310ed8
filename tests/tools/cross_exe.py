"""Programs of a cross build (aarch64/armhf under qemu) called from the test scripts, which run natively.

meson test puts the cross file's exe_wrapper in MESON_EXE_WRAPPER for the tests of a cross build whose
arguments include a built program (pass the target itself in meson.build, not its full_path()); a program
path given to a script is replaced by a small shell script that runs it through that wrapper, so the
scripts keep calling one path. Native builds get their paths back unchanged.
"""
import argparse
import os
import shlex
import shutil
import stat
import tempfile

_folder = None


def wrap(path):
    wrapper = os.environ.get("MESON_EXE_WRAPPER", "")
    if not wrapper:
        return path
    global _folder
    if _folder is None:
        _folder = tempfile.mkdtemp(prefix="onnxstream-exe-wrapper-")
    script = os.path.join(_folder, os.path.basename(path))
    with open(script, "w") as f:
        f.write("#!/bin/sh\nexec %s %s \"$@\"\n" % (wrapper, shlex.quote(os.path.abspath(path))))
    os.chmod(script, os.stat(script).st_mode | stat.S_IXUSR)
    return script


def convert_and_run_args():
    """The arguments of a test script that converts with onnxstream-convert and runs with onnxstream-run:
    --convert and --run (wrapped as above), --node, and --work, emptied and made."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--convert", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--node", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    a.convert, a.run = wrap(a.convert), wrap(a.run)
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    return a

"""Last step shared by the case generators (gen_op_cases.py, tests/convert/gen_models.py, tests/sd/gen_sd.py).

Cases are written into a temporary sibling folder; ONNX Runtime (ort_reference.js under node) adds each
case's expected outputs; only then does the folder replace the previous one, so a failed generation never
leaves a half-written case set that the tests would read.
"""
import os
import shutil
import subprocess
import sys

TOOLS_DIR = os.path.dirname(os.path.abspath(__file__))


def add_ort_reference(node, cases_dir, who):
    """Run ort_reference.js on every case under cases_dir; exit with a message naming `who` on failure."""
    script = os.path.join(TOOLS_DIR, "ort_reference.js")
    rc = subprocess.call([node, script, cases_dir])
    if rc != 0:
        sys.exit(f"{who}: {script} failed (exit status {rc})")


def publish(tmp, out, node, who):
    """Add ONNX Runtime's outputs to the cases in tmp when node is given, then move tmp to out."""
    if node:
        add_ort_reference(node, tmp, who)
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)

"""What the scripted convert tests share: their command line, a work folder with the models their generator
script writes, and a way to call onnxstream-convert with ONNX Runtime on NODE_PATH (for --check)."""
import argparse
import os
import shutil
import subprocess

import cross_exe


def setup(models_script, run=False):
    """Parse --convert, --node-modules, --work (and --run when `run`); empty the work folder and run
    `models_script` there with /usr/bin/python3 (from a file: torch.jit.script reads the modules' source).
    Returns the arguments and cli(*args) -> (exit status, stdout + stderr) of onnxstream-convert."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--convert", required=True)
    if run:
        ap.add_argument("--run", required=True)
    ap.add_argument("--node-modules", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    convert = cross_exe.wrap(a.convert)
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    generator = os.path.join(a.work, "make_models.py")
    with open(generator, "w") as f:
        f.write(models_script)
    subprocess.run(["/usr/bin/python3", generator, a.work], check=True, capture_output=True)
    env = dict(os.environ, NODE_PATH=os.path.abspath(a.node_modules))

    def cli(*args):
        p = subprocess.run([convert] + list(args), capture_output=True, text=True, env=env)
        return p.returncode, p.stdout + p.stderr

    return a, cli

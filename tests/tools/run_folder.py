"""One onnxstream-run of a model folder on in-memory inputs, for the scripted tests and benchmarks that
compare a folder's output with a reference computed in Python."""
import os
import shutil
import subprocess

import numpy as np


def run_folder(run, folder, inputs, work):
    """run: the onnxstream-run program; inputs: [(input name, array)], saved as .npy in work. Returns the
    CompletedProcess and, when it succeeded, the model's one output (the only file of its --output-dir)."""
    out = os.path.join(work, "run_folder_out")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [run, folder, "--output-dir", out]
    for i, (name, array) in enumerate(inputs):
        path = os.path.join(work, f"run_folder_input_{i}.npy")
        np.save(path, array)
        cmd += ["--input", f"{name}={path}"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p, (np.load(os.path.join(out, os.listdir(out)[0])) if p.returncode == 0 else None)

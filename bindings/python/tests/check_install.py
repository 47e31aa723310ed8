"""Install bindings/python the documented way into a temporary --target, then import it from there.

    python3 bindings/python/tests/check_install.py

Runs ``python3 -m pip install --no-build-isolation --no-deps --target TMP <copy of bindings/python>``
(offline: --no-index) and ``python3 -c "import onnxstream; print(onnxstream.__version__)"`` in TMP,
without PYTHONPATH, so the installed copy is what gets imported. With ONNXSTREAM_LIBRARY set it also
opens the library through the installed package.

The package is copied first: setuptools builds in the source folder (build/, *.egg-info), and a test
must leave the checkout as it found it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1]


def run(cmd, **kwargs) -> str:
    print("$", " ".join(str(c) for c in cmd), flush=True)
    result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if result.returncode:
        raise SystemExit(f"exit status {result.returncode}")
    return result.stdout


def main() -> None:
    expected = re.search(r'^__version__ = "([^"]+)"', (SOURCE / "onnxstream" / "__init__.py").read_text(), re.M)
    assert expected, "no __version__ in onnxstream/__init__.py"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PIP_NO_CACHE_DIR="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_ROOT_USER_ACTION="ignore",
               PYTHONDONTWRITEBYTECODE="1")
    with tempfile.TemporaryDirectory(prefix="onnxstream-pip-") as tmp:
        copy = Path(tmp) / "src"
        target = Path(tmp) / "target"
        shutil.copytree(SOURCE, copy, ignore=shutil.ignore_patterns(
            "build", "*.egg-info", "__pycache__", ".pytest_cache", "tests"))
        run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
             "--target", target, copy], env=env)
        out = run([sys.executable, "-c", "import onnxstream; print(onnxstream.__version__); print(onnxstream.__file__)"],
                  cwd=target, env=env).split()
        if out[0] != expected.group(1):
            raise SystemExit(f"installed version {out[0]!r}, expected {expected.group(1)!r}")
        if not Path(out[1]).resolve().is_relative_to(target.resolve()):
            raise SystemExit(f"imported {out[1]}, not the copy installed in {target}")
        if os.environ.get("ONNXSTREAM_LIBRARY"):
            run([sys.executable, "-c", "import onnxstream; print(onnxstream.library_version())"], cwd=target, env=env)
    print("ok: onnxstream", expected.group(1), "installs with pip and imports from the install")


if __name__ == "__main__":
    main()

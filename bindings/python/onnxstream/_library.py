"""Finding and opening libonnxstream.

Nothing here runs at import time: ``import onnxstream`` must work on a machine without the library
(to read ``__version__``, build docs, or install), so the library is opened on first use and a
missing library is reported then, with every place that was tried.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading

ENV_VAR = "ONNXSTREAM_LIBRARY"

# The soname of the 0.x series; dlopen finds it through LD_LIBRARY_PATH and the ld.so cache even
# where find_library cannot (find_library needs ldconfig or a compiler to search).
_SONAME = "libonnxstream.so.0"


class LibraryError(OSError):
    """libonnxstream cannot be used: not found (the message lists every candidate and why it failed),
    or older than this binding."""


_lock = threading.Lock()
_cdll: ctypes.CDLL | None = None
_path: str | None = None


def _candidates() -> list[tuple[str, str]]:
    """(how it was found, what to dlopen) in the order they are tried."""
    explicit = os.environ.get(ENV_VAR)
    if explicit:
        # An explicit path is the user's decision: falling back to another copy would hide a typo.
        return [(f"${ENV_VAR}", explicit)]
    found = []
    name = ctypes.util.find_library("onnxstream")
    if name:
        found.append(("ctypes.util.find_library('onnxstream')", name))
    found.append(("soname", _SONAME))
    return found


def open_library() -> tuple[ctypes.CDLL, str]:
    """Open the library once per process and return it with the name it was opened by."""
    global _cdll, _path
    with _lock:
        if _cdll is not None:
            return _cdll, _path  # type: ignore[return-value]
        failures = []
        for how, name in _candidates():
            try:
                cdll = ctypes.CDLL(name)
            except OSError as e:
                failures.append(f"  {how}: {e}")  # dlerror() names the file
                continue
            _cdll, _path = cdll, name
            return cdll, name
        if not os.environ.get(ENV_VAR):
            failures.insert(0, f"  ${ENV_VAR}: not set")
        raise LibraryError(
            "cannot open libonnxstream; tried:\n" + "\n".join(failures) + "\n"
            f"Install the library (meson install) or set {ENV_VAR} to the path of libonnxstream.so, "
            "e.g. <build>/src/libonnxstream.so for an uninstalled build."
        )

"""Python binding of libonnxstream (ctypes + NumPy).

onnxstream runs OnnxStream model.txt models op by op, fetching each op's weights just before it
runs, so peak memory stays near one op's weights plus the live activations::

    import numpy as np
    import onnxstream

    with onnxstream.Model("yolov8n", threads=2) as model:
        outputs = model.run({"images": np.zeros((1, 3, 640, 640), np.float32)})
        print(outputs["output0"].shape)

Importing this package never opens the library: that happens on first use, from
$ONNXSTREAM_LIBRARY, else ctypes.util.find_library("onnxstream"), else libonnxstream.so.0, and a
library that cannot be used raises :class:`LibraryError` then.
"""

from __future__ import annotations

from . import _capi
from ._library import LibraryError
from .callbacks import Progress
from .convert import convert, has_convert
from .enums import (KEEP_NO_KERNELS, NO_CHUNKING, Arithmetic, Attention, DType, Flag, LogLevel, MemoryMode, ProfileFormat, Provider,
                    Quantize, WeightsFormat)
from .errors import Error, Status
from .model import Model
from .options import ModelOptions
from .pack import pack_weights
from .profile import OpProfile, Roofline, measure_roofline
from .stats import MemoryStats, RunStats
from .tensors import TensorInfo
from .weights import WeightRequest

# The version of this package; it targets the C API of libonnxstream 0.9 and accepts later 0.x
# libraries (fields and statuses are only ever appended). pyproject.toml reads it from here.
__version__ = "0.26.0"


def library_version() -> str:
    """The runtime library's version, "MAJOR.MINOR.PATCH" (opens the library)."""
    return _capi.api().version_string().decode()


def library_path() -> str:
    """The name or path the library was opened by (opens the library)."""
    return _capi.api().path


def kernel_library() -> str:
    """The kernel library the runtime was built against, e.g. "XNNPACK 2022-02 API (create, setup)"."""
    return _capi.api().kernel_library().decode()


__all__ = [
    "Arithmetic", "Attention", "DType", "Error", "Flag", "LibraryError", "LogLevel", "MemoryMode",
    "MemoryStats", "Model", "ModelOptions", "KEEP_NO_KERNELS", "NO_CHUNKING", "OpProfile", "ProfileFormat", "Progress", "Provider",
    "Quantize", "Roofline", "RunStats", "Status", "TensorInfo", "WeightRequest", "WeightsFormat", "__version__",
    "convert", "has_convert", "kernel_library", "library_path", "library_version", "measure_roofline",
    "pack_weights",
]

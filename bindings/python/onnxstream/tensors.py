"""NumPy arrays in and out of the library.

Inputs: the library copies pushed data during the call, so any contiguous array can be pushed
directly; other arrays are made contiguous first. Values are never converted between dtypes: a
float64 array is an error, not a silent float32 cast.

Outputs are always copies. The library's views stay valid only until the next run, load or close of
the model; a NumPy view of them could outlive that and read freed memory, which Python code must never
be able to do.
"""

from __future__ import annotations

import ctypes
from typing import NamedTuple, Tuple

import numpy as np

from . import _capi
from .enums import DType
from .errors import Error, Status, decode, invalid_argument

_TO_NUMPY = {
    DType.FLOAT32: np.dtype(np.float32),
    DType.FLOAT16: np.dtype(np.float16),
    DType.INT64: np.dtype(np.int64),
    DType.UINT8: np.dtype(np.uint8),
    DType.INT8: np.dtype(np.int8),
    DType.INT32: np.dtype(np.int32),
    DType.BOOL: np.dtype(np.bool_),
    DType.FLOAT64: np.dtype(np.float64),
    DType.INT16: np.dtype(np.int16),
    DType.UINT16: np.dtype(np.uint16),
    DType.UINT32: np.dtype(np.uint32),
    DType.UINT64: np.dtype(np.uint64),
    DType.BFLOAT16: np.dtype(np.uint16),  # bit patterns
    DType.FLOAT8E4M3FN: np.dtype(np.uint8),
    DType.FLOAT8E4M3FNUZ: np.dtype(np.uint8),
    DType.FLOAT8E5M2: np.dtype(np.uint8),
    DType.FLOAT8E5M2FNUZ: np.dtype(np.uint8),
    DType.INT4: np.dtype(np.int8),  # one value per byte
    DType.UINT4: np.dtype(np.uint8),
}
# A uint16 (uint8, int8) array is uint16 (uint8, int8) unless the caller says bfloat16 (a float8 type, uint4,
# int4).
_BIT_PATTERN_TYPES = (DType.BFLOAT16, DType.FLOAT8E4M3FN, DType.FLOAT8E4M3FNUZ, DType.FLOAT8E5M2, DType.FLOAT8E5M2FNUZ,
                      DType.INT4, DType.UINT4)
_FROM_NUMPY = {v: k for k, v in _TO_NUMPY.items() if k not in _BIT_PATTERN_TYPES}


class TensorInfo(NamedTuple):
    """A graph input as model.txt declares it (dtype: see Model.inputs)."""

    name: str
    shape: Tuple[int, ...]
    dtype: DType


def numpy_dtype(dtype: DType) -> np.dtype:
    """The NumPy dtype of an onnxstream dtype."""
    try:
        return _TO_NUMPY[DType(dtype)]
    except KeyError:
        raise Error(Status.UNSUPPORTED, f"dtype {int(dtype)} has no NumPy equivalent in this binding") from None


def onnxstream_dtype(dtype) -> DType:
    """The onnxstream dtype of a NumPy dtype (byte order ignored: callers make arrays native first)."""
    d = np.dtype(dtype)
    found = _FROM_NUMPY.get(d.newbyteorder("="))
    if found is None:
        supported = ", ".join(str(t) for t in _TO_NUMPY.values())
        raise invalid_argument(f"dtype {d} is not supported (supported: {supported}; convert with astype)")
    return found


def prepare_input(name: str, value) -> tuple[np.ndarray, DType]:
    """A C-contiguous, native-byte-order array of a supported dtype, ready to push."""
    if isinstance(value, np.ndarray):
        array = value
    else:
        try:
            array = np.asarray(value)
        except Exception as e:  # arbitrary objects: report them as what they are, an argument error
            raise invalid_argument(f"input {name!r}: cannot make an array of {type(value).__name__}: {e}") from e
    if array.dtype.hasobject:
        raise invalid_argument(f"input {name!r}: an array of Python objects cannot be pushed")
    dtype = onnxstream_dtype(array.dtype)
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    return np.ascontiguousarray(array), dtype


def shape_array(shape) -> ctypes.Array:
    """An int64_t[] for a shape; never zero-length, so the pointer is valid even for rank 0."""
    dims = [int(d) for d in shape]
    return (ctypes.c_int64 * max(1, len(dims)))(*dims)


def view_shape(view) -> Tuple[int, ...]:
    return tuple(view.shape[i] for i in range(view.rank)) if view.rank else ()


def copy_view(view: _capi.TensorView) -> np.ndarray:
    """A new array owning a copy of the view's data."""
    shape = view_shape(view)
    out = np.empty(shape, dtype=numpy_dtype(view.dtype))
    if out.nbytes != view.byte_size:
        raise Error(Status.INTERNAL, f"output {decode(view.name)!r}: {view.byte_size} bytes for shape {shape}")
    if view.byte_size:
        ctypes.memmove(out.ctypes.data, view.data, view.byte_size)
    return out

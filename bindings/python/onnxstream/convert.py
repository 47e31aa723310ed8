"""ONNX to OnnxStream conversion (onnxstream_convert_onnx)."""

from __future__ import annotations

import ctypes
import numbers
from collections.abc import Mapping
from typing import Callable, Iterable, Optional, Union

from . import _capi, _registry, callbacks
from .enums import Quantize, WeightsFormat
from .errors import Error, Status, decode, invalid_argument
from .options import PathLike, c_enum, c_path, c_string


def has_convert() -> bool:
    """Whether the library was built with the ONNX importer (libonnx); without it convert() raises."""
    return _capi.api().convert_onnx is not None


def _string_array(name: str, items: Iterable) -> ctypes.Array:
    """A NULL-terminated const char *const[] (the array holds the bytes objects alive)."""
    if isinstance(items, (str, bytes)):
        raise invalid_argument(f"{name} must be a list of strings, not a single string")
    encoded = [c_string(name, s) for s in items]
    return (ctypes.c_char_p * (len(encoded) + 1))(*encoded, None)


def _shape_strings(input_shapes) -> list:
    """{"sample": (1, 4, 64, 64)} or ["sample=1,4,64,64"] -> ["sample=1,4,64,64"]."""
    if not isinstance(input_shapes, Mapping):
        return list(input_shapes)
    result = []
    for name, shape in input_shapes.items():
        try:
            dims = ",".join(str(int(d)) for d in shape)
        except (TypeError, ValueError):
            raise invalid_argument(f"input_shapes[{name!r}] must be a sequence of integers, not {shape!r}") from None
        result.append(f"{name}={dims}")
    return result


def _value_strings(input_values) -> list:
    """{"sr": [16000]} or ["sr=16000"] -> ["sr=16000"]; floats keep every digit (repr)."""
    if not isinstance(input_values, Mapping):
        return list(input_values)
    result = []
    for name, values in input_values.items():
        try:
            text = ",".join(str(int(v)) if isinstance(v, numbers.Integral) else repr(float(v)) for v in values)
        except (TypeError, ValueError):
            raise invalid_argument(f"input_values[{name!r}] must be a sequence of numbers, not {values!r}") from None
        result.append(f"{name}={text}")
    return result


def convert(onnx_path: PathLike, out_dir: PathLike, *, fp16: bool = False,
            keep_fp32: Optional[Iterable[str]] = None, keep_fp32_list: Optional[str] = None,
            input_shapes: Union[Mapping, Iterable[str], None] = None,
            quantize: Union[Quantize, int, str] = Quantize.NONE,
            calibration_inputs: Optional[PathLike] = None,
            report: Optional[Callable[[object, str], None]] = None,
            weights: Union[WeightsFormat, int, str] = WeightsFormat.FILES,
            input_values: Union[Mapping, Iterable[str], None] = None,
            resizable: Union[Mapping, Iterable[str], None] = None) -> PathLike:
    """Convert an ONNX model into an OnnxStream model folder (model.txt plus its weights).

    Mirrors onnxstream_convert_options_t:

    - ``fp16``: store float32 weights as float16.
    - ``keep_fp32``: fnmatch patterns of weights to keep float32 under fp16 (``["*norm*"]``);
      ``keep_fp32_list``: the same as one ``;``-separated string. Both apply.
    - ``input_shapes``: fixed shapes for inputs with symbolic dimensions, as a mapping
      (``{"sample": (1, 4, 64, 64)}``) or as ``"NAME=d0,d1,..."`` strings.
    - ``quantize``: ``Quantize.NONE``, ``W8``, ``W8A8`` or ``W4`` (names accepted: ``"w8"``, ``"w4"``).
    - ``calibration_inputs``: for W8A8, a folder with one subfolder per calibration run holding one
      NAME.npy per graph input.
    - ``report(level, message)``: the conversion report (INFO) and each warning (WARNING), called on
      this thread; its exceptions go to ``sys.unraisablehook``.
    - ``weights``: ``WeightsFormat.FILES`` (``"files"``, one .bin file per weight) or ``SAFETENSORS``
      (``"safetensors"``, one model.safetensors file holding them all).
    - ``input_values``: inputs pinned to values at conversion, as a mapping (``{"sr": [16000]}``) or
      as ``"NAME=v0,v1,..."`` strings; each becomes a constant, and an If that depends on it keeps only
      the branch taken.
    - ``resizable`` (library 0.12 and later): a second shape for inputs, like ``input_shapes``
      (``{"sample": (1, 4, 96, 80)}``); the model is written for any size following the same rules, each
      dimension that differs becoming ``?`` in model.txt.

    ``out_dir`` must not exist (or be empty); a failed conversion leaves nothing behind. Returns
    ``out_dir``. Raises :class:`Error` (UNSUPPORTED when the library has no ONNX importer).
    """
    api = _capi.api()
    if api.convert_onnx is None:
        raise Error(Status.UNSUPPORTED, f"{api.path} was built without the ONNX importer "
                                        "(-Donnx_import=disabled): onnxstream.convert is not available")
    src = c_path("onnx_path", onnx_path)
    dst = c_path("out_dir", out_dir)
    o = _capi.ConvertOptions.from_buffer_copy(api.convert_defaults)
    o.fp16 = 1 if fp16 else 0
    keep = []  # ctypes keeps pointers only: the arrays must outlive the call
    if keep_fp32 is not None:
        keep.append(_string_array("keep_fp32", keep_fp32))
        o.keep_fp32 = ctypes.cast(keep[-1], ctypes.POINTER(ctypes.c_char_p))
    if keep_fp32_list is not None:
        o.keep_fp32_list = c_string("keep_fp32_list", keep_fp32_list)
    if input_shapes is not None:
        keep.append(_string_array("input_shapes", _shape_strings(input_shapes)))
        o.input_shapes = ctypes.cast(keep[-1], ctypes.POINTER(ctypes.c_char_p))
    o.quantize = c_enum("quantize", Quantize, quantize)
    if calibration_inputs is not None:
        o.calibration_inputs = c_path("calibration_inputs", calibration_inputs)
    o.weights_format = c_enum("weights", WeightsFormat, weights)
    if input_values is not None:
        keep.append(_string_array("input_values", _value_strings(input_values)))
        o.input_values = ctypes.cast(keep[-1], ctypes.POINTER(ctypes.c_char_p))
    if resizable is not None:
        keep.append(_string_array("resizable", _shape_strings(resizable)))
        o.resizable_shapes = ctypes.cast(keep[-1], ctypes.POINTER(ctypes.c_char_p))
    key = None
    if report is not None:
        key = _registry.register(callbacks.LogState(report))
        o.report_fn, o.report_user_data = callbacks.LOG, key
    try:
        status = api.convert_onnx(src, dst, ctypes.byref(o))
        if status:
            raise Error(status, decode(api.last_error()))
    finally:
        _registry.unregister(key)
        del keep
    return out_dir

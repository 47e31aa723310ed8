"""Hand-written ctypes mirror of include/onnxstream.h (structs, callback types, prototypes).

tests/test_layout.py compiles a C program against the header and compares every struct size and
field offset with the classes below, so this file cannot drift silently when the header changes.
"""

from __future__ import annotations

import ctypes
import threading
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char_p,
    c_double,
    c_float,
    c_int,
    c_int32,
    c_int64,
    c_size_t,
    c_uint32,
    c_uint64,
    c_void_p,
)

from ._library import LibraryError, open_library

# The header this file mirrors: ONNXSTREAM_VERSION of include/onnxstream.h.
HEADER_VERSION = 2600

# C enums are int-sized (the library's own c_enum() static_asserts it).
c_status = c_int
c_dtype = c_int
c_profile_format = c_int


class ModelOptions(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("threads", c_int32),
        ("provider", c_int32),
        ("flags", c_uint32),
        ("prefetch_bytes", c_uint64),
        # Since 0.2:
        ("memory_mode", c_int32),
        ("attention", c_int32),
        ("attention_slices", c_int32),
        ("reserved0", c_int32),
        ("weight_chunk_bytes", c_uint64),
        ("cache_path", c_char_p),
        # Since 0.4:
        ("max_bytes", c_uint64),
        ("arithmetic", c_int32),
        # Since 0.20:
        ("kept_kernel_bytes", c_uint64),
    ]


class WeightRequest(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("file", c_char_p),
        ("dtype", c_dtype),
        ("rank", c_size_t),
        ("shape", POINTER(c_int64)),
        ("byte_size", c_size_t),
        # A raw pointer, not c_char_p: the binding writes into it, ctypes would only read a copy.
        ("error_message", c_void_p),
        ("error_message_capacity", c_size_t),
        # Since 0.4:
        ("bytes_produced", POINTER(c_size_t)),
    ]


READ_FN = CFUNCTYPE(c_status, c_void_p, POINTER(WeightRequest), c_void_p)
ACQUIRE_FN = CFUNCTYPE(c_status, c_void_p, POINTER(WeightRequest), POINTER(c_void_p), POINTER(c_void_p))
RELEASE_FN = CFUNCTYPE(None, c_void_p, c_void_p)
PREFETCH_FN = CFUNCTYPE(None, c_void_p, POINTER(WeightRequest))
DESTROY_FN = CFUNCTYPE(None, c_void_p)


class WeightsProvider(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("read", READ_FN),
        ("acquire", ACQUIRE_FN),
        ("release", RELEASE_FN),
        ("prefetch", PREFETCH_FN),
        ("destroy", DESTROY_FN),
    ]


class Progress(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("op_index", c_size_t),
        ("op_count", c_size_t),
        ("op_name", c_char_p),
        ("op_type", c_char_p),
        ("elapsed_us", c_uint64),
        ("current_bytes", c_uint64),
        ("peak_bytes", c_uint64),
    ]


PROGRESS_FN = CFUNCTYPE(c_int, c_void_p, POINTER(Progress))
LOG_FN = CFUNCTYPE(None, c_void_p, c_int, c_char_p)


class TensorView(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("name", c_char_p),
        ("dtype", c_dtype),
        ("rank", c_size_t),
        ("shape", POINTER(c_int64)),
        ("data", c_void_p),
        ("byte_size", c_size_t),
    ]


class MemoryStats(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("current_bytes", c_uint64),
        ("peak_bytes", c_uint64),
    ]


class RunStats(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("run_us", c_uint64),
        ("weight_bytes_read", c_uint64),
        ("weight_read_us", c_uint64),
        ("weight_wait_us", c_uint64),
        # Since 0.3:
        ("layout_transposes", c_uint64),
        # Since 0.4:
        ("fp16_ops", c_uint64),
        ("fp16_fallbacks", c_uint64),
        ("arithmetic", c_int32),
        # Since 0.5:
        ("weight_bytes_copied", c_uint64),
        # Since 0.9:
        ("int8_ops", c_uint64),
        # Since 0.15:
        ("packed_weights_mapped", c_uint64),
        ("packed_weights_stored", c_uint64),
        # Since 0.20:
        ("kept_kernels", c_uint64),
        ("kept_kernel_bytes", c_uint64),
    ]


class OpProfile(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("op_index", c_size_t),
        ("line", c_size_t),
        ("op_name", c_char_p),
        ("op_type", c_char_p),
        ("inputs", c_char_p),
        ("outputs", c_char_p),
        ("start_ns", c_uint64),
        ("duration_ns", c_uint64),
        ("weight_wait_ns", c_uint64),
        ("kernel_prepare_ns", c_uint64),
        ("flops", c_uint64),
        ("weight_bytes", c_uint64),
        ("activation_bytes", c_uint64),
        ("memory_bytes", c_uint64),
    ]


class Roofline(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("flops_per_s", c_double),
        ("bytes_per_s", c_double),
    ]


class ConvertOptions(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("fp16", c_int32),
        ("keep_fp32", POINTER(c_char_p)),
        ("keep_fp32_list", c_char_p),
        ("input_shapes", POINTER(c_char_p)),
        ("report_fn", LOG_FN),
        ("report_user_data", c_void_p),
        ("quantize", c_int32),
        # Since 0.3:
        ("calibration_inputs", c_char_p),
        # Since 0.7:
        ("weights_format", c_int32),
        ("input_values", POINTER(c_char_p)),
        # Since 0.12:
        ("resizable_shapes", POINTER(c_char_p)),
    ]


def new_struct(cls):
    """An instance of one of the output structs above with struct_size set, as the header asks."""
    s = cls()
    s.struct_size = ctypes.sizeof(cls)
    return s


_M = c_void_p  # onnxstream_model_t *

# name: (restype, argtypes). Functions that may be missing from a build are listed in _OPTIONAL.
_PROTOTYPES = {
    "onnxstream_version": (c_uint32, []),
    "onnxstream_version_string": (c_char_p, []),
    "onnxstream_kernel_library": (c_char_p, []),
    "onnxstream_status_name": (c_char_p, [c_status]),
    "onnxstream_dtype_name": (c_char_p, [c_dtype]),
    "onnxstream_dtype_size": (c_size_t, [c_dtype]),
    "onnxstream_last_error": (c_char_p, []),
    "onnxstream_model_options_init": (None, [c_void_p]),
    "onnxstream_model_create": (c_status, [POINTER(ModelOptions), POINTER(c_void_p)]),
    "onnxstream_model_destroy": (None, [_M]),
    "onnxstream_model_last_error": (c_char_p, [_M]),
    "onnxstream_model_load": (c_status, [_M, c_char_p]),
    "onnxstream_model_load_string": (c_status, [_M, c_char_p, c_char_p]),
    "onnxstream_model_add_output": (c_status, [_M, c_char_p]),
    "onnxstream_model_add_lora": (c_status, [_M, c_char_p, c_float, c_char_p, POINTER(c_size_t)]),
    "onnxstream_model_set_max_bytes": (c_status, [_M, c_uint64]),
    "onnxstream_model_read_range_data": (c_status, [_M, c_char_p]),
    "onnxstream_model_write_range_data": (c_status, [_M, c_char_p]),
    "onnxstream_model_set_calibrate": (c_status, [_M, c_int32]),
    "onnxstream_model_set_weights_provider": (c_status, [_M, POINTER(WeightsProvider), c_void_p]),
    "onnxstream_model_push_tensor": (
        c_status, [_M, c_char_p, c_dtype, c_size_t, POINTER(c_int64), c_void_p, c_size_t]),
    "onnxstream_model_set_progress_callback": (c_status, [_M, PROGRESS_FN, c_void_p]),
    "onnxstream_model_set_log_callback": (c_status, [_M, LOG_FN, c_void_p, c_int]),
    "onnxstream_model_run": (c_status, [_M]),
    "onnxstream_model_input_count": (c_size_t, [_M]),
    "onnxstream_model_get_input": (c_status, [_M, c_size_t, POINTER(TensorView)]),
    "onnxstream_model_output_count": (c_size_t, [_M]),
    "onnxstream_model_get_output": (c_status, [_M, c_size_t, POINTER(TensorView)]),
    "onnxstream_model_get_output_by_name": (c_status, [_M, c_char_p, POINTER(TensorView)]),
    "onnxstream_model_memory_stats": (c_status, [_M, POINTER(MemoryStats), c_int]),
    "onnxstream_model_run_stats": (c_status, [_M, POINTER(RunStats)]),
    "onnxstream_model_profile_op_count": (c_size_t, [_M]),
    "onnxstream_model_get_op_profile": (c_status, [_M, c_size_t, POINTER(OpProfile)]),
    # text as a void *: read with its length (ctypes.string_at), not up to the first NUL as c_char_p would.
    "onnxstream_model_render_profile": (
        c_status, [_M, c_profile_format, POINTER(Roofline), POINTER(c_void_p), POINTER(c_size_t)]),
    "onnxstream_measure_roofline": (c_status, [c_int32, POINTER(Roofline)]),
    "onnxstream_convert_options_init": (None, [c_void_p]),
    "onnxstream_convert_onnx": (c_status, [c_char_p, c_char_p, POINTER(ConvertOptions)]),
    "onnxstream_pack_weights": (c_status, [c_char_p, c_int32]),
}

# A library built with -Donnx_import=disabled has no converter; onnxstream.convert reports that.
_OPTIONAL = {"onnxstream_convert_options_init", "onnxstream_convert_onnx"}


class _API:
    """The opened library with typed functions, plus the defaults its *_init functions produce."""

    def __init__(self, cdll: ctypes.CDLL, path: str):
        self.path = path
        missing = []
        for name, (restype, argtypes) in _PROTOTYPES.items():
            try:
                fn = getattr(cdll, name)
            except AttributeError:
                if name not in _OPTIONAL:
                    missing.append(name)
                setattr(self, name[len("onnxstream_"):], None)
                continue
            fn.restype, fn.argtypes = restype, argtypes
            setattr(self, name[len("onnxstream_"):], fn)

        def no_symbol(name):
            return LibraryError(f"{path} has no symbol {name}: it is not a libonnxstream this binding can use")

        for name in ("onnxstream_version", "onnxstream_version_string"):
            if name in missing:
                raise no_symbol(name)
        # An older library lacks the newer functions: say which version it is rather than which symbol.
        self.version = int(self.version())
        if self.version // 10000 != HEADER_VERSION // 10000 or self.version < HEADER_VERSION:
            raise LibraryError(
                f"{path} is libonnxstream {self.version_string().decode()}, but this binding needs "
                f"{HEADER_VERSION // 10000}.{HEADER_VERSION // 100 % 100}.x or a later minor version")
        if missing:
            raise no_symbol(missing[0])
        self.model_defaults = _defaults(self.model_options_init, ModelOptions, path)
        self.convert_defaults = (
            _defaults(self.convert_options_init, ConvertOptions, path) if self.convert_options_init else None)


def _defaults(init, cls, path):
    """Run a *_init function and return its result as cls.

    init writes sizeof(the library's struct), which is larger than ours when the library is newer
    (fields are appended over versions): it gets a generous scratch buffer, never cls itself. Our
    struct_size then tells the library to use its defaults for the fields this binding does not know.
    """
    scratch = (ctypes.c_ubyte * 4096)()
    init(ctypes.addressof(scratch))
    lib_size = c_uint32.from_buffer(scratch).value
    ours = ctypes.sizeof(cls)
    if lib_size < ours or lib_size > len(scratch):
        raise LibraryError(
            f"{path}: {cls.__name__} is {lib_size} bytes in the library but {ours} in this binding "
            "(header and library do not match)")
    value = cls.from_buffer_copy(bytes(scratch[:ours]))
    value.struct_size = ours
    return value


_lock = threading.Lock()
_api: _API | None = None


def api() -> _API:
    """The library, opened and checked on first use (raises LibraryError when it cannot be used)."""
    global _api
    with _lock:
        if _api is None:
            cdll, path = open_library()
            _api = _API(cdll, path)
        return _api

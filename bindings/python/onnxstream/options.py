"""Model options (onnxstream_model_options_t) and the argument conversions shared by the modules.

ctypes silently wraps integers that do not fit a C field (c_int32(2**32 + 2) is 2), so every value
is range-checked here and a bad one raises :class:`onnxstream.Error` (INVALID_ARGUMENT) instead.
"""

from __future__ import annotations

import dataclasses
import enum
import operator
import os
from typing import Optional, Union

from . import _capi
from .enums import Arithmetic, Attention, Flag, MemoryMode, Provider
from .errors import invalid_argument

_INT32 = (-(1 << 31), (1 << 31) - 1)
_UINT32 = (0, (1 << 32) - 1)
_UINT64 = (0, (1 << 64) - 1)

PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]


def c_int(name: str, value, bounds=_INT32) -> int:
    """value as a Python int within bounds (inclusive)."""
    if isinstance(value, bool):
        raise invalid_argument(f"{name} must be an integer, not a bool")
    try:
        v = operator.index(value)
    except TypeError:
        raise invalid_argument(f"{name} must be an integer, not {type(value).__name__}") from None
    if not bounds[0] <= v <= bounds[1]:
        raise invalid_argument(f"{name} is {v}, outside [{bounds[0]}, {bounds[1]}]")
    return v


def c_enum(name: str, cls: type[enum.IntEnum], value) -> int:
    """An enum member, its name ("max_speed", case-insensitive, '-' for '_') or a plain int.

    Unknown ints are passed through: the library rejects them with a message naming the valid values.
    """
    if isinstance(value, str):
        try:
            return int(cls[value.strip().upper().replace("-", "_")])
        except KeyError:
            names = ", ".join(m.name.lower() for m in cls)
            raise invalid_argument(f"{name} {value!r} is not one of {names}") from None
    return c_int(name, value)


def c_string(name: str, value: str | bytes) -> bytes:
    """UTF-8 bytes for a char * argument. A NUL byte would silently cut the C string short."""
    if isinstance(value, str):
        value = value.encode("utf-8")
    elif not isinstance(value, bytes):
        raise invalid_argument(f"{name} must be str or bytes, not {type(value).__name__}")
    if b"\0" in value:
        raise invalid_argument(f"{name} {value!r} contains a NUL byte")
    return value


def c_path(name: str, value: PathLike) -> bytes:
    """A file system path as the bytes the OS uses (os.fsencode), NUL-checked."""
    try:
        raw = os.fsencode(value)
    except TypeError:
        raise invalid_argument(f"{name} must be a path (str, bytes or os.PathLike), not {type(value).__name__}") from None
    return c_string(name, raw)


@dataclasses.dataclass(frozen=True)
class ModelOptions:
    """Every field of onnxstream_model_options_t. ``None`` keeps the library's default.

    ``reserved0`` is not exposed: the header requires it to be 0. ``cache_path`` is copied by the
    library, so the path object need not outlive the model.
    """

    threads: Optional[int] = None  #: worker threads; 0 = one per core (default)
    provider: Union[Provider, int, str, None] = None  #: built-in weights source (default AUTO)
    flags: Union[Flag, int, None] = None  #: Flag bits (default 0)
    prefetch_bytes: Optional[int] = None  #: read-ahead budget of PREFETCH; 0 = from the memory mode
    memory_mode: Union[MemoryMode, int, str, None] = None  #: default BALANCED
    attention: Union[Attention, int, str, None] = None  #: default AUTO
    attention_slices: Optional[int] = None  #: SLICED: number of Q parts; 0 = from the memory mode
    #: stream weights bigger than this in chunks; 0 = from the memory mode; NO_CHUNKING = never
    weight_chunk_bytes: Optional[int] = None
    cache_path: Optional[PathLike] = None  #: persistent prepared-weights cache file (None = no cache)
    #: budget of tracked tensor memory in bytes; 0 = no limit (see Model.set_max_bytes)
    max_bytes: Optional[int] = None
    arithmetic: Union[Arithmetic, int, str, None] = None  #: default AUTO
    #: memory for prepared kernels kept between runs; 0 = from the memory mode (balanced 24 MiB);
    #: KEEP_NO_KERNELS = none
    kept_kernel_bytes: Optional[int] = None

    def to_c(self, defaults: _capi.ModelOptions) -> _capi.ModelOptions:
        """The C struct: the library's defaults with the fields that are not None replaced."""
        o = _capi.ModelOptions.from_buffer_copy(defaults)
        if self.threads is not None:
            o.threads = c_int("threads", self.threads)
        if self.provider is not None:
            o.provider = c_enum("provider", Provider, self.provider)
        if self.flags is not None:
            o.flags = c_int("flags", self.flags, _UINT32)
        if self.prefetch_bytes is not None:
            o.prefetch_bytes = c_int("prefetch_bytes", self.prefetch_bytes, _UINT64)
        if self.memory_mode is not None:
            o.memory_mode = c_enum("memory_mode", MemoryMode, self.memory_mode)
        if self.attention is not None:
            o.attention = c_enum("attention", Attention, self.attention)
        if self.attention_slices is not None:
            o.attention_slices = c_int("attention_slices", self.attention_slices)
        if self.weight_chunk_bytes is not None:
            o.weight_chunk_bytes = c_int("weight_chunk_bytes", self.weight_chunk_bytes, _UINT64)
        if self.cache_path is not None:
            # Assigning bytes to a c_char_p field keeps them referenced by the struct until it dies.
            o.cache_path = c_path("cache_path", self.cache_path)
        if self.max_bytes is not None:
            o.max_bytes = c_int("max_bytes", self.max_bytes, _UINT64)
        if self.arithmetic is not None:
            o.arithmetic = c_enum("arithmetic", Arithmetic, self.arithmetic)
        if self.kept_kernel_bytes is not None:
            o.kept_kernel_bytes = c_int("kept_kernel_bytes", self.kept_kernel_bytes, _UINT64)
        return o


UINT64 = _UINT64

"""The header's enums and flags. Values are fixed by the C API."""

from __future__ import annotations

import enum


class AppendOnlyEnum(enum.IntEnum):
    """Base of the C API's enums that later versions append to (dtypes, statuses).

    A value from a newer library becomes a member named UNKNOWN_<value> instead of a ValueError: a weight
    request with a new dtype must still reach the provider (which may only need byte_size), and an error
    with a new status must still be raised with its message.
    """

    @classmethod
    def _missing_(cls, value):
        if not isinstance(value, int) or isinstance(value, bool):
            return None
        member = int.__new__(cls, value)
        member._name_ = f"UNKNOWN_{value}"
        member._value_ = value
        return member


class DType(AppendOnlyEnum):
    """onnxstream_dtype_t: element types of tensors and weights."""

    FLOAT32 = 1
    FLOAT16 = 2
    INT64 = 3
    UINT8 = 4
    INT8 = 5
    INT32 = 6
    BOOL = 7  #: one byte per element, 0 or 1
    FLOAT64 = 8  #: since 0.13
    INT16 = 9  #: since 0.13
    UINT16 = 10  #: since 0.13
    UINT32 = 11  #: since 0.13
    UINT64 = 12  #: since 0.13
    BFLOAT16 = 13  #: since 0.13; NumPy has no bfloat16: arrays of it are uint16 bit patterns
    FLOAT8E4M3FN = 14  #: since 0.14; NumPy has no float8: arrays of the float8 types are uint8 bit patterns
    FLOAT8E4M3FNUZ = 15  #: since 0.14
    FLOAT8E5M2 = 16  #: since 0.14
    FLOAT8E5M2FNUZ = 17  #: since 0.14
    INT4 = 18  #: since 0.14; one value per byte: arrays of it are int8
    UINT4 = 19  #: since 0.14; one value per byte: arrays of it are uint8


class Provider(enum.IntEnum):
    """onnxstream_provider_kind_t: the built-in weights source used when no Python provider is set."""

    AUTO = -1  #: default: chosen by the memory mode (min and balanced: NOCACHE, max-speed: RAM)
    NOCACHE = 0  #: read each weight file when its op runs, free it after
    PREFETCH = 1  #: like NOCACHE, but a background thread reads ahead
    MMAP = 2  #: map weight files; pages are file-backed and shared
    RAM = 3  #: read once, keep every weight and prepared kernel in memory for later runs


class MemoryMode(enum.IntEnum):
    """onnxstream_memory_mode_t: how much memory a run may use to go faster."""

    BALANCED = 0  #: default: weights read per op in 4 MiB chunks, flash attention, 32 MiB buffer reuse
    MIN = 1  #: smallest working set (a 512 MB board)
    MAX_SPEED = 2  #: keep every weight and prepared kernel in RAM between runs


class Attention(enum.IntEnum):
    """onnxstream_attention_t: how ScaledDotProductAttention is computed."""

    AUTO = 0  #: the fastest kind that fits the memory mode's budget
    FULL = 1  #: whole score matrix per head
    SLICED = 2  #: Q split into row parts (attention_slices)
    FLASH = 3  #: online softmax over key blocks, bounded score tiles


class Arithmetic(enum.IntEnum):
    """onnxstream_arithmetic_t: how Conv and MatMul/Gemm compute on float16 activations."""

    AUTO = 0  #: FP16 where the CPU has native float16 arithmetic and the model float16 weights
    FP32 = 1  #: widen float16 to float32, compute, narrow the result
    FP16 = 2  #: XNNPACK's float16 kernels (falls back to float32 per op where there are none)


class LogLevel(enum.IntEnum):
    """onnxstream_log_level_t."""

    DEBUG = 0
    INFO = 1
    WARNING = 2
    ERROR = 3


class Flag(enum.IntFlag):
    """ONNXSTREAM_FLAG_* bits of the ``flags`` option."""

    NONE = 0
    KEEP_ALL_OUTPUTS = 0x1  #: reserved by the library; must not be set for now
    NCHW_ONLY = 0x2  #: keep every activation NCHW (no channels-last plan); for comparisons
    PROFILE = 0x4  #: record a per-op profile of every run (Model.profile, Model.render_profile)
    SPIN_WORKERS = 0x8  #: keep the pool's workers spinning between parallel sections (idle cores only)
    DEQUANTIZE_WEIGHTS = 0x10  #: compute 8-bit weights in float32 even where int8 kernels exist


class ProfileFormat(enum.IntEnum):
    """onnxstream_profile_format_t: how Model.render_profile renders a profile."""

    TRACE_JSON = 0  #: Chrome trace events: loads in Perfetto and chrome://tracing
    SUMMARY = 1  #: a text table per op type, sorted by time


class Quantize(enum.IntEnum):
    """The ``quantize`` option of :func:`onnxstream.convert`."""

    NONE = 0
    W8 = 1  #: int8 weights, one float32 scale per output channel, dequantized at run time (W8A32)
    W8A8 = 2  #: uint8 weights and activations (static W8A8); needs calibration_inputs
    #: blockwise int4 MatMul/Gemm/GEGLU weights, int8 for the rest; runs only on XNNPACK 2024 builds
    W4 = 3


class WeightsFormat(enum.IntEnum):
    """The ``weights`` option of :func:`onnxstream.convert` (ONNXSTREAM_WEIGHTS_*)."""

    FILES = 0  #: one .bin file per weight (default)
    SAFETENSORS = 1  #: one model.safetensors file holding every weight


#: ``weight_chunk_bytes`` value that never splits weights into chunks (UINT64_MAX in C).
NO_CHUNKING = (1 << 64) - 1
#: ``kept_kernel_bytes`` value that keeps no prepared kernels between runs (UINT64_MAX in C).
KEEP_NO_KERNELS = (1 << 64) - 1

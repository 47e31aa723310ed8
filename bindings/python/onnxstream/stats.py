"""Memory and run statistics (onnxstream_memory_stats_t, onnxstream_run_stats_t)."""

from __future__ import annotations

from typing import NamedTuple

from . import _capi
from .enums import Arithmetic


class MemoryStats(NamedTuple):
    """Figures of the model's tracked tensor allocator."""

    current_bytes: int  #: tensor bytes alive now (outputs of the last run, pushed inputs, caches)
    peak_bytes: int  #: high-water mark since the last reset


class RunStats(NamedTuple):
    """Figures of the last successful run (zeros before one)."""

    run_us: int  #: wall time of the run
    weight_bytes_read: int  #: bytes the weights provider read during the run
    weight_read_us: int  #: time spent reading them, on any thread (prefetch reads overlap ops)
    weight_wait_us: int  #: time the run waited for weights; read_us - wait_us was hidden
    layout_transposes: int  #: NCHW <-> NHWC activation transposes done
    fp16_ops: int  #: ops that computed in float16 arithmetic
    fp16_fallbacks: int  #: ops meant for float16 that ran in float32 (no f16 kernels)
    arithmetic: Arithmetic  #: the model's resolved arithmetic: FP32 or FP16
    weight_bytes_copied: int  #: bytes written turning weights into kernel input (layout, widening, copies)
    int8_ops: int  #: ops that computed an 8-bit weight in int8 arithmetic (XNNPACK 2024 builds)
    packed_weights_mapped: int  #: since 0.15: ops whose packed weights were mapped from <cache_path>.xnnpack
    packed_weights_stored: int  #: since 0.15: ops whose packed weights this run wrote to that file
    kept_kernels: int  #: since 0.20: ops keeping prepared kernels between runs within balanced's budget
    kept_kernel_bytes: int  #: since 0.20: the memory those kept kernels hold


def memory_stats(s: _capi.MemoryStats) -> MemoryStats:
    return MemoryStats(int(s.current_bytes), int(s.peak_bytes))


def run_stats(s: _capi.RunStats) -> RunStats:
    try:
        arithmetic = Arithmetic(s.arithmetic)
    except ValueError:  # a value added by a newer library
        arithmetic = int(s.arithmetic)
    return RunStats(int(s.run_us), int(s.weight_bytes_read), int(s.weight_read_us), int(s.weight_wait_us),
                    int(s.layout_transposes), int(s.fp16_ops), int(s.fp16_fallbacks), arithmetic,
                    int(s.weight_bytes_copied), int(s.int8_ops), int(s.packed_weights_mapped),
                    int(s.packed_weights_stored), int(s.kept_kernels), int(s.kept_kernel_bytes))

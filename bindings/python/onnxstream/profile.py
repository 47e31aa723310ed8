"""Per-op profiles of runs (onnxstream_op_profile_t) and the machine's roofline (onnxstream_roofline_t).

Profiles are recorded by models created with ``flags=Flag.PROFILE``; read them with
:meth:`onnxstream.Model.profile` and :meth:`onnxstream.Model.render_profile`.
"""

from __future__ import annotations

import ctypes
from typing import NamedTuple

from . import _capi
from .errors import Error, decode, invalid_argument
from .options import c_int


class OpProfile(NamedTuple):
    """One op of the last successful profiled run. Plain Python values, copied out of the library."""

    op_index: int  #: position of the op in the run (0-based)
    line: int  #: its model.txt line (1-based)
    op_name: str  #: as written in model.txt
    op_type: str
    #: logical dtypes and shapes of its inputs, "float32[1,3,640,640], w:float16[16,3,3,3]"
    #: (w: a weight, -: an absent optional input)
    inputs: str
    outputs: str  #: the same for its outputs
    start_ns: int  #: from the start of the run
    duration_ns: int  #: including its weight fetches and kernel preparation
    weight_wait_ns: int  #: fetching its weights and reading streamed weight rows (run thread)
    kernel_prepare_ns: int  #: XNNPACK operator creation (weight packing) and setup (indirection buffers)
    #: 2 per multiply-add of matrix ops (Conv, ConvTranspose, MatMul, Gemm, Einsum, fused attention and
    #: feed-forward); 0 for the others
    flops: int
    weight_bytes: int  #: stored bytes of its weights
    activation_bytes: int  #: bytes of its activation inputs and outputs
    memory_bytes: int  #: tracked tensor bytes alive after it


class Roofline(NamedTuple):
    """A machine's measured ceilings; as ``peak`` of render_profile they add the summary's "% peak"."""

    flops_per_s: float  #: float32 matrix multiplication (XNNPACK's GEMM)
    bytes_per_s: float  #: memory bandwidth (bytes read + written by a copy much bigger than the caches)


def op_profile(p: _capi.OpProfile) -> OpProfile:
    return OpProfile(int(p.op_index), int(p.line), decode(p.op_name), decode(p.op_type), decode(p.inputs),
                     decode(p.outputs), int(p.start_ns), int(p.duration_ns), int(p.weight_wait_ns),
                     int(p.kernel_prepare_ns), int(p.flops), int(p.weight_bytes), int(p.activation_bytes),
                     int(p.memory_bytes))


def roofline_to_c(peak) -> _capi.Roofline:
    """A Roofline (or any (flops_per_s, bytes_per_s) pair of numbers) as the C struct."""
    try:
        flops, bandwidth = peak
        values = (float(flops), float(bandwidth))
    except (TypeError, ValueError):
        raise invalid_argument(f"peak must be a Roofline (flops_per_s, bytes_per_s), not {peak!r}") from None
    r = _capi.new_struct(_capi.Roofline)
    r.flops_per_s, r.bytes_per_s = values
    return r


def measure_roofline(threads: int = 0) -> Roofline:
    """Measure this machine's roofline with ``threads`` worker threads (0 = one per core): XNNPACK's
    float32 GEMM on a cache-friendly problem and a copy much bigger than the caches. Takes about a second.
    """
    n = c_int("threads", threads)
    api = _capi.api()
    r = _capi.new_struct(_capi.Roofline)
    status = api.measure_roofline(n, ctypes.byref(r))
    if status:
        raise Error(status, decode(api.last_error()))
    return Roofline(float(r.flops_per_s), float(r.bytes_per_s))


__all__ = ["OpProfile", "Roofline", "measure_roofline"]

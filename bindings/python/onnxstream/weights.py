"""Weights served by Python code (onnxstream_weights_provider_t).

A provider is either a callable ``read(request, dst)`` or an object with some of these methods:

``read(request, dst)``
    Copy the weight into ``dst``, a writable memoryview of exactly ``request.byte_size`` bytes of the
    engine's buffer (zero-copy, valid only during the call: it is released on return). Return None or
    True when ``dst`` is filled, an int to say how many bytes were produced (so ``f.readinto(dst)``
    works as is: a short read fails the fetch with both counts), or False to fail.
``lend(request)``
    Zero-copy alternative to read: return a contiguous buffer (bytes, bytearray, mmap, NumPy array)
    of exactly ``request.byte_size`` bytes, aligned to the dtype's size. The binding holds it (and a
    buffer export, so it cannot be resized or closed) until the engine releases it, after the op that
    used it. When present, read is not used.
``release(buffer)``
    Optional: called exactly once for every buffer lend returned, when the engine no longer uses it
    (or at once, if the buffer was refused).
``prefetch(request)``
    Optional hint, in execution order, that the weight will be requested soon.
``close()``
    Optional: called exactly once when the model no longer needs the provider (model closed or
    provider replaced).

A failing read or lend (returning False, or raising any exception) fails the run with
``Error(Status.CALLBACK)``; the message names the weight file and carries the exception's
``Type: text``, and the exception itself is chained as ``__cause__``. An exception never crosses into
C. prefetch, release and close cannot fail the run: their exceptions go to ``sys.unraisablehook``
(printed to stderr by default).

Calls for one model never overlap. read and lend come from the thread that runs the model.
"""

from __future__ import annotations

import ctypes
import operator
import os
from typing import NamedTuple, Tuple

import numpy as np

from . import _capi, _registry
from .enums import DType
from .errors import Status

_OK = int(Status.OK)
_CALLBACK = int(Status.CALLBACK)


class WeightRequest(NamedTuple):
    """One weight file of model.txt that the engine needs."""

    file: str  #: file name as written in model.txt (escaped, e.g. "model_2E_0_2E_conv_2E_bias.bin")
    dtype: DType  #: element type of the file's contents
    shape: Tuple[int, ...]
    byte_size: int  #: exact number of bytes expected


class ProviderState:
    """What the trampolines need of one installed provider."""

    def __init__(self, provider):
        self.provider = provider
        self.read = getattr(provider, "read", None)
        self.lend = getattr(provider, "lend", None)
        if self.read is None and self.lend is None:
            if not callable(provider):
                raise TypeError("a weights provider must be callable as read(request, dst) "
                                "or have a read(request, dst) or lend(request) method")
            self.read = provider
        self.prefetch = getattr(provider, "prefetch", None)
        self.release = getattr(provider, "release", None)
        self.close = getattr(provider, "close", None)
        self.pending: BaseException | None = None  # the first exception of the current run
        self.leases: dict[int, tuple] = {}
        self.next_token = 1

    def vtable(self) -> _capi.WeightsProvider:
        vt = _capi.new_struct(_capi.WeightsProvider)
        if self.lend is not None:
            vt.acquire, vt.release = _ACQUIRE, _RELEASE
        else:
            vt.read = _READ
        if self.prefetch is not None:
            vt.prefetch = _PREFETCH
        vt.destroy = _DESTROY
        return vt


def _request(req: _capi.WeightRequest) -> WeightRequest:
    shape = tuple(req.shape[i] for i in range(req.rank)) if req.rank else ()
    return WeightRequest(os.fsdecode(req.file or b""), DType(req.dtype), shape, int(req.byte_size))


def describe(e: BaseException) -> str:
    """``Type: message`` of an exception, even when its __str__ itself raises."""
    try:
        text = str(e)
    except Exception:
        text = "<unprintable>"
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _fail(req: _capi.WeightRequest, state, exc: BaseException | None, message: str = "") -> int:
    """Write the reason into the request's buffer (UTF-8, cut on a character boundary)."""
    try:
        if exc is not None and state is not None and state.pending is None:
            state.pending = exc
        text = message or describe(exc)
        cap = int(req.error_message_capacity)
        if req.error_message and cap > 0:
            raw = text.encode("utf-8", errors="replace")[: cap - 1]
            raw = raw.decode("utf-8", errors="ignore").encode("utf-8")
            ctypes.memmove(req.error_message, raw + b"\0", len(raw) + 1)
    except BaseException:  # noqa: BLE001 - nothing may propagate into C; the status still says why
        pass
    return _CALLBACK


def _set_produced(req: _capi.WeightRequest, produced: int) -> bool:
    if req.bytes_produced:
        req.bytes_produced[0] = produced
        return True
    return produced == req.byte_size


def _guarded(body, user_data, req_p, *args) -> int:
    """Run a status-returning callback body; whatever it raises becomes ERR_CALLBACK plus a message.

    ctypes would print an escaping exception and hand C an undefined status, possibly OK.
    """
    try:
        req = req_p.contents
    except BaseException:  # noqa: BLE001 - a NULL request: nothing to fill, the status still says why
        return _CALLBACK
    state = None
    try:
        state = _registry.lookup(user_data)
        if state is None:
            return _fail(req, None, None, "weights provider is no longer registered")
        return body(state, req, *args)
    except BaseException as e:  # noqa: BLE001 - KeyboardInterrupt too: it is re-raised after the run
        return _fail(req, state, e)


def _read_body(state, req, dst):
    n = int(req.byte_size)
    view = memoryview((ctypes.c_ubyte * n).from_address(dst)).cast("B") if n else memoryview(bytearray())
    try:
        result = state.read(_request(req), view)
    finally:
        try:
            view.release()  # the engine's buffer must not be reachable after the call
        except BufferError:
            pass
    if result is None or result is True:
        return _OK
    if result is False:
        return _fail(req, state, None, "read returned False")
    if not _set_produced(req, operator.index(result)):
        return _fail(req, state, None, f"read produced {result} bytes, expected {n}")
    return _OK


def _acquire_body(state, req, data_p, token_p):
    request = _request(req)
    buffer = state.lend(request)
    if buffer is None or buffer is False:
        return _fail(req, state, None, "lend returned " + repr(buffer))
    view = memoryview(buffer)
    problem = ""
    if not view.c_contiguous:
        problem = "lend returned a non-contiguous buffer"
    else:
        # NumPy gives the address of read-only buffers too (ctypes.from_buffer needs writable ones).
        address = np.frombuffer(view, dtype=np.uint8).ctypes.data if view.nbytes else ctypes.addressof(req)
        align = _capi.api().dtype_size(int(req.dtype)) or 1
        if view.nbytes and address % align:
            problem = f"lent buffer at {address:#x} is not aligned to {align} bytes"
    if problem:
        # Every buffer lend() returned gets its release(), whether or not the engine took it.
        view.release()
        if state.release is not None:
            state.release(buffer)
        return _fail(req, state, None, problem)
    token = state.next_token
    state.next_token += 1
    state.leases[token] = (buffer, view)
    # A wrong size is reported by the library, which then releases the token.
    _set_produced(req, view.nbytes)
    data_p[0] = address
    token_p[0] = token
    return _OK


def _read(user_data, req_p, dst):
    return _guarded(_read_body, user_data, req_p, dst)


def _acquire(user_data, req_p, data_p, token_p):
    return _guarded(_acquire_body, user_data, req_p, data_p, token_p)


def _release(user_data, token):
    state = _registry.lookup(user_data)
    if state is None:
        return
    buffer, view = state.leases.pop(token or 0, (None, None))
    if view is None:
        return
    view.release()
    if state.release is not None:
        state.release(buffer)  # an exception here goes to sys.unraisablehook


def _prefetch(user_data, req_p):
    state = _registry.lookup(user_data)
    if state is not None and state.prefetch is not None:
        state.prefetch(_request(req_p.contents))


def _destroy(user_data):
    state = _registry.unregister(user_data)
    if state is None:
        return
    for _, view in state.leases.values():
        view.release()
    state.leases.clear()
    if state.close is not None:
        state.close()


# One set of C entry points for every model: module globals live as long as the interpreter, so no
# model can outlive the function pointers it holds. Which provider is meant comes from user_data.
_READ = _capi.READ_FN(_read)
_ACQUIRE = _capi.ACQUIRE_FN(_acquire)
_RELEASE = _capi.RELEASE_FN(_release)
_PREFETCH = _capi.PREFETCH_FN(_prefetch)
_DESTROY = _capi.DESTROY_FN(_destroy)

"""Model: one onnxstream_model_t, its callbacks and its inputs and outputs."""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import threading
import weakref
from collections.abc import Mapping
from typing import Dict, List, Optional, Union

import numpy as np

from . import _capi, _registry, callbacks, tensors
from .enums import LogLevel, ProfileFormat
from .errors import Error, Status, decode, invalid_argument
from .options import UINT64, ModelOptions, PathLike, c_enum, c_int, c_path, c_string
from .profile import OpProfile, Roofline, op_profile, roofline_to_c
from .stats import MemoryStats, RunStats, memory_stats, run_stats
from .weights import ProviderState, describe


def _destroy(api, handle: int, keys: dict) -> None:
    """Release a model (run by Model.close or, for a forgotten model, by its finalizer)."""
    api.model_destroy(handle)  # calls the weights provider's destroy, which unregisters it
    for key in keys.values():  # progress and log have no destroy: the library is done with them now
        _registry.unregister(key)
    keys.clear()


def _error(api, status: int) -> Error:
    # The thread's last error, not the model's: a call refused because another thread holds the
    # model records its message for the calling thread only.
    return Error(status, decode(api.last_error()))


class Model:
    """An OnnxStream model.txt model.

    ``Model(path, threads=2, memory_mode="min")`` creates the model with the given options (every
    field of onnxstream_model_options_t, see :class:`ModelOptions`; None keeps the library default)
    and loads ``path`` (a folder containing model.txt, or a model.txt file) if given. A
    ``weights_provider`` (see :mod:`onnxstream.weights`), ``progress`` and ``log`` callbacks are
    installed before loading.

    Release it with :meth:`close` or a ``with`` block; a forgotten model is released when it is
    garbage collected. Like the C handle, a model is used by one thread at a time: a call while
    another thread is inside a call on the same model raises ``Error(Status.BAD_STATE)``.
    """

    def __init__(self, path: Optional[PathLike] = None, *, threads: Optional[int] = None,
                 provider=None, flags=None, prefetch_bytes: Optional[int] = None, memory_mode=None,
                 attention=None, attention_slices: Optional[int] = None,
                 weight_chunk_bytes: Optional[int] = None, cache_path: Optional[PathLike] = None,
                 max_bytes: Optional[int] = None, arithmetic=None, kept_kernel_bytes: Optional[int] = None,
                 options: Optional[ModelOptions] = None,
                 weights_provider=None, progress: Optional[callbacks.ProgressFn] = None,
                 log: Optional[callbacks.LogFn] = None, log_level=LogLevel.WARNING):
        self._handle: Optional[int] = None
        self._lock = threading.RLock()
        self._depth = 0  # library calls in progress on the thread holding the lock
        self._keys: dict = {}  # registry keys of the progress and log callbacks
        self._provider: Optional[ProviderState] = None
        self._progress: Optional[callbacks.ProgressState] = None
        self._log: Optional[callbacks.LogState] = None
        given = dict(threads=threads, provider=provider, flags=flags, prefetch_bytes=prefetch_bytes,
                     memory_mode=memory_mode, attention=attention, attention_slices=attention_slices,
                     weight_chunk_bytes=weight_chunk_bytes, cache_path=cache_path, max_bytes=max_bytes,
                     arithmetic=arithmetic, kept_kernel_bytes=kept_kernel_bytes)
        opts = dataclasses.replace(options or ModelOptions(), **{k: v for k, v in given.items() if v is not None})
        api = _capi.api()
        c_opts = opts.to_c(api.model_defaults)
        handle = ctypes.c_void_p()
        status = api.model_create(ctypes.byref(c_opts), ctypes.byref(handle))
        if status:
            raise _error(api, status)
        self._api = api
        self._handle = handle.value
        self._finalizer = weakref.finalize(self, _destroy, api, handle.value, self._keys)
        try:
            if weights_provider is not None:
                self.set_weights_provider(weights_provider)
            if progress is not None:
                self.set_progress_callback(progress)
            if log is not None:
                self.set_log_callback(log, log_level)
            if path is not None:
                self.load(path)
        except BaseException:
            self.close()
            raise

    @classmethod
    def from_string(cls, model_txt: Union[str, bytes], weights_dir: Optional[PathLike] = None, **kwargs) -> "Model":
        """Create a model (same keywords as the constructor) and load model.txt text held in memory.

        Weight file names are resolved against ``weights_dir``, which may be None when a
        ``weights_provider`` serves every weight.
        """
        model = cls(**kwargs)
        try:
            model.load_string(model_txt, weights_dir)
        except BaseException:
            model.close()
            raise
        return model

    # -- lifetime ---------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _use(self, what: str):
        """Hold the model for one call; refuse (as the C API does) when another thread holds it."""
        if not self._lock.acquire(blocking=False):
            raise Error(Status.BAD_STATE, f"{what}: another thread is using this model "
                                          "(a model is used by one thread at a time)")
        try:
            if self._handle is None:
                raise Error(Status.BAD_STATE, f"{what}: the model is closed")
            self._depth += 1
            try:
                yield self._handle
            finally:
                self._depth -= 1
        finally:
            self._lock.release()

    def _check(self, status: int) -> None:
        if status:
            raise _error(self._api, status)

    def close(self) -> None:
        """Destroy the model and release its callbacks (the provider's close() runs now). Idempotent."""
        if not self._lock.acquire(blocking=False):
            raise Error(Status.BAD_STATE, "close: another thread is using this model")
        try:
            if self._depth:
                raise Error(Status.BAD_STATE, "close: called from a callback of a call on this model")
            if self._handle is not None:
                self._handle = None
                self._finalizer()
                self._provider = self._progress = self._log = None
        finally:
            self._lock.release()

    @property
    def closed(self) -> bool:
        return self._handle is None

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<onnxstream.Model {'closed' if self._handle is None else hex(self._handle)}>"

    # -- loading and options ----------------------------------------------------------------------

    def load(self, path: PathLike) -> None:
        """Load a folder containing model.txt, or a model.txt file (weight files next to it)."""
        with self._use("load") as h:
            self._check(self._api.model_load(h, c_path("path", path)))

    def load_string(self, model_txt: Union[str, bytes], weights_dir: Optional[PathLike] = None) -> None:
        """Load model.txt text; weight file names are resolved against weights_dir (None: provider only)."""
        text = c_string("model_txt", model_txt)
        directory = None if weights_dir is None else c_path("weights_dir", weights_dir)
        with self._use("load_string") as h:
            self._check(self._api.model_load_string(h, text, directory))

    def add_output(self, name: str) -> None:
        """Keep a tensor (escaped or original name) as an output although later ops consume it."""
        with self._use("add_output") as h:
            self._check(self._api.model_add_output(h, c_string("name", name)))

    def add_lora(self, path: PathLike, scale: float = 1.0, key_prefix: str = "") -> int:
        """Apply a LoRA (safetensors up/down pairs) while the weights stream, from the next run on: each
        weight W it names is used as W + scale * (alpha / rank) * up . down. Takes the modules whose keys
        start with key_prefix ("" for all); returns how many it took (docs/lora.md)."""
        if not isinstance(scale, (int, float)) or isinstance(scale, bool):
            raise invalid_argument(f"add_lora: scale must be a number, not {type(scale).__name__}")
        taken = ctypes.c_size_t(0)
        with self._use("add_lora") as h:
            self._check(self._api.model_add_lora(h, c_path("path", path), float(scale),
                                                 c_string("key_prefix", key_prefix), ctypes.byref(taken)))
        return taken.value

    def set_max_bytes(self, max_bytes: int) -> None:
        """Change the budget of tracked tensor memory (0 = no limit) for the following calls."""
        n = c_int("max_bytes", max_bytes, UINT64)
        with self._use("set_max_bytes") as h:
            self._check(self._api.model_set_max_bytes(h, n))

    def read_range_data(self, path: PathLike) -> None:
        """Read activation ranges (range_data.txt) for static W8A8."""
        with self._use("read_range_data") as h:
            self._check(self._api.model_read_range_data(h, c_path("path", path)))

    def write_range_data(self, path: PathLike) -> None:
        """Write the activation ranges (while calibrating: those recorded so far), atomically."""
        with self._use("write_range_data") as h:
            self._check(self._api.model_write_range_data(h, c_path("path", path)))

    def set_calibrate(self, on: bool) -> None:
        """While on, runs compute in float and record activation ranges."""
        with self._use("set_calibrate") as h:
            self._check(self._api.model_set_calibrate(h, 1 if on else 0))

    # -- callbacks --------------------------------------------------------------------------------

    def set_weights_provider(self, provider) -> None:
        """Serve every weight from Python (see :mod:`onnxstream.weights`); replaces (and closes) the
        previous provider. The model keeps the provider until it is closed or replaced."""
        state = ProviderState(provider)
        vt = state.vtable()
        with self._use("set_weights_provider") as h:
            key = _registry.register(state)
            status = self._api.model_set_weights_provider(h, ctypes.byref(vt), key)
            if status:
                _registry.unregister(key)  # not taken: its destroy will never be called
                self._check(status)
            self._provider = state

    def set_progress_callback(self, fn: Optional[callbacks.ProgressFn]) -> None:
        """Call fn(Progress) after every op; returning False cancels the run. None removes it."""
        state = None if fn is None else callbacks.ProgressState(fn)
        with self._use("set_progress_callback") as h:
            self._swap("progress", state, lambda key: self._api.model_set_progress_callback(
                h, callbacks.PROGRESS if key else _capi.PROGRESS_FN(), key))
            self._progress = state

    def set_log_callback(self, fn: Optional[callbacks.LogFn], min_level=LogLevel.WARNING) -> None:
        """Route diagnostics at min_level and above to fn(level, message). None silences the model."""
        state = None if fn is None else callbacks.LogState(fn)
        level = c_enum("min_level", LogLevel, min_level)
        with self._use("set_log_callback") as h:
            self._swap("log", state, lambda key: self._api.model_set_log_callback(
                h, callbacks.LOG if key else _capi.LOG_FN(), key, level))
            self._log = state

    def _swap(self, slot: str, state, install) -> None:
        """Install a callback without a destroy hook; the old entry goes once the library let go of it."""
        key = _registry.register(state) if state is not None else None
        status = install(key)
        if status:
            _registry.unregister(key)
            self._check(status)
        _registry.unregister(self._keys.pop(slot, None))
        if key:
            self._keys[slot] = key

    # -- tensors and running ----------------------------------------------------------------------

    def push(self, name: str, value) -> None:
        """Set a graph input; the data is copied (non-contiguous arrays are made contiguous first).
        It stays set for later runs until pushed again."""
        with self._use("push") as h:
            self._push(h, name, value)

    def _push(self, h: int, name: str, value) -> None:
        cname = c_string("input name", name)
        array, dtype = tensors.prepare_input(name, value)
        shape = tensors.shape_array(array.shape)
        self._check(self._api.model_push_tensor(h, cname, int(dtype), array.ndim, shape,
                                                array.ctypes.data, array.nbytes))

    def run(self, inputs: Optional[Mapping] = None) -> Dict[str, np.ndarray]:
        """Push ``inputs`` (name -> array), run, and return every output by its model.txt name.

        The returned arrays are copies owned by Python: they stay valid after later runs and after
        close. On failure the model stays usable. Raises :class:`Error`: CANCELLED when the progress
        callback returned False, CALLBACK when a Python callback failed or raised (chained).
        """
        if inputs is not None and not isinstance(inputs, Mapping):
            raise TypeError(f"inputs must be a mapping of input name to array, not {type(inputs).__name__}")
        with self._use("run") as h:
            if self._depth > 1:
                raise Error(Status.BAD_STATE, "run: called from a callback of a call on this model")
            for name, value in (inputs or {}).items():
                self._push(h, name, value)
            watched = [s for s in (self._provider, self._progress) if s is not None]
            for s in watched:
                s.pending = None
            status = self._api.model_run(h)
            message = decode(self._api.last_error()) if status else ""
            self._raise_pending(status, message, watched)
            if status:
                raise Error(status, message)
            return self._outputs(h)

    def _raise_pending(self, status: int, message: str, watched) -> None:
        pending = next((s.pending for s in watched if s.pending is not None), None)
        from_progress = self._progress is not None and pending is self._progress.pending
        for s in watched:
            s.pending = None
        if pending is None or not status:
            return
        if not isinstance(pending, Exception):
            raise pending  # KeyboardInterrupt, SystemExit: the user's intent, not a model error
        if from_progress:
            raise Error(Status.CALLBACK, f"progress callback raised {describe(pending)}") from pending
        raise Error(status, message) from pending

    def _view(self, h: int, key: Union[int, str]) -> _capi.TensorView:
        view = _capi.new_struct(_capi.TensorView)
        if isinstance(key, str):
            self._check(self._api.model_get_output_by_name(h, c_string("name", key), ctypes.byref(view)))
        else:
            index = c_int("index", key, (0, (1 << 63) - 1))
            self._check(self._api.model_get_output(h, index, ctypes.byref(view)))
        return view

    def _outputs(self, h: int) -> Dict[str, np.ndarray]:
        out = {}
        for i in range(self._api.model_output_count(h)):
            view = self._view(h, i)
            out[decode(view.name)] = tensors.copy_view(view)
        return out

    def outputs(self) -> Dict[str, np.ndarray]:
        """Copies of every output of the last successful run, by model.txt (escaped) name."""
        with self._use("outputs") as h:
            return self._outputs(h)

    def output(self, key: Union[int, str]) -> np.ndarray:
        """A copy of one output of the last successful run, by index or name (escaped or original)."""
        with self._use("output") as h:
            return tensors.copy_view(self._view(h, key))

    @property
    def inputs(self) -> List[tensors.TensorInfo]:
        """The graph inputs as model.txt declares them (-1: a dimension of any size, in a model
        converted with ``resizable``). model.txt records no activation dtypes: dtype is that of the last
        pushed tensor, FLOAT32 before one is pushed."""
        with self._use("inputs") as h:
            result = []
            for i in range(self._api.model_input_count(h)):
                view = _capi.new_struct(_capi.TensorView)
                self._check(self._api.model_get_input(h, i, ctypes.byref(view)))
                result.append(tensors.TensorInfo(decode(view.name), tensors.view_shape(view),
                                                 tensors.DType(view.dtype)))
            return result

    def memory_stats(self, reset_peak: bool = False) -> MemoryStats:
        """The allocator's figures; reset_peak restarts the high-water mark from the current bytes."""
        s = _capi.new_struct(_capi.MemoryStats)
        with self._use("memory_stats") as h:
            self._check(self._api.model_memory_stats(h, ctypes.byref(s), 1 if reset_peak else 0))
        return memory_stats(s)

    def run_stats(self) -> RunStats:
        """Figures of the last successful run (zeros before one)."""
        s = _capi.new_struct(_capi.RunStats)
        with self._use("run_stats") as h:
            self._check(self._api.model_run_stats(h, ctypes.byref(s)))
        return run_stats(s)

    def profile(self) -> List[OpProfile]:
        """The per-op profile of the last successful run, in execution order: empty unless the model was
        created with ``flags=Flag.PROFILE`` and has run. The records are Python copies."""
        with self._use("profile") as h:
            result = []
            for i in range(self._api.model_profile_op_count(h)):
                p = _capi.new_struct(_capi.OpProfile)
                self._check(self._api.model_get_op_profile(h, i, ctypes.byref(p)))
                result.append(op_profile(p))
            return result

    def render_profile(self, format: Union[ProfileFormat, int, str],
                       peak: Optional[Roofline] = None) -> str:
        """The last successful run's profile as Chrome trace JSON (``ProfileFormat.TRACE_JSON``, or
        ``"trace_json"``) or a per-type summary table (``SUMMARY``). ``peak`` (a :class:`Roofline`, e.g.
        from :func:`onnxstream.measure_roofline`) adds the summary's "% peak" column. Raises
        ``Error(Status.BAD_STATE)`` when the model was created without ``Flag.PROFILE`` or has not run
        successfully yet."""
        fmt = c_enum("format", ProfileFormat, format)
        c_peak = None if peak is None else ctypes.byref(roofline_to_c(peak))
        text = ctypes.c_void_p()
        length = ctypes.c_size_t()
        with self._use("render_profile") as h:
            self._check(self._api.model_render_profile(h, fmt, c_peak, ctypes.byref(text), ctypes.byref(length)))
            # Valid until the next render, run, load or close: copied now.
            raw = ctypes.string_at(text.value, length.value) if text.value else b""
        return decode(raw)


__all__ = ["Model"]

"""Progress and log callbacks (onnxstream_progress_fn, onnxstream_log_fn).

Progress: ``fn(progress)`` is called after every op from the thread that runs the model. Return
False to cancel the run (``Error`` with ``Status.CANCELLED``); None or any other value continues.
If it raises, the run is cancelled too and ``run`` raises ``Error(Status.CALLBACK)`` chained to the
exception (a KeyboardInterrupt is re-raised as is).

Log: ``fn(level, message)`` receives the model's diagnostics. It cannot fail a call: an exception
goes to ``sys.unraisablehook`` (printed to stderr by default).
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Optional

from . import _capi, _registry
from .enums import LogLevel
from .errors import decode


class Progress(NamedTuple):
    """A finished op, reported during a run."""

    op_index: int  #: index of the op that just finished (0-based)
    op_count: int
    op_name: str  #: as written in model.txt
    op_type: str
    elapsed_us: int  #: time spent in this op, weight fetch included
    current_bytes: int  #: tensor bytes alive after the op
    peak_bytes: int  #: tensor high-water mark of this run so far


ProgressFn = Callable[[Progress], Optional[bool]]
LogFn = Callable[[LogLevel, str], None]


class ProgressState:
    def __init__(self, fn: ProgressFn):
        if not callable(fn):
            raise TypeError(f"the progress callback must be callable, not {type(fn).__name__}")
        self.fn = fn
        self.pending: BaseException | None = None  # what the callback raised during the current run


class LogState:
    def __init__(self, fn: LogFn):
        if not callable(fn):
            raise TypeError(f"the log callback must be callable, not {type(fn).__name__}")
        self.fn = fn


def _progress(user_data, p):
    state = None
    try:
        state = _registry.lookup(user_data)
        if state is None:
            return 1  # a callback nobody owns any more: stopping is the safe answer
        c = p.contents
        report = Progress(int(c.op_index), int(c.op_count), decode(c.op_name), decode(c.op_type),
                          int(c.elapsed_us), int(c.current_bytes), int(c.peak_bytes))
        return 1 if state.fn(report) is False else 0
    except BaseException as e:  # noqa: BLE001 - nothing may cross into C; the run reports it
        if state is not None and state.pending is None:
            state.pending = e
        return 1


def _level(value: int):
    try:
        return LogLevel(value)
    except ValueError:  # a level added by a newer library
        return value


def _log(user_data, level, message):
    state = _registry.lookup(user_data)
    if state is not None:
        state.fn(_level(level), decode(message))


# Module globals, so the function pointers outlive every model (see weights.py).
PROGRESS = _capi.PROGRESS_FN(_progress)
LOG = _capi.LOG_FN(_log)

"""Status codes and the exception every failing call raises."""

from __future__ import annotations

from .enums import AppendOnlyEnum


class Status(AppendOnlyEnum):
    """onnxstream_status_t. Values are fixed by the C API and only ever appended to."""

    OK = 0
    INVALID_ARGUMENT = 1  #: a bad name, shape, size, dtype or option
    INVALID_MODEL = 2  #: model.txt does not parse, or shapes/dtypes do not check
    IO = 3  #: a file is missing, unreadable, truncated or too large
    UNSUPPORTED = 4  #: an operator or attribute value the engine does not run
    OUT_OF_MEMORY = 5  #: memory ran out, or a run would pass max_bytes
    CALLBACK = 6  #: a Python callback (weights provider, progress) failed or raised
    CANCELLED = 7  #: the progress callback asked to stop
    BAD_STATE = 8  #: the call is not valid now (run before load, closed model, another thread)
    INTERNAL = 9  #: a bug in onnxstream or a kernel library


class Error(Exception):
    """A failed call: ``status`` (a :class:`Status`) and ``message`` (names the op, file or argument).

    When a Python callback caused the failure, the exception it raised is chained as ``__cause__``.
    """

    def __init__(self, status: int, message: str = ""):
        self.status = Status(status)
        self.message = message
        super().__init__(self.status, message)

    def __str__(self) -> str:
        name = f"ONNXSTREAM_ERR_{self.status.name}" if self.status != Status.OK else "ONNXSTREAM_OK"
        return f"{name}: {self.message}" if self.message else name

    def __repr__(self) -> str:
        return f"onnxstream.Error({self.status!r}, {self.message!r})"


def invalid_argument(message: str) -> Error:
    """The error for arguments rejected before they reach the library, spelled like the library's."""
    return Error(Status.INVALID_ARGUMENT, message)


def decode(raw: bytes | None) -> str:
    """Text from the library; messages may quote file content, so bad UTF-8 must not raise here."""
    return raw.decode("utf-8", errors="replace") if raw else ""

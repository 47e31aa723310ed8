"""Packing a model folder's weight files into one model.safetensors (onnxstream_pack_weights)."""

from __future__ import annotations

from . import _capi
from .errors import Error, decode
from .options import PathLike, c_path


def pack_weights(folder: PathLike, remove_files: bool = False) -> None:
    """Pack the weight files of a model folder (OnnxStream's or onnxstream-convert's) into one
    ``folder/model.safetensors``.

    Every .bin file model.txt references and every per-channel scales file is stored under its file
    name without ``.bin``. Models load from such a folder with every built-in provider; a weight is
    looked up in model.safetensors first, then as a file. The store is written under a temporary name
    and renamed into place; only then, with ``remove_files``, are the packed files deleted. model.txt is
    not changed. Runs in the calling thread.

    Raises :class:`Error`: INVALID_ARGUMENT when the folder already has a model.safetensors (or the
    path is not a path or contains a NUL byte), INVALID_MODEL when model.txt does not parse, IO when
    model.txt or a weight file is missing, a weight file's size does not match model.txt, or the store
    cannot be written.
    """
    path = c_path("folder", folder)
    api = _capi.api()
    status = api.pack_weights(path, 1 if remove_files else 0)
    if status:
        raise Error(status, decode(api.last_error()))


__all__ = ["pack_weights"]

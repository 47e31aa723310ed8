"""The Python objects behind the C callbacks' ``void *user_data``.

C receives a small integer key, never a pointer to a Python object: a stale or repeated callback can
then at worst miss the registry (and fail cleanly) instead of dereferencing a freed object. An entry
lives until the library says it no longer needs it (a weights provider's destroy) or until the owner
replaces or releases it (progress and log callbacks, which have no destroy).
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, Optional

_lock = threading.Lock()
_entries: dict[int, Any] = {}
_keys = itertools.count(1)  # 0 would be NULL, which the library treats as "no user data"


def register(obj: Any) -> int:
    with _lock:
        key = next(_keys)
        _entries[key] = obj
        return key


def lookup(key: Optional[int]) -> Any:
    """The object registered under key (ctypes passes NULL as None), or None."""
    if not key:
        return None
    with _lock:
        return _entries.get(key)


def unregister(key: Optional[int]) -> Any:
    if not key:
        return None
    with _lock:
        return _entries.pop(key, None)

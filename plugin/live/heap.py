"""Handing the memory a baseline freed back to the operating system.

A served project's baseline is the report of the whole project: building it allocates
far more than it keeps (the adapted values, each control's pairs and resamples). The
service runs on for days beside Label Studio, so what it frees should leave the process.
glibc keeps freed heap pages for reuse; ``malloc_trim(0)`` returns them (at 10,000 demo
tasks a third of what a baseline left resident). Elsewhere (musl, macOS) there is no such
call and nothing is done.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
from typing import Any

__all__ = ["release_freed_memory"]


@functools.lru_cache(maxsize=1)
def _malloc_trim() -> Any:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return getattr(libc, "malloc_trim", None)


def release_freed_memory() -> bool:
    """Return the heap's free pages to the operating system; False where the C library
    has no ``malloc_trim``. No collection first: a full pass over a big project's objects
    would hold the interpreter lock against the event path (a ctypes call releases it)."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True

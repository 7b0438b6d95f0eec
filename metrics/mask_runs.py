"""Pixel masks as row runs: the compact form :class:`~ls_agreement.metrics.model.Mask` keeps.

A mask on an image of ``height`` × ``width`` pixels is the set of its "on" pixels, written
as runs ``(start, length)`` of row-major pixel offsets (``offset = row * width + col``):
sorted, disjoint, none crossing a row end, and touching runs of one row merged. That form
is canonical — two equal pixel sets have equal run bytes — so masks hash and compare by
value, and a 1024 × 1024 blob costs a few kilobytes instead of a megabyte of pixels.

The runs are stored as little-endian uint32 pairs (8 bytes a run), which bounds a mask to
``height * width < 2**32`` pixels (Label Studio's brush RLE cannot exceed ``2**30``).
"""
from __future__ import annotations

import numpy as np
from .errors import BadInput

__all__ = ["RUN_DTYPE", "MAX_PIXELS", "pack_runs", "unpack_runs", "check_runs", "canonical_runs",
           "runs_from_array", "array_from_runs", "ragged_arange"]

#: One run: (start offset, length), little-endian uint32.
RUN_DTYPE = np.dtype("<u4")
#: Pixels a mask may span (uint32 offsets).
MAX_PIXELS = 2 ** 32 - 1


def ragged_arange(counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(c) for c in counts])`` without the loop.

    Parameters
    ----------
    counts : ndarray of int, shape (n,), each >= 0

    Returns
    -------
    ndarray of int64, shape (counts.sum(),)
    """
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(counts)
    return np.arange(total, dtype=np.int64) - np.repeat(ends - counts, counts)


def pack_runs(starts: np.ndarray, lengths: np.ndarray) -> bytes:
    """Runs (already canonical) as the bytes a :class:`Mask` stores.

    Parameters
    ----------
    starts, lengths : ndarray of int, shape (n_runs,)
    """
    out = np.empty((len(starts), 2), dtype=RUN_DTYPE)
    out[:, 0] = starts
    out[:, 1] = lengths
    return out.tobytes()


def unpack_runs(runs: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The runs of a :class:`Mask`: ``starts, lengths``, int64 arrays of shape (n_runs,)."""
    arr = np.frombuffer(runs, dtype=RUN_DTYPE).reshape(-1, 2).astype(np.int64)
    return arr[:, 0], arr[:, 1]


def check_runs(runs: bytes, height: int, width: int) -> None:
    """Raise ValueError unless ``runs`` is the canonical run form of a mask of that size."""
    if height * width > MAX_PIXELS:
        raise BadInput(f"a mask of {height} x {width} pixels is larger than {MAX_PIXELS:,} pixels")
    if len(runs) % (2 * RUN_DTYPE.itemsize):
        raise BadInput(f"mask runs must be uint32 (start, length) pairs, got {len(runs)} bytes")
    s, n = unpack_runs(runs)
    if not s.size:
        return
    e = s + n
    col = s % width
    if (n <= 0).any():
        raise BadInput("mask runs must have positive lengths")
    if (col + n > width).any():
        raise BadInput("a mask run crosses the end of its row")
    if e[-1] > height * width:
        raise BadInput(f"a mask run ends past the {height} x {width} image")
    # sorted and disjoint; within one row runs must not even touch (they would be one run)
    gap = s[1:] - e[:-1]
    same_row = s[1:] // width == s[:-1] // width
    if (gap < 0).any() or ((gap == 0) & same_row).any():
        raise BadInput("mask runs must be sorted, disjoint, and merged within a row")


def canonical_runs(starts: np.ndarray, ends: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Any intervals ``[start, end)`` of pixel offsets -> the canonical runs of their union.

    Parameters
    ----------
    starts, ends : ndarray of int, shape (n,)
        In any order, possibly overlapping or touching, possibly spanning rows; empty
        intervals are dropped.
    width : int

    Returns
    -------
    starts, lengths : ndarray of int64, shape (n_runs,)
    """
    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    keep = e > s
    s, e = s[keep], e[keep]
    if not s.size:
        return s, s.copy()
    if (s[1:] < s[:-1]).any():
        order = np.argsort(s, kind="stable")
        s, e = s[order], e[order]
    # a new union part begins where an interval starts after every earlier one ended
    reach = np.maximum.accumulate(e)
    first = np.ones(s.size, dtype=bool)
    first[1:] = s[1:] > reach[:-1]
    at = np.flatnonzero(first)
    ms, me = s[at], np.maximum.reduceat(e, at)
    # split at row ends
    r0, r1 = ms // width, (me - 1) // width
    pieces = r1 - r0 + 1
    row = np.repeat(r0, pieces) + ragged_arange(pieces)
    ps = np.maximum(np.repeat(ms, pieces), row * width)
    pe = np.minimum(np.repeat(me, pieces), (row + 1) * width)
    return ps, pe - ps


def runs_from_array(array: np.ndarray) -> bytes:
    """The canonical run bytes of a 2-D array's nonzero pixels.

    Parameters
    ----------
    array : ndarray, shape (height, width)
    """
    a = np.asarray(array)
    if a.ndim != 2:
        raise BadInput(f"a mask array must be 2-D (height, width), got shape {a.shape}")
    h, w = a.shape
    if h * w > MAX_PIXELS:
        raise BadInput(f"a mask of {h} x {w} pixels is larger than {MAX_PIXELS:,} pixels")
    # a zero column after each row ends every run at its row end
    padded = np.zeros((h, w + 1), dtype=np.int8)
    padded[:, :w] = a != 0
    flat = padded.ravel()
    step = np.diff(flat, prepend=np.int8(0))
    on = np.flatnonzero(step == 1)
    off = np.flatnonzero(step == -1)
    row = on // (w + 1)
    starts = on - row            # offsets without the padding column
    return pack_runs(starts, off - on)


def array_from_runs(runs: bytes, height: int, width: int) -> np.ndarray:
    """The boolean pixel array of a mask, shape (height, width)."""
    s, n = unpack_runs(runs)
    size = height * width
    edge = np.bincount(s, minlength=size + 1) - np.bincount(s + n, minlength=size + 1)
    return (np.cumsum(edge[:size]) > 0).reshape(height, width)

"""Batch helpers shared by the kind modules: ragged object lists and cached pair loops.

A multi-object value (all boxes one annotator drew on a task) is stored flat: the
objects of every value one after the other, with ``starts[v]`` / ``counts[v]`` giving
value ``v``'s slice. Comparing the values of many pairs then means comparing every
object of ``A`` with every object of ``B`` for every pair — a ragged cross product that
:func:`cross_layout` lays out as flat index arrays, so a similarity can be computed for
all object pairs of all value pairs in one vectorized call.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterator, Sequence

import numpy as np
import scipy.sparse as sp

__all__ = [
    "CrossLayout", "cross_layout", "pair_chunks", "segment_max", "hashable_codes",
    "unique_pair_apply", "membership_matrix", "intersection_sizes",
]

# Object pairs handled per vectorized step: bounds memory (a few arrays of this many
# float64) while keeping numpy's per-call overhead negligible.
CHUNK_OBJECT_PAIRS = 1 << 20


@dataclass
class CrossLayout:
    """Every (object of A, object of B) pair of a batch of value pairs, flattened.

    Object pairs are ordered by value pair, then object of A, then object of B, so the
    ``nb`` scores of one object of A are contiguous.

    Attributes
    ----------
    na, nb : ndarray of int64, shape (n_pairs,)
        Object counts of the two values of each pair (all >= 1).
    offsets : ndarray of int64, shape (n_pairs,)
        Where each value pair's ``na * nb`` block starts.
    pair : ndarray of int64, shape (n_cross,)
        Value-pair index of each object pair.
    a, b : ndarray of int64, shape (n_cross,)
        Flat (global) object indices of the two objects.
    la, lb : ndarray of int64, shape (n_cross,)
        Their positions within their own values.
    """

    na: np.ndarray
    nb: np.ndarray
    offsets: np.ndarray
    pair: np.ndarray
    a: np.ndarray
    b: np.ndarray
    la: np.ndarray
    lb: np.ndarray

    @property
    def size(self) -> int:
        return int(self.pair.size)


def cross_layout(starts_a: np.ndarray, na: np.ndarray,
                 starts_b: np.ndarray, nb: np.ndarray) -> CrossLayout:
    """Lay out the ragged cross product of object lists, one block per value pair.

    Parameters
    ----------
    starts_a, na : ndarray of int64, shape (n_pairs,)
        First flat object index and object count of value A of each pair.
    starts_b, nb : ndarray of int64, shape (n_pairs,)
        The same for value B.
    """
    sizes = na * nb
    offsets = np.cumsum(sizes) - sizes
    total = int(sizes.sum())
    pair = np.repeat(np.arange(na.size, dtype=np.int64), sizes)
    k = np.arange(total, dtype=np.int64) - offsets[pair]
    nbp = nb[pair]
    la, lb = np.divmod(k, nbp)
    return CrossLayout(na, nb, offsets, pair, starts_a[pair] + la, starts_b[pair] + lb, la, lb)


def pair_chunks(sizes: np.ndarray, limit: int = CHUNK_OBJECT_PAIRS) -> Iterator[slice]:
    """Consecutive slices of value pairs whose object-pair counts sum to about ``limit``."""
    if sizes.size == 0:
        return
    cum = np.cumsum(sizes)
    lo = 0
    while lo < sizes.size:
        base = cum[lo - 1] if lo else 0
        hi = int(np.searchsorted(cum, base + limit, side="right"))
        hi = max(hi, lo + 1)
        yield slice(lo, hi)
        lo = hi


def segment_max(s: np.ndarray, lay: CrossLayout) -> tuple[np.ndarray, np.ndarray]:
    """Best score of every object of A in B and of every object of B in A.

    Returns
    -------
    best_a : ndarray, shape (sum(na),)
        Ordered by pair, then object of A.
    best_b : ndarray, shape (sum(nb),)
        Ordered by pair, then object of B.
    """
    pa = np.repeat(np.arange(lay.na.size), lay.na)
    la = np.arange(pa.size) - np.repeat(np.cumsum(lay.na) - lay.na, lay.na)
    best_a = np.maximum.reduceat(s, lay.offsets[pa] + la * lay.nb[pa]) if s.size else s
    # Transpose each na x nb block so B's scores become contiguous too.
    st = np.empty_like(s)
    st[lay.offsets[lay.pair] + lay.lb * lay.na[lay.pair] + lay.la] = s
    pb = np.repeat(np.arange(lay.nb.size), lay.nb)
    lb = np.arange(pb.size) - np.repeat(np.cumsum(lay.nb) - lay.nb, lay.nb)
    best_b = np.maximum.reduceat(st, lay.offsets[pb] + lb * lay.na[pb]) if s.size else s
    return best_a, best_b


def hashable_codes(values: Sequence[Hashable]) -> tuple[np.ndarray, list[Hashable]]:
    """An int code per value (equal values share it) and the distinct values in code order."""
    seen: dict[Hashable, int] = {}
    codes = np.fromiter((seen.setdefault(v, len(seen)) for v in values), dtype=np.int64,
                        count=len(values))
    return codes, list(seen)


def unique_pair_apply(keys: np.ndarray, i: np.ndarray, j: np.ndarray,
                      func: Callable[[np.ndarray, np.ndarray], np.ndarray],
                      symmetric: bool = True) -> np.ndarray:
    """Evaluate ``func`` once per distinct (unordered) pair of value keys.

    Parameters
    ----------
    keys : ndarray of int64, shape (n_values,)
        Equal values share a key (see :func:`hashable_codes`).
    i, j : ndarray of int64, shape (n_pairs,)
    func : callable(ka, kb) -> ndarray
        Batch function on distinct key pairs, shapes (n_unique,).

    Returns
    -------
    ndarray, shape (n_pairs,)
    """
    a, b = keys[i], keys[j]
    if symmetric:
        a, b = np.minimum(a, b), np.maximum(a, b)
    width = int(keys.max()) + 1 if keys.size else 1
    uniq, inverse = np.unique(a * width + b, return_inverse=True)
    ka, kb = np.divmod(uniq, width)
    return np.asarray(func(ka, kb), dtype=np.float64)[inverse.ravel()]


def membership_matrix(codes: Sequence[np.ndarray], n_columns: int) -> sp.csr_matrix:
    """Binary CSR matrix, one row per value, a 1 in each column listed in ``codes[v]``."""
    counts = np.fromiter((c.size for c in codes), dtype=np.int64, count=len(codes))
    indptr = np.concatenate(([0], np.cumsum(counts)))
    indices = np.concatenate(codes) if codes else np.zeros(0, np.int64)
    data = np.ones(indices.size, dtype=np.float64)
    return sp.csr_matrix((data, indices, indptr), shape=(len(codes), max(n_columns, 1)))


def intersection_sizes(m: sp.csr_matrix, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """``|row i ∩ row j|`` for each pair, shape (n_pairs,), on a binary CSR matrix."""
    out = np.empty(i.size)
    step = 1 << 18
    for lo in range(0, i.size, step):
        sl = slice(lo, lo + step)
        out[sl] = np.asarray(m[i[sl]].multiply(m[j[sl]]).sum(axis=1)).ravel()
    return out


def as_sequence(value: Any) -> tuple:
    """None -> (), a single object -> (obj,), any iterable -> tuple."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        return (value,)
    return tuple(value)

"""The distance protocol: distances are computed on batches of pairs.

The engine hands a distance the array of all values of a control tag plus two index
arrays ``i`` and ``j`` (one entry per pair) and gets back one distance per pair. A
distance can thus prepare each value once (tokenize a text, turn boxes into an array)
and compute all pairs vectorized; only kinds that cannot be vectorized loop, through
:class:`CallableDistance`, which never computes the same pair twice.
"""
from __future__ import annotations

from typing import Any, Callable, Hashable, Sequence

import numpy as np
from ..errors import BadInput

__all__ = ["Distance", "CallableDistance", "as_index_arrays", "check_distances", "value_keys", "compute_distinct"]


def as_index_arrays(i: Any, j: Any) -> tuple[np.ndarray, np.ndarray]:
    ii = np.asarray(i, dtype=np.int64).ravel()
    jj = np.asarray(j, dtype=np.int64).ravel()
    if ii.shape != jj.shape:
        raise BadInput(f"pair index arrays differ in length: {ii.size} vs {jj.size}")
    return ii, jj


def check_distances(d: np.ndarray, name: str) -> np.ndarray:
    """Distances must be finite and non-negative; say which pair is not."""
    d = np.asarray(d, dtype=np.float64)
    bad = ~np.isfinite(d) | (d < 0)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise BadInput(
            f"distance {name!r} returned {d[k]!r} for pair #{k}: distances must be finite and >= 0"
        )
    return d


class Distance:
    """Base class of every registered distance.

    Attributes
    ----------
    name : str
        Registry name (``"nominal"``, ``"boxes.iou"``, ...).
    kind : str
        The value kind it compares, named like its registry prefix (``"scalars"``,
        ``"sets"``, ``"boxes"``, ``"text"``, ...; see ``registry.KINDS``).
    level : str or None
        For the four Krippendorff levels, the level name; the engine then derives the
        expected distances exactly from value counts instead of sampling pairs.
    """

    name: str = "distance"
    kind: str = "any"
    level: str | None = None

    def prepare(self, values: Sequence[Any]) -> Any:
        """Turn the value array into whatever :meth:`compute` wants (once per call)."""
        return values

    def compute(self, prepared: Any, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def pairs(self, values: Sequence[Any], i: Any, j: Any) -> np.ndarray:
        """Distances of the pairs ``(values[i[k]], values[j[k]])``.

        Parameters
        ----------
        values : sequence, shape (n_values,)
        i, j : array of int, shape (n_pairs,)

        Returns
        -------
        ndarray of float64, shape (n_pairs,)
        """
        ii, jj = as_index_arrays(i, j)
        if ii.size == 0:
            return np.zeros(0)
        return check_distances(self.compute(self.prepare(values), ii, jj), self.name)

    def __call__(self, a: Any, b: Any) -> float:
        return float(self.pairs([a, b], [0], [1])[0])

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class CallableDistance(Distance):
    """Wraps a plain ``D(a, b) -> float``; loops, but never computes a pair twice.

    Pairs are keyed by value identity through hashing when the values are hashable
    (so equal texts met on different items are computed once), else by index.
    """

    def __init__(
        self,
        func: Callable[[Any, Any], float],
        name: str | None = None,
        kind: str = "any",
        symmetric: bool = True,
    ) -> None:
        self.func = func
        self.name = name or getattr(func, "__name__", "callable")
        self.kind = kind
        self.symmetric = symmetric

    def compute(self, prepared: Sequence[Any], i: np.ndarray, j: np.ndarray) -> np.ndarray:
        keys = _value_keys(prepared)
        a, b = keys[i], keys[j]
        if self.symmetric:
            a, b = np.minimum(a, b), np.maximum(a, b)
        pair_codes = a * (int(keys.max()) + 1 if keys.size else 1) + b
        uniq, first, inverse = np.unique(pair_codes, return_index=True, return_inverse=True)
        out = np.empty(uniq.size)
        for k, pos in enumerate(first):
            out[k] = self.func(prepared[i[pos]], prepared[j[pos]])
        return out[inverse]


def compute_distinct(dist: "Distance", prepared: Any, keys: np.ndarray | None, i: np.ndarray,
                     j: np.ndarray) -> np.ndarray:
    """``dist.compute(prepared, i, j)`` with each distinct ordered pair of values computed once.

    Many annotators on an item give few distinct values and very many pairs (a crowd
    project): the pairs then cost their distinct value combinations. ``keys`` are
    :func:`value_keys` of the values (``None``: compute every pair).
    """
    if keys is None or i.size < 1024:
        return dist.compute(prepared, i, j)
    n_keys = int(keys.max()) + 1
    code = keys[i] * n_keys + keys[j]
    if n_keys * n_keys <= 4 * i.size:
        # few distinct values: a table over every key pair, no sort
        slot = np.full(n_keys * n_keys, -1, dtype=np.int64)
        slot[code[::-1]] = np.arange(code.size - 1, -1, -1)    # first pair holding each code
        first = slot[slot >= 0]
        where = np.full(n_keys * n_keys, -1, dtype=np.int64)
        where[code[first]] = np.arange(first.size)
        inverse = where[code]
    else:
        _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
    if first.size > i.size // 4:  # mostly distinct: deduplicating would only add work
        return dist.compute(prepared, i, j)
    return np.asarray(dist.compute(prepared, i[first], j[first]), dtype=np.float64)[inverse]


def value_keys(values: Sequence[Any]) -> np.ndarray:
    """An int key per value; equal hashable values share a key, unhashable ones get their own."""
    return _value_keys(values)


def _value_keys(values: Sequence[Any]) -> np.ndarray:
    """An int key per value; equal hashable values share a key."""
    seen: dict[Hashable, int] = {}
    keys = np.empty(len(values), dtype=np.int64)
    for n, v in enumerate(values):
        try:
            # the common value types are their own key (what _freeze returns for them), without its checks
            keys[n] = seen.setdefault(v if type(v) in _OWN_KEY else _freeze(v), len(seen))
        except TypeError:
            keys[n] = len(seen)
            seen[("__unhashable__", n)] = keys[n]
    return keys


# value types that _freeze returns unchanged (after hashing them, as a dict key does)
_OWN_KEY = frozenset({str, int, float, tuple, frozenset, bytes})


def _freeze(v: Any) -> Hashable:
    if isinstance(v, list):
        return ("__list__",) + tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return ("__dict__",) + tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    if isinstance(v, set):
        return frozenset(v)
    if isinstance(v, np.ndarray):
        return ("__nd__", v.shape, v.tobytes())
    hash(v)
    return v

"""Rankings (Ranker / List): Kendall's τ, Spearman's ρ, τ over the top k.

References: paper 000 appendix ("Ranked Lists", scipy ``kendalltau`` / ``spearmanr``)
and the authors' code (``sim_ranker.kendaltauscore``); docs/formulas.md §4.

A ranking is a sequence of ids, best first; an element may also be a bucket (tuple,
list or set of ids) whose ids tie. Two rankings are compared on the union ``U`` of the
ids in their top ``k`` (all ids when ``top_k`` is None): an id's rank is its position
(bucket index for buckets, 0-based) if it is in that ranking's top k, else ``|U|``
(ranked after everything shown). Both rank vectors may be padded with ``pad`` extra
entries equal to ``|U|`` — paper 000's code used ``pad = 50``, which is what reproduces
its Table 1 (``RankingDistance("kendall", top_k=5, pad=50)``). The correlation r
(Kendall's τ-b or Spearman's ρ from scipy) becomes ``D = (1 − r) / 2 ∈ [0, 1]``; when r
is undefined (a constant rank vector) D is 0 for equal rank vectors, else 0.5.

Only distinct unordered pairs of rankings are computed (pairs of equal rankings, met
across items, share one computation).
"""
from __future__ import annotations

import functools
from typing import Any, Hashable, Sequence

import numpy as np

from .base import Distance
from ._ragged import hashable_codes, unique_pair_apply
from .registry import register
from ..errors import BadInput

__all__ = ["RankingDistance", "rank_vectors"]

METHODS = ("kendall", "spearman")


def _as_ranks(value: Any, where: str) -> dict[Hashable, int]:
    """id -> 0-based rank (bucket index); first occurrence wins for repeated ids."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise BadInput(f"{where} is {type(value).__name__} ({value!r:.60}), expected a ranking (sequence of ids)")
    ranks: dict[Hashable, int] = {}
    for pos, el in enumerate(value):
        bucket = el if isinstance(el, (tuple, list, set, frozenset)) else (el,)
        for x in bucket:
            ranks.setdefault(x, pos)
    return ranks


def _canonical_ranks(value: Any, where: str) -> tuple:
    """The ranks of :func:`_as_ranks` as a tuple of (id, rank) sorted by rank, then id's repr:
    equal rankings (whatever the order of a bucket's ids) give equal tuples."""
    return tuple(sorted(_as_ranks(value, where).items(), key=lambda kv: (kv[1], repr(kv[0]))))


def kendall_tau_b(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's τ-b of two short vectors, shape (m,), as scipy's ``kendalltau``.

    ``Σ sgn(Δa)·sgn(Δb) / sqrt(Σ sgn(Δa)² · Σ sgn(Δb)²)`` over all index pairs: O(m²) but
    vectorized, faster than scipy's O(m log m) for the m < ~200 of rankings.
    """
    sa = np.sign(a[:, None] - a[None, :])
    sb = np.sign(b[:, None] - b[None, :])
    den = np.sqrt(np.abs(sa).sum() * np.abs(sb).sum())
    return float((sa * sb).sum() / den) if den > 0 else float("nan")


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks, ties sharing their mean rank (scipy ``rankdata(method="average")``)."""
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    return (np.cumsum(counts) - (counts - 1) / 2.0)[inverse]


def spearman_rho(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's ρ (Pearson correlation of average ranks), as scipy's ``spearmanr``."""
    ra, rb = _average_ranks(a), _average_ranks(b)
    ra -= ra.mean()
    rb -= rb.mean()
    den = np.sqrt((ra * ra).sum() * (rb * rb).sum())
    return float((ra * rb).sum() / den) if den > 0 else float("nan")


def rank_vectors(ra: dict, rb: dict, top_k: int | None = None, pad: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The two rank vectors over the union of both top-k id sets (see module doc).

    Returns
    -------
    a, b : ndarray of float, shape (|U| + pad,)
    """
    if top_k is not None:
        ra = {x: r for x, r in ra.items() if r < top_k}
        rb = {x: r for x, r in rb.items() if r < top_k}
    union = list(ra) + [x for x in rb if x not in ra]
    m = len(union)
    a = np.fromiter((ra.get(x, m) for x in union), dtype=np.float64, count=m)
    b = np.fromiter((rb.get(x, m) for x in union), dtype=np.float64, count=m)
    if pad:
        a = np.concatenate([a, np.full(pad, float(m))])
        b = np.concatenate([b, np.full(pad, float(m))])
    return a, b


class RankingDistance(Distance):
    """``(1 − r) / 2`` with r Kendall's τ-b or Spearman's ρ of two rankings.

    Parameters
    ----------
    variant : {"kendall", "spearman"}
    top_k : int, optional
        Compare only the ids in each ranking's first ``top_k`` positions.
    pad : int
        Extra tied entries at rank ``|U|`` (paper 000's code: 50).
    """

    kind = "rankings"

    def __init__(self, variant: str = "kendall", top_k: int | None = None, pad: int = 0) -> None:
        if variant not in METHODS:
            raise BadInput(f"ranking variant must be one of {METHODS}, got {variant!r}")
        if top_k is not None and top_k < 1:
            raise BadInput(f"top_k must be >= 1, got {top_k!r}")
        if pad < 0:
            raise BadInput(f"pad must be >= 0, got {pad!r}")
        self.method = variant
        self.top_k = top_k
        self.pad = int(pad)
        self.name = f"rankings.{variant}" + (f"_top{top_k}" if top_k else "")

    def prepare(self, values: Sequence[Any]) -> dict:
        # a project's rankings repeat (a few orders of a few ids): each distinct ranking is
        # read once; an unhashable one (a list) is read every time
        canonical: dict[Any, tuple] = {}

        def read(n: int, v: Any) -> tuple:
            try:
                return canonical[v]
            except KeyError:
                pass
            except TypeError:
                return _canonical_ranks(v, f"{self.name}: value #{n}")
            c = canonical[v] = _canonical_ranks(v, f"{self.name}: value #{n}")
            return c

        keys, distinct = hashable_codes([read(n, v) for n, v in enumerate(values)])
        return {"keys": keys, "canonical": distinct}

    def compute(self, prep: dict, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        return unique_pair_apply(prep["keys"], i, j, lambda ka, kb: self._batch(prep["canonical"], ka, kb))

    def _batch(self, canonical: list[tuple], ka: np.ndarray, kb: np.ndarray) -> np.ndarray:
        out = np.array([_pair_distance(canonical[x], canonical[y], self.method, self.top_k, self.pad)
                        for x, y in zip(ka.tolist(), kb.tolist())], dtype=np.float64).reshape(-1)
        return np.clip(out, 0.0, 1.0)


@functools.lru_cache(maxsize=1 << 16)
def _pair_distance(a: tuple, b: tuple, method: str, top_k: int | None, pad: int) -> float:
    """``(1 − r) / 2`` of two rankings given as :func:`_canonical_ranks` tuples, in this
    order (the union's order follows ``a``). Cached: a project's few distinct rankings meet
    again in every pass over its pairs (observed, chance, each candidate distance)."""
    x, y = rank_vectors(dict(a), dict(b), top_k, pad)
    r = (kendall_tau_b if method == "kendall" else spearman_rho)(x, y) if x.size > 1 else np.nan
    return float((1.0 - r) / 2.0 if np.isfinite(r) else (0.0 if np.array_equal(x, y) else 0.5))


def kendall_top(k: int, pad: int = 0) -> RankingDistance:
    """Factory: Kendall's τ over the top ``k`` (register e.g. ``rankings.kendall_top10``)."""
    return RankingDistance("kendall", top_k=k, pad=pad)


register("rankings.kendall", RankingDistance("kendall"), kind="rankings", candidate=True)
register("rankings.spearman", RankingDistance("spearman"), kind="rankings", candidate=True)
register("rankings.kendall_top5", kendall_top(5), kind="rankings", candidate=True)
register("rankings.kendall_top10", kendall_top(10), kind="rankings")

"""From a similarity between two objects to a distance between two *sets* of objects.

Reference: docs/formulas.md §4 and paper 000's appendix ("single to multi"). For value
pairs ``(A, B)`` with single-object similarity ``s ∈ [0, 1]``:

- ``pooled`` (default; the form behind paper 000's Table 1): every object of A takes
  its best score in B, every object of B its best score in A (floored at 0); both lists
  are pooled and ``D = 1 − mean`` — the larger set weighs more.
- ``directional``: ``D = 1 − (mean best(A→B) + mean best(B→A)) / 2`` (the appendix's
  ``(Δ(A,B) + Δ(B,A)) / 2``).
- ``hungarian``: an optimal one-to-one matching (scipy ``linear_sum_assignment``);
  unmatched objects score 0: ``D = 1 − 2 Σ matched / (|A| + |B|)``.

Empty vs empty is 0, empty vs non-empty is 1. ``labels="strict"`` gives objects with
different labels similarity 0; ``"ignore"`` compares geometry only.
"""
from __future__ import annotations

from itertools import chain
from operator import attrgetter
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment

from .base import Distance
from ._ragged import CrossLayout, as_sequence, cross_layout, hashable_codes, pair_chunks, segment_max
from ..errors import BadInput

__all__ = ["MultiObjectDistance", "CountDistance", "PackedObjects", "COMBINES", "LABEL_MODES"]

COMBINES = ("pooled", "directional", "hungarian")
LABEL_MODES = ("strict", "ignore")


class PackedObjects:
    """All objects of all values, flat.

    Attributes
    ----------
    starts, counts : ndarray of int64, shape (n_values,)
    labels : ndarray of int64, shape (n_objects,)
        Label codes (``None`` is a label like any other).
    objects : list, length n_objects
    value_of : ndarray of int64, shape (n_objects,)
        Which value each object belongs to.
    data : dict[str, ndarray]
        Per-object arrays built by the distance's ``pack``.
    """

    def __init__(self, objects: list, counts: np.ndarray) -> None:
        self.objects = objects
        self.counts = counts
        self.starts = np.cumsum(counts) - counts
        self.value_of = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
        self.labels, self.label_names = label_codes(objects)
        self.data: dict[str, Any] = {}


def label_codes(objects: list) -> tuple[np.ndarray, list]:
    """Int code per object's label (C-speed factorization; ``None`` is a label too)."""
    if not objects:
        return np.zeros(0, dtype=np.int64), []
    labels = np.empty(len(objects), dtype=object)
    labels[:] = list(map(attrgetter("label"), objects))
    try:
        codes, uniques = pd.factorize(labels, use_na_sentinel=False)
        return codes.astype(np.int64), list(uniques)
    except TypeError:  # unhashable or unorderable labels
        return hashable_codes(labels.tolist())


def flatten_regions(values: Sequence[Any], region_type: type, what: str) -> PackedObjects:
    """Check that every value is a sequence of ``region_type`` and flatten them.

    Raises
    ------
    ValueError
        Naming the value (position in the batch) and object that is not a region.
    """
    seqs = [v if type(v) is tuple else _as_seq(v, n, region_type, what) for n, v in enumerate(values)]
    counts = np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))
    objects = list(chain.from_iterable(seqs))
    if set(map(type, objects)) - {region_type}:
        # Slow path only to name the culprit.
        for v, seq in enumerate(seqs):
            for k, obj in enumerate(seq):
                if not isinstance(obj, region_type):
                    raise BadInput(f"{what}: value #{v}, object #{k} is {type(obj).__name__} "
                                     f"({obj!r:.60}), expected {region_type.__name__}")
    return PackedObjects(objects, counts)


def _as_seq(value: Any, n: int, region_type: type, what: str) -> tuple:
    try:
        return as_sequence(value)
    except TypeError:
        raise BadInput(f"{what}: value #{n} is {type(value).__name__}, "
                         f"expected a sequence of {region_type.__name__}") from None


class MultiObjectDistance(Distance):
    """Base of the set-of-regions distances (boxes, polygons, keypoints).

    Subclasses set ``region_type`` and implement :meth:`pack` (per-object arrays, once per
    batch) and :meth:`similarity` (vectorized over object pairs).

    Parameters
    ----------
    combine : {"pooled", "directional", "hungarian"}
    labels : {"strict", "ignore"}
    """

    region_type: type = object

    def __init__(self, combine: str = "pooled", labels: str = "strict") -> None:
        if combine not in COMBINES:
            raise BadInput(f"combine must be one of {COMBINES}, got {combine!r}")
        if labels not in LABEL_MODES:
            raise BadInput(f"labels must be one of {LABEL_MODES}, got {labels!r}")
        self.combine = combine
        self.labels = labels

    # -- to override -------------------------------------------------------------------
    def pack(self, packed: PackedObjects) -> None:
        """Fill ``packed.data`` with per-object arrays."""

    def similarity(self, packed: PackedObjects, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Similarity of objects ``a[k]`` and ``b[k]`` (flat indices), shape (n,)."""
        raise NotImplementedError

    # -- protocol ----------------------------------------------------------------------
    def prepare(self, values: Sequence[Any]) -> PackedObjects:
        packed = flatten_regions(values, self.region_type, self.name)
        self.pack(packed)
        return packed

    def compute(self, packed: PackedObjects, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        na, nb = packed.counts[i], packed.counts[j]
        out = np.where((na == 0) & (nb == 0), 0.0, 1.0)
        both = np.flatnonzero((na > 0) & (nb > 0))
        if both.size == 0:
            return out
        ii, jj = i[both], j[both]
        sims = np.empty(both.size)
        for sl in pair_chunks(na[both] * nb[both]):
            lay = cross_layout(packed.starts[ii[sl]], na[both][sl], packed.starts[jj[sl]], nb[both][sl])
            s = self.object_scores(packed, lay.a, lay.b)
            sims[sl] = combine_scores(s, lay, self.combine)
        out[both] = 1.0 - sims
        # Rounding can leave -1e-16 for identical sets.
        return np.clip(out, 0.0, 1.0)

    def object_scores(self, packed: PackedObjects, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Similarities in [0, 1] with the label rule applied (floored at 0)."""
        if self.labels == "strict" and len(packed.label_names) > 1:
            # Objects with different labels score 0: compute only the others.
            same = np.flatnonzero(packed.labels[a] == packed.labels[b])
            s = np.zeros(a.size)
            if same.size:
                s[same] = self.similarity(packed, a[same], b[same])
        else:
            s = np.asarray(self.similarity(packed, a, b), dtype=np.float64)
        return np.clip(s, 0.0, 1.0, out=s)


def combine_scores(s: np.ndarray, lay: CrossLayout, combine: str) -> np.ndarray:
    """Set similarity of each value pair from its object-pair scores.

    Parameters
    ----------
    s : ndarray, shape (lay.size,)
        Object-pair similarities in [0, 1], laid out as ``lay``.
    combine : {"pooled", "directional", "hungarian"}

    Returns
    -------
    ndarray, shape (n_pairs,)
    """
    n = lay.na.size
    if combine == "hungarian":
        out = np.empty(n)
        for p in range(n):
            blk = s[lay.offsets[p]: lay.offsets[p] + lay.na[p] * lay.nb[p]].reshape(lay.na[p], lay.nb[p])
            r, c = linear_sum_assignment(blk, maximize=True)
            out[p] = 2.0 * blk[r, c].sum() / (lay.na[p] + lay.nb[p])
        return out
    best_a, best_b = segment_max(s, lay)
    sum_a = np.bincount(np.repeat(np.arange(n), lay.na), weights=best_a, minlength=n)
    sum_b = np.bincount(np.repeat(np.arange(n), lay.nb), weights=best_b, minlength=n)
    if combine == "pooled":
        return (sum_a + sum_b) / (lay.na + lay.nb)
    return (sum_a / lay.na + sum_b / lay.nb) / 2.0


class CountDistance(Distance):
    """``||A| − |B||``: the difference in object counts (paper 000 appendix, "Count Diff").

    Not bounded by 1; α, KS and σ do not need bounded distances.
    """

    def __init__(self, kind: str, region_type: type) -> None:
        self.kind = kind
        self.region_type = region_type

    def prepare(self, values: Sequence[Any]) -> np.ndarray:
        return flatten_regions(values, self.region_type, self.name).counts.astype(np.float64)

    def compute(self, counts: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        return np.abs(counts[i] - counts[j])

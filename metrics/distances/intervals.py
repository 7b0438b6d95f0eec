"""Labelled 1-d regions on a time or reading axis (audio, video timeline, time series,
paragraphs): overlap distances, instants included.

References: docs/formulas.md §4 ("Intervals"); paper 000's set-of-regions forms
(:mod:`.multi_object`); the segment-based F-score of sound event detection (Mesaros,
Heittola & Virtanen 2016, "Metrics for polyphonic sound event detection") for
``intervals.dice``.

Similarity of two intervals ``a``, ``b`` (:func:`interval_similarity_matrix`, and the object
score of ``intervals.overlap``):

- both of positive length: ``IoU = |a ∩ b| / |a ∪ b|`` (the 1-d IoU);
- at least one an *instant* (``end == start``): ``s = max(0, 1 − gap / τ)``, where ``gap``
  is the distance between the two sets: ``|t₁ − t₂|`` for two instants, 0 for an instant
  inside the interval (a full match), the distance to the nearer end outside it.

``τ`` (the *tolerance*) is fixed by the caller or derived from the regions compared
(:func:`interval_tolerance`): the median length of the regions of positive length — the
scale at which annotators of this control mark things, so an instant that far from
another is as far off as two regions that no longer overlap; when every region is an
instant (change points), 5 % of the extent they span, which leaves two instants placed
at random on the same series a small chance (about 10 %) of scoring above 0.

Distances (empty vs empty 0, empty vs non-empty 1):

- ``intervals.overlap`` (default): every region takes its best score among the other
  annotator's regions of the same label, both lists pooled, ``D = 1 − mean``
  (:class:`.multi_object.MultiObjectDistance`, ``pooled``).
- ``intervals.overlap_any``: the same, labels ignored (geometry only).
- ``intervals.dice``: the labelled duration both marked, ``D = 1 − 2 Σ_l |A_l ∩ B_l| /
  (Σ_l |A_l| + Σ_l |B_l|)``, ``A_l`` the union of A's regions with label ``l``; an instant
  counts as a window of width ``τ`` centred on it (two instants ``d`` apart then score
  ``1 − d / τ``, as above). The segment-based F-score of sound event detection.
- ``intervals.count``: ``||A| − |B||``.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..model import Interval
from ._ragged import cross_layout, pair_chunks
from .base import Distance
from .multi_object import CountDistance, MultiObjectDistance, PackedObjects, flatten_regions
from .registry import register
from ..errors import BadInput

__all__ = ["IntervalDistance", "IntervalDice", "interval_similarity_matrix", "interval_tolerance",
           "INSTANT_SHARE"]

#: τ of a set of instants only: this share of the extent they span.
INSTANT_SHARE = 0.05


def _bounds(objects: Sequence[Interval]) -> tuple[np.ndarray, np.ndarray]:
    """Starts and ends of the intervals, shape (n,) each."""
    n = len(objects)
    se = np.fromiter((v for o in objects for v in (o.start, o.end)), dtype=np.float64,
                     count=2 * n).reshape(n, 2)
    return np.ascontiguousarray(se[:, 0]), np.ascontiguousarray(se[:, 1])


def interval_tolerance(starts: np.ndarray, ends: np.ndarray) -> float:
    """τ of a set of regions (module docstring): the median length of those of positive
    length, else ``INSTANT_SHARE`` of the extent of the instants, else 1.

    Parameters
    ----------
    starts, ends : ndarray of float, shape (n,)
    """
    lengths = ends - starts
    positive = lengths[lengths > 0]
    if positive.size:
        return float(np.median(positive))
    if starts.size:
        extent = float(ends.max() - starts.min())
        if extent > 0:
            return INSTANT_SHARE * extent
    return 1.0   # every region the same instant: any τ gives the same scores


def _scores(sa: np.ndarray, ea: np.ndarray, sb: np.ndarray, eb: np.ndarray, tau: float) -> np.ndarray:
    """Similarity of intervals ``(sa, ea)`` and ``(sb, eb)`` elementwise (module docstring),
    any broadcastable shapes, in [0, 1]."""
    inter = np.minimum(ea, eb) - np.maximum(sa, sb)     # < 0: minus the gap between them
    la, lb = ea - sa, eb - sb
    ov = np.maximum(inter, 0.0)
    union = la + lb - ov
    with np.errstate(invalid="ignore", divide="ignore"):
        iou = np.where(union > 0, ov / union, 1.0)
        near = np.clip(1.0 + np.minimum(inter, 0.0) / tau, 0.0, 1.0)
    return np.where((la == 0) | (lb == 0), near, np.clip(iou, 0.0, 1.0))


def interval_similarity_matrix(a: Sequence[Interval], b: Sequence[Interval], *,
                               tolerance: float | None = None) -> np.ndarray:
    """Geometric similarity of every interval of ``a`` with every one of ``b`` (labels ignored).

    Parameters
    ----------
    a, b : sequence of Interval, lengths (m,) and (n,)
    tolerance : float, optional
        τ for instants; default :func:`interval_tolerance` of ``a`` and ``b`` together.

    Returns
    -------
    ndarray of float64, shape (m, n), in [0, 1]
    """
    for name, seq in (("a", a), ("b", b)):
        bad = next((x for x in seq if not isinstance(x, Interval)), None)
        if bad is not None:
            raise BadInput(f"interval_similarity_matrix: {name} holds {type(bad).__name__}, expected Interval")
    sa, ea = _bounds(a)
    sb, eb = _bounds(b)
    tau = _check_tolerance(tolerance) if tolerance is not None else interval_tolerance(
        np.concatenate([sa, sb]), np.concatenate([ea, eb]))
    return _scores(sa[:, None], ea[:, None], sb[None, :], eb[None, :], tau)


def _check_tolerance(tolerance: float | None) -> float | None:
    if tolerance is None:
        return None
    t = float(tolerance)
    if not (np.isfinite(t) and t > 0):
        raise BadInput(f"tolerance must be a finite number > 0, got {tolerance!r}")
    return t


class IntervalDistance(MultiObjectDistance):
    """Distance between two sets of intervals from their pairwise overlap (module docstring).

    Parameters
    ----------
    combine : {"pooled", "directional", "hungarian"}
        See :mod:`.multi_object`.
    labels : {"strict", "ignore"}
    tolerance : float, optional
        τ for instants (the axis' unit); default: derived from the values compared.
    """

    region_type = Interval
    kind = "intervals"

    def __init__(self, combine: str = "pooled", labels: str = "strict", tolerance: float | None = None) -> None:
        super().__init__(combine=combine, labels=labels)
        self.tolerance = _check_tolerance(tolerance)
        self.name = "intervals.overlap" if labels == "strict" else "intervals.overlap_any"

    def pack(self, packed: PackedObjects) -> None:
        s, e = _bounds(packed.objects)
        packed.data["s"], packed.data["e"] = s, e
        packed.data["tau"] = self.tolerance or interval_tolerance(s, e)

    def similarity(self, packed: PackedObjects, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        d = packed.data
        return _scores(d["s"][a], d["e"][a], d["s"][b], d["e"][b], d["tau"])


class IntervalDice(Distance):
    """``1 −`` the Dice coefficient of the labelled durations two annotators marked
    (``intervals.dice``, module docstring).

    Parameters
    ----------
    tolerance : float, optional
        Width of the window an instant stands for; default: derived from the values compared.
    """

    kind = "intervals"

    def __init__(self, tolerance: float | None = None) -> None:
        self.tolerance = _check_tolerance(tolerance)
        self.name = "intervals.dice"

    def prepare(self, values: Sequence[Any]) -> dict:
        packed = flatten_regions(values, Interval, self.name)
        s, e = _bounds(packed.objects)
        tau = self.tolerance or interval_tolerance(s, e)
        point = e == s
        s = np.where(point, s - tau / 2.0, s)
        e = np.where(point, e + tau / 2.0, e)
        ms, me, ml, mcount = _merged(packed.value_of, packed.labels, s, e, packed.counts.size)
        measure = np.bincount(np.repeat(np.arange(mcount.size), mcount), weights=me - ms,
                              minlength=mcount.size)
        return {"counts": packed.counts, "mstart": ms, "mend": me, "mlabel": ml, "mcounts": mcount,
                "mstarts": np.cumsum(mcount) - mcount, "measure": measure}

    def compute(self, prep: dict, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        na, nb = prep["counts"][i], prep["counts"][j]
        out = np.where((na == 0) & (nb == 0), 0.0, 1.0)
        both = np.flatnonzero((na > 0) & (nb > 0))
        if both.size == 0:
            return out
        ii, jj = i[both], j[both]
        ma, mb = prep["mcounts"][ii], prep["mcounts"][jj]
        inter = np.zeros(both.size)
        for sl in pair_chunks(ma * mb):
            lay = cross_layout(prep["mstarts"][ii[sl]], ma[sl], prep["mstarts"][jj[sl]], mb[sl])
            a, b = lay.a, lay.b
            ov = np.minimum(prep["mend"][a], prep["mend"][b]) - np.maximum(prep["mstart"][a], prep["mstart"][b])
            ov = np.maximum(ov, 0.0) * (prep["mlabel"][a] == prep["mlabel"][b])
            # each side's merged pieces are disjoint per label: the overlaps add up to |A_l ∩ B_l|
            inter[sl] = np.bincount(lay.pair, weights=ov, minlength=ma[sl].size)
        total = prep["measure"][ii] + prep["measure"][jj]
        with np.errstate(invalid="ignore", divide="ignore"):
            dice = np.where(total > 0, 2.0 * inter / total, 1.0)
        out[both] = 1.0 - np.clip(dice, 0.0, 1.0)
        return out


def _merged(value_of: np.ndarray, labels: np.ndarray, starts: np.ndarray, ends: np.ndarray,
            n_values: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The union of each (value, label) group of intervals as disjoint sorted pieces, every
    group at once (one sort, a grouped running maximum; no loop over values).

    Parameters
    ----------
    value_of, labels : ndarray of int64, shape (n,)
    starts, ends : ndarray of float64, shape (n,)
    n_values : int

    Returns
    -------
    mstart, mend : ndarray of float64, shape (k,)
    mlabel : ndarray of int64, shape (k,)
        The pieces, by value, then label, then start.
    mcount : ndarray of int64, shape (n_values,) — pieces per value
    """
    if starts.size == 0:
        return np.zeros(0), np.zeros(0), np.zeros(0, np.int64), np.zeros(n_values, dtype=np.int64)
    o = np.lexsort((starts, labels, value_of))
    v, lab, s, e = value_of[o], labels[o], starts[o], ends[o]
    first = np.ones(v.size, dtype=bool)
    first[1:] = (v[1:] != v[:-1]) | (lab[1:] != lab[:-1])
    group = np.cumsum(first) - 1
    reach = pd.Series(e).groupby(group).cummax().to_numpy()
    new = first.copy()
    new[1:] |= s[1:] > reach[:-1]
    cut = np.flatnonzero(new)
    return s[cut], np.maximum.reduceat(reach, cut), lab[cut], np.bincount(v[cut], minlength=n_values)


register("intervals.overlap", IntervalDistance(), kind="intervals", candidate=True)
register("intervals.dice", IntervalDice(), kind="intervals", candidate=True)
register("intervals.overlap_any", IntervalDistance(labels="ignore"), kind="intervals")
register("intervals.count", CountDistance("intervals", Interval), kind="intervals")

"""Curves (VectorLabels, Vector): a size-normalised chamfer distance, and count difference.

Reference: docs/formulas.md §4 (curves). Two curves ``a`` and ``b`` (polylines or
branching skeletons, :class:`~ls_agreement.metrics.model.Curve`) are compared by their
symmetric mean closest-point distance — the chamfer distance — along their length:

    C(a, b) = ( mean_{p ∈ a} d(p, b) + mean_{q ∈ b} d(q, a) ) / 2,

the means taken over :data:`SAMPLES` points spread evenly by arc length (the midpoints of
equal pieces), ``d(p, b)`` the exact distance from a point to the other curve's segments
(shapely). The similarity is ``s = max(0, 1 − 2 C / L)`` with ``L`` the curves' size, the
mean of the diagonals of their bounding boxes. The factor 2 calibrates it on boxes: a
copy shifted by a tenth of its size scores 0.8, as the IoU of a box shifted by a tenth of
its width (9/11 ≈ 0.82); curves further apart than half their size score 0. The score
does not change when both curves are scaled or moved together (pixels and percent give
the same score on a square image). Two point-like curves (size 0) score 1 if they
coincide, else 0.

The sets of curves of two values are then combined as every multi-object kind is
(:mod:`.multi_object`): best match per curve, pooled.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import shapely

from ..model import Curve
from .multi_object import CountDistance, MultiObjectDistance, PackedObjects
from .registry import register

__all__ = ["CurveDistance", "curve_similarity_matrix", "SAMPLES"]

#: Points sampled along each curve for the mean distances.
SAMPLES = 32


def _segments(curves: Sequence[Curve]) -> tuple[np.ndarray, np.ndarray]:
    """All segments of all curves.

    Returns
    -------
    seg : ndarray of float64, shape (n_segments, 2, 2) — end points
    owner : ndarray of int64, shape (n_segments,) — the curve of each segment
    """
    ends, owner = [], []
    for k, c in enumerate(curves):
        pts, joins = c.points, c.segments()
        ends.extend((pts[a], pts[b]) for a, b in joins)
        owner.extend([k] * len(joins))
    if not ends:
        return np.zeros((0, 2, 2)), np.zeros(0, dtype=np.int64)
    return np.asarray(ends, dtype=np.float64), np.asarray(owner, dtype=np.int64)


def curve_samples(curves: Sequence[Curve], samples: int = SAMPLES) -> np.ndarray:
    """Points spread evenly by arc length along each curve: the midpoints of ``samples``
    equal pieces; a curve of length 0 gives its first point ``samples`` times.

    Returns
    -------
    ndarray of float64, shape (n_curves, samples, 2)
    """
    n = len(curves)
    seg, owner = _segments(curves)
    length = np.hypot(*(seg[:, 1] - seg[:, 0]).T) if seg.size else np.zeros(0)
    total = np.bincount(owner, weights=length, minlength=n)
    first = np.array([c.points[0] for c in curves], dtype=np.float64).reshape(n, 2)
    out = np.repeat(first[:, None, :], samples, axis=1)
    live = np.flatnonzero(total > 0)
    if not live.size:
        return out
    # one running arc length over all curves, each curve offset by the ones before it
    before = np.cumsum(total) - total
    cum_end = np.cumsum(length)
    target = (before[live, None] + total[live, None] * (np.arange(samples) + 0.5) / samples).ravel()
    k = np.minimum(np.searchsorted(cum_end, target, side="right"), length.size - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.clip(np.where(length[k] > 0, (target - (cum_end[k] - length[k])) / length[k], 0.0), 0.0, 1.0)
    pts = seg[k, 0] + frac[:, None] * (seg[k, 1] - seg[k, 0])
    out[live] = pts.reshape(live.size, samples, 2)
    return out


def curve_geometries(curves: Sequence[Curve]) -> np.ndarray:
    """Each curve as a shapely MultiLineString of its segments (a Point without any),
    prepared for repeated distance queries, shape (n_curves,)."""
    n = len(curves)
    seg, owner = _segments(curves)
    geoms = np.empty(n, dtype=object)
    counts = np.bincount(owner, minlength=n)
    has = counts > 0
    if has.any():
        lines = shapely.linestrings(seg.reshape(-1, 2), indices=np.repeat(np.arange(seg.shape[0]), 2))
        geoms[has] = shapely.multilinestrings(lines, indices=(np.cumsum(has) - 1)[owner])
    for k in np.flatnonzero(~has):
        geoms[k] = shapely.Point(curves[k].points[0])
    shapely.prepare(geoms)
    return geoms


def curve_boxes(curves: Sequence[Curve]) -> tuple[np.ndarray, np.ndarray]:
    """Bounding box of each curve (of its points: its segments are straight).

    Returns
    -------
    lo, hi : ndarray of float64, shape (n_curves, 2)
    """
    counts = np.fromiter((len(c.points) for c in curves), dtype=np.int64, count=len(curves))
    if not counts.size:
        return np.zeros((0, 2)), np.zeros((0, 2))
    pts = np.array([p for c in curves for p in c.points], dtype=np.float64)
    at = np.cumsum(counts) - counts
    return np.minimum.reduceat(pts, at, axis=0), np.maximum.reduceat(pts, at, axis=0)


class CurveDistance(MultiObjectDistance):
    """Distance between two sets of curves by the size-normalised chamfer similarity.

    Parameters
    ----------
    combine : {"pooled", "directional", "hungarian"}
    labels : {"strict", "ignore"}
    samples : int
        Points sampled along each curve.
    """

    region_type = Curve
    kind = "curves"

    def __init__(self, combine: str = "pooled", labels: str = "strict", samples: int = SAMPLES) -> None:
        super().__init__(combine=combine, labels=labels)
        if int(samples) < 1:
            raise ValueError(f"samples must be >= 1, got {samples!r}")
        self.samples = int(samples)
        self.name = "curves.chamfer"

    def pack(self, packed: PackedObjects) -> None:
        objs = packed.objects
        d = packed.data
        pts = curve_samples(objs, self.samples)
        d["samples"] = shapely.points(pts.reshape(-1, 2)).reshape(len(objs), self.samples) if objs else \
            np.empty((0, self.samples), dtype=object)
        d["geom"] = curve_geometries(objs)
        d["lo"], d["hi"] = curve_boxes(objs)
        d["size"] = np.hypot(*(d["hi"] - d["lo"]).T) if objs else np.zeros(0)

    def similarity(self, packed: PackedObjects, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Chamfer similarity of curves ``a[k]``, ``b[k]``, shape (n,)."""
        d = packed.data
        # half the mean diagonal: s = 1 - C / scale
        scale = (d["size"][a] + d["size"][b]) / 4.0
        # every point of a lies at least the boxes' gap away from b: C >= gap
        gap = np.hypot(*np.maximum(0.0, np.maximum(d["lo"][a] - d["hi"][b], d["lo"][b] - d["hi"][a])).T)
        out = np.zeros(a.size)
        near = np.flatnonzero((gap < scale) | (scale == 0))
        if not near.size:
            return out
        aa, bb = a[near], b[near]
        d_ab = shapely.distance(d["samples"][aa], d["geom"][bb][:, None]).mean(axis=1)
        d_ba = shapely.distance(d["samples"][bb], d["geom"][aa][:, None]).mean(axis=1)
        c = (d_ab + d_ba) / 2.0
        s = scale[near]
        with np.errstate(invalid="ignore", divide="ignore"):
            out[near] = np.where(s > 0, np.clip(1.0 - c / s, 0.0, 1.0), (c == 0).astype(np.float64))
        return out


def curve_similarity_matrix(a: Sequence[Curve], b: Sequence[Curve]) -> np.ndarray:
    """Chamfer similarity of every curve of ``a`` with every curve of ``b``, labels ignored.

    Returns
    -------
    ndarray of float64, shape (len(a), len(b))
    """
    objs = list(a) + list(b)
    bad = next((c for c in objs if not isinstance(c, Curve)), None)
    if bad is not None:
        raise ValueError(f"curve_similarity_matrix: {type(bad).__name__} ({bad!r:.60}) is not a Curve")
    na, nb = len(a), len(b)
    if not na or not nb:
        return np.zeros((na, nb))
    packed = PackedObjects(objs, np.array([len(objs)], dtype=np.int64))
    dist = CurveDistance(labels="ignore")
    dist.pack(packed)
    ia, ib = np.repeat(np.arange(na), nb), np.tile(np.arange(na, na + nb), na)
    return dist.similarity(packed, ia, ib).reshape(na, nb)


register("curves.chamfer", CurveDistance(), kind="curves", candidate=True)
register("curves.count", CountDistance("curves", Curve), kind="curves")

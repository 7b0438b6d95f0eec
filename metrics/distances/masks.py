"""Pixel masks (BrushLabels, Brush, MagicWand, BitmaskLabels, Bitmask): IoU per label.

Reference: docs/formulas.md §4 (masks). A value is the tuple of :class:`Mask` regions an
annotator drew on a task. Per label, the annotator's masks of that label are one pixel set
(their union: segmentation labels pixels, and several strokes of one label are one area).
For values A and B with per-label pixel sets ``A_l``, ``B_l``:

- ``masks.iou`` (default): pooled over labels, weighted by union area,
  ``D = 1 − Σ_l |A_l ∩ B_l| / Σ_l |A_l ∪ B_l|``;
- ``masks.miou``: the mean over labels with a nonempty union of their IoU,
  ``D = 1 − mean_l |A_l ∩ B_l| / |A_l ∪ B_l|`` (mean IoU, each label counting once).

Empty vs empty is 0 (nothing marked by either), empty vs non-empty 1. Masks of different
image sizes are compared pixel by pixel at the same (row, column).

How: every pixel set is a list of runs in one sorted integer key space (``group · SPAN +
row · WSPAN + col``, one group per (value, label)); the overlap of two sets is
``Σ_{runs r of the smaller} F(end_r) − F(start_r)`` with ``F(t)`` the on-pixels below key
``t`` (a binary search into the runs' cumulative lengths), evaluated for all pairs at once
with the queries shifted into the other group's key range — no pixel array is built.
"""
from __future__ import annotations

from operator import attrgetter
from typing import Literal, Sequence

import numpy as np

from ..mask_runs import ragged_arange, unpack_runs
from ..model import Mask
from .base import Distance
from .multi_object import CountDistance, flatten_regions
from .registry import register
from ..errors import BadInput

__all__ = ["MaskDistance", "MaskRuns", "mask_similarity_matrix"]

Pooling = Literal["pooled", "mean"]
# run queries per chunk of pairs (memory: ~100 bytes each)
_CHUNK = 2_000_000


class MaskRuns:
    """The union of each group's masks as runs in one sorted key space.

    Parameters
    ----------
    masks : sequence of Mask, shape (n_masks,)
    group : ndarray of int, shape (n_masks,)
        The group each mask joins (0 .. n_groups - 1).
    n_groups : int

    Attributes
    ----------
    starts, ends : ndarray of int64, shape (n_runs,) — sorted, disjoint keys
    below : ndarray of int64, shape (n_runs + 1,) — pixels in the runs before each run
    first, count : ndarray of int64, shape (n_groups,) — each group's runs
    area : ndarray of int64, shape (n_groups,) — pixels in each group
    span : int — key range of one group
    """

    def __init__(self, masks: Sequence[Mask], group: np.ndarray, n_groups: int) -> None:
        group = np.asarray(group, dtype=np.int64)
        parts = [unpack_runs(m.runs) for m in masks]
        n_runs = np.fromiter((p[0].size for p in parts), dtype=np.int64, count=len(parts))
        width = np.fromiter(map(attrgetter("width"), masks), dtype=np.int64, count=len(masks))
        height = np.fromiter(map(attrgetter("height"), masks), dtype=np.int64, count=len(masks))
        wspan = int(width.max()) if width.size else 1
        # one spare row keeps the last run of a group from touching the next group's first
        self.span = span = (int(height.max()) + 1 if height.size else 1) * wspan
        if n_groups * span >= 2 ** 62:
            raise BadInput(f"masks: {n_groups:,} pixel sets of up to {span:,} pixels do not fit one "
                             "int64 key space; compare fewer values at once")
        if parts and n_runs.sum():
            s = np.concatenate([p[0] for p in parts])
            n = np.concatenate([p[1] for p in parts])
        else:
            s = n = np.zeros(0, dtype=np.int64)
        w = np.repeat(width, n_runs)
        key = np.repeat(group * span, n_runs) + (s // w) * wspan + s % w
        self.starts, self.ends = _union(key, key + n)
        lengths = self.ends - self.starts
        self.below = np.concatenate([[0], np.cumsum(lengths)])
        owner = self.starts // span
        self.count = np.bincount(owner, minlength=n_groups).astype(np.int64)
        self.first = np.cumsum(self.count) - self.count
        self.area = np.bincount(owner, weights=lengths, minlength=n_groups).astype(np.int64)

    def _on_below(self, t: np.ndarray) -> np.ndarray:
        """On-pixels with key < t, over all groups, shape like ``t``."""
        k = np.searchsorted(self.starts, t, side="right") - 1
        kk = np.maximum(k, 0)
        inside = np.clip(t - self.starts[kk], 0, self.ends[kk] - self.starts[kk])
        return np.where(k >= 0, self.below[kk] + inside, 0)

    def intersections(self, ga: np.ndarray, gb: np.ndarray) -> np.ndarray:
        """Pixels shared by groups ``ga[k]`` and ``gb[k]``.

        Parameters
        ----------
        ga, gb : ndarray of int, shape (n_pairs,)

        Returns
        -------
        ndarray of int64, shape (n_pairs,)
        """
        ga = np.asarray(ga, dtype=np.int64)
        gb = np.asarray(gb, dtype=np.int64)
        out = np.zeros(ga.size, dtype=np.int64)
        # query the group with fewer runs against the other
        swap = self.count[ga] > self.count[gb]
        qa, qb = np.where(swap, gb, ga), np.where(swap, ga, gb)
        live = np.flatnonzero((self.count[qa] > 0) & (self.count[qb] > 0))
        if not live.size:
            return out
        n_q = self.count[qa[live]]
        cum = np.cumsum(n_q)
        lo = 0
        while lo < live.size:
            done = int(cum[lo - 1]) if lo else 0
            hi = max(int(np.searchsorted(cum, done + _CHUNK, side="right")), lo + 1)
            sl = live[lo:hi]
            nq = n_q[lo:hi]
            run = np.repeat(self.first[qa[sl]], nq) + ragged_arange(nq)
            shift = np.repeat((qb[sl] - qa[sl]) * self.span, nq)
            got = self._on_below(self.ends[run] + shift) - self._on_below(self.starts[run] + shift)
            out[sl] = np.bincount(np.repeat(np.arange(sl.size), nq), weights=got, minlength=sl.size)
            lo = hi
        return out


def _union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals as sorted disjoint intervals (touching ones merged)."""
    if not starts.size:
        return starts, ends
    if (starts[1:] < starts[:-1]).any():
        order = np.argsort(starts, kind="stable")
        starts, ends = starts[order], ends[order]
    reach = np.maximum.accumulate(ends)
    first = np.ones(starts.size, dtype=bool)
    first[1:] = starts[1:] > reach[:-1]
    at = np.flatnonzero(first)
    return starts[at], np.maximum.reduceat(ends, at)


class _Packed:
    """Per-batch data: one group per (value, label) with its pixel set."""

    def __init__(self, values: Sequence, name: str) -> None:
        packed = flatten_regions(values, Mask, name)
        n_labels = max(len(packed.label_names), 1)
        code = packed.value_of * n_labels + packed.labels
        self.keys, group = np.unique(code, return_inverse=True)   # sorted (value, label) codes
        self.n_labels = n_labels
        self.runs = MaskRuns(packed.objects, group.ravel(), self.keys.size)
        value = self.keys // n_labels
        n_values = len(values)
        self.groups = np.bincount(value, minlength=n_values).astype(np.int64)
        self.first = np.cumsum(self.groups) - self.groups
        area = self.runs.area
        self.value_area = np.bincount(value, weights=area, minlength=n_values).astype(np.int64)
        self.nonempty = np.bincount(value, weights=area > 0, minlength=n_values).astype(np.int64)


class MaskDistance(Distance):
    """Distance between two values' masks by pixel IoU per label (module docstring).

    Parameters
    ----------
    pooling : {"pooled", "mean"}
        ``"pooled"``: one IoU over all labels' pixels (``masks.iou``); ``"mean"``: the mean
        of the labels' IoUs (``masks.miou``).
    """

    kind = "masks"

    def __init__(self, pooling: Pooling = "pooled") -> None:
        if pooling not in ("pooled", "mean"):
            raise BadInput(f"pooling must be 'pooled' or 'mean', got {pooling!r}")
        self.pooling = pooling
        self.name = "masks.iou" if pooling == "pooled" else "masks.miou"

    def prepare(self, values: Sequence) -> _Packed:
        return _Packed(values, self.name)

    def compute(self, p: _Packed, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        # every group of value i meets the group of value j with the same label, if any
        n = p.groups[i]
        pair = np.repeat(np.arange(i.size), n)
        gi = np.repeat(p.first[i], n) + ragged_arange(n)
        want = np.repeat(j, n) * p.n_labels + p.keys[gi] % p.n_labels
        at = np.minimum(np.searchsorted(p.keys, want), max(p.keys.size - 1, 0))
        hit = p.keys[at] == want if p.keys.size else np.zeros(0, dtype=bool)
        pair, gi, gj = pair[hit], gi[hit], at[hit]
        inter = p.runs.intersections(gi, gj).astype(np.float64)
        area = p.runs.area
        if self.pooling == "pooled":
            shared = np.bincount(pair, weights=inter, minlength=i.size)
            union = p.value_area[i] + p.value_area[j] - shared
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(union > 0, 1.0 - shared / union, 0.0)
        union_l = area[gi] + area[gj] - inter
        with np.errstate(invalid="ignore", divide="ignore"):
            iou = np.where(union_l > 0, inter / union_l, 0.0)
        both_on = np.bincount(pair, weights=(area[gi] > 0) & (area[gj] > 0), minlength=i.size)
        labels_on = p.nonempty[i] + p.nonempty[j] - both_on
        total = np.bincount(pair, weights=iou, minlength=i.size)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(labels_on > 0, 1.0 - total / labels_on, 0.0)


def mask_similarity_matrix(a: Sequence[Mask], b: Sequence[Mask]) -> np.ndarray:
    """Pixel IoU of every mask of ``a`` with every mask of ``b``, labels ignored.

    Two empty masks score 0 (nothing to match on).

    Parameters
    ----------
    a, b : sequence of Mask, lengths (n_a,) and (n_b,)

    Returns
    -------
    ndarray of float64, shape (n_a, n_b)
    """
    masks = list(a) + list(b)
    bad = next((m for m in masks if not isinstance(m, Mask)), None)
    if bad is not None:
        raise BadInput(f"mask_similarity_matrix: {type(bad).__name__} ({bad!r:.60}) is not a Mask")
    na, nb = len(a), len(b)
    if not na or not nb:
        return np.zeros((na, nb))
    runs = MaskRuns(masks, np.arange(na + nb), na + nb)
    ga, gb = np.repeat(np.arange(na), nb), np.tile(np.arange(na, na + nb), na)
    inter = runs.intersections(ga, gb).astype(np.float64)
    union = runs.area[ga] + runs.area[gb] - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union > 0, inter / union, 0.0).reshape(na, nb)


register("masks.iou", MaskDistance("pooled"), kind="masks", candidate=True)
register("masks.miou", MaskDistance("mean"), kind="masks")
register("masks.count", CountDistance("masks", Mask), kind="masks")

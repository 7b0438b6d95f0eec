"""Video tracks (VideoRectangle): boxes interpolated between keyframes as Label Studio
draws them, compared frame by frame, tracks matched one to one.

Frames (Label Studio 1.23's editor: ``regions/VideoRectangleRegion.js`` ``getShape`` and
``regions/VideoRegion.js`` ``isInLifespan``, mirrored, not copied; docs/formulas.md
"Video tracks"). With ``p`` the last keyframe at or before frame ``f``:

- no box before the first keyframe;
- ``f`` is ``p``'s own frame: ``p``'s box, whether ``p`` is enabled or not (two keyframes
  on one frame: the first one's box, the last one's ``enabled`` for what follows);
- otherwise the box shows iff ``p`` is enabled: interpolated linearly between ``p`` and
  the next keyframe, ``r = (f − p.frame) / (next.frame − p.frame)``, rotation along the
  shorter way round (Label Studio's ``normalizeAngle`` of the difference); after the last
  keyframe, its box, up to the track's ``end`` (the video's ``framesCount``).

Similarity of two tracks ``a``, ``b`` with visible frame sets ``Va``, ``Vb``::

    s(a, b) = Σ_{f ∈ Va ∩ Vb} IoU(a_f, b_f) / |Va ∪ Vb|

the mean IoU over the frames where either shows its box (a frame of one track only
scores 0). Distance of two annotations (track sets ``A``, ``B``): the tracks are matched
one to one for the largest total similarity (Hungarian, scipy ``linear_sum_assignment``)
and each matched pair counts ``1 − s``, each unmatched track 1, averaged over the
``max(|A|, |B|)`` matched pairs and unmatched tracks::

    D(A, B) = 1 − Σ_matched s / max(|A|, |B|)

Empty vs empty is 0, empty vs non-empty 1. ``labels="strict"``: tracks with different
labels have similarity 0. Variants: ``tracks.iou`` (default) and ``tracks.exact``, where
a frame scores 1 when both boxes are the same (to 1e-9) and else 0 — our reading of
Label Studio Enterprise's "exact frame matching" for VideoRectangle, whose definition is
not public.

Speed and memory: ``prepare`` packs every keyframe of the batch once (segment tables and
each track's visible-frame count, no per-frame storage, so memory does not grow with video
length); ``compute`` walks the frames both tracks of each compared pair could show, in
chunks of :data:`CHUNK_FRAMES`, vectorized (rotated boxes are intersected by shapely).
"""
from __future__ import annotations

from itertools import chain
from operator import attrgetter
from typing import Any, Literal, Sequence

import numpy as np
import shapely
from scipy.optimize import linear_sum_assignment

from ..model import Track
from ._ragged import CrossLayout, cross_layout, pair_chunks
from .base import Distance
from .boxes import box_corners
from .multi_object import LABEL_MODES, PackedObjects, flatten_regions
from .registry import register
from ..errors import BadInput

__all__ = ["TrackDistance", "PackedTracks", "pack_tracks", "visible_boxes", "track_pair_similarity",
           "track_similarity_matrix", "VARIANTS", "CHUNK_FRAMES"]

VARIANTS = ("iou", "exact")
Variant = Literal["iou", "exact"]
# Frames compared per vectorized step: about 30 float64 arrays of this length live at once.
CHUNK_FRAMES = 1 << 19
# Two boxes of one frame are "the same" for tracks.exact within this (coordinate units).
EXACT_TOL = 1e-9

_KEYFRAME_FIELDS = 7   # frame, enabled, x, y, width, height, rotation


def normalize_angle(a: np.ndarray) -> np.ndarray:
    """Angles in degrees mapped onto (−180, 180] (Label Studio's ``normalizeAngle``)."""
    return 180.0 - np.mod(180.0 - a, 360.0)


class PackedTracks(PackedObjects):
    """Every track of a batch of values, with its keyframes flat (see :func:`pack_tracks`).

    Attributes (beyond :class:`PackedObjects`'s ``starts``, ``counts``, ``labels``)
    ----------
    frame : ndarray of int64, shape (n_keyframes,)
        Keyframes in track order, then frame order.
    enabled : ndarray of bool, shape (n_keyframes,)
    x1, y1, x2, y2, rot : ndarray of float64, shape (n_keyframes,)
        Each keyframe's box by its corners before rotation (``x2 = x + width``) and its
        rotation in degrees.
    dx1, dy1, dx2, dy2, drot : ndarray of float64, shape (n_keyframes,)
        The change to the next keyframe of the same track (rotation the shorter way,
        normalised); 0 for a track's last keyframe.
    inv_span : ndarray of float64, shape (n_keyframes,)
        ``1 / (next.frame − frame)``; 0 where there is no later keyframe.
    first_dup : ndarray of int64, shape (n_keyframes,)
        The first keyframe on the same frame of the same track (its box shows there).
    group_last : ndarray of bool, shape (n_keyframes,)
        The keyframe is the last one on its frame (it decides what follows).
    key : ndarray of int64, shape (n_keyframes,)
        ``track * stride + frame``: sorted, for locating frames by ``searchsorted``.
    first, last : ndarray of int64, shape (n_tracks,)
        First and last frame that can show the track's box.
    n_visible : ndarray of float64, shape (n_tracks,)
        How many frames show it.
    bounds : ndarray of float64, shape (n_tracks, 4)
        xmin, ymin, xmax, ymax that hold every box the track shows (rotated tracks: grown
        by their longest diagonal): two tracks whose bounds are apart never overlap.
    has_dups, rotated : bool
        Some track has two keyframes on one frame; some keyframe is rotated.
    """

    def __init__(self, objects: list, counts: np.ndarray) -> None:
        super().__init__(objects, counts)
        n = len(objects)
        kcount = np.fromiter((len(t.keyframes) for t in objects), dtype=np.int64, count=n)
        total = int(kcount.sum())
        raw = np.fromiter(chain.from_iterable(chain.from_iterable(map(attrgetter("keyframes"), objects))),
                          dtype=np.float64, count=total * _KEYFRAME_FIELDS).reshape(total, _KEYFRAME_FIELDS)
        self.frame = raw[:, 0].astype(np.int64)
        self.enabled = raw[:, 1] != 0
        x, y, w, h, rot = (np.ascontiguousarray(raw[:, c]) for c in range(2, 7))
        self.x1, self.y1, self.x2, self.y2, self.rot = x, y, x + w, y + h, rot
        kstart = np.cumsum(kcount) - kcount
        kend = kstart + kcount
        track_of = np.repeat(np.arange(n, dtype=np.int64), kcount)
        k = np.arange(total, dtype=np.int64)
        has_next = (k + 1) < kend[track_of]
        nxt = np.minimum(k + 1, max(total - 1, 0))
        same_next = has_next & (self.frame[nxt] == self.frame)
        self.group_last = ~same_next
        self.has_dups = bool(same_next.any())
        starts_group = np.ones(total, dtype=bool)
        starts_group[1:] = ~same_next[:-1]
        self.first_dup = np.maximum.accumulate(np.where(starts_group, k, 0)) if total else k
        span = np.where(has_next, self.frame[nxt] - self.frame, 0)
        self.inv_span = np.divide(1.0, span, out=np.zeros(total), where=span > 0)
        for name in ("x1", "y1", "x2", "y2", "rot"):
            col = getattr(self, name)
            setattr(self, "d" + name, np.where(has_next, col[nxt] - col, 0.0))
        self.drot = normalize_angle(self.drot)
        rotated = (np.mod(rot, 360.0) != 0.0) | (self.drot != 0.0)
        self.rotated = bool(rotated.any())
        if n:
            last_k = kend - 1
            end = np.fromiter((-1 if t.end is None else t.end for t in objects), dtype=np.int64, count=n)
            self.first = self.frame[kstart]
            self.last = np.where(self.enabled[last_k], np.maximum(end, self.frame[last_k]), self.frame[last_k])
            # the frames each frame's last keyframe decides: its own, and up to the next keyframe when enabled
            stop = np.where(has_next, self.frame[nxt] - 1, self.last[track_of])
            stop = np.where(self.enabled, stop, self.frame)
            lengths = np.where(self.group_last, stop - self.frame + 1, 0)
            self.n_visible = np.bincount(track_of, weights=lengths, minlength=n).astype(np.float64)
            # interpolated corners stay between their keyframes' (linear in r); a rotating box
            # stays within its diagonal of its top-left corner
            grow = np.where(rotated, np.hypot(w, h), 0.0)
            self.bounds = np.stack([np.minimum.reduceat(np.minimum(x, self.x2) - grow, kstart),
                                    np.minimum.reduceat(np.minimum(y, self.y2) - grow, kstart),
                                    np.maximum.reduceat(np.maximum(x, self.x2) + grow, kstart),
                                    np.maximum.reduceat(np.maximum(y, self.y2) + grow, kstart)], axis=1)
        else:
            self.first = self.last = np.zeros(0, dtype=np.int64)
            self.n_visible = np.zeros(0)
            self.bounds = np.zeros((0, 4))
        self.stride = int(self.last.max()) + 2 if n else 2
        if n * self.stride >= 2 ** 62:
            raise BadInput(f"tracks: {n:,} tracks up to frame {self.stride - 2:,} are too many to index")
        self.key = track_of * self.stride + self.frame


def pack_tracks(values: Sequence[Any], what: str = "tracks") -> PackedTracks:
    """Check that every value is a sequence of :class:`Track` and pack them.

    Raises
    ------
    ValueError
        Naming the value (position in the batch) and object that is not a Track.
    """
    flat = flatten_regions(values, Track, what)
    return PackedTracks(flat.objects, flat.counts)


def _keyframe_at(p: PackedTracks, t: np.ndarray, lo: np.ndarray, hi: np.ndarray, off: np.ndarray,
                 total: int) -> np.ndarray:
    """For each frame ``lo[k] .. hi[k]`` of track ``t[k]`` (laid out from ``off[k]``), the
    last keyframe at or before it: a forward fill of the keyframes met, no per-frame search.

    Returns
    -------
    ndarray of int64, shape (total,)
        Global keyframe indices (the last of a frame's keyframes).
    """
    base = t * p.stride
    k0 = np.searchsorted(p.key, base + lo, side="right") - 1
    k1 = np.searchsorted(p.key, base + hi, side="right") - 1
    n_ev = k1 - k0
    ev_pair = np.repeat(np.arange(t.size, dtype=np.int64), n_ev)
    ev = k0[ev_pair] + 1 + np.arange(ev_pair.size, dtype=np.int64) - np.repeat(np.cumsum(n_ev) - n_ev, n_ev)
    if p.has_dups:   # one event per frame: its last keyframe
        keep = p.group_last[ev]
        ev, ev_pair = ev[keep], ev_pair[keep]
    fill = np.full(total, -1, dtype=np.int64)
    fill[off] = k0
    fill[off[ev_pair] + p.frame[ev] - lo[ev_pair]] = ev
    where = np.where(fill >= 0, np.arange(total, dtype=np.int64), 0)
    np.maximum.accumulate(where, out=where)
    return fill[where]


def _boxes(p: PackedTracks, k: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, ...]:
    """Boxes at frames ``f`` (visible) whose last keyframe is ``k``: x1, y1, x2, y2 and
    rotation (None when no keyframe of the batch is rotated), shape (n,) each."""
    fk = p.frame[k]
    r = (f - fk) * p.inv_span[k]   # 0 on a keyframe's own frame
    if p.has_dups:   # on its own frame, a keyframe shows its frame's first keyframe's box
        k = np.where(fk == f, p.first_dup[k], k)
    out = [getattr(p, c)[k] + getattr(p, "d" + c)[k] * r for c in ("x1", "y1", "x2", "y2")]
    out.append(p.rot[k] + p.drot[k] * r if p.rotated else None)
    return tuple(out)


def _frame_scores(a: tuple, b: tuple, variant: Variant) -> np.ndarray:
    """Per-frame similarity of boxes ``a`` and ``b`` (:func:`_boxes`), shape (n,)."""
    ax1, ay1, ax2, ay2, arot = a
    bx1, by1, bx2, by2, brot = b
    if variant == "exact":
        same = np.ones(ax1.size, dtype=bool)
        for u, v in ((ax1, bx1), (ay1, by1), (ax2, bx2), (ay2, by2)):
            same &= np.abs(u - v) <= EXACT_TOL * np.maximum(1.0, np.abs(u))
        if arot is not None:
            same &= np.abs(normalize_angle(arot - brot)) <= EXACT_TOL * 360.0
        return same.astype(np.float64)
    iw = np.minimum(ax2, bx2)
    iw -= np.maximum(ax1, bx1)
    np.maximum(iw, 0.0, out=iw)
    ih = np.minimum(ay2, by2)
    ih -= np.maximum(ay1, by1)
    np.maximum(ih, 0.0, out=ih)
    inter = np.multiply(iw, ih, out=iw)
    area_a = (ax2 - ax1) * (ay2 - ay1)
    area_b = (bx2 - bx1) * (by2 - by1)
    if arot is not None:
        rot = (np.mod(arot, 360.0) != 0.0) | (np.mod(brot, 360.0) != 0.0)
        if rot.any():
            ca = box_corners(ax1[rot], ay1[rot], ax2[rot] - ax1[rot], ay2[rot] - ay1[rot], arot[rot])
            cb = box_corners(bx1[rot], by1[rot], bx2[rot] - bx1[rot], by2[rot] - by1[rot], brot[rot])
            got = shapely.area(shapely.intersection(shapely.polygons(ca), shapely.polygons(cb)))
            # GEOS may lose a sliver's self-intersection: the same box overlaps itself fully
            same = np.all(ca == cb, axis=(1, 2))
            got[same] = area_a[rot][same]
            inter[rot] = got
    union = area_a + area_b - inter
    out = np.divide(inter, union, out=np.zeros(ax1.size), where=union > 0)
    flat = union <= 0
    if flat.any():   # two zero-area boxes: 1 for the same box, else 0
        out[flat] = ((ax1[flat] == bx1[flat]) & (ay1[flat] == by1[flat]) & (ax2[flat] == bx2[flat])
                     & (ay2[flat] == by2[flat]))
    return np.clip(out, 0.0, 1.0, out=out)


def track_pair_similarity(p: PackedTracks, ta: np.ndarray, tb: np.ndarray,
                          variant: Variant = "iou") -> np.ndarray:
    """``s(a, b)`` (module docstring) of tracks ``ta[n]`` and ``tb[n]`` (flat indices in
    ``p``), labels ignored.

    Returns
    -------
    ndarray of float64, shape (n,), in [0, 1]
    """
    ta = np.asarray(ta, dtype=np.int64)
    tb = np.asarray(tb, dtype=np.int64)
    score = np.zeros(ta.size)
    both = np.zeros(ta.size)
    lo = np.maximum(p.first[ta], p.first[tb])
    hi = np.minimum(p.last[ta], p.last[tb])
    ba, bb = p.bounds[ta], p.bounds[tb]
    # frames shared in time, boxes that may meet in space (<=: two equal points meet)
    meet = np.flatnonzero((hi >= lo) & np.all(ba[:, :2] <= bb[:, 2:], axis=1) & np.all(bb[:, :2] <= ba[:, 2:], axis=1))
    # a window longer than a chunk is cut in pieces: a chunk never holds more than CHUNK_FRAMES
    step = CHUNK_FRAMES
    n_pieces = (hi[meet] - lo[meet]) // step + 1
    owner = np.repeat(meet, n_pieces)
    first_piece = np.repeat(np.cumsum(n_pieces) - n_pieces, n_pieces)
    piece_lo = lo[owner] + step * (np.arange(owner.size, dtype=np.int64) - first_piece)
    piece_hi = np.minimum(hi[owner], piece_lo + step - 1)
    length = piece_hi - piece_lo + 1
    for sl in pair_chunks(length, step):
        idx = owner[sl]
        n = length[sl]
        lo_c, hi_c = piece_lo[sl], piece_hi[sl]
        total = int(n.sum())
        off = np.cumsum(n) - n
        rep = np.repeat(np.arange(n.size, dtype=np.int64), n)
        f = np.arange(total, dtype=np.int64) + np.repeat(lo_c - off, n)
        ka = _keyframe_at(p, ta[idx], lo_c, hi_c, off, total)
        kb = _keyframe_at(p, tb[idx], lo_c, hi_c, off, total)
        on = ((p.frame[ka] == f) | p.enabled[ka]) & ((p.frame[kb] == f) | p.enabled[kb])
        on = np.flatnonzero(on)
        if not on.size:
            continue
        f, rep = f[on], rep[on]
        s = _frame_scores(_boxes(p, ka[on], f), _boxes(p, kb[on], f), variant)
        # pieces of one window may share a chunk: add by owner
        np.add.at(score, idx, np.bincount(rep, weights=s, minlength=n.size))
        np.add.at(both, idx, np.bincount(rep, minlength=n.size))
    union = p.n_visible[ta] + p.n_visible[tb] - both
    return np.clip(np.divide(score, union, out=np.zeros(ta.size), where=union > 0), 0.0, 1.0)


def visible_boxes(track: Track) -> tuple[np.ndarray, np.ndarray]:
    """The frames that show ``track``'s box and the box on each, as Label Studio draws them.

    Returns
    -------
    frames : ndarray of int64, shape (n,)
    boxes : ndarray of float64, shape (n, 5)
        x, y, width, height, rotation (degrees, as interpolated; not normalised).
    """
    p = pack_tracks([(track,)], "visible_boxes")
    total = int(p.last[0] - p.first[0] + 1)
    f = p.first[0] + np.arange(total, dtype=np.int64)
    k = _keyframe_at(p, np.zeros(1, dtype=np.int64), p.first, p.last, np.zeros(1, dtype=np.int64), total)
    on = (p.frame[k] == f) | p.enabled[k]
    f, k = f[on], k[on]
    x1, y1, x2, y2, rot = _boxes(p, k, f)
    return f, np.stack([x1, y1, x2 - x1, y2 - y1, np.zeros(f.size) if rot is None else rot], axis=1)


def track_similarity_matrix(a: Sequence[Track], b: Sequence[Track], variant: Variant = "iou") -> np.ndarray:
    """Label-agnostic similarity ``s`` (module docstring; ``1 −`` the distance of the two
    one-track values) of every track of ``a`` with every track of ``b``.

    Returns
    -------
    ndarray of float64, shape (len(a), len(b))
    """
    a, b = tuple(a), tuple(b)
    if not a or not b:
        return np.zeros((len(a), len(b)))
    p = pack_tracks([a, b], "track_similarity_matrix")
    ia = np.repeat(np.arange(len(a), dtype=np.int64), len(b))
    ib = len(a) + np.tile(np.arange(len(b), dtype=np.int64), len(a))
    return track_pair_similarity(p, ia, ib, variant).reshape(len(a), len(b))


class TrackDistance(Distance):
    """Distance between two sets of video tracks (module docstring).

    Parameters
    ----------
    variant : {"iou", "exact"}
        Per-frame score: the boxes' IoU, or 1 for the same box and 0 otherwise.
    labels : {"strict", "ignore"}
    """

    kind = "tracks"

    def __init__(self, variant: Variant = "iou", labels: Literal["strict", "ignore"] = "strict") -> None:
        if variant not in VARIANTS:
            raise BadInput(f"track variant must be one of {VARIANTS}, got {variant!r}")
        if labels not in LABEL_MODES:
            raise BadInput(f"labels must be one of {LABEL_MODES}, got {labels!r}")
        self.variant = variant
        self.labels = labels
        self.name = f"tracks.{variant}"

    def prepare(self, values: Sequence[Any]) -> PackedTracks:
        return pack_tracks(values, self.name)

    def compute(self, p: PackedTracks, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        na, nb = p.counts[i], p.counts[j]
        out = np.where((na == 0) & (nb == 0), 0.0, 1.0)
        both = np.flatnonzero((na > 0) & (nb > 0))
        if both.size == 0:
            return out
        na, nb = na[both], nb[both]
        best = np.empty(both.size)
        for sl in pair_chunks(na * nb):
            lay = cross_layout(p.starts[i[both[sl]]], na[sl], p.starts[j[both[sl]]], nb[sl])
            s = np.zeros(lay.size)
            same = (np.flatnonzero(p.labels[lay.a] == p.labels[lay.b]) if self.labels == "strict"
                    else np.arange(lay.size))
            if same.size:
                s[same] = track_pair_similarity(p, lay.a[same], lay.b[same], self.variant)
            best[sl] = _matched_sum(s, lay)
        out[both] = 1.0 - best / np.maximum(na, nb)
        return np.clip(out, 0.0, 1.0)


def _matched_sum(s: np.ndarray, lay: CrossLayout) -> np.ndarray:
    """Largest total similarity of a one-to-one matching, per value pair, shape (n_pairs,).

    Vectorized where the answer is plain: one track on either side (the block's best
    entry), nothing similar (0), or the tracks of the smaller side each preferring a
    different partner (their best entries then sum to the optimum, no matching can beat
    every track's best); the other blocks go to the Hungarian algorithm one by one.
    """
    out = np.maximum.reduceat(s, lay.offsets) if s.size else np.zeros(lay.na.size)
    open_ = (lay.na > 1) & (lay.nb > 1) & (out > 0)
    if not open_.any():
        return out
    by_row = (lay.na <= lay.nb)[lay.pair]   # the smaller side picks
    width = int(max(lay.na.max(), lay.nb.max()))
    group = lay.pair * width + np.where(by_row, lay.la, lay.lb)
    partner = np.where(by_row, lay.lb, lay.la)
    order = np.lexsort((-s, group))
    g = group[order]
    best = order[np.r_[True, g[1:] != g[:-1]]]   # each track's best partner (ties: any one)
    pair = lay.pair[best]
    total = np.bincount(pair, weights=s[best], minlength=lay.na.size)
    distinct = np.bincount(np.unique(pair * width + partner[best]) // width, minlength=lay.na.size)
    plain = open_ & (distinct == np.minimum(lay.na, lay.nb))
    out[plain] = total[plain]
    for q in np.flatnonzero(open_ & ~plain):
        blk = s[lay.offsets[q]: lay.offsets[q] + lay.na[q] * lay.nb[q]].reshape(lay.na[q], lay.nb[q])
        r, c = linear_sum_assignment(blk, maximize=True)
        out[q] = blk[r, c].sum()
    return out


for _variant in VARIANTS:
    register(f"tracks.{_variant}", TrackDistance(_variant), kind="tracks", candidate=_variant == "iou")

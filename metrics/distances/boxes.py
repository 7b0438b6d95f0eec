"""Bounding boxes (RectangleLabels): IoU, GIoU, corner L2 and count difference.

References: paper 000 appendix ("Bounding Box"); Rezatofighi et al. 2019, "Generalized
Intersection over Union" (GIoU); docs/formulas.md §4. Rotation is honoured: boxes with a
rotation are intersected exactly as polygons (shapely, vectorized); pairs of axis-aligned
boxes take a closed-form numpy fast path.

Similarities per box pair (then combined over the two sets, see
:mod:`.multi_object`):

- ``iou``  = |a ∩ b| / |a ∪ b|; two zero-area boxes score 1 if identical, else 0.
- ``giou`` = IoU − |C \\ (a ∪ b)| / |C| ∈ [−1, 1], with C the smallest enclosing convex
  object: the enclosing axis-aligned box when both boxes are axis-aligned (the paper's
  box case), the convex hull of both boxes otherwise. Used as the similarity itself, so
  the best-match rule floors it at 0 as paper 000's code does: ``boxes.giou`` reproduces
  its GIoU row (docs/formulas.md §4).
- ``giou_graded`` = ``(1 + giou) / 2`` ∈ [0, 1]: a single pair's distance is
  ``(1 − giou) / 2``, so disjoint boxes keep GIoU's graded distance (farther apart =
  farther) instead of all being floored at 0. Our own variant, ``boxes.giou_graded``.
- ``l2``   = max(0, 1 − (RMSE(a₀, b₀) + RMSE(a₂, b₂)) / scale) over the two opposite
  corners (top-left and bottom-right before rotation), the appendix's "L2" with its
  ``scale = 20`` (coordinate units) as default.
"""
from __future__ import annotations

from itertools import chain
from operator import attrgetter

import numpy as np
import shapely

from ..model import Box
from .multi_object import CountDistance, MultiObjectDistance, PackedObjects
from .registry import register
from ..errors import BadInput

__all__ = ["BoxDistance", "box_corners", "box_pair_iou", "box_pair_giou"]

SIMILARITIES = ("iou", "giou", "giou_graded", "l2")


def box_corners(x: np.ndarray, y: np.ndarray, w: np.ndarray, h: np.ndarray,
                rotation: np.ndarray) -> np.ndarray:
    """Corners of boxes rotated (degrees, clockwise on screen) about their top-left corner.

    Returns
    -------
    ndarray, shape (n, 4, 2)
        Top-left, top-right, bottom-right, bottom-left (Label Studio's convention,
        as :meth:`Box.corners`).
    """
    t = np.radians(rotation)
    c, s = np.cos(t), np.sin(t)
    px = np.stack([np.zeros_like(w), w, w, np.zeros_like(w)], axis=1)
    py = np.stack([np.zeros_like(h), np.zeros_like(h), h, h], axis=1)
    out = np.empty((x.size, 4, 2))
    out[..., 0] = x[:, None] + px * c[:, None] - py * s[:, None]
    out[..., 1] = y[:, None] + px * s[:, None] + py * c[:, None]
    return out


def _ratio(num: np.ndarray, den: np.ndarray, d: dict, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """num/den; where den is 0 (two zero-area boxes), 1 if the boxes coincide, else 0.

    Coincide = same corners up to float noise: a point-sized box is the same point
    whatever its rotation.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        r = num / den
    zero = ~(den > 0)
    if zero.any():
        az, bz = a[zero], b[zero]
        if "corners" in d:
            r[zero] = np.all(np.isclose(d["corners"][az], d["corners"][bz]), axis=(1, 2))
        else:
            r[zero] = np.all([np.isclose(d[k][az], d[k][bz]) for k in ("x1", "y1", "x2", "y2")], axis=0)
    return r


class BoxDistance(MultiObjectDistance):
    """Distance between two sets of boxes.

    Parameters
    ----------
    variant : {"iou", "giou", "giou_graded", "l2"}
    combine : {"pooled", "directional", "hungarian"}
        See :mod:`.multi_object`; "pooled" is paper 000's Table 1 form.
    labels : {"strict", "ignore"}
    l2_scale : float
        Corner RMSE (coordinate units) at which the ``l2`` similarity reaches 0.
    """

    region_type = Box
    kind = "boxes"

    def __init__(self, variant: str = "iou", combine: str = "pooled",
                 labels: str = "strict", l2_scale: float = 20.0) -> None:
        super().__init__(combine=combine, labels=labels)
        if variant not in SIMILARITIES:
            raise BadInput(f"box variant must be one of {SIMILARITIES}, got {variant!r}")
        if not l2_scale > 0:
            raise BadInput(f"l2_scale must be > 0, got {l2_scale!r}")
        self.sim_name = variant
        self.l2_scale = float(l2_scale)
        self.name = f"boxes.{variant}"

    def pack(self, packed: PackedObjects) -> None:
        get = attrgetter("x", "y", "width", "height", "rotation")
        n = len(packed.objects)
        arr = np.fromiter(chain.from_iterable(map(get, packed.objects)), dtype=np.float64,
                          count=5 * n).reshape(n, 5)
        x, y, w, h, rot = (np.ascontiguousarray(arr[:, k]) for k in range(5))
        d = packed.data
        d["x1"], d["y1"], d["x2"], d["y2"] = x, y, x + w, y + h
        # From the rounded corners, so that the axis-aligned intersection (computed from the
        # same corners) of a box with itself equals its area even for sub-ulp sizes.
        d["area"] = (d["x2"] - x) * (d["y2"] - y)
        d["rot"] = np.mod(rot, 360.0)
        d["rotated"] = d["rot"] != 0.0
        any_rotated = bool(d["rotated"].any())
        if self.sim_name == "l2" or any_rotated:
            corners = box_corners(x, y, w, h, rot)
            d["corners"] = corners
            d["c0x"], d["c0y"] = corners[:, 0, 0].copy(), corners[:, 0, 1].copy()
            d["c2x"], d["c2y"] = corners[:, 2, 0].copy(), corners[:, 2, 1].copy()
        if any_rotated:
            d["lo"], d["hi"] = corners.min(axis=1), corners.max(axis=1)
            d["poly"] = shapely.polygons(corners)
            d["parea"] = shapely.area(d["poly"])

    def similarity(self, packed: PackedObjects, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        d = packed.data
        if self.sim_name == "l2":
            e0 = np.hypot(d["c0x"][a] - d["c0x"][b], d["c0y"][a] - d["c0y"][b])
            e2 = np.hypot(d["c2x"][a] - d["c2x"][b], d["c2y"][a] - d["c2y"][b])
            # RMSE of a 2-d point = its Euclidean distance / sqrt(2)
            return np.maximum(0.0, 1.0 - (e0 + e2) / (np.sqrt(2.0) * self.l2_scale))
        if self.sim_name == "iou":
            return box_pair_iou(d, a, b)
        giou = box_pair_giou(d, a, b)
        return (1.0 + giou) / 2.0 if self.sim_name == "giou_graded" else giou


def _aligned_parts(d: dict, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Intersection, union and enclosing-box areas of axis-aligned boxes, shape (n,) each."""
    # Contiguous 1-d columns and in-place ops: several times faster than (n, 2) views.
    x1a, x1b, x2a, x2b = d["x1"][a], d["x1"][b], d["x2"][a], d["x2"][b]
    y1a, y1b, y2a, y2b = d["y1"][a], d["y1"][b], d["y2"][a], d["y2"][b]
    iw = np.minimum(x2a, x2b)
    iw -= np.maximum(x1a, x1b)
    ih = np.minimum(y2a, y2b)
    ih -= np.maximum(y1a, y1b)
    inter = np.maximum(iw, 0.0, out=iw)
    inter *= np.maximum(ih, 0.0, out=ih)
    union = d["area"][a]
    union += d["area"][b]
    union -= inter
    # the smallest box enclosing both (GIoU's C)
    cw = np.maximum(x2a, x2b, out=x2a)
    cw -= np.minimum(x1a, x1b, out=x1a)
    ch = np.maximum(y2a, y2b, out=y2a)
    ch -= np.minimum(y1a, y1b, out=y1a)
    cw *= ch
    return inter, union, cw


def _rotated_parts(d: dict, a: np.ndarray, b: np.ndarray, hull: bool
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Exact polygon intersection, union and (optionally) convex-hull areas."""
    pa, pb = d["poly"][a], d["poly"][b]
    inter = np.zeros(a.size)
    # Only pairs whose extents overlap need a GEOS intersection.
    near = np.all((d["lo"][a] < d["hi"][b]) & (d["lo"][b] < d["hi"][a]), axis=1)
    if near.any():
        inter[near] = shapely.area(shapely.intersection(pa[near], pb[near]))
    # GEOS can lose a sliver's self-intersection entirely; identical boxes overlap fully.
    same = np.all(d["corners"][a] == d["corners"][b], axis=(1, 2))
    inter[same] = d["parea"][a[same]]
    union = d["parea"][a] + d["parea"][b] - inter
    c = None
    if hull:
        pts = np.concatenate([d["corners"][a], d["corners"][b]], axis=1)
        c = shapely.area(shapely.convex_hull(shapely.multipoints(pts)))
        c[same] = union[same]
    return inter, union, c


def box_pair_iou(d: dict, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of boxes ``a[k]`` and ``b[k]``, shape (n,), rotation honoured."""
    inter, union, _ = _aligned_parts(d, a, b)
    rot = d["rotated"][a] | d["rotated"][b]
    if rot.any():
        inter[rot], union[rot], _ = _rotated_parts(d, a[rot], b[rot], hull=False)
    return np.clip(_ratio(inter, union, d, a, b), 0.0, 1.0)


def box_pair_giou(d: dict, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """GIoU (Rezatofighi et al. 2019, Alg. 1) of boxes ``a[k]``, ``b[k]``, in [−1, 1]."""
    inter, union, c = _aligned_parts(d, a, b)
    rot = d["rotated"][a] | d["rotated"][b]
    if rot.any():
        inter[rot], union[rot], c[rot] = _rotated_parts(d, a[rot], b[rot], hull=True)
    iou = _ratio(inter, union, d, a, b)
    with np.errstate(invalid="ignore", divide="ignore"):
        penalty = np.where(c > 0, (c - union) / c, 0.0)
    return np.clip(iou - penalty, -1.0, 1.0)


for _sim in SIMILARITIES:
    register(f"boxes.{_sim}", BoxDistance(_sim), kind="boxes", candidate=True)
register("boxes.count", CountDistance("boxes", Box), kind="boxes")

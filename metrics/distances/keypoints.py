"""Keypoints (KeyPointLabels): OKS, IoU of the keypoints' bounding boxes, count difference.

References: paper 000 appendix ("Keypoints: OKS", Ruggero Ronchi & Perona 2017); the
COCO keypoint evaluation (``cocoeval.computeOks``): per keypoint
``ks = exp(−d² / (2 s² k²))`` with ``k = 2σ`` (σ per keypoint type) and ``s²`` the
object's area; OKS is the mean ks over the keypoints.

Label Studio stores each keypoint as its own region with a label (the keypoint type),
so a value is a set of labelled points. ``keypoints.oks`` scores every pair of points
by ks (labels must match by default, as COCO compares keypoints of the same type) and
combines the two sets with the pooled best match of :mod:`.multi_object`: when both
annotations have one point per label this is exactly COCO's OKS, and a point one
annotator omitted counts 0. The scale ``s²`` of a pair of values is the mean of the
areas of their keypoints' bounding boxes (COCO uses the ground truth's area; agreement
has no ground truth, so both sides count), floored at ``min_area``; pass ``area`` to fix
it instead.
"""
from __future__ import annotations

from typing import Any, Hashable, Mapping, Sequence

import numpy as np

from ..model import Keypoint
from .base import Distance
from .multi_object import CountDistance, MultiObjectDistance, PackedObjects, flatten_regions
from .registry import register
from ..errors import BadInput

__all__ = ["KeypointDistance", "KeypointBoxIoU", "value_boxes"]


def value_boxes(packed: PackedObjects) -> np.ndarray:
    """Bounding box ``(xmin, ymin, xmax, ymax)`` of each value's keypoints, shape (n_values, 4).

    Empty values get NaN.
    """
    n = packed.counts.size
    out = np.full((n, 4), np.nan)
    if packed.value_of.size:
        xy = packed.data["xy"]
        for col, (fn, dim) in enumerate(((np.minimum, 0), (np.minimum, 1), (np.maximum, 0), (np.maximum, 1))):
            nonempty = packed.counts > 0
            red = fn.reduceat(xy[:, dim], packed.starts[nonempty])
            out[nonempty, col] = red
    return out


def _pack_xy(packed: PackedObjects) -> None:
    objs = packed.objects
    packed.data["xy"] = np.fromiter((c for o in objs for c in (o.x, o.y)), dtype=np.float64,
                                    count=2 * len(objs)).reshape(len(objs), 2)


class KeypointDistance(MultiObjectDistance):
    """OKS-based distance between two sets of keypoints.

    Parameters
    ----------
    sigmas : mapping label -> σ, optional
        Per keypoint type σ (COCO's ``sigmas``, e.g. 0.025 for eyes, 0.107 for hips).
    default_sigma : float
        σ of labels not in ``sigmas``.
    area : float, optional
        Fixed object area ``s²`` (coordinate units squared); default: derived per pair.
    min_area : float
        Floor of the derived area (a value with one keypoint has a zero-area box).
    combine, labels : see :class:`.multi_object.MultiObjectDistance`.
    """

    region_type = Keypoint
    kind = "keypoints"

    def __init__(self, sigmas: Mapping[Hashable, float] | None = None, default_sigma: float = 0.1,
                 area: float | None = None, min_area: float = 100.0,
                 combine: str = "pooled", labels: str = "strict") -> None:
        super().__init__(combine=combine, labels=labels)
        self.sigmas = dict(sigmas or {})
        for lab, s in list(self.sigmas.items()) + [("default", default_sigma)]:
            if not s > 0:
                raise BadInput(f"keypoint sigma for {lab!r} must be > 0, got {s!r}")
        if area is not None and not area > 0:
            raise BadInput(f"area must be > 0, got {area!r}")
        self.default_sigma = float(default_sigma)
        self.area = area
        self.min_area = float(min_area)
        self.name = "keypoints.oks"

    def pack(self, packed: PackedObjects) -> None:
        _pack_xy(packed)
        sig = np.array([self.sigmas.get(lab, self.default_sigma) for lab in packed.label_names])
        packed.data["k2"] = (2.0 * sig[packed.labels]) ** 2 if packed.labels.size else np.zeros(0)
        if self.area is None:
            box = value_boxes(packed)
            packed.data["value_area"] = np.nan_to_num((box[:, 2] - box[:, 0]) * (box[:, 3] - box[:, 1]))

    def similarity(self, packed: PackedObjects, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """COCO keypoint similarity ks of points ``a[k]``, ``b[k]``, shape (n,)."""
        d = packed.data
        d2 = ((d["xy"][a] - d["xy"][b]) ** 2).sum(axis=1)
        if self.area is None:
            va, vb = packed.value_of[a], packed.value_of[b]
            s2 = np.maximum((d["value_area"][va] + d["value_area"][vb]) / 2.0, self.min_area)
        else:
            s2 = self.area
        k2 = (d["k2"][a] + d["k2"][b]) / 2.0  # equal when the labels match
        return np.exp(-d2 / (2.0 * s2 * k2))


class KeypointBoxIoU(Distance):
    """1 − IoU of the smallest axis-aligned boxes holding each value's keypoints.

    Paper 000's coarse keypoint distance. Two zero-area boxes (e.g. single points) score
    distance 0 if they coincide, else 1; empty vs empty 0, empty vs non-empty 1.
    """

    kind = "keypoints"

    def prepare(self, values: Sequence[Any]) -> np.ndarray:
        packed = flatten_regions(values, Keypoint, self.name)
        _pack_xy(packed)
        return value_boxes(packed)

    def compute(self, box: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        a, b = box[i], box[j]
        empty_a, empty_b = np.isnan(a[:, 0]), np.isnan(b[:, 0])
        lo = np.maximum(a[:, :2], b[:, :2])
        hi = np.minimum(a[:, 2:], b[:, 2:])
        inter = np.prod(np.clip(hi - lo, 0, None), axis=1)
        area_a = np.prod(a[:, 2:] - a[:, :2], axis=1)
        area_b = np.prod(b[:, 2:] - b[:, :2], axis=1)
        union = area_a + area_b - inter
        with np.errstate(invalid="ignore", divide="ignore"):
            iou = np.where(union > 0, inter / union, np.all(a == b, axis=1).astype(float))
        d = 1.0 - np.clip(iou, 0.0, 1.0)
        d = np.where(empty_a | empty_b, np.where(empty_a & empty_b, 0.0, 1.0), d)
        return d


register("keypoints.oks", KeypointDistance(), kind="keypoints", candidate=True)
register("keypoints.iou", KeypointBoxIoU(), kind="keypoints", candidate=True)
register("keypoints.count", CountDistance("keypoints", Keypoint), kind="keypoints")

"""Polygons (PolygonLabels): IoU via shapely, and count difference.

Reference: docs/formulas.md §4 (polygons: IoU via shapely); paper 000 appendix for the
IoU score and the multi-object combinators (:mod:`.multi_object`).

Self-intersecting or otherwise invalid polygons are repaired with ``shapely.make_valid``
(keeping the polygonal parts); fewer than three distinct vertices give an empty shape
(area 0). Each repair is reported once per batch with :mod:`warnings`, naming the value
and object; it never raises.
"""
from __future__ import annotations

import warnings

import numpy as np
import shapely

from ..model import Polygon
from .multi_object import CountDistance, MultiObjectDistance, PackedObjects
from .registry import register

__all__ = ["PolygonDistance", "to_geometries"]


def to_geometries(packed: PackedObjects, name: str = "polygons") -> np.ndarray:
    """Valid shapely (Multi)Polygons of all objects, shape (n_objects,).

    Invalid ones are repaired; the repairs are listed in one warning.
    """
    n = len(packed.objects)
    geoms = np.empty(n, dtype=object)
    repaired: list[str] = []
    for k, obj in enumerate(packed.objects):
        pts = obj.points
        if len(set(pts)) < 3:
            geoms[k] = shapely.Polygon()
            repaired.append(f"value #{packed.value_of[k]} object #{k - packed.starts[packed.value_of[k]]}"
                            f" has {len(set(pts))} distinct point(s): treated as empty")
            continue
        geoms[k] = shapely.Polygon(pts)
    invalid = np.flatnonzero(~shapely.is_valid(geoms))
    if invalid.size:
        fixed = shapely.make_valid(geoms[invalid])
        for k, g in zip(invalid, fixed):
            # Keep only the polygonal parts (make_valid may add lines/points).
            parts = [p for p in shapely.get_parts(g) if p.geom_type in ("Polygon", "MultiPolygon")]
            geoms[k] = shapely.union_all(parts) if parts else shapely.Polygon()
            v = packed.value_of[k]
            repaired.append(f"value #{v} object #{k - packed.starts[v]} was invalid "
                            f"(e.g. self-intersecting): repaired with make_valid")
    if repaired:
        more = f" (+{len(repaired) - 5} more)" if len(repaired) > 5 else ""
        warnings.warn(f"{name}: " + "; ".join(repaired[:5]) + more, RuntimeWarning, stacklevel=3)
    return geoms


class PolygonDistance(MultiObjectDistance):
    """Distance between two sets of polygons by IoU.

    Parameters
    ----------
    combine : {"pooled", "directional", "hungarian"}
    labels : {"strict", "ignore"}
    """

    region_type = Polygon
    kind = "polygons"

    def __init__(self, combine: str = "pooled", labels: str = "strict") -> None:
        super().__init__(combine=combine, labels=labels)
        self.name = "polygons.iou"

    def pack(self, packed: PackedObjects) -> None:
        geoms = to_geometries(packed, self.name)
        d = packed.data
        d["geom"] = geoms
        d["area"] = shapely.area(geoms) if geoms.size else np.zeros(0)
        b = shapely.bounds(geoms) if geoms.size else np.zeros((0, 4))
        d["lo"], d["hi"] = b[:, :2], b[:, 2:]

    def similarity(self, packed: PackedObjects, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """IoU of polygons ``a[k]``, ``b[k]``, shape (n,); two empty shapes score 0."""
        d = packed.data
        inter = np.zeros(a.size)
        near = np.all((d["lo"][a] <= d["hi"][b]) & (d["lo"][b] <= d["hi"][a]), axis=1)
        near &= (d["area"][a] > 0) & (d["area"][b] > 0)
        if near.any():
            inter[near] = shapely.area(shapely.intersection(d["geom"][a[near]], d["geom"][b[near]]))
        union = d["area"][a] + d["area"][b] - inter
        with np.errstate(invalid="ignore", divide="ignore"):
            iou = np.where(union > 0, inter / union, 0.0)
        return np.clip(iou, 0.0, 1.0)


register("polygons.iou", PolygonDistance(), kind="polygons", candidate=True)
register("polygons.count", CountDistance("polygons", Polygon), kind="polygons")

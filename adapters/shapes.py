"""Image shapes: EllipseLabels/Ellipse and VectorLabels/Vector.

What Label Studio writes (its frontend's ``regions/EllipseRegion.jsx`` and
``regions/VectorRegion.jsx``), coordinates in percent of the image plus the image size:

- ellipse: ``{"x", "y", "radiusX", "radiusY", "rotation", "ellipselabels"}`` — the
  centre, the radii (``radiusX`` in percent of the width, ``radiusY`` of the height) and
  degrees clockwise about the centre;
- vector: ``{"vertices": [{"id", "x", "y", "prevPointId", "isBezier", "controlPoint1",
  "controlPoint2"}, ...], "closed": bool, "vectorlabels": [...]}``. A vertex joins the
  vertex named by its ``prevPointId`` (the one before it in the list when it names none;
  none for the first), so a skeleton can branch; ``closed`` joins the last vertex back
  to the first. A segment is a cubic Bézier curve when its start has ``controlPoint2`` or
  its end ``controlPoint1`` (the missing one a third of the way along the chord, as the
  editor draws it), else straight; curves are flattened into :data:`BEZIER_STEPS`
  straight pieces. Plain ``[x, y]`` vertices are read too.

Pixels when every region of the control has the image size, else percent for the whole
control (a warning says so), as for rectangles (:mod:`.regions`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ls_agreement.metrics.model import Curve, Ellipse

from .config import ControlSpec
from .errors import BadValue, SuspectValue, show
from .fields import (IMAGE_LIMIT, finite_or_none, label_key, labels_key, labels_of, nonneg, number,
                     undeclared)
from .regions import plan

__all__ = ["TYPES", "MULTI", "parse", "plan", "build", "BEZIER_STEPS"]

TYPES = {"ellipselabels", "ellipse", "vectorlabels", "vector", "labels"}
MULTI = True
#: Straight pieces a Bézier segment is flattened into.
BEZIER_STEPS = 16
# The editor puts a missing control point this far along the chord (VectorShape.tsx).
_CHORD = 0.3
# vertices per vector region beyond which it is refused (a person draws far fewer)
MAX_VERTICES = 100_000

_LABEL_KEY = {"ellipse": "ellipselabels", "vector": "vectorlabels"}


def parse(result: dict, value: dict, spec: ControlSpec, data: Any) -> tuple:
    """One region as ``(label, geometry, width_px, height_px)`` in percent.

    Raises
    ------
    BadValue
        Missing or non-finite coordinates, negative radii, malformed vertices.
    """
    region = spec.region or "ellipse"
    key = _LABEL_KEY[region]
    labels = labels_of(value, key)
    label = label_key(labels)
    if region == "ellipse":
        geom: tuple = (number(value, "x"), number(value, "y"), nonneg(value, "radiusX"),
                       nonneg(value, "radiusY"),
                       number(value, "rotation") if value.get("rotation") is not None else 0.0)
    else:
        geom = _vector(value)
    ow, oh = result.get("original_width"), result.get("original_height")
    if ow is not None or oh is not None:
        for k, raw in (("original_width", ow), ("original_height", oh)):
            if finite_or_none(raw) is None:
                raise BadValue(k, f"image size must be a positive number of pixels up to "
                               f"{IMAGE_LIMIT:g}, got {show(raw)}")
        ow, oh = float(ow), float(oh)
    unknown = undeclared(labels, spec)
    if unknown:
        raise SuspectValue(f"value.{labels_key(value, key)}", f"label(s) {show(unknown)} not in the config",
                           (label, geom, ow, oh))
    return (label, geom, ow, oh)


def _point(raw: Any, where: str) -> tuple[float, float]:
    """A vertex or control point, ``{x, y}`` or ``[x, y]``; ``where`` names it in errors."""
    try:
        if type(raw) is dict:
            return number(raw, "x"), number(raw, "y")
        if type(raw) is list and len(raw) == 2:
            return number({"x": raw[0]}, "x"), number({"y": raw[1]}, "y")
    except BadValue as exc:
        raise BadValue(where + exc.field[len("value"):], exc.message) from None
    raise BadValue(where, f"expected {{x, y}} or [x, y], got {show(raw)}")


def _vector(value: dict) -> tuple:
    """``(points, edges, closed)``: the vertices with Bézier segments flattened, the
    segments as point index pairs, and the closed flag."""
    verts = value.get("vertices")
    if verts is None and type(value.get("points")) is list:
        verts = value["points"]
    if type(verts) is not list:
        raise BadValue("value.vertices", "missing or not a list")
    if not verts:
        raise BadValue("value.vertices", "a vector needs at least one vertex")
    if len(verts) > MAX_VERTICES:
        raise BadValue("value.vertices", f"{len(verts):,} vertices (limit {MAX_VERTICES:,})")
    closed = value.get("closed", False)
    if type(closed) is not bool:
        raise BadValue("value.closed", f"expected true or false, got {show(closed)}")
    xy, cp1, cp2, ids = [], [], [], {}
    prev_named: list = []
    for k, v in enumerate(verts):
        where = f"value.vertices[{k}]"
        xy.append(_point(v, where))
        bez = type(v) is dict and v.get("isBezier") is True
        c1 = v.get("controlPoint1") if bez else None
        c2 = v.get("controlPoint2") if bez else None
        cp1.append(_point(c1, f"{where}.controlPoint1") if c1 is not None else None)
        cp2.append(_point(c2, f"{where}.controlPoint2") if c2 is not None else None)
        vid = v.get("id") if type(v) is dict else None
        if type(vid) in (str, int) and vid not in ids:
            ids[vid] = k
        prev_named.append(v.get("prevPointId") if type(v) is dict else None)
    joins = []
    for k, prev in enumerate(prev_named):
        if prev is not None and type(prev) in (str, int):
            at = ids.get(prev)          # an id naming no vertex joins nothing, as in the editor
            if at is not None and at != k:
                joins.append((at, k))
        elif k > 0:
            joins.append((k - 1, k))
    n = len(xy)
    if closed and n >= 3 and (n - 1, 0) not in joins and (0, n - 1) not in joins:
        joins.append((n - 1, 0))
    points = list(xy)
    edges: list[tuple[int, int]] = []
    for a, b in dict.fromkeys(joins):
        c_start, c_end = cp2[a], cp1[b]
        if c_start is None and c_end is None:
            edges.append((a, b))
            continue
        pa, pb = np.asarray(xy[a]), np.asarray(xy[b])
        q1 = np.asarray(c_start) if c_start is not None else pa + _CHORD * (pb - pa)
        q2 = np.asarray(c_end) if c_end is not None else pb - _CHORD * (pb - pa)
        t = np.arange(1, BEZIER_STEPS)[:, None] / BEZIER_STEPS
        inner = ((1 - t) ** 3 * pa + 3 * (1 - t) ** 2 * t * q1 + 3 * (1 - t) * t ** 2 * q2 + t ** 3 * pb)
        first = len(points)
        points.extend(map(tuple, inner.tolist()))
        chain = [a, *range(first, len(points)), b]
        edges.extend(zip(chain[:-1], chain[1:]))
    return (tuple(points), tuple(edges), closed)


def build(parts: list, spec: ControlSpec, pixels: bool) -> tuple:
    """The annotation's value: a tuple of Ellipse or Curve, possibly empty."""
    out = []
    for label, geom, ow, oh in parts:
        if spec.region == "vector":
            pts, edges, closed = geom
            if pixels:
                pts = tuple((px * ow / 100.0, py * oh / 100.0) for px, py in pts)
            out.append(Curve(pts, closed, label, edges))
        else:
            x, y, rx, ry, rot = geom
            if pixels:   # x * size / 100 (not x * (size / 100)): exact for whole percents
                x, y, rx, ry = x * ow / 100.0, y * oh / 100.0, rx * ow / 100.0, ry * oh / 100.0
            out.append(Ellipse(x, y, rx, ry, rot, label))
    return tuple(out)

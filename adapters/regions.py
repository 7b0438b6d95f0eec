"""Image regions: RectangleLabels/Rectangle, PolygonLabels/Polygon, KeyPointLabels/KeyPoint.

Label Studio stores coordinates in percent of the image (0-100) plus the image size in
pixels (``original_width``/``original_height``) on each result (docs/label-studio.md §3). A
control's values are converted to pixels when *every* region of that control carries the
size; otherwise the whole control stays in percent (a warning says so), so that one
control never mixes units. Rectangles keep Label Studio's rotation (degrees about the
top-left corner), which is defined in pixel space. Multi-object kind: an annotation
without regions for the control is the empty tuple (an answer: "nothing to mark").
"""
from __future__ import annotations

from typing import Any

from .config import ControlSpec
from .errors import BadValue, SuspectValue, show
from .fields import (IMAGE_LIMIT, finite_or_none, label_key, labels_key, labels_of, undeclared, make_box, make_keypoint,
                     make_polygon, nonneg, number)

_LABEL_KEY = {"rectangle": "rectanglelabels", "polygon": "polygonlabels", "keypoint": "keypointlabels"}

__all__ = ["TYPES", "MULTI", "parse", "plan", "build"]

TYPES = {"rectanglelabels", "rectangle", "polygonlabels", "polygon", "keypointlabels",
         "keypoint", "labels"}
MULTI = True


def parse(result: dict, value: dict, spec: ControlSpec, data: Any) -> tuple:
    """One region as a raw tuple ``(label, geometry..., width_px, height_px)`` in percent.

    Raises
    ------
    BadValue
        Missing or non-finite coordinates, negative sizes, polygons of < 3 points.
    """
    region = spec.region
    if region == "rectangle":
        labels = labels_of(value, "rectanglelabels")
        label = label_key(labels)
        x, y = number(value, "x"), number(value, "y")
        w, h = nonneg(value, "width"), nonneg(value, "height")
        rot = number(value, "rotation") if value.get("rotation") is not None else 0.0
        geom: tuple = (x, y, w, h, rot)
    elif region == "polygon":
        labels = labels_of(value, "polygonlabels")
        label = label_key(labels)
        pts = value.get("points")
        if type(pts) is not list:
            raise BadValue("value.points", "missing or not a list")
        if len(pts) < 3:
            raise BadValue("value.points", f"a polygon needs at least 3 points, got {len(pts)}")
        out = []
        for k, p in enumerate(pts):
            if type(p) is not list or len(p) != 2:
                raise BadValue(f"value.points[{k}]", "expected [x, y]")
            try:
                out.append((number({"x": p[0]}, "x"), number({"y": p[1]}, "y")))
            except BadValue as exc:
                raise BadValue(f"value.points[{k}]", exc.message) from None
        if len(set(out)) < 3:
            raise BadValue("value.points", f"a polygon needs at least 3 distinct points, got "
                           f"{len(set(out))}")
        geom = (tuple(out),)
    else:
        labels = labels_of(value, "keypointlabels")
        label = label_key(labels)
        geom = (number(value, "x"), number(value, "y"))
    ow = result.get("original_width")
    oh = result.get("original_height")
    if ow is not None or oh is not None:
        for key, raw in (("original_width", ow), ("original_height", oh)):
            if finite_or_none(raw) is None:
                raise BadValue(key, f"image size must be a positive number of pixels up to "
                               f"{IMAGE_LIMIT:g}, got {show(raw)}")
        ow, oh = float(ow), float(oh)
    unknown = undeclared(labels, spec)
    if unknown:
        raise SuspectValue(f"value.{labels_key(value, _LABEL_KEY[region])}",
                           f"label(s) {show(unknown)} not in the config", (label, geom, ow, oh))
    return (label, geom, ow, oh)


def plan(cells: list[list], spec: ControlSpec) -> tuple[bool, list[str]]:
    """Pixels for the whole control iff every region has the image size."""
    total = missing = 0
    for parts in cells:
        for p in parts:
            total += 1
            if p[2] is None:
                missing += 1
    if missing and total:
        return False, [f"control {spec.name!r}: {missing} of {total} regions lack "
                       f"original_width/original_height; coordinates kept in percent"]
    return True, []


def build(parts: list, spec: ControlSpec, pixels: bool) -> tuple:
    """The annotation's value: a tuple of Box / Polygon / Keypoint, possibly empty."""
    region = spec.region
    out = []
    for label, geom, ow, oh in parts:
        if region == "rectangle":
            x, y, w, h, rot = geom
            if pixels:  # x * size / 100 (not x * (size / 100)): exact for whole percents
                x, y, w, h = x * ow / 100.0, y * oh / 100.0, w * ow / 100.0, h * oh / 100.0
            out.append(make_box(x, y, w, h, rot, label))
        elif region == "polygon":
            pts = geom[0]
            if pixels:
                pts = tuple((px * ow / 100.0, py * oh / 100.0) for px, py in pts)
            out.append(make_polygon(pts, label))
        else:
            x, y = geom
            if pixels:
                x, y = x * ow / 100.0, y * oh / 100.0
            out.append(make_keypoint(x, y, label))
    return tuple(out)

"""Image regions: RectangleLabels/Rectangle, PolygonLabels/Polygon, KeyPointLabels/KeyPoint,
a Labels on an Image (the regions of its drawing tools), OcrLabels (boxes on a PDF).

Label Studio stores coordinates in percent of the image (0-100) plus the image size in
pixels (``original_width``/``original_height``) on each result (docs/label-studio.md §3). A
control's values are converted to pixels when *every* region of that control carries the
size; otherwise the whole control stays in percent (a warning says so), so that one
control never mixes units. Rectangles keep Label Studio's rotation (degrees about the
top-left corner), which is defined in pixel space. Multi-object kind: an annotation
without regions for the control is the empty tuple (an answer: "nothing to mark").

A ``Labels`` on an Image labels the regions of the tools drawing on it, each result in
its own shape: with a Polygon tool beside a Rectangle (the OCR template) the control is
compared as polygons and a rectangle-shaped result becomes the polygon of its four
corners. Regions on several pages — ``<Image valueList=...>`` results carry
``item_index``, OcrLabels results ``pageIndex`` — are placed on pages stacked downwards
with a page of space between them, so that regions of different pages never overlap.
"""
from __future__ import annotations

from typing import Any

from .config import ControlSpec
from .errors import BadValue, SuspectValue, show
from .fields import (COORD_LIMIT, IMAGE_LIMIT, finite_or_none, label_key, labels_key, labels_of, make_box,
                     make_keypoint, make_polygon, nonneg, number, undeclared)

_LABEL_KEY = {"rectangle": "rectanglelabels", "polygon": "polygonlabels", "keypoint": "keypointlabels"}

__all__ = ["TYPES", "MULTI", "parse", "plan", "build"]

TYPES = {"rectanglelabels", "rectangle", "polygonlabels", "polygon", "keypointlabels",
         "keypoint", "labels", "ocrlabels"}
MULTI = True
# Pages of a multi-page object are stacked downwards this many page heights apart
PAGE_STRIDE = 2.0


def _shape(value: dict, spec: ControlSpec) -> str:
    """The region shape a result holds: the control's own, except for a Labels whose image
    has a Polygon tool beside a Rectangle, whose results come in either shape."""
    if spec.region != "polygon" or spec.lower != "labels" or "points" in value:
        return spec.region
    if "height" in value:
        return "rectangle"
    raise BadValue("value", "a region without points (polygon) or width and height (rectangle): this "
                   f"Labels control's regions are compared as polygons")


def _page(result: dict, value: dict) -> int:
    """The page a region is on: ``item_index`` (Image valueList) or ``pageIndex`` (OcrLabels), else 0."""
    for where, key in ((result, "item_index"), (value, "pageIndex")):
        raw = where.get(key)
        if raw is None:
            continue
        if type(raw) is not int or not 0 <= raw < 1_000_000:
            raise BadValue(key if where is result else f"value.{key}",
                           f"a page index must be an integer from 0, got {show(raw)}")
        return raw
    return 0


def parse(result: dict, value: dict, spec: ControlSpec, data: Any) -> tuple:
    """One region as a raw tuple ``(label, geometry, width_px, height_px, shape, page)`` in percent
    (the image size third and fourth, as :func:`plan` reads them, shared with ``shapes``).

    Raises
    ------
    BadValue
        Missing or non-finite coordinates, negative sizes, polygons of < 3 points, a page
        index that is not a non-negative integer.
    """
    lower = spec.lower
    region = spec.region
    if region == "polygon" and lower == "labels" and "points" not in value:
        region = _shape(value, spec)
    # where the labels are: "<tool>labels", "ocrlabels" or a Labels' "labels"
    label_field = lower if lower.endswith("labels") else _LABEL_KEY[region]
    labels = labels_of(value, label_field)
    label = label_key(labels)
    if region == "rectangle":
        # the common case read directly: four finite floats in range, sizes >= 0; anything
        # else goes through the checked readers, which raise the first problem in this order
        x, y, w, h = value.get("x"), value.get("y"), value.get("width"), value.get("height")
        if not (type(x) is float and type(y) is float and type(w) is float and type(h) is float
                and -COORD_LIMIT <= x <= COORD_LIMIT and -COORD_LIMIT <= y <= COORD_LIMIT
                and 0.0 <= w <= COORD_LIMIT and 0.0 <= h <= COORD_LIMIT):
            x, y = number(value, "x"), number(value, "y")
            w, h = nonneg(value, "width"), nonneg(value, "height")
        rot = value.get("rotation")
        if rot is None:
            rot = 0.0
        elif not (type(rot) is float and -COORD_LIMIT <= rot <= COORD_LIMIT):
            rot = number(value, "rotation")   # an int (Label Studio writes 0) becomes a float
        geom: tuple = (x, y, w, h, rot)
    elif region == "polygon":
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
        geom = (number(value, "x"), number(value, "y"))
    page = 0 if result.get("item_index") is None and value.get("pageIndex") is None else _page(result, value)
    ow = result.get("original_width")
    oh = result.get("original_height")
    if ow is not None or oh is not None:
        tw, th = type(ow), type(oh)
        if not ((tw is int or tw is float) and (th is int or th is float)
                and 0 < ow <= IMAGE_LIMIT and 0 < oh <= IMAGE_LIMIT):   # NaN fails the comparison
            for key, raw in (("original_width", ow), ("original_height", oh)):
                if finite_or_none(raw) is None:
                    raise BadValue(key, f"image size must be a positive number of pixels up to "
                                   f"{IMAGE_LIMIT:g}, got {show(raw)}")
        ow, oh = float(ow), float(oh)
    raw = (label, geom, ow, oh, region, page)
    if labels:
        unknown = undeclared(labels, spec)
        if unknown:
            raise SuspectValue(f"value.{labels_key(value, label_field)}",
                               f"label(s) {show(unknown)} not in the config", raw)
    return raw


def plan(cells: list[list], spec: ControlSpec) -> tuple[bool, list[str]]:
    """Pixels for the whole control iff every region has the image size."""
    total = missing = 0
    for parts in cells:
        for p in parts:
            total += 1
            if p[2] is None:
                missing += 1
    if missing and total and spec.lower == "ocrlabels":
        return False, []    # a PDF page has no pixel size: percent of the page is its unit
    if missing and total:
        return False, [f"control {spec.name!r}: {missing} of {total} regions lack "
                       f"original_width/original_height; coordinates kept in percent"]
    return True, []


def build(parts: list, spec: ControlSpec, pixels: bool) -> tuple:
    """The annotation's value: a tuple of Box / Polygon / Keypoint, possibly empty."""
    target = spec.region
    out = []
    for label, geom, ow, oh, shape, page in parts:
        shift = page * PAGE_STRIDE * (oh if pixels else 100.0)   # pages stacked downwards
        if shape == "rectangle":
            x, y, w, h, rot = geom
            if pixels:  # x * size / 100 (not x * (size / 100)): exact for whole percents
                x, y, w, h = x * ow / 100.0, y * oh / 100.0, w * ow / 100.0, h * oh / 100.0
            box = make_box(x, y + shift, w, h, rot, label)
            # a rectangle among polygons (Labels with both tools) is the polygon of its corners
            out.append(box if target == "rectangle" else make_polygon(box.corners(), label))
        elif shape == "polygon":
            pts = geom[0]
            if pixels:
                pts = tuple((px * ow / 100.0, py * oh / 100.0) for px, py in pts)
            if shift:
                pts = tuple((px, py + shift) for px, py in pts)
            out.append(make_polygon(pts, label))
        else:
            x, y = geom
            if pixels:
                x, y = x * ow / 100.0, y * oh / 100.0
            out.append(make_keypoint(x, y + shift, label))
    return tuple(out)

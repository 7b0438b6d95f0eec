"""Image masks: BrushLabels/Brush, MagicWand, BitmaskLabels/Bitmask.

What Label Studio writes (its frontend's ``regions/BrushRegion.jsx`` and
``regions/BitmaskRegion.jsx``, docs/label-studio.md §3):

- brush and Magic Wand regions (result types ``brushlabels``, ``brush``, ``magicwand``,
  and ``labels`` when a plain ``Labels`` tag labels them):
  ``{"original_width": W, "original_height": H, "image_rotation": 0,
  "value": {"format": "rle", "rle": [...], "brushlabels": ["Car"]}}``, the RLE encoding
  the RGBA pixels of the whole image;
- bitmask regions (``bitmasklabels``, ``bitmask``):
  ``{"value": {"imageDataURL": "data:image/png;base64,...", "bitmasklabels": [...]}}``,
  a PNG of the image's size, black on transparent.

A brush region saved by the Magic Wand before its RLE was computed may carry
``value.maskDataURL`` (a PNG data URL) instead: it is read like a bitmask. Masks are
always in pixels of the image; each region becomes one
:class:`~ls_agreement.metrics.model.Mask` (decoded by :mod:`.mask_codecs`). Multi-object
kind: an annotation without masks for the control is the empty tuple.
"""
from __future__ import annotations

from typing import Any

from ls_agreement.metrics.model import Mask

from .config import ControlSpec
from .errors import BadValue, SuspectValue, show
from .fields import label_key, labels_key, labels_of, undeclared
from .mask_codecs import RleError, decode_png_mask, decode_rle_mask

__all__ = ["TYPES", "MULTI", "parse", "build"]

TYPES = {"brushlabels", "brush", "magicwand", "bitmasklabels", "bitmask", "labels"}
MULTI = True

# where a result keeps its labels, by the control's region tool
_LABEL_KEY = {"brush": "brushlabels", "magicwand": "brushlabels", "bitmask": "bitmasklabels"}
# the image sides Label Studio can show; a mask of more pixels than this is refused
_MAX_SIDE = 1 << 16


def _size(result: dict, key: str, needed: bool) -> int | None:
    raw = result.get(key)
    if raw is None and not needed:
        return None
    if type(raw) is float and raw.is_integer():
        raw = int(raw)
    if type(raw) is not int or not 1 <= raw <= _MAX_SIDE:
        why = "a mask needs the image size in pixels" if raw is None else "expected a whole number of pixels"
        raise BadValue(key, f"{why} (1..{_MAX_SIDE}), got {show(raw)}")
    return raw


def parse(result: dict, value: dict, spec: ControlSpec, data: Any) -> tuple:
    """One region as ``(label, height, width, run bytes)``.

    Raises
    ------
    BadValue
        No image size for an RLE, a malformed RLE or PNG, a size that disagrees with the
        image's, a format other than ``"rle"``.
    """
    key = _LABEL_KEY.get(spec.region or "brush", "brushlabels")
    labels = labels_of(value, key)
    label = label_key(labels)
    rle = value.get("rle")
    url = value.get("imageDataURL")
    field = "value.imageDataURL"
    if url is None and not rle:
        url, field = value.get("maskDataURL"), "value.maskDataURL"
    if url is not None and (rle is None or not rle):
        try:
            w, h, runs = decode_png_mask(url)
        except RleError as exc:
            raise BadValue(field, str(exc)) from None
        for k, side in (("original_width", w), ("original_height", h)):
            given = _size(result, k, needed=False)
            if given is not None and given != side:
                raise BadValue(k, f"the mask image is {w} x {h} pixels, the result says {show(result.get(k))}")
    else:
        fmt = value.get("format")
        if fmt is not None and fmt != "rle":
            raise BadValue("value.format", f"only Label Studio's 'rle' masks are read, got {show(fmt)}")
        if rle is None:
            raise BadValue("value.rle", "missing (and no imageDataURL/maskDataURL either)")
        w, h = _size(result, "original_width", needed=True), _size(result, "original_height", needed=True)
        try:
            runs = decode_rle_mask(rle, w, h)
        except RleError as exc:
            raise BadValue("value.rle", str(exc)) from None
    raw = (label, h, w, runs)
    unknown = undeclared(labels, spec)
    if unknown:
        raise SuspectValue(f"value.{labels_key(value, key)}", f"label(s) {show(unknown)} not in the config", raw)
    return raw


_new = object.__new__
_set = object.__setattr__


def make_mask(height: int, width: int, runs: bytes, label: Any) -> Mask:
    """A Mask from runs the decoders made canonical: skips the model's re-validation."""
    m = _new(Mask)
    _set(m, "height", height)
    _set(m, "width", width)
    _set(m, "runs", runs)
    _set(m, "label", label)
    return m


def build(parts: list, spec: ControlSpec, state: Any) -> tuple:
    """The annotation's value: a tuple of :class:`Mask`, possibly empty."""
    return tuple(make_mask(h, w, runs, label) for label, h, w, runs in parts)

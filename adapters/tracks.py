"""Video tracks: VideoRectangle results -> :class:`~ls_agreement.metrics.model.Track`.

Label Studio 1.23 writes one result per tracked object (``regions/VideoRegion.js``
``serialize``; the labels come from the ``Labels`` tag on the same Video, which the Video
merges into this result, ``Result.js``, ``mergeLabelsAndResults``)::

    {"type": "videorectangle", "from_name": "box", "to_name": "video",
     "value": {"framesCount": 131, "duration": 5.4,
               "sequence": [{"frame": 1, "enabled": true, "x": 20.5, "y": 15.6,
                             "width": 58.9, "height": 68.6, "rotation": 0, "time": 0.04}, ...],
               "labels": ["Man"]}}

Coordinates are percent of the frame; ``time`` (= frame / frame rate) is not read, the
frame numbers are. A keyframe without ``enabled`` counts as disabled, as Label Studio's
editor reads it (its box shows on that frame only; a warning counts them); a missing
``rotation`` is 0. ``framesCount`` is where a track whose last keyframe is enabled ends;
without it the track ends at its last keyframe (a warning counts them). Pixels, as for
image regions, only when every result of the control carries ``original_width`` /
``original_height`` (Label Studio's video results do not). Multi-object kind: an
annotation without tracks for the control is the empty tuple.
"""
from __future__ import annotations

from typing import Any

from ls_agreement.metrics.model import Keyframe, Track

from .config import ControlSpec
from .errors import BadValue, SuspectValue, show
from .fields import (COORD_LIMIT, IMAGE_LIMIT, finite_or_none, label_key, labels_key, labels_of, nonneg, number,
                     undeclared)

__all__ = ["TYPES", "MULTI", "parse", "plan", "build", "FRAME_LIMIT"]

TYPES = {"videorectangle"}
MULTI = True
# Frame numbers beyond this are garbage (10^7 frames: 46 hours at 60 frames per second).
FRAME_LIMIT = 10_000_000


def _frame_number(raw: Any, field: str) -> int:
    """A frame number: an integer (an integral float too) in [0, FRAME_LIMIT]."""
    if type(raw) is int:
        v = raw
    elif type(raw) is float and raw.is_integer():
        v = int(raw)
    else:
        raise BadValue(field, f"expected a whole frame number, got {type(raw).__name__} {show(raw)}")
    if not 0 <= v <= FRAME_LIMIT:
        raise BadValue(field, f"frame number out of range 0..{FRAME_LIMIT:,} ({show(raw)})")
    return v


_NUMBER = (float, int)   # exact types: bool is not a coordinate


def _keyframe(item: Any, k: int) -> tuple[Keyframe, bool]:
    """One keyframe of ``value.sequence`` and whether it said ``enabled``.

    The usual keyframe (every field present and plain) is read in one test; anything
    else goes through :func:`_checked_keyframe`, which names what is wrong.
    """
    if type(item) is dict:
        get = item.get
        frame, en, x, y, w, h = get("frame"), get("enabled"), get("x"), get("y"), get("width"), get("height")
        rot = get("rotation")
        if rot is None:
            rot = 0.0
        # comparisons are False for NaN: a non-finite number falls through to the checks
        if (type(frame) is int and 0 <= frame <= FRAME_LIMIT and type(en) is bool
                and type(x) in _NUMBER and type(y) in _NUMBER and type(w) in _NUMBER and type(h) in _NUMBER
                and type(rot) in _NUMBER and -COORD_LIMIT <= x <= COORD_LIMIT and -COORD_LIMIT <= y <= COORD_LIMIT
                and 0 <= w <= COORD_LIMIT and 0 <= h <= COORD_LIMIT and -COORD_LIMIT <= rot <= COORD_LIMIT):
            return Keyframe(frame, en, float(x), float(y), float(w), float(h), float(rot)), True
    return _checked_keyframe(item, k)


def _checked_keyframe(item: Any, k: int) -> tuple[Keyframe, bool]:
    where = f"value.sequence[{k}]"
    if type(item) is not dict:
        raise BadValue(where, f"a keyframe must be an object, got {type(item).__name__}")
    if "frame" not in item:
        raise BadValue(f"{where}.frame", "missing")
    frame = _frame_number(item["frame"], f"{where}.frame")
    enabled = item.get("enabled")
    if enabled is not None and type(enabled) is not bool:
        raise BadValue(f"{where}.enabled", f"expected true or false, got {show(enabled)}")
    try:
        x, y = number(item, "x"), number(item, "y")
        w, h = nonneg(item, "width"), nonneg(item, "height")
        rot = number(item, "rotation") if item.get("rotation") is not None else 0.0
    except BadValue as exc:   # name the keyframe, not just its key
        raise BadValue(where + exc.field[len("value"):], exc.message) from None
    return Keyframe(frame, bool(enabled), x, y, w, h, rot), enabled is not None


def parse(result: dict, value: dict, spec: ControlSpec, data: Any) -> tuple:
    """One track as a raw tuple ``(label, keyframes, frames_count, width_px, height_px, n_unsaid)``.

    Raises
    ------
    BadValue
        ``sequence`` missing, empty or not a list; a keyframe that is not an object or
        has a bad frame number, coordinate or size; a bad ``framesCount`` or frame size.
    """
    labels = labels_of(value, "labels")
    label = label_key(labels)
    seq = value.get("sequence")
    if type(seq) is not list:
        raise BadValue("value.sequence", "missing or not a list" if seq is None else
                       f"expected a list of keyframes, got {type(seq).__name__}")
    if not seq:
        raise BadValue("value.sequence", "empty: a track needs at least one keyframe")
    keyframes = []
    unsaid = 0
    for k, item in enumerate(seq):
        kf, said = _keyframe(item, k)
        keyframes.append(kf)
        unsaid += not said
    count = value.get("framesCount")
    if count is not None:
        count = _frame_number(count, "value.framesCount")
    ow, oh = result.get("original_width"), result.get("original_height")
    if ow is not None or oh is not None:
        for key, raw in (("original_width", ow), ("original_height", oh)):
            if finite_or_none(raw) is None:
                raise BadValue(key, f"frame size must be a positive number of pixels up to "
                               f"{IMAGE_LIMIT:g}, got {show(raw)}")
        ow, oh = float(ow), float(oh)
    # Label Studio reads the keyframes in frame order (its editor keeps them sorted)
    keyframes.sort(key=lambda kf: kf.frame)
    parts = (label, tuple(keyframes), count, ow, oh, unsaid)
    unknown = undeclared(labels, spec)
    if unknown:
        raise SuspectValue(f"value.{labels_key(value, 'labels')}", f"label(s) {show(unknown)} not in the config",
                           parts)
    return parts


def plan(cells: list[list], spec: ControlSpec) -> tuple[bool, list[str]]:
    """Pixels for the whole control iff every track has the frame size; warnings counting
    keyframes without ``enabled`` and tracks without ``framesCount``."""
    total = no_size = no_count = unsaid = 0
    for parts in cells:
        for p in parts:
            total += 1
            no_size += p[3] is None
            no_count += p[2] is None
            unsaid += p[5]
    notes = []
    if unsaid:
        notes.append(f"control {spec.name!r}: {unsaid} keyframe(s) without 'enabled' are read as disabled, "
                     "as Label Studio's editor reads them (the box shows on that keyframe's frame only)")
    if no_count:
        notes.append(f"control {spec.name!r}: {no_count} of {total} tracks lack value.framesCount; each ends "
                     "at its last keyframe")
    pixels = total > 0 and no_size == 0
    if no_size and no_size < total:
        notes.append(f"control {spec.name!r}: {no_size} of {total} tracks lack original_width/original_height; "
                     "coordinates kept in percent")
    return pixels, notes


def build(parts: list, spec: ControlSpec, pixels: bool) -> tuple:
    """The annotation's value: a tuple of Track, possibly empty."""
    out = []
    for label, keyframes, count, ow, oh, _ in parts:
        if pixels:   # x * size / 100 (not x * (size / 100)): exact for whole percents
            keyframes = tuple(kf._replace(x=kf.x * ow / 100.0, y=kf.y * oh / 100.0, width=kf.width * ow / 100.0,
                                          height=kf.height * oh / 100.0) for kf in keyframes)
        out.append(make_track(keyframes, count, label))
    return tuple(out)


_new = object.__new__
_set = object.__setattr__


def make_track(keyframes: tuple[Keyframe, ...], end: int | None, label: Any) -> Track:
    """A Track from keyframes already checked and sorted: skips the model's re-validation."""
    t = _new(Track)
    _set(t, "keyframes", keyframes)
    _set(t, "end", end)
    _set(t, "label", label)
    return t

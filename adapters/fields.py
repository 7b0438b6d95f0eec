"""Checked access to result fields: numbers, strings, lists (shared by the families)."""
from __future__ import annotations

from typing import Any

from ls_agreement.metrics.model import Box, Keypoint, Polygon

from .errors import BadValue, show

__all__ = ["MISSING", "number", "nonneg", "string", "str_list", "labels_of", "labels_key", "label_key",
           "make_box", "make_keypoint", "make_polygon", "COORD_LIMIT"]


class _Missing:
    """Marker: the annotator did not answer this control (the row is left out)."""

    def __repr__(self) -> str:
        return "MISSING"

    def __reduce__(self) -> str:
        # compared by identity: a part of an export read in another process sends its
        # cells pickled, and they must come back as this very object
        return "MISSING"


MISSING = _Missing()

# Coordinates beyond this (percent or pixels) are garbage, and bounding them keeps every
# percent -> pixel product finite, so the model objects can be built without re-checking.
COORD_LIMIT = 1e12
IMAGE_LIMIT = 1e7   # pixels


def number(value: dict, key: str) -> float:
    """A finite number ``value[key]`` (bool and numeric strings refused)."""
    try:
        v = value[key]
    except KeyError:
        raise BadValue(f"value.{key}", "missing") from None
    t = type(v)
    if t is float:
        if v - v != 0.0:  # NaN or inf, cheaper than math.isfinite on the hot path
            raise BadValue(f"value.{key}", f"not finite ({v!r})")
    elif t is int:
        if not -COORD_LIMIT <= v <= COORD_LIMIT:  # before float(): a 400-digit int overflows it
            raise BadValue(f"value.{key}", f"out of range ({show(v)})")
        v = float(v)
    else:
        raise BadValue(f"value.{key}", f"expected a number, got {type(v).__name__} {show(v)}")
    if -COORD_LIMIT <= v <= COORD_LIMIT:
        return v
    raise BadValue(f"value.{key}", f"out of range ({v!r})")


def nonneg(value: dict, key: str) -> float:
    """A finite number >= 0 (sizes)."""
    v = number(value, key)
    if v < 0:
        raise BadValue(f"value.{key}", f"negative size ({v!r})")
    return v


def _required(value: dict, key: str, kind: type) -> Any:
    """``value[key]``, which must be present and exactly of ``kind``."""
    try:
        v = value[key]
    except KeyError:
        raise BadValue(f"value.{key}", "missing") from None
    if type(v) is not kind:
        name = {str: "string"}.get(kind, kind.__name__)
        raise BadValue(f"value.{key}", f"expected a {name}, got {type(v).__name__}")
    return v


def string(value: dict, key: str) -> str:
    return _required(value, key, str)


def str_list(value: dict, key: str) -> list[str]:
    """A list of strings ``value[key]``."""
    v = _required(value, key, list)
    for k, s in enumerate(v):
        if type(s) is not str:
            raise BadValue(f"value.{key}[{k}]", f"expected a string, got {type(s).__name__}")
    return v


def labels_key(value: dict, key: str) -> str:
    """Where a result keeps its labels: ``key`` (``rectanglelabels``, ...) or ``labels``."""
    return key if value.get(key) is not None or value.get("labels") is None else "labels"


def labels_of(value: dict, key: str) -> list[str] | None:
    """Labels under ``key`` (or the generic ``labels``), None when absent."""
    v = value.get(key)
    if v is None:   # the generic key, as labels_key chooses it
        v = value.get("labels")
        if v is None:
            return None
        key = "labels"
    if type(v) is not list:
        raise BadValue(f"value.{key}", f"labels must be a list of strings, got {type(v).__name__}")
    for k, s in enumerate(v):
        if type(s) is not str:
            raise BadValue(f"value.{key}[{k}]", f"a label must be a string, got {type(s).__name__}")
    return v


def undeclared(labels: list[str] | None, spec: Any) -> list[str]:
    """Labels the config does not declare (none when the config's labels are dynamic,
    ``value="$..."``, or when it declares none)."""
    if not labels:
        return []
    known = spec.known
    if len(labels) == 1:
        # nearly every region: a declared label is never undeclared, closed config or not,
        # so the membership test goes first (no set, no ``closed``: a fifth of adapting spans)
        return [] if labels[0] in known or not spec.closed else list(labels)
    if not spec.closed:
        return []
    return sorted({s for s in labels if s not in known})


def label_key(labels: list[str] | None) -> str | None:
    """One hashable label per object: several labels are joined with "|" (sorted); one
    string object per distinct label (:func:`pooled`)."""
    if not labels:
        return None
    if len(labels) == 1:
        s = labels[0]
        return _POOL.get(s) or pooled(s)   # pooled("") is "" too
    return pooled("|".join(sorted(labels)))


# A project's labels are a small vocabulary repeated on every region: each JSON string read
# is its own object, so a million boxes would hold a million copies of "Person" (issue 24).
# Bounded, so that arbitrary strings cannot grow it without end in a long-running service.
_POOL: dict[str, str] = {}
_POOL_MAX = 1 << 16


def pooled(s: str) -> str:
    """The pooled string equal to ``s`` (``s`` itself once the pool is full)."""
    got = _POOL.get(s)
    if got is not None:
        return got
    if len(_POOL) < _POOL_MAX:
        _POOL[s] = s
    return s


def finite_or_none(v: Any) -> float | None:
    """An image size in pixels: a finite number in (0, IMAGE_LIMIT], else None."""
    if type(v) in (int, float) and 0 < v <= IMAGE_LIMIT and v == v:
        return float(v)
    return None


_new = object.__new__
# The slot descriptors of the model's frozen slotted dataclasses: setting a slot through its
# descriptor is what ``object.__setattr__`` ends up doing, without looking the name up each time
_BOX_X, _BOX_Y, _BOX_W, _BOX_H, _BOX_ROT, _BOX_LABEL = (
    getattr(Box, f).__set__ for f in ("x", "y", "width", "height", "rotation", "label"))
_KP_X, _KP_Y, _KP_LABEL = (getattr(Keypoint, f).__set__ for f in ("x", "y", "label"))
_POLY_POINTS, _POLY_LABEL = (getattr(Polygon, f).__set__ for f in ("points", "label"))


def make_box(x: float, y: float, w: float, h: float, rot: float, label: Any) -> Box:
    """A Box from values already checked (finite floats, w, h >= 0): skips the model's
    re-validation, the dominant cost of adapting large exports."""
    b = _new(Box)
    _BOX_X(b, x)
    _BOX_Y(b, y)
    _BOX_W(b, w)
    _BOX_H(b, h)
    _BOX_ROT(b, rot)
    _BOX_LABEL(b, label)
    return b


def make_keypoint(x: float, y: float, label: Any) -> Keypoint:
    k = _new(Keypoint)
    _KP_X(k, x)
    _KP_Y(k, y)
    _KP_LABEL(k, label)
    return k


def make_polygon(points: tuple, label: Any) -> Polygon:
    p = _new(Polygon)
    _POLY_POINTS(p, points)
    _POLY_LABEL(p, label)
    return p


"""Scalars: Rating (ordinal), Number (interval), DateTime (interval, epoch seconds).

Unanswered is *missing*. Ratings are ints in 1..maxRating; numbers stay int when integral
in the export; DateTime strings become seconds since 1970-01-01 UTC (naive times are taken
as UTC; ``only="time"`` values become seconds since midnight, ``only="year"``/``"month"``
the first instant of the period), so that interval distances compare them.
"""
from __future__ import annotations

import math
from datetime import datetime, time, timezone
from typing import Any

from .config import ControlSpec
from .errors import BadValue, SuspectValue, show
from .fields import MISSING

__all__ = ["TYPES", "MULTI", "parse", "build", "parse_datetime"]

TYPES = {"rating", "number", "datetime"}
MULTI = False


def parse_datetime(text: str) -> float:
    """Epoch seconds of a Label Studio DateTime value ("2024-05-01", "2024-05-01T10:30",
    "2024-05", "2024", "10:30")."""
    s = text.strip()
    if not s:
        raise ValueError("empty")
    if len(s) == 4 and s.isdigit():
        return datetime(int(s), 1, 1, tzinfo=timezone.utc).timestamp()
    if len(s) == 7 and s[4] == "-" and s[:4].isdigit() and s[5:].isdigit():
        return datetime(int(s[:4]), int(s[5:]), 1, tzinfo=timezone.utc).timestamp()
    if ":" in s and "-" not in s and "T" not in s:
        t = time.fromisoformat(s)
        return t.hour * 3600.0 + t.minute * 60.0 + t.second + t.microsecond / 1e6
    dt = datetime.fromisoformat(s.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


# Beyond this a number is garbage: differences and squares of such values (interval and
# ratio distances, bootstrap sums) would overflow float64 to inf.
_MAX_INT = 10 ** 15


def _number(v: Any, field: str) -> float | int:
    if type(v) is int:
        if abs(v) > _MAX_INT:  # a 400-digit integer: no float holds it, the metrics could not
            raise BadValue(field, f"number too large ({show(v)}; at most {_MAX_INT:.0e})")
        return v
    if type(v) is float:
        if not math.isfinite(v):
            raise BadValue(field, f"not finite ({v!r})")
        if abs(v) > _MAX_INT:
            raise BadValue(field, f"number too large ({v!r}; at most {_MAX_INT:.0e})")
        return v
    if v is None:
        raise BadValue(field, "missing")
    raise BadValue(field, f"expected a number, got {type(v).__name__} {show(v)}")


def parse(result: dict, value: dict, spec: ControlSpec, data: Any) -> float | int:
    """One scalar result.

    Raises
    ------
    BadValue
        Missing, non-numeric or non-finite values, unparsable dates; ratings out of
        1..maxRating and numbers outside min..max raise :class:`SuspectValue` (kept
        with a warning in lenient mode).
    """
    low = spec.lower
    if low == "rating":
        v = _number(value.get("rating"), "value.rating")
        if v != int(v):
            raise BadValue("value.rating", f"a rating must be an integer, got {v!r}")
        v = int(v)
        if spec.scale and not spec.scale[0] <= v <= spec.scale[1]:
            raise SuspectValue("value.rating", f"rating {show(v)} outside {spec.scale[0]}..{spec.scale[1]}", v)
        return v
    if low == "number":
        v = _number(value.get("number"), "value.number")
        lo, hi = spec.number_range   # parsed (and checked) with the config
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise SuspectValue("value.number", f"{show(v)} outside the config's range "
                               f"[{'' if lo is None else f'{lo:g}'}, {'' if hi is None else f'{hi:g}'}]", v)
        return v
    for key in ("datetime", "date", "time", "year", "month"):
        raw = value.get(key)
        if raw is not None:
            break
    else:
        raise BadValue("value.datetime", "missing")
    if type(raw) is int and key == "year":
        raw = str(raw)
    if type(raw) is not str:
        raise BadValue(f"value.{key}", f"expected a date string, got {type(raw).__name__} {show(raw)}")
    if len(raw) > 64:
        raise BadValue(f"value.{key}", f"not a date/time: {show(raw)}")
    try:
        return parse_datetime(raw)
    except (ValueError, OverflowError) as exc:
        raise BadValue(f"value.{key}", f"unparsable date/time {show(raw)} ({exc})") from None


def build(parts: list, spec: ControlSpec, state: Any = None) -> Any:
    """The last result of the annotation (several are reported by the adapter)."""
    return parts[-1] if parts else MISSING

"""Checked access to result fields: numbers, strings, lists (shared by the families)."""
from __future__ import annotations

import math
from typing import Any

from .errors import BadValue

__all__ = ["MISSING", "number", "nonneg", "string", "str_list", "labels_of", "label_key"]


class _Missing:
    """Marker: the annotator did not answer this control (the row is left out)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()


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
        return v
    if t is int:
        return float(v)
    raise BadValue(f"value.{key}", f"expected a number, got {type(v).__name__} {v!r}"[:120])


def nonneg(value: dict, key: str) -> float:
    """A finite number >= 0 (sizes)."""
    v = number(value, key)
    if v < 0:
        raise BadValue(f"value.{key}", f"negative size ({v!r})")
    return v


def string(value: dict, key: str) -> str:
    try:
        v = value[key]
    except KeyError:
        raise BadValue(f"value.{key}", "missing") from None
    if type(v) is not str:
        raise BadValue(f"value.{key}", f"expected a string, got {type(v).__name__}")
    return v


def str_list(value: dict, key: str) -> list[str]:
    """A list of strings ``value[key]``."""
    try:
        v = value[key]
    except KeyError:
        raise BadValue(f"value.{key}", "missing") from None
    if type(v) is not list:
        raise BadValue(f"value.{key}", f"expected a list, got {type(v).__name__}")
    for k, s in enumerate(v):
        if type(s) is not str:
            raise BadValue(f"value.{key}[{k}]", f"expected a string, got {type(s).__name__}")
    return v


def labels_of(value: dict, key: str) -> list[str] | None:
    """Labels under ``key`` (or the generic ``labels``), None when absent."""
    v = value.get(key)
    if v is None and key != "labels":
        v = value.get("labels")
        key = "labels"
    if v is None:
        return None
    if type(v) is not list:
        raise BadValue(f"value.{key}", "labels must be a list of strings")
    for s in v:
        if type(s) is not str:
            raise BadValue(f"value.{key}", "labels must be a list of strings")
    return v


def label_key(labels: list[str] | None) -> str | None:
    """One hashable label per object: several labels are joined with "|" (sorted)."""
    if not labels:
        return None
    if len(labels) == 1:
        return labels[0]
    return "|".join(sorted(labels))


def finite_or_none(v: Any) -> float | None:
    if type(v) in (int, float) and math.isfinite(v) and v > 0:
        return float(v)
    return None

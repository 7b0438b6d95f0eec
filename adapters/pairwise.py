"""Pairwise: which of two objects an annotator preferred.

Both result shapes seen in the wild are read: ``{"selected": "left"}`` (to_name = the
Pairwise tag's own name, docs/label-studio.md §3) and the nested ``{"pairwise": {"selected":
"left"}}`` (older front ends, to_name = "obj1,obj2"). ``selected`` may also be the name
of one of the two objects; it is mapped to "left"/"right" by the order of ``toName``.
Kind ``pairwise`` (a nominal choice between "left" and "right"); unanswered is *missing*.
"""
from __future__ import annotations

from typing import Any

from .config import ControlSpec
from .errors import BadValue, show
from .fields import MISSING

__all__ = ["TYPES", "MULTI", "parse", "build"]

TYPES = {"pairwise"}
MULTI = False


def parse(result: dict, value: dict, spec: ControlSpec, data: Any) -> str:
    """``"left"`` or ``"right"``."""
    sel = value.get("selected")
    field = "value.selected"
    if sel is None and "pairwise" in value:
        inner = value["pairwise"]
        field = "value.pairwise"
        sel = inner.get("selected") if type(inner) is dict else inner
        if type(inner) is dict:
            field = "value.pairwise.selected"
    if type(sel) is not str:
        raise BadValue(field, f"expected 'left' or 'right', got {show(sel)}")
    low = sel.lower()
    if low in ("left", "right"):
        return low
    if sel in spec.to_name and len(spec.to_name) == 2:
        return "left" if sel == spec.to_name[0] else "right"
    raise BadValue(field, f"expected 'left' or 'right', got {show(sel)}")


def build(parts: list, spec: ControlSpec, state: Any = None) -> Any:
    return parts[-1] if parts else MISSING

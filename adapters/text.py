"""Free text: TextArea.

``value.text`` is a list of strings (one per submitted line/entry; docs/label-studio.md §3); an
annotation's value is those strings joined with a newline, in result order. Scalar-like
kind: an annotation with no TextArea result for the control is *missing* (no row), while
a submitted empty string is the answer "".
"""
from __future__ import annotations

from typing import Any

from .config import ControlSpec
from .errors import BadValue
from .fields import MISSING

__all__ = ["TYPES", "MULTI", "parse", "build"]

TYPES = {"textarea"}
MULTI = False
#: What several results of one annotation become (the adapter's warning says it): see build
SEVERAL = "their texts are joined, one per line, in result order"


def parse(result: dict, value: dict, spec: ControlSpec, data: Any) -> str:
    """The text of one TextArea result (a list of strings, or one string)."""
    v = value.get("text")
    if type(v) is str:
        return v
    if type(v) is not list:
        raise BadValue("value.text", "missing or not a list of strings")
    for k, s in enumerate(v):
        if type(s) is not str:
            raise BadValue(f"value.text[{k}]", f"expected a string, got {type(s).__name__}")
    return "\n".join(v)


def build(parts: list, spec: ControlSpec, state: Any = None) -> Any:
    """All TextArea results of the annotation (per-region ones too), joined."""
    if not parts:
        return MISSING
    return parts[0] if len(parts) == 1 else "\n".join(parts)

"""Rankings: Ranker on a List object, plain or with Buckets.

``value.ranker`` maps a ranker or bucket name to item ids (docs/label-studio.md §3); ``_`` holds
the items not put in any bucket. The items themselves come from the List object's data
(a list of ``{"id", ...}``). A plain Ranker's value is the tuple of ids, best first. With
buckets the value is a tuple of buckets, each a tuple of ids, in config order with the
unbucketed items (``_``) last: ``rankings.*`` distances read a tuple element as a bucket
whose ids tie, so buckets compare as ordered categories (docs/formulas.md §4); an empty bucket
keeps its place so that bucket indexes mean the same for every annotator.
Unanswered is *missing*.
"""
from __future__ import annotations

from typing import Any

from .config import ControlSpec
from .errors import BadValue, SuspectValue, show
from .fields import MISSING

__all__ = ["TYPES", "MULTI", "parse", "build"]

TYPES = {"ranker"}
MULTI = False


def _ids(v: Any, field: str) -> tuple[str, ...]:
    if type(v) is list and set(map(type, v)) <= _STR:   # the common case: ids are strings
        return tuple(v)
    if type(v) is not list:
        raise BadValue(field, "expected a list of item ids")
    out = []
    for k, x in enumerate(v):
        if type(x) is str:
            out.append(x)
        elif type(x) is int:
            out.append(str(x))
        else:
            raise BadValue(f"{field}[{k}]", f"item id must be a string or an int, got {type(x).__name__}")
    return tuple(out)


_STR = frozenset({str})


def _list_ids(spec: ControlSpec, data: Any) -> set[str] | None:
    key = spec.data_keys[0] if spec.data_keys else None
    if key is None or type(data) is not dict:
        return None
    items = data.get(key)
    if type(items) is not list:
        return None
    ids = set()
    for item in items:
        if type(item) is dict:
            i = item.get("id")
            t = type(i)
            if t is str:
                ids.add(i)
            elif t is int:
                ids.add(str(i))
    return ids or None


def parse(result: dict, value: dict, spec: ControlSpec, data: Any) -> tuple:
    """One Ranker result -> tuple of ids, or tuple of buckets (tuples of ids).

    Raises
    ------
    BadValue
        ``value.ranker`` missing or not an object, ids not strings, an id ranked twice.
        Ids not in the task's List raise :class:`SuspectValue` (kept with a warning).
    """
    rk = value.get("ranker")
    if type(rk) is not dict:
        raise BadValue("value.ranker", "missing or not an object")
    if spec.buckets:
        names = tuple(spec.buckets) + ("_",)
        extra = [k for k in rk if k not in names]
        if extra:
            raise BadValue("value.ranker", f"unknown bucket(s) {show(extra)}")
        val: tuple = tuple(_ids(rk.get(b, []), f"value.ranker.{b}") for b in names)
        flat: Any = [i for g in val for i in g]
    else:
        key = spec.name if spec.name in rk else (next(iter(rk)) if len(rk) == 1 else None)
        if key is None:
            raise BadValue("value.ranker", f"no ranking under {spec.name!r} (keys {show(list(rk))})")
        val = flat = _ids(rk[key], f"value.ranker.{key}")
    distinct = set(flat)
    if len(distinct) != len(flat):
        seen: set = set()
        twice = next(i for i in flat if i in seen or seen.add(i))
        raise BadValue("value.ranker", f"item {show(twice)} is ranked more than once")
    known = _list_ids(spec, data)
    if known is not None and not distinct <= known:
        unknown = sorted(distinct - known)
        raise SuspectValue("value.ranker", f"item(s) {show(unknown)} not in the task's list", val)
    return val


def build(parts: list, spec: ControlSpec, state: Any = None) -> Any:
    return parts[-1] if parts else MISSING

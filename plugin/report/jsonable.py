"""Strict JSON for the report's typed parts, both ways.

:func:`to_jsonable` turns dataclasses, numpy scalars and tuples into plain JSON values
(NaN and ±inf → null); :func:`from_jsonable` reads parsed JSON back into the types a
dataclass declares, naming the path of the first value that does not fit.
"""
from __future__ import annotations

import dataclasses
import json
import types
import typing
from typing import Any, Literal, Mapping, TypeVar, Union

from ls_agreement.metrics.result import finite_or_none, strict_json

__all__ = ["number", "to_jsonable", "dumps", "from_jsonable"]


# One serializer for the package: the metrics' own (plugin depends on metrics, never back).
number = finite_or_none
to_jsonable = strict_json


def dumps(obj: Any, **kw: Any) -> str:
    """Strict JSON text (``allow_nan=False``: a NaN that slipped through is a bug, not output).

    ``json.dumps(..., indent=n)`` text, byte for byte; an integer ``indent`` alone (the
    report command's form) goes through :func:`indented`, several times faster on a crowd
    report (megabytes of per-annotator numbers)."""
    plain = to_jsonable(obj)
    indent = kw.get("indent")
    if set(kw) == {"indent"} and type(indent) is int and indent >= 0:
        return indented(plain, indent)
    return json.dumps(plain, allow_nan=False, **kw)


def indented(plain: Any, indent: int) -> str:
    """``json.dumps(plain, allow_nan=False, indent=indent)`` for an int ``indent`` ≥ 0.

    The standard library indents in Python, value by value; without ``indent`` its C
    encoder writes the same tokens with the same separators (``","`` and ``": "``). So the
    compact text is written by C and the line breaks are added after it, with numpy:
    outside strings, a break follows every ``,`` and opening bracket and precedes every
    closing one (not inside an empty ``[]``/``{}``), indented by the nesting depth.
    """
    import numpy as np

    text = json.dumps(plain, allow_nan=False, separators=(",", ": "))
    raw = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)   # the structural bytes are ASCII
    where = np.flatnonzero(_SPECIAL[raw])                        # quotes, backslashes, brackets, commas
    ch = raw[where]
    quote = ch == 0x22
    if (ch == 0x5C).any():
        # a quote after an odd run of backslashes is inside its string (rare: looked at one by one)
        for k in np.flatnonzero(quote & (raw[np.maximum(where - 1, 0)] == 0x5C) & (where > 0)).tolist():
            p = int(where[k]) - 1
            while p >= 0 and raw[p] == 0x5C:
                p -= 1
            if (int(where[k]) - 1 - p) % 2:
                quote[k] = False
    outside = np.cumsum(quote, dtype=np.int64) % 2 == 0          # a structural byte is never a quote
    keep = outside & ~quote & (ch != 0x5C)
    pos, ch = where[keep], ch[keep]                              # the structural bytes: [ ] { } ,
    opening = (ch == 0x5B) | (ch == 0x7B)
    closing = (ch == 0x5D) | (ch == 0x7D)
    depth = np.cumsum(opening.astype(np.int64) - closing)       # depth after each
    empty = np.zeros(pos.size, dtype=bool)                       # the "[" of "[]", the "]" of "[]"
    pair = opening[:-1] & closing[1:] & (pos[1:] == pos[:-1] + 1)
    empty[:-1] |= pair
    empty[1:] |= pair
    # a break after "," and non-empty openings (after the byte), before non-empty closings
    brk = ~empty
    after = pos[brk] - closing[brk]                              # the byte the break follows
    length = 1 + indent * depth[brk]                             # "\n" and the indent
    shift = np.cumsum(length) - length
    nl = after + 1 + shift                                       # where each "\n" lands
    total = raw.size + int(length.sum())
    mark = np.zeros(total + 1, dtype=np.int8)                    # +1 where an insert starts, −1 after it
    mark[nl] = 1
    mark[nl + length] = -1
    inserted = np.cumsum(mark[:-1], dtype=np.int8).view(bool)
    out = np.full(total, 0x20, dtype=np.uint8)
    out[~inserted] = raw
    out[nl] = 0x0A
    return out.tobytes().decode("utf-8")


# the bytes `indented` looks at: " \\ [ ] { } ,
_SPECIAL = __import__("numpy").zeros(256, dtype=bool)
_SPECIAL[[0x22, 0x5C, 0x5B, 0x5D, 0x7B, 0x7D, 0x2C]] = True


T = TypeVar("T")


def from_jsonable(tp: type[T] | Any, data: Any) -> T:
    """Read ``data`` (parsed JSON) as type ``tp``, the inverse of :func:`to_jsonable`.

    Raises
    ------
    ValueError
        ``data`` does not have the shape ``tp`` describes (the path is named).
    """
    return _load(tp, data, "report")


def _load(tp: Any, data: Any, where: str) -> Any:  # noqa: C901 - one case per type form
    origin = typing.get_origin(tp)
    if tp is Any:
        return data
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _load(arg, data, where)
            except ValueError as exc:
                errors.append(str(exc))
        raise ValueError(errors[0] if errors else f"{where}: unexpected null")
    if origin is Literal:
        if data not in typing.get_args(tp):
            raise ValueError(f"{where}: {data!r} is not one of {typing.get_args(tp)}")
        return data
    if dataclasses.is_dataclass(tp):
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected an object, got {type(data).__name__}")
        hints = typing.get_type_hints(tp)
        unknown = sorted(set(data) - {f.name for f in dataclasses.fields(tp)})
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {unknown}")
        kw = {f.name: _load(hints[f.name], data[f.name], f"{where}.{f.name}")
              for f in dataclasses.fields(tp) if f.init and f.name in data}
        try:
            return tp(**kw)
        except TypeError as exc:  # a required field is missing
            raise ValueError(f"{where}: {exc}") from None
    if origin in (dict, Mapping, typing.Mapping):
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected an object, got {type(data).__name__}")
        _, vt = typing.get_args(tp) or (str, Any)
        return {str(k): _load(vt, v, f"{where}.{k}") for k, v in data.items()}
    if origin is list:
        if not isinstance(data, list):
            raise ValueError(f"{where}: expected an array, got {type(data).__name__}")
        (vt,) = typing.get_args(tp) or (Any,)
        return [_load(vt, v, f"{where}[{k}]") for k, v in enumerate(data)]
    if origin is tuple:
        args = typing.get_args(tp)
        if not isinstance(data, (list, tuple)) or len(data) != len(args):
            raise ValueError(f"{where}: expected an array of {len(args)}")
        return tuple(_load(a, v, f"{where}[{k}]") for k, (a, v) in enumerate(zip(args, data)))
    if tp is float:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise ValueError(f"{where}: expected a number, got {data!r}")
        return float(data)
    if tp is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise ValueError(f"{where}: expected an integer, got {data!r}")
        return data
    if tp in (str, bool):
        if not isinstance(data, tp):
            raise ValueError(f"{where}: expected {tp.__name__}, got {data!r}")
        return data
    if tp is type(None):
        if data is not None:
            raise ValueError(f"{where}: expected null")
        return None
    return data

"""Strict JSON for the report's typed parts, both ways.

:func:`to_jsonable` turns dataclasses, numpy scalars and tuples into plain JSON values
(NaN and ±inf → null); :func:`from_jsonable` reads parsed JSON back into the types a
dataclass declares, naming the path of the first value that does not fit.
"""
from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from typing import Any, Literal, Mapping, TypeVar, Union

import numpy as np

__all__ = ["number", "to_jsonable", "dumps", "from_jsonable"]


def number(x: Any) -> float | None:
    """A finite float, or None (NaN, ±inf, None, and anything not numeric)."""
    if x is None or isinstance(x, bool):
        return None
    try:
        f = float(x)
    except (TypeError, ValueError, OverflowError):
        return None
    return f if math.isfinite(f) else None


# field names of each dataclass met, in declaration order (``dataclasses.fields`` per object
# is most of the cost of a crowd report: thousands of annotators, each a few dataclasses)
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def to_jsonable(obj: Any) -> Any:
    """Strict-JSON form of a report part: dataclasses → objects, tuples → arrays, numpy
    scalars → numbers, NaN/±inf → null. Properties are not serialized."""
    t = type(obj)
    # the plain types a report is made of first, by exact type (subclasses take the general path)
    if t is str or t is int or t is bool or obj is None:
        return obj
    if t is float:
        return obj if math.isfinite(obj) else None
    names = _FIELD_NAMES.get(t)
    if names is not None:
        return {k: to_jsonable(getattr(obj, k)) for k in names}
    if t is dict:
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if t is list:
        return [to_jsonable(v) for v in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        _FIELD_NAMES[t] = tuple(f.name for f in dataclasses.fields(obj))
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return [to_jsonable(v) for v in sorted(obj, key=str)]
    if obj is None or isinstance(obj, (str, bool)):
        return obj
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return number(obj)
    if isinstance(obj, np.ndarray):
        return [to_jsonable(v) for v in obj.tolist()]
    return str(obj)


def dumps(obj: Any, **kw: Any) -> str:
    """Strict JSON text (``allow_nan=False``: a NaN that slipped through is a bug, not output)."""
    return json.dumps(to_jsonable(obj), allow_nan=False, **kw)


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

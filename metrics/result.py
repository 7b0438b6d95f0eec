"""The one shape of a measure's result (docs/design.md, "Results").

Every public measure that returns more than one number returns a dataclass deriving from
:class:`Result`:

* the point estimate under its own name (``alpha``, ``kappa_x``, ``corrected``,
  ``coefficient``) and also as :attr:`Result.estimate`, where the measure has one headline
  number (:attr:`Result.ESTIMATE` names the attribute; None when it has none, as for the
  six ICC forms or CrowdTruth's per-unit scores);
* intervals, where the measure has them, as ``ci: dict[str, tuple[float, float]]`` —
  ``(low, high)`` keyed by the name of the attribute they bound, empty when none was
  computed; tables with one row per annotator, item or form use ``ci_low``/``ci_high``
  (or ``<name>_ci_low``/``<name>_ci_high``) columns instead;
* frozen: a result is not modified after it is returned;
* ``to_dict()``: strict JSON — plain Python values, NaN and ±inf as None, tuples as lists.

A measure of one number (:func:`~.alpha.krippendorff_alpha`, Cohen's and Fleiss' κ)
returns a :class:`~.coefficient.Coefficient`: a float with the same ``estimate`` and
``to_dict()``.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any, BinaryIO, ClassVar

import numpy as np
import pandas as pd
import pydantic_core

__all__ = ["Result", "finite_or_none", "strict_json", "json_text", "write_json"]


def finite_or_none(x: Any) -> float | None:
    """``x`` as a float when it is a finite number, else None (NaN, ±inf, None)."""
    if x is None or isinstance(x, (bool, np.bool_)):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError, OverflowError):
        return None
    return v if math.isfinite(v) else None


def _default(obj: Any) -> Any:
    """The serializer's one default, for what pydantic does not know: numpy arrays and
    scalars become Python values, pandas tables their records, anything else its ``str``."""
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, pd.DataFrame):
        return obj.to_dict("records")
    return str(obj)


def _public(obj: Any) -> set[str] | None:
    """The fields of a dataclass that are not serialized (``_``-prefixed: caches)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name for f in dataclasses.fields(obj) if f.name.startswith("_")} or None
    return None


def strict_json(obj: Any) -> Any:
    """Strict-JSON form of a value: dataclasses and mappings -> dicts with str keys,
    tuples, lists, sets and arrays -> lists, numpy scalars -> Python numbers, NaN/±inf ->
    None (the rule of :func:`finite_or_none`). Other objects become their ``str``. Fields
    whose name starts with ``_`` (of the value itself) and properties are not serialized.

    The one serializer of the package (pydantic's, with :func:`_default` as its one
    default): metric results here, the report's typed parts in ``ls_agreement.plugin.report``.
    """
    return pydantic_core.to_jsonable_python(obj, exclude=_public(obj), inf_nan_mode="null",
                                            fallback=_default)


def _json(obj: Any, indent: int | None, exclude: set[str] | None = None) -> bytes:
    return pydantic_core.to_json(obj, indent=indent, exclude=exclude, inf_nan_mode="null", fallback=_default)


def json_text(obj: Any, indent: int | None = None) -> str:
    """:func:`strict_json` of ``obj`` as JSON text (UTF-8 kept as is), indented by
    ``indent`` spaces per level when given — written by pydantic in one pass."""
    return _json(obj, indent, _public(obj)).decode("utf-8")


#: JSON values serialized by one call of :func:`write_json`: a big report's task tables are
#: written a block at a time, never as one text (issue 24: the text of a 100,000-task report
#: is 0.4 GB, and its bytes and str were the run's peak).
WRITE_BLOCK = 20_000
_ROW = 200   # values of an entry counted once for the entries of its type after it
_SAMPLE = 8  # entries of a large container counted for all of them (_weight)
_FIELDS: dict[type, tuple[str, ...] | None] = {}


def write_json(obj: Any, out: BinaryIO, indent: int | None = None) -> None:
    """Write :func:`json_text` of ``obj`` to the binary stream ``out``, byte for byte the
    same (as UTF-8), about :data:`WRITE_BLOCK` JSON values at a time.

    A container holding more values than a block (a dict, list or tuple, a dataclass) is
    opened here and its entries serialized by pydantic in blocks of siblings, re-indented
    to their depth; everything else in one call, as :func:`json_text` does."""
    items = _members(obj, _public(obj))
    if items is None or _weight(obj, WRITE_BLOCK) < WRITE_BLOCK:
        out.write(_json(obj, indent, _public(obj)))
    else:
        _write_members(*items, out, indent, 0)


def _members(obj: Any, exclude: set[str] | None = None) -> tuple[bool, list[Any]] | None:
    """``(is_mapping, entries)`` of a container :func:`write_json` can open, else None."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return True, [(f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj)
                      if not exclude or f.name not in exclude]
    if isinstance(obj, dict):
        return True, list(obj.items())
    if isinstance(obj, (list, tuple)):
        return False, list(obj)
    return None


def _field_names(kind: type) -> tuple[str, ...] | None:
    """The field names of a dataclass type (None for any other type), looked up once per type."""
    names = _FIELDS.get(kind, False)
    if names is False:
        names = tuple(f.name for f in dataclasses.fields(kind)) if dataclasses.is_dataclass(kind) else None
        _FIELDS[kind] = names
    return names


def _weight(obj: Any, limit: int) -> int:
    """The JSON values in ``obj``, counted up to about ``limit``; a container of more than
    :data:`_SAMPLE` entries by its first few times its length (walking a large report's
    containers value by value cost more than writing them, and where a block ends changes
    no byte of the text)."""
    n, todo = 0, [obj]
    while todo and n < limit:
        o = todo.pop()
        n += 1
        names = _field_names(type(o))
        if names is not None:
            todo.extend(getattr(o, f) for f in names)
        elif isinstance(o, (dict, list, tuple, set, frozenset)):
            values = o.values() if isinstance(o, dict) else o
            if len(o) > _SAMPLE:
                first = list(itertools.islice(values, _SAMPLE))
                n += -(-len(o) * sum(_weight(v, limit) for v in first) // _SAMPLE)
            else:
                todo.extend(values)
        elif isinstance(o, (np.ndarray, pd.DataFrame)):
            n += int(o.size)
    return n


def _write_members(mapping: bool, entries: list[Any], out: BinaryIO, indent: int | None, depth: int) -> None:
    opener, closer = (b"{", b"}") if mapping else (b"[", b"]")
    if not entries:
        out.write(opener + closer)
        return
    # pydantic's own layout: "key": value / "key":value, entries on their own lines
    # when indented; a nested value's lines shifted right by its depth
    pad = b"" if indent is None else b"\n" + b" " * (indent * (depth + 1))
    shift = b"" if indent is None else b"\n" + b" " * (indent * depth)
    sep, colon = (b",", b":") if indent is None else (b",", b": ")
    out.write(opener)
    first, block, weight = True, [], 0

    def flush() -> None:
        nonlocal first, weight
        if not block:
            return
        text = _json(dict(block) if mapping else block, indent)
        if indent is None:
            out.write((b"" if first else sep) + text[1:-1])
        else:
            out.write((b"" if first else sep) + shift + text[2:-2].replace(b"\n", shift))
        first, weight = False, 0
        block.clear()

    alike: type | None = None
    alike_w = 0
    for entry in entries:
        value = entry[1] if mapping else entry
        # a table's rows (a task's entry, an annotator's) are alike: counting each one's values
        # cost more than writing them, so a small row's count stands for the next of its type
        if type(value) is alike and alike_w < _ROW:
            w = alike_w
        else:
            w = _weight(value, WRITE_BLOCK)
            alike, alike_w = type(value), w
        inner = _members(value) if w >= WRITE_BLOCK else None
        if inner is None:
            block.append(entry)
            weight += w
            if weight >= WRITE_BLOCK:
                flush()
            continue
        flush()
        out.write((b"" if first else sep) + pad)
        if mapping:
            out.write(_json({entry[0]: 0}, None)[1:-3] + colon)    # the key as pydantic writes a key
        first = False
        _write_members(*inner, out, indent, depth + 1)
    flush()
    out.write((b"" if indent is None else b"\n" + b" " * (indent * depth)) + closer)


class Result:
    """Base of the metric result dataclasses (the convention is in the module docstring).

    Attributes
    ----------
    ESTIMATE : str or None
        Class attribute: the name of the attribute holding the point estimate.
    estimate : float
        The point estimate (NaN where undefined); ``AttributeError`` for a result without
        one headline number.
    """

    ESTIMATE: ClassVar[str | None] = None

    @property
    def estimate(self) -> float:
        if self.ESTIMATE is None:
            raise AttributeError(f"{type(self).__name__} has no single point estimate")
        return float(getattr(self, self.ESTIMATE))

    def to_dict(self) -> dict[str, Any]:
        """Strict-JSON dict of the public fields (subclasses choose what tables become)."""
        return strict_json(self)

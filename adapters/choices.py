"""Classifications: Choices (single and multiple) and Taxonomy.

Single choice -> the chosen string (kind ``scalars``; nominal); unanswered is *missing*.
Nested choices (``allowNested``: each answer is a path, a list of option values) are
joined with "/" as Taxonomy paths are.
Multiple choice -> frozenset of strings (kind ``sets``); Taxonomy -> frozenset of paths
joined with "/" (kind ``sets``). For the set kinds an annotation without a result is the
empty set: "none of these" is an answer. A choice that is not in the config (e.g. removed
since) is kept with a warning in lenient mode and refused in strict mode.
"""
from __future__ import annotations

from typing import Any

from .config import ControlSpec
from .errors import BadValue, SuspectValue, show
from .fields import MISSING
from .offered import PATH_SEPARATOR, path_answer

__all__ = ["TYPES", "MULTI", "parse", "build", "is_multi"]

TYPES = {"choices", "taxonomy"}
MULTI = None  # depends on the control: see is_multi
_STR = frozenset({str})


def is_multi(spec: ControlSpec) -> bool:
    return spec.multiple


def _taxonomy(value: dict, spec: ControlSpec) -> frozenset:
    paths = value.get("taxonomy")
    if type(paths) is not list:
        raise BadValue("value.taxonomy", "missing or not a list of paths")
    out = []
    unknown = []
    closed = spec.closed
    for k, path in enumerate(paths):
        if type(path) is str:
            path = [path]
        if type(path) is not list or not path or any(type(s) is not str for s in path):
            raise BadValue(f"value.taxonomy[{k}]", "a path must be a non-empty list of strings")
        joined = "/".join(path)
        out.append(joined)
        if closed and spec.unknown_path(path):   # walks the declared tree, level by level
            unknown.append(joined)
    value_set = frozenset(out)
    if unknown:
        raise SuspectValue("value.taxonomy", f"path(s) {show(sorted(set(unknown)))} not in the "
                           "config's taxonomy", value_set)
    return value_set


def parse(result: dict, value: dict, spec: ControlSpec, data: Any) -> Any:
    """One Choices/Taxonomy result: a string (single) or a frozenset (multiple).

    Choices loaded from task data (``value="$..."``) are open: any string is an answer.
    """
    if spec.lower == "taxonomy":
        return _taxonomy(value, spec)
    raw = value.get("choices")
    if type(raw) is not list:
        raise BadValue("value.choices", "missing or not a list of strings")
    # plain string answers (nearly always) as they are; paths of nested choices joined
    ch = raw if set(map(type, raw)) <= _STR else [_choice(s, k) for k, s in enumerate(raw)]
    known = spec.known if spec.closed else None
    if spec.multiple:
        val: Any = frozenset(ch)
        unknown = sorted(val - known) if known is not None else []
    else:
        if len(ch) != 1:
            raise BadValue("value.choices", f"a single-choice control needs exactly one choice, got {len(ch)}")
        val = ch[0]
        unknown = [val] if known is not None and val not in known else []
    if unknown and all(PATH_SEPARATOR in u and all(p in known for p in u.split(PATH_SEPARATOR))
                       for u in unknown):
        unknown = []   # nested Choice tags of the config: every level of each path is declared
    if unknown:
        raise SuspectValue("value.choices", f"choice(s) {show(unknown)} not in the config", val)
    return val


def _choice(s: Any, k: int) -> str:
    """One chosen answer: a string, or — nested choices (``allowNested``) — the path from the
    topmost option down to the chosen one, joined as Taxonomy paths are."""
    if type(s) is str:
        return s
    if type(s) is list and s and all(type(p) is str for p in s):
        return path_answer(s)
    raise BadValue(f"value.choices[{k}]", "expected a string, or a path (a non-empty list of strings) for "
                   f"nested choices, got {type(s).__name__} {show(s)}")


def build(parts: list, spec: ControlSpec, state: Any = None) -> Any:
    """Single: the last result's choice (several results are reported by the adapter).
    Multiple/Taxonomy: the union of the results, ``frozenset()`` when there is none."""
    if spec.multiple:
        if not parts:
            return frozenset()
        return parts[0] if len(parts) == 1 else frozenset().union(*parts)
    return parts[-1] if parts else MISSING

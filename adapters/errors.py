"""Errors and warnings of the adapters: every problem names task, annotation and field.

Label Studio does not validate results (docs/label-studio.md §5), so exports carry
missing keys, NaN coordinates, cancelled annotations and duplicates. In *strict* mode the
first problem raises :class:`AdapterError`; in *lenient* mode (the default) the offending
result or item is skipped and a warning is collected.
"""
from __future__ import annotations

import reprlib
from typing import Any

# defined by the metrics (they depend on nothing); every layer raises and catches these
from ls_agreement.metrics.errors import AgreementError, BadInput

__all__ = ["AgreementError", "BadInput", "AdapterError", "Unmeasured", "Problems", "BadValue", "SuspectValue",
           "PartsDiffer",
           "MAX_WARNINGS", "show"]

# Past this many detailed warnings per collector only a count is kept: a broken
# 100k-task export must not produce a 100k-line report.
MAX_WARNINGS = 200


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict = 2, 6, 6, 4
_REPR.maxset = _REPR.maxfrozenset = 6
_REPR.maxstring, _REPR.maxother, _REPR.maxlong = 60, 60, 30


def show(value: Any, limit: int = 80) -> str:
    """A short repr for messages: a 400-digit number, a 1 MB string or a list of a million
    items from a hostile export must not end up whole in an error or in the report."""
    if type(value) is int and value.bit_length() > 100:
        return f"{'-' if value < 0 else ''}<an integer of about {int(value.bit_length() * 0.30103) + 1} digits>"
    try:
        text = _REPR.repr(value)
    except Exception:  # e.g. an int past Python's digit limit inside a list
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _short(id_: Any) -> str:
    text = id_ if type(id_) is str else show(id_)
    return text if len(text) <= 80 else text[:77] + "..."


def _where(task_id: Any, annotation_id: Any, field: str | None) -> str:
    parts = []
    if task_id is not None:
        parts.append(f"task {_short(task_id)}")
    if annotation_id is not None:
        parts.append(f"annotation {_short(annotation_id)}")
    if field:
        parts.append(f"field {field!r}")
    return ", ".join(parts)


class AdapterError(BadInput):
    """Bad Label Studio input: names the task id, annotation id and field when known.

    Attributes
    ----------
    task_id, annotation_id : Any or None
        Ids as found in the export (None when the problem is not inside a task).
    field : str or None
        Dotted path of the offending field, e.g. ``result[0].value.width``.
    """

    def __init__(self, message: str, *, task_id: Any = None, annotation_id: Any = None,
                 field: str | None = None) -> None:
        self.task_id = task_id
        self.annotation_id = annotation_id
        self.field = field
        self.reason = message
        where = _where(task_id, annotation_id, field)
        super().__init__(f"{where}: {message}" if where else message)


class Unmeasured(AdapterError):
    """A labeling config Label Studio accepts in which nothing is measured (every control
    is unsupported or collects no comparable answer): a clear refusal, not "invalid"."""


class BadValue(Exception):
    """Raised inside family parsers: ``field`` is relative to the result (``value.x``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class SuspectValue(BadValue):
    """A readable value outside the config's answer set (e.g. a choice removed from the
    config since): strict mode raises, lenient mode keeps ``keep`` and warns."""

    def __init__(self, field: str, message: str, keep: object) -> None:
        super().__init__(field, message)
        self.keep = keep


class PartsDiffer(Exception):
    """An export read in parts cannot stand for one reading of the whole (a part's byte
    range does not hold whole tasks, a task id in two parts, ids that differ only in type,
    a problem named by the task's position): the caller reads the whole
    export instead, which reports any problem as it always does. Never the user's error."""


class Problems:
    """Collects problems: raises the first one in strict mode, else keeps a warning.

    Parameters
    ----------
    strict : bool
        Raise :class:`AdapterError` at the first problem.
    """

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict
        self.warnings: list[str] = []
        self.dropped = 0

    def report(self, message: str, *, task_id: Any = None, annotation_id: Any = None,
               field: str | None = None) -> None:
        """Raise (strict) or record a warning (lenient)."""
        err = AdapterError(message, task_id=task_id, annotation_id=annotation_id, field=field)
        if self.strict:
            raise err
        self.warn(str(err) + " (skipped)")

    def warn(self, message: str) -> None:
        """Record a warning that is never an error (e.g. a duplicate annotation resolved)."""
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(message)
        else:
            self.dropped += 1

    def all(self) -> list[str]:
        """The warnings, with a final count of those not kept."""
        if self.dropped:
            return [*self.warnings, f"... and {self.dropped} more warnings"]
        return list(self.warnings)

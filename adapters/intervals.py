"""1-d labelled regions: Labels on Audio/AudioPlus, TimelineLabels on Video, TimeSeriesLabels
(and Labels) on TimeSeries, ParagraphLabels (and Labels) on Paragraphs.

Result shapes, as Label Studio's editor serialises them (docs/label-studio.md §3):

- audio (``type: "labels"``): ``{start, end, channel, labels}``, seconds, and the clip's
  duration ``original_length`` beside ``value``;
- video timeline (``"timelinelabels"``): ``{ranges: [{start, end}], timelinelabels}``,
  1-based frame numbers, both ends included (a single frame has ``start == end``);
- time series (``"timeserieslabels"``): ``{start, end, instant, timeserieslabels}``, the x
  values of the series: numbers, or date strings in the TimeSeries' ``timeFormat`` (a d3
  format) when it has one;
- paragraphs (``"paragraphlabels"``): ``{start, end, startOffset, endOffset, text,
  paragraphlabels}``, ``start``/``end`` paragraph indices (strings in the editor's model),
  the offsets within those paragraphs' texts (UTF-16 units, JavaScript's string length).

Every region becomes an :class:`~ls_agreement.metrics.model.Interval` on one axis per
control. Where the task's extent is known the positions are shares of it, so that tasks of
different lengths compare: α's chance pairs join regions of *different* tasks, and in
seconds a region near the end of a long clip would never meet one of a short clip, which
makes annotators who place regions at random look better than chance. Within a task this
is a change of unit only (IoU does not change).

- audio: shares of the clip (seconds / ``original_length``) when every task's results carry
  its length, else seconds (a warning says so); with ``splitchannels="true"`` on the Audio
  the channel joins the label (``"Speech [channel 1]"``): regions on different channels
  never match;
- video timeline: frames, a range ``start..end`` as ``[start − 1, end]`` (a frame counts 1);
- time series: the x values; date strings as seconds since the epoch (UTC, as the
  editor's d3 ``utcFormat``), each task's positions then measured from the earliest
  position marked on that task by anyone, so that tasks over different dates compare;
- paragraphs: a character position in the paragraphs' texts concatenated (``textKey`` of
  the Paragraphs, default ``text``), as a share of their total length, when every task's
  paragraphs are in its data; else
  ``index × M + offset``, ``M`` one more than the largest offset in the control, so that
  paragraphs never overlap (a warning says so). One unit per control, never a mix.

``end == start`` is an instant. Several labels on one region become one label ``"A|B"``.
Multi-object kind: an annotation without regions for the control is ``()``.
"""
from __future__ import annotations

import math
from datetime import datetime, timezone
from functools import lru_cache
from itertools import chain
from typing import Any

from ls_agreement.metrics.model import Interval

from .config import ControlSpec
from .errors import BadValue, SuspectValue, show
from .fields import label_key, labels_key, labels_of, undeclared

__all__ = ["TYPES", "MULTI", "parse", "plan_cells", "build", "POSITION_LIMIT"]

TYPES = {"labels", "timelinelabels", "timeserieslabels", "paragraphlabels"}
MULTI = True

# No position on any axis is beyond this (10^15 ms is 31,000 years): larger is garbage.
POSITION_LIMIT = 1e15
_LABEL_KEY = {"audio": "labels", "timeline": "timelinelabels", "timeseries": "timeserieslabels",
              "paragraphs": "paragraphlabels"}
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# d3 time-format directives Python's strptime reads differently: %L (milliseconds) is a
# fraction of a second like %f; d3's padding modifiers (%-d, %_d, %0d) are not needed to parse.
_D3_TO_PY = (("%L", "%f"), ("%-", "%"), ("%_", "%"), ("%0", "%"), ("%e", "%d"))
_new = object.__new__
_set = object.__setattr__


def _interval(start: float, end: float, label: Any) -> Interval:
    """An Interval from positions already checked (finite, end >= start)."""
    iv = _new(Interval)
    _set(iv, "start", start)
    _set(iv, "end", end)
    _set(iv, "label", label)
    return iv


def _number(value: dict, key: str, where: str = "value", nonneg: bool = True) -> float:
    try:
        v = value[key]
    except KeyError:
        raise BadValue(f"{where}.{key}", "missing") from None
    if type(v) is int:
        if not -POSITION_LIMIT <= v <= POSITION_LIMIT:
            raise BadValue(f"{where}.{key}", f"out of range ({show(v)})")
        v = float(v)
    elif type(v) is not float:
        raise BadValue(f"{where}.{key}", f"expected a number, got {type(v).__name__} {show(v)}")
    if not math.isfinite(v) or abs(v) > POSITION_LIMIT:
        raise BadValue(f"{where}.{key}", f"not a finite position ({v!r})")
    if nonneg and v < 0:
        raise BadValue(f"{where}.{key}", f"negative position ({v!r})")
    return v


def _ordered(start: float, end: float, where: str = "value") -> None:
    if end < start:
        raise BadValue(f"{where}.end", f"end ({end:g}) is before start ({start:g})")


def _labelled(value: dict, spec: ControlSpec, raw: list) -> list[tuple]:
    """The raw parts with the region's label first; SuspectValue (keeping them) for labels
    the config lacks."""
    key = "labels" if spec.lower == "labels" else _LABEL_KEY[spec.region]
    labels = labels_of(value, key)
    label = label_key(labels)
    if spec.region == "audio" and spec.object_attrs.get("splitchannels", "").lower() == "true":
        ch = value.get("channel", 0)
        if type(ch) is not int or ch < 0:
            raise BadValue("value.channel", f"expected a channel number, got {show(ch)}")
        label = f"{label} [channel {ch}]" if label is not None else f"[channel {ch}]"
    parts = [(label, *r) for r in raw]
    unknown = undeclared(labels, spec)
    if unknown:
        raise SuspectValue(f"value.{labels_key(value, key)}", f"label(s) {show(unknown)} not in the config",
                           parts)
    return parts


def parse(result: dict, value: dict, spec: ControlSpec, data: Any) -> list[tuple]:
    """The raw 1-d regions of one result: a list of ``(label, start, end, ...)`` (several for
    a timeline result with several ranges).

    Raises
    ------
    BadValue
        A missing or non-finite position, ``end`` before ``start``, a date that does not
        read in the TimeSeries' ``timeFormat``, a paragraph index or offset outside the
        task's paragraphs.
    """
    axis = spec.region
    if axis == "audio":
        start, end = _number(value, "start"), _number(value, "end")
        _ordered(start, end)
        raw = [(start, end, _media_length(result.get("original_length")))]
    elif axis == "timeline":
        ranges = value.get("ranges")
        if type(ranges) is not list or not ranges:
            raise BadValue("value.ranges", "missing or not a non-empty list of {start, end}")
        raw = []
        for k, r in enumerate(ranges):
            where = f"value.ranges[{k}]"
            if type(r) is not dict:
                raise BadValue(where, f"expected an object {{start, end}}, got {type(r).__name__}")
            start, end = _number(r, "start", where), _number(r, "end", where)
            _ordered(start, end, where)
            raw.append((start - 1.0, end))   # frames first..last: [first - 1, last]
    elif axis == "timeseries":
        fmt = spec.object_attrs.get("timeformat")
        (start, d0), (end, d1) = _ts_position(value, "start", fmt), _ts_position(value, "end", fmt)
        _ordered(start, end)
        raw = [(start, end, d0 or d1)]
    else:
        raw = [_paragraph_region(value, spec, data)]
    return _labelled(value, spec, raw)


def _media_length(v: Any) -> float | None:
    """The audio's duration in seconds (``original_length`` beside ``value``), None when absent
    or not a positive finite number."""
    if type(v) in (int, float) and 0 < v <= POSITION_LIMIT and math.isfinite(v):
        return float(v)
    return None


def _ts_position(value: dict, key: str, fmt: str | None) -> tuple[float, bool]:
    """A time-series position and whether it was a date (seconds since the epoch)."""
    v = value.get(key)
    if type(v) is str:
        t = _read_date(v.strip(), fmt)
        if t is None:
            raise BadValue(f"value.{key}", f"{show(v)} is not a number or a date"
                           + (f" in timeFormat {fmt!r}" if fmt else ""))
        return t, True
    return _number(value, key, nonneg=False), False


@lru_cache(maxsize=65536)
def _read_date(text: str, fmt: str | None) -> float | None:
    """Seconds since the epoch of a date string (naive dates are UTC), None when unreadable."""
    if fmt:
        if fmt in ("%Q", "%s"):   # d3: milliseconds / seconds since the epoch
            try:
                t = float(text)
            except ValueError:
                return None
            t = t / 1000.0 if fmt == "%Q" else t
            return t if math.isfinite(t) and abs(t) <= POSITION_LIMIT else None
        py = fmt
        for d3, p in _D3_TO_PY:
            py = py.replace(d3, p)
        try:
            return _seconds(datetime.strptime(text, py))
        except ValueError:
            pass
    try:
        return _seconds(datetime.fromisoformat(text))
    except ValueError:
        pass
    try:   # a plain number in a string (an x value exported as text)
        t = float(text)
    except ValueError:
        return None
    return t if math.isfinite(t) and abs(t) <= POSITION_LIMIT else None


def _seconds(dt: datetime) -> float:
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return (dt - _EPOCH).total_seconds()


def _paragraph_index(value: dict, key: str) -> int:
    v = value.get(key)
    if type(v) is str and v.strip().isdigit() and len(v) <= 12:
        return int(v)
    if type(v) is int and 0 <= v < 10 ** 12:
        return v
    if type(v) is float and v.is_integer() and 0 <= v < 1e12:
        return int(v)
    raise BadValue(f"value.{key}", f"expected a paragraph index, got {show(v)}")


def _offset(value: dict, key: str) -> int:
    v = value.get(key)
    if type(v) is float and v.is_integer():
        v = int(v)
    if type(v) is not int or not 0 <= v <= 2 ** 31:
        raise BadValue(f"value.{key}", f"expected a non-negative integer offset, got {show(v)}")
    return v


def _paragraph_region(value: dict, spec: ControlSpec, data: Any) -> tuple:
    """``(p0, o0, p1, o1, g0, g1)``: paragraph indices and offsets, and the global character
    positions (None when the task's paragraph texts are unknown)."""
    p0, p1 = _paragraph_index(value, "start"), _paragraph_index(value, "end")
    o0, o1 = _offset(value, "startOffset"), _offset(value, "endOffset")
    if (p1, o1) < (p0, o0):
        raise BadValue("value.end", f"region ends (paragraph {p1}, offset {o1}) before it starts "
                       f"(paragraph {p0}, offset {o0})")
    cum = _paragraph_starts(spec, data)
    if cum is None:
        return (p0, o0, p1, o1, None, None, None)
    n = len(cum) - 1
    for key, p, o in (("start", p0, o0), ("end", p1, o1)):
        if p >= n:
            raise BadValue(f"value.{key}", f"paragraph {p} does not exist (the task has {n})")
        size = cum[p + 1] - cum[p]
        if o > size:
            raise BadValue(f"value.{key}Offset", f"offset {o} is past the end of paragraph {p} ({size})")
    return (p0, o0, p1, o1, float(cum[p0] + o0), float(cum[p1] + o1), float(cum[-1]))


# the last task's paragraphs and their start positions (results of one task come together),
# one tuple so that a reader in another thread never sees one without the other
_last_paragraphs: tuple = (None, None)


def _paragraph_starts(spec: ControlSpec, data: Any) -> list[int] | None:
    """Where each paragraph starts in the concatenated texts, plus the total, shape (n + 1,);
    None when the task data does not hold every paragraph's text."""
    key = spec.data_keys[0] if spec.data_keys else None
    if key is None or type(data) is not dict:
        return None
    paras = data.get(key)
    if type(paras) is not list:
        return None
    global _last_paragraphs
    last, last_cum = _last_paragraphs
    if last is paras:
        return last_cum
    text_key = spec.object_attrs.get("textkey") or "text"
    cum = [0]
    for p in paras:
        t = p.get(text_key) if type(p) is dict else None
        if type(t) is not str:
            cum = None
            break
        cum.append(cum[-1] + len(t.encode("utf-16-le")) // 2)   # JavaScript string length
    _last_paragraphs = (paras, cum)
    return cum


def plan_cells(cells: list[tuple], spec: ControlSpec) -> tuple[Any, list[str]]:
    """Put the control's positions on one axis (module docstring), given every
    ``(task, annotator, parts)`` cell of the control.

    Audio positions become shares of each task's clip and time-series dates are shifted to
    each task's earliest marked position, in place; for paragraphs the state says the
    unit: None (shares of the task's characters) or ``M`` (index × M + offset).
    """
    axis = spec.region
    raws = [(t, r) for t, _, parts in cells for p in parts for r in p]
    if axis == "audio":
        length: dict[Any, float | None] = {}
        for t, r in raws:
            if r[3] is not None:
                length[t] = max(length.get(t) or 0.0, r[3])
            else:
                length.setdefault(t, None)
        missing = sum(v is None for v in length.values())
        if missing:
            return None, [f"control {spec.name!r}: the audio length (original_length) of {missing} of "
                          f"{len(length)} tasks is unknown; positions stay in seconds"]
        for t, _, parts in cells:
            if parts:
                n = length[t]
                parts[:] = [[(r[0], r[1] / n, r[2] / n, n) for r in p] for p in parts]
        return None, []
    if axis == "timeseries" and any(r[3] for _, r in raws):
        origin: dict[Any, float] = {}
        for t, r in raws:
            origin[t] = min(origin.get(t, r[1]), r[1])
        for t, _, parts in cells:
            if parts:
                o = origin[t]
                parts[:] = [[(r[0], r[1] - o, r[2] - o, r[3]) for r in p] for p in parts]
        return None, []
    if axis == "paragraphs" and any(r[5] is None for _, r in raws):
        width = 1 + max(max(r[2], r[4]) for _, r in raws)
        return width, [f"control {spec.name!r}: the paragraph texts of some tasks are not in their data; "
                       f"positions are paragraph index × {width} + offset instead of characters"]
    return None, []


def build(parts: list, spec: ControlSpec, state: Any = None) -> tuple:
    """The annotation's value: its intervals sorted by (start, end)."""
    raws = chain.from_iterable(parts)
    if spec.region == "paragraphs":
        if state is None:   # shares of the task's characters (a task of empty texts: all at 0)
            out = [_interval(r[5] / (r[7] or 1.0), r[6] / (r[7] or 1.0), r[0]) for r in raws]
        else:
            out = [_interval(float(r[1] * state + r[2]), float(r[3] * state + r[4]), r[0]) for r in raws]
    else:
        out = [_interval(r[1], r[2], r[0]) for r in raws]
    if len(out) > 1:
        out.sort(key=lambda iv: (iv.start, iv.end))
    return tuple(out)

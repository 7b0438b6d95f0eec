"""Text spans: Labels (and HyperTextLabels) on Text / HyperText objects.

Text results carry character offsets ``start``/``end`` (end exclusive), ``text`` and
``labels`` (docs/label-studio.md §3). HyperText results carry XPaths plus ``startOffset`` /
``endOffset``; they are used when ``globalOffsets`` is present or when both ends lie in
the same node (the simple case), otherwise the span is skipped with a warning. Several
labels on one span become one label ``"A|B"``. Multi-object kind: no spans = ``()``.
"""
from __future__ import annotations

from operator import attrgetter
from typing import TYPE_CHECKING, Any

import pandas as pd

from ls_agreement.metrics.model import Span as _Span, unchecked_span
from ls_agreement.metrics.tokens import many_char_spans_to_tokens

from .config import ControlSpec
from .errors import BadValue, SuspectValue, show
from .fields import label_key, labels_key, labels_of, pooled, undeclared

if TYPE_CHECKING:
    from ls_agreement.metrics.model import Span

__all__ = ["TYPES", "MULTI", "parse", "build", "object_text", "token_table", "release_tokens", "span_units_table",
           "SPAN_TOKENIZER"]

# Span distances and span F1 count tokens (docs/formulas.md §4, §7); nltk's Treebank rules need no
# data files.
SPAN_TOKENIZER = "nltk"

TYPES = {"labels", "hypertextlabels"}
MULTI = True


# No text is longer than this (a JavaScript string holds at most 2^30 UTF-16 units): a
# larger offset is garbage, and span distances must not see it when the text is unknown.
MAX_OFFSET = 2 ** 31

_SPAN_TYPE = frozenset({_Span})
_SPAN_FIELDS = attrgetter("start", "end", "label", "text")


def _offset(value: dict, key: str, where: str = "value") -> int:
    v = value.get(key)
    if type(v) is int:
        if v < 0:
            raise BadValue(f"{where}.{key}", f"negative offset ({show(v)})")
        if v > MAX_OFFSET:
            raise BadValue(f"{where}.{key}", f"offset {show(v)} out of range (above 2^31)")
        return v
    if type(v) is float and v == v and v - v == 0.0 and v == int(v) and 0 <= v <= MAX_OFFSET:
        return int(v)
    raise BadValue(f"{where}.{key}", f"expected a non-negative integer offset, got {show(v)}")


def object_text(spec: ControlSpec, data: Any) -> str | None:
    """The annotated text of a task (None when the object's data is not a string)."""
    key = spec.data_keys[0] if spec.data_keys else None
    if key is None or type(data) is not dict:
        return None
    text = data.get(key)
    return text if type(text) is str else None


def parse(result: dict, value: dict, spec: ControlSpec, data: Any) -> "Span":
    """One span.

    Raises
    ------
    BadValue
        Missing/negative/non-integer offsets, ``end < start``, offsets past the end of
        the task's text, HyperText spans across nodes without ``globalOffsets``.
    """
    if "startOffset" in value or "globalOffsets" in value:
        glob = value.get("globalOffsets")
        if type(glob) is dict:
            start, end = _offset(glob, "start", "value.globalOffsets"), _offset(glob, "end", "value.globalOffsets")
        elif glob is not None:
            raise BadValue("value.globalOffsets", f"expected an object, got {type(glob).__name__}")
        elif value.get("start") == value.get("end"):
            start, end = _offset(value, "startOffset"), _offset(value, "endOffset")
        else:
            raise BadValue("value.start", "HyperText span across nodes without globalOffsets")
        text = None
    else:
        start, end = value.get("start"), value.get("end")
        # nearly every span: two int offsets in range, checked inline (_offset says what is wrong)
        if not (type(start) is int and type(end) is int and 0 <= start <= MAX_OFFSET and 0 <= end <= MAX_OFFSET):
            start, end = _offset(value, "start"), _offset(value, "end")
        text = object_text(spec, data)
        if text is not None and end > len(text):
            raise BadValue("value.end", f"offset {end} is past the end of the text ({len(text)})")
    if end < start:
        raise BadValue("value.end", f"end ({end}) is before start ({start})")
    key = "hypertextlabels" if spec.lower == "hypertextlabels" else "labels"
    labels = labels_of(value, key)
    snippet = value.get("text")
    span = unchecked_span(start, end, label_key(labels), pooled(snippet) if type(snippet) is str else None)
    unknown = undeclared(labels, spec)
    if unknown:
        raise SuspectValue(f"value.{labels_key(value, key)}", f"label(s) {show(unknown)} not in the config",
                           span)
    return span


def build(parts: list, spec: ControlSpec, state: Any = None) -> tuple:
    """The annotation's value: its spans sorted by (start, end)."""
    if len(parts) > 1:
        parts = sorted(parts, key=lambda s: (s.start, s.end))
    return tuple(parts)


def token_table(control: Any, tokenizer: str = SPAN_TOKENIZER) -> tuple[pd.DataFrame, dict[Any, int], list[str]]:
    """A spans control's table in token offsets, the token count per task, and warnings.

    Tasks whose text is unknown (not a string in the task data) are left out, with a warning.

    Returns
    -------
    table : DataFrame (item, annotator, value = tuple of Span in token offsets)
    n_tokens : dict item -> number of tokens of its text
    warnings : list of str
    """
    memo = getattr(control, "_token_table", None)
    if memo is not None and memo[0] == tokenizer and memo[2] is control.table:
        return memo[1]   # the report reads it twice (span distances, then span F1): tokenized once
    table = control.table
    items, anns, values = table["item"].tolist(), table["annotator"].tolist(), table["value"].tolist()
    warnings: list[str] = []
    # rows task by task (tasks in order of first row), as a groupby would give them
    rows: list[int] = []          # row of the table
    entry: list[int] = []         # ... its distinct (text, answer)
    texts: list[str] = []         # per distinct (text, answer): the text and the spans
    answers: list[tuple] = []
    first_entry: list[tuple[Any, int]] = []   # per task: (task, its first row's entry)
    # A crowd project repeats a few answers on a few thousand texts: each distinct (text,
    # answer) is mapped once and its token spans are shared by every row that gave it (the
    # key keeps every field a token span carries over, the snippet text included)
    done: dict[tuple, int] = {}
    for idx in table.groupby("item", sort=False).indices.values():
        item = items[idx[0]]
        text = control.texts.get(item)
        if text is None:
            warnings.append(f"task {item!r}: no text to tokenize; its spans are left out")
            continue
        first_entry.append((item, len(entry)))
        for r in idx.tolist():
            spans = values[r] or ()
            if type(spans) is not tuple or set(map(type, spans)) - _SPAN_TYPE:
                spans = tuple(v for v in spans if isinstance(v, _Span))
            try:
                key = (text, tuple(map(_SPAN_FIELDS, spans)))
                k = done.get(key)
                if k is None:
                    k = done[key] = len(texts)
            except TypeError:  # an unhashable label: no reuse
                k = len(texts)
            if k == len(texts):
                texts.append(text)
                answers.append(spans)
            rows.append(r)
            entry.append(k)
    # every distinct text tokenized once for the whole control (a project repeats a few
    # thousand texts over its tasks in any order: more than token_bounds' cache holds),
    # every answer mapped in one batch
    n_of, tok = many_char_spans_to_tokens(texts, answers, tokenizer)
    n_tokens = {item: n_of[entry[first]] for item, first in first_entry}
    # by column: no tuple per row (each would be one more object for the garbage collector)
    out = pd.DataFrame({"item": [items[r] for r in rows], "annotator": [anns[r] for r in rows],
                        "value": [tok[k] for k in entry]}, columns=["item", "annotator", "value"]), n_tokens, warnings
    if hasattr(control, "__dict__"):
        control._token_table = (tokenizer, out, control.table)   # until release_tokens(control)
    return out


def release_tokens(control: Any) -> None:
    """Drop the token table :func:`token_table` keeps on a control (once its last reader is done)."""
    if hasattr(control, "__dict__"):
        control.__dict__.pop("_token_table", None)


def span_units_table(control: Any) -> tuple[pd.DataFrame, str, list[str]]:
    """The table span distances compare: token offsets when every task's text is known,
    else Label Studio's character offsets for the whole control (never a mix of units)."""
    items = control.table["item"].unique()
    if len(items) and all(control.texts.get(i) is not None for i in items):
        table, _, warnings = token_table(control)
        return table, f"tokens ({SPAN_TOKENIZER})", warnings
    return control.table, "characters", ["span distances in characters: the text of some tasks is unknown"]

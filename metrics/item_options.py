"""Items that offer their own answers: the values chance compares, and the strata it pairs in.

Some items offer answers of their own (options loaded per item: transcription
hypotheses, generated images, documents to rank). The long table then carries an
``options`` column: per item, the ordered answers it offered. A value of one item and a
value of another can then never be equal, and chance pairs pooled across items would
make every pair a disagreement: random annotators would look far above chance.

Chance is made of what each item offers instead (docs/formulas.md §1, "Answers offered
per item"):

* an item's answers are identified across items by their *position* in its list (option
  k of one item stands for option k of another): each value is rewritten with the
  positions of the options it holds — in a label, a set of labels, a ranking, the
  labels of regions, or the chat message a per-region answer was given to (the options
  of a per-message control are its conversation's messages) — for the chance pairs only;
* chance pairs join items of one *stratum*, the items that offer as many answers, so that
  both values of a chance pair could occur on either item.

When every item offers the same set of answers they are their own identity: nothing is
rewritten and chance is pooled as usual. A distance that only looks at which values are
equal or how they are ordered (nominal, sets, rankings) gives the same observed distances
on the rewritten values, so chance and observed pairs stay comparable.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Hashable

import numpy as np
from .errors import BadInput
from .model import Attributed, Message

__all__ = ["ItemOptions", "item_options", "position_code", "NO_OPTIONS"]

#: Stratum code of items without an ``options`` entry: they pair among themselves.
NO_OPTIONS = -1
# A rewritten option is this prefix and its position: a string, so it sorts, hashes and
# compares with the values it stands beside, and never a tuple (a tuple inside a
# ranking is a bucket of tied ids).
_PREFIX = "\x1foption#"


def position_code(k: int) -> str:
    """What option ``k`` (0-based) of an item becomes in the chance values."""
    return f"{_PREFIX}{k}"


@dataclasses.dataclass
class ItemOptions:
    """The chance view of a coded table whose items offer their own answers.

    Attributes
    ----------
    chance_values : ndarray of object, shape (n_values,) — each value with its options
        rewritten as positions (rows as the coded table's values)
    item_stratum : ndarray of int64, shape (n_items,) — 0..n_strata-1 per item
    stratum_size : ndarray of int64, shape (n_strata,) — options offered by the stratum's
        items (``NO_OPTIONS`` for items without options)
    """

    chance_values: np.ndarray
    item_stratum: np.ndarray
    stratum_size: np.ndarray

    @property
    def n_strata(self) -> int:
        return int(self.stratum_size.size)


def _show(v: Any) -> str:
    return repr(v.item() if isinstance(v, np.generic) else v)


def _atoms(options: Any, where: str) -> tuple[Hashable, ...]:
    if options is None or (isinstance(options, float) and options != options):
        return ()
    if isinstance(options, (str, bytes)) or not hasattr(options, "__iter__"):
        raise BadInput(f"{where}: options must be a sequence of answers, got {type(options).__name__}")
    out = tuple(options)
    try:
        if len(set(out)) != len(out):
            raise BadInput(f"{where}: an answer is listed twice in its options ({list(out)[:6]!r})")
    except TypeError:
        raise BadInput(f"{where}: options must be hashable answers") from None
    return out


def _rewrite(value: Any, index: dict) -> Any:
    """``value`` with every option it holds replaced by its position code."""
    t = type(value)
    if t is str or t is int or t is float or t is bool:
        return index.get(value, value)
    if t is frozenset or t is set:
        return frozenset(_rewrite(x, index) for x in value)
    if t is Attributed:   # a per-region answer: its region (a chat message) and its answer
        return Attributed(_rewrite(value.region, index), _rewrite(value.value, index))
    if t is Message:      # a message of the item's conversation: position k stands for k
        code = index.get(value)
        return value if code is None else Message("", code)
    if t is tuple or t is list:
        return tuple(_rewrite(x, index) for x in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and hasattr(value, "label"):
        label = getattr(value, "label")
        return dataclasses.replace(value, label=_rewrite(label, index)) if label is not None else value
    try:
        return index.get(value, value)
    except TypeError:  # unhashable: not an option
        return value


def item_options(values: np.ndarray, options: np.ndarray, item: np.ndarray, item_start: np.ndarray,
                 item_labels: np.ndarray) -> ItemOptions | None:
    """The chance view of a coded table's values given each row's ``options``.

    Parameters
    ----------
    values, options : ndarray of object, shape (n_values,) — rows sorted by item
    item : ndarray of int64, shape (n_values,) — item code per row
    item_start : ndarray of int64, shape (n_items,) — first row of each item
    item_labels : ndarray, shape (n_items,) — for messages

    Returns
    -------
    ItemOptions, or None when every item offers the same set of answers (or none does):
    values are then comparable across items as they are.

    Raises
    ------
    ValueError
        Rows of one item with different options, options that are not a sequence of
        distinct hashable answers.
    """
    n_items = item_start.size
    per_item: list[tuple] = []
    for u in range(n_items):
        per_item.append(_atoms(options[item_start[u]], f"item {_show(item_labels[u])}"))
    # every row of an item must carry its item's options: compare each row with its item's first
    first = options[item_start[item]]
    for r in np.flatnonzero([a is not b for a, b in zip(options, first)]):
        where = f"item {_show(item_labels[item[r]])}"
        other = _atoms(options[r], where)
        if other != per_item[item[r]]:
            raise BadInput(f"{where}: its rows give different options ({[_show(o) for o in per_item[item[r]][:4]]} "
                             f"and {[_show(o) for o in other[:4]]}, first four each)")
    offered = [p for p in per_item if p]
    if not offered or all(frozenset(p) == frozenset(offered[0]) for p in offered) and len(offered) == n_items:
        return None
    indexes = [{o: position_code(k) for k, o in enumerate(p)} for p in per_item]
    chance = np.empty(values.size, dtype=object)
    chance[:] = [_rewrite(v, indexes[u]) for v, u in zip(values, item)]
    size = np.array([len(p) if p else NO_OPTIONS for p in per_item], dtype=np.int64)
    stratum_size, stratum = np.unique(size, return_inverse=True)
    return ItemOptions(chance, stratum.astype(np.int64).ravel(), stratum_size.astype(np.int64))

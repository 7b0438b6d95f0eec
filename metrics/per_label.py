"""Agreement per label: α one-vs-rest, support, and which labels annotators confuse.

Every value is read as the set of labels it carries: a single choice is one label, a
multiple choice or taxonomy selection its elements, regions (boxes, polygons, keypoints,
spans) the labels of the regions an annotator drew on the item, relations their labels,
per-region answers the answers given (each choice of a multiple answer). For each label ``L`` the
table becomes "has ``L``" yes/no and its nominal α follows in closed form from the counts
``k_iL`` of values with ``L`` on each item ``i`` of ``m_i`` values (docs/formulas.md,
"Per label"):

    canonical  D̂o = (2/n) Σ_i k_iL (m_i − k_iL) / (m_i − 1),   D̂e = 2 n_L (n − n_L) / (n (n − 1))
    pairwise   D̂o = Σ_i k_iL (m_i − k_iL) / Σ_i C(m_i, 2),     D̂e = (n_L (n − n_L) − Σ_i k_iL (m_i − k_iL)) / n_between

Confusion counts pairs of values on the same item: ``C[x, y]`` (x ≠ y) is the number of
annotator pairs where one gave ``x`` but not ``y`` and the other ``y`` but not ``x``;
``C[x, x]`` the pairs where both gave ``x``. For single-label values this is the usual
symmetric coincidence of labels between annotator pairs.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from operator import attrgetter
from typing import Any, Hashable, Iterable, Literal

import numpy as np
import pandas as pd

from .bootstrap import expanded_level, iter_multiplicities
from .model import REGION_TYPES, Attributed, Relation
from .result import Result, strict_json
from .table import Duplicates, factorize, long_table, tabular
from .errors import BadInput

_LABEL = attrgetter("label")

__all__ = ["per_label_agreement", "PerLabelResult", "label_confusion", "label_sets", "LABEL_COLUMNS",
           "CONFUSION_COLUMNS"]

#: Columns of :attr:`PerLabelResult.table`, one row per label.
LABEL_COLUMNS = ["label", "support", "n_items", "alpha", "ci_low", "ci_high", "d_o", "d_e"]
#: Columns of :attr:`PerLabelResult.confusions`, one row per confused pair of labels.
CONFUSION_COLUMNS = ["label_a", "label_b", "count"]
# dense (items × labels × labels) blocks of the multi-label confusion, entries per block
_BLOCK = 2_000_000
_TOL = 1e-9


@dataclass(frozen=True)
class PerLabelResult(Result):
    """Agreement of each label against the rest, and the labels annotators confuse.

    Attributes
    ----------
    table : DataFrame, shape (n_labels, 8)
        ``label, support`` (values — annotator × item — carrying it), ``n_items`` (items
        where anyone gave it), ``alpha, ci_low, ci_high, d_o, d_e`` (nominal α of "has the
        label", on items with two or more values), by support, largest first.
    confusions : DataFrame, shape (≤ top, 3)
        ``label_a, label_b, count``: the most confused pairs of different labels.
    confusion : DataFrame, shape (n_labels, n_labels)
        Symmetric pair counts :func:`label_confusion` (diagonal: pairs agreeing on the label).
    single : bool
        Every value carries exactly one label (a single-choice control).
    n_items, n_pairs : int
        Pairable items, pairs of values on them.
    form : str
    bootstrap, seed : int
    confidence : float
    """

    table: pd.DataFrame
    confusions: pd.DataFrame
    confusion: pd.DataFrame
    single: bool
    n_items: int
    n_pairs: int
    form: str
    bootstrap: int = 0
    seed: int = 0
    confidence: float = 0.95

    def to_dict(self) -> dict[str, Any]:
        return strict_json({"labels": self.table.to_dict("records"),
                            "confusions": self.confusions.to_dict("records"),
                            "confusion": {"labels": [str(x) for x in self.confusion.index],
                                          "counts": self.confusion.to_numpy().tolist()},
                            "single": self.single, "n_items": self.n_items, "n_pairs": self.n_pairs,
                            "form": self.form, "bootstrap": self.bootstrap, "seed": self.seed,
                            "confidence": self.confidence})


def _labels_of(value: Any, split: str | None) -> Iterable[Hashable]:
    """The labels one value carries (see the module docstring)."""
    if value is None:
        return ()
    if isinstance(value, REGION_TYPES):
        out: Iterable[Hashable] = () if value.label is None else (value.label,)
    elif isinstance(value, (frozenset, set)):
        out = value
    elif isinstance(value, (tuple, list)):
        out = [x for r in value for x in _object_labels(r)]
    else:
        out = (value,)
    if split is not None:
        out = [p for x in out for p in (x.split(split) if isinstance(x, str) else (x,))]
    return out


def _object_labels(obj: Any) -> Iterable[Hashable]:
    """The labels of one object of a multi-object value: a region's label, a relation's
    label, the answer given to a region (each choice of a multiple answer)."""
    if isinstance(obj, Attributed):
        return tuple(obj.value) if isinstance(obj.value, frozenset) else (obj.value,)
    if isinstance(obj, (*REGION_TYPES, Relation)) and obj.label is not None:
        return (obj.label,)
    return ()


def _region_labels(values: Any, split: str | None) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`label_sets`' (row, label) entries read at C speed where every value is a tuple
    of regions (the adapters' values of a box or span control: 400,000 of them took 4.4 s
    of a 100,000-task control one by one), in the same order, each value's labels once;
    None for anything else, or where a label would be split."""
    if not hasattr(values, "__len__") or set(map(type, values)) - {tuple}:
        return None
    objs = list(chain.from_iterable(values))
    if set(map(type, objs)) - set(REGION_TYPES):
        return None
    labels = np.fromiter(map(_LABEL, objs), dtype=object, count=len(objs))
    has = np.fromiter((x is not None for x in labels), dtype=bool, count=labels.size)
    if split is not None and any(isinstance(x, str) and split in x for x in labels[has]):
        return None
    row = np.repeat(np.arange(len(values), dtype=np.int64), np.fromiter(map(len, values), dtype=np.int64,
                                                                        count=len(values)))[has]
    labels = labels[has]
    if not labels.size:
        return row, labels
    code, _ = factorize(labels)
    # a value's repeated label counts once, where it first appears (as dict.fromkeys keeps it)
    _, first = np.unique(row * (int(code.max()) + 1) + code, return_index=True)
    keep = np.sort(first)
    return row[keep], labels[keep]


def label_sets(values: Iterable[Any], split: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The labels of each value as (row, label code) pairs.

    Parameters
    ----------
    values : sequence of values, shape (n,)
    split : str, optional
        Also split string labels on this separator (the adapters join a region's several
        labels with ``"|"``).

    Returns
    -------
    row, code : ndarray of int64, shape (k,) — one entry per (value, distinct label in it)
    labels : ndarray, shape (n_labels,) — ``labels[code]``, sorted by their text
    """
    fast = _region_labels(values, split)
    if fast is not None:
        row, lab = fast
    else:
        # one pass in Python over values (object values), none over pairs
        row, lab = [], []
        for r, v in enumerate(values):
            for x in dict.fromkeys(_labels_of(v, split)):
                row.append(r)
                lab.append(x)
    if not len(lab):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=object)
    code, labels = factorize(np.asarray(lab, dtype=object))
    order = np.argsort(np.asarray([str(x) for x in labels]), kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return np.asarray(row, dtype=np.int64), rank[code], np.asarray(labels, dtype=object)[order]


def _coded(table: pd.DataFrame, split: str | None, duplicates: Duplicates
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Item code per row, (row, label) entries, labels, and the rows' item sizes."""
    df = long_table(table, duplicates=duplicates)
    item, _ = factorize(df["item"].to_numpy())
    row, code, labels = label_sets(df["value"].to_numpy(), split)
    return item, row, code, labels, np.bincount(item)


@tabular()
def label_confusion(table: pd.DataFrame, *, split: str | None = None,
                    duplicates: Duplicates = "error") -> pd.DataFrame:
    """Symmetric counts of labels given by two annotators on the same item.

    ``C[x, y]`` (x ≠ y): annotator pairs on one item where one gave ``x`` but not ``y``
    and the other ``y`` but not ``x``; ``C[x, x]``: pairs where both gave ``x``.

    Parameters
    ----------
    table : DataFrame with columns item, annotator, value; shape (n_rows, ≥3)
    split : str, optional
        See :func:`label_sets`.

    Returns
    -------
    DataFrame of int64, shape (n_labels, n_labels), labels as index and columns.
    """
    item, row, code, labels, _ = _coded(table, split, duplicates)
    return _confusion(item, row, code, labels)


def _confusion(item: np.ndarray, row: np.ndarray, code: np.ndarray, labels: np.ndarray) -> pd.DataFrame:
    n_lab, n_items = labels.size, int(item.max()) + 1 if item.size else 0
    k = np.zeros((n_items, n_lab))
    np.add.at(k, (item[row], code), 1.0)
    per_row = np.bincount(row, minlength=int(row.max()) + 1 if row.size else 0)
    if per_row.size == 0 or per_row.max() <= 1:
        # one label per value: the pairs giving x and y on an item are k_x · k_y
        c = k.T @ k
    else:
        # Q_i[x, y] = values on item i with x but not y; pairs confusing x and y = Σ_i Q_i[x,y] Q_i[y,x]
        c = np.zeros((n_lab, n_lab))
        multi_item = item[row]
        step = max(1, _BLOCK // max(n_lab * n_lab, 1))
        for lo in range(0, n_items, step):
            hi = min(n_items, lo + step)
            sel = (multi_item >= lo) & (multi_item < hi)
            r, x, it = row[sel], code[sel], multi_item[sel] - lo
            # pairs of labels within one value: sort by row, then all (x, y) of each row's labels
            order = np.argsort(r, kind="stable")
            r, x, it = r[order], x[order], it[order]
            first = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
            size = np.diff(np.r_[first, r.size])
            grp = np.repeat(np.arange(first.size), size)
            # every (entry, entry) of the same row: offsets within the row's block
            rep = np.repeat(np.arange(r.size), size[grp])
            off = np.arange(rep.size) - np.repeat(np.cumsum(size[grp]) - size[grp], size[grp])
            other = first[grp[rep]] + off
            joint = np.zeros((hi - lo, n_lab, n_lab))
            np.add.at(joint, (it[rep], x[rep], x[other]), 1.0)
            q = k[lo:hi, :, None] - joint
            c += np.einsum("ixy,iyx->xy", q, q)
        np.fill_diagonal(c, 0.0)
        c[np.diag_indices(n_lab)] = (k * k).sum(axis=0)
    # the diagonal so far is Σ k²; pairs of two values agreeing on x are Σ k(k − 1)/2
    np.fill_diagonal(c, (np.diag(c) - k.sum(axis=0)) / 2.0)
    names = [str(x) for x in labels]
    return pd.DataFrame(np.rint(c).astype(np.int64), index=names, columns=names)


@tabular()
def per_label_agreement(
    table: pd.DataFrame,
    *,
    form: Literal["canonical", "pairwise"] = "canonical",
    bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    split: str | None = None,
    top: int = 10,
    duplicates: Duplicates = "error",
) -> PerLabelResult:
    """Nominal α of each label against the rest, its support, and the most confused label pairs.

    Parameters
    ----------
    table : DataFrame with columns item, annotator, value; shape (n_rows, ≥3)
        Values are labels, sets of labels, or (sequences of) labelled regions.
    form : {"canonical", "pairwise"}
        How α is formed (docs/formulas.md §2).
    bootstrap : int
        Item-bootstrap resamples for the intervals (0: none).
    seed : int
    confidence : float
    split : str, optional
        See :func:`label_sets`.
    top : int
        Confused pairs kept in ``confusions``.
    duplicates : {"error", "keep", "first", "last"}

    Returns
    -------
    PerLabelResult

    Raises
    ------
    ValueError
        Bad table or options, no label in the table, or no item with two values.

    Examples
    --------
    >>> t = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3], "annotator": list("ababab"),
    ...                   "value": ["x", "x", "y", "y", "x", "y"]})
    >>> r = per_label_agreement(t, bootstrap=0)
    >>> r.table[["label", "support", "alpha"]].round(3).values.tolist()
    [['x', 3, 0.444], ['y', 3, 0.444]]
    """
    if form not in ("canonical", "pairwise"):
        raise BadInput(f"form must be 'canonical' or 'pairwise', got {form!r}")
    if bootstrap < 0:
        raise BadInput(f"bootstrap must be >= 0, got {bootstrap}")
    if not 0.0 < confidence < 1.0:
        raise BadInput(f"confidence must be in (0, 1), got {confidence}")
    item, row, code, labels, size_all = _coded(table, split, duplicates)
    if labels.size == 0:
        raise BadInput("no value carries a label")
    n_lab = labels.size
    support = np.bincount(code, minlength=n_lab)
    with_label = np.unique(item[row] * n_lab + code)
    n_items_label = np.bincount(with_label % n_lab, minlength=n_lab)

    # pairable items only, as α everywhere (an item with one value has no pair)
    pairable = size_all >= 2
    if not pairable.any():
        raise BadInput("no item has values from two annotators: nothing is pairable")
    new = np.cumsum(pairable) - 1
    m = size_all[pairable].astype(np.float64)
    keep = pairable[item[row]]
    k = np.zeros((m.size, n_lab))
    np.add.at(k, (new[item[row][keep]], code[keep]), 1.0)
    stats = _stats(m, k)
    d_o, d_e, alpha = _alpha(*(s.sum(axis=0) if s.ndim else s for s in stats), form)

    ci_lo = np.full(n_lab, np.nan)
    ci_hi = np.full(n_lab, np.nan)
    if bootstrap:
        reps = []
        rng = np.random.default_rng(seed)
        for w in iter_multiplicities(m.size, bootstrap, rng, dtype=np.float64):
            # each statistic is a sum over items: a replicate is a weighted sum, (b, items) @ (items, labels)
            reps.append(_alpha(*(w @ s for s in stats), form)[2])
        reps = np.concatenate(reps, axis=0)
        level = expanded_level(confidence, int(m.size))
        with np.errstate(all="ignore"):
            q = np.nanquantile(reps, [(1 - level) / 2, (1 + level) / 2], axis=0) \
                if np.isfinite(reps).any() else np.full((2, n_lab), np.nan)
        lo, hi = q[0], q[1]
        bad = ~(np.isfinite(lo) & np.isfinite(hi) & np.isfinite(alpha)) | (hi <= lo) \
            | (alpha < lo - _TOL) | (alpha > hi + _TOL)
        ci_lo, ci_hi = np.where(bad, np.nan, np.fmin(lo, alpha)), np.where(bad, np.nan, np.fmax(hi, alpha))

    names = [str(x) for x in labels]
    out = pd.DataFrame({"label": names, "support": support, "n_items": n_items_label, "alpha": alpha,
                        "ci_low": ci_lo, "ci_high": ci_hi, "d_o": d_o, "d_e": d_e})
    out = out.sort_values(["support", "label"], ascending=[False, True], kind="stable").reset_index(drop=True)
    rows_ok = pairable[item]
    # confusion on pairable items (the only ones with pairs); same codes as the α table
    keep_rows = rows_ok[row]
    conf = _confusion(item, row[keep_rows], code[keep_rows], labels)
    a, b = np.triu_indices(n_lab, k=1)
    counts = conf.to_numpy()[a, b]
    order = np.lexsort((b, a, -counts))
    order = order[counts[order] > 0][:top]
    confusions = pd.DataFrame({"label_a": [names[x] for x in a[order]], "label_b": [names[x] for x in b[order]],
                               "count": counts[order]}, columns=CONFUSION_COLUMNS)
    per_row = np.bincount(row, minlength=item.size)
    return PerLabelResult(table=out, confusions=confusions, confusion=conf, single=bool(np.all(per_row == 1)),
                          n_items=int(m.size), n_pairs=int(np.sum(m * (m - 1) / 2)), form=form,
                          bootstrap=int(bootstrap), seed=seed, confidence=confidence)


def _stats(m: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per-item sums α is made of, shapes (items,) or (items, labels): values ``m``, values
    with the label ``k``, disagreeing pairs ``k(m−k)``, their canonical weight, pairs."""
    disagree = k * (m[:, None] - k)
    return m, k, disagree, disagree / (m[:, None] - 1.0), m * (m - 1.0) / 2.0


def _alpha(n: Any, n_l: Any, disagree: Any, weighted: Any, pairs: Any, form: str
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(D̂o, D̂e, α)`` per label from item sums (shape (labels,), or (b, labels) for
    replicates, where ``n`` and ``pairs`` are shape (b,))."""
    n = np.asarray(n, dtype=np.float64)
    pairs = np.asarray(pairs, dtype=np.float64)
    if n.ndim:
        n, pairs = n[:, None], pairs[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        if form == "canonical":
            d_o = 2.0 * weighted / n
            d_e = 2.0 * n_l * (n - n_l) / (n * (n - 1.0))
        else:
            d_o = disagree / pairs
            d_e = (n_l * (n - n_l) - disagree) / (n * (n - 1.0) / 2.0 - pairs)
        alpha = np.where(d_e > 0, 1.0 - d_o / d_e, np.nan)
    return d_o, np.broadcast_to(d_e, alpha.shape), alpha

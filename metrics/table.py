"""Validating a long table (item, annotator, value) and building the pairs of measures.md §1."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["CodedTable", "code_table", "observed_pairs", "between_pair_count", "sample_between_pairs",
           "all_between_pairs"]

REQUIRED = ("item", "annotator", "value")
DUPLICATE_POLICIES = ("error", "keep", "first", "last")


@dataclass
class CodedTable:
    """A validated table restricted to pairable items, rows sorted by item.

    Attributes
    ----------
    values : ndarray (numeric, or object for structured values), shape (n_values,)
    item : ndarray of int64, shape (n_values,) — item code per value, 0..n_items-1
    annotator : ndarray of int64, shape (n_values,) — annotator code per value
    item_labels, annotator_labels : ndarray — code -> original label
    item_start, item_size : ndarray, shape (n_items,) — each item's rows are
        ``item_start[u] : item_start[u] + item_size[u]``
    n_unpairable : int — items dropped for having fewer than two values
    """

    values: np.ndarray
    item: np.ndarray
    annotator: np.ndarray
    item_labels: np.ndarray
    annotator_labels: np.ndarray
    item_start: np.ndarray
    item_size: np.ndarray
    n_unpairable: int

    @property
    def n_values(self) -> int:
        return len(self.values)

    @property
    def n_items(self) -> int:
        return int(self.item_size.size)


def show(v: object) -> str:
    """repr() of a label for messages, without numpy's type wrapper."""
    return repr(v.item() if isinstance(v, np.generic) else v)


def code_table(table: pd.DataFrame, duplicates: str = "error") -> CodedTable:
    """Validate ``table`` and code items and annotators as integers.

    Raises
    ------
    ValueError
        Missing columns, an empty table, a missing (None/NaN) value — naming its item and
        annotator —, a repeated (item, annotator) under ``duplicates="error"``, fewer than
        two annotators, or no item with two values.
    """
    if not isinstance(table, pd.DataFrame):
        raise ValueError(f"expected a pandas DataFrame with columns {REQUIRED}, got {type(table).__name__}")
    missing = [c for c in REQUIRED if c not in table.columns]
    if missing:
        raise ValueError(f"table lacks column(s) {missing}; it has {list(table.columns)}")
    if duplicates not in DUPLICATE_POLICIES:
        raise ValueError(f"duplicates must be one of {DUPLICATE_POLICIES}, got {duplicates!r}")
    if len(table) == 0:
        raise ValueError("the table is empty: no annotations to compare")
    df = table.loc[:, list(REQUIRED)]
    for col in ("item", "annotator"):
        bad = df[col].isna().to_numpy()
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise ValueError(f"row {k} has no {col} (item={show(df['item'].iat[k])}, annotator={show(df['annotator'].iat[k])})")
    values = df["value"].to_numpy()
    if values.dtype.kind in "fc":
        nan_rows = np.flatnonzero(np.isnan(values))
    elif values.dtype == object:
        # pd.isna is elementwise in C and treats lists/tuples/regions as present
        nan_rows = np.flatnonzero(pd.isna(values))
    else:
        nan_rows = np.zeros(0, dtype=np.int64)
    if len(nan_rows):
        k = int(nan_rows[0])
        raise ValueError(
            f"missing value (None/NaN) for item {show(df['item'].iat[k])}, annotator {show(df['annotator'].iat[k])}"
            f" ({len(nan_rows)} such row(s)); drop rows an annotator did not answer"
        )

    item_codes, item_labels = pd.factorize(df["item"], sort=False)
    ann_codes, ann_labels = pd.factorize(df["annotator"], sort=False)
    item_codes = item_codes.astype(np.int64)
    ann_codes = ann_codes.astype(np.int64)
    keep = np.ones(len(df), dtype=bool)
    if duplicates != "keep":
        key = item_codes * max(len(ann_labels), 1) + ann_codes
        dup = pd.Series(key).duplicated(keep=False).to_numpy()
        if dup.any():
            if duplicates == "error":
                k = int(np.flatnonzero(dup)[0])
                raise ValueError(
                    f"annotator {show(df['annotator'].iat[k])} has {int((key == key[k]).sum())} values on item "
                    f"{show(df['item'].iat[k])}; pass duplicates='first'|'last'|'keep'"
                )
            keep = ~pd.Series(key).duplicated(keep=duplicates).to_numpy()
    if len(np.unique(ann_codes[keep])) < 2:
        raise ValueError(f"agreement needs at least two annotators; the table has only {[show(a) for a in ann_labels[:1]]}")

    idx = np.flatnonzero(keep)
    sizes_all = np.bincount(item_codes[idx], minlength=len(item_labels))
    pairable_item = sizes_all >= 2
    n_unpairable = int(np.count_nonzero((sizes_all > 0) & ~pairable_item))
    idx = idx[pairable_item[item_codes[idx]]]
    if idx.size == 0:
        raise ValueError("no item has values from two annotators: nothing is pairable")
    idx = idx[np.argsort(item_codes[idx], kind="stable")]

    # re-code items densely over pairable ones, in order of first appearance
    old_items = item_codes[idx]
    uniq_old, first = np.unique(old_items, return_index=True)
    new_code_of_old = np.empty(len(item_labels), dtype=np.int64)
    new_code_of_old[uniq_old] = np.arange(uniq_old.size)
    item = new_code_of_old[old_items]
    sizes = np.bincount(item)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    ann_used, ann = np.unique(ann_codes[idx], return_inverse=True)
    return CodedTable(
        values=values[idx],
        item=item,
        annotator=ann.astype(np.int64).ravel(),
        item_labels=np.asarray(item_labels)[uniq_old],
        annotator_labels=np.asarray(ann_labels)[ann_used],
        item_start=starts.astype(np.int64),
        item_size=sizes.astype(np.int64),
        n_unpairable=n_unpairable,
    )


def observed_pairs(ct: CodedTable) -> tuple[np.ndarray, np.ndarray]:
    """All within-item pairs ``i < j`` of value rows, grouped by item size (no Python loop per item).

    Returns
    -------
    i, j : ndarray of int64, shape (n_pairs,), sorted by item
    """
    out_i, out_j, out_item = [], [], []
    for m in np.unique(ct.item_size):
        a, b = np.triu_indices(int(m), k=1)
        starts = ct.item_start[ct.item_size == m]
        out_i.append((starts[:, None] + a[None, :]).ravel())
        out_j.append((starts[:, None] + b[None, :]).ravel())
    i = np.concatenate(out_i)
    j = np.concatenate(out_j)
    order = np.argsort(i, kind="stable")
    return i[order], j[order]


def between_pair_count(ct: CodedTable) -> int:
    """Number of unordered value pairs from different items."""
    n = ct.n_values
    within = int(np.sum(ct.item_size * (ct.item_size - 1) // 2))
    return n * (n - 1) // 2 - within


def all_between_pairs(ct: CodedTable) -> tuple[np.ndarray, np.ndarray]:
    """Every between-item pair ``i < j`` (only when that is cheap)."""
    i, j = np.triu_indices(ct.n_values, k=1)
    keep = ct.item[i] != ct.item[j]
    return i[keep].astype(np.int64), j[keep].astype(np.int64)


def sample_between_pairs(ct: CodedTable, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``size`` between-item pairs drawn uniformly with replacement (rejection sampling)."""
    n = ct.n_values
    got_i, got_j, got = [], [], 0
    while got < size:
        want = int((size - got) * 1.2) + 16
        i = rng.integers(0, n, size=want)
        j = rng.integers(0, n, size=want)
        ok = ct.item[i] != ct.item[j]
        i, j = i[ok], j[ok]
        got_i.append(np.minimum(i, j))
        got_j.append(np.maximum(i, j))
        got += i.size
    return np.concatenate(got_i)[:size], np.concatenate(got_j)[:size]

"""Per-item and per-annotator breakdowns of the observed pairs (docs/formulas.md §3).

Pairs may come pooled (:class:`~.cells.ObservedCells`): each entry then stands for
``weight`` pairs of one distance, and every column is the same frequency-weighted sum.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .table import CodedTable

__all__ = ["per_item_table", "per_annotator_table", "per_annotator_sides_table", "annotator_pair_sides"]


def _stats(groups: np.ndarray, d: np.ndarray, threshold: float, d_e: float, size: int,
           also: np.ndarray | None = None, weights: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """σ, α, mean distance and pair count per group; ``also``: a second group per pair
    (each pair then counts for both of its groups); ``weights``: pairs behind each entry."""
    below_w = (d < threshold).astype(np.float64)
    if weights is None:
        n = np.bincount(groups, minlength=size).astype(np.float64)
        total = np.bincount(groups, weights=d, minlength=size)
    else:
        below_w *= weights
        n = np.bincount(groups, weights=weights, minlength=size)
        total = np.bincount(groups, weights=d * weights, minlength=size)
    below = np.bincount(groups, weights=below_w, minlength=size)
    if also is not None:
        n += np.bincount(also, minlength=size) if weights is None else np.bincount(also, weights, size)
        total += np.bincount(also, weights=d if weights is None else d * weights, minlength=size)
        below += np.bincount(also, weights=below_w, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / n
        return {
            "sigma": below / n,
            "alpha": 1.0 - mean / d_e if d_e > 0 else np.full(size, np.nan),
            "mean_distance": mean,
            "n_pairs": np.rint(n).astype(np.int64),
        }


def per_item_table(ct: CodedTable, pair_item: np.ndarray, d: np.ndarray, threshold: float, d_e: float,
                   flag_below: float, weights: np.ndarray | None = None) -> pd.DataFrame:
    """One row per pairable item: σ, α (``1 − mean(Do_item)/D̂e``), mean distance, pairs, flag.

    Parameters
    ----------
    pair_item : ndarray of int, shape (n_pairs,) — item code of each observed pair
    d : ndarray, shape (n_pairs,) — observed distances
    weights : ndarray, shape (n_pairs,), optional — pairs behind each entry (pooled cells)
    """
    s = _stats(pair_item, d, threshold, d_e, ct.n_items, weights=weights)
    s["n_annotators"] = ct.item_size
    s["flag"] = s["sigma"] < flag_below
    return pd.DataFrame(s, index=pd.Index(ct.item_labels, name="item"))


def annotator_pair_sides(pair_item: np.ndarray, a: np.ndarray, b: np.ndarray, d: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each pair once per annotator in it (once when both sides are the same annotator)."""
    other = a != b
    return (np.concatenate((a, b[other])), np.concatenate((pair_item, pair_item[other])),
            np.concatenate((d, d[other])))


def per_annotator_table(ct: CodedTable, pair_item: np.ndarray, a: np.ndarray, b: np.ndarray, d: np.ndarray,
                        threshold: float, d_e: float) -> pd.DataFrame:
    """One row per annotator: σ, α, mean distance over the pairs they are in; items they share."""
    n_ann = ct.annotator_labels.size
    other = a != b
    if other.all():  # no same-annotator pairs: sum the two sides without building them
        s = _stats(a, d, threshold, d_e, n_ann, b)
    else:
        ann, _, dd = annotator_pair_sides(pair_item, a, b, d)
        s = _stats(ann, dd, threshold, d_e, n_ann)
    return _annotator_frame(ct, s)


def per_annotator_sides_table(ct: CodedTable, annotator: np.ndarray, d: np.ndarray, weights: np.ndarray,
                              threshold: float, d_e: float) -> pd.DataFrame:
    """:func:`per_annotator_table` from pair sides (:meth:`~.cells.ObservedCells.sides`).

    Parameters
    ----------
    annotator : ndarray of int, shape (s,) — annotator code of each side
    d, weights : ndarray, shape (s,) — the side's distance and the pairs it stands for
    """
    return _annotator_frame(ct, _stats(annotator, d, threshold, d_e, ct.annotator_labels.size, weights=weights))


def _annotator_frame(ct: CodedTable, s: dict[str, np.ndarray]) -> pd.DataFrame:
    n_ann = ct.annotator_labels.size
    # every value of a pairable item is in at least one pair: the items an annotator shares
    # are the items they have a value on (values, not the far more numerous pair sides)
    seen = np.unique(ct.annotator * ct.n_items + ct.item)
    s["n_items"] = np.bincount(seen // ct.n_items, minlength=n_ann)
    return pd.DataFrame(s, index=pd.Index(ct.annotator_labels, name="annotator"))

"""Cohen's κ (two annotators) and Fleiss' κ (many), on the long table.

References: J. Cohen (1960), "A coefficient of agreement for nominal scales"; J. L. Fleiss
(1971), "Measuring nominal scale agreement among many raters"; lecture notes in paper 002
(2×2 table 20, 5, 10, 15 → κ = 0.4).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import sparse

from .bootstrap import weighted_interval

from .coefficient import Coefficient, landis_koch
from .table import Duplicates, code_table, tabular
from .errors import BadInput

__all__ = ["cohen_kappa", "fleiss_kappa", "landis_koch"]


@tabular()
def cohen_kappa(table: pd.DataFrame, *, bootstrap: int = 0, seed: int = 0, confidence: float = 0.95,
                duplicates: Duplicates = "error") -> Coefficient:
    """Cohen's κ = (Po − Pe)/(1 − Pe), Pe from each annotator's own marginals.

    Parameters
    ----------
    table : DataFrame (item, annotator, value) with exactly two annotators; items rated by
        only one of them are ignored.
    bootstrap, seed, confidence
        Item-bootstrap replicates (0: no interval), their seed, the interval's level: a
        BCa interval in ``result.ci["cohen_kappa"]``.
    duplicates : {"error", "keep", "first", "last"}
        Several values of one annotator on one item (:func:`.table.long_table`).
    """
    _check_interval(bootstrap, confidence)
    ct = code_table(table, duplicates)
    if ct.annotator_labels.size != 2:
        raise BadInput(f"Cohen's kappa needs exactly two annotators, got {ct.annotator_labels.size}: "
                         f"{list(ct.annotator_labels)[:5]}; use fleiss_kappa or krippendorff_alpha")
    cats, code = np.unique(np.asarray(ct.values).astype(str) if np.asarray(ct.values).dtype == object
                           else np.asarray(ct.values), return_inverse=True)
    code = code.ravel()
    first = ct.annotator == 0
    a = np.empty(ct.n_items, dtype=np.int64)
    b = np.empty(ct.n_items, dtype=np.int64)
    a[ct.item[first]] = code[first]
    b[ct.item[~first]] = code[~first]
    k = cats.size
    table2 = np.bincount(a * k + b, minlength=k * k).reshape(k, k) / ct.n_items
    po = float(np.trace(table2))
    pe = float(table2.sum(axis=1) @ table2.sum(axis=0))
    value = (po - pe) / (1.0 - pe) if pe < 1.0 else float("nan")
    cell = sparse.csr_matrix((np.ones(ct.n_items), (np.arange(ct.n_items), a * k + b)),
                             shape=(ct.n_items, k * k))

    def replicates(w: np.ndarray) -> np.ndarray:
        t = np.asarray(w @ cell).reshape(-1, k, k) / w.sum(axis=1)[:, None, None]
        po_w = np.trace(t, axis1=1, axis2=2)
        pe_w = (t.sum(axis=2) * t.sum(axis=1)).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(pe_w < 1.0, (po_w - pe_w) / (1.0 - pe_w), np.nan)

    ci = weighted_interval(replicates, ct.n_items, value, bootstrap=bootstrap, seed=seed,
                           confidence=confidence) if bootstrap else None
    return Coefficient(value, name="cohen_kappa", ci=ci, p_observed=po, p_expected=pe, n_items=ct.n_items,
                       annotators=[str(x) for x in ct.annotator_labels])


@tabular()
def fleiss_kappa(table: pd.DataFrame, *, bootstrap: int = 0, seed: int = 0, confidence: float = 0.95,
                 duplicates: Duplicates = "error") -> Coefficient:
    """Fleiss' κ with shared category marginals.

    Items may have different numbers of ratings (each item's agreement uses its own
    ``n_i``; marginals pool all ratings); with equal ``n_i`` this is Fleiss (1971) exactly,
    as in ``statsmodels.stats.inter_rater.fleiss_kappa``. ``bootstrap``, ``seed``,
    ``confidence`` and ``duplicates`` as for :func:`cohen_kappa` (``ci["fleiss_kappa"]``).
    """
    _check_interval(bootstrap, confidence)
    ct = code_table(table, duplicates)
    vals = np.asarray(ct.values)
    cats, code = np.unique(vals.astype(str) if vals.dtype == object else vals, return_inverse=True)
    k = cats.size
    counts = np.bincount(ct.item * k + code.ravel(), minlength=ct.n_items * k).reshape(ct.n_items, k)
    n_i = counts.sum(axis=1).astype(np.float64)
    p_i = ((counts ** 2).sum(axis=1) - n_i) / (n_i * (n_i - 1.0))
    p_bar = float(p_i.mean())
    p_j = counts.sum(axis=0) / counts.sum()
    pe = float(np.dot(p_j, p_j))
    value = (p_bar - pe) / (1.0 - pe) if pe < 1.0 else float("nan")

    def replicates(w: np.ndarray) -> np.ndarray:
        p_bar_w = (w @ p_i) / w.sum(axis=1)
        p_j_w = (w @ counts) / (w @ n_i)[:, None]
        pe_w = (p_j_w ** 2).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(pe_w < 1.0, (p_bar_w - pe_w) / (1.0 - pe_w), np.nan)

    ci = weighted_interval(replicates, ct.n_items, value, bootstrap=bootstrap, seed=seed,
                           confidence=confidence) if bootstrap else None
    return Coefficient(value, name="fleiss_kappa", ci=ci, p_observed=p_bar, p_expected=pe, n_items=ct.n_items,
                       categories=[str(c) for c in cats])


def _check_interval(bootstrap: int, confidence: float) -> None:
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, (int, np.integer)) or bootstrap < 0:
        raise BadInput(f"bootstrap must be a non-negative integer, got {bootstrap!r}")
    if not 0.0 < confidence < 1.0:
        raise BadInput(f"confidence must be in (0, 1), got {confidence!r}")

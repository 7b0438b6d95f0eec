"""Cohen's κ (two annotators) and Fleiss' κ (many), on the long table.

References: J. Cohen (1960), "A coefficient of agreement for nominal scales"; J. L. Fleiss
(1971), "Measuring nominal scale agreement among many raters"; lecture notes in paper 002
(2×2 table 20, 5, 10, 15 → κ = 0.4).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .coefficient import Coefficient, landis_koch
from .table import code_table
from .errors import BadInput

__all__ = ["cohen_kappa", "fleiss_kappa", "landis_koch"]


def cohen_kappa(table: pd.DataFrame) -> Coefficient:
    """Cohen's κ = (Po − Pe)/(1 − Pe), Pe from each annotator's own marginals.

    Parameters
    ----------
    table : DataFrame (item, annotator, value) with exactly two annotators; items rated by
        only one of them are ignored.
    """
    ct = code_table(table, "error")
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
    return Coefficient(value, name="cohen_kappa", p_observed=po, p_expected=pe, n_items=ct.n_items,
                       annotators=[str(x) for x in ct.annotator_labels])


def fleiss_kappa(table: pd.DataFrame) -> Coefficient:
    """Fleiss' κ with shared category marginals.

    Items may have different numbers of ratings (each item's agreement uses its own
    ``n_i``; marginals pool all ratings); with equal ``n_i`` this is Fleiss (1971) exactly,
    as in ``statsmodels.stats.inter_rater.fleiss_kappa``.
    """
    ct = code_table(table, "error")
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
    return Coefficient(value, name="fleiss_kappa", p_observed=p_bar, p_expected=pe, n_items=ct.n_items,
                       categories=[str(c) for c in cats])

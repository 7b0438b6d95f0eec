"""Gwet's AC1/AC2, Scott's π (Fleiss' generalized κ) and Bennett's S, many raters, missing ratings allowed.

Formulas of K. L. Gwet, "Handbook of Inter-Rater Reliability", 4th ed. (2014), ch. 2–3
for ratings of n items by any subset of the raters, as implemented by the R/Python
package irrCAC (``CAC.gwet``, ``CAC.fleiss``, ``CAC.bp``). With ``r_ik`` the number of
ratings of item i in category k, ``r_i = Σ_k r_ik``, ``r*_ik = Σ_l w_kl r_il`` and W the
q × q weight matrix (identity for the unweighted forms):

* ``pa = mean over items with r_i ≥ 2 of Σ_k r_ik (r*_ik − 1) / (r_i (r_i − 1))``;
* ``π_k = mean over all rated items of r_ik / r_i`` (items with one rating count here);
* chance agreement ``pe``: AC1/AC2 ``T_w Σ_k π_k (1 − π_k) / (q (q − 1))`` (``T_w`` = sum of
  W); Scott/Fleiss ``Σ_kl w_kl π_k π_l``; Bennett/Brennan–Prediger ``T_w / q²``;
* coefficient ``(pa − pe) / (1 − pe)``.

The variance is Gwet's linearization conditional on the rater sample (handbook §5.4):
per-item terms ``c_i = (n/n₂)(pa_i − pe·[r_i ≥ 2])/(1 − pe) − 2 (1 − coef)(pe_i − pe)/(1 − pe)``
(no ``pe_i`` term for Bennett's S, whose pe is fixed), ``var = Σ (c_i − coef)² / (n (n − 1))``
over the n rated items, and the interval ``coef ± t_{n−1} se`` with its upper end capped at 1.

:func:`per_annotator_bias` is for numeric ratings: how far each annotator sits from the
others on the items they share.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from .icc import numeric_long_table
from .result import Result, strict_json
from .table import Duplicates, factorize, long_table, show, tabular
from .errors import BadInput

__all__ = ["CacResult", "WeightName", "gwet_ac1", "gwet_ac2", "scott_pi", "bennett_s", "weight_matrix",
           "per_annotator_bias"]

WeightName = Literal["identity", "linear", "quadratic", "ordinal", "radical", "ratio", "circular", "bipolar"]
WEIGHT_NAMES = ("identity", "linear", "quadratic", "ordinal", "radical", "ratio", "circular", "bipolar")
Chance = Literal["gwet", "scott", "bennett"]


def _py(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x


@dataclass(frozen=True)
class CacResult(Result):
    """One chance-corrected agreement coefficient with Gwet's standard error.

    Attributes
    ----------
    name : str — "gwet_ac1", "gwet_ac2", "scott_pi" or "bennett_s"
    coefficient, pa, pe : float — the coefficient (the point estimate, also ``estimate``),
        percent and chance agreement
    se : float — standard error conditional on the raters (0 when every item term is equal)
    ci : dict[str, tuple[float, float]] — ``{"coefficient": (low, high)}``: t interval with
        n_items − 1 df, upper end capped at 1 (``ci_low``, ``ci_high``: read-only aliases)
    pval : float — two-sided t test of coefficient = 0
    confidence : float
    n_items : int — items with at least one rating (Gwet's n)
    n_pairable : int — items with two or more ratings (those in pa)
    n_annotators : int
    categories : list — the q categories, in the order of the weight matrix
    weights : str — weight scheme name, or "custom"
    weight_matrix : ndarray, shape (q, q)
    """

    ESTIMATE = "coefficient"

    name: str
    coefficient: float
    pa: float
    pe: float
    se: float
    ci: dict[str, tuple[float, float]]
    pval: float
    confidence: float
    n_items: int
    n_pairable: int
    n_annotators: int
    categories: list = field(default_factory=list)
    weights: str = "identity"
    weight_matrix: np.ndarray = field(default_factory=lambda: np.eye(0))

    def __float__(self) -> float:
        return float(self.coefficient)

    @property
    def ci_low(self) -> float:
        """Lower end of the interval of ``coefficient`` (``ci["coefficient"][0]``)."""
        return self.ci["coefficient"][0]

    @property
    def ci_high(self) -> float:
        """Upper end of the interval of ``coefficient`` (``ci["coefficient"][1]``)."""
        return self.ci["coefficient"][1]

    def to_dict(self) -> dict[str, Any]:
        """Strict-JSON-safe dict: plain Python values, None for NaN/inf."""
        return strict_json({"name": self.name, "coefficient": self.coefficient, "pa": self.pa, "pe": self.pe,
                            "se": self.se, "ci": self.ci, "pval": self.pval, "confidence": self.confidence,
                            "n_items": self.n_items, "n_pairable": self.n_pairable,
                            "n_annotators": self.n_annotators, "categories": list(self.categories),
                            "weights": self.weights,
                            "weight_matrix": np.asarray(self.weight_matrix, dtype=float)})


def _is_numeric(labels: np.ndarray) -> bool:
    if labels.dtype.kind in "iuf":
        return True
    return labels.dtype == object and all(isinstance(v, (int, float, np.integer, np.floating))
                                          and not isinstance(v, (bool, np.bool_)) for v in labels)


def weight_matrix(weights: WeightName, categories: Sequence[Any] | np.ndarray) -> np.ndarray:
    """Gwet's (handbook §3.2) weights between q ordered categories, as irrCAC defines them.

    Numeric categories use their values ``x_k``; other labels use their ranks 1..q in the
    given order. With ``d = x_max − x_min``: linear ``1 − |x_k − x_l|/d``; quadratic
    ``1 − (x_k − x_l)²/d²``; radical ``1 − sqrt|x_k − x_l| / sqrt d``; ratio
    ``1 − ((x_k − x_l)/(x_k + x_l))² / (d/(x_max + x_min))²``; circular
    ``1 − sin²(π (x_k − x_l)/(d + 1))`` rescaled by its maximum; bipolar
    ``1 − (x_k − x_l)² / ((x_k + x_l − 2 x_min)(2 x_max − x_k − x_l))`` rescaled by its maximum;
    ordinal (ranks only) ``1 − C(|k − l| + 1, 2) / max``.

    Returns
    -------
    ndarray of float64, shape (q, q)
    """
    if weights not in WEIGHT_NAMES:
        raise BadInput(f"weights must be one of {WEIGHT_NAMES} or a q×q array, got {weights!r}")
    cats = np.asarray(categories, dtype=object)
    q = cats.size
    x = cats.astype(np.float64) if _is_numeric(cats) else np.arange(1.0, q + 1.0)
    if weights == "identity" or q < 2:
        return np.eye(q)
    diff = x[:, None] - x[None, :]
    span = x.max() - x.min()
    with np.errstate(divide="ignore", invalid="ignore"):
        if weights == "linear":
            return 1.0 - np.abs(diff) / span
        if weights == "quadratic":
            return 1.0 - (diff / span) ** 2
        if weights == "radical":
            return 1.0 - np.sqrt(np.abs(diff)) / np.sqrt(span)
        if weights == "ratio":
            if np.any(x == 0):
                raise BadInput("ratio weights are undefined with 0 as a category (x_k + x_l = 0)")
            return 1.0 - (diff / (x[:, None] + x[None, :])) ** 2 / (span / (x.max() + x.min())) ** 2
        if weights == "circular":
            w = np.sin(np.pi * diff / (span + 1.0)) ** 2
            return 1.0 - w / w.max()
        if weights == "bipolar":
            s = x[:, None] + x[None, :]
            w = diff ** 2 / ((s - 2.0 * x.min()) * (2.0 * x.max() - s))
            np.fill_diagonal(w, 0.0)                   # 0/0 on the diagonal at the ends of the scale
            return 1.0 - w / w.max()
    rank = np.arange(q, dtype=np.float64)               # ordinal: ranks, whatever the values
    m = np.abs(rank[:, None] - rank[None, :]) + 1.0
    w = m * (m - 1.0) / 2.0
    return 1.0 - w / w.max()


def _count_matrix(table: pd.DataFrame, categories: Sequence[Any] | None,
                  duplicates: Duplicates) -> tuple[np.ndarray, np.ndarray, int]:
    """Per-item category counts ``r_ik`` of the rated items.

    Returns
    -------
    counts : ndarray of float64, shape (n_items, q) — every row sums to ≥ 1
    categories : ndarray, shape (q,) — sorted when numeric or not given
    n_annotators : int
    """
    df = long_table(table, duplicates=duplicates, missing="keep")
    raw = df["value"].to_numpy()
    rated = ~np.asarray(pd.isna(raw), dtype=bool) if raw.dtype.kind not in "biu" else np.ones(raw.size, bool)
    df, raw = df.loc[rated], raw[rated]
    if raw.size == 0:
        raise BadInput("no rating: every value is None/NaN")
    if categories is None:
        labels = pd.unique(raw if raw.dtype != object else pd.Series(raw, dtype=object))
        try:
            cats = np.asarray(sorted(labels), dtype=object)
        except TypeError as exc:                        # e.g. str mixed with int
            raise BadInput(f"categories of mixed types cannot be ordered ({exc}); pass categories=[...]") from None
    else:
        cats = np.asarray(list(categories), dtype=object)
        if pd.Index(cats).has_duplicates:
            raise BadInput(f"categories has repeated entries: {list(cats)}")
        if _is_numeric(cats):                            # a numeric scale is ordered by value, as irrCAC does
            cats = cats[np.argsort(cats.astype(np.float64), kind="stable")]
    code = pd.Index(cats).get_indexer(pd.Index(raw if raw.dtype != object else pd.Series(raw, dtype=object)))
    if np.any(code < 0):
        k = int(np.flatnonzero(code < 0)[0])
        raise BadInput(f"item {show(df['item'].iat[k])}, annotator {show(df['annotator'].iat[k])}: value "
                         f"{show(raw[k])} is not among categories {[_py(c) for c in cats]}")
    item, _ = factorize(df["item"].to_numpy())
    n_ann = int(factorize(df["annotator"].to_numpy())[1].size)
    q = cats.size
    counts = np.bincount(item * q + code, minlength=(int(item.max()) + 1) * q).reshape(-1, q).astype(np.float64)
    return counts, cats, n_ann


def _cac(table: pd.DataFrame, chance: Chance, name: str, weights: WeightName | np.ndarray,
         categories: Sequence[Any] | None, confidence: float, duplicates: Duplicates) -> CacResult:
    """The shared computation of the coefficients (formulas in the module docstring)."""
    if not 0.0 < confidence < 1.0:
        raise BadInput(f"confidence must be in (0, 1), got {confidence!r}")
    counts, cats, n_ann = _count_matrix(table, categories, duplicates)
    n, q = counts.shape
    if isinstance(weights, str):
        w, w_name = weight_matrix(weights, cats), weights
    else:
        w, w_name = np.asarray(weights, dtype=np.float64), "custom"
        if w.shape != (q, q):
            raise BadInput(f"weights must be a {q}×{q} matrix for categories {[_py(c) for c in cats]}, "
                             f"got shape {w.shape}")
    r = counts.sum(axis=1)
    pair = r >= 2
    n2 = int(pair.sum())
    if n2 == 0:
        raise BadInput("no item has ratings from two annotators: agreement is undefined")
    if n < 2:
        raise BadInput("the standard error needs at least two rated items; the table has one")

    r_star = counts @ w.T                              # r*_ik = Σ_l w_kl r_il, shape (n, q)
    agree = (counts * (r_star - 1.0)).sum(axis=1)
    pa_i = np.divide(agree, r * (r - 1.0), out=np.zeros(n), where=pair)
    pa = float(pa_i.sum() / n2)
    pi = (counts / r[:, None]).mean(axis=0)            # classification propensities π_k, shape (q,)
    t_w = float(w.sum())

    with np.errstate(divide="ignore", invalid="ignore"):
        if chance == "gwet":
            scale = t_w / (q * (q - 1.0)) if q >= 2 else math.nan
            pe = scale * float(pi @ (1.0 - pi))
            pe_i = scale * (counts @ (1.0 - pi)) / r
        elif chance == "scott":
            pe = float(pi @ w @ pi)
            pe_i = counts @ ((w @ pi + w.T @ pi) / 2.0) / r
        else:
            pe = t_w / q ** 2
            pe_i = None                                 # pe does not depend on the sample
        coef = (pa - pe) / (1.0 - pe)
        terms = (n / n2) * (pa_i - pe * pair) / (1.0 - pe)
        if pe_i is not None:
            terms = terms - 2.0 * (1.0 - coef) * (pe_i - pe) / (1.0 - pe)
        var = float(np.sum((terms - coef) ** 2)) / (n * (n - 1.0))
        se = math.sqrt(var) if math.isfinite(var) else math.nan
        t = stats.t.ppf(0.5 + confidence / 2.0, n - 1)
        if not (math.isfinite(coef) and math.isfinite(se)):
            pval = math.nan
        elif se > 0:
            pval = 2.0 * stats.t.sf(abs(coef / se), n - 1)
        else:                                           # every item term equal: no sampling spread
            pval = 0.0 if coef != 0 else math.nan
    return CacResult(name=name, coefficient=float(coef), pa=pa, pe=float(pe), se=se,
                     ci={"coefficient": (float(coef - t * se), float(np.minimum(1.0, coef + t * se)))}, pval=float(pval), confidence=confidence, n_items=n,
                     n_pairable=n2, n_annotators=n_ann, categories=[_py(c) for c in cats], weights=w_name,
                     weight_matrix=w)


_PARAMS_DOC = """
    Parameters
    ----------
    table : DataFrame with columns item, annotator, value; shape (n_rows, ≥3)
        One row per rating; raters may skip items (absent rows or None/NaN values).
    categories : sequence or None
        All possible categories (a category nobody used still changes q and π).
        None: the values seen, sorted. Numeric categories are ordered by value, and the
        weights use their values; other labels keep the given order and the weights use
        their ranks 1..q (so pass ordinal labels in scale order). A value outside the list
        is an error.
    confidence : float in (0, 1)
    duplicates : {"error", "keep", "first", "last"} — see :func:`.table.long_table`

    Returns
    -------
    CacResult

    Raises
    ------
    ValueError
        A duplicate, a value not in ``categories``, no item with two ratings, fewer
        than two rated items, a weight matrix of the wrong shape.
"""


@tabular()
def gwet_ac1(table: pd.DataFrame, *, categories: Sequence[Any] | None = None, confidence: float = 0.95,
             duplicates: Duplicates = "error") -> CacResult:
    return _cac(table, "gwet", "gwet_ac1", "identity", categories, confidence, duplicates)


gwet_ac1.__doc__ = """Gwet's AC1: chance agreement from how evenly raters spread over the categories.

    Reference: K. L. Gwet, "Computing inter-rater reliability and its variance in the
    presence of high agreement", Br. J. Math. Stat. Psychol. 61 (2008); handbook 4th ed.
    §4. Equals irrCAC ``CAC(ratings).gwet()``.
""" + _PARAMS_DOC


@tabular()
def gwet_ac2(table: pd.DataFrame, *, weights: WeightName | np.ndarray = "quadratic",
             categories: Sequence[Any] | None = None, confidence: float = 0.95,
             duplicates: Duplicates = "error") -> CacResult:
    return _cac(table, "gwet", "gwet_ac2", weights, categories, confidence, duplicates)


gwet_ac2.__doc__ = """Gwet's AC2: AC1 with partial credit between categories (ordinal or interval scales).

    ``weights`` is a scheme name (see :func:`weight_matrix`) or a q × q matrix in the order
    of ``categories``. Equals irrCAC ``CAC(ratings, weights=...).gwet()``.
""" + _PARAMS_DOC


@tabular()
def scott_pi(table: pd.DataFrame, *, weights: WeightName | np.ndarray = "identity",
             categories: Sequence[Any] | None = None, confidence: float = 0.95,
             duplicates: Duplicates = "error") -> CacResult:
    return _cac(table, "scott", "scott_pi", weights, categories, confidence, duplicates)


scott_pi.__doc__ = """Scott's π for many raters (Fleiss' generalized κ), chance from pooled category shares.

    ``pe = Σ_kl w_kl π_k π_l``. References: W. A. Scott (1955); J. L. Fleiss (1971); Gwet
    handbook §2.3. Equals irrCAC ``CAC(ratings, weights=...).fleiss()``. Unlike
    :func:`.kappa.fleiss_kappa`, π_k averages each item's shares (Gwet's form), which
    differs from pooling all ratings when items have different numbers of ratings.
""" + _PARAMS_DOC


@tabular()
def bennett_s(table: pd.DataFrame, *, weights: WeightName | np.ndarray = "identity",
              categories: Sequence[Any] | None = None, confidence: float = 0.95,
              duplicates: Duplicates = "error") -> CacResult:
    return _cac(table, "bennett", "bennett_s", weights, categories, confidence, duplicates)


bennett_s.__doc__ = """Bennett, Alpert & Goldstein's S (Brennan–Prediger): chance = uniform over q categories.

    ``pe = Σ w / q²`` (1/q unweighted), so q is decisive: pass every possible category.
    References: E. M. Bennett et al. (1954); R. L. Brennan, D. J. Prediger (1981).
    Equals irrCAC ``CAC(ratings, weights=...).bp()`` (whose p-value is one-sided; this
    one is two-sided like the others).
""" + _PARAMS_DOC


@tabular()
def per_annotator_bias(table: pd.DataFrame, *, confidence: float = 0.95,
                       duplicates: Duplicates = "error") -> pd.DataFrame:
    """Each annotator's mean signed difference to the other annotators on shared items.

    For every rating ``y_ai`` of annotator a on an item i that others also rated,
    ``d_ai = y_ai − mean_{b ≠ a} y_bi``; the bias of a is the mean of its ``d_ai`` with a
    t interval (``mean ± t_{n−1} sd/√n``). Positive: a rates higher than the others.

    Parameters
    ----------
    table : DataFrame with columns item, annotator, value (numeric); shape (n_rows, ≥3)
    confidence : float in (0, 1)
    duplicates : {"error", "keep", "first", "last"}

    Returns
    -------
    DataFrame indexed by annotator (sorted), shape (n_annotators, 6), columns
    bias, sd, n, se, ci_low, ci_high; NaN where n is too small (sd and interval need
    n ≥ 2). Annotators who share no item with anyone have n = 0.
    """
    if not 0.0 < confidence < 1.0:
        raise BadInput(f"confidence must be in (0, 1), got {confidence!r}")
    df = numeric_long_table(table, duplicates=duplicates, measure="per_annotator_bias")
    if df.empty:
        raise BadInput("no rating: every value is None/NaN")
    y = df["value"].to_numpy()
    item, _ = factorize(df["item"].to_numpy())
    ann, ann_labels = factorize(df["annotator"].to_numpy())
    m = np.bincount(item).astype(np.float64)
    s = np.bincount(item, weights=y)
    shared = m[item] >= 2
    with np.errstate(divide="ignore", invalid="ignore"):
        d = y - (s[item] - y) / (m[item] - 1.0)        # minus the mean of the other annotators
    ann, d = ann[shared], d[shared]
    k = ann_labels.size
    cnt = np.bincount(ann, minlength=k).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.bincount(ann, weights=d, minlength=k) / cnt
        # two-pass variance: deviations from each annotator's own mean
        ss = np.bincount(ann, weights=(d - mean[ann]) ** 2, minlength=k)
        sd = np.sqrt(ss / (cnt - 1.0))
        sd[cnt < 2] = np.nan
        se = sd / np.sqrt(cnt)
        t = stats.t.ppf(0.5 + confidence / 2.0, np.maximum(cnt - 1.0, 1.0))
    out = pd.DataFrame({"bias": mean, "sd": sd, "n": cnt.astype(np.int64), "se": se, "ci_low": mean - t * se,
                        "ci_high": mean + t * se}, index=pd.Index(ann_labels, name="annotator"))
    try:
        return out.sort_index()
    except TypeError:                                   # unorderable mixed labels: first-seen order
        return out

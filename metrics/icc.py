"""Intraclass correlations ICC1, ICC2, ICC3 and their average-measure forms, missing ratings allowed.

The six forms of Shrout & Fleiss (1979), named after McGraw & Wong (1996) by pingouin as
ICC(1,1), ICC(A,1), ICC(C,1), ICC(1,k), ICC(A,k), ICC(C,k):

* ICC1 — one-way random model (each item rated by its own random raters),
  ``σ²_item / (σ²_item + σ²_within)``;
* ICC2 — two-way random, absolute agreement,
  ``σ²_item / (σ²_item + σ²_annotator + σ²_residual)``;
* ICC3 — two-way mixed, consistency (annotator effects fixed),
  ``σ²_item / (σ²_item + σ²_residual)``;
* ICCxk — the same for the mean of k ratings (Spearman–Brown).

Complete data (every annotator rates every item) give the classical ANOVA formulas and
F-test intervals, equal to ``pingouin.intraclass_corr``. Missing ratings are handled by
the analysis-of-variance (method of moments) estimators of the variance components for
unbalanced data, which reduce to the classical ones when nothing is missing:

* one-way: the unbalanced one-way ANOVA, ``E[MSB] = σ²_w + n0 σ²_item`` with
  ``n0 = (N − Σ n_i² / N) / (n − 1)`` (Searle, Casella & McCulloch 1992, §3.6;
  Donner 1986), so ``k`` becomes ``n0`` in ICC1 and its interval;
* two-way: Henderson's Method III (fitting constants) for the crossed additive model
  ``y = μ + a_item + b_annotator + e`` (Henderson 1953; Searle et al. 1992, §5.5):
  ``SSE`` and the reductions ``R(annotator | item)``, ``R(item | annotator)`` of the
  least-squares fit give unbiased component estimates from
  ``E[R(item | annotator)] = (n − c) σ²_e + (N − K) σ²_item`` and
  ``E[R(annotator | item)] = (K − c) σ²_e + (N − n) σ²_annotator``
  (``c`` = connected components of the item–annotator design, 1 in a connected one).
  ``k`` becomes ``k_a = (N − K)/(n − c)`` and ``n`` becomes ``k_b = (N − n)/(K − c)``
  in the ICC2/ICC3 formulas, the F test and McGraw & Wong's Satterthwaite interval
  for ICC2 (derived for these expected mean squares in :func:`_icc2_bounds`).

References: P. E. Shrout, J. L. Fleiss, "Intraclass correlations: uses in assessing rater
reliability", Psychological Bulletin 86 (1979); K. O. McGraw, S. P. Wong, "Forming
inferences about some intraclass correlation coefficients", Psychological Methods 1
(1996); C. R. Henderson, "Estimation of variance and covariance components", Biometrics
9 (1953); S. R. Searle, G. Casella, C. E. McCulloch, "Variance Components" (1992);
A. Donner, "A review of inference procedures for the intraclass correlation coefficient
in the one-way random effects model", International Statistical Review 54 (1986).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy import stats
from scipy.sparse.csgraph import connected_components

from .result import Result, strict_json
from .table import Duplicates, factorize, long_table, show, tabular
from .errors import BadInput

__all__ = ["IccResult", "icc", "numeric_long_table"]

FORMS = ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k")
DESCRIPTIONS = ("Single raters absolute (one-way random)", "Single random raters (two-way random, absolute)",
                "Single fixed raters (two-way mixed, consistency)", "Average raters absolute (one-way random)",
                "Average random raters (two-way random, absolute)",
                "Average fixed raters (two-way mixed, consistency)")
COLUMNS = ("type", "description", "icc", "f", "df1", "df2", "pval", "ci_low", "ci_high")
_DENSE_SOLVE_LIMIT = 2000  # annotators up to this many: dense solve; beyond, sparse LU


def numeric_long_table(table: pd.DataFrame, *, duplicates: Duplicates = "error",
                       measure: str = "ICC") -> pd.DataFrame:
    """The long table with a float ``value`` column; None/NaN rows (no rating) removed.

    Parameters
    ----------
    table : DataFrame with columns item, annotator, value; shape (n_rows, ≥3)
    duplicates : {"error", "keep", "first", "last"} — see :func:`.table.long_table`
    measure : str — how error messages name the caller

    Returns
    -------
    DataFrame with columns item, annotator, value (float64), shape (n_rated, 3).

    Raises
    ------
    ValueError
        What :func:`.table.long_table` refuses, or a value that is not a finite real number
        (a string, a list, ±inf), naming its item and annotator.
    """
    df = long_table(table, duplicates=duplicates, missing="keep")
    raw = df["value"].to_numpy()
    if raw.dtype.kind in "biuf":
        values = raw.astype(np.float64)
        bad = np.isinf(values)
    else:
        # object/str columns: a number is a numbers.Real (int, float, numpy scalars, bool);
        # pd.isna marks the None/NaN that mean "not rated".
        absent = np.asarray(pd.isna(raw), dtype=bool) if raw.dtype == object else np.zeros(raw.size, bool)
        is_real = np.frompyfunc(lambda v: isinstance(v, numbers.Real), 1, 1)(raw).astype(bool)
        bad = ~absent & ~is_real
        values = np.full(raw.size, np.nan)
        ok = ~absent & is_real
        values[ok] = raw[ok].astype(np.float64)
        bad |= np.isinf(values)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise BadInput(f"{measure} needs finite numeric values; item {show(df['item'].iat[k])}, annotator "
                         f"{show(df['annotator'].iat[k])} has {show(raw[k])} ({int(bad.sum())} such row(s))")
    keep = ~np.isnan(values)
    return pd.DataFrame({"item": df["item"].to_numpy()[keep], "annotator": df["annotator"].to_numpy()[keep],
                         "value": values[keep]})


@dataclass(frozen=True)
class IccResult(Result):
    """The six intraclass correlations of one table (pingouin's layout). ``estimate`` is
    ICC2 (two-way random, absolute agreement, one rater); every form is ``result[form]``.

    Attributes
    ----------
    table : DataFrame, shape (6, 9) — one row per form (ICC1, ICC2, ICC3, ICC1k, ICC2k,
        ICC3k) with columns type, description, icc, f, df1, df2, pval, ci_low, ci_high
    ci : dict[str, tuple[float, float]] — ``(ci_low, ci_high)`` per form, from ``table``
    n_items : int — items with at least two ratings (the ones used)
    n_annotators : int — annotators rating those items
    n_missing : int — absent (item, annotator) cells among them, ``n_items·n_annotators − n_ratings``
    n_ratings : int — ratings used
    n_dropped_items : int — items left out for having fewer than two ratings
    confidence : float — level of the intervals
    effective_k : dict — the design's ratings per item in the expected mean squares:
        ``one_way`` = n0, ``two_way`` = k_a, ``annotator`` = k_b (k, k, n when complete)
    variance_components : dict — ANOVA estimates ``item_one_way``, ``within`` (one-way) and
        ``item``, ``annotator``, ``residual`` (two-way, Henderson III); may be negative
    """

    table: pd.DataFrame
    n_items: int
    n_annotators: int
    n_missing: int
    n_ratings: int
    n_dropped_items: int
    confidence: float
    effective_k: dict[str, float] = field(default_factory=dict)
    variance_components: dict[str, float] = field(default_factory=dict)

    #: The headline form: two-way random effects, absolute agreement, one rater (Shrout &
    #: Fleiss's ICC(2,1)), the form Koo & Li (2016) recommend for inter-rater reliability.
    HEADLINE: ClassVar[str] = "ICC2"

    def __getitem__(self, form: str) -> float:
        """The ICC of one form, e.g. ``result["ICC2"]``."""
        return float(self.table.set_index("type").at[form, "icc"])

    @property
    def estimate(self) -> float:
        """ICC2 (:attr:`HEADLINE`); every form is ``result[form]``, its interval ``ci[form]``."""
        return self[self.HEADLINE]

    @property
    def ci(self) -> dict[str, tuple[float, float]]:
        """``(low, high)`` of each form's ICC at level ``confidence``, keyed by form."""
        return {str(t): (float(lo), float(hi)) for t, lo, hi in
                zip(self.table["type"], self.table["ci_low"], self.table["ci_high"])}

    def to_dict(self) -> dict[str, Any]:
        """Strict-JSON-safe dict: plain Python numbers, None for NaN/inf."""
        forms = self.table[["type", "description", "icc", "f", "df1", "df2", "pval", "ci_low", "ci_high"]]
        return strict_json({"forms": forms.to_dict("records"), "n_items": self.n_items,
                            "n_annotators": self.n_annotators, "n_missing": self.n_missing,
                            "n_ratings": self.n_ratings, "n_dropped_items": self.n_dropped_items,
                            "confidence": self.confidence, "effective_k": self.effective_k,
                            "variance_components": self.variance_components})


def _f_bounds(f: float, df1: float, df2: float, confidence: float) -> tuple[float, float]:
    """Shrout & Fleiss's bounds on the F ratio: ``F / F_{1-α/2}(df1, df2)`` and ``F · F_{1-α/2}(df2, df1)``."""
    q = 0.5 + confidence / 2.0
    return f / stats.f.ppf(q, df1, df2), f * stats.f.ppf(q, df2, df1)


def _single(f_bound: float, k: float) -> float:
    """``(F − 1)/(F + k − 1)`` written so that F = inf gives 1 (perfect agreement)."""
    return 1.0 - k / (f_bound + k - 1.0)


def _icc2_bounds(ms_a: float, ms_b: float, mse: float, rho: float, k_a: float, k_b: float, df_a: float,
                 df_b: float, df_e: float, confidence: float) -> tuple[float, float]:
    """McGraw & Wong's (1996, case 2A) Satterthwaite interval for ICC2, any expected mean squares.

    With ``E[MS_a] = σ²_e + k_a σ²_a``, ``E[MS_b] = σ²_e + k_b σ²_b`` and ``c = k_a ρ/(1 − ρ)``,
    ``E[MS_a] = (c/k_b) E[MS_b] + (1 + c − c/k_b) E[MSE]``; ``MS_a`` over that combination is
    roughly F(df_a, v), ``v`` from Satterthwaite at the estimate ρ. Solving for ρ at the two
    F quantiles gives the bounds; with ``k_a = k``, ``k_b = n`` these are McGraw & Wong's.
    """
    q = 0.5 + confidence / 2.0
    pooled = (ms_b + (k_b - 1.0) * mse) / k_b     # what c multiplies in the combination
    if pooled == 0.0 and ms_a > 0.0:
        return 1.0, 1.0                            # no annotator nor residual variation: ρ = 1 exactly
    # a, b of McGraw & Wong multiplied by (1 − ρ): v is scale-free and this stays finite at ρ = 1
    a = k_a * rho / k_b
    b = (1.0 - rho) + k_a * rho - k_a * rho / k_b
    v = (a * ms_b + b * mse) ** 2 / ((a * ms_b) ** 2 / df_b + (b * mse) ** 2 / df_e)
    f_low = stats.f.ppf(q, df_a, v)
    f_up = stats.f.ppf(q, v, df_a)
    num_l = ms_a - f_low * mse
    num_u = f_up * ms_a - mse
    low = num_l / (num_l + k_a * f_low * pooled)
    up = num_u / (num_u + k_a * pooled)
    return low, up


def _div(a: float, b: float) -> float:
    """``a / b``, NaN for an empty degree of freedom (b = 0)."""
    return np.float64(a) / b if b > 0 else np.float64(np.nan)


def _spearman_brown(rho: float, k: float) -> float:
    return k * rho / (1.0 + (k - 1.0) * rho)


def _annotator_reduction(z: sp.csr_matrix, ann: np.ndarray, resid: np.ndarray, n_i: np.ndarray) -> tuple[float, int]:
    """``R(annotator | item)`` of the additive least-squares fit, and the design's component count.

    Item effects are absorbed: the annotator effects solve ``C b = q`` with
    ``C = diag(r) − Zᵀ diag(1/n_i) Z`` (``z`` = Z, the item × annotator rating counts,
    shape (n, K); ``ann``, ``resid`` shape (N,); ``n_i`` shape (n,)) and
    ``q_j`` = sum of annotator j's deviations from the item means. C is singular once per
    connected component, so one annotator per component is held at 0.

    Returns
    -------
    reduction : float — ``bᵀ q``
    c : int — connected components of the bipartite item–annotator graph
    """
    n_items, n_ann = z.shape
    bip = sp.bmat([[None, z], [z.T, None]], format="csr")
    c, label = connected_components(bip, directed=False)
    q = np.bincount(ann, weights=resid, minlength=n_ann)
    r = np.asarray(z.sum(axis=0)).ravel()
    cmat = (sp.diags(r) - z.T @ sp.diags(1.0 / n_i) @ z).tocsr()
    ann_label = label[n_items:]
    # ground the first annotator (lowest code) of each component
    grounded = np.zeros(n_ann, dtype=bool)
    grounded[np.unique(ann_label, return_index=True)[1]] = True
    free = np.flatnonzero(~grounded)
    if free.size == 0:
        return 0.0, int(c)
    sub = cmat[free][:, free]
    if free.size <= _DENSE_SOLVE_LIMIT:
        b = np.linalg.solve(sub.toarray(), q[free])
    else:
        from scipy.sparse.linalg import spsolve
        b = spsolve(sub.tocsc(), q[free])
    return float(b @ q[free]), int(c)


@tabular()
def icc(table: pd.DataFrame, *, confidence: float = 0.95, duplicates: Duplicates = "error") -> IccResult:
    """The six intraclass correlations with F tests and confidence intervals.

    On complete data this is ``pingouin.intraclass_corr(data, targets='item',
    raters='annotator', ratings='value')`` (ICC1 = ICC(1,1), ICC2 = ICC(A,1), ICC3 =
    ICC(C,1), and the k forms). With missing ratings the ANOVA (method of moments)
    estimators for unbalanced data are used — one-way ANOVA with ``n0`` for ICC1/ICC1k,
    Henderson's Method III for ICC2/ICC3 (see the module docstring for formulas and
    references) — which coincide with the complete-data formulas when nothing is
    missing. Average-measure forms use the design's effective ratings per item
    (``n0`` or ``k_a``, reported in ``effective_k``) as k.

    Parameters
    ----------
    table : DataFrame with columns item, annotator, value; shape (n_rows, ≥3)
        Values must be real numbers; None/NaN means "not rated" (same as an absent row).
    confidence : float in (0, 1)
        Level of the two-sided intervals (0.95 as pingouin).
    duplicates : {"error", "keep", "first", "last"}
        Several rows for one (item, annotator): refuse, keep each (then a rating cell may
        count twice), or keep the first/last.

    Returns
    -------
    IccResult — ``.table`` has one row per form; items with fewer than two ratings are
    dropped and counted in ``n_dropped_items``.

    Raises
    ------
    ValueError
        A non-numeric or infinite value (naming item and annotator), a duplicate, fewer
        than two items with two ratings, a confidence outside (0, 1).
    """
    if not 0.0 < confidence < 1.0:
        raise BadInput(f"confidence must be in (0, 1), got {confidence!r}")
    df = numeric_long_table(table, duplicates=duplicates, measure="ICC")
    item_all, _ = factorize(df["item"].to_numpy())
    sizes_all = np.bincount(item_all)
    keep = sizes_all[item_all] >= 2
    n_dropped = int(np.count_nonzero(sizes_all == 1))
    if np.unique(item_all[keep]).size < 2:
        raise BadInput(f"ICC needs at least two items rated by two or more annotators; the table has "
                         f"{int(np.count_nonzero(sizes_all >= 2))} such item(s)")
    y = df["value"].to_numpy()[keep]
    item, _ = factorize(item_all[keep])
    ann, _ = factorize(factorize(df["annotator"].to_numpy())[0][keep])
    n, k, big_n = int(item.max()) + 1, int(ann.max()) + 1, y.size

    n_i = np.bincount(item, minlength=n).astype(np.float64)
    r_j = np.bincount(ann, minlength=k).astype(np.float64)
    grand = y.mean()
    mean_i = np.bincount(item, weights=y, minlength=n) / n_i
    mean_j = np.bincount(ann, weights=y, minlength=k) / r_j
    resid = y - mean_i[item]
    ssw = float(resid @ resid)                               # within items (one-way error)
    ssb = float(n_i @ (mean_i - grand) ** 2)                 # between items, marginal
    ssj = float(r_j @ (mean_j - grand) ** 2)                 # between annotators, marginal

    # one-way random model
    df_b1, df_w = n - 1, big_n - n
    msb, msw = _div(ssb, df_b1), _div(ssw, df_w)
    n0 = (big_n - float(n_i @ n_i) / big_n) / df_b1
    # two-way additive model, Henderson III
    z = sp.csr_matrix((np.ones(big_n), (item, ann)), shape=(n, k))   # duplicates="keep" sums to 2+
    sq = z.multiply(z)
    r_ann, c = _annotator_reduction(z, ann, resid, n_i)
    df_a, df_j, df_e = n - c, k - c, big_n - n - k + c
    sse = max(ssw - r_ann, 0.0)                              # rounding can leave −1e-16
    r_item = ssb - ssj + r_ann                               # R(item | annotator) = R(μ,a,b) − R(μ,b)
    ms_a, ms_j, mse = _div(r_item, df_a), _div(r_ann, df_j), _div(sse, df_e)
    # coefficients of σ² in E[R(item|annotator)], E[R(annotator|item)]: tr(Z_aᵀ M_b Z_a) = N − Σ_j Σ_i n_ij²/r_j
    k_a = _div(big_n - float(np.asarray(sq.sum(axis=0)).ravel() @ (1.0 / r_j)), df_a)
    k_b = _div(big_n - float(np.asarray(sq.sum(axis=1)).ravel() @ (1.0 / n_i)), df_j)

    with np.errstate(divide="ignore", invalid="ignore"):
        icc1 = (msb - msw) / (msb + (n0 - 1.0) * msw)
        icc1k = (msb - msw) / msb
        icc3 = (ms_a - mse) / (ms_a + (k_a - 1.0) * mse)
        icc3k = (ms_a - mse) / ms_a
        # a design without annotator replication within items has no σ²_annotator (df_j = 0)
        rater_term = k_a * (ms_j - mse) / k_b if df_j > 0 else 0.0
        icc2 = (ms_a - mse) / (ms_a + (k_a - 1.0) * mse + rater_term)
        icc2k = (ms_a - mse) / (ms_a + rater_term / k_a)
        f1 = msb / msw
        f3 = ms_a / mse
        p1 = stats.f.sf(f1, df_b1, df_w) if df_w > 0 else math.nan
        p3 = stats.f.sf(f3, df_a, df_e) if df_e > 0 and df_a > 0 else math.nan
        f1l, f1u = _f_bounds(f1, df_b1, df_w, confidence) if df_w > 0 else (math.nan, math.nan)
        f3l, f3u = _f_bounds(f3, df_a, df_e, confidence) if df_e > 0 and df_a > 0 else (math.nan, math.nan)
        if df_e > 0 and df_j > 0 and df_a > 0:
            l2, u2 = _icc2_bounds(ms_a, ms_j, mse, icc2, k_a, k_b, df_a, df_j, df_e, confidence)
        else:
            l2, u2 = math.nan, math.nan
        rows = [
            (icc1, f1, df_b1, df_w, p1, _single(f1l, n0), _single(f1u, n0)),
            (icc2, f3, df_a, df_e, p3, l2, u2),
            (icc3, f3, df_a, df_e, p3, _single(f3l, k_a), _single(f3u, k_a)),
            (icc1k, f1, df_b1, df_w, p1, 1.0 - 1.0 / f1l, 1.0 - 1.0 / f1u),
            (icc2k, f3, df_a, df_e, p3, _spearman_brown(l2, k_a), _spearman_brown(u2, k_a)),
            (icc3k, f3, df_a, df_e, p3, 1.0 - 1.0 / f3l, 1.0 - 1.0 / f3u),
        ]
    out = pd.DataFrame([(t, d, *map(float, r)) for t, d, r in zip(FORMS, DESCRIPTIONS, rows)], columns=list(COLUMNS))
    out[["df1", "df2"]] = out[["df1", "df2"]].astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        comps = {"item_one_way": (msb - msw) / n0, "within": msw, "item": (ms_a - mse) / k_a,
                 "annotator": (ms_j - mse) / k_b, "residual": mse}
    return IccResult(table=out, n_items=n, n_annotators=k, n_missing=n * k - big_n, n_ratings=big_n,
                     n_dropped_items=n_dropped, confidence=confidence,
                     effective_k={"one_way": float(n0), "two_way": float(k_a), "annotator": float(k_b)},
                     variance_components={key: float(v) for key, v in comps.items()})

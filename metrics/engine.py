"""`agreement()`: α, KS and σ with any distance, per project, item and annotator.

References: Braylan, Alonso & Lease (2022) §4 (pairwise α, KS, σ); Krippendorff (2011)
(canonical α); Wong, Paritosh & Aroyo (2021) §5 (item bootstrap); measures.md §1–3, §9.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .bootstrap_measures import bootstrap_intervals
from .distances.base import Distance, check_distances, compute_distinct, value_keys
from .distances.registry import DistanceLike, get_distance
from .distributional import ExpectedDistribution, ks_score, ks_statistic, sigma_score, sigma_threshold
from .expected import Expected, expected_distances
from .groups import per_annotator_table, per_item_table
from .table import CodedTable, code_table, observed_pairs, show

__all__ = ["agreement", "AgreementResult", "FORMS", "alpha_core", "AlphaCore"]

FORMS = ("canonical", "pairwise")


@dataclass
class AgreementResult:
    """Agreement of one table under one distance.

    ``observed``/``expected`` are the distance arrays of measures.md §1 (shapes
    ``(n_pairs,)`` and ``(k,)``; ``expected_weights`` are pair counts when the expected
    distribution was tabulated exactly from value counts, else None). ``d_o``/``d_e`` are
    the mean distances α is formed from, in the chosen ``form``.
    """

    alpha: float
    ks: float
    ks_statistic: float
    sigma: float
    threshold: float
    n_items: int
    n_pairs: int
    n_expected_pairs: int
    observed: np.ndarray
    expected: np.ndarray
    expected_weights: np.ndarray | None
    per_item: pd.DataFrame
    per_annotator: pd.DataFrame
    ci: dict[str, tuple[float, float]]
    d_o: float
    d_e: float
    distance: str
    form: str
    p: float
    seed: int
    bootstrap: int
    ks_method: str
    expected_exact: bool
    n_values: int
    n_annotators: int
    n_unpairable: int
    diagnostics: list[str] = field(default_factory=list)
    _pair_codes: tuple[np.ndarray, np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    _labels: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    @property
    def pairs(self) -> pd.DataFrame:
        """Observed pairs: ``item, annotator_a, annotator_b, distance``, shape (n_pairs, 4)."""
        item, a, b = self._pair_codes
        items, anns = self._labels
        return pd.DataFrame({"item": items[item], "annotator_a": anns[a], "annotator_b": anns[b],
                             "distance": self.observed})

    def to_dict(self, *, items: bool = False, annotators: bool = True) -> dict[str, Any]:
        """JSON-serialisable summary (NaN/inf become None)."""
        out: dict[str, Any] = {
            "distance": self.distance, "form": self.form,
            "alpha": _num(self.alpha), "ks": _num(self.ks), "ks_statistic": _num(self.ks_statistic),
            "sigma": _num(self.sigma), "threshold": _num(self.threshold), "p": self.p,
            "d_o": _num(self.d_o), "d_e": _num(self.d_e),
            "n_items": self.n_items, "n_pairs": self.n_pairs, "n_expected_pairs": self.n_expected_pairs,
            "n_values": self.n_values, "n_annotators": self.n_annotators, "n_unpairable": self.n_unpairable,
            "expected_exact": self.expected_exact, "ks_method": self.ks_method,
            "ci": {k: [_num(v[0]), _num(v[1])] for k, v in self.ci.items()},
            "bootstrap": self.bootstrap, "seed": self.seed, "diagnostics": list(self.diagnostics),
        }
        if annotators:
            out["annotators"] = _records(self.per_annotator)
        if items:
            out["items"] = _records(self.per_item)
        return out


def _num(v: Any) -> float | None:
    v = float(v)
    return v if math.isfinite(v) else None


def _records(df: pd.DataFrame) -> dict[str, dict[str, Any]]:
    out = {}
    for key, row in zip(df.index, df.to_dict("records")):
        out[str(key)] = {k: (_num(v) if isinstance(v, (float, np.floating)) else
                             bool(v) if isinstance(v, (bool, np.bool_)) else
                             int(v) if isinstance(v, (int, np.integer)) else v) for k, v in row.items()}
    return out


def agreement(
    table: pd.DataFrame,
    distance: DistanceLike = "nominal",
    *,
    p: float = 0.05,
    form: str = "canonical",
    expected_pairs: int | str | None = None,
    seed: int = 0,
    bootstrap: int = 1000,
    duplicates: str = "error",
    flag_below: float = 0.5,
    ks_method: str = "exact",
    level: float = 0.95,
) -> AgreementResult:
    """Krippendorff's α, KS and σ of a long table under any distance.

    Parameters
    ----------
    table : DataFrame with columns ``item``, ``annotator``, ``value``
        One row per annotator per item; ``value`` is anything ``distance`` compares.
    distance : str, Distance or callable ``D(a, b) -> float``
        A registered name (``"nominal"``, ``"interval"``, ``"boxes.iou"``…), ``"auto"``
        (the candidate of the value kind with the highest KS; paper 000 §6.2), a
        :class:`~ls_agreement.metrics.distances.Distance`, or a plain callable.
    p : float
        Significance level of σ (measures.md §3).
    form : {"canonical", "pairwise"}
        How α is formed: Krippendorff's weighting (equal to the ``krippendorff`` package on
        its levels) or paper 000's plain means over within-item and between-item pairs.
        KS and σ always compare the within-item and between-item distance distributions.
    expected_pairs : int, "all" or None
        Between-item pairs for the chance baseline when it must be sampled: None = as many
        as observed pairs, at least 10,000; all pairs are used when there are no more than
        that. Scalar levels never sample for α (exact from value counts).
    seed : int
        Seeds expected-pair sampling and the bootstrap.
    bootstrap : int
        Item-bootstrap resamples for the intervals in ``ci`` (0 = none).
    duplicates : {"error", "keep", "first", "last"}
        Several rows for one (item, annotator): refuse, keep each row as its own coding
        (paper 000's code does; same-annotator pairs then count), or keep one.
    flag_below : float
        An item is flagged when its σ is below this.
    ks_method : {"exact", "scipy"}
        See :func:`~ls_agreement.metrics.distributional.ks_score`.
    level : float
        Confidence level of the bootstrap intervals.

    Returns
    -------
    AgreementResult

    Raises
    ------
    ValueError
        Bad input (see :func:`~ls_agreement.metrics.table.code_table`), an unknown
        distance, or a distance returning negative or non-finite values.
    """
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}")
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if isinstance(distance, str) and distance == "auto":
        from .choose import choose_distance

        choice = choose_distance(table, None, p=p, form=form, expected_pairs=expected_pairs, seed=seed,
                                 bootstrap=bootstrap, duplicates=duplicates, flag_below=flag_below,
                                 ks_method=ks_method, level=level)
        return choice.results[choice.winner]

    dist = get_distance(distance)
    ct = code_table(table, duplicates)
    rng = np.random.default_rng(seed)
    core = alpha_core(ct, dist, form, expected_pairs, rng)
    prepared, do, oi, oj, ex, d_o, d_e, alpha = (core.prepared, core.observed, core.i, core.j, core.expected,
                                                 core.d_o, core.d_e, core.alpha)
    chance = ExpectedDistribution(ex.distances, ex.weights)
    threshold = sigma_threshold(chance, p)
    pair_item = ct.item[oi]
    per_item = per_item_table(ct, pair_item, do, threshold, d_e, flag_below)
    per_ann = per_annotator_table(ct, pair_item, ct.annotator[oi], ct.annotator[oj], do, threshold, d_e)
    ks = ks_score(do, chance, method=ks_method)
    sigma = sigma_score(do, threshold)
    ci: dict[str, tuple[float, float]] = {}
    if bootstrap:
        ci = bootstrap_intervals(ct, dist, prepared, do, oi, oj, ex, form=form, p=p, n_boot=bootstrap,
                                 rng=rng, ks_method=ks_method, level=level,
                                 bandwidth=chance.bandwidth(), threshold=threshold,
                                 d_e=d_e, per_annotator=per_ann,
                                 estimates={"alpha": alpha, "ks": ks, "sigma": sigma})
    interval_notes = _guard_intervals(ci, {"alpha": alpha, "ks": ks, "sigma": sigma}, per_ann) if ci else []
    return AgreementResult(
        alpha=alpha,
        ks=ks,
        ks_statistic=ks_statistic(do, chance),
        sigma=sigma,
        threshold=threshold,
        n_items=ct.n_items, n_pairs=int(do.size), n_expected_pairs=ex.n_pairs,
        observed=do, expected=ex.distances, expected_weights=ex.weights,
        per_item=per_item, per_annotator=per_ann, ci=ci, d_o=d_o, d_e=d_e,
        distance=dist.name, form=form, p=p, seed=seed, bootstrap=int(bootstrap), ks_method=ks_method,
        expected_exact=ex.exact_distribution, n_values=ct.n_values,
        n_annotators=int(ct.annotator_labels.size), n_unpairable=ct.n_unpairable,
        diagnostics=_diagnostics(do, ex, ct) + interval_notes,
        _pair_codes=(pair_item, ct.annotator[oi], ct.annotator[oj]),
        _labels=(ct.item_labels, ct.annotator_labels),
    )


@dataclass
class AlphaCore:
    """What α needs and KS/σ reuse: observed pairs and distances, expected distances."""

    prepared: Any
    observed: np.ndarray
    i: np.ndarray
    j: np.ndarray
    expected: Expected
    d_o: float
    d_e: float
    alpha: float


def alpha_core(ct: CodedTable, dist: Distance, form: str, expected_pairs: int | str | None,
               rng: np.random.Generator) -> AlphaCore:
    """α of a coded table: observed distances, chance distances, and the form's means."""
    prepared = dist.prepare(ct.values)
    oi, oj = observed_pairs(ct)
    # many annotators per item: pairs far outnumber values, and repeat few value combinations
    keys = value_keys(ct.values) if oi.size >= 8 * ct.n_values else None
    try:
        do = check_distances(compute_distinct(dist, prepared, keys, oi, oj), dist.name)
    except ValueError as exc:
        raise _name_pair(exc, ct, oi, oj) from None
    ex = expected_distances(ct, dist, prepared, do, oi, oj, expected_pairs=expected_pairs, rng=rng,
                            keys=keys)
    d_o, d_e = _form_means(ct, do, oi, ex, form)
    alpha = 1.0 - d_o / d_e if d_e > 0 else math.nan
    return AlphaCore(prepared, do, oi, oj, ex, d_o, d_e, alpha)


def _form_means(ct: CodedTable, do: np.ndarray, oi: np.ndarray, ex: Expected, form: str) -> tuple[float, float]:
    """``(D̂o, D̂e)`` of the chosen form (measures.md §2)."""
    if form == "pairwise":
        return float(do.mean()), ex.between_mean
    n = ct.n_values
    m = ct.item_size[ct.item[oi]].astype(np.float64)
    d_o = 2.0 * float(np.sum(do / (m - 1.0))) / n
    d_e = 2.0 * ex.total_sum / (n * (n - 1.0))
    return d_o, d_e


def _name_pair(exc: ValueError, ct: CodedTable, oi: np.ndarray, oj: np.ndarray) -> ValueError:
    """Add the item and annotators of the offending pair to a distance error."""
    import re

    m = re.search(r"pair #(\d+)", str(exc))
    if not m:
        return exc
    k = int(m.group(1))
    return ValueError(f"{exc} (item {show(ct.item_labels[ct.item[oi[k]]])}, annotators "
                      f"{show(ct.annotator_labels[ct.annotator[oi[k]]])} and "
                      f"{show(ct.annotator_labels[ct.annotator[oj[k]]])})")


_TOL = 1e-9


_NO_INTERVAL = {  # why an interval is not shown: (project sentence, per-annotator sentence)
    "undefined": ("no bootstrap replicate defined it", "no bootstrap replicate defined them"),
    "flat": ("every bootstrap replicate gave {lo:.4g}, so the resampling shows no uncertainty (too few items, "
             "or no variation)", "every bootstrap replicate gave one value (no uncertainty shown)"),
    "misses": ("the bootstrap interval [{lo:.4g}, {hi:.4g}] does not contain the estimate {x:.4g} (too few "
               "items, or a very skewed resampling distribution)", "they did not contain their estimate"),
}


def _interval_problem(lo: float, hi: float, x: float) -> str | None:
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "undefined"
    if hi == lo:
        return "flat"
    if not (lo < hi and lo - _TOL <= x <= hi + _TOL):
        return "misses"
    return None


def _guard_intervals(ci: dict[str, tuple[float, float]], point: dict[str, float],
                     per_annotator: pd.DataFrame) -> list[str]:
    """Null (NaN) every interval that is not finite, has no width, or does not contain its
    own estimate, and say why; an endpoint within rounding (1e-9) of the estimate is moved
    onto it, so a shown interval always contains its estimate.

    Such intervals arise with very few items or a resampling distribution concentrated on
    one value; they would mislead, so they are not shown.
    """
    notes = []
    for name, (lo, hi) in list(ci.items()):
        x = point.get(name, math.nan)
        problem = _interval_problem(lo, hi, x) if math.isfinite(x) else "undefined"
        if problem:
            ci[name] = (math.nan, math.nan)
            if math.isfinite(x):
                notes.append(f"no interval for {name}: " + _NO_INTERVAL[problem][0].format(lo=lo, hi=hi, x=x))
        else:
            ci[name] = (min(lo, x), max(hi, x))
    for name in ("sigma", "alpha"):
        lo_c, hi_c = f"{name}_ci_low", f"{name}_ci_high"
        if lo_c not in per_annotator.columns or name not in per_annotator.columns:
            continue
        x = per_annotator[name].to_numpy(dtype=float)
        lo, hi = per_annotator[lo_c].to_numpy(dtype=float), per_annotator[hi_c].to_numpy(dtype=float)
        problems = [_interval_problem(a, b, c) if math.isfinite(c) else "undefined" for a, b, c in zip(lo, hi, x)]
        bad = np.array([q is not None for q in problems], dtype=bool)
        per_annotator[lo_c] = np.where(bad, np.nan, np.fmin(lo, x))
        per_annotator[hi_c] = np.where(bad, np.nan, np.fmax(hi, x))
        for problem in _NO_INTERVAL:
            k = sum(q == problem and math.isfinite(c) for q, c in zip(problems, x))
            if k:
                notes.append(f"{k} per-annotator {name} interval(s) not shown: {_NO_INTERVAL[problem][1]}")
    return notes


def _diagnostics(do: np.ndarray, ex: Expected, ct: CodedTable) -> list[str]:
    """The pathologies of paper 000 §6.1 that make KS/σ hard to read."""
    notes = []
    e, w = ex.distances, ex.weights if ex.weights is not None else np.ones_like(ex.distances)
    if not (ex.total_sum > 0 or ex.between_mean > 0 or (e.size and e.max() > 0)):
        # every distance is 0 (one answer throughout, or an optional control nobody used):
        # no pathology of the distributions, agreement is simply undefined
        notes.append("no variation: every distance between values is 0, so chance agreement is perfect "
                     "and α, KS and σ are undefined (not low)")
    elif e.size and w[e <= e.min()].sum() / w.sum() > 0.5:
        notes.append("expected distances piled at the low end: few possible values, so chance agreement "
                     "is high and σ can only be small")
    if do.size and e.size and e.max() > 0 and do.max() > 0 and np.mean(do >= e.max()) > 0.5:
        notes.append("observed distances piled at the high end: a strict (exact-match) distance; "
                     "a lenient distance may separate agreement from chance better")
    if ct.n_unpairable:
        notes.append(f"{ct.n_unpairable} item(s) with a single value were skipped (not pairable)")
    if not ex.exact_distribution:
        notes.append(f"expected distances from a seeded sample of {ex.n_pairs} between-item pairs")
    return notes

"""`agreement()`: α, KS and σ with any distance, per project, item and annotator.

References: Braylan, Alonso & Lease (2022) §4 (pairwise α, KS, σ); Krippendorff (2011)
(canonical α); Wong, Paritosh & Aroyo (2021) §5 (item bootstrap); docs/formulas.md §1–3, §9.
"""
from __future__ import annotations

import copy
import math
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import numpy as np
import pandas as pd

from .bootstrap_measures import bootstrap_intervals
from .cells import ObservedCells
from .core import AlphaCore, alpha_core
from .distances.base import Distance
from .diagnostics import Diagnostic, expected_modes
from .distances.registry import DistanceLike, get_distance
from .distributional import ExpectedDistribution, ks_score, ks_statistic, sigma_score, sigma_threshold
from .chance_distances import Expected
from .groups import per_annotator_sides_table, per_annotator_table, per_item_table
from .result import Result, strict_json
from .table import CodedTable, code_table, tabular
from .errors import BadInput

__all__ = ["agreement", "score", "Scored", "AgreementResult", "FORMS", "KS_METHODS", "alpha_core", "AlphaCore"]

#: Bins of the observed/expected histograms (the report's plot and the multi-modality test).
HISTOGRAM_BINS = 30
Form = Literal["canonical", "pairwise"]
KsMethod = Literal["exact", "scipy"]
Duplicates = Literal["error", "keep", "first", "last"]
FORMS: tuple[str, ...] = get_args(Form)
KS_METHODS: tuple[str, ...] = get_args(KsMethod)


@dataclass(frozen=True)
class AgreementResult(Result):
    """Agreement of one table under one distance.

    Attributes
    ----------
    alpha : float
        Krippendorff's α, the point estimate (also ``estimate``).
    ks, ks_statistic, sigma : float
        KS score, the plain KS statistic and σ (docs/formulas.md §2–3).
    threshold : float
        d*, the distance below which a pair counts as agreeing at level ``p``.
    n_items, n_pairs, n_expected_pairs : int
        Items with pairs, observed pairs, chance pairs behind ``expected``.
    observed : ndarray, shape (n_pairs,)
        Property: observed (within-item) distances, one per pair (docs/formulas.md §1),
        listed on first use (a crowd project has millions); :meth:`observed_distribution`
        gives them pooled with counts.
    expected : ndarray, shape (k,)
        Chance (between-item) distances.
    expected_weights : ndarray, shape (k,), or None
        Pair counts when the expected distribution was tabulated exactly from value
        counts, else None.
    per_item, per_annotator : DataFrame
        σ, α, mean distance, pairs per item / per annotator; per-annotator intervals in
        ``<name>_ci_low`` / ``<name>_ci_high`` columns.
    ci : dict[str, tuple[float, float]]
        Item-bootstrap ``(low, high)`` of ``alpha``, ``ks`` and ``sigma``; empty without bootstrap.
    d_o, d_e : float
        The mean distances α is formed from, in the chosen ``form``.
    distance, form, ks_method : str
    p : float
    seed, bootstrap : int
    expected_exact : bool
    n_values, n_annotators, n_unpairable : int
    diagnostics : list of Diagnostic
    pairs : DataFrame, shape (n_pairs, 4)
        Property: ``item, annotator_a, annotator_b, distance``.
    """

    ESTIMATE = "alpha"

    alpha: float
    ks: float
    ks_statistic: float
    sigma: float
    threshold: float
    n_items: int
    n_pairs: int
    n_expected_pairs: int
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
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # the observed pairs (ObservedCells): listed pair by pair only when ``pairs`` is read
    _pair_codes: Any = field(default=None, repr=False)
    _labels: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    @property
    def observed(self) -> np.ndarray:
        """Observed distances, one per pair of :attr:`pairs`, shape (n_pairs,)."""
        return self._pair_codes.pair_distances()

    def observed_distribution(self) -> tuple[np.ndarray, np.ndarray | None]:
        """``(distances, weights)`` of the observed pairs, as ``expected``/``expected_weights``:
        distinct (item, value pair) cells with their pair counts when pooled (shape (k,) each),
        else one distance per pair and None. Sums and histograms over it equal those over
        :attr:`observed` without listing the pairs."""
        return self._pair_codes.distribution()

    @property
    def pairs(self) -> pd.DataFrame:
        """Observed pairs: ``item, annotator_a, annotator_b, distance``, shape (n_pairs, 4)."""
        i, j = self._pair_codes.pairs()
        ct = self._pair_codes.ct
        items, anns = self._labels
        return pd.DataFrame({"item": items[ct.item[i]], "annotator_a": anns[ct.annotator[i]],
                             "annotator_b": anns[ct.annotator[j]], "distance": self.observed})

    def to_dict(self, *, items: bool = False, annotators: bool = True) -> dict[str, Any]:
        """Strict-JSON summary (NaN/inf become None; intervals as ``[low, high]`` lists),
        with the per-annotator rows and, when ``items``, the per-item rows (keyed by id)."""
        out = strict_json({k: getattr(self, k) for k in _SUMMARY})
        if annotators:
            out["annotators"] = strict_json(self.per_annotator.to_dict("index"))
        if items:
            out["items"] = strict_json(self.per_item.to_dict("index"))
        return out


#: What :meth:`AgreementResult.to_dict` gives besides the tables (not the distributions).
_SUMMARY = ("distance", "form", "alpha", "ks", "ks_statistic", "sigma", "threshold", "p", "d_o", "d_e",
            "n_items", "n_pairs", "n_expected_pairs", "n_values", "n_annotators", "n_unpairable",
            "expected_exact", "ks_method", "ci", "bootstrap", "seed", "diagnostics")


@dataclass
class Scored:
    """One table under one distance, scored without intervals: what ranking a candidate
    distance needs (α, KS, σ), kept so that the full :func:`agreement` of the winner
    continues from it instead of computing it again.

    ``rng`` is the generator after the expected pairs were drawn: the bootstrap that
    follows draws the same resamples as a call of :func:`agreement` with the same seed.
    """

    ct: CodedTable
    dist: Distance
    core: "AlphaCore"
    chance: ExpectedDistribution
    threshold: float
    ks: float
    ks_statistic: float
    sigma: float
    p: float
    form: Form
    seed: int
    ks_method: KsMethod
    rng: np.random.Generator = field(repr=False)

    @property
    def alpha(self) -> float:
        return self.core.alpha

    @property
    def d_e(self) -> float:
        return self.core.d_e

    def numbers_only(self) -> "Scored":
        """This score without its pairs, chance sample and prepared values (α, KS, σ, D_o and
        D_e stay): what a losing candidate keeps, so that ranking many candidates on a large
        table holds one candidate's arrays at a time (issue 24), not every one's."""
        slim = AlphaCore(prepared=None, cells=None, expected=None, d_o=self.core.d_o, d_e=self.core.d_e,
                         alpha=self.core.alpha)
        return dataclasses.replace(self, core=slim)

    @property
    def distance(self) -> str:
        return self.dist.name


def _check_options(p: float, form: str, ks_method: str, confidence: float | None = None) -> None:
    if form not in FORMS:
        raise BadInput(f"form must be one of {FORMS}, got {form!r}")
    if ks_method not in KS_METHODS:
        raise BadInput(f"ks_method must be one of {KS_METHODS}, got {ks_method!r}")
    if not 0.0 < p < 1.0:
        raise BadInput(f"p must be in (0, 1), got {p}")
    if confidence is not None and not 0.0 < confidence < 1.0:
        raise BadInput(f"confidence must be in (0, 1), got {confidence}")


def score(table: pd.DataFrame | CodedTable, distance: DistanceLike, *, p: float = 0.05, form: Form = "canonical",
          expected_pairs: int | Literal["all"] | None = None, seed: int = 0,
          duplicates: Duplicates = "error", ks_method: KsMethod = "exact") -> Scored:
    """α, KS and σ of a table under a resolved distance, without intervals (see :func:`agreement`).

    ``table`` may already be coded (:func:`~.table.code_table`), so that candidates of one
    table share the coding.
    """
    _check_options(p, form, ks_method)
    if isinstance(distance, str) and distance == "auto":
        raise BadInput("distance 'auto' is resolved by choose_distance(table), which ranks the "
                         "candidates; pass a distance name here")
    dist = get_distance(distance)
    ct = table if isinstance(table, CodedTable) else code_table(table, duplicates)
    rng = np.random.default_rng(seed)
    core = alpha_core(ct, dist, form, expected_pairs, rng)
    chance = ExpectedDistribution(*core.expected.distribution())
    threshold = sigma_threshold(chance, p)
    # KS and σ depend on the multiset of observed distances only: pooled cells weigh their pairs
    cells = core.cells
    ow = cells.weight if cells.pooled else None
    return Scored(ct=ct, dist=dist, core=core, chance=chance, threshold=threshold,
                  ks=ks_score(cells.d, chance, method=ks_method, observed_weights=ow),
                  ks_statistic=ks_statistic(cells.d, chance, observed_weights=ow),
                  sigma=sigma_score(cells.d, threshold, observed_weights=ow),
                  p=p, form=form, seed=seed, ks_method=ks_method, rng=rng)


@tabular()
def agreement(
    table: pd.DataFrame,
    distance: DistanceLike | Scored = "nominal",
    *,
    p: float = 0.05,
    form: Form = "canonical",
    expected_pairs: int | Literal["all"] | None = None,
    seed: int = 0,
    bootstrap: int = 1000,
    duplicates: Duplicates = "error",
    flag_below: float = 0.0,
    ks_method: KsMethod = "exact",
    confidence: float = 0.95,
) -> AgreementResult:
    """Krippendorff's α, KS and σ of a long table under one distance, with intervals.

    Parameters
    ----------
    table : DataFrame with columns ``item``, ``annotator``, ``value``
        One row per annotator per item; ``value`` is anything ``distance`` compares.
    distance : str, Distance, callable ``D(a, b) -> float``, or Scored
        A registered name (``"nominal"``, ``"interval"``, ``"boxes.iou"``…), a
        :class:`~ls_agreement.metrics.distances.Distance`, a plain callable, or the
        :class:`Scored` candidate :func:`~.choose.choose_distance` ranked first (its
        coding, pairs and chance distances are reused; ``table``, ``p``, ``form``,
        ``expected_pairs``, ``seed``, ``duplicates`` and ``ks_method`` then come from it).
        To pick the distance by KS (paper 000 §6.2), use ``choose_distance``.
    p : float
        Significance level of σ (docs/formulas.md §3).
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
        ``per_item.flag``: σ below this (0, the default: no item is flagged). The same
        legacy cut as the report's ``flag_below``; the report's own flags are the answer
        model of docs/formulas.md "Flags" (:mod:`.annotator_model`), which needs a whole project.
    ks_method : {"exact", "scipy"}
        See :func:`~ls_agreement.metrics.distributional.ks_score`.
    confidence : float
        Confidence level of the bootstrap intervals.

    Returns
    -------
    AgreementResult

    Raises
    ------
    ValueError
        Bad input (see :func:`~ls_agreement.metrics.table.code_table`), an unknown
        distance, ``"auto"`` (see ``choose_distance``), or a distance returning negative or
        non-finite values.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3], "annotator": list("ababab"),
    ...                   "value": ["x", "x", "y", "y", "x", "y"]})
    >>> round(agreement(t, "nominal", bootstrap=0).alpha, 3)
    0.444
    """
    if bootstrap < 0:
        raise BadInput(f"bootstrap must be >= 0, got {bootstrap}")
    if isinstance(distance, Scored):
        sc = distance
        _check_options(sc.p, sc.form, sc.ks_method, confidence)
    else:
        _check_options(p, form, ks_method, confidence)
        sc = score(table, distance, p=p, form=form, expected_pairs=expected_pairs, seed=seed,
                   duplicates=duplicates, ks_method=ks_method)
    ct, dist, core, rng = sc.ct, sc.dist, sc.core, sc.rng
    if isinstance(distance, Scored):  # a copy: the Scored stays reusable, with the same draws
        rng = copy.deepcopy(sc.rng)
    cells, ex, d_e, alpha = core.cells, core.expected, core.d_e, core.alpha
    threshold, ks, sigma = sc.threshold, sc.ks, sc.sigma
    if cells.pooled:
        # many annotators per item: sums over (item, value pair) cells and linear per-annotator
        # sides, never over the pairs themselves
        per_item = per_item_table(ct, cells.item, cells.d, threshold, d_e, flag_below, weights=cells.weight)
        side_ann, _, side_d, side_w = cells.sides()
        per_ann = per_annotator_sides_table(ct, side_ann, side_d, side_w, threshold, d_e)
    else:
        oi, oj = cells.pairs()
        per_item = per_item_table(ct, cells.item, cells.d, threshold, d_e, flag_below)
        per_ann = per_annotator_table(ct, cells.item, ct.annotator[oi], ct.annotator[oj], cells.d, threshold, d_e)
    ci: dict[str, tuple[float, float]] = {}
    if bootstrap:
        ci = bootstrap_intervals(ct, dist, core.prepared, None, None, None, ex, form=sc.form, p=sc.p,
                                 bootstrap=bootstrap, rng=rng, ks_method=sc.ks_method, confidence=confidence,
                                 bandwidth=sc.chance.bandwidth(), threshold=threshold,
                                 d_e=d_e, per_annotator=per_ann,
                                 estimates={"alpha": alpha, "ks": ks, "sigma": sigma}, cells=cells)
    interval_notes = _guard_intervals(ci, {"alpha": alpha, "ks": ks, "sigma": sigma}, per_ann) if ci else []
    return AgreementResult(
        alpha=alpha,
        ks=ks,
        ks_statistic=sc.ks_statistic,
        sigma=sigma,
        threshold=threshold,
        n_items=ct.n_items, n_pairs=int(cells.n_pairs), n_expected_pairs=ex.n_pairs,
        expected=ex.distances, expected_weights=ex.weights,
        per_item=per_item, per_annotator=per_ann, ci=ci, d_o=core.d_o, d_e=d_e,
        distance=dist.name, form=sc.form, p=sc.p, seed=sc.seed, bootstrap=int(bootstrap), ks_method=sc.ks_method,
        expected_exact=ex.exact_distribution, n_values=ct.n_values,
        n_annotators=int(ct.annotator_labels.size), n_unpairable=ct.n_unpairable,
        diagnostics=_diagnostics(cells, ex, ct) + interval_notes,
        _pair_codes=cells,
        _labels=(ct.item_labels, ct.annotator_labels),
    )


_TOL = 1e-9


def _interval_problem(lo: float, hi: float, x: float) -> str | None:
    """The diagnostic code of an interval that cannot be shown, or None."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "interval_undefined"
    if hi == lo:
        return "interval_flat"
    if not (lo < hi and lo - _TOL <= x <= hi + _TOL):
        return "interval_misses"
    return None


def _guard_intervals(ci: dict[str, tuple[float, float]], point: dict[str, float],
                     per_annotator: pd.DataFrame) -> list[Diagnostic]:
    """Null (NaN) every interval that is not finite, has no width, or does not contain its
    own estimate, and say why; an endpoint within rounding (1e-9) of the estimate is moved
    onto it, so a shown interval always contains its estimate.

    Such intervals arise with very few items or a resampling distribution concentrated on
    one value; they would mislead, so they are not shown.
    """
    notes = []
    for name, (lo, hi) in list(ci.items()):
        x = point.get(name, math.nan)
        problem = _interval_problem(lo, hi, x) if math.isfinite(x) else "interval_undefined"
        if problem:
            ci[name] = (math.nan, math.nan)
            if math.isfinite(x):
                notes.append(Diagnostic(problem, measure=name, **_interval_detail(problem, lo, hi, x)))
        else:
            ci[name] = (min(lo, x), max(hi, x))
    for name in ("sigma", "alpha"):
        lo_c, hi_c = f"{name}_ci_low", f"{name}_ci_high"
        if lo_c not in per_annotator.columns or name not in per_annotator.columns:
            continue
        x = per_annotator[name].to_numpy(dtype=float)
        lo, hi = per_annotator[lo_c].to_numpy(dtype=float), per_annotator[hi_c].to_numpy(dtype=float)
        problems = [_interval_problem(a, b, c) if math.isfinite(c) else "interval_undefined"
                    for a, b, c in zip(lo, hi, x)]
        bad = np.array([q is not None for q in problems], dtype=bool)
        per_annotator[lo_c] = np.where(bad, np.nan, np.fmin(lo, x))
        per_annotator[hi_c] = np.where(bad, np.nan, np.fmax(hi, x))
        for problem in ("interval_undefined", "interval_flat", "interval_misses"):
            k = sum(q == problem and math.isfinite(c) for q, c in zip(problems, x))
            if k:
                notes.append(Diagnostic("annotator_intervals_hidden", measure=name, count=k, problem=problem))
    return notes


def _interval_detail(problem: str, lo: float, hi: float, x: float) -> dict[str, float]:
    if problem == "interval_flat":
        return {"value": lo}
    if problem == "interval_misses":
        return {"low": lo, "high": hi, "estimate": x}
    return {}


def _diagnostics(cells: ObservedCells, ex: Expected, ct: CodedTable) -> list[Diagnostic]:
    """The pathologies of paper 000 §6.1 that make KS/σ hard to read, and facts about the data."""
    notes = []
    do, dw = cells.d, cells.weight
    e, w = ex.distribution()
    w = w if w is not None else np.ones_like(e)
    if not (ex.total_sum > 0 or ex.between_mean > 0 or (e.size and e.max() > 0)):
        # every distance is 0 (one answer throughout, or an optional control nobody used):
        # no pathology of the distributions, agreement is simply undefined
        notes.append(Diagnostic("no_variation"))
    elif e.size and w[e <= e.min()].sum() / w.sum() > 0.5:
        notes.append(Diagnostic("expected_low_end"))
    if do.size and e.size and e.max() > 0 and do.max() > 0 and dw[do >= e.max()].sum() / dw.sum() > 0.5:
        notes.append(Diagnostic("observed_high_end"))
    if e.size and e.max() > 0:
        counts, _ = np.histogram(e, bins=np.linspace(0.0, max(float(e.max()), float(do.max()) if do.size else 0.0),
                                                     HISTOGRAM_BINS + 1), weights=w)
        modes = expected_modes(counts)
        if modes > 1:
            notes.append(Diagnostic("expected_multimodal", modes=modes))
    if ct.n_unpairable:
        notes.append(Diagnostic("unpairable_items", count=ct.n_unpairable))
    if not ex.exact_distribution:
        notes.append(Diagnostic("sampled_expected", pairs=ex.n_pairs))
    if ct.options is not None:
        notes.append(Diagnostic("chance_from_options", strata=ct.options.n_strata,
                                unpaired=ex.strata.unpaired if ex.strata is not None else 0))
    return notes

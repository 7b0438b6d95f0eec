"""The annotator × annotator matrix: each pair's chance-corrected agreement on the items it shares.

For annotators ``a`` and ``b`` sharing ``N_ab`` items, the two-annotator sub-table has one
pair per shared item, so its observed disagreement in either form is the pair's mean
distance ``D̄_ab = Σ_i D(v_ai, v_bi) / N_ab`` (docs/formulas.md §1–2 with ``m_i = 2``), and

    α_ab = 1 − D̄_ab / D̂e.

``expected="project"`` (the default, what the report shows) reads every pair against the
control's D̂e — the chance distance of the whole table — so the matrix ranks pairs on one
scale: a pair that only saw easy, one-sided items is not rewarded or punished by its own
chance baseline. ``expected="pair"`` uses each sub-table's own D̂e: exactly the α a
reliability package gives on the two annotators alone (docs/formulas.md, "Annotator pairs").

Intervals: the pair's shared items are resampled (a per-pair item bootstrap) with D̂e held
at the project's estimate, which comes from all the control's values and varies far less
than a mean over a pair's few shared items; percentile intervals at Hesterberg's expanded
level (:func:`~.bootstrap.expanded_level`) for the pair's ``N_ab`` items.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, get_args

import numpy as np
import pandas as pd

from .pair_bootstrap import pair_intervals
from .cells import observed_cells
from .core import alpha_core
from .distances.base import check_distances
from .distances.registry import DistanceLike, get_distance
from .distances.scalars import ScalarDistance
from .engine import AgreementResult, Form
from .result import Result, strict_json
from .table import Duplicates, code_table, factorize, tabular
from .errors import BadInput

__all__ = ["pairwise_agreement", "PairwiseAgreementResult", "combine_pairwise", "PAIR_COLUMNS",
           "MAX_ANNOTATORS", "MIN_ITEMS", "Expected"]

Expected = Literal["project", "pair"]
EXPECTED: tuple[str, ...] = get_args(Expected)
#: Columns of :attr:`PairwiseAgreementResult.table`, one row per annotator pair.
PAIR_COLUMNS = ["annotator_a", "annotator_b", "n_items", "mean_distance", "alpha", "ci_low", "ci_high", "d_e"]
#: Past this many annotators only the most active ones are paired: the matrix grows as annotators².
MAX_ANNOTATORS = 100
#: Pairs sharing fewer items are left out: α of one or two items says nothing.
MIN_ITEMS = 3
# expected="pair" with a non-scalar distance tabulates distances between distinct values (V²)
MAX_PAIR_DOMAIN = 2000
#: Default bound on the pair bootstrap's random draws (a crowd project's 100 annotators make 4,950 pairs).
MAX_DRAWS = 20_000_000


@dataclass(frozen=True)
class PairwiseAgreementResult(Result):
    """Agreement of every annotator pair on the items both annotated.

    Attributes
    ----------
    table : DataFrame, shape (n_pairs, 8)
        One row per pair sharing at least ``min_items`` items, ``annotator_a < annotator_b``
        (as strings): ``annotator_a, annotator_b, n_items, mean_distance, alpha, ci_low,
        ci_high, d_e`` (the D̂e the pair's α is read against).
    annotators : list of str
        The annotators paired (at most ``max_annotators``), sorted.
    d_e : float
        The control's D̂e (``expected="project"``), else NaN.
    expected : {"project", "pair"}
    distance, form : str
    min_items : int
    max_annotators : int or None
    n_annotators : int
        Annotators in the table before the cap.
    left_out : list of str
        Annotators left out by the cap (the least active).
    n_below_min : int
        Pairs that share fewer than ``min_items`` items (not in ``table``).
    bootstrap, seed : int
    confidence : float
    """

    table: pd.DataFrame
    annotators: list[str]
    d_e: float
    expected: str
    distance: str
    form: str
    min_items: int
    max_annotators: int | None
    n_annotators: int
    left_out: list[str] = field(default_factory=list)
    n_below_min: int = 0
    bootstrap: int = 0
    seed: int = 0
    confidence: float = 0.95

    def matrix(self, column: str = "alpha") -> pd.DataFrame:
        """``column`` as a symmetric annotators × annotators frame, NaN where no pair (and on
        the diagonal); shape (n, n)."""
        n = len(self.annotators)
        out = np.full((n, n), np.nan)
        pos = {a: k for k, a in enumerate(self.annotators)}
        a = self.table["annotator_a"].map(pos).to_numpy(dtype=np.int64)
        b = self.table["annotator_b"].map(pos).to_numpy(dtype=np.int64)
        v = self.table[column].to_numpy(dtype=np.float64)
        out[a, b] = v
        out[b, a] = v
        return pd.DataFrame(out, index=self.annotators, columns=self.annotators)

    def to_dict(self) -> dict[str, Any]:
        d = {f: getattr(self, f) for f in ("annotators", "d_e", "expected", "distance", "form", "min_items",
                                            "max_annotators", "n_annotators", "left_out", "n_below_min",
                                            "bootstrap", "seed", "confidence")}
        d["pairs"] = self.table.to_dict("records")
        return strict_json(d)


def _check(expected: str, form: str, min_items: int, max_annotators: int | None, bootstrap: int,
           confidence: float) -> None:
    if expected not in EXPECTED:
        raise BadInput(f"expected must be one of {EXPECTED}, got {expected!r}")
    if form not in ("canonical", "pairwise"):
        raise BadInput(f"form must be 'canonical' or 'pairwise', got {form!r}")
    if min_items < 1:
        raise BadInput(f"min_items must be >= 1, got {min_items}")
    if max_annotators is not None and max_annotators < 2:
        raise BadInput(f"max_annotators must be >= 2 or None, got {max_annotators}")
    if bootstrap < 0:
        raise BadInput(f"bootstrap must be >= 0, got {bootstrap}")
    if not 0.0 < confidence < 1.0:
        raise BadInput(f"confidence must be in (0, 1), got {confidence}")


def _most_active(table: pd.DataFrame, max_annotators: int | None) -> tuple[pd.DataFrame, list[str], int]:
    """The table restricted to the ``max_annotators`` annotators with most items (ties: by id),
    the ids left out, and the number of annotators before the cap."""
    counts = table["annotator"].astype(str).value_counts()
    n = int(counts.size)
    if max_annotators is None or n <= max_annotators:
        return table, [], n
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    keep = {a for a, _ in ranked[:max_annotators]}
    left = sorted(a for a, _ in ranked[max_annotators:])
    return table[table["annotator"].astype(str).isin(keep).to_numpy()], left, n


@tabular()
def pairwise_agreement(
    table: pd.DataFrame | None,
    distance: DistanceLike | AgreementResult = "nominal",
    *,
    expected: Expected = "project",
    form: Form = "canonical",
    min_items: int = MIN_ITEMS,
    max_annotators: int | None = MAX_ANNOTATORS,
    bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    max_draws: int | None = MAX_DRAWS,
    expected_pairs: int | Literal["all"] | None = None,
    duplicates: Duplicates = "error",
) -> PairwiseAgreementResult:
    """Krippendorff's α of every annotator pair on the items both annotated, with intervals.

    Parameters
    ----------
    table : DataFrame with columns item, annotator, value; shape (n_rows, ≥3)
        May be None when ``distance`` is an :class:`~.engine.AgreementResult` of no more
        than ``max_annotators`` annotators.
    distance : str, Distance, callable, or AgreementResult
        The distance; or the control's :func:`~.engine.agreement` result, whose observed
        pairs, distance, form and D̂e are reused (nothing is computed again).
    expected : {"project", "pair"}
        The D̂e each pair is read against: the whole table's (comparable across pairs) or
        the pair's own sub-table's (equal to α of the two annotators alone; no intervals).
        With "pair", ordinal distances use the whole table's mid-ranks.
    form : {"canonical", "pairwise"}
        How D̂e is formed (docs/formulas.md §2); a pair's D̂o is its mean distance in both.
    min_items : int
        Pairs sharing fewer items are left out of the table (counted in ``n_below_min``).
    max_annotators : int or None
        Only the most active annotators (by values) are paired past this many; the others
        are listed in ``left_out``. None: no cap.
    bootstrap : int
        Resamples of each pair's shared items (0: no intervals).
    seed : int
        Seeds the bootstrap and a sampled D̂e.
    confidence : float
        Confidence level of the intervals.
    max_draws : int or None
        Bound on the bootstrap's work (replicates × uniform draws per replicate: one per
        shared item, or about 8 per binomial of the per-distinct-distance draw): past it
        fewer replicates are drawn, never fewer than 200 (``bootstrap`` in the result says
        how many). 0/1 distances need no draw (exact binomial quantiles). None: no bound.
    expected_pairs : int, "all" or None
        Between-item pairs for a sampled project D̂e (see :func:`~.engine.agreement`).
    duplicates : {"error", "keep", "first", "last"}
        Several rows for one (item, annotator); pairs of an annotator with itself are dropped.

    Returns
    -------
    PairwiseAgreementResult

    Raises
    ------
    ValueError
        Bad input or options; ``expected="pair"`` with more than 2,000 distinct values
        under a non-scalar distance.

    Examples
    --------
    >>> t = pd.DataFrame({"item": [1, 1, 1, 2, 2, 2, 3, 3, 3], "annotator": list("abcabcabc"),
    ...                   "value": list("xxyyyyxyx")})
    >>> r = pairwise_agreement(t, "nominal", min_items=1, bootstrap=0)
    >>> r.table[["annotator_a", "annotator_b", "n_items", "mean_distance"]].values.tolist()
    [['a', 'b', 3, 0.3333333333333333], ['a', 'c', 3, 0.3333333333333333], ['b', 'c', 3, 0.6666666666666666]]
    """
    _check(expected, form, min_items, max_annotators, bootstrap, confidence)
    rng = np.random.default_rng(seed)
    left: list[str] = []
    if isinstance(distance, AgreementResult):
        res = distance
        form = res.form
        if res.n_annotators <= (max_annotators or res.n_annotators) and expected == "project":
            # the engine's observed pairs, as codes (listing ``res.pairs`` would build a frame of labels)
            cells = res._pair_codes
            i, j = cells.pairs()
            ct = cells.ct
            return _result(ct.annotator[i], ct.annotator[j], res._labels[1], ct.item[i], cells.pair_distances(),
                           None, float(res.d_e), expected, res.distance, form, min_items, max_annotators,
                           res.n_annotators, [], bootstrap, seed, confidence, max_draws, rng)
        if table is None:
            raise BadInput("pairwise_agreement needs the table to cap the annotators or to use expected='pair'")
        d_e_project = float(res.d_e)
        dist = get_distance(res.distance)
    else:
        if table is None:
            raise BadInput("pairwise_agreement needs a table")
        dist = get_distance(distance)
        d_e_project = math.nan
    table, left, n_ann = _most_active(table, max_annotators)
    ct = code_table(table, duplicates)
    if expected == "project" and not math.isfinite(d_e_project):
        core = alpha_core(ct, dist, form, expected_pairs, rng)
        cells, prepared, d_e_project = core.cells, core.prepared, float(core.d_e)
    else:
        prepared = dist.prepare(ct.values)
        cells = observed_cells(ct, dist, prepared)
    i, j = cells.pairs()
    d = cells.pair_distances()
    pair_values = (ct, dist, prepared, i, j) if expected == "pair" else None
    return _result(ct.annotator[i], ct.annotator[j], ct.annotator_labels, ct.item[i], d, pair_values, d_e_project, expected, dist.name, form, min_items,
                   max_annotators, n_ann, left, bootstrap, seed, confidence, max_draws, rng)


def _result(a_code: np.ndarray, b_code: np.ndarray, labels: np.ndarray, item: np.ndarray, d: np.ndarray,
            pair_values: tuple | None,
            d_e: float, expected: str, distance: str, form: str, min_items: int, max_annotators: int | None,
            n_annotators: int, left: list[str], bootstrap: int, seed: int, confidence: float,
            max_draws: int | None, rng: np.random.Generator) -> PairwiseAgreementResult:
    """The pair table from the observed pairs: annotator codes ``a_code, b_code`` into
    ``labels``, item and distance of each pair of values on an item (shape (n,) each)."""
    # annotators ranked by their id as text: every pair is oriented (lower id, higher id)
    names = np.asarray([str(x) for x in labels], dtype=object)
    order = np.argsort(names.astype(str), kind="stable")
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    names = names[order]
    ra, rb = rank[a_code], rank[b_code]
    same = ra == rb                           # duplicates="keep": an annotator with themself
    code_lo, code_hi = np.minimum(ra, rb)[~same], np.maximum(ra, rb)[~same]
    item, d = item[~same], d[~same]
    key = code_lo * max(names.size, 1) + code_hi
    pair, pair_of_row = np.unique(key, return_inverse=True)
    pair_of_row = pair_of_row.ravel()
    n_rows = np.bincount(pair_of_row, minlength=pair.size)
    # distinct shared items (several rows per item only under duplicates="keep")
    item_code, _ = factorize(item)
    n_items = np.bincount(pair_of_row[_first_of(pair_of_row * (int(item_code.max()) + 1 if item_code.size else 1)
                                                + item_code)], minlength=pair.size)
    mean = np.bincount(pair_of_row, weights=d, minlength=pair.size) / np.maximum(n_rows, 1)
    keep = n_items >= min_items
    n_below = int(np.count_nonzero(~keep))
    if pair_values is not None:
        d_e_pair = _pair_d_e(pair_values, pair_of_row, pair.size, form, ~same)
    else:
        d_e_pair = np.full(pair.size, d_e)
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = np.where(d_e_pair > 0, 1.0 - mean / d_e_pair, np.nan)
    ci_lo = np.full(pair.size, np.nan)
    ci_hi = np.full(pair.size, np.nan)
    if bootstrap and pair_values is None and keep.any() and d_e > 0:
        rows = keep[pair_of_row]
        sub_pair = np.cumsum(keep) - 1
        lo_k, hi_k, bootstrap = pair_intervals(d[rows], sub_pair[pair_of_row[rows]], int(keep.sum()), d_e,
                                           alpha[keep], n_items[keep], bootstrap, confidence, max_draws, rng)
        ci_lo[keep], ci_hi[keep] = lo_k, hi_k
    names_s = names.astype(str) if names.size else np.zeros(0, dtype=str)
    n = max(names.size, 1)
    out = pd.DataFrame({"annotator_a": names_s[pair // n] if pair.size else [],
                        "annotator_b": names_s[pair % n] if pair.size else [],
                        "n_items": n_items, "mean_distance": mean, "alpha": alpha, "ci_low": ci_lo,
                        "ci_high": ci_hi, "d_e": d_e_pair})
    out = out[keep].reset_index(drop=True)
    return PairwiseAgreementResult(
        table=out, annotators=sorted(set(out["annotator_a"]) | set(out["annotator_b"])),
        d_e=d_e if expected == "project" else math.nan, expected=expected, distance=distance, form=form,
        min_items=min_items, max_annotators=max_annotators, n_annotators=n_annotators, left_out=left,
        n_below_min=n_below, bootstrap=int(bootstrap) if pair_values is None and d_e > 0 else 0, seed=seed,
        confidence=confidence)


def _first_of(key: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of each distinct key, shape (n_distinct,)."""
    _, first = np.unique(key, return_index=True)
    return first


def _pair_d_e(pair_values: tuple, pair_of_row: np.ndarray, n_pairs: int, form: str, kept: np.ndarray) -> np.ndarray:
    """Each pair's own D̂e: from the 2·N_ab values of its sub-table, shape (n_pairs,).

    ``Σ`` of D over all unordered value pairs of a sub-table is ``½ cᵀ Δ c`` for the counts
    ``c`` of its distinct values and their distance matrix Δ (zero diagonal); scalar levels
    use the closed forms of docs/formulas.md §2 instead of Δ.
    """
    ct, dist, prepared, i, j = pair_values
    i, j = i[kept], j[kept]
    # the sub-table's values: both rows of every observed pair of the pair (one per shared item)
    rows = np.concatenate([i, j])
    owner = np.concatenate([pair_of_row, pair_of_row])
    n = np.bincount(owner, minlength=n_pairs).astype(np.float64)
    if isinstance(dist, ScalarDistance) and dist.level in ("interval", "ordinal"):
        x = np.asarray(prepared, dtype=np.float64)[rows]
        s1 = np.bincount(owner, weights=x, minlength=n_pairs)
        s2 = np.bincount(owner, weights=x * x, minlength=n_pairs)
        total = n * s2 - s1 * s1                                   # Σ_{r<s} (x_r − x_s)²
    else:
        code, _ = factorize(np.asarray(prepared, dtype=np.float64)[rows]) if isinstance(dist, ScalarDistance) \
            else _value_codes(ct.values[rows])
        v = int(code.max()) + 1
        counts = np.bincount(owner * v + code, minlength=n_pairs * v).reshape(n_pairs, v).astype(np.float64)
        if isinstance(dist, ScalarDistance) and dist.level == "nominal":
            total = (n * n - np.einsum("pv,pv->p", counts, counts)) / 2.0
        else:
            if v > MAX_PAIR_DOMAIN:
                raise BadInput(f"expected='pair' compares {v:,} distinct values pairwise (limit "
                                 f"{MAX_PAIR_DOMAIN:,}); use expected='project'")
            rep = np.zeros(v, dtype=np.int64)
            rep[code] = rows                                        # one value row per distinct value
            a, b = np.triu_indices(v, k=1)
            delta = np.zeros((v, v))
            dd = check_distances(dist.compute(prepared, rep[a], rep[b]), dist.name)
            delta[a, b] = dd
            delta[b, a] = dd if getattr(dist, "symmetric", True) else \
                check_distances(dist.compute(prepared, rep[b], rep[a]), dist.name)
            total = np.einsum("pv,vw,pw->p", counts, delta, counts) / 2.0
    n_items = n / 2.0
    if form == "pairwise":
        within = np.bincount(pair_of_row, weights=_within(pair_values, kept), minlength=n_pairs)
        n_between = n * (n - 1.0) / 2.0 - n_items
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(n_between > 0, (total - within) / n_between, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 1, 2.0 * total / (n * (n - 1.0)), np.nan)


def _within(pair_values: tuple, kept: np.ndarray) -> np.ndarray:
    ct, dist, prepared, i, j = pair_values
    return dist.compute(prepared, i[kept], j[kept])


def _value_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from .distances.base import value_keys

    keys = value_keys(values)
    return factorize(keys)


def combine_pairwise(results: Mapping[str, PairwiseAgreementResult | pd.DataFrame]) -> pd.DataFrame:
    """One matrix over several controls: each pair's α averaged over the controls where it
    has one, weighted by shared items (as an annotator's project α is pair-weighted).

    Parameters
    ----------
    results : mapping of control -> PairwiseAgreementResult, or its ``table`` (columns
        ``annotator_a, annotator_b, n_items, alpha`` at least)

    Returns
    -------
    DataFrame, shape (n_pairs, 5)
        ``annotator_a, annotator_b, alpha, n_items`` (items summed over controls: a task
        counts once per control) and ``n_controls``.
    """
    tables = [r if isinstance(r, pd.DataFrame) else r.table for r in results.values()]
    parts = [t[["annotator_a", "annotator_b", "n_items", "alpha"]] for t in tables if len(t)]
    if not parts:
        return pd.DataFrame(columns=["annotator_a", "annotator_b", "alpha", "n_items", "n_controls"])
    t = pd.concat(parts, ignore_index=True)
    ok = np.isfinite(t["alpha"].to_numpy(dtype=np.float64))
    t = t.assign(w=np.where(ok, t["n_items"], 0), wa=np.where(ok, t["n_items"] * t["alpha"].fillna(0.0), 0.0))
    g = t.groupby(["annotator_a", "annotator_b"], sort=True).agg(
        n_items=("n_items", "sum"), n_controls=("n_items", "size"), w=("w", "sum"), wa=("wa", "sum")).reset_index()
    with np.errstate(divide="ignore", invalid="ignore"):
        g["alpha"] = np.where(g["w"] > 0, g["wa"] / g["w"], np.nan)
    return g[["annotator_a", "annotator_b", "alpha", "n_items", "n_controls"]]

"""Chance from what each item offers (an ``options`` column): brute-force references.

The reference enumerates, in plain Python, every pair of values that could occur on the
items of one stratum (items offering as many answers, options identified by position)
and forms α from them (docs/formulas.md §1–2, "Answers offered per item"); the distances
are computed independently (set algebra, scipy's Kendall τ).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from ls_agreement.metrics import agreement
from ls_agreement.metrics.bootstrap_measures import Replicates


def _nominal(a, b) -> float:
    return float(a != b)


def _jaccard(a, b) -> float:
    union = a | b
    return 0.0 if not union else 1.0 - len(a & b) / len(union)


def _kendall(a, b) -> float:
    # both are full orders of the same positions: rank of each position in each order
    ra = [a.index(x) for x in sorted(a)]
    rb = [b.index(x) for x in sorted(a)]
    return (1.0 - kendalltau(ra, rb).statistic) / 2.0


def _as_positions(value, options):
    pos = {o: k for k, o in enumerate(options)}
    if isinstance(value, frozenset):
        return frozenset(pos[x] for x in value)
    if isinstance(value, tuple):
        return tuple(pos[x] for x in value)
    return pos[value]


def _reference(df: pd.DataFrame, d, form: str) -> float:
    """α by enumeration: observed pairs within items; chance pairs of values from items of
    one stratum, compared by option position."""
    items = {}
    for row in df.itertuples(index=False):
        items.setdefault(row.item, (row.options, []))[1].append(_as_positions(row.value, row.options))
    strata: dict[int, list] = {}
    for opts, vals in items.values():
        strata.setdefault(len(opts), []).append(vals)
    n = sum(len(v) for _, v in items.values())
    obs_pairs = [(d(a, b), len(vals)) for _, vals in items.values() for a, b in itertools.combinations(vals, 2)]
    if form == "pairwise":
        d_o = sum(x for x, _ in obs_pairs) / len(obs_pairs)
        num = den = 0.0
        for group in strata.values():
            chance = [d(a, b) for u, v in itertools.combinations(range(len(group)), 2)
                      for a in group[u] for b in group[v]]
            if chance:
                p_s = sum(len(g) * (len(g) - 1) / 2 for g in group)
                num += p_s * sum(chance) / len(chance)
                den += p_s
        return 1.0 - d_o / (num / den)
    d_o = 2.0 / n * sum(x / (m - 1) for x, m in obs_pairs)
    num = den = 0.0
    for group in strata.values():
        if len(group) < 2:
            continue
        flat = [x for g in group for x in g]
        all_pairs = [d(a, b) for a, b in itertools.combinations(flat, 2)]
        num += len(flat) * sum(all_pairs) / len(all_pairs)
        den += len(flat)
    return 1.0 - d_o / (num / den)


def _table(kind: str, seed: int, n_items: int = 14) -> pd.DataFrame:
    """Items with their own options (2 to 4 of them, one item with 6: a stratum alone),
    3 or 4 annotators each, answers partly shared with a per-item favourite."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_items):
        k = 6 if t == 0 else int(rng.integers(2, 5))
        opts = tuple(f"task{t}-option{q}" for q in range(k))
        fav = int(rng.integers(k))
        for a in range(int(rng.integers(3, 5))):
            if kind == "nominal":
                v = opts[fav] if rng.random() < 0.5 else opts[int(rng.integers(k))]
            elif kind == "sets":
                v = frozenset(o for o in opts if rng.random() < 0.4) | ({opts[fav]} if rng.random() < 0.5 else set())
            else:
                order = list(rng.permutation(k))
                if rng.random() < 0.5:
                    order.remove(fav)
                    order.insert(0, fav)
                v = tuple(opts[q] for q in order)
            rows.append((f"t{t}", f"ann{a}", v, opts))
    return pd.DataFrame(rows, columns=["item", "annotator", "value", "options"])


@pytest.mark.parametrize("form", ["canonical", "pairwise"])
@pytest.mark.parametrize("kind,distance,d", [("nominal", "nominal", _nominal), ("sets", "sets.jaccard", _jaccard),
                                             ("rankings", "rankings.kendall", _kendall)])
def test_alpha_matches_enumeration_within_option_strata(kind, distance, d, form):
    for seed in (3, 4):
        df = _table(kind, seed)
        res = agreement(df, distance, form=form, bootstrap=0, expected_pairs="all")
        assert res.expected_exact
        assert res.alpha == pytest.approx(_reference(df, d, form), abs=1e-9)


def test_same_options_everywhere_is_the_usual_pooled_chance():
    """Every item offers the same answers (in any order): they are their own identity."""
    rng = np.random.default_rng(0)
    labels = ("a", "b", "c")
    offered = [tuple(str(x) for x in rng.permutation(labels)) for _ in range(20)]
    rows = [(t, f"x{a}", labels[int(rng.integers(3))], offered[t]) for t in range(20) for a in range(3)]
    df = pd.DataFrame(rows, columns=["item", "annotator", "value", "options"])
    with_options = agreement(df, "nominal", bootstrap=0)
    without = agreement(df.drop(columns="options"), "nominal", bootstrap=0)
    assert with_options.alpha == pytest.approx(without.alpha, abs=1e-12)


def _random(n_items: int, n_ann: int, rng: np.random.Generator, kind: str) -> pd.DataFrame:
    rows = []
    for t in range(n_items):
        k = int(rng.integers(2, 6))
        opts = tuple(f"t{t}_{q}" for q in range(k))
        for a in range(n_ann):
            if kind == "nominal":
                v = opts[int(rng.integers(k))]
            elif kind == "sets":
                v = frozenset(o for o in opts if rng.random() < 0.5)
            else:
                v = tuple(opts[q] for q in rng.permutation(k))
            rows.append((t, a, v, opts))
    return pd.DataFrame(rows, columns=["item", "annotator", "value", "options"])


@pytest.mark.parametrize("kind,distance", [("nominal", "nominal"), ("sets", "sets.jaccard"),
                                           ("rankings", "rankings.kendall")])
def test_random_annotators_on_own_options_are_at_chance(kind, distance):
    """30 items x 4 random annotators, 2-5 options of their own per item: |α| < 0.15 with an
    interval around 0 (pooled chance, without the options, puts α far above 0)."""
    rng = np.random.default_rng(11)
    df = _random(30, 4, rng, kind)
    res = agreement(df, distance, bootstrap=500, seed=1)
    assert abs(res.alpha) < 0.15
    lo, hi = res.ci["alpha"]
    assert lo < 0.0 < hi
    pooled = agreement(df.drop(columns="options"), distance, bootstrap=0)
    assert pooled.alpha > 0.15


def test_random_annotators_unbiased_over_many_projects():
    """The mean α of 150 random projects is 0 within its Monte Carlo error."""
    rng = np.random.default_rng(5)
    alphas = [agreement(_random(30, 4, rng, "nominal"), "nominal", bootstrap=0).alpha for _ in range(150)]
    mean, se = float(np.mean(alphas)), float(np.std(alphas, ddof=1) / math.sqrt(len(alphas)))
    assert abs(mean) < 3 * se + 0.005


@pytest.mark.parametrize("form", ["canonical", "pairwise"])
def test_replicates_at_unit_weights_give_the_estimates(form):
    df = _table("nominal", 8, n_items=25)
    res = agreement(df, "nominal", form=form, bootstrap=0)
    full = Replicates.from_table(df, "nominal", form=form)(np.ones((1, res.n_items)))
    assert full["alpha"][0] == pytest.approx(res.alpha, abs=1e-12)
    assert full["ks"][0] == pytest.approx(res.ks, abs=1e-12)
    assert full["sigma"][0] == pytest.approx(res.sigma, abs=1e-12)
    assert full["annotator_alpha"][0] == pytest.approx(res.per_annotator["alpha"].to_numpy(), abs=1e-12)


def test_sampled_chance_pairs_estimate_the_exact_alpha():
    rng = np.random.default_rng(2)
    df = _random(400, 3, rng, "nominal")
    exact = agreement(df, "nominal", bootstrap=0, expected_pairs="all")
    sampled = agreement(df, "nominal", bootstrap=0, expected_pairs=20_000)
    assert exact.expected_exact and not sampled.expected_exact
    assert sampled.alpha == pytest.approx(exact.alpha, abs=0.02)


def test_rows_of_one_item_with_different_options_are_refused():
    df = pd.DataFrame({"item": [1, 1, 2, 2], "annotator": ["a", "b", "a", "b"], "value": ["x", "x", "y", "z"],
                       "options": [("x", "w"), ("x", "q"), ("y", "z"), ("y", "z")]})
    with pytest.raises(ValueError, match="item 1: its rows give different options"):
        agreement(df, "nominal", bootstrap=0)


def test_no_two_items_offering_as_many_answers_is_refused():
    df = pd.DataFrame({"item": [1, 1, 2, 2], "annotator": ["a", "b", "a", "b"], "value": ["x", "w", "y", "z"],
                       "options": [("x", "w"), ("x", "w"), ("y", "z", "v"), ("y", "z", "v")]})
    with pytest.raises(ValueError, match="no two items offer as many answers"):
        agreement(df, "nominal", bootstrap=0)

"""agreement(): brute-force checks of pairs, forms, breakdowns, intervals and bad input."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from ls_agreement.metrics import agreement, ks_score, sigma_score, sigma_threshold


def random_table(seed: int, n_items=30, n_ann=5, n_vals=5, missing=0.3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for it in range(n_items):
        truth = rng.integers(1, n_vals + 1)
        for a in range(n_ann):
            if rng.random() < missing and a >= 2:
                continue
            v = truth if rng.random() < 0.6 else rng.integers(1, n_vals + 1)
            rows.append((f"t{it}", f"a{a}", int(v)))
    return pd.DataFrame(rows, columns=["item", "annotator", "value"])


def brute_pairs(t: pd.DataFrame, dist):
    rows = list(t.itertuples(index=False))
    obs, exp = [], []
    for (x, y) in itertools.combinations(rows, 2):
        (exp, obs)[x.item == y.item].append(dist(x.value, y.value))
    return np.array(obs), np.array(exp)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("level,dist", [("interval", lambda a, b: float((a - b) ** 2)),
                                        ("nominal", lambda a, b: float(a != b))])
def test_pairwise_form_and_measures_equal_brute_force(seed, level, dist):
    t = random_table(seed)
    obs, exp = brute_pairs(t, dist)
    for distance in (level, dist):  # exact-from-counts path and generic all-pairs path
        r = agreement(t, distance, form="pairwise", expected_pairs="all", bootstrap=0)
        assert r.n_pairs == obs.size
        assert np.sort(r.observed) == pytest.approx(np.sort(obs))
        assert r.alpha == pytest.approx(1 - obs.mean() / exp.mean(), abs=1e-12)
        assert r.ks == pytest.approx(ks_score(obs, exp), abs=1e-12)
        assert r.sigma == pytest.approx(sigma_score(obs, sigma_threshold(exp, 0.05)), abs=1e-12)
        assert r.threshold == pytest.approx(sigma_threshold(exp, 0.05), rel=1e-9)


def test_scalar_expected_distribution_is_exact():
    t = random_table(11, n_items=50)
    r = agreement(t, "ordinal", bootstrap=0)
    r2 = agreement(t, "ordinal", bootstrap=0, expected_pairs=10)  # ignored: never sampled for scalars
    assert r.expected_exact and r2.expected_exact and r.alpha == r2.alpha
    n = len(t)
    assert r.n_expected_pairs == n * (n - 1) // 2 - r.n_pairs


def test_per_item_and_per_annotator_breakdowns():
    t = random_table(2)
    r = agreement(t, "nominal", form="pairwise", bootstrap=0, flag_below=0.5)
    assert not agreement(t, "nominal", form="pairwise", bootstrap=0).per_item["flag"].any(), \
        "the σ cut is off by default, as in the report"
    pairs = r.pairs
    d_star = r.threshold
    for item, grp in pairs.groupby("item"):
        row = r.per_item.loc[item]
        assert row["n_pairs"] == len(grp)
        assert row["sigma"] == pytest.approx(np.mean(grp["distance"] < d_star))
        assert row["alpha"] == pytest.approx(1 - grp["distance"].mean() / r.d_e)
        assert row["flag"] == (row["sigma"] < 0.5)
    for ann in r.per_annotator.index:
        mine = pairs[(pairs.annotator_a == ann) | (pairs.annotator_b == ann)]
        assert r.per_annotator.loc[ann, "n_pairs"] == len(mine)
        assert r.per_annotator.loc[ann, "sigma"] == pytest.approx(np.mean(mine["distance"] < d_star))
        assert r.per_annotator.loc[ann, "n_items"] == mine["item"].nunique()


def test_careless_annotator_is_worst():
    rng = np.random.default_rng(0)
    rows = []
    for it in range(80):
        truth = rng.integers(0, 6)
        for a in range(4):
            rows.append((it, f"good{a}", int(truth if rng.random() < 0.9 else rng.integers(0, 6))))
        rows.append((it, "careless", int(rng.integers(0, 6))))
    r = agreement(pd.DataFrame(rows, columns=["item", "annotator", "value"]), "nominal", bootstrap=200)
    assert r.per_annotator["alpha"].idxmin() == "careless"
    assert r.per_annotator.loc["careless", "alpha_ci_high"] < r.per_annotator.drop("careless")["alpha"].min()


def test_bootstrap_interval_brackets_estimate_and_is_seeded():
    t = random_table(4, n_items=60)
    r = agreement(t, "nominal", bootstrap=300, seed=1)
    r_again = agreement(t, "nominal", bootstrap=300, seed=1)
    assert r.ci == r_again.ci
    for key in ("alpha", "ks", "sigma"):
        lo, hi = r.ci[key]
        assert lo <= getattr(r, key) + 0.02 and getattr(r, key) - 0.02 <= hi and lo < hi


def test_bootstrap_coverage_of_alpha_in_simulation():
    """The 95% interval covers the population α in most simulated projects."""
    rng = np.random.default_rng(123)
    covered = 0
    big = []
    for it in range(4000):  # the "population": many items
        truth = rng.integers(0, 4)
        for a in range(3):
            big.append((it, a, int(truth if rng.random() < 0.7 else rng.integers(0, 4))))
    pop = pd.DataFrame(big, columns=["item", "annotator", "value"])
    target = agreement(pop, "nominal", bootstrap=0).alpha
    items = pop["item"].unique()
    for rep in range(20):
        sample = pop[pop["item"].isin(rng.choice(items, 80, replace=False))]
        lo, hi = agreement(sample, "nominal", bootstrap=200, seed=rep).ci["alpha"]
        covered += lo <= target <= hi
    assert covered >= 16


def test_duplicates_policies():
    t = pd.DataFrame({"item": [1, 1, 1, 2, 2], "annotator": ["a", "b", "a", "a", "b"], "value": [1, 2, 1, 3, 3]})
    with pytest.raises(ValueError, match="annotator 'a' has 2 values on item 1"):
        agreement(t, "nominal", bootstrap=0)
    assert agreement(t, "nominal", bootstrap=0, duplicates="keep", form="pairwise").n_pairs == 4
    assert agreement(t, "nominal", bootstrap=0, duplicates="last").n_pairs == 2


@pytest.mark.parametrize("table,match", [
    (pd.DataFrame(columns=["item", "annotator", "value"]), "empty"),
    (pd.DataFrame({"item": [1, 2], "annotator": ["a", "a"], "value": [1, 2]}), "two annotators"),
    (pd.DataFrame({"item": [1, 2], "annotator": ["a", "b"], "value": [1, 2]}), "pairable"),
    (pd.DataFrame({"task": [1], "annotator": ["a"], "value": [1]}), "lacks column"),
])
def test_bad_input_is_named(table, match):
    with pytest.raises(ValueError, match=match):
        agreement(table, "nominal", bootstrap=0)


@pytest.mark.parametrize("missing", [np.nan, None])
def test_a_missing_value_is_no_rating(missing):
    """NaN/None is an annotator who did not rate the item (krippendorff's and pingouin's
    reading): the row counts as absent, never as a value."""
    t = random_table(5)
    holes = t.copy()
    holes["value"] = holes["value"].astype(object)
    holes.loc[holes.index[::7], "value"] = missing
    want = agreement(holes.iloc[[k for k in range(len(holes)) if k % 7]], "nominal", bootstrap=0)
    got = agreement(holes, "nominal", bootstrap=0)
    assert (got.alpha, got.n_pairs, got.n_values) == (want.alpha, want.n_pairs, want.n_values)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_bad_distance_values_name_item_and_annotators(bad):
    t = pd.DataFrame({"item": [1, 1, 2, 2], "annotator": ["a", "b", "a", "b"], "value": [1, 2, 3, 3]})
    with pytest.raises(ValueError, match=r"finite and >= 0 \(item 1, annotators 'a' and 'b'\)"):
        agreement(t, lambda x, y: bad if x != y else 0.0, bootstrap=0)


def test_unknown_distance_and_form():
    t = random_table(0)
    with pytest.raises(ValueError, match="unknown distance"):
        agreement(t, "no.such.distance")
    with pytest.raises(ValueError, match="form"):
        agreement(t, "nominal", form="other")


def test_to_dict_is_json_serialisable():
    import json

    r = agreement(random_table(3), "interval", bootstrap=50)
    d = json.loads(json.dumps(r.to_dict(items=True)))
    assert d["alpha"] == pytest.approx(r.alpha) and set(d["ci"]) == {"alpha", "ks", "sigma"}
    assert len(d["items"]) == r.n_items


def test_bootstrap_on_tiny_data_skips_degenerate_replicates():
    """Replicates that draw no between-item pair have no chance baseline: skipped, not fatal."""
    for values in ([1, 1, 2, 2], ["a", "b", "a", "a"], [0.5, 0.5, 3.0, 3.0]):
        t = pd.DataFrame({"item": [1, 1, 2, 2], "annotator": ["x", "y", "x", "y"], "value": values})
        for level in ("nominal", "interval"):
            if level == "interval" and isinstance(values[0], str):
                continue
            r = agreement(t, level, bootstrap=200, seed=3)
            assert set(r.ci) == {"alpha", "ks", "sigma"}

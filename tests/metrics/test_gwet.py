"""Gwet's AC1/AC2, Scott's π and Bennett's S against irrCAC, Gwet's published example and
statsmodels; per-annotator bias against a plain loop and scipy's one-sample t interval."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa as sm_fleiss

from ls_agreement.metrics import bennett_s, fleiss_kappa, gwet_ac1, gwet_ac2, per_annotator_bias, scott_pi
from ls_agreement.metrics.gwet import weight_matrix

WEIGHTS = ["identity", "linear", "quadratic", "ordinal", "radical", "ratio", "circular", "bipolar"]

# Gwet's 4-rater example with missing ratings (Handbook of Inter-Rater Reliability, 4th ed.;
# shipped as irrCAC.datasets.raw_4raters): 12 units × 4 raters, NaN = not rated.
RAW_4RATERS = np.array([
    [1, 1, np.nan, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 3, 4],
    [4, 4, 4, 4], [1, 1, 2, 1], [2, 2, 2, 2], [np.nan, 5, 5, 5], [np.nan, np.nan, 1, 1],
    [np.nan, np.nan, 3, np.nan]])


def wide_to_long(wide: np.ndarray | pd.DataFrame) -> pd.DataFrame:
    """Units × raters (NaN = not rated) -> long table (item, annotator, value)."""
    w = pd.DataFrame(np.asarray(wide, dtype=object)).reset_index(drop=True)
    st = w.stack()
    st = st[st.notna()]
    return pd.DataFrame({"item": st.index.get_level_values(0), "annotator": st.index.get_level_values(1),
                         "value": st.to_numpy()})


def long_to_wide(table: pd.DataFrame) -> pd.DataFrame:
    return table.pivot(index="item", columns="annotator", values="value")


def present_categories(wide) -> list:
    v = np.asarray(wide, dtype=object).ravel()
    return sorted(pd.unique(v[pd.notna(v)]).tolist())


# ---------------------------------------------------------------- published values (no irrCAC needed)

def test_gwet_handbook_example_published_values():
    """AC1, Fleiss/Scott and bipolar AC2 of the 4-rater example as printed (5 decimals) in
    irrCAC's documentation of Gwet's example."""
    t = wide_to_long(RAW_4RATERS)
    ac1 = gwet_ac1(t)
    assert (ac1.coefficient, ac1.se, ac1.pa, ac1.pe) == pytest.approx((0.77544, 0.14295, 0.81818, 0.19032), abs=5e-6)
    assert (ac1.ci_low, ac1.ci_high) == pytest.approx((0.46081, 1.0), abs=5e-6)
    assert ac1.pval == pytest.approx(0.00021, abs=5e-6)
    assert (ac1.n_items, ac1.n_pairable, ac1.n_annotators) == (12, 11, 4)
    pi = scott_pi(t)
    assert (pi.coefficient, pi.se, pi.pa, pi.pe) == pytest.approx((0.76117, 0.15302, 0.81818, 0.23872), abs=5e-6)
    assert (pi.ci_low, pi.ci_high) == pytest.approx((0.42438, 1.0), abs=5e-6)
    ac2 = gwet_ac2(t, weights="bipolar")
    assert (ac2.coefficient, ac2.se, ac2.pa, ac2.pe) == pytest.approx((0.90037, 0.10582, 0.96836, 0.68244), abs=5e-6)
    assert ac2.ci_low == pytest.approx(0.66747, abs=5e-6)


def test_scott_pi_and_bennett_s_on_complete_data_equal_statsmodels():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 4, 80)
    ratings = np.where(rng.random((80, 5)) < 0.6, truth[:, None], rng.integers(0, 4, (80, 5)))
    t = wide_to_long(ratings)
    counts = aggregate_raters(ratings)[0]
    assert scott_pi(t).coefficient == pytest.approx(sm_fleiss(counts), abs=1e-12)
    assert scott_pi(t).coefficient == pytest.approx(float(fleiss_kappa(t)), abs=1e-12)
    # Randolph's free-marginal kappa is Bennett's S with 1/q chance
    assert bennett_s(t).coefficient == pytest.approx(sm_fleiss(counts, method="randolph"), abs=1e-12)


def test_two_raters_closed_forms():
    a = np.array(list("aabbcabcaa"))
    b = np.array(list("abbbcabcac"))
    t = wide_to_long(np.c_[a, b])
    pa = np.mean(a == b)
    assert gwet_ac1(t).pa == pytest.approx(pa)
    assert bennett_s(t).coefficient == pytest.approx((pa - 1 / 3) / (1 - 1 / 3))
    assert bennett_s(t, categories=list("abcd")).coefficient == pytest.approx((pa - 1 / 4) / (1 - 1 / 4))
    p = np.array([np.mean(np.r_[a, b] == c) for c in "abc"])
    pe = np.sum(p * (1 - p)) / 2
    assert gwet_ac1(t).coefficient == pytest.approx((pa - pe) / (1 - pe))


# ---------------------------------------------------------------- irrCAC

def irr_cac(wide: pd.DataFrame, weights, categories, method: str) -> dict:
    """irrCAC's estimate at full precision. Categories are always passed: with pandas ≥ 3
    irrCAC's own category detection (DataFrame.stack) keeps NaN as a category."""
    raw = pytest.importorskip("irrCAC.raw")
    cac = raw.CAC(wide.reset_index(drop=True), weights=weights, categories=list(categories), digits=15)
    return getattr(cac, method)()["est"]


OURS = {"gwet": gwet_ac2, "fleiss": scott_pi, "bp": bennett_s}


def assert_equals_irrcac(wide: pd.DataFrame, table: pd.DataFrame, weights, categories, method: str, *,
                         ours_categories=None) -> None:
    ref = irr_cac(wide, weights, categories, method)
    res = OURS[method](table, weights=weights, categories=ours_categories)
    got = (res.coefficient, res.pa, res.pe, res.se, res.ci_low, res.ci_high)
    want = (ref["coefficient_value"], ref["pa"], ref["pe"], ref["se"], *ref["confidence_interval"])
    np.testing.assert_allclose(got, np.asarray(want, dtype=float), rtol=0, atol=1e-9, err_msg=f"{method} {weights}")
    if method != "bp":                       # irrCAC's bp() p-value is one-sided; ours is two-sided
        assert res.pval == pytest.approx(float(ref["p_value"]), abs=1e-9)


DATASETS = ["raw_4raters", "raw_5observers", "raw_g1g2", "raw_gender", "raw_ben_gerry"]


@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize("method", ["gwet", "fleiss", "bp"])
def test_irrcac_example_datasets_all_weights(dataset, method):
    datasets = pytest.importorskip("irrCAC.datasets")
    wide = getattr(datasets, dataset)().reset_index(drop=True)
    cats = present_categories(wide)
    table = wide_to_long(wide)
    for weights in WEIGHTS:
        if weights == "ratio" and 0 in cats:
            with pytest.raises(ValueError, match="ratio"):
                OURS[method](table, weights=weights)
            continue
        assert_equals_irrcac(wide, table, weights, cats, method)


def test_gwet_ac1_is_irrcac_identity():
    datasets = pytest.importorskip("irrCAC.datasets")
    wide = datasets.raw_5observers().reset_index(drop=True)
    ref = irr_cac(wide, "identity", present_categories(wide), "gwet")
    res = gwet_ac1(wide_to_long(wide))
    assert res.name == "gwet_ac1" and res.weights == "identity"
    assert (res.coefficient, res.pe, res.se) == pytest.approx((ref["coefficient_value"], ref["pe"], ref["se"]),
                                                              abs=1e-9)


def random_wide(rng: np.random.Generator, n: int, r: int, q: int, p_missing: float, labels=None) -> pd.DataFrame:
    truth = rng.integers(0, q, n)
    vals = np.where(rng.random((n, r)) < 0.55, truth[:, None], rng.integers(0, q, (n, r)))
    # ordinal noise: sometimes one step off the truth
    step = rng.random((n, r)) < 0.2
    vals = np.where(step, np.clip(truth[:, None] + rng.choice([-1, 1], (n, r)), 0, q - 1), vals)
    out = (vals + 1).astype(float) if labels is None else np.asarray(labels, dtype=object)[vals]
    out = np.where(rng.random((n, r)) < p_missing, np.nan, out)
    return pd.DataFrame(out, columns=[f"r{j}" for j in range(r)])


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("method", ["gwet", "fleiss", "bp"])
def test_random_data_with_missing_ratings_equal_irrcac(seed, method):
    pytest.importorskip("irrCAC")
    rng = np.random.default_rng(seed)
    q = int(rng.integers(2, 7))
    wide = random_wide(rng, n=int(rng.integers(10, 120)), r=int(rng.integers(2, 9)), q=q,
                       p_missing=float(rng.uniform(0.05, 0.5)))
    table = wide_to_long(wide)
    cats = present_categories(wide)
    for weights in WEIGHTS:
        assert_equals_irrcac(wide, table, weights, cats, method)


@pytest.mark.parametrize("method", ["gwet", "fleiss", "bp"])
def test_unused_category_and_string_labels_equal_irrcac(method):
    pytest.importorskip("irrCAC")
    rng = np.random.default_rng(77)
    labels = ["low", "mid", "high", "top"]
    wide = random_wide(rng, 60, 4, 3, 0.3, labels=labels[:3])
    table = wide_to_long(wide)
    # "top" never used: it still counts in q (irrCAC: the categories vector)
    for weights in ("identity", "linear", "quadratic"):
        assert_equals_irrcac(wide, table, weights, labels, method, ours_categories=labels)
    # numeric scale 1..5 with 5 unused
    wide = random_wide(rng, 50, 5, 4, 0.25)
    assert_equals_irrcac(wide, wide_to_long(wide), "quadratic", [1.0, 2.0, 3.0, 4.0, 5.0], method,
                         ours_categories=[5, 4, 3, 2, 1])


def test_custom_weight_matrix_equals_named_one():
    t = wide_to_long(RAW_4RATERS)
    w = weight_matrix("quadratic", [1, 2, 3, 4, 5])
    a, b = gwet_ac2(t, weights=w), gwet_ac2(t, weights="quadratic")
    assert a.weights == "custom" and a.coefficient == pytest.approx(b.coefficient, abs=1e-15)
    with pytest.raises(ValueError, match="5×5"):
        gwet_ac2(t, weights=np.eye(3))


def test_to_dict_is_strict_json():
    res = gwet_ac2(wide_to_long(RAW_4RATERS), weights="linear")
    out = json.loads(json.dumps(res.to_dict(), allow_nan=False))
    assert out["name"] == "gwet_ac2" and out["categories"] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert len(out["weight_matrix"]) == 5
    # one category only: Gwet's pe has q − 1 = 0 in its denominator -> undefined, None in JSON
    same = pd.DataFrame({"item": [1, 1, 2, 2], "annotator": ["a", "b", "a", "b"], "value": ["x"] * 4})
    out = gwet_ac1(same).to_dict()
    json.dumps(out, allow_nan=False)
    assert out["coefficient"] is None
    assert gwet_ac1(same, categories=["x", "y"]).coefficient == 1.0


# ---------------------------------------------------------------- bad input

def test_bad_input():
    t = wide_to_long(RAW_4RATERS)
    with pytest.raises(ValueError, match=r"item 1, annotator 0: value 2\.0 is not among categories"):
        gwet_ac1(t, categories=[1, 3, 4, 5])
    dup = pd.concat([t, t.iloc[[0]]], ignore_index=True)
    with pytest.raises(ValueError, match="has 2 values on item"):
        gwet_ac1(dup)
    assert gwet_ac1(dup, duplicates="first").coefficient == pytest.approx(gwet_ac1(t).coefficient)
    with pytest.raises(ValueError, match="at least two rated items"):
        gwet_ac1(pd.DataFrame({"item": [1, 1], "annotator": ["a", "b"], "value": [1, 2]}))
    with pytest.raises(ValueError, match="no item has ratings from two annotators"):
        scott_pi(pd.DataFrame({"item": [1, 2], "annotator": ["a", "b"], "value": [1, 2]}))
    with pytest.raises(ValueError, match="weights must be one of"):
        gwet_ac2(t, weights="cubic")
    with pytest.raises(ValueError, match="confidence"):
        bennett_s(t, confidence=1.5)
    with pytest.raises(ValueError, match="repeated"):
        gwet_ac1(t, categories=[1, 2, 2, 3, 4, 5])


# ---------------------------------------------------------------- per-annotator bias

def bias_by_loop(table: pd.DataFrame, confidence: float) -> dict:
    out = {}
    for a, rows in table.groupby("annotator"):
        diffs = []
        for _, row in rows.iterrows():
            others = table[(table["item"] == row["item"]) & (table["annotator"] != a)]["value"]
            if len(others):
                diffs.append(row["value"] - others.mean())
        diffs = np.asarray(diffs)
        ci = (stats.ttest_1samp(diffs, 0.0).confidence_interval(confidence) if len(diffs) >= 2
              else (np.nan, np.nan))
        out[a] = (diffs.mean() if len(diffs) else np.nan, len(diffs), tuple(ci),
                  diffs.std(ddof=1) if len(diffs) >= 2 else np.nan)
    return out


@pytest.mark.parametrize("confidence", [0.95, 0.9])
def test_per_annotator_bias_equals_loop_and_scipy_interval(confidence):
    rng = np.random.default_rng(5)
    n, r = 40, 5
    offsets = np.array([0.0, 0.5, -1.0, 0.2, 2.0])
    y = rng.normal(0, 1, n)[:, None] + offsets + rng.normal(0, 0.3, (n, r))
    y[rng.random((n, r)) < 0.3] = np.nan
    t = wide_to_long(y)
    t["annotator"] = t["annotator"].map(lambda j: f"a{j}")
    t["value"] = t["value"].astype(float)
    # one annotator who shares only one item (n = 1: no interval), one who shares none
    t = pd.concat([t, pd.DataFrame({"item": [0, 999], "annotator": ["solo1", "lonely"], "value": [1.0, 3.0]})],
                  ignore_index=True)
    res = per_annotator_bias(t, confidence=confidence)
    ref = bias_by_loop(t, confidence)
    assert list(res.index) == sorted(ref)
    for a, (mean, cnt, ci, sd) in ref.items():
        assert res.at[a, "n"] == cnt
        np.testing.assert_allclose([res.at[a, "bias"], res.at[a, "sd"], res.at[a, "ci_low"], res.at[a, "ci_high"]],
                                   [mean, sd, *ci], atol=1e-12, equal_nan=True)
    assert res.at["lonely", "n"] == 0 and np.isnan(res.at["lonely", "bias"])
    # the annotator with +2.0 offset stands out, and its interval excludes 0
    assert res.at["a4", "ci_low"] > 1.0


def test_per_annotator_bias_requires_numbers():
    t = pd.DataFrame({"item": [1, 1], "annotator": ["a", "b"], "value": [1.0, "x"]})
    with pytest.raises(ValueError, match="item 1, annotator 'b'"):
        per_annotator_bias(t)

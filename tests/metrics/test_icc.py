"""Intraclass correlations: pingouin on complete data; statsmodels' ANOVA and REML fits,
the simulation model and invariances when ratings are missing."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from ls_agreement.metrics import IccResult, icc

pg = pytest.importorskip("pingouin")
# pingouin 0.6 calls DataFrame.dropna(inplace=True), deprecated in pandas 3.1
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword")

FORMS = ["ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k"]


def pingouin_icc(data: pd.DataFrame, monkeypatch) -> pd.DataFrame:
    """pingouin's table with the interval unrounded (it rounds CI95 to 2 decimals by default)."""
    with monkeypatch.context() as m:
        for col in ("CI95", "CI95%"):
            m.setitem(pg.options, f"round.column.{col}", None)
        out = pg.intraclass_corr(data=data, targets="item", raters="annotator", ratings="value")
    ci = np.vstack(out[next(c for c in out.columns if c.startswith("CI95"))].to_numpy())
    return pd.DataFrame({"icc": out["ICC"].to_numpy(), "f": out["F"].to_numpy(), "df1": out["df1"].to_numpy(),
                         "df2": out["df2"].to_numpy(), "pval": out["pval"].to_numpy(), "ci_low": ci[:, 0],
                         "ci_high": ci[:, 1]})


def assert_equals_pingouin(data: pd.DataFrame, monkeypatch) -> IccResult:
    ours = icc(data)
    ref = pingouin_icc(data, monkeypatch)
    assert list(ours.table["type"]) == FORMS
    for col in ("icc", "f", "df1", "df2", "pval", "ci_low", "ci_high"):
        np.testing.assert_allclose(ours.table[col].to_numpy(dtype=float), ref[col].to_numpy(dtype=float),
                                   rtol=0, atol=1e-8, err_msg=col)
    return ours


def complete(rng: np.random.Generator, n: int, k: int, *, sa=1.0, sb=0.5, se=0.8, integer=False) -> pd.DataFrame:
    a, b = rng.normal(0, sa, n), rng.normal(0, sb, k)
    it, an = np.indices((n, k))
    y = 3.0 + a[it] + b[an] + rng.normal(0, se, (n, k))
    if integer:
        y = np.clip(np.round(y), 1, 7)
    return pd.DataFrame({"item": it.ravel(), "annotator": an.ravel(), "value": y.ravel()})


def with_missing(rng: np.random.Generator, n=40, k=6, p=0.3, **kw) -> pd.DataFrame:
    d = complete(rng, n, k, **kw)
    return d.loc[rng.random(len(d)) > p].reset_index(drop=True)


# ---------------------------------------------------------------- complete data = pingouin

def test_pingouin_wine_example(monkeypatch):
    data = pg.read_dataset("icc").rename(columns={"Wine": "item", "Judge": "annotator", "Scores": "value"})
    res = assert_equals_pingouin(data, monkeypatch)
    assert (res.n_items, res.n_annotators, res.n_missing, res.n_dropped_items) == (8, 4, 0, 0)
    # pingouin's docstring (rounded): ICC(1,1) 0.728, ICC(C,k) 0.915
    assert res["ICC1"] == pytest.approx(0.728, abs=5e-4)
    assert res["ICC3k"] == pytest.approx(0.915, abs=5e-4)


@pytest.mark.parametrize("seed,n,k,integer", [(0, 10, 3, False), (1, 30, 5, True), (2, 5, 2, False),
                                              (3, 60, 8, True), (4, 15, 12, False), (5, 3, 4, True)])
def test_random_complete_equals_pingouin(seed, n, k, integer, monkeypatch):
    rng = np.random.default_rng(seed)
    assert_equals_pingouin(complete(rng, n, k, integer=integer), monkeypatch)


def test_labels_and_row_order_do_not_matter(monkeypatch):
    rng = np.random.default_rng(11)
    d = complete(rng, 12, 4)
    d = d.assign(item="doc-" + d["item"].astype(str), annotator=d["annotator"].map(lambda a: f"ann{a}"))
    d = d.sample(frac=1.0, random_state=3).reset_index(drop=True)
    assert_equals_pingouin(d, monkeypatch)


def test_low_agreement_gives_negative_values_like_pingouin(monkeypatch):
    # raters reverse each other: between-item variance below within-item variance
    x = np.arange(10.0)
    noise = np.random.default_rng(0).normal(0, 0.5, 10)
    d = pd.DataFrame({"item": np.r_[x, x], "annotator": [0] * 10 + [1] * 10, "value": np.r_[x, 9.0 - x + noise]})
    res = assert_equals_pingouin(d, monkeypatch)
    assert res["ICC1"] < 0


def test_wider_confidence_gives_wider_interval():
    d = complete(np.random.default_rng(4), 20, 4)
    a, b = icc(d, confidence=0.95).table, icc(d, confidence=0.99).table
    assert np.all(b["ci_low"] <= a["ci_low"]) and np.all(b["ci_high"] >= a["ci_high"])
    np.testing.assert_allclose(a["icc"], b["icc"])


# ---------------------------------------------------------------- missing ratings

def test_nan_rows_and_single_rated_items_do_not_change_complete_result(monkeypatch):
    rng = np.random.default_rng(7)
    d = complete(rng, 15, 4)
    base = assert_equals_pingouin(d, monkeypatch)
    extra = pd.DataFrame({"item": [100, 100, 101, 102], "annotator": [0, 1, 2, 3],
                          "value": [np.nan, 2.0, 5.0, None]})
    res = icc(pd.concat([d, extra], ignore_index=True))
    assert res.n_dropped_items == 2          # items 100 and 101 keep one rating each; 102 has none
    assert (res.n_items, res.n_missing) == (15, 0)
    cols = ["icc", "f", "pval", "ci_low", "ci_high"]
    np.testing.assert_allclose(res.table[cols].to_numpy(float), base.table[cols].to_numpy(float), rtol=0,
                               atol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_missing_data_is_finite_and_bounded(seed):
    rng = np.random.default_rng(100 + seed)
    d = with_missing(rng, n=int(rng.integers(8, 60)), k=int(rng.integers(3, 9)), p=float(rng.uniform(0.1, 0.5)))
    res = icc(d)
    t = res.table
    assert res.n_missing > 0
    assert res.n_missing == res.n_items * res.n_annotators - res.n_ratings
    for col in ("icc", "f", "pval", "ci_low", "ci_high"):
        assert np.all(np.isfinite(t[col])), col
    assert np.all(t["icc"] <= 1) and np.all(t["icc"] > -1)
    assert np.all(t["ci_low"] <= t["icc"] + 1e-12) and np.all(t["icc"] <= t["ci_high"] + 1e-12)
    assert np.all(t["ci_low"] >= -1.0) and np.all(t["ci_high"] <= 1.0)
    json.dumps(res.to_dict(), allow_nan=False)


def _ols_anova(d: pd.DataFrame, formula: str) -> pd.DataFrame:
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm
    d = d.assign(item=d["item"].astype(str), annotator=d["annotator"].astype(str))
    return anova_lm(smf.ols(formula, d).fit(), typ=1)


@pytest.mark.parametrize("seed", range(4))
def test_unbalanced_sums_of_squares_equal_statsmodels_ols(seed):
    """The F tests and mean squares are those of statsmodels' sequential (type I) OLS ANOVA.

    One-way: ``value ~ item`` gives MSB, MSW; ICC1 = (MSB − MSW)/(MSB + (n0 − 1) MSW) with
    n0 = (N − Σ n_i²/N)/(n − 1) (Searle et al. 1992, eq. 3.29). Two-way: ``annotator + item``
    gives R(item | annotator) and SSE; ``item + annotator`` gives R(annotator | item).
    """
    rng = np.random.default_rng(200 + seed)
    d = with_missing(rng, n=25, k=5, p=0.3)
    res = icc(d)
    rated = d.groupby("item")["value"].transform("size")
    assert res.n_dropped_items == int((rated == 1).sum())
    d = d.loc[rated >= 2]                    # the items ICC uses
    t = res.table.set_index("type")
    one = _ols_anova(d, "value ~ C(item)")
    msb, msw = one.loc["C(item)", "mean_sq"], one.loc["Residual", "mean_sq"]
    n_i = d.groupby("item").size().to_numpy(float)
    big_n, n = n_i.sum(), n_i.size
    n0 = (big_n - (n_i ** 2).sum() / big_n) / (n - 1)
    assert t.at["ICC1", "f"] == pytest.approx(one.loc["C(item)", "F"], abs=1e-8)
    assert t.at["ICC1", "df2"] == one.loc["Residual", "df"]
    assert t.at["ICC1", "icc"] == pytest.approx((msb - msw) / (msb + (n0 - 1) * msw), abs=1e-10)
    assert t.at["ICC1k", "icc"] == pytest.approx((msb - msw) / msb, abs=1e-10)

    ann_first = _ols_anova(d, "value ~ C(annotator) + C(item)")
    item_first = _ols_anova(d, "value ~ C(item) + C(annotator)")
    assert t.at["ICC3", "f"] == pytest.approx(ann_first.loc["C(item)", "F"], abs=1e-8)
    assert t.at["ICC3", "df1"] == ann_first.loc["C(item)", "df"]
    assert t.at["ICC3", "df2"] == ann_first.loc["Residual", "df"]
    assert t.at["ICC3", "pval"] == pytest.approx(ann_first.loc["C(item)", "PR(>F)"], abs=1e-12)
    mse = ann_first.loc["Residual", "mean_sq"]
    ms_a = ann_first.loc["C(item)", "mean_sq"]
    ms_b = item_first.loc["C(annotator)", "mean_sq"]
    k = d["annotator"].nunique()
    # Henderson III coefficients with one rating per cell: (N − K)/(n − 1), (N − n)/(K − 1)
    k_a, k_b = (big_n - k) / (n - 1), (big_n - n) / (k - 1)
    va, vb = (ms_a - mse) / k_a, (ms_b - mse) / k_b
    assert res.variance_components["residual"] == pytest.approx(mse, abs=1e-10)
    assert res.variance_components["annotator"] == pytest.approx(vb, abs=1e-10)
    assert t.at["ICC3", "icc"] == pytest.approx(va / (va + mse), abs=1e-10)
    assert t.at["ICC2", "icc"] == pytest.approx(va / (va + vb + mse), abs=1e-10)
    assert t.at["ICC3k", "icc"] == pytest.approx(k_a * va / (k_a * va + mse), abs=1e-10)


def test_variance_components_are_unbiased_under_the_model():
    """Henderson III estimates are unbiased for any design: their mean over simulations
    is the generating variance (reference: the simulation parameters, not code output)."""
    rng = np.random.default_rng(42)
    sa2, sb2, se2 = 1.0, 0.8, 0.6
    est = []
    for _ in range(400):
        d = with_missing(rng, n=20, k=5, p=0.35, sa=np.sqrt(sa2), sb=np.sqrt(sb2), se=np.sqrt(se2))
        v = icc(d).variance_components
        est.append((v["item"], v["annotator"], v["residual"]))
    est = np.asarray(est)
    mean, sem = est.mean(axis=0), est.std(axis=0, ddof=1) / np.sqrt(len(est))
    assert np.all(np.abs(mean - [sa2, sb2, se2]) < 4.5 * sem), (mean, sem)


def test_close_to_statsmodels_reml_on_a_large_unbalanced_design():
    """ANOVA and REML estimates differ on unbalanced data but agree closely on a large one."""
    import statsmodels.formula.api as smf
    rng = np.random.default_rng(3)
    d = with_missing(rng, n=150, k=6, p=0.35, sa=1.0, sb=0.6, se=0.8)
    t = icc(d).table.set_index("type")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = smf.mixedlm("value ~ 1", d, groups="item").fit(reml=True)
        d2 = d.assign(g=1)
        two = smf.mixedlm("value ~ 1", d2, groups="g", re_formula="0",
                          vc_formula={"item": "0 + C(item)", "annotator": "0 + C(annotator)"}).fit(reml=True)
    va1 = float(one.cov_re.iloc[0, 0])
    assert t.at["ICC1", "icc"] == pytest.approx(va1 / (va1 + one.scale), abs=0.02)
    vc = dict(zip(two.model.exog_vc.names, two.vcomp))
    assert t.at["ICC2", "icc"] == pytest.approx(vc["item"] / (vc["item"] + vc["annotator"] + two.scale), abs=0.02)
    assert t.at["ICC3", "icc"] == pytest.approx(vc["item"] / (vc["item"] + two.scale), abs=0.02)


def test_consistency_forms_ignore_annotator_offsets_with_missing_data():
    rng = np.random.default_rng(9)
    d = with_missing(rng, n=30, k=5, p=0.3)
    base = icc(d).table.set_index("type")
    shifted = d.assign(value=d["value"] + d["annotator"].map({0: 3.0, 1: -2.0, 2: 0.5, 3: 7.0, 4: 0.0}))
    moved = icc(shifted).table.set_index("type")
    for form in ("ICC3", "ICC3k"):
        for col in ("icc", "f", "ci_low", "ci_high"):
            assert moved.at[form, col] == pytest.approx(base.at[form, col], abs=1e-9)
    assert moved.at["ICC2", "icc"] < base.at["ICC2", "icc"] - 0.05
    # affine change of the rating scale changes nothing
    affine = icc(d.assign(value=10.0 - 2.5 * d["value"])).table.set_index("type")
    np.testing.assert_allclose(affine[["icc", "f", "ci_low", "ci_high"]], base[["icc", "f", "ci_low", "ci_high"]],
                               atol=1e-9)


def test_disconnected_design_is_defined():
    # two panels that never rate the same item: annotator effects are estimable only within a panel
    rng = np.random.default_rng(5)
    a = complete(rng, 10, 3)
    b = complete(rng, 12, 3).assign(item=lambda x: x["item"] + 100, annotator=lambda x: x["annotator"] + 10)
    res = icc(pd.concat([a, b], ignore_index=True))
    t = res.table.set_index("type")
    assert (res.n_items, res.n_annotators) == (22, 6)
    assert t.at["ICC3", "df1"] == 22 - 2 and t.at["ICC3", "df2"] == 66 - 22 - 6 + 2
    assert np.all(np.isfinite(res.table[["icc", "ci_low", "ci_high"]]))


def test_sparse_solver_path_gives_the_same_result(monkeypatch):
    import importlib
    icc_module = importlib.import_module("ls_agreement.metrics.icc")   # the package's `icc` is the function
    d = with_missing(np.random.default_rng(8), n=40, k=9, p=0.4)
    dense = icc(d).table
    monkeypatch.setattr(icc_module, "_DENSE_SOLVE_LIMIT", 0)
    sparse = icc(d).table
    cols = ["icc", "f", "pval", "ci_low", "ci_high"]
    np.testing.assert_allclose(sparse[cols].to_numpy(float), dense[cols].to_numpy(float), rtol=0, atol=1e-10)


def test_perfect_agreement_and_constant_table():
    d = pd.DataFrame({"item": np.repeat(range(5), 3), "annotator": np.tile(["a", "b", "c"], 5),
                      "value": np.repeat([1.0, 4.0, 2.0, 5.0, 3.0], 3)})
    t = icc(d).table.set_index("type")
    assert t.at["ICC1", "icc"] == 1.0 and t.at["ICC1", "ci_high"] == 1.0 and t.at["ICC1", "ci_low"] == 1.0
    assert t.at["ICC3k", "icc"] == 1.0
    const = icc(d.assign(value=2.0))
    out = const.to_dict()
    json.dumps(out, allow_nan=False)
    assert out["forms"][0]["icc"] is None


def test_to_dict_is_strict_json():
    res = icc(with_missing(np.random.default_rng(1)))
    out = json.loads(json.dumps(res.to_dict(), allow_nan=False))
    assert [f["type"] for f in out["forms"]] == FORMS
    assert set(out["forms"][0]) == {"type", "description", "icc", "f", "df1", "df2", "pval", "ci_low", "ci_high"}
    assert out["n_items"] == res.n_items and out["n_missing"] == res.n_missing


# ---------------------------------------------------------------- bad input

def test_non_numeric_value_names_item_and_annotator():
    d = pd.DataFrame({"item": [1, 1, 2, 2], "annotator": ["a", "b", "a", "b"], "value": [1, 2, "high", 3]})
    with pytest.raises(ValueError, match=r"item 2, annotator 'a'.*'high'"):
        icc(d)
    d2 = d.assign(value=[1, 2, [3], 3])
    with pytest.raises(ValueError, match="finite numeric"):
        icc(d2)
    with pytest.raises(ValueError, match="item 1, annotator 'b'"):
        icc(d.assign(value=[1.0, np.inf, 2.0, 3.0]))


def test_numeric_strings_are_refused_but_object_numbers_accepted():
    d = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3], "annotator": list("ababab"), "value": ["1", "2", "3", "4", "5", "6"]})
    with pytest.raises(ValueError, match="'1'"):
        icc(d)
    ok = d.assign(value=pd.Series([1, 2.5, np.int64(3), 4, None, 6, ], dtype=object))
    assert icc(ok).n_dropped_items == 1


def test_duplicates():
    d = pd.DataFrame({"item": [1, 1, 1, 2, 2, 3, 3], "annotator": list("abbabab"),
                      "value": [1.0, 2.0, 9.0, 3.0, 4.0, 5.0, 5.5]})
    with pytest.raises(ValueError, match="annotator 'b' has 2 values on item 1"):
        icc(d)
    first = icc(d, duplicates="first").table
    expected = icc(d.drop(index=2)).table
    np.testing.assert_allclose(first["icc"], expected["icc"])


def test_too_few_items_and_bad_options():
    with pytest.raises(ValueError, match="at least two items"):
        icc(pd.DataFrame({"item": [1, 1, 2], "annotator": ["a", "b", "a"], "value": [1.0, 2.0, 3.0]}))
    with pytest.raises(ValueError, match="confidence"):
        icc(complete(np.random.default_rng(0), 5, 2), confidence=95)
    with pytest.raises(ValueError, match="lacks column"):
        icc(pd.DataFrame({"item": [1], "rater": ["a"], "value": [1.0]}))

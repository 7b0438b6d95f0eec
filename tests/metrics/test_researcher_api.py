"""The researcher's API (ls_agreement.metrics) takes people's tables: any column names
(pingouin's targets/raters/ratings), NaN as no rating (krippendorff's and pingouin's
reading), wide items × annotators tables; every table function takes the same argument
names, every measure gives ``estimate`` and ``ci``. Checked against pingouin, krippendorff,
scikit-learn and statsmodels."""
from __future__ import annotations

import inspect
import math

import krippendorff
import numpy as np
import pandas as pd
import pingouin
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

import ls_agreement.metrics as m
from ls_agreement.metrics import Box
from ls_agreement.metrics.bootstrap import bca_interval, iter_multiplicities, jackknife_weights

# every public function that takes a table
TABLE_FUNCTIONS = ["agreement", "choose_distance", "krippendorff_alpha", "cohen_kappa", "fleiss_kappa",
                   "cross_kappa", "span_f1_table", "crowdtruth", "icc", "gwet_ac1", "gwet_ac2", "scott_pi",
                   "bennett_s", "per_annotator_bias", "agreement_with_reference", "error_types",
                   "pairwise_agreement", "per_label_agreement", "label_confusion"]
# measures whose results have no sampling interval (documented in docs/design.md)
NO_INTERVAL = {"crowdtruth", "span_f1_table", "error_types", "label_confusion"}
# intervals from the measure's own sampling theory (F and t distributions), no resampling
ANALYTIC = {"icc", "gwet_ac1", "gwet_ac2", "scott_pi", "bennett_s", "per_annotator_bias"}


def _ratings(seed: int, n_items: int = 40, n_raters: int = 4, missing: float = 0.2) -> pd.DataFrame:
    """Wide: items × raters, integer ratings 1..5 around a per-item truth, some cells empty."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, n_items)
    data = np.clip(truth[:, None] + rng.integers(-1, 2, (n_items, n_raters)), 1, 5).astype(float)
    data[rng.random(data.shape) < missing] = np.nan
    data[:, 0] = np.where(np.isnan(data[:, 0]), truth, data[:, 0])   # every item has two ratings
    data[:, 1] = np.where(np.isnan(data[:, 1]), truth, data[:, 1])
    return pd.DataFrame(data, index=[f"i{k:02d}" for k in range(n_items)],
                        columns=[f"r{k}" for k in range(n_raters)])


def test_every_table_function_takes_the_same_names() -> None:
    for name in TABLE_FUNCTIONS:
        params = inspect.signature(getattr(m, name)).parameters
        want = {"item", "annotator", "value", "wide", "duplicates"}
        if name not in NO_INTERVAL:
            want |= {"confidence"} | (set() if name in ANALYTIC else {"bootstrap", "seed"})
        assert want <= set(params), f"{name} lacks {sorted(want - set(params))}"


def test_column_names_nan_and_wide_tables_against_krippendorff() -> None:
    wide = _ratings(1)
    ref = krippendorff.alpha(reliability_data=wide.T.to_numpy(), level_of_measurement="interval")
    assert float(m.krippendorff_alpha(wide, "interval", wide=True)) == pytest.approx(ref, rel=1e-12)
    # the same ratings long, NaN rows kept in (they are no rating), under other column names
    long = wide.rename_axis("unit").reset_index().melt(id_vars="unit", var_name="coder", value_name="score")
    assert long["score"].isna().any()
    got = m.krippendorff_alpha(long, "interval", item="unit", annotator="coder", value="score")
    assert float(got) == pytest.approx(ref, rel=1e-12)
    with pytest.raises(m.BadInput, match="lacks column"):
        m.krippendorff_alpha(long, "interval")          # the default names are not its names


def test_icc_takes_pingouins_arguments_and_gives_its_numbers() -> None:
    wide = _ratings(2, missing=0.0)
    long = wide.rename_axis("targets").reset_index().melt(id_vars="targets", var_name="raters",
                                                          value_name="ratings")
    ours = m.icc(long, item="targets", annotator="raters", value="ratings")
    theirs = pingouin.intraclass_corr(data=long, targets="targets", raters="raters", ratings="ratings")
    # the same six forms in the same order (pingouin names ICC2 "ICC2" or "ICC(A,1)" by version)
    assert ours.table["icc"].to_numpy() == pytest.approx(theirs["ICC"].to_numpy(), rel=1e-9)
    assert ours.estimate == pytest.approx(float(theirs["ICC"].iat[1]), rel=1e-9)
    ci = theirs["CI95%" if "CI95%" in theirs else "CI95"].iat[1]      # rounded to 2 decimals
    assert ours.ci["ICC2"] == pytest.approx(tuple(ci), abs=0.006)
    assert float(m.icc(wide, wide=True).estimate) == pytest.approx(ours.estimate, rel=1e-12)


def _two_raters(seed: int, n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, n)
    rows = [(i, a, int(t if rng.random() < 0.7 else rng.integers(0, 3))) for i, t in enumerate(truth) for a in "xy"]
    return pd.DataFrame(rows, columns=["item", "annotator", "value"])


def _resampled(table: pd.DataFrame, w: np.ndarray) -> pd.DataFrame:
    """The table with item k repeated w[k] times, each copy a new item."""
    parts = []
    for k, times in enumerate(w.astype(int)):
        rows = table[table["item"] == k]
        for c in range(times):
            parts.append(rows.assign(item=f"{k}.{c}"))
    return pd.concat(parts, ignore_index=True)


def _reference_interval(table: pd.DataFrame, coefficient, estimate: float, bootstrap: int, seed: int) -> tuple:
    n = table["item"].nunique()
    samples = [coefficient(_resampled(table, w)) for block in iter_multiplicities(n, bootstrap, seed) for w in block]
    jack = [coefficient(_resampled(table, w)) for block in jackknife_weights(n) for w in block]
    lo, hi = bca_interval(np.array(samples), np.array(jack), estimate, 0.9, n_units=n)
    return min(lo, estimate), max(hi, estimate)


def _sklearn_cohen(t: pd.DataFrame) -> float:
    p = t.pivot(index="item", columns="annotator", values="value")
    return cohen_kappa_score(p["x"], p["y"])


def _statsmodels_fleiss(t: pd.DataFrame) -> float:
    counts = pd.crosstab(t["item"], t["value"]).to_numpy()
    return sm_fleiss(counts)


@pytest.mark.parametrize("measure, reference", [("cohen_kappa", _sklearn_cohen), ("fleiss_kappa", _statsmodels_fleiss)])
def test_kappa_intervals_are_the_bootstrap_of_the_reference_implementation(measure: str, reference) -> None:
    """Every replicate recomputed by scikit-learn / statsmodels on the resampled table:
    the same BCa interval as the vectorized replicates."""
    t = _two_raters(3)
    got = getattr(m, measure)(t, bootstrap=60, seed=5, confidence=0.9)
    assert float(got) == pytest.approx(reference(t), rel=1e-12)
    assert got.estimate == float(got) and set(got.ci) == {measure}
    want = _reference_interval(t, reference, float(got), 60, 5)
    assert got.ci[measure] == pytest.approx(want, rel=1e-9)
    assert getattr(m, measure)(t).ci == {}, "no interval unless asked"


def test_every_measure_gives_estimate_and_ci() -> None:
    wide = _ratings(4)
    long = wide.rename_axis("item").reset_index().melt(id_vars="item", var_name="annotator", value_name="value")
    long = long.dropna()
    cases = {
        "agreement": m.agreement(long, "interval", bootstrap=50),
        "choose_distance": m.choose_distance(long, bootstrap=50),
        "krippendorff_alpha": m.krippendorff_alpha(long, "interval", bootstrap=50),
        "icc": m.icc(long),
        "gwet_ac1": m.gwet_ac1(long),
        "fleiss_kappa": m.fleiss_kappa(long, bootstrap=50),
    }
    for name, res in cases.items():
        assert math.isfinite(res.estimate), name
        assert res.ci and all(len(v) == 2 for v in res.ci.values()), name
    choice = cases["choose_distance"]
    assert choice.estimate == choice.result.alpha and choice.ci == choice.result.ci
    lo, hi = cases["krippendorff_alpha"].ci["alpha"]
    assert lo <= float(cases["krippendorff_alpha"]) <= hi


def test_singular_kind_names_are_read_everywhere() -> None:
    t = pd.DataFrame({"item": [1, 1], "annotator": ["a", "b"],
                      "value": [(Box(0, 0, 10, 10, label="x"),), (Box(1, 1, 10, 10, label="x"),)]})
    assert m.error_types(t, kind="box").kind == m.error_types(t, kind="boxes").kind == "boxes"

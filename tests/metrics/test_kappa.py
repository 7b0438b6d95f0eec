"""Cohen's and Fleiss' κ against paper 002, statsmodels and scikit-learn."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa as sm_fleiss

from ls_agreement.metrics import cohen_kappa, fleiss_kappa, landis_koch

from .conftest import load_json


def two_raters(a, b) -> pd.DataFrame:
    n = len(a)
    return pd.DataFrame({"item": np.r_[np.arange(n), np.arange(n)], "annotator": ["r1"] * n + ["r2"] * n,
                         "value": list(a) + list(b)})


def test_paper_002_two_by_two_table():
    ref = load_json("cohen_kappa_example.json")
    (aa, ab), (ba, bb) = ref["table"]
    r1 = ["a"] * (aa + ab) + ["b"] * (ba + bb)
    r2 = ["a"] * aa + ["b"] * ab + ["a"] * ba + ["b"] * bb
    k = cohen_kappa(two_raters(r1, r2))
    assert float(k) == pytest.approx(ref["published_kappa"], abs=1e-12)
    assert k.details["p_observed"] == pytest.approx(ref["P_o"])
    assert k.details["p_expected"] == pytest.approx(ref["P_e"])
    assert k.band == "fair"


@pytest.mark.parametrize("seed", range(5))
def test_cohen_equals_sklearn(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, 200)
    b = np.where(rng.random(200) < 0.6, a, rng.integers(0, 4, 200))
    assert float(cohen_kappa(two_raters(a, b))) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


def test_cohen_rejects_three_annotators():
    t = pd.DataFrame({"item": [1, 1, 1], "annotator": ["a", "b", "c"], "value": [1, 1, 2]})
    with pytest.raises(ValueError, match="exactly two annotators"):
        cohen_kappa(t)


def long_from_subject_rater(ratings: np.ndarray) -> pd.DataFrame:
    s, r = np.indices(ratings.shape)
    return pd.DataFrame({"item": s.ravel(), "annotator": r.ravel(), "value": ratings.ravel()})


def test_fleiss_example_equals_statsmodels():
    ref = load_json("fleiss_kappa_example.json")
    ratings = np.array(ref["ratings_subject_by_rater"])
    ours = fleiss_kappa(long_from_subject_rater(ratings))
    expected = sm_fleiss(aggregate_raters(ratings)[0])
    assert float(ours) == pytest.approx(expected, abs=1e-12)
    assert float(ours) == pytest.approx(ref["R_irr_kappam_fleiss"], abs=1e-7)
    assert round(float(ours), 2) == ref["published_kappa"]


def test_fleiss_wikipedia_counts():
    ref = load_json("fleiss_kappa_example.json")["wikipedia_example"]
    counts = np.array(ref["count_table_subject_by_category"])
    rows = [(s, f"r{k}", c) for s, row in enumerate(counts) for c, n in enumerate(row)
            for k in range(n)]
    t = pd.DataFrame(rows, columns=["item", "annotator", "value"])
    t["annotator"] = t.groupby("item").cumcount()
    assert float(fleiss_kappa(t)) == pytest.approx(ref["statsmodels_fleiss_kappa"], abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_fleiss_random_equals_statsmodels(seed):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 5, 60)
    ratings = np.where(rng.random((60, 7)) < 0.5, truth[:, None], rng.integers(0, 5, (60, 7)))
    assert float(fleiss_kappa(long_from_subject_rater(ratings))) == pytest.approx(
        sm_fleiss(aggregate_raters(ratings)[0]), abs=1e-12)


@pytest.mark.parametrize("value,band", [(-0.1, "poor"), (0.1, "slight"), (0.3, "fair"), (0.5, "moderate"),
                                        (0.7, "substantial"), (0.9, "almost perfect"), (float("nan"), "undefined")])
def test_landis_koch_bands(value, band):
    assert landis_koch(value) == band

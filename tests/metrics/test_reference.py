"""Agreement with a reference (ground truth, the humans): hand-computed tables, the
``krippendorff`` package on two-rater tables, and a brute-force bootstrap."""
from __future__ import annotations

import json
from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from ls_agreement.metrics import agreement
from ls_agreement.metrics.reference import agreement_with_reference

krippendorff = pytest.importorskip("krippendorff")


def _hand_table() -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = [(1, "a", "x"), (1, "b", "x"), (1, "g", "x"),
            (2, "a", "y"), (2, "b", "x"), (2, "g", "x"),
            (3, "a", "x"), (3, "b", "y"), (3, "g", "y"),
            (4, "a", "x"), (4, "b", "x")]
    t = pd.DataFrame(rows, columns=["item", "annotator", "value"])
    return t, t[t.annotator == "g"]


def test_hand_computed_similarity_and_alpha_against_the_table_chance() -> None:
    t, gt = _hand_table()
    r = agreement_with_reference(t, gt, distance="nominal")
    a = r.annotators
    # g is the reference's author: its own rows are never compared with themselves
    assert list(a.index) == ["a", "b"]
    # a vs GT on items 1-3: distances 0, 1, 1; b: 0, 0, 0
    assert a.loc["a", "similarity"] == pytest.approx(1 / 3) and a.loc["a", "n_items"] == 3
    assert a.loc["b", "similarity"] == 1.0 and a.loc["b", "mean_distance"] == 0.0
    # the table's D_e: 8 x and 3 y values, 8·3 differing pairs of 55
    assert r.d_e == pytest.approx(24 / 55)
    assert agreement(t, "nominal", bootstrap=0).d_e == pytest.approx(24 / 55)
    assert a.loc["a", "alpha"] == pytest.approx(1 - (2 / 3) / (24 / 55))
    assert a.loc["b", "alpha"] == 1.0
    json.dumps(r.to_dict(), allow_nan=False)


def test_pair_chance_is_krippendorff_alpha_of_the_two_rater_table() -> None:
    t, gt = _hand_table()
    r = agreement_with_reference(t, gt, distance="nominal", chance="pair")
    # a: pooled values x, y, x (a) and x, x, y (GT): 4 x, 2 y -> D_e = 8/15
    assert r.annotators.loc["a", "alpha"] == pytest.approx(1 - (2 / 3) / (8 / 15))
    ref = krippendorff.alpha(np.array([[0, 1, 0], [0, 0, 1]], dtype=float), level_of_measurement="nominal")
    assert r.annotators.loc["a", "alpha"] == pytest.approx(ref)


# not ordinal: its distance depends on the value frequencies, which are the control's here and
# the two-rater table's in the package
@pytest.mark.parametrize("level", ["nominal", "interval"])
def test_pair_chance_equals_the_package_on_random_tables(level: str) -> None:
    rng = np.random.default_rng(5)
    rows = [(i, a, int(rng.integers(0, 5))) for i in range(40) for a in "abcdg" if rng.random() < 0.8]
    t = pd.DataFrame(rows, columns=["item", "annotator", "value"])
    gt = t[(t.annotator == "g") & (t.item % 3 != 0)]
    r = agreement_with_reference(t, gt, distance=level, chance="pair")
    wide = t.pivot(index="item", columns="annotator", values="value")
    for a in "abcd":
        two = wide.loc[gt.item, [a, "g"]].dropna()
        expect = krippendorff.alpha(two.T.to_numpy(dtype=float), level_of_measurement=level)
        assert r.annotators.loc[a, "alpha"] == pytest.approx(expect, abs=1e-9)
        assert r.annotators.loc[a, "n_items"] == len(two)
    # the table chance: the engine's D_e, which brute force over all value pairs confirms (nominal)
    rt = agreement_with_reference(t, gt, distance=level)
    if level == "nominal":
        v = t.value.to_numpy()
        pairs = [(x != y) for x, y in combinations(v, 2)]
        assert rt.d_e == pytest.approx(np.mean(pairs))
    assert rt.d_e == pytest.approx(agreement(t, level, bootstrap=0).d_e)


def test_several_reference_values_per_item_are_averaged() -> None:
    # a model against the humans: each item counts once, its distance the mean over humans
    humans = pd.DataFrame([(1, "a", "x"), (1, "b", "x"), (2, "a", "y"), (2, "b", "x"), (3, "a", "y")],
                          columns=["item", "annotator", "value"])
    model = pd.DataFrame([(1, "model:v1", "x"), (2, "model:v1", "x"), (3, "model:v1", "x")],
                         columns=["item", "annotator", "value"])
    r = agreement_with_reference(model, humans, distance="nominal", d_e=0.5)
    rec = r.annotators.loc["model:v1"]
    assert rec["mean_distance"] == pytest.approx((0 + 0.5 + 1) / 3) and rec["n_items"] == 3
    assert rec["alpha"] == pytest.approx(1 - 0.5 / 0.5)


def test_bootstrap_intervals_match_a_brute_force_item_bootstrap() -> None:
    rng = np.random.default_rng(1)
    rows = [(i, a, int(rng.integers(0, 3))) for i in range(25) for a in "abg"]
    t = pd.DataFrame(rows, columns=["item", "annotator", "value"])
    gt = t[t.annotator == "g"]
    r = agreement_with_reference(t, gt, distance="nominal", bootstrap=400, seed=3)
    again = agreement_with_reference(t, gt, distance="nominal", bootstrap=400, seed=3)
    pd.testing.assert_frame_equal(r.annotators, again.annotators)
    for a in "ab":
        rec = r.annotators.loc[a]
        assert rec["similarity_ci_low"] <= rec["similarity"] <= rec["similarity_ci_high"]
        assert rec["alpha_ci_low"] <= rec["alpha"] <= rec["alpha_ci_high"]
        # brute force: resample items, recompute the mean similarity by hand
        d = (t[t.annotator == a].set_index("item").value != gt.set_index("item").value).astype(float)
        boots = [1 - d.to_numpy()[rng.integers(0, 25, 25)].mean() for _ in range(4000)]
        lo, hi = np.quantile(boots, [0.025, 0.975])
        # BCa with the expanded level is a little wider than the plain percentile interval
        assert rec["similarity_ci_low"] == pytest.approx(lo, abs=0.08)
        assert rec["similarity_ci_high"] == pytest.approx(hi, abs=0.08)


def test_unbounded_distance_has_no_similarity_and_bad_options_are_refused() -> None:
    t, _ = _hand_table()
    n = t.assign(value=t.value.map({"x": 1.0, "y": 3.0}))
    r = agreement_with_reference(n, n[n.annotator == "g"], distance="interval")
    assert r.annotators["similarity"].isna().all() and not r.bounded
    assert np.isfinite(r.annotators["alpha"]).all()
    with pytest.raises(ValueError, match="chance"):
        agreement_with_reference(t, t, chance="other")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="bootstrap"):
        agreement_with_reference(t, t, bootstrap=-1)

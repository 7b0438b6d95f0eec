"""The annotator × annotator matrix against α computed on each two-annotator sub-table alone."""
from __future__ import annotations

import itertools

import krippendorff
import numpy as np
import pandas as pd
import pytest

from ls_agreement.metrics import agreement
from ls_agreement.metrics.pair_bootstrap import _resampled_sums
from ls_agreement.metrics.pair_matrix import combine_pairwise, pairwise_agreement


def _table(seed: int = 1, n_items: int = 60, n_ann: int = 6) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for it in range(n_items):
        truth = "xyz"[it % 3]
        for a in rng.choice(n_ann, size=rng.integers(2, 5), replace=False):
            noisy = rng.random() < 0.2 + 0.1 * a
            rows.append((it, f"u{a}", str(rng.choice(list("xyz"))) if noisy else truth))
    return pd.DataFrame(rows, columns=["item", "annotator", "value"])


def _sub_tables(t: pd.DataFrame):
    for a, b in itertools.combinations(sorted(t["annotator"].unique()), 2):
        sub = t[t["annotator"].isin([a, b])]
        wide = sub.pivot(index="annotator", columns="item", values="value")
        yield a, b, wide.loc[:, wide.notna().sum() == 2]


def _brute_alpha(values: np.ndarray, delta) -> tuple[float, float]:
    """Canonical α of a 2 × N table by enumerating every pair of its 2N values: (D̂o, D̂e)."""
    flat = values.T.ravel()
    n = flat.size
    d_o = float(np.mean([delta(x, y) for x, y in values.T]))
    total = sum(delta(flat[r], flat[s]) for r in range(n) for s in range(r + 1, n))
    return d_o, 2.0 * total / (n * (n - 1))


@pytest.mark.parametrize("level", ["nominal", "interval"])
def test_pair_expected_equals_krippendorff_on_each_sub_table(level: str) -> None:
    t = _table()
    if level == "interval":
        t["value"] = t["value"].map({"x": 1.0, "y": 2.5, "z": 4.0})
    r = pairwise_agreement(t, level, expected="pair", min_items=2, bootstrap=0)
    got = {(row.annotator_a, row.annotator_b): row for row in r.table.itertuples()}
    seen = 0
    for a, b, wide in _sub_tables(t):
        if wide.shape[1] < 2:
            continue
        data = (wide.apply(lambda c: c.map({"x": 0, "y": 1, "z": 2})) if level == "nominal" else wide).to_numpy(float)
        ref = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        row = got[(a, b)]
        assert row.n_items == wide.shape[1]
        assert row.alpha == pytest.approx(ref, abs=1e-12)
        seen += 1
    assert seen == len(r.table) == 15


def test_pair_expected_with_a_general_distance_equals_brute_force() -> None:
    t = _table(seed=3)
    t["value"] = t["value"].map(lambda v: frozenset({v, "w"} if v == "x" else {v}))

    def jaccard(x, y):
        return 1.0 - len(x & y) / len(x | y)

    for form in ("canonical", "pairwise"):
        r = pairwise_agreement(t, "sets.jaccard", expected="pair", form=form, min_items=2, bootstrap=0)
        got = {(row.annotator_a, row.annotator_b): row for row in r.table.itertuples()}
        for a, b, wide in _sub_tables(t):
            values = wide.to_numpy()
            d_o, d_e = _brute_alpha(values, jaccard)
            if form == "pairwise":
                n = values.size
                within = d_o * values.shape[1]
                d_e = (d_e * n * (n - 1) / 2 - within) / (n * (n - 1) / 2 - values.shape[1])
            assert got[(a, b)].mean_distance == pytest.approx(d_o, abs=1e-12)
            assert got[(a, b)].alpha == pytest.approx(1 - d_o / d_e, abs=1e-12)


def test_project_expected_reads_every_pair_against_the_table_d_e() -> None:
    t = _table()
    res = agreement(t, "nominal", bootstrap=0)
    r = pairwise_agreement(t, "nominal", min_items=1, bootstrap=0)
    assert r.d_e == pytest.approx(res.d_e)
    for a, b, wide in _sub_tables(t):
        row = r.table[(r.table.annotator_a == a) & (r.table.annotator_b == b)].iloc[0]
        d_o = float(np.mean(wide.iloc[0].to_numpy() != wide.iloc[1].to_numpy()))
        assert row.mean_distance == pytest.approx(d_o)
        assert row.alpha == pytest.approx(1 - d_o / res.d_e)
    # from the engine's result: the same table, nothing measured again
    again = pairwise_agreement(None, res, min_items=1, bootstrap=0)
    pd.testing.assert_frame_equal(again.table, r.table)


def test_matrix_is_symmetric_and_min_items_and_cap_apply() -> None:
    t = _table(n_items=80, n_ann=8)
    r = pairwise_agreement(t, "nominal", min_items=15, max_annotators=5, bootstrap=0)
    m = r.matrix()
    assert np.allclose(m.to_numpy(), m.to_numpy().T, equal_nan=True)
    assert (r.table["n_items"] >= 15).all()
    assert len(r.left_out) == 3 and r.n_annotators == 8
    counts = t["annotator"].value_counts()
    # the least active are left out
    assert min(counts[a] for a in set(counts.index) - set(r.left_out)) >= max(counts[a] for a in r.left_out)
    assert not set(r.annotators) & set(r.left_out)


def test_intervals_contain_estimates_and_are_seeded() -> None:
    t = _table(n_items=120)
    a = pairwise_agreement(t, "nominal", bootstrap=300, seed=4)
    b = pairwise_agreement(t, "nominal", bootstrap=300, seed=4)
    pd.testing.assert_frame_equal(a.table, b.table)
    ok = a.table.dropna(subset=["ci_low"])
    assert len(ok) >= len(a.table) - 1
    assert ((ok.ci_low <= ok.alpha) & (ok.alpha <= ok.ci_high)).all()


@pytest.mark.parametrize("values", [np.array([0.0, 1.0, 4.0, 9.0]), np.linspace(0, 1, 97)])
def test_resampled_sums_match_the_bootstrap_moments(values: np.ndarray) -> None:
    """Both draws (per distinct distance, per item) give sums with mean N·mean and variance N·var."""
    rng = np.random.default_rng(0)
    d = rng.choice(values, size=300)
    pair = np.repeat([0, 1, 2], [50, 100, 150])
    sums = _resampled_sums(d, pair, 3, 20000, np.random.default_rng(1))
    for p, n in enumerate((50, 100, 150)):
        x = d[pair == p]
        assert sums[:, p].mean() == pytest.approx(n * x.mean(), rel=0.01)
        assert sums[:, p].var() == pytest.approx(n * x.var(), rel=0.06)


def test_combine_weights_controls_by_shared_items() -> None:
    t1 = pd.DataFrame({"annotator_a": ["a"], "annotator_b": ["b"], "n_items": [10], "alpha": [0.5]})
    t2 = pd.DataFrame({"annotator_a": ["a", "a"], "annotator_b": ["b", "c"], "n_items": [30, 5],
                       "alpha": [0.9, np.nan]})
    g = combine_pairwise({"x": t1, "y": t2})
    ab = g[(g.annotator_a == "a") & (g.annotator_b == "b")].iloc[0]
    assert ab.alpha == pytest.approx((10 * 0.5 + 30 * 0.9) / 40) and ab.n_items == 40 and ab.n_controls == 2
    assert np.isnan(g[g.annotator_b == "c"].iloc[0].alpha)


def test_bad_options_are_refused() -> None:
    t = _table()
    for kw in ({"expected": "items"}, {"min_items": 0}, {"max_annotators": 1}, {"confidence": 1.0},
               {"bootstrap": -1}):
        with pytest.raises(ValueError):
            pairwise_agreement(t, "nominal", **kw)


def test_result_convention() -> None:
    import dataclasses
    import json

    from ls_agreement.metrics import Result

    r = pairwise_agreement(_table(), "nominal", bootstrap=20)
    assert isinstance(r, Result)
    json.dumps(r.to_dict(), allow_nan=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.d_e = 0.0
    with pytest.raises(AttributeError, match="no single point estimate"):
        r.estimate

"""κx (paper 001): Cohen's κ special case, simulation properties, linear-time d_e vs brute force."""

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from ls_agreement.metrics.cross_kappa import cross_kappa


def _long(values, prefix, items=None):
    """values: (n_items, n_raters) with NaN = missing."""
    rows = [(i if items is None else items[i], f"{prefix}{r}", v)
            for i, row in enumerate(values) for r, v in enumerate(row) if not pd.isna(v)]
    return pd.DataFrame(rows, columns=["item", "annotator", "value"])


def _population(n_items, raters, rng, truth, p=0.6, k=4):
    keep = rng.random((n_items, raters)) < p
    noise = rng.integers(0, k, (n_items, raters))
    return np.where(keep, truth[:, None], noise)


def test_equals_cohen_kappa():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 5, 400)
    b = np.where(rng.random(400) < 0.5, a, rng.integers(0, 5, 400))
    r = cross_kappa(_long(a[:, None], "x"), _long(b[:, None], "y"), bootstrap=0)
    assert r.kappa_x == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


def test_normalized_is_one_for_two_samples_of_one_population():
    rng = np.random.default_rng(1)
    truth = rng.integers(0, 4, 600)
    x, y = _population(600, 3, rng, truth), _population(600, 3, rng, truth)
    r = cross_kappa(_long(x, "x"), _long(y, "y"), bootstrap=300, seed=2)
    lo, hi = r.ci["normalized"]
    assert lo <= 1.0 <= hi
    assert r.ci["kappa_x"][0] <= r.kappa_x <= r.ci["kappa_x"][1]


def test_irr_is_krippendorff_alpha():
    rng = np.random.default_rng(4)
    truth = rng.integers(0, 4, 80)
    x = _population(80, 4, rng, truth).astype(float)
    x[rng.random(x.shape) < 0.2] = np.nan
    y = _population(80, 2, rng, truth)
    for level in ("nominal", "ordinal", "interval"):
        r = cross_kappa(_long(x, "x"), _long(y, "y"), level, bootstrap=0)
        kept = x[(~np.isnan(x)).sum(axis=1) > 0]
        assert r.irr_x == pytest.approx(krippendorff.alpha(reliability_data=kept.T, level_of_measurement=level),
                                        abs=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_never_exceeds_larger_irr_and_symmetric(seed):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, 300)
    x = _population(300, 3, rng, truth, p=rng.uniform(0.2, 0.9), k=3)
    y = _population(300, 2, rng, truth, p=rng.uniform(0.2, 0.9), k=3)
    tx, ty = _long(x, "x"), _long(y, "y")
    r, s = cross_kappa(tx, ty, bootstrap=0), cross_kappa(ty, tx, bootstrap=0)
    assert r.kappa_x <= max(r.irr_x, r.irr_y) + 0.02
    assert r.kappa_x == pytest.approx(s.kappa_x, abs=1e-12)
    assert (r.irr_x, r.irr_y) == pytest.approx((s.irr_y, s.irr_x))


def _brute(x, y, dist):
    """Paper 001 eqs. 9-11 literally: every cross pair, item weights (R(i)+S(i))/(R+S)."""
    items = sorted(set(x) & set(y))
    R = sum(len(x[i]) for i in items)
    S = sum(len(y[i]) for i in items)
    d_o = sum((len(x[i]) + len(y[i])) / (R + S) * np.mean([dist(a, b) for a in x[i] for b in y[i]])
              for i in items)
    d_e = sum(dist(a, b) for i in items for j in items for a in x[i] for b in y[j]) / (R * S)
    return d_o, d_e


@pytest.mark.parametrize("level,dist", [("nominal", lambda a, b: float(a != b)),
                                        ("interval", lambda a, b: float(a - b) ** 2)])
def test_linear_time_d_e_equals_brute_force(level, dist):
    rng = np.random.default_rng(5)
    for _ in range(5):
        x = {i: list(rng.integers(0, 5, rng.integers(1, 4))) for i in range(12)}
        y = {i: list(rng.integers(0, 5, rng.integers(1, 3))) for i in range(3, 15)}
        tx = pd.DataFrame([(i, f"x{k}", v) for i, vs in x.items() for k, v in enumerate(vs)],
                          columns=["item", "annotator", "value"])
        ty = pd.DataFrame([(i, f"y{k}", v) for i, vs in y.items() for k, v in enumerate(vs)],
                          columns=["item", "annotator", "value"])
        r = cross_kappa(tx, ty, level, bootstrap=0)
        d_o, d_e = _brute(x, y, dist)
        assert r.d_o == pytest.approx(d_o, abs=1e-12) and r.d_e == pytest.approx(d_e, abs=1e-12)
        # a generic callable distance (pair path, exact d_e on small data) agrees as well
        g = cross_kappa(tx, ty, dist, bootstrap=50)
        assert g.kappa_x == pytest.approx(r.kappa_x, abs=1e-12) and g.expected_exact


def test_bad_input_is_named():
    t = pd.DataFrame({"item": [1, 1], "annotator": ["a", "a"], "value": [0, 1]})
    with pytest.raises(ValueError, match="table_x: annotator .a. has 2 values on item 1"):
        cross_kappa(t, t)
    u = pd.DataFrame({"item": [9], "annotator": ["b"], "value": [0]})
    with pytest.raises(ValueError, match="share no item"):
        cross_kappa(t.iloc[:1], u)

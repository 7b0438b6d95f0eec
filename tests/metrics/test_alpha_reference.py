"""Krippendorff's α against the `krippendorff` package and the published example."""
from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ls_agreement.metrics import krippendorff_alpha

from .conftest import load_json, matrix_to_long

LEVELS = ["nominal", "ordinal", "interval", "ratio"]


@pytest.mark.parametrize("level", LEVELS)
def test_canonical_example_published_values(level):
    ref = load_json("kalpha_canonical.json")
    rd = np.array(ref["reliability_data"], dtype=float)
    a = krippendorff_alpha(matrix_to_long(rd), level)
    assert round(float(a), 3) == ref["published_alpha"][level]
    assert float(a) == pytest.approx(krippendorff.alpha(rd, level_of_measurement=level), abs=1e-9)
    assert a.band in {"substantial", "almost perfect"}


@st.composite
def reliability_data(draw):
    n_ann = draw(st.integers(2, 5))
    n_items = draw(st.integers(2, 12))
    n_vals = draw(st.integers(2, 6))
    vals = draw(st.lists(st.integers(1, n_vals), min_size=n_ann * n_items, max_size=n_ann * n_items))
    miss = draw(st.lists(st.booleans(), min_size=n_ann * n_items, max_size=n_ann * n_items))
    rd = np.array(vals, dtype=float).reshape(n_ann, n_items)
    rd[np.array(miss).reshape(n_ann, n_items) & (np.arange(n_ann)[:, None] > 1)] = np.nan
    return rd


@pytest.mark.parametrize("level", LEVELS)
@settings(max_examples=60, deadline=None)
@given(rd=reliability_data())
def test_equals_krippendorff_package(level, rd):
    t = matrix_to_long(rd)
    pairable = t.groupby("item")["value"].transform("size") >= 2
    if not pairable.any():
        with pytest.raises(ValueError, match="pairable"):
            krippendorff_alpha(t, level)
        return
    ours = krippendorff_alpha(t, level)
    if t.loc[pairable, "value"].nunique() < 2:
        assert np.isnan(float(ours)) and ours.band == "undefined"  # no variation: α undefined
        return
    assert float(ours) == pytest.approx(krippendorff.alpha(rd, level_of_measurement=level), abs=1e-9)


@pytest.mark.parametrize("level", ["interval", "ratio"])
def test_continuous_values_with_missing(level):
    rng = np.random.default_rng(3)
    rd = rng.gamma(2.0, 3.0, size=(4, 60)) + np.arange(60) * 0.05
    rd[rng.random(rd.shape) < 0.2] = np.nan
    ours = krippendorff_alpha(matrix_to_long(rd), level)
    assert float(ours) == pytest.approx(krippendorff.alpha(rd, level_of_measurement=level), abs=1e-9)


def test_callable_distance_equals_level():
    rng = np.random.default_rng(5)
    rd = rng.integers(1, 6, size=(3, 40)).astype(float)
    t = matrix_to_long(rd)
    ours = krippendorff_alpha(t, lambda a, b: (a - b) ** 2, expected_pairs="all")
    assert float(ours) == pytest.approx(krippendorff.alpha(rd, level_of_measurement="interval"), abs=1e-9)

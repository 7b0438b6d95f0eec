"""KS and σ against scipy's own KS test and KDE, and against paper 000's exact arrays."""
from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import gaussian_kde, ks_2samp

from ls_agreement.metrics import ks_score, ks_statistic, sigma_score, sigma_threshold

from .conftest import DATA


def direct_sigma(do: np.ndarray, de: np.ndarray, p: float) -> float:
    """σ the slow way: evaluate the KDE mass on [0, d] at every observed point."""
    kde = gaussian_kde(de)
    mass = np.array([kde.integrate_box_1d(0.0, d) for d in do])
    return float(np.mean(mass < p))


@pytest.mark.parametrize("seed", range(8))
def test_sigma_threshold_equals_direct_kde(seed):
    rng = np.random.default_rng(seed)
    de = rng.gamma(2.0 + seed, 1.0, size=300 + 50 * seed)
    do = rng.gamma(1.0, 1.0 + 0.3 * seed, size=400)
    p = [0.05, 0.01, 0.1, 0.2][seed % 4]
    ours = sigma_score(do, sigma_threshold(de, p))
    assert ours == pytest.approx(direct_sigma(do, de, p), abs=1e-9)


def test_sigma_weights_equal_expanded_sample():
    rng = np.random.default_rng(1)
    values = rng.uniform(0, 3, size=25)
    counts = rng.integers(1, 20, size=25)
    expanded = np.repeat(values, counts)
    assert sigma_threshold(values, 0.05, weights=counts) == pytest.approx(sigma_threshold(expanded, 0.05), rel=1e-12)
    do = rng.uniform(0, 3, size=50)
    assert ks_score(do, values, counts) == pytest.approx(ks_score(do, expanded), rel=1e-12)
    assert ks_statistic(do, values, counts) == pytest.approx(ks_statistic(do, expanded), rel=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_ks_equals_scipy_one_point_tests(seed):
    rng = np.random.default_rng(seed)
    de = np.round(rng.normal(3, 1, size=800), 1)  # ties on purpose
    do = np.round(rng.normal(2, 1, size=60), 1)
    scipy_ks = np.mean([1 - ks_2samp([d], de, alternative="greater").pvalue for d in do])
    assert ks_score(do, de) == pytest.approx(scipy_ks, abs=1e-9)


def test_ks_scipy_method_asymptotic_branch():
    rng = np.random.default_rng(7)
    de = rng.normal(3, 1, size=12000)
    do = rng.normal(2, 1, size=30)
    scipy_ks = np.mean([1 - ks_2samp([d], de, alternative="greater").pvalue for d in do])
    assert ks_score(do, de, method="scipy") == pytest.approx(scipy_ks, abs=1e-9)
    brute = np.mean([(de > d).sum() / (de.size + 1) for d in do])  # measures.md §3, counted
    assert ks_score(do, de, method="exact") == pytest.approx(brute, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_ks_statistic_equals_scipy(seed):
    rng = np.random.default_rng(seed)
    de = np.round(rng.normal(3, 1, size=500), 1)
    do = np.round(rng.normal(2.5, 1, size=120), 1)
    assert ks_statistic(do, de) == pytest.approx(ks_2samp(do, de, alternative="greater").statistic, abs=1e-12)


def test_degenerate_expected_point_mass():
    de = np.full(100, 2.0)
    assert sigma_threshold(de, 0.05) == 2.0
    assert sigma_score(np.array([1.0, 2.0, 3.0]), 2.0) == pytest.approx(1 / 3)


BRAYLAN_FILES = sorted((DATA / "braylan" / "distances").glob("*.json"))


@pytest.mark.parametrize("path", BRAYLAN_FILES, ids=lambda p: p.stem)
def test_paper_000_measures_on_authors_arrays(path):
    """α, KS (Table 1's form) and σ on exactly the arrays paper 000's code used."""
    ref = json.loads(path.read_text())
    do, de = np.array(ref["observed"]), np.array(ref["expected"])
    assert 1 - do.mean() / de.mean() == pytest.approx(ref["alpha"], abs=1e-9)
    assert ks_score(do, de, method="scipy") == pytest.approx(ref["ks"], abs=1e-6)
    assert ks_statistic(do, de) == pytest.approx(ref["ks_stat_fast"], abs=1e-9)
    assert sigma_score(do, sigma_threshold(de, 0.05)) == pytest.approx(ref["sigma"], abs=1e-9)

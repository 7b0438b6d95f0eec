"""The parts behind each bootstrap replicate: the σ threshold at extreme p, the kernel mass,
the Taylor solve of a replicate's cut, and the BCa interval (vectorised and expanded)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.special import erfinv, log_ndtr, ndtr, ndtri
from scipy.stats import norm

from ls_agreement.metrics import agreement, sigma_threshold
from ls_agreement.metrics.bootstrap_cutoffs import Cutoffs
from ls_agreement.metrics.bootstrap_measures import Replicates
from ls_agreement.metrics.distributional import kernel_mass
from tests.metrics.test_bootstrap_edge import _count_taylor_solves, _shown_or_explained, continuous_table, scalar_table


@pytest.mark.parametrize("p", [0.05, 1e-6, 1e-9, 1e-20, 1e-100, 1e-300])
def test_sigma_threshold_at_extreme_p_against_closed_forms(p):
    h = 0.3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        at_zero = sigma_threshold(np.array([0.0]), p, bandwidth=h)        # F(d) = erf(d / (h√2)) / 2
        far = sigma_threshold(np.array([60 * h]), p, bandwidth=h)         # F(d) = Φ((d − 60h)/h) (Φ(−60) ≈ 0)
    assert at_zero == pytest.approx(h * math.sqrt(2.0) * erfinv(2.0 * p), rel=1e-9 if p < 1e-6 else 1e-7)
    assert far == pytest.approx(60 * h + h * ndtri(p), rel=1e-12)


def test_p_below_float_resolution_is_a_clean_error_and_1e300_a_clean_result():
    table = scalar_table(40, np.random.default_rng(3), np.arange(1, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = agreement(table, "interval", p=1e-300, bootstrap=200)
    assert 0.0 < res.threshold < 1e-250 and math.isfinite(res.sigma)
    assert res.sigma == pytest.approx(np.mean(res.observed == 0.0))   # only exact agreement is that close
    _shown_or_explained(res)
    with pytest.raises(ValueError, match="p must be at least 1e-300"):
        agreement(table, "interval", p=1e-301, bootstrap=0)
    with pytest.raises(ValueError, match="p must be at least"):
        sigma_threshold(np.array([0.0, 1.0, 2.0]), 5e-324)


def test_kernel_mass_has_no_cancellation():
    rng = np.random.default_rng(0)
    h = 0.7
    x = rng.uniform(0, 30, 2000)
    d = rng.uniform(0, 30, 2000)
    naive = ndtr((d - x) / h) - ndtr(-x / h)
    ok = naive > 1e-6                           # where the plain difference is itself accurate
    np.testing.assert_allclose(kernel_mass(d, x, h)[ok], naive[ok], rtol=1e-9)
    # far left tail, the log form is exact there: Φ(a)(1 − Φ(b)/Φ(a))
    a = -rng.uniform(5, 35, 500)
    t = rng.uniform(0.6, 3.0, 500)
    ref = np.exp(log_ndtr(a)) * -np.expm1(log_ndtr(a - t) - log_ndtr(a))
    np.testing.assert_allclose(kernel_mass(t * h, (t - a) * h, h), ref, rtol=1e-12)
    # a sliver far in the tail: ∫ φ over [a − t, a] ≈ t φ(a) for t → 0
    a = -rng.uniform(5, 35, 500)
    t = 10.0 ** -rng.uniform(10, 200, 500)
    ref = t * norm.pdf(a)
    normal = ref > 1e-290                       # subnormal results carry fewer digits
    np.testing.assert_allclose(kernel_mass(t * h, (t - a) * h, h)[normal], ref[normal], rtol=1e-7)


def test_taylor_solve_equals_probing_every_level(monkeypatch):
    """Many observed levels under a wide kernel (a continuous scale, 3,000 tasks): the Taylor
    solve the engine picks gives the same cut, replicate by replicate, as the exact KDE mass
    evaluated at every observed level of every open bracket."""
    table = continuous_table(3000, np.random.default_rng(6))
    calls = _count_taylor_solves(monkeypatch)
    monkeypatch.setattr(Cutoffs, "_ALL_LEVELS", 16)     # what larger projects meet by default
    rep = Replicates.from_table(table, "interval", seed=1)
    n = rep.n_items
    w = np.random.default_rng(2).multinomial(n, np.full(n, 1.0 / n), size=100).astype(float)
    fast = rep(w)["sigma"]
    assert calls and np.unique(fast).size > 20
    monkeypatch.setattr(Cutoffs, "_ALL_LEVELS", 10 ** 9)
    calls.clear()
    exhaustive = rep(w)["sigma"]
    assert not calls
    np.testing.assert_array_equal(fast, exhaustive)


def test_expanded_bca_levels_follow_the_t_correction():
    """With n resampled items the interval's quantile levels are those of
    ``± sqrt(n/(n−1)) · t_{n−1}``: a normal bootstrap distribution gives that interval."""
    from scipy.stats import t as student_t

    from ls_agreement.metrics.bootstrap import bca_interval, expanded_level

    for n in (3, 8, 30, 100, 10_000):
        z = math.sqrt(n / (n - 1)) * student_t.ppf(0.975, n - 1)
        assert expanded_level(0.95, n) == pytest.approx(1 - 2 * norm.sf(z), rel=1e-12)
    assert expanded_level(0.95, None) == expanded_level(0.95, 1) == 0.95
    draws = norm.ppf((np.arange(200_000) + 0.5) / 200_000)          # a symmetric bootstrap distribution
    for n in (8, 100):
        lo, hi = bca_interval(draws, np.zeros(5), 0.0, 0.95, n_units=n)
        half = math.sqrt(n / (n - 1)) * student_t.ppf(0.975, n - 1)
        assert (lo, hi) == pytest.approx((-half, half), abs=2e-3)


def test_bca_intervals_equal_bca_interval_column_by_column():
    """The vectorised BCa over many statistics (one per annotator) gives bca_interval's bounds."""
    from ls_agreement.metrics.bootstrap import bca_interval, bca_intervals

    rng = np.random.default_rng(7)
    k = 60
    boot = rng.normal(size=(400, k)) ** 3
    boot[:, 5] = 0.25                                   # all tied with the estimate below
    boot[rng.random((400, k)) < 0.1] = np.nan           # undefined replicates
    boot[:, 7] = np.nan                                 # nothing defined
    boot[:, 9] = np.round(boot[:, 9])                   # discrete: ties
    jack = rng.normal(size=(25, k))
    jack[:, 11] = np.nan
    jack[:3, 12] = np.nan
    est = rng.normal(size=k)
    est[5] = 0.25
    est[13] = np.nan
    est[14] = 1e6                                       # beyond every replicate
    units = rng.integers(1, 40, size=k)
    got = bca_intervals(boot, jack, est, 0.9, n_units=units)
    for c in range(k):
        want = bca_interval(boot[:, c], jack[:, c], float(est[c]), 0.9, n_units=int(units[c]))
        np.testing.assert_allclose(got[c], want, rtol=1e-12, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("n_rows, n_cols, n", [(1, 500, 3000), (7, 40, 2000), (30, 2000, 500), (3, 5, 0)])
def test_incidence_matrix_is_scipys_coo_sum_in_canonical_form(n_rows, n_cols, n):
    """The replicates' incidence maps (built from sorted cell keys where the grid is small)
    against scipy's own COO constructor: the same entries, duplicates summed, and the same
    canonical layout (sorted columns, no duplicates), so every sparse product sums in the
    same order as before."""
    from scipy import sparse

    from ls_agreement.metrics.bootstrap_measures import _incidence

    rng = np.random.default_rng(n_rows * 1000 + n)
    row, col = rng.integers(0, n_rows, n), rng.integers(0, n_cols, n)
    data = rng.integers(1, 5, n).astype(float)
    for weights in (None, data):
        got = _incidence(row, col, n_rows, n_cols, weights)
        want = sparse.csr_matrix((np.ones(n) if weights is None else weights, (row, col)), shape=(n_rows, n_cols))
        want.sum_duplicates()
        assert got.shape == want.shape and got.has_canonical_format
        assert np.array_equal(got.indptr, want.indptr) and np.array_equal(got.indices, want.indices)
        assert np.array_equal(got.data, want.data)


def test_sparse_maps_of_whole_entries_multiply_exactly_in_float32():
    """A sparse map of whole entries is multiplied in float32 when whole weights keep every
    partial sum under 2^24: the same numbers as float64 (scipy's product), bit for bit; with
    weights that are not whole, or sums past 2^24, the float64 product is taken."""
    from ls_agreement.metrics.bootstrap_measures import _Linear

    rng = np.random.default_rng(4)
    n_items, k = 3000, 500
    item, col = rng.integers(0, n_items, 20000), rng.integers(0, k, 20000)
    data = rng.integers(1, 4, item.size).astype(float)
    m = _Linear(n_items).add(item, col, k, data)
    assert m.mt is not None and m.mt32 is not None
    mt = m.mt
    want = lambda w: np.asarray(mt @ w)      # noqa: E731
    whole = rng.multinomial(n_items, np.full(n_items, 1 / n_items), size=40).T.astype(float)
    assert np.array_equal(m(whole), want(whole))
    for w in (whole + 0.5, whole * 2.0 ** 20):      # not whole; sums past 2^24
        got = m(w)
        assert got.dtype == np.float64 and np.array_equal(got, want(w))

    # the float32 product is the one taken for whole weights, the float64 one else
    class Untouched:
        def __matmul__(self, other):
            raise AssertionError("the float64 product was taken")

    m.mt = Untouched()
    assert np.array_equal(m(whole), want(whole))
    with pytest.raises(AssertionError, match="float64"):
        m(whole + 0.5)


@pytest.mark.parametrize("tabulated", [True, False])
@pytest.mark.parametrize("elems", [1, 2_000, 1_000_000])
def test_intervals_do_not_depend_on_how_many_replicates_a_block_holds(monkeypatch, elems, tabulated):
    """The replicates are drawn a block at a time (memory, issue 24): blocks of one or two
    replicates (the floor of replicates a block applies), of a few and of all 200 draw the
    same multiplicities and give the same intervals to float rounding (a product over a
    block of another width may add in another order), per annotator too; with chance
    tabulated from value counts and read from chance pairs."""
    import ls_agreement.metrics.bootstrap_measures as bm

    rng = np.random.default_rng(5)
    table = scalar_table(40, rng, np.arange(1.0, 6.0), m=4) if tabulated else continuous_table(40, rng, m=4)
    want = agreement(table, "interval", bootstrap=200, seed=3)
    monkeypatch.setattr(bm, "_REPLICATE_ELEMS", elems)
    monkeypatch.setattr(bm, "_MIN_REPLICATES", 2 if elems == 1 else 1)
    got = agreement(table, "interval", bootstrap=200, seed=3)
    assert got.ci.keys() == want.ci.keys()
    for name, bounds in want.ci.items():
        np.testing.assert_allclose(got.ci[name], bounds, rtol=1e-12, atol=1e-14)
    for col in ("sigma_ci_low", "sigma_ci_high", "alpha_ci_low", "alpha_ci_high"):
        np.testing.assert_allclose(got.per_annotator[col].to_numpy(), want.per_annotator[col].to_numpy(),
                                   rtol=1e-12, atol=1e-14)

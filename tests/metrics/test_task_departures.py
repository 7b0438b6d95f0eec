"""Each annotator's share of departing tasks (metrics/task_departures.py): the posterior is
Bayes' rule on the pooled ratio; the fitted shares recover the shares of a simulated
mixture, sit beside the exact posterior mean (quadrature), and each annotator's is what
they would get fitted alone."""
from __future__ import annotations

import numpy as np
import pytest

from ls_agreement.metrics.task_departures import PRIOR, departs_posterior, fit_departing_shares


def _mixture(rng: np.random.Generator, n: int, share: float, mu: float = 2.0) -> np.ndarray:
    """Log ratios of ``n`` tasks, departing with probability ``share``: each task's evidence
    a Gaussian draw whose log ratio is exact (log N(x; mu, 1) − log N(x; 0, 1))."""
    departs = rng.random(n) < share
    x = rng.normal(np.where(departs, mu, 0.0), 1.0)
    return mu * x - mu * mu / 2


def test_posterior_is_bayes_rule() -> None:
    share, lr = np.array([0.2, 0.7, 0.05]), np.array([-3.0, 0.0, 2.5])
    want = share * np.exp(lr) / (share * np.exp(lr) + 1 - share)
    assert departs_posterior(lr, share) == pytest.approx(want, rel=1e-12)


def test_shares_recovered_from_known_mixtures() -> None:
    """Three annotators departing on 80 %, 5 % and 30 % of their tasks."""
    rng = np.random.default_rng(3)
    truth = [0.8, 0.05, 0.3]
    xs = [_mixture(rng, 3000, s) for s in truth]
    code = np.concatenate([np.full(x.size, k) for k, x in enumerate(xs)])
    got = fit_departing_shares(np.concatenate(xs), code)
    assert got == pytest.approx(truth, abs=0.03)


def test_the_fixed_point_is_near_the_exact_posterior_mean() -> None:
    """The variational mean against the exact posterior mean of δ under the Beta prior
    (likelihood Π_t (δ LR_t + 1 − δ), integrated on a fine grid), on a small project."""
    rng = np.random.default_rng(11)
    x = _mixture(rng, 150, 0.35)
    got = float(fit_departing_shares(x, np.zeros(x.size, dtype=np.int64))[0])
    grid = np.linspace(1e-6, 1 - 1e-6, 100_001)
    a, b = PRIOR
    log_post = ((a - 1) * np.log(grid) + (b - 1) * np.log1p(-grid)
                + np.log(grid[:, None] * np.exp(x) + 1 - grid[:, None]).sum(axis=1))
    w = np.exp(log_post - log_post.max())
    exact = float((w * grid).sum() / w.sum())
    assert got == pytest.approx(exact, abs=0.01)
    # and it is the fixed point it claims: δ = (a + Σ posterior) / (n + a + b)
    assert got == pytest.approx((a + departs_posterior(x, np.full(x.size, got)).sum()) / (x.size + a + b), abs=1e-8)


def test_each_annotator_as_if_fitted_alone() -> None:
    rng = np.random.default_rng(5)
    xs = [_mixture(rng, n, s) for n, s in ((40, 0.6), (500, 0.1), (7, 0.0))]
    code = np.concatenate([np.full(x.size, k) for k, x in enumerate(xs)])
    order = rng.permutation(code.size)                      # rows in any order
    together = fit_departing_shares(np.concatenate(xs)[order], code[order])
    alone = [float(fit_departing_shares(x, np.zeros(x.size, dtype=np.int64))[0]) for x in xs]
    assert together == pytest.approx(alone, abs=1e-7)


def test_no_evidence_leaves_the_prior_mean_and_shapes_must_agree() -> None:
    # ratios of 1 (log 0) say nothing: the share stays at the prior's mean
    assert fit_departing_shares(np.zeros(20), np.zeros(20, dtype=np.int64))[0] == pytest.approx(0.5)
    assert fit_departing_shares(np.zeros(0), np.zeros(0, dtype=np.int64)).size == 0
    with pytest.raises(ValueError, match="differ in shape"):
        fit_departing_shares(np.zeros(3), np.zeros(2, dtype=np.int64))

"""Ambiguity over a task's controls (metrics/task_ambiguity.py): the posterior is Bayes'
rule on the pooled ratio, and the fitted share recovers the share of a simulated mixture."""
from __future__ import annotations

import numpy as np
import pytest

from ls_agreement.metrics.task_ambiguity import PRIOR, fit_task_ambiguity, task_ambiguity


def test_posterior_is_bayes_rule() -> None:
    rho, lr = 0.2, np.array([-3.0, 0.0, 2.5])
    want = rho * np.exp(lr) / (rho * np.exp(lr) + 1 - rho)
    assert task_ambiguity(lr, rho) == pytest.approx(want, rel=1e-12)
    assert task_ambiguity(lr, 0.0).tolist() == [0.0, 0.0, 0.0]


def test_share_recovered_from_a_known_mixture() -> None:
    """Tasks ambiguous with probability 0.15: their answers drawn from the ambiguous
    reading, the others' from the ordinary one; each task's log ratio is exact for a
    two-Gaussian pair of readings, so the fitted share must find 0.15."""
    rng = np.random.default_rng(0)
    n, share, mu = 4000, 0.15, 2.0
    amb = rng.random(n) < share
    x = rng.normal(np.where(amb, mu, 0.0), 1.0)
    log_lr = mu * x - mu * mu / 2                       # log N(x; mu, 1) − log N(x; 0, 1)
    rho = fit_task_ambiguity(log_lr)
    assert rho == pytest.approx(share, abs=0.02)
    # the fixed point it returns: rho = (a + Σ posterior) / (n + a + b)
    a, b = PRIOR
    assert rho == pytest.approx((a + task_ambiguity(log_lr, rho).sum()) / (n + a + b), rel=1e-6)


def test_no_evidence_leaves_the_prior_pulled_down_by_the_tasks() -> None:
    rho = fit_task_ambiguity(np.full(90, -20.0))
    assert rho == pytest.approx(PRIOR[0] / (90 + sum(PRIOR)), rel=1e-6)

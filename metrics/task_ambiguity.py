"""Ambiguous tasks read over all of a task's controls at once.

A control's own model (:mod:`.annotator_model`, :mod:`.consensus`) finds ambiguous tasks
where one control shows them clearly. An ambiguous task often shows a little in each of
its controls — careful annotators two against one on the label, on the rating and on the
box — and little in any one alone. Here a task is ambiguous (in all its controls at once)
with probability ρ_T, and its evidence is the sum over its controls of the log likelihood
ratio ``log P(answers | ambiguous) − log P(answers | ordinary)`` each control's fitted
model gives (``log_lr_ambiguous``). ρ_T is the posterior mean of the share under a
Beta(1, 9) prior (a tenth of tasks ambiguous before any answer is read), found by the
variational fixed point ``ρ = (1 + Σ_t P(ambiguous | task t, ρ)) / (T + 10)``: on a small
project the prior keeps a task whose every control splits from being read away as slips,
on a large one the data decide. Reading a task needs only its ratios and ρ_T.
"""
from __future__ import annotations

import numpy as np

from .mixture_share import fit_shares, state_posterior

__all__ = ["fit_task_ambiguity", "task_ambiguity", "PRIOR"]

PRIOR = (1.0, 9.0)    # Beta prior of ρ_T


def task_ambiguity(log_lr: np.ndarray, rho: float) -> np.ndarray:
    """P(ambiguous | the task's controls), shape of ``log_lr`` (each task's summed ratio)."""
    log_lr = np.asarray(log_lr, dtype=float)
    if rho <= 0:
        return np.zeros_like(log_lr)
    return state_posterior(log_lr, rho)


def fit_task_ambiguity(log_lr: np.ndarray) -> float:
    """ρ_T, the (variational) posterior mean share of ambiguous tasks given each task's
    summed log ratio (:func:`.mixture_share.fit_shares`, one group).

    Parameters
    ----------
    log_lr : ndarray, shape (T,)
        Per task, the sum over its controls of ``log_lr_ambiguous`` (finite; −inf: no
        reading of ambiguity at all).

    Returns
    -------
    float
        ρ_T in [0, 1).
    """
    x = np.asarray(log_lr, dtype=float)
    x = x[np.isfinite(x)]
    if not x.size:
        return 0.0
    return float(fit_shares(x, np.zeros(x.size, dtype=np.int64), PRIOR, 0.0, 1.0 - 1e-9)[0])

"""The share of units in one of two states, from each unit's likelihood ratio between them.

A unit (a task, an annotator's answer on a task) is in the state with probability s, its
evidence a known log likelihood ratio ``log P(data | state) − log P(data | other)``. Under
a Beta(a, b) prior on s, the variational posterior mean is the fixed point
``s = (a + Σ_u P(state | unit u, s)) / (n + a + b)``; P(state | unit, s) is Bayes' rule on
the unit's ratio. One share per group of units, all fitted at once: the task-level
ambiguity fits one for the project (:mod:`.task_ambiguity`), the departures one per
annotator (:mod:`.task_departures`).
"""
from __future__ import annotations

import numpy as np

__all__ = ["state_posterior", "fit_shares"]

_MAX_ITER = 500
_TOL = 1e-10


def state_posterior(log_lr: np.ndarray, share: np.ndarray | float) -> np.ndarray:
    """P(state | unit) by Bayes' rule: ``log_lr`` each unit's log ratio, ``share`` its prior
    probability of the state (in (0, 1); broadcast against ``log_lr``)."""
    logit = np.clip(np.asarray(log_lr, dtype=float) + np.log(share) - np.log1p(-np.asarray(share)), -700.0, 700.0)
    return 1.0 / (1.0 + np.exp(-logit))


def fit_shares(log_lr: np.ndarray, group: np.ndarray, prior: tuple[float, float],
               low: float, high: float) -> np.ndarray:
    """Each group's share, the variational posterior mean of the fixed point above.

    Parameters
    ----------
    log_lr : ndarray, shape (M,)
        Each unit's log likelihood ratio (finite).
    group : ndarray of int, shape (M,)
        Each unit's group, 0 … G − 1.
    prior : (a, b)
        The Beta prior of every share.
    low, high : float
        Every share is kept in ``[low, high]`` (``high < 1``).

    Returns
    -------
    ndarray, shape (G,)
        The shares; the prior's mean for a group without units.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.log(np.r_[np.full(80, 20.0), np.full(20, 0.05)])   # 80 of 100 units look in the state
    >>> round(float(fit_shares(x, np.zeros(100, dtype=int), (1.0, 1.0), 1e-6, 1 - 1e-6)[0]), 2)
    0.82
    """
    x = np.asarray(log_lr, dtype=float)
    code = np.asarray(group, dtype=np.int64)
    if x.shape != code.shape:
        raise ValueError(f"log_lr {x.shape} and group {code.shape} differ in shape")
    n_groups = int(code.max()) + 1 if code.size else 0
    a, b = prior
    n = np.bincount(code, minlength=n_groups).astype(float)
    share = np.full(n_groups, a / (a + b))
    for _ in range(_MAX_ITER):
        post = state_posterior(x, share[code])
        # one group: numpy's pairwise sum (the more accurate); several: one count per group
        summed = np.array([post.sum()]) if n_groups == 1 else np.bincount(code, weights=post, minlength=n_groups)
        new = np.clip((summed + a) / (n + a + b), low, high)
        done = np.abs(new - share).max(initial=0.0) < _TOL
        share = new
        if done:
            break
    return share

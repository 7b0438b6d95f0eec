"""Each annotator's share of departing tasks, read over all of a task's controls of labels.

A control's own model gives each answer θ, the annotator's share of sound answers on that
control, and the likelihood ratio that the answer departs (``P(answer | departs) /
P(answer | sound)``). An annotator who departs on a task — answers it at random, say —
departs on each of its controls, and the controls see that unequally: a random label of
three classes is another class two times in three, a random rating lands within a careful
annotator's spread often; a control whose labels a random answer often hits reads θ high,
and one whose answers barely tell random from careful can read θ at 0 (every answer
departs, none visibly). So the task level fits its own share: δ_a, the share of an
annotator's tasks on which they depart, from one number per (annotator, task) — the sum
over the task's controls of the answers' log likelihood ratios — as a two-state mixture
whose component likelihoods are known up to those ratios. δ_a is the variational
posterior mean under a Beta(1, 1) prior (no preference before any answer is read), the
fixed point ``δ = (1 + Σ_t P(departs | task t, δ)) / (n_a + 2)``. Reading a task needs
only its ratios and δ.
"""
from __future__ import annotations

import numpy as np

from .mixture_share import fit_shares, state_posterior

__all__ = ["fit_departing_shares", "departs_posterior", "PRIOR"]

PRIOR = (1.0, 1.0)    # Beta prior of δ_a
_EDGE = 1e-6          # δ stays in [_EDGE, 1 − _EDGE]: its log odds stay finite


def departs_posterior(log_lr: np.ndarray, share: np.ndarray) -> np.ndarray:
    """P(departs | the task's answers) for each (annotator, task): ``log_lr`` the summed
    log ratio and ``share`` the annotator's δ, shape (M,) each."""
    return state_posterior(log_lr, np.clip(np.asarray(share, dtype=float), _EDGE, 1.0 - _EDGE))


def fit_departing_shares(log_lr: np.ndarray, annotator: np.ndarray) -> np.ndarray:
    """δ of every annotator, all at once (:func:`.mixture_share.fit_shares`, one group per
    annotator).

    Parameters
    ----------
    log_lr : ndarray, shape (M,)
        One per (annotator, task): the sum over the task's controls of the log
        likelihood ratio that the annotator's answer departs (finite).
    annotator : ndarray of int, shape (M,)
        The annotator's code, 0 … A − 1.

    Returns
    -------
    ndarray, shape (A,)
        δ_a in [1e-6, 1 − 1e-6]; ½ (the prior's mean) for a code without rows.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.log(np.r_[np.full(80, 20.0), np.full(20, 0.05)])   # 80 of 100 tasks look random
    >>> round(float(fit_departing_shares(x, np.zeros(100, dtype=int))[0]), 2)
    0.82
    """
    return fit_shares(log_lr, annotator, PRIOR, _EDGE, 1.0 - _EDGE)

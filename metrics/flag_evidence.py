"""What the flag models (:mod:`.flags`, :mod:`.flag_distances`) say about one task on one
control, and the law of how many of its annotators give a sound answer; shared by both
models and the combination of controls."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["ItemEvidence", "sound_counts", "UNRELIABLE_BELOW"]

UNRELIABLE_BELOW = 0.5      # unreliable: reliability under this share of the control's median


@dataclass(frozen=True)
class ItemEvidence:
    """One task on one control: the tail probability of its agreeing pairs (``p_value``)
    and the posterior that an unreliable annotator's answer departs (``p_departure``)."""

    k: int
    n: int
    p_value: float
    p_departure: float
    unreliable: tuple[str, ...] = ()
    #: probabilities of the outcomes from the least to the most agreeing (exact tasks only):
    #: P(K = j), j = 0..n for the count; P(S = s) from the largest s down for the distance
    null: tuple[float, ...] | None = None
    mean_distance: float | None = None      # the task's d̄ when read by the distance model


def sound_counts(qs: Sequence[float] | np.ndarray) -> np.ndarray:
    """P(j of the annotators give a sound answer), j = 0..m (Poisson-binomial).

    Parameters
    ----------
    qs : array-like, shape (m,) or (g, m)
        Reliabilities; each row of a 2-D ``qs`` is its own distribution, computed with the
        very same operations as alone (the s-grid of the fit in one pass: with a crowd's
        thousands of annotators on a task, the loop over annotators is the cost).

    Returns
    -------
    ndarray, shape (m + 1,) or (g, m + 1)
    """
    q = np.asarray(qs, dtype=np.float64)
    dist = np.zeros(q.shape[:-1] + (q.shape[-1] + 1,))
    dist[..., 0] = 1.0
    for k in range(q.shape[-1]):
        qk = q[..., k:k + 1]
        dist[..., 1:k + 2] = dist[..., 1:k + 2] * (1 - qk) + dist[..., :k + 1] * qk
        dist[..., 0] *= 1 - q[..., k]
    return dist

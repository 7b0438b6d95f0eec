"""An annotator's share of sound answers θ, read from their answers alone: the profile
likelihood both annotator models use (:mod:`.annotator_model` for labels,
:mod:`.consensus` for distances) to decide who departs, and for θ's interval.

Each answer ``n`` of annotator ``a`` has a likelihood ``u_n`` if sound and ``v_n`` if it
departs (given the rest of the fit: the task's other answers, the fitted distributions),
so ``ℓ_a(θ) = Σ_n log(θ u_n + (1 − θ) v_n)`` — concave in θ. An annotator is *careful*
(θ held at :data:`CAREFUL`) unless ``ℓ_a(θ̂) − ℓ_a(CAREFUL)`` reaches :data:`DEPARTS_AT`:
the excess of their answers over typical work must be clear before it is read as
departures, else the sampling noise among careful annotators would be.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import stats

__all__ = ["CAREFUL", "DEPARTS_AT", "SoundProfile", "sound_profile"]

#: θ of an annotator whose answers show no departures beyond typical work.
CAREFUL = 1.0 - 1e-4
#: Log-likelihood ratio (θ̂ against CAREFUL) from which an annotator's departures are read
#: (e⁴ ≈ 55 to 1; on the boundary, P(χ²₁/2 ≥ 4) ≈ 0.002 per careful annotator).
DEPARTS_AT = 4.0
_CI_DROP = float(stats.chi2.ppf(0.95, 1)) / 2      # the 95 % profile-likelihood interval
_STEPS = 40                                        # bisection steps: 2⁻⁴⁰ of [0, 1]


@dataclass(frozen=True)
class SoundProfile:
    """Every annotator's ``ℓ_a(θ)`` (see the module docstring) and its maximum.

    Attributes
    ----------
    sound, departs : ndarray, shape (N,)
        ``u_n`` and ``v_n`` of every answer.
    annotator : ndarray of int, shape (N,)
        Each answer's annotator code, 0..A−1.
    n_ann : int
    best : ndarray, shape (A,)
        θ̂, in [0, CAREFUL].
    """

    sound: np.ndarray
    departs: np.ndarray
    annotator: np.ndarray
    n_ann: int
    best: np.ndarray

    def at(self, theta: np.ndarray) -> np.ndarray:
        """``ℓ_a`` at one θ per annotator (shape (A,)), shape (A,)."""
        th = theta[self.annotator]
        return np.bincount(self.annotator, weights=np.log(th * self.sound + (1 - th) * self.departs),
                           minlength=self.n_ann)

    def gain(self) -> np.ndarray:
        """``ℓ_a(θ̂) − ℓ_a(CAREFUL)``, shape (A,)."""
        return self.at(self.best) - self.at(np.full(self.n_ann, CAREFUL))

    def interval(self) -> np.ndarray:
        """Where ``ℓ_a`` is within χ²₁(95 %)/2 of its maximum: shape (A, 2), in [0, CAREFUL]."""
        top = self.at(self.best) - _CI_DROP
        lo = _bisect(lambda th: self.at(th) >= top, np.zeros(self.n_ann), self.best)
        hi = _bisect(lambda th: self.at(th) < top, self.best, np.full(self.n_ann, CAREFUL))
        hi = np.where(self.at(np.full(self.n_ann, CAREFUL)) >= top, CAREFUL, hi)
        return np.column_stack([lo, hi])


def _bisect(turns: Callable[[np.ndarray], np.ndarray], lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per annotator, where ``turns(θ)`` (boolean, shape (A,): false below the point, true
    above) turns true, within [lo, hi] (shapes (A,))."""
    lo, hi = lo.copy(), hi.copy()
    for _ in range(_STEPS):
        mid = 0.5 * (lo + hi)
        right = turns(mid)
        hi = np.where(right, mid, hi)
        lo = np.where(right, lo, mid)
    return hi


def sound_profile(sound: np.ndarray, departs: np.ndarray, annotator: np.ndarray, n_ann: int) -> SoundProfile:
    """Every annotator's profile; θ̂ by bisection on the (decreasing) derivative of ``ℓ_a``.

    Parameters
    ----------
    sound, departs : ndarray, shape (N,)
        Each answer's likelihood if sound and if departing (positive).
    annotator : ndarray of int, shape (N,)
    n_ann : int
    """
    sound = np.asarray(sound, dtype=float)
    departs = np.asarray(departs, dtype=float)
    diff = sound - departs

    def slope_negative(theta: np.ndarray) -> np.ndarray:
        th = theta[annotator]
        return np.bincount(annotator, weights=diff / (departs + th * diff), minlength=n_ann) < 0

    best = _bisect(slope_negative, np.zeros(n_ann), np.full(n_ann, CAREFUL))
    return SoundProfile(sound=sound, departs=departs, annotator=annotator, n_ann=n_ann, best=best)

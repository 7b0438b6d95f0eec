"""How often each annotator makes one kind of region error: leaves out a region the
consensus marks, or puts one it shares with the consensus elsewhere (IoU under the error
classes' cut, :mod:`.error_types`). A per-region rate beside the distance model of
:mod:`.consensus` (docs/formulas.md "Flags", *Region errors, counted*).

A distance reads a whole answer as one number. An answer that leaves out one entity of six
lies where careful work often lies (careful annotators who miss one entity in thirty leave
out one of six in a sixth of their answers), and careful annotators who miss or relabel one
box in fifteen land as far from the consensus as boxes half a width off: an annotator who
misses one entity in three, or shifts a fifth of their boxes, was read as careful work.
Counted region by region, they differ plainly. Each region is in error (left out; placed
elsewhere) by careful work at a rate up to ``r₀`` (the careful annotators' pooled rate,
raised by the spread of their own rates beyond what sampling gives), and by annotator ``a``
at ``r_a``. Where ``r_a`` clearly exceeds what the other careful annotators reach (their
binomial likelihood gains :data:`~.sound_share.DEPARTS_AT` or more; one annotator at a
time, the clearest first), each of their errors is one of careful work's with probability
``r₀ / r_a`` and theirs otherwise, so an answer with ``m`` such errors holds a departing
one with probability ``1 − (r₀ / r_a)^m``. A rate, not a distance: boxes that wander more
for one careful annotator than another stay within the cut, where a model of the
distances let the most wandering careful annotator depart (3 projects of 12, up to 22 % of
their tasks flagged).

Each annotator's *sound share* θ: the share of their answers with no departing error, the
mean of ``(r₀ / r_a)^m`` over their answers (1 for a careful annotator); its interval from
the Jeffreys interval of ``r_a``.

Who departs is the rates' to say; how a departing annotator's answers are read may be
finer. Where their errors come together in some answers (a shift moves every box of the
answers it hits) rather than spread over all of them, a mixture reads them: an answer is
*off* with probability ``π_a`` and then errs on each region at ``q_a``, else at ``r₀``, kept
where its likelihood beats one rate, their own, by :data:`~.sound_share.DEPARTS_AT`. An
answer then holds a departing error with ``P(off | m, n) · (1 − (r₀ / q_a)^m)``. Read by one
rate, each box of theirs under the cut was theirs with ``1 − r₀ / r_a``, wherever it lay:
among careful boxes that wander by 1.5 % of the image, a third of the flags were the
shifter's unshifted answers with one box a little off.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from .sound_share import DEPARTS_AT

__all__ = ["RegionRates", "fit_region_rates"]

#: How far above the careful annotators' pooled rate careful work reaches, in standard
#: deviations of their own rates (97.5 % of a normal spread).
_REACH_Z = 1.96
#: How many times careful work's rate the low end of an annotator's must be before they
#: may depart: from twice, one error of theirs is likelier theirs than a careful slip.
_DEPARTS_TIMES = 2.0
#: The mixture's EM: its steps, tolerance and starts (π, q) — a few answers far off, some
#: half off, many a little (the likelihood has ridges: an EM from an even share ended at
#: ``q = r₀`` for an annotator with a sixth of their answers off).
_EM_STEPS = 500
_EM_TOL = 1e-9
_STARTS = ((0.1, 0.9), (0.1, 0.6), (0.3, 0.6), (0.5, 0.3), (0.9, 0.3))


@dataclass(frozen=True)
class RegionRates:
    """Every annotator's rate of one kind of region error.

    Attributes
    ----------
    annotators : tuple of str, shape (A,)
    careful_rate : float
        ``r₀``: the rate careful work reaches (the careful annotators' pooled rate, raised
        by their own spread beyond sampling's, :func:`_careful_reach`).
    rate : ndarray, shape (A,)
        ``r_a`` as the reading uses it: ``r₀`` unless their errors clearly exceed it, then
        the low end of their rate's 95 % interval; read as a mixture, ``q_a``.
    sound, sound_best : ndarray, shape (A,)
        θ as used (1 for a careful annotator) and at their own rate ``r̂_a`` (their
        reliability in this respect).
    sound_ci : ndarray, shape (A, 2)
        θ at the bounds of ``r_a``'s 95 % Jeffreys interval.
    n_regions, n_errors : ndarray of int, shape (A,)
        The regions each annotator could err on, and their errors.
    share : ndarray, shape (A,), optional
        ``π_a`` where a departing annotator's answers are read as a mixture of careful
        answers and answers off, 1 where by one rate (None: all by one rate, as reports
        written before the mixture).
    """

    annotators: tuple[str, ...]
    careful_rate: float
    rate: np.ndarray
    sound: np.ndarray
    sound_best: np.ndarray
    sound_ci: np.ndarray
    n_regions: np.ndarray
    n_errors: np.ndarray
    share: np.ndarray | None = None

    def _per_answer(self, values: np.ndarray, default: float, annotators: Sequence[str]) -> np.ndarray:
        index = {a: k for k, a in enumerate(self.annotators)}
        codes, distinct = pd.factorize(pd.Series([str(a) for a in annotators], dtype=object), sort=False)
        per = np.array([values[index[a]] if a in index else default for a in distinct], dtype=float)
        return per[codes] if len(codes) else np.zeros(0)

    def theta(self, annotators: Sequence[str]) -> np.ndarray:
        """θ of each of ``annotators`` (1 for one the fit has not seen), shape (n,)."""
        return self._per_answer(self.sound, 1.0, annotators)

    def p_departs(self, annotators: Sequence[str], errors: np.ndarray, regions: np.ndarray) -> np.ndarray:
        """Per answer, the posterior that it holds a departing error: ``1 − (r₀ / r_a)^m``,
        or read as a mixture ``P(off | m, n) · (1 − (r₀ / q_a)^m)``.

        Parameters
        ----------
        annotators : sequence of str, shape (n,)
        errors, regions : ndarray, shape (n,)
            Each answer's errors of this kind and the regions it could err on (NaN: none
            possible).
        """
        r0 = self.careful_rate
        rate = np.maximum(self._per_answer(self.rate, r0, annotators), r0)
        share = (np.ones(rate.size) if self.share is None
                 else self._per_answer(self.share, 1.0, annotators))
        m = np.nan_to_num(np.asarray(errors, dtype=float), nan=0.0)
        n = np.maximum(np.nan_to_num(np.asarray(regions, dtype=float), nan=0.0), m)
        return _p_departing(share, rate, r0, m, n)


def _share_kept(ratio: np.ndarray, a: np.ndarray, m: np.ndarray, n_ann: int) -> np.ndarray:
    """Per annotator, the mean over their answers of ``ratio[a] ** m``, shape (A,)."""
    count = np.maximum(np.bincount(a, minlength=n_ann), 1)
    return np.bincount(a, weights=np.power(ratio[a], m), minlength=n_ann) / count


def _log_binomial(m: np.ndarray, n: np.ndarray, r: np.ndarray | float) -> np.ndarray:
    """log r^m (1 − r)^(n − m) (the binomial coefficient cancels wherever it is used)."""
    r = np.clip(r, 1e-12, 1.0 - 1e-12)
    return m * np.log(r) + (n - m) * np.log1p(-r)


def _p_off(share: np.ndarray, q: np.ndarray, r0: float, m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """P(an answer is off | its ``m`` errors of ``n``) (1 where ``share`` is 1), shapes of ``m``."""
    with np.errstate(divide="ignore"):
        logit = (np.log(share) - np.log1p(-np.minimum(share, 1.0))
                 + _log_binomial(m, n, q) - _log_binomial(m, n, r0))
    return np.where(share >= 1.0, 1.0, 1.0 / (1.0 + np.exp(-np.clip(logit, -700.0, 700.0))))


def _p_departing(share: np.ndarray, q: np.ndarray, r0: float, m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """P(an answer holds a departing error): it is off (by one rate, always), and not each
    of its errors a careful slip, shapes of ``m``."""
    return _p_off(share, q, r0, m, n) * -np.expm1(m * np.log(r0 / np.maximum(q, r0)))


@dataclass(frozen=True)
class _OffAnswers:
    """Each annotator's answers as a mixture of careful answers (rate ``r₀``) and answers off."""

    share: np.ndarray      # (A,) π̂
    rate: np.ndarray       # (A,) q̂ ≥ r₀
    gain: np.ndarray       # (A,) its log-likelihood over one rate, their own
    off: np.ndarray        # (A,) their answers off (posterior-weighted)
    answers: np.ndarray    # (A,) their answers


def _off_answers(a: np.ndarray, m: np.ndarray, n: np.ndarray, r0: float, n_ann: int) -> _OffAnswers:
    """Fit ``π_a`` and ``q_a ≥ r₀`` of every annotator at once by EM from each of
    :data:`_STARTS`, keeping each annotator's best (answers alike in annotator, errors and
    regions taken as one, with their count: a project's hundred thousand answers are a few
    hundred)."""
    rows, count = np.unique(np.column_stack([a, m, n]), axis=0, return_counts=True)
    a, m, n, count = rows[:, 0].astype(np.int64), rows[:, 1], rows[:, 2], count.astype(float)
    c0 = _log_binomial(m, n, r0)
    tot = np.maximum(np.bincount(a, weights=count, minlength=n_ann), 1e-12)

    def loglik(share: np.ndarray, q: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            mix = np.logaddexp(np.log(share[a]) + _log_binomial(m, n, q[a]), np.log1p(-share[a]) + c0)
        return np.bincount(a, weights=count * mix, minlength=n_ann)

    best_share, best_q, best = np.full(n_ann, 0.5), np.full(n_ann, r0), np.full(n_ann, -np.inf)
    for share0, q0 in _STARTS:
        share, q = np.full(n_ann, share0), np.full(n_ann, max(q0, r0))
        for _ in range(_EM_STEPS):
            cw = count * _p_off(share[a], q[a], r0, m, n)
            new_share = np.clip(np.bincount(a, weights=cw, minlength=n_ann) / tot, 1e-9, 1.0 - 1e-9)
            new_q = np.clip(np.bincount(a, weights=cw * m, minlength=n_ann) / np.maximum(
                np.bincount(a, weights=cw * n, minlength=n_ann), 1e-300), r0, 1.0 - 1e-9)
            step = max(float(np.max(np.abs(new_share - share), initial=0.0)),
                       float(np.max(np.abs(new_q - q), initial=0.0)))
            share, q = new_share, new_q
            if step < _EM_TOL:
                break
        got = loglik(share, q)
        better = got > best
        best_share, best_q, best = np.where(better, share, best_share), np.where(better, q, best_q), np.maximum(got, best)
    own = np.bincount(a, weights=count * m, minlength=n_ann) / np.maximum(
        np.bincount(a, weights=count * n, minlength=n_ann), 1e-300)
    one = np.bincount(a, weights=count * _log_binomial(m, n, own[a]), minlength=n_ann)
    return _OffAnswers(share=best_share, rate=best_q, gain=best - one, answers=tot,
                       off=np.bincount(a, weights=count * _p_off(best_share[a], best_q[a], r0, m, n),
                                       minlength=n_ann))


def _mixture_kept(share: np.ndarray, q: np.ndarray, r0: float, a: np.ndarray, m: np.ndarray, n: np.ndarray,
                  n_ann: int) -> np.ndarray:
    """Per annotator, the share of their answers with no departing error when read as a
    mixture, shape (A,)."""
    count = np.maximum(np.bincount(a, minlength=n_ann), 1)
    return 1.0 - np.bincount(a, weights=_p_departing(share[a], q[a], r0, m, n), minlength=n_ann) / count


def _careful_reach(k: np.ndarray, n: np.ndarray) -> float:
    """The rate careful work reaches, from annotators with ``k`` errors in ``n`` regions
    each (shapes (A,)): their pooled rate (at least half an error, so that a rate of 0 never
    makes any error a certain departure) plus :data:`_REACH_Z` times the spread of their own
    rates beyond what binomial sampling gives (DerSimonian & Laird's moment estimate; 0
    where the rates are as alike as sampling allows)."""
    r0 = max(float(k.sum()), 0.5) / max(float(n.sum()), 1.0)
    used = n > 0
    if used.sum() < 2:
        return r0
    w = n[used] / (r0 * (1.0 - r0))
    q = float(np.sum(w * (k[used] / n[used] - r0) ** 2))
    tau2 = max(0.0, (q - (used.sum() - 1)) / (w.sum() - np.sum(w ** 2) / w.sum()))
    return r0 + _REACH_Z * float(np.sqrt(tau2))


def fit_region_rates(annotator: Sequence[Any], errors: np.ndarray, regions: np.ndarray) -> RegionRates:
    """Fit every annotator's rate of one kind of region error.

    Who departs is decided one annotator at a time, the clearest first: each careful
    annotator's errors against the rate the *other* careful annotators reach
    (:func:`_careful_reach`: their pooled rate, raised by their own spread), where the low
    end of their own rate's interval is :data:`_DEPARTS_TIMES` that. Against the
    pooled rate alone, careful annotators whose rates differ by nature (1–8 % of entities
    missed in a project of ten) had the one at twice the others' let depart at two seeds of
    ten, and each of their single misses flagged (10 % of one project's tasks).

    Parameters
    ----------
    annotator : sequence of str, shape (N,)
        Each answer's annotator.
    errors, regions : ndarray, shape (N,)
        Per answer, its errors of this kind and the regions it could err on (NaN for the
        consensus itself and an answer alone: they count for nothing).

    Returns
    -------
    RegionRates
    """
    codes, labels = pd.factorize(pd.Series([str(a) for a in annotator], dtype=object), sort=True)
    n_ann = len(labels)
    errors, regions = np.asarray(errors, dtype=float), np.asarray(regions, dtype=float)
    seen = np.isfinite(errors) & np.isfinite(regions) & (regions > 0)
    a, m, c = codes[seen].astype(np.int64), errors[seen], np.maximum(regions[seen], errors[seen])
    k = np.bincount(a, weights=m, minlength=n_ann)
    n = np.bincount(a, weights=regions[seen], minlength=n_ann)
    careful = np.ones(n_ann, dtype=bool)
    own = np.where(n > 0, k / np.maximum(n, 1.0), 0.0)
    lo = stats.beta.ppf(0.025, k + 0.5, n - k + 0.5)
    for _ in range(n_ann):
        gain = np.zeros(n_ann)
        for x in np.flatnonzero(careful & (n > 0)):
            others = careful.copy()
            others[x] = False
            reach = _careful_reach(k[others], n[others])
            # and only where even the low end of their rate is twice careful work's, so that
            # one error of theirs is likelier theirs than a careful slip: with a few careful
            # annotators whose boxes wander a little more each, the next was let depart once
            # the one above had (3,000 demo tasks: Dev, then Emma, noise 0.12 and 0.08)
            if lo[x] > _DEPARTS_TIMES * reach:
                gain[x] = float(_log_binomial(k[x], n[x], own[x]) - _log_binomial(k[x], n[x], reach))
        clearest = int(np.argmax(gain))
        if gain[clearest] < DEPARTS_AT:
            break
        careful[clearest] = False
    reach = _careful_reach(k[careful], n[careful])
    top = np.clip(np.maximum(own, reach), 1e-12, 1.0 - 1e-9)
    lo = np.maximum(lo, reach)
    hi = np.maximum(stats.beta.ppf(0.975, k + 0.5, n - k + 0.5), reach)
    # read at the low end of their interval: the annotator let depart by a lucky tail has
    # the highest rate of the careful by selection (18 misses of 209 against 3.9 %, where
    # careful annotators' rates, pooled from their consensus, spread wider than sampling:
    # each single miss of theirs was read as departing, 5 % of a careful project flagged)
    rate = np.where(careful, reach, np.clip(lo, 1e-12, 1.0 - 1e-9))
    sound = np.where(careful, 1.0, _share_kept(reach / rate, a, m, n_ann))
    sound_best = _share_kept(reach / top, a, m, n_ann)
    sound_ci = np.column_stack([_share_kept(reach / hi, a, m, n_ann), _share_kept(reach / lo, a, m, n_ann)])
    share = np.ones(n_ann)
    if not careful.all():
        # who departs is the rates' to say; a departing annotator whose errors come together
        # in some answers is read by the mixture (at its maximum: they depart already)
        mix = _off_answers(a, m, c, reach, n_ann)
        by_mix = ~careful & (mix.gain >= DEPARTS_AT)
        if by_mix.any():
            share = np.where(by_mix, mix.share, 1.0)
            rate = np.where(by_mix, mix.rate, rate)
            sound = np.where(by_mix, _mixture_kept(share, rate, reach, a, m, c, n_ann), sound)
            bounds = [_mixture_kept(np.where(by_mix, stats.beta.ppf(p, mix.off + 0.5, mix.answers - mix.off + 0.5),
                                             1.0), rate, reach, a, m, c, n_ann) for p in (0.975, 0.025)]
            sound_best = np.where(by_mix, sound, sound_best)
            sound_ci = np.where(by_mix[:, None], np.column_stack(bounds), sound_ci)
    return RegionRates(annotators=tuple(str(x) for x in labels), careful_rate=reach, rate=rate, sound=sound,
                       sound_best=sound_best, sound_ci=sound_ci, n_regions=n.astype(np.int64),
                       n_errors=k.astype(np.int64), share=share)

"""The distance model of the task flags (see :mod:`.flags` for the rule): a control's pair
distances split into those between two sound answers and those of a departing answer to
the rest (mixture proportion estimation, :func:`distance_components`), each annotator's
reliability fitted from their mean distance (:func:`fit_distance_model`), and a task's mean
distance read against the law of the mean for its annotators (:func:`distance_evidence`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Collection, Mapping, Sequence

import numpy as np
from scipy.special import ndtr

from .flag_evidence import UNRELIABLE_BELOW, ItemEvidence, sound_counts

__all__ = ["DistanceComponents", "DistanceModel", "distance_components", "fit_distance_model",
           "distance_evidence"]

_TAIL_MIN = 0.02            # tails thinner than this are too noisy to fix the mixture shares
_MAX_EXACT_DIST_PAIRS = 60  # beyond, the task's summed distance is read with a normal law


@dataclass(frozen=True)
class DistanceModel:
    """The three-state answer model of one control, on its distance histogram's bins.

    An answer is *sound* or a *chance* answer; a chance answer *coincides* with a sound one
    (is indistinguishable from it) with probability ``kappa``, else it *departs*. Two answers
    that do not depart are ``sound_pmf`` apart, a departing and a non-departing answer
    ``depart_pmf`` apart, two departing answers ``chance_pmf`` apart. ``reliability``: each
    annotator's share ``q`` of sound answers, so an answer of theirs does not depart with
    ``q + (1 − q) κ`` (:meth:`p`).

    Attributes
    ----------
    width : float
        Bin width of the histogram (bins ``[i w, (i + 1) w)``, the last one closed).
    sound_pmf, depart_pmf, chance_pmf : tuple of float
        Distance distributions over the bins.
    kappa : float
        Share of the chance distribution the sound one accounts for.
    """

    width: float
    sound_pmf: tuple[float, ...]
    depart_pmf: tuple[float, ...]
    chance_pmf: tuple[float, ...]
    kappa: float
    reliability: Mapping[str, float] = field(default_factory=dict)
    default_reliability: float = 1.0
    unreliable_below: float = 0.5

    def q(self, annotator: str) -> float:
        return float(self.reliability.get(annotator, self.default_reliability))

    def p(self, annotator: str) -> float:
        """Probability that the annotator's answer does not depart."""
        q = self.q(annotator)
        return q + (1.0 - q) * self.kappa

    @property
    def key(self) -> tuple:
        """The distributions, hashable (the convolution cache is keyed on them)."""
        return (self.width, self.sound_pmf, self.depart_pmf, self.chance_pmf)


@dataclass(frozen=True)
class DistanceComponents:
    """The decomposition of a control's distances (:func:`distance_components`)."""

    width: float
    sound_pmf: tuple[float, ...]
    depart_pmf: tuple[float, ...]
    chance_pmf: tuple[float, ...]
    kappa: float
    chance_share: float      # λ: share of the observed pairs that look like chance pairs
    observed_mean: float     # mean of the observed pairs on the bins' centres


def _pmf(counts: Sequence[float]) -> np.ndarray | None:
    x = np.clip(np.asarray(counts, dtype=float), 0.0, None)
    total = x.sum()
    return x / total if total > 0 and math.isfinite(total) else None


def _irreducible_share(target: np.ndarray, other: np.ndarray, upper: bool) -> float:
    """The largest λ with ``target − λ · other`` still a distribution, read on cumulative
    tails (the upper tails when ``upper``: sound pairs are the near ones, so the far tail of
    the observed pairs is where chance pairs show alone; the lower tails for the converse).
    Tails of ``other`` thinner than :data:`_TAIL_MIN` are skipped: a handful of pairs there
    would decide the whole split."""
    t_cum = np.cumsum(target[::-1])[::-1] if upper else np.cumsum(target)
    o_cum = np.cumsum(other[::-1])[::-1] if upper else np.cumsum(other)
    ok = o_cum >= _TAIL_MIN
    if not ok.any():
        return 0.0
    return float(min(1.0, np.min(t_cum[ok] / o_cum[ok])))


def distance_components(edges: Sequence[float], observed: Sequence[float],
                        expected: Sequence[float]) -> DistanceComponents | None:
    """Split a control's pair distances into sound and departing parts.

    The observed pairs are a mixture ``F_o = (1 − λ) F_s + λ F_c`` of pairs between sound
    answers and pairs that look like chance pairs (``F_c``, the expected distances), and the
    chance pairs themselves ``F_c = κ F_s + (1 − κ) F_d``: a chance answer may land where a
    sound one would. Two mixtures of the same two parts identify them once each part is
    *irreducible* (Blanchard, Lee & Scott 2010, mixture proportion estimation): λ is the
    largest share of ``F_c`` that ``F_o`` contains (on the far tails, where sound pairs do
    not reach), μ the largest share of ``F_o`` that ``F_c`` contains (on the near tails);
    then ``F_s ∝ F_o − λ F_c``, ``F_d ∝ F_c − μ F_o`` and ``κ = μ (1 − λ) / (1 − μ λ)``.

    Parameters
    ----------
    edges : sequence of float
        Equal-width bin edges (``len(observed) + 1``).
    observed, expected : sequence of float
        Observed pair counts and chance pair weights per bin.

    Returns
    -------
    DistanceComponents or None
        None when the histogram cannot be split (empty, or the observed pairs are no
        different from chance: nothing is sound).
    """
    e = np.asarray(edges, dtype=float)
    f_o, f_c = _pmf(observed), _pmf(expected)
    if f_o is None or f_c is None or e.size != f_o.size + 1 or f_o.size != f_c.size or f_o.size < 2:
        return None
    width = float(e[1] - e[0])
    if not width > 0 or not np.allclose(np.diff(e), width, rtol=1e-6, atol=1e-12):
        return None
    lam = _irreducible_share(f_o, f_c, upper=True)
    mu = _irreducible_share(f_c, f_o, upper=False)
    if lam >= 1 - 1e-9 or mu >= 1 - 1e-9:
        return None
    f_s = np.clip(f_o - lam * f_c, 0.0, None)
    f_d = np.clip(f_c - mu * f_o, 0.0, None)
    f_s, f_d = f_s / f_s.sum(), f_d / f_d.sum()
    kappa = mu * (1 - lam) / (1 - mu * lam)
    centres = (np.arange(f_o.size) + 0.5) * width
    return DistanceComponents(width=width, sound_pmf=tuple(f_s), depart_pmf=tuple(f_d),
                              chance_pmf=tuple(f_c), kappa=float(kappa), chance_share=float(lam),
                              observed_mean=float(np.dot(f_o, centres)))


def _pair_mean(p_a: float, p_b: np.ndarray | float, mu: tuple[float, float, float]) -> np.ndarray | float:
    """Expected distance of a pair whose answers do not depart with ``p_a``, ``p_b``."""
    m_s, m_d, m_c = mu
    return m_c + (p_a + p_b) * (m_d - m_c) + p_a * p_b * (m_s - 2 * m_d + m_c)


def fit_distance_model(comp: DistanceComponents,
                       annotators: Mapping[str, tuple[float | None, int]]) -> DistanceModel | None:
    """Each annotator's share of sound answers, from their mean distance.

    An annotator's pairs are on average ``m_a = E d(p_a, p̄_{−a})`` apart (:func:`_pair_mean`,
    ``p`` the probability of not departing; linear in the co-annotators' ``p``, so their
    pair-weighted mean ``p̄_{−a}`` stands in for them); solved for ``p_a`` by fixed-point
    iteration, then ``q_a = (p_a − κ) / (1 − κ)``: a chance answer does not depart with κ
    anyway, so only the excess over κ tells sound answers. The annotators' mean distances
    are rescaled so that their pair-weighted mean is the observed histogram's mean on the
    bins' centres (the model reads distances on those centres). An annotator is
    *unreliable* under half the (pair-weighted) median ``q``.

    Parameters
    ----------
    comp : DistanceComponents
        The control's split (:func:`distance_components`).
    annotators : mapping id -> (mean distance, pairs)

    Returns
    -------
    DistanceModel or None
        None when no annotator has a mean distance.
    """
    ids = [a for a, (md, n) in annotators.items() if md is not None and n and math.isfinite(md)]
    if not ids:
        return None
    m = np.array([annotators[a][0] for a in ids], dtype=float)
    w = np.array([annotators[a][1] for a in ids], dtype=float)
    exact_mean = float(np.dot(w, m) / w.sum())
    if exact_mean > 0:
        m = m * (comp.observed_mean / exact_mean)
    centres = (np.arange(len(comp.sound_pmf)) + 0.5) * comp.width
    mu = tuple(float(np.dot(f, centres)) for f in (comp.sound_pmf, comp.depart_pmf, comp.chance_pmf))
    m_s, m_d, m_c = mu
    p = np.full(len(ids), 1.0 - comp.chance_share)
    total_w = w.sum()
    for _ in range(2000):
        others = (np.dot(w, p) - w * p) / np.maximum(total_w - w, 1e-12) if len(ids) > 1 else p
        slope = (m_d - m_c) + others * (m_s - 2 * m_d + m_c)   # d m_a / d p_a (negative: sound is near)
        new = np.where(np.abs(slope) > 1e-12,
                       (m - m_c - others * (m_d - m_c)) / np.where(np.abs(slope) > 1e-12, slope, 1.0), 1.0)
        # half steps: p_a falls as its co-annotators' p̄ rises, so full steps oscillate
        new = 0.5 * p + 0.5 * np.clip(new, 0.0, 1.0)
        if np.allclose(new, p, rtol=0, atol=1e-10):
            p = new
            break
        p = new
    kappa = comp.kappa
    q = np.clip((p - kappa) / (1.0 - kappa), 0.0, 1.0) if kappa < 1 else np.ones_like(p)
    rel = {a: float(v) for a, v in zip(ids, q)}
    default = float(np.dot(w, q) / total_w)
    order = np.argsort(q)
    median = float(q[order][np.searchsorted(np.cumsum(w[order]), total_w / 2)])
    return DistanceModel(width=comp.width, sound_pmf=comp.sound_pmf, depart_pmf=comp.depart_pmf,
                         chance_pmf=comp.chance_pmf, kappa=comp.kappa, reliability=rel,
                         default_reliability=default, unreliable_below=UNRELIABLE_BELOW * median)


def _power(pmf: tuple[float, ...], times: int) -> np.ndarray:
    """The pmf of a sum of ``times`` independent draws (bin indices)."""
    out = np.ones(1)
    base = np.asarray(pmf)
    while times:
        if times & 1:
            out = np.convolve(out, base)
        times >>= 1
        if times:
            base = np.convolve(base, base)
    return out


@lru_cache(maxsize=4096)
def _sum_pmf(key: tuple, n_ss: int, n_sd: int, n_dd: int) -> np.ndarray:
    """pmf of the summed bin index of ``n_ss`` sound, ``n_sd`` sound–departing and ``n_dd``
    departing pairs, read-only."""
    _, f_s, f_d, f_c = key
    out = np.convolve(np.convolve(_power(f_s, n_ss), _power(f_d, n_sd)), _power(f_c, n_dd))
    out = np.clip(out, 0.0, None)
    out.flags.writeable = False
    return out


def _pair_types(j: int, m: int, n: int) -> tuple[int, int, int]:
    """Pairs between non-departing answers, between one of each, between departing ones,
    when j of the m answers do not depart (n pairs in all: scaled when the task's pairs are
    not all C(m, 2) of its roster)."""
    full = (j * (j - 1) // 2, j * (m - j), (m - j) * (m - j - 1) // 2)
    total = m * (m - 1) // 2
    if total == n or total == 0:
        return full if total == n else (0, 0, n)
    ss = int(round(n * full[0] / total))
    sd = min(int(round(n * full[1] / total)), n - ss)
    return ss, sd, n - ss - sd


def _window(mean_distance: float, n: int, width: float) -> tuple[int, int]:
    """The summed bin indices S consistent with a task's mean distance: each pair distance
    d lies in bin ⌊d / w⌋ (the last bin closed), so S ≤ n d̄ / w ≤ S + n."""
    x = n * mean_distance / width
    return int(math.ceil(x - n - 1e-9)), int(math.floor(x + 1e-9))


def _distance_reading(model: DistanceModel, lo: int, hi: int, n: int, ps: Sequence[float]
                      ) -> tuple[float, float, np.ndarray | None]:
    """P(S in [lo, hi]), P(S ≥ lo) and (exact tasks) the pmf of S, under the model with
    non-departing probabilities ``ps``."""
    m = len(ps)
    if n > _MAX_EXACT_DIST_PAIRS:   # many pairs: S | j read as a normal (continuity-corrected)
        js = sound_counts(ps)
        idx = np.arange(len(model.sound_pmf), dtype=float)
        mom = [(float(np.dot(f, idx)), float(np.dot(f, idx ** 2) - np.dot(f, idx) ** 2))
               for f in (model.sound_pmf, model.depart_pmf, model.chance_pmf)]
        eq = ge = 0.0
        for j, pj in enumerate(js):
            if pj <= 0:
                continue
            t = _pair_types(j, m, n)
            mean = sum(c * mm for c, (mm, _) in zip(t, mom))
            sd = math.sqrt(max(sum(c * v for c, (_, v) in zip(t, mom)), 1e-12))
            up = float(ndtr((mean - (lo - 0.5)) / sd))
            eq += pj * (up - float(ndtr((mean - (hi + 0.5)) / sd)))
            ge += pj * up
        return eq, min(ge, 1.0), None
    total = _mixture_pmf(model.key, n, tuple(sorted(ps)))
    if total is None:
        return 0.0, 1.0, None
    a, b = max(lo, 0), min(hi, total.size - 1)
    eq = float(total[a:b + 1].sum()) if b >= a else 0.0
    ge = float(total[a:].sum()) if a < total.size else 0.0
    return eq, min(ge, 1.0), total


@lru_cache(maxsize=16384)
def _mixture_pmf(key: tuple, n: int, ps: tuple[float, ...]) -> np.ndarray | None:
    """pmf of the summed bin index S of ``n`` pairs among answers that do not depart with
    probabilities ``ps`` (sorted: the law is symmetric in the annotators), read-only; None
    when no count of non-departing answers is possible.

    Cached: a project's tasks share few rosters (annotator sets) and pair counts, so the
    thousands of tasks of a control need only a few dozen of these convolutions.
    """
    m = len(ps)
    total = None
    for j, pj in enumerate(sound_counts(ps)):
        if pj <= 0:
            continue
        part = pj * _sum_pmf(key, *_pair_types(j, m, n))
        if total is None:
            total = part.copy()
        else:
            if part.size > total.size:
                total, part = np.concatenate([total, np.zeros(part.size - total.size)]), part
            total[:part.size] += part
    if total is not None:
        total.flags.writeable = False
    return total


@lru_cache(maxsize=16384)
def _null_outcomes(key: tuple, n: int, ps: tuple[float, ...]) -> tuple[float, ...] | None:
    """The outcomes' probabilities from the farthest to the nearest (cumulative sums:
    P(S ≥ s)), as :func:`combined_p_value` takes them; cached like :func:`_mixture_pmf`."""
    total = _mixture_pmf(key, n, ps)
    return None if total is None else tuple(float(x) for x in total[::-1])


def distance_evidence(model: DistanceModel, mean_distance: float, n: int,
                      annotators: Sequence[str], unreliable: Collection[str] = ()) -> ItemEvidence:
    """The evidence of one task on one control from its mean pair distance.

    Parameters
    ----------
    model : DistanceModel
        The control's fitted model.
    mean_distance : float
        The task's mean pair distance d̄ (on the control's distance).
    n : int
        Pairs of the task.
    annotators : sequence of str
        The task's annotators on this control.
    unreliable : collection of str, optional
        Annotators unreliable across the project (:func:`unreliable_annotators`), on top of
        those under ``model.unreliable_below`` on this control.

    Returns
    -------
    ItemEvidence
        ``p_value`` = P(d̄ at least this large | annotators); ``p_departure`` = posterior
        that one of the task's unreliable annotators' answers departs; ``null`` = the
        probabilities of the outcomes from the farthest to the nearest (its cumulative sums
        are the attainable p-values, for :func:`combined_p_value`). ``k`` is the count of
        bins-sum units (S) at the window's low end.
    """
    ids = [str(a) for a in annotators]
    if len(ids) < 2:
        ids = [""] * max(2, int(round((1 + math.sqrt(1 + 8 * n)) / 2)))
    ps = [model.p(a) for a in ids]
    lo, hi = _window(float(mean_distance), n, model.width)
    p_eq, p_ge, pmf = _distance_reading(model, lo, hi, n, ps)
    bad = [i for i, a in enumerate(ids) if model.q(a) < model.unreliable_below or a in unreliable]
    p_dep = 0.0
    if bad and p_eq > 0:
        forced = [1.0 if i in bad else p for i, p in enumerate(ps)]
        p_none = math.prod(ps[i] for i in bad) * _distance_reading(model, lo, hi, n, forced)[0]
        p_dep = min(max(1.0 - p_none / p_eq, 0.0), 1.0)
    # outcomes from the farthest to the nearest: the cumulative sums are P(S ≥ s)
    null = _null_outcomes(model.key, n, tuple(sorted(ps))) if pmf is not None else None
    return ItemEvidence(k=lo, n=n, p_value=p_ge, p_departure=p_dep,
                        unreliable=tuple(ids[i] for i in bad), null=null,
                        mean_distance=float(mean_distance))

"""Task flags a reviewer can act on (docs/formulas.md §3, "Flags").

A task's σ on one control is the share of its pairs that agree (distance below d*). With
three annotators it can only be 0, ⅓, ⅔ or 1, so a fixed cut (σ < 0.5) flags every task
where one annotator slipped once, and the more controls a project has, the more of it is
flagged. A count below d* also forgets how far apart the answers are: on a 5-point rating
where careful annotators differ by a point and d* admits only equal ratings, a careful
spread and a careless departure give the same count. Here each control's tasks are read
against a model of the annotators, fitted on the project once:

* **the distance model** (:class:`DistanceModel`; used wherever the control's distance
  histogram is known) — the control's pair distances are split into the distances between
  two *sound* answers ``F_s`` and those of a *departing* answer to the rest ``F_d``, from
  the observed and the chance distances alone (:func:`distance_components`: two mixtures
  of the same two parts, mixture proportion estimation). A chance answer lands where a
  sound one would with probability κ (a random rating within a point of the truth) and
  *departs* otherwise. Annotator ``a`` gives a sound answer with probability ``q_a``,
  fitted from their mean distance (:func:`fit_distance_model`); a task's mean distance
  ``d̄`` is read against the law of ``d̄`` for its annotators (:func:`distance_evidence`).
* **the count model** (:class:`FlagModel`; a report without a histogram) — the per-task
  count ``k`` of pairs below d*: two sound answers agree with probability ``s``, any other
  pair with ``c``, the chance rate; ``s`` and the ``q_a`` are fitted on the annotators' σ
  and the tasks' ``k`` (:func:`fit_flag_model`, :func:`item_evidence`).

Pairs of one task are *not* independent (they share annotators): the latent sound /
departing answers carry that dependence; given them, pairs are read as independent.

* **unusual disagreement** — ``p = P(d̄ this large | A)`` (or ``P(K ≤ k | A)``) under the
  model with each annotator's own reliability. The task's controls are combined into one
  test (Fisher's ``Π p``, its tail over the controls' discrete null laws,
  :func:`combined_p_value`); the task is flagged when that is below ``level`` (default
  0.01): ordinary tasks are flagged at most at that rate however many controls the project
  has. This catches ambiguous tasks and departures by good annotators far beyond their
  usual slips.
* **an unreliable answer that departs** — an annotator whose ``q_a`` on a control is under
  half the control's (pair-weighted) median reliability, there or over the project's
  controls together (:func:`unreliable_annotators`), is *unreliable*. The posterior
  probability, given the task's reading, that one of its unreliable annotators' answers
  departs is ``P(departure | d̄, A)``; the control flags the task when it is at least
  ``posterior`` (default ½: the flag is more likely right than wrong). So a known-careless
  annotator's departure is caught, while the same pattern from good annotators (an
  ordinary slip) is not, and neither is a careless annotator who agreed with the others or
  whose random answer landed where a careful one would.

Everything a task's flag needs is its per-control ``(d̄ or k, n, annotators)`` and the
fitted model of each control (a few numbers per control and annotator, stored in the
report, and the control's histogram), so a live service can flag one task without the
others.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Collection, Iterable, Mapping, Sequence

import numpy as np
from scipy import stats
from scipy.special import ndtr

from .flag_distances import (DistanceComponents, DistanceModel, distance_components, distance_evidence,
                             fit_distance_model)
from .flag_evidence import UNRELIABLE_BELOW, ItemEvidence, sound_counts

__all__ = ["FlagModel", "ItemEvidence", "fit_flag_model", "item_evidence", "combine_flags",
           "agreeing_pairs", "combined_p_value", "DEFAULT_LEVEL", "DEFAULT_POSTERIOR", "UNRELIABLE_BELOW",
           "DistanceComponents", "DistanceModel", "distance_components", "fit_distance_model",
           "distance_evidence", "unreliable_annotators"]

DEFAULT_LEVEL = 0.01        # false-flag rate of an ordinary task, all controls together
DEFAULT_POSTERIOR = 0.5     # flag an unreliable annotator's likely departure from this
_S_GRID = 24                # candidate values of s in the likelihood fit
_MAX_EXACT_PAIRS = 2000     # beyond, the pair count is read with a normal approximation
_LOG_STEP = 0.02            # grid of −ln p in the exact combination (p rounded down ≤ 2 %)
_LOG_FLOOR = 30.0           # −ln Π p beyond this (Π p < 1e-13) needs no exact reading
_MAX_FIT_GROUPS = 3000      # distinct (k, n, annotators) tasks used to fit s, most frequent first


@dataclass(frozen=True)
class FlagModel:
    """The answer model of one control (see the module docstring).

    ``chance`` c, ``same`` s, ``reliability`` q per annotator id; ``default_reliability``
    for an annotator the model has not seen (their co-annotators' pair-weighted mean)."""

    chance: float
    same: float
    reliability: Mapping[str, float] = field(default_factory=dict)
    default_reliability: float = 1.0
    unreliable_below: float = 0.5

    def q(self, annotator: str) -> float:
        return float(self.reliability.get(annotator, self.default_reliability))


def agreeing_pairs(sigma: float | None, n_pairs: int) -> int | None:
    """``k``: the task's pairs below d* (σ × pairs, rounded), None without pairs."""
    if sigma is None or not n_pairs or not math.isfinite(sigma):
        return None
    return int(round(sigma * n_pairs))


def _n_sound_pairs(j: int, n: int, m: int) -> int:
    """Pairs between sound answers when j of m annotators are sound (n pairs in all)."""
    if m * (m - 1) // 2 == n:
        return j * (j - 1) // 2
    return int(round(n * j * (j - 1) / (m * (m - 1)))) if m > 1 else 0


@lru_cache(maxsize=256)
def _sound_pairs_by_count(n: int, m: int) -> np.ndarray:
    """``_n_sound_pairs(j, n, m)`` for j = 0..m, shape (m + 1,), read-only (the same for every s
    of the fit: computed once per task shape)."""
    out = np.array([_n_sound_pairs(j, n, m) for j in range(m + 1)], dtype=float)
    out.flags.writeable = False
    return out


@lru_cache(maxsize=4096)
def _k_table(n: int, n_in: int, s: float, c: float) -> tuple[np.ndarray, np.ndarray]:
    """pmf and cdf of K = Bin(n_in, s) + Bin(n − n_in, c) over k = 0..n."""
    pmf = np.convolve(stats.binom.pmf(np.arange(n_in + 1), n_in, s),
                      stats.binom.pmf(np.arange(n - n_in + 1), n - n_in, c))
    return pmf, np.minimum(np.cumsum(pmf), 1.0)


def _null_pmf(n: int, qs: Sequence[float], s: float, c: float) -> np.ndarray:
    """P(K = j | annotators) for j = 0..n (exact pair counts only)."""
    m = len(qs)
    out = np.zeros(n + 1)
    for j, pj in enumerate(sound_counts(qs)):
        if pj > 0:
            out += pj * _k_table(n, _n_sound_pairs(j, n, m), s, c)[0]
    return out


def _likelihood(k: int, n: int, qs: Sequence[float], s: float, c: float,
                js: np.ndarray | None = None) -> tuple[float, float]:
    """P(K = k | annotators) and P(K ≤ k | annotators) under the answer model
    (``js``: ``sound_counts(qs)`` when already known, shape (len(qs) + 1,))."""
    m = len(qs)
    js = sound_counts(qs) if js is None else js
    if n > _MAX_EXACT_PAIRS:  # many pairs: each K | j is read as a normal (continuity-corrected)
        n_in = _sound_pairs_by_count(n, m)
        mean = n_in * s + (n - n_in) * c
        sd = np.sqrt(np.maximum(n_in * s * (1 - s) + (n - n_in) * c * (1 - c), 1e-12))
        # stats.norm.cdf(x, mean, sd) is ndtr((x − mean) / sd) for sd > 0, without its per-call checks
        hi, lo = ndtr(((k + 0.5) - mean) / sd), ndtr(((k - 0.5) - mean) / sd)
        return float(np.dot(js, hi - lo)), float(min(np.dot(js, hi), 1.0))
    eq = le = 0.0
    for j, pj in enumerate(js):
        if pj <= 0:
            continue
        pmf, cdf = _k_table(n, _n_sound_pairs(j, n, m), s, c)
        eq += pj * float(pmf[k])
        le += pj * float(cdf[k])
    return float(eq), float(min(le, 1.0))


def item_evidence(model: FlagModel, k: int, n: int, annotators: Sequence[str],
                  unreliable: Collection[str] = ()) -> ItemEvidence:
    """The evidence of one task on one control (``k`` of ``n`` pairs agree).

    Parameters
    ----------
    model : FlagModel
        The control's fitted model.
    k, n : int
        Agreeing pairs (distance below d*) and pairs of the task.
    annotators : sequence of str
        The task's annotators on this control (one per value).
    unreliable : collection of str, optional
        Annotators unreliable across the project (:func:`unreliable_annotators`), on top of
        those under ``model.unreliable_below`` on this control.
    """
    ids = [str(a) for a in annotators]
    if len(ids) < 2:  # pairs without a roster (old reports): the smallest roster that fits
        ids = [""] * max(2, int(round((1 + math.sqrt(1 + 8 * n)) / 2)))
    qs = [model.q(a) for a in ids]
    s, c = model.same, model.chance
    p_eq, p_le = _likelihood(k, n, qs, s, c)
    bad = [i for i, q in enumerate(qs) if q < model.unreliable_below or ids[i] in unreliable]
    p_dep = 0.0
    if bad and p_eq > 0 and k < n:  # with every pair agreeing, nobody departs
        # P(k, every unreliable annotator sound) = Π q_bad · P(k | those forced sound)
        forced = [1.0 if i in bad else q for i, q in enumerate(qs)]
        p_all_sound = math.prod(qs[i] for i in bad) * _likelihood(k, n, forced, s, c)[0]
        p_dep = min(max(1.0 - p_all_sound / p_eq, 0.0), 1.0)
    null = tuple(float(x) for x in _null_pmf(n, qs, s, c)) if n <= _MAX_EXACT_PAIRS else None
    return ItemEvidence(k=k, n=n, p_value=p_le, p_departure=p_dep,
                        unreliable=tuple(ids[i] for i in bad), null=null)


def combined_p_value(p_values: Sequence[float],
                     nulls: Sequence[Sequence[float] | None] | None = None) -> float:
    """One tail probability for a task from its controls' tail probabilities.

    The statistic is Fisher's ``Π p``. With every control's null law (``nulls``: the
    probabilities of its outcomes from the least to the most agreeing, so that their
    cumulative sums are the attainable p-values), the combination is exact up to a rounding:
    ``P(Π P_c ≤ Π p_c)`` with the controls' p-values drawn independently from their discrete
    null laws (the controls' slips are independent given the annotators). Each attainable
    ``−ln p`` is rounded *up* to a multiple of :data:`_LOG_STEP` (so the null products can
    only look smaller: never less conservative) and the laws are convolved on that grid;
    products below ``e^−``:data:`_LOG_FLOOR` are pooled (they are below any observed one
    read this way). Otherwise, or when the observed product is itself below that floor,
    Fisher's ``P(χ²(2m) ≥ −2 Σ ln p)``, conservative for discrete p-values. Either way there
    is one test per task, so its false-flag rate stays at the level however many controls
    there are.
    """
    ps = [min(max(float(p), 1e-300), 1.0) for p in p_values]
    if not ps:
        return 1.0
    observed = sum(math.log(p) for p in ps)
    fisher = float(stats.chi2.sf(-2.0 * observed, 2 * len(ps)))
    if nulls is None or any(x is None for x in nulls) or len(nulls) != len(ps) or -observed >= _LOG_FLOOR:
        return fisher
    mass = _null_mass(tuple(x if isinstance(x, tuple) else tuple(x) for x in nulls))
    need = int(math.ceil(-observed / _LOG_STEP - 1e-9))
    return float(min(mass[min(need, mass.size):].sum(), 1.0)) if need < mass.size else 0.0


@lru_cache(maxsize=4096)
def _null_mass(nulls: tuple[tuple[float, ...], ...]) -> np.ndarray:
    """The law of ``Π P_c`` on the rounded ``−ln`` grid of :func:`combined_p_value`,
    read-only. Cached: the tasks with the same rosters on every control share it."""
    cap = int(math.ceil(_LOG_FLOOR / _LOG_STEP))      # index `cap` pools everything beyond
    mass = np.zeros(1)
    mass[0] = 1.0
    for null in nulls:
        pmf = np.clip(np.asarray(null, dtype=float), 0.0, None)
        keep = pmf > 0
        tail = np.clip(np.minimum(np.cumsum(pmf), 1.0), 1e-300, 1.0)[keep]
        idx = np.minimum(np.ceil(-np.log(tail) / _LOG_STEP - 1e-9).astype(np.int64), cap)
        law = np.bincount(np.maximum(idx, 0), weights=pmf[keep])
        mass = np.convolve(mass, law)
        if mass.size > cap + 1:
            mass = np.concatenate([mass[:cap], [mass[cap:].sum()]])
    mass.flags.writeable = False
    return mass


def combine_flags(evidence: Mapping[str, ItemEvidence], level: float = DEFAULT_LEVEL,
                  posterior: float = DEFAULT_POSTERIOR,
                  names: Mapping[str, str] | None = None) -> dict[str, str]:
    """Which controls flag a task, and why: ``{control: reason}`` (empty: not flagged).

    *Unusual disagreement*: the controls' tail probabilities combined by Fisher's method
    are below ``level``; every control whose own tail probability is below ½ (fewer
    agreeing pairs than its typical task) then flags the task. *An unreliable answer that
    departs*: a control flags the task when the posterior that one of its unreliable
    annotators' answers departs is at least ``posterior``. ``names``: annotator id ->
    display name, for the reasons.
    """
    names = names or {}
    out: dict[str, str] = {}
    p_all = combined_p_value([ev.p_value for ev in evidence.values()],
                             [ev.null for ev in evidence.values()])
    for name, ev in evidence.items():
        why = []
        seen = (f"mean distance {ev.mean_distance:.3g} over {ev.n} pairs" if ev.mean_distance is not None
                else f"{ev.k} of {ev.n} pairs agree")
        if p_all < level and ev.p_value < 0.5:
            more = "farther apart" if ev.mean_distance is not None else "fewer"
            why.append(f"{seen}, {more} than these annotators usually reach "
                       f"(p = {ev.p_value:.2g}; all controls p = {p_all:.2g})")
        if ev.p_departure >= posterior:
            who = ", ".join(dict.fromkeys(names.get(a, a) for a in ev.unreliable))
            why.append(f"{seen} and unreliable annotator {who} likely "
                       f"departs (posterior {ev.p_departure:.2f})")
        if why:
            out[name] = "; ".join(why)
    return out


def _rank_one(sigmas: np.ndarray, weights: np.ndarray, chance: float) -> np.ndarray:
    """r_a with σ_a − c ≈ r_a · r̄_{−a} (r̄_{−a}: pair-weighted mean of the others' r)."""
    excess = np.clip(sigmas - chance, 0.0, None)
    r = np.sqrt(excess)
    total_w = weights.sum()
    for _ in range(200):
        others = (np.dot(weights, r) - weights * r) / np.maximum(total_w - weights, 1e-12)
        new = np.where(others > 0, excess / np.maximum(others, 1e-12), 0.0)
        if np.allclose(new, r, rtol=1e-9, atol=1e-12):
            r = new
            break
        r = new
    return r


def fit_flag_model(annotators: Mapping[str, tuple[float | None, int]], chance: float | None,
                   items: Iterable[tuple[int, int, Sequence[str]]] = ()) -> FlagModel | None:
    """The answer model of one control, from its annotators' σ and the tasks' pair counts.

    Parameters
    ----------
    annotators : mapping id -> (σ, pairs)
        Each annotator's σ on the control and the number of pairs it rests on.
    chance : float
        Share of the chance pairs below d* (``c``).
    items : iterable of (k, n, annotators)
        Every task's agreeing pairs, pairs and annotators (for the fit of ``s``).

    Returns
    -------
    FlagModel or None
        None when no annotator has a σ (nothing to read the tasks against).
    """
    if chance is None or not math.isfinite(chance):
        return None
    c = min(max(float(chance), 0.0), 0.999)
    ids = [a for a, (sg, n) in annotators.items() if sg is not None and n and math.isfinite(sg)]
    if not ids:
        return None
    sig = np.array([annotators[a][0] for a in ids], dtype=float)
    w = np.array([annotators[a][1] for a in ids], dtype=float)
    if len(ids) == 1:
        r = np.sqrt(np.clip(sig - c, 0.0, None))
    else:
        r = _rank_one(sig, w, c)
    # (s − c) q_a q_b = r_a r_b: with t = s − c, q_a = r_a / √t. t is at least the largest
    # r² among annotators with a fair share of pairs (so q ≤ 1) and at most 1 − c.
    solid = w >= 0.25 * np.median(w)
    t_min = float(np.max(r[solid] ** 2)) if solid.any() else float(np.max(r ** 2))
    t_max = 1.0 - c
    if t_min <= 0:
        return FlagModel(chance=c, same=c, reliability={a: 0.0 for a in ids}, default_reliability=0.0)
    t_min = min(t_min, t_max)
    # identical tasks (same k, n and annotators) count once, with their multiplicity
    groups = Counter((int(k), int(n), tuple(sorted(str(a) for a in ann))) for k, n, ann in items if n)

    def model(t: float) -> FlagModel:
        q = np.clip(r / math.sqrt(t), 0.0, 1.0)
        rel = {a: float(v) for a, v in zip(ids, q)}
        default = float(np.dot(w, q) / w.sum()) if w.sum() > 0 else 1.0
        order = np.argsort(q)
        median = float(q[order][np.searchsorted(np.cumsum(w[order]), w.sum() / 2)])
        return FlagModel(chance=c, same=c + t, reliability=rel, default_reliability=default,
                         unreliable_below=UNRELIABLE_BELOW * median)

    if not groups or t_max - t_min < 1e-9:
        return model(t_max if t_min >= t_max else t_min)
    fms = [model(float(t)) for t in np.linspace(t_min, t_max, _S_GRID)]
    lls = [0.0] * len(fms)
    # q of every annotator under every s, shape (_S_GRID, len(ids) + 1): the last column is the
    # default an unseen annotator gets (a crowd task has thousands of annotators to look up)
    q_grid = np.array([[fm.reliability[a] for a in ids] + [fm.default_reliability] for fm in fms])
    column = {a: x for x, a in enumerate(ids)}
    for (k, n, ann), times in groups.most_common(_MAX_FIT_GROUPS):
        cols = [column.get(a, len(ids)) for a in ann] if len(ann) >= 2 else [len(ids)] * 2
        qs = q_grid[:, cols]
        js = sound_counts(qs)  # every s of the grid at once, shape (_S_GRID, m + 1)
        for g, fm in enumerate(fms):
            lls[g] += times * math.log(max(_likelihood(k, n, qs[g], fm.same, c, js[g])[0], 1e-300))
    best, best_ll = None, -math.inf
    for fm, ll in zip(fms, lls):
        if ll > best_ll:
            best, best_ll = fm, ll
    return best


# ---------------------------------------------------------------------------------------
# The distance model: the task's mean pair distance, read against the control's own
# distance distributions (docs/formulas.md "Flags"). It replaces the count of pairs below
# d* wherever the control's distance histogram is known: the count throws away how far
# apart two answers are, and on a control where careful annotators routinely differ a
# little (a 5-point rating within a point of the truth, d* at exact agreement) a count
# cannot tell that spread from a departure.
# ---------------------------------------------------------------------------------------


def unreliable_annotators(annotators: Iterable[str],
                          controls: Iterable[tuple[Mapping[str, float], float, Mapping[str, int]]]) -> set[str]:
    """The annotators unreliable across the project's controls taken together.

    On each control an annotator's reliability is read relative to the control's median
    (``q_a / median``); an annotator whose pair-weighted mean of those ratios over the
    controls is under :data:`UNRELIABLE_BELOW` is unreliable on every control. Carelessness
    is a trait of the annotator more than of one control, and one control's tasks may be too
    few, or its careful annotators too divided (an ambiguous choice), to single them out
    alone: the per-control cut (``unreliable_below``) still applies on its own.

    Parameters
    ----------
    annotators : iterable of str
        The annotators to judge (a task's, for instance).
    controls : iterable of (reliability, median, pairs)
        Per control: each annotator's reliability, the control's (pair-weighted) median
        reliability, and each annotator's pairs (the weights).

    Returns
    -------
    set of str
    """
    wanted = set(annotators)
    num: dict[str, float] = {}
    den: dict[str, float] = {}
    for rel, median, pairs in controls:
        if not median > 0:
            continue
        for a in wanted:
            q, w = rel.get(a), pairs.get(a, 0)
            if q is None or not w:
                continue
            num[a] = num.get(a, 0.0) + w * min(q / median, 1.0)
            den[a] = den.get(a, 0.0) + w
    return {a for a in num if num[a] / den[a] < UNRELIABLE_BELOW}

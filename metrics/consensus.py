"""Consensus of any kind of answer, and who departs from it (docs/formulas.md "Flags").

For controls whose answers are not a few labels — regions, spans, text, rankings, numbers,
any kind a :class:`~.distances.base.Distance` compares — each task's consensus is its
*medoid*: the answer with the least reliability-weighted distance to the task's other
answers (a real answer, so it can be handed back as it is). Each answer's distance to it
(the medoid's own: to its nearest neighbour) is then read by a model of those distances:

* a *sound* answer lies ``f_s`` from the consensus — a unimodal histogram fitted on the
  control's answers, what careful work looks like (jitter, a boundary a character off);
* a *departing* answer lies where careful work rarely goes (``f_d``: where the
  departures land past 97.5 % of the careful annotators' distances, or where the departing
  annotators' answers land more than twice as often as the careful ones', over a floor
  spread up to the farthest distance seen): a shifted box, a missed entity, a random click
  — a systematic partial error counts as soon as careful answers seldom go there, whether
  or not it is anywhere near what chance would give;
* annotator ``a`` answers soundly with probability ``θ_a`` (held at
  :data:`~.sound_share.CAREFUL` unless their distances clearly say otherwise,
  :mod:`.sound_share`);
* a task is *ambiguous* with probability ``ρ``: then a sound answer follows the other
  reading half the time and lies anywhere up to the farthest distance (uniform), so careful
  annotators far from the consensus read as a split task rather than as departures.

A task *holds a departing answer or is ambiguous* with posterior
``1 − P(ordinary) Π_n P(sound | ordinary, d_n)`` over its non-consensus answers. Fitted by
EM; reading a task needs only its own answers and the fitted numbers (:func:`read_consensus`).
"""
from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field
from typing import Any, Hashable, Sequence

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.stats import binom

from .distances.base import Distance, compute_distinct, value_keys
from .distances.registry import DistanceLike, get_distance
from .departures import REGION_KINDS
from .error_types import RegionSet
from .region_rates import RegionRates, fit_region_rates
from .sound_share import CAREFUL, DEPARTS_AT, sound_profile

__all__ = ["DistanceModel", "ConsensusReading", "Medoids", "TaskPairs", "task_pairs", "medoids", "fit_distance_model",
           "read_consensus", "consensus_model", "fit_consensus", "compare_regions",
           "RegionComparison"]

_BINS = 50
_SOUND_PSEUDO = 25.0            # answers spread evenly over f_s's bins: a floor under its tail
_DEPARTS_PSEUDO = 5.0           # answers spread evenly over f_d's bins: a departure may land anywhere
_SOUND_REACH = 0.975            # careful answers' quantile beyond which f_d learns where departures land
_EXCESS = 2.0                   # departing annotators' share of a bin over the careful ones' where f_d learns too
_TYPICAL_MIN = 20.0             # sound weight of an annotator whose shares count towards f_s's typical annotator
_EXCESS_LEVEL = 0.05            # chance of any annotator's own excess passing its bar where nobody departs
_PERMUTATIONS = 40              # random deals of the answers that set that bar
_PERMUTATION_SEED = 20261126
_AMBIGUITY_PRIOR = (1.0, 19.0)  # Beta prior of ρ
_AMBIGUITY_START = 0.05
_MAX_ITER = 200
_TOL = 1e-7


@dataclass(frozen=True)
class Medoids:
    """Each task's consensus answer and every answer's distance to it.

    Attributes
    ----------
    items : ndarray, shape (T,)
        Task ids, first-seen order.
    consensus : ndarray of int, shape (T,)
        Input row of each task's consensus answer.
    task_of : ndarray of int, shape (N,)
        Each answer's task index.
    distance : ndarray, shape (N,)
        Distance to the consensus; for the consensus itself, to its nearest other answer;
        NaN for an answer alone on its task.
    is_consensus : ndarray of bool, shape (N,)
    """

    items: np.ndarray
    consensus: np.ndarray
    task_of: np.ndarray
    distance: np.ndarray
    is_consensus: np.ndarray


def _within_pairs(starts: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every within-task pair ``i < j`` of rows sorted by task, grouped by task size."""
    out_i, out_j = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    for m in np.unique(sizes):
        if m < 2:
            continue
        a, b = np.triu_indices(int(m), k=1)
        first = starts[sizes == m]
        out_i.append((first[:, None] + a[None, :]).ravel())
        out_j.append((first[:, None] + b[None, :]).ravel())
    return np.concatenate(out_i), np.concatenate(out_j)


@dataclass(frozen=True)
class TaskPairs:
    """Every within-task pair of a control's answers and its distance, computed once (the
    medoids are found again with the fitted weights from the same distances).

    Attributes
    ----------
    items : ndarray, shape (T,)
        Task ids, first-seen order.
    task_of : ndarray of int, shape (N,)
        Each answer's task index (input order).
    order : ndarray of int, shape (N,)
        The input row of each answer sorted by task.
    starts : ndarray of int, shape (T,)
        Each task's first position in ``order``.
    i, j : ndarray of int, shape (n_pairs,)
        Positions in ``order`` of each pair's answers.
    d : ndarray, shape (n_pairs,)
    values : sequence, shape (N,)
        The answers in ``order`` (ties between medoids are broken by what they say).
    keys : ndarray of int, shape (N,)
        Equal answers share a key (``value_keys`` of ``values``).
    """

    items: np.ndarray
    task_of: np.ndarray
    order: np.ndarray
    starts: np.ndarray
    i: np.ndarray
    j: np.ndarray
    d: np.ndarray
    values: Sequence[Any] = ()
    keys: np.ndarray | None = None
    # canonical texts of the values already read (medoids runs several times on one set of pairs)
    texts: dict[tuple[int, int], str] = field(default_factory=dict, compare=False, repr=False)
    # the values' regions packed per kind, and the last comparison with a set of consensus
    # answers (compare_regions runs after each fit and to read, often on the same medoids)
    regions: dict[str, "RegionSet"] = field(default_factory=dict, compare=False, repr=False)
    compared: dict[tuple[str, bytes], "RegionComparison"] = field(default_factory=dict, compare=False, repr=False)


def task_pairs(item: Sequence[Hashable] | np.ndarray, values: Sequence[Any], distance: DistanceLike) -> TaskPairs:
    """The distances of every pair of answers on the same task.

    Parameters
    ----------
    item : sequence, shape (N,)
        Task of each answer.
    values : sequence, shape (N,)
        The answers (common-model values of one control).
    distance : str, Distance or callable
        The control's distance.
    """
    dist: Distance = get_distance(distance)
    task, items = pd.factorize(pd.Series(item if isinstance(item, (np.ndarray, pd.Series)) else list(item)),
                               sort=False)
    n = task.size
    order = np.argsort(task, kind="stable")
    t = task[order]
    starts = np.flatnonzero(np.r_[True, t[1:] != t[:-1]]) if n else np.zeros(0, dtype=np.int64)
    i, j = _within_pairs(starts, np.diff(np.r_[starts, n]))
    vals = [values[k] for k in order]
    keys = value_keys(vals)
    d = (np.asarray(compute_distinct(dist, dist.prepare(vals), keys, i, j), dtype=float)
         if i.size else np.zeros(0))
    return TaskPairs(items=np.asarray(items), task_of=task.astype(np.int64), order=order, starts=starts, i=i, j=j, d=d,
                     values=vals, keys=keys)


def _canonical(v: Any) -> str:
    """A text of ``v`` that equal values share whatever their hash seed (a set's repr
    follows its hash order)."""
    if isinstance(v, (set, frozenset)):
        return "{" + ",".join(sorted(_canonical(x) for x in v)) + "}"
    if isinstance(v, (tuple, list)):
        return "(" + ",".join(_canonical(x) for x in v) + ")"
    if isinstance(v, dict):
        return "{" + ",".join(sorted(f"{_canonical(k)}:{_canonical(x)}" for k, x in v.items())) + "}"
    return repr(v)


def medoids(pairs: TaskPairs, weight: np.ndarray | None = None) -> Medoids:
    """Each task's medoid, and each answer's distance to it.

    Parameters
    ----------
    pairs : TaskPairs
        From :func:`task_pairs`.
    weight : ndarray, shape (N,), optional
        How much each answer counts in the others' sums (their annotator's θ); ties go to
        the heavier answer, then to the answer first in a canonical order of the values
        (never to the first row: the order of annotations in an export is the database's,
        and two servers holding one project must name the same consensus). Default 1.

    Returns
    -------
    Medoids
    """
    order, starts, i, j, d = pairs.order, pairs.starts, pairs.i, pairs.j, pairs.d
    n = order.size
    t = pairs.task_of[order]
    ws = (np.ones(n) if weight is None else np.asarray(weight, dtype=float))[order]
    total = np.bincount(i, weights=ws[j] * d, minlength=n) + np.bincount(j, weights=ws[i] * d, minlength=n)
    # the medoid: least weighted sum; among equal sums the heavier answer, then the first
    best = np.minimum.reduceat(total, starts) if n else np.zeros(0)
    tied = total <= best[t] * (1 + 1e-12) + 1e-12
    heaviest = np.maximum.reduceat(np.where(tied, ws, -np.inf), starts) if n else np.zeros(0)
    candidate = tied & (ws >= heaviest[t] - 1e-12)
    canonical = np.zeros(n)
    still = candidate & (np.bincount(t, weights=candidate, minlength=starts.size) > 1)[t]
    if still.any() and pairs.keys is not None and len(pairs.values) == n:
        # ties of equal answers need no order (any of them says the same); the values'
        # text orders the others, each distinct value read once
        k = pairs.keys
        lo = np.full(starts.size, np.iinfo(np.int64).max)
        hi = np.full(starts.size, np.iinfo(np.int64).min)
        np.minimum.at(lo, t[still], k[still])
        np.maximum.at(hi, t[still], k[still])
        rows = np.flatnonzero(still & (lo != hi)[t])
        if rows.size:
            # cached per task and key: a value's key ignores what the task alone decides (a
            # span's words), so one key's text read in another task could order this one's
            # ties by that task's words -- by whichever row came first
            texts = pairs.texts
            at = list(zip(t[rows].tolist(), k[rows].tolist()))
            for tk, r in zip(at, rows.tolist()):
                if tk not in texts:
                    texts[tk] = _canonical(pairs.values[r])
            order_of = np.argsort([texts[tk] for tk in at], kind="stable")
            canonical[rows[order_of]] = np.arange(rows.size)
    rank = np.lexsort((np.arange(n), canonical, -ws, ~tied, t))
    first_of_task = np.r_[True, t[rank][1:] != t[rank][:-1]] if n else np.zeros(0, dtype=bool)
    med_sorted = rank[first_of_task]                         # sorted row of each task's medoid
    is_med = np.zeros(n, dtype=bool)
    is_med[med_sorted] = True
    to_med = np.full(n, np.nan)
    hit_i, hit_j = is_med[i], is_med[j]
    to_med[j[hit_i]] = d[hit_i]
    to_med[i[hit_j]] = d[hit_j]
    nearest = np.full(n, np.inf)
    np.minimum.at(nearest, i, d)
    np.minimum.at(nearest, j, d)
    to_med[is_med] = np.where(np.isfinite(nearest[is_med]), nearest[is_med], np.nan)
    out_d = np.empty(n)
    out_d[order] = to_med
    out_med = np.zeros(n, dtype=bool)
    out_med[order] = is_med
    return Medoids(items=pairs.items, consensus=order[med_sorted], task_of=pairs.task_of,
                   distance=out_d, is_consensus=out_med)


@dataclass(frozen=True)
class DistanceModel:
    """The fitted distance model of one control.

    Attributes
    ----------
    edges : ndarray, shape (B + 1,)
        Equal-width bins on ``[0, hi]``, ``hi`` the farthest distance of the fit; a
        distance past ``hi`` falls in the last bin.
    sound_pdf : ndarray, shape (B,)
        ``f_s``: density of a sound answer's distance to the consensus, per bin.
    departs_pdf : ndarray, shape (B,)
        ``f_d``: density of a departing answer's distance: the histogram of the departures
        beyond the reach of careful work (97.5 % of careful annotators' distances) or where
        the departing annotators' answers land more than twice as often as the careful
        ones', over a floor spread evenly on ``[0, hi]`` (uniform when nobody departs).
    annotators : tuple of str, shape (A,)
    sound : ndarray, shape (A,)
        θ: each annotator's share of sound answers, as the model uses it (CAREFUL unless
        their departures are clear).
    sound_best, sound_ci : ndarray, shapes (A,), (A, 2)
        θ̂, the maximum of the annotator's profile likelihood (their *reliability*), and
        its 95 % interval.
    ambiguity : float
        ρ.
    n_answers : ndarray of int, shape (A,)
    distance : str
        The distance's name.
    moved, missed : RegionRates or None
        For regions (:data:`REGION_KINDS`, ``regions`` names the kind), how often each
        annotator puts a region they share with the consensus elsewhere (IoU under the
        error classes' cut) and leaves out one the consensus marks (:mod:`.region_rates`):
        a shift, or a single missed entity of six, is read by the annotator's rate, not by
        how far it puts one answer among careful misses and other labels. None for other
        kinds.
    """

    edges: np.ndarray
    sound_pdf: np.ndarray
    departs_pdf: np.ndarray
    annotators: tuple[str, ...]
    sound: np.ndarray
    sound_best: np.ndarray
    sound_ci: np.ndarray
    ambiguity: float
    n_answers: np.ndarray
    distance: str = ""
    n_iter: int = 0
    moved: RegionRates | None = None
    missed: RegionRates | None = None
    regions: str = ""

    @property
    def other_pdf(self) -> float:
        """Density of a sound answer of an ambiguous task's other reading: uniform on [0, hi]."""
        return 1.0 / float(self.edges[-1])

    @property
    def default_sound(self) -> float:
        """θ of an annotator the fit has not seen: the answer-weighted mean."""
        w = self.n_answers.astype(float)
        return float(np.dot(w, self.sound) / w.sum()) if w.sum() > 0 else CAREFUL

    def theta(self, annotators: Sequence[str]) -> np.ndarray:
        """θ of ``annotators`` (the default for unseen ones), shape (n,)."""
        index = {a: k for k, a in enumerate(self.annotators)}
        # looked up once per distinct annotator (a control has tens of thousands of answers)
        codes, distinct = pd.factorize(pd.Series([str(a) for a in annotators], dtype=object), sort=False)
        default = self.default_sound if any(a not in index for a in distinct) else CAREFUL
        per = np.array([self.sound[index[a]] if a in index else default for a in distinct], dtype=float)
        return per[codes] if len(codes) else np.zeros(0)

    def weights(self, annotators: Sequence[str]) -> np.ndarray:
        """How much each answer of ``annotators`` counts towards its task's consensus: θ,
        times the region rates' θ where there are, shape (n,)."""
        theta = self.theta(annotators)
        for rates in (self.moved, self.missed):
            if rates is not None:
                theta = theta * rates.theta(annotators)
        return theta

    def reliability(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each annotator's reliability θ̂ (shape (A,)), its 95 % interval (shape (A, 2))
        and whether they depart (shape (A,) bool): with region rates, the share of answers
        sound in every respect, taken as independent (θ̂ and the interval's bounds
        multiplied by those of the rates that let them depart), departing in any."""
        best, ci, departs = self.sound_best, self.sound_ci, self.sound < CAREFUL
        for part in (self.moved, self.missed):
            if part is None:
                continue
            gone = part.sound < 1.0
            # only where it lets them depart: else their shifts and misses are read by the
            # distance, as careful work or its departures, and would count twice
            best = best * np.where(gone, part.sound_best, 1.0)
            ci = ci * np.where(gone[:, None], part.sound_ci, 1.0)
            departs = departs | gone
        return best, ci, departs

    def densities(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``f_s(d)`` and ``f_d(d)``, shapes of ``d`` (NaN → 1, 1: an answer alone tells nothing)."""
        d = np.asarray(d, dtype=float)
        b = _bin(np.nan_to_num(d, nan=0.0), self.edges)
        alone = np.isnan(d)
        return np.where(alone, 1.0, self.sound_pdf[b]), np.where(alone, 1.0, self.departs_pdf[b])


@dataclass(frozen=True)
class ConsensusReading:
    """What the model says about each task and answer (:func:`read_consensus`).

    Attributes
    ----------
    medoids : Medoids
        Consensus answers and distances (their ``items``, ``task_of`` index the arrays below).
    consensus_p : ndarray, shape (T,)
        Posterior that the consensus answer is sound.
    p_ambiguous : ndarray, shape (T,)
    p_flag : ndarray, shape (T,)
        Posterior that the task holds a departing answer or is ambiguous.
    p_departs : ndarray, shape (N,)
        Per answer (input order): posterior that it departs (0 for the consensus itself).
    p_other_reading : ndarray, shape (N,)
        Per answer: posterior that it is a sound answer of the task's other reading.
    log_lr_ambiguous : ndarray, shape (T,)
        log P(answers | ambiguous) − log P(answers | ordinary), whatever ρ.
    p_moved, p_missed : ndarray, shape (N,), or None
        With region rates: the posterior that the answer puts a region elsewhere, or leaves
        one out, as careful work would not (their parts of ``p_departs``).
    """

    medoids: Medoids
    consensus_p: np.ndarray
    p_ambiguous: np.ndarray
    p_flag: np.ndarray
    p_departs: np.ndarray
    p_other_reading: np.ndarray
    log_lr_ambiguous: np.ndarray
    p_moved: np.ndarray | None = None
    p_missed: np.ndarray | None = None


def _bin(d: np.ndarray, edges: np.ndarray) -> np.ndarray:
    width = edges[1] - edges[0]
    return np.clip(np.floor(d / width), 0, edges.size - 2).astype(np.int64)


@dataclass
class _Factors:
    """Per answer: ``u`` = f_s(d), ``v`` = f_d(d), ``w`` = the other reading's density, θ of
    its annotator, and whether it is its task's consensus (the same under both readings)."""

    u: np.ndarray
    v: np.ndarray
    w: float
    theta: np.ndarray
    main: np.ndarray

    @functools.cached_property
    def ordinary(self) -> np.ndarray:
        # cached: the posterior, the E step and the reading each use it
        return self.theta * self.u + (1 - self.theta) * self.v

    @functools.cached_property
    def split(self) -> np.ndarray:
        return np.where(self.main, self.ordinary,
                        self.theta * 0.5 * (self.u + self.w) + (1 - self.theta) * self.v)


def _log_ratio(f: _Factors, task: np.ndarray, n_tasks: int) -> np.ndarray:
    """log P(answers | ambiguous) − log P(answers | ordinary) of each task, shape (T,)."""
    return (np.bincount(task, weights=np.log(f.split), minlength=n_tasks)
            - np.bincount(task, weights=np.log(f.ordinary), minlength=n_tasks))


def _task_posterior(f: _Factors, task: np.ndarray, n_tasks: int, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """P(ambiguous | task) and each task's log evidence, shapes (T,)."""
    return _posterior_of_logs(np.log(f.ordinary), np.log(f.split), task, n_tasks, rho)


def _posterior_of_logs(log_ordinary: np.ndarray, log_split: np.ndarray, task: np.ndarray, n_tasks: int,
                       rho: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_task_posterior` from each answer's log density under either reading, shapes (N,)."""
    return _posterior_of_sums(np.bincount(task, weights=log_ordinary, minlength=n_tasks),
                              np.bincount(task, weights=log_split, minlength=n_tasks), rho)


def _posterior_of_sums(log_ordinary: np.ndarray, log_split: np.ndarray, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_task_posterior` from each task's log density under either reading, shapes (T,)."""
    log_o = log_ordinary + math.log(1 - rho)
    log_a = log_split + math.log(rho)
    top = np.maximum(log_o, log_a)
    # exp(log_o − top) + exp(log_a − top): one of the two is exp(0) = 1 exactly, so one
    # exp of the other (the smaller; NaN stays NaN) gives the same sum
    norm = top + np.log(1.0 + np.exp(np.minimum(log_o - top, log_a - top)))
    return np.exp(log_a - norm), norm


@dataclass(frozen=True)
class _AnswerGroups:
    """The answers of an EM run grouped by their cell of the factor grid and whether they
    are lone: group ``2·cell + lone`` (shape (G,) = 4·A·B), and each task's answers per group.

    Attributes
    ----------
    size : ndarray, shape (G,)
        Answers per group.
    by_task : scipy.sparse.csr_matrix, shape (T, G)
        A task's answers in each group.
    by_group : scipy.sparse.csr_matrix, shape (G, T)
        Its transpose.
    """

    size: np.ndarray
    by_task: sparse.csr_matrix
    by_group: sparse.csr_matrix

    @classmethod
    def of(cls, cell: np.ndarray, n_cells: int, lone: np.ndarray, task: np.ndarray,
           n_tasks: int) -> "_AnswerGroups":
        """From each answer's cell (shape (N,), in ``[0, n_cells)``), lone flag and task."""
        n_groups = 2 * n_cells
        group = 2 * cell + lone
        counts = sparse.csr_matrix((np.ones(group.size), (task, group)), shape=(n_tasks, n_groups))
        return cls(size=np.bincount(group, minlength=n_groups).astype(float), by_task=counts,
                   by_group=counts.T.tocsr())

    def per_task(self, value: np.ndarray) -> np.ndarray:
        """Each task's sum of its answers' ``value`` (one per group, shape (G,) or (G, k)),
        shape (T,) or (T, k)."""
        return self.by_task @ value

    def per_group(self, value: np.ndarray) -> np.ndarray:
        """Each group's sum of its answers' task ``value`` (shape (T,)), shape (G,)."""
        return self.by_group @ value


def _cell_factors(theta: np.ndarray, sound: np.ndarray, departs: np.ndarray, w: float) -> np.ndarray:
    """The E step's per-answer factors on the (reading, annotator, bin) grid: an answer's
    f_s, f_d and θ depend only on its bin and annotator (and its reading on whether it is
    the consensus), so each factor is computed once per cell, with the very float
    operations of :class:`_Factors` per answer (cell ``main·A·B + a·B + b``), and EM sums
    them over its groups of answers (:class:`_AnswerGroups`).

    Parameters
    ----------
    theta : ndarray, shape (A,)
    sound, departs : ndarray, shape (B,)
        f_s and f_d per bin.
    w : float
        The other reading's density.

    Returns
    -------
    ndarray, shape (7, 2·A·B), rows: log ordinary, log split (the consensus: as
    ordinary), θ, f_s, ordinary ``θ f_s + (1 − θ) f_d``, ``θ f_s / split`` (the split
    reading's share of the main reading's sound answers), ``θ ½ w / split`` (0 for the
    consensus).
    """
    t, u, v = theta[:, None], sound[None, :], departs[None, :]
    ordinary = t * u + (1 - t) * v
    split = t * 0.5 * (u + w) + (1 - t) * v
    out = np.empty((7, 2, theta.size, sound.size))     # (factor, reading: split / consensus, a, b)
    out[0] = np.log(ordinary)
    out[1, 0], out[1, 1] = np.log(split), out[0, 0]
    out[2], out[3], out[4] = t, u, ordinary
    out[5, 0], out[5, 1] = t * 0.5 * u / split, t * u / ordinary
    out[6, 0], out[6, 1] = t * 0.5 * w / split, 0.0
    return out.reshape(7, -1)


def _histogram_pdf(d: np.ndarray, weight: np.ndarray, edges: np.ndarray, pseudo: float,
                   bins: np.ndarray | None = None) -> np.ndarray:
    """A density on the bins from weighted distances, smoothed over neighbouring bins, with
    ``pseudo`` answers spread evenly (a floor under it). ``bins``: ``_bin(d, edges)`` when
    the caller has it already."""
    return _pdf_of_histogram(np.bincount(_bin(d, edges) if bins is None else bins, weights=weight,
                                         minlength=edges.size - 1), edges, pseudo)


def _pdf_of_histogram(h: np.ndarray, edges: np.ndarray, pseudo: float) -> np.ndarray:
    """:func:`_histogram_pdf` from the weighted counts per bin ``h`` (shape (B,))."""
    h = _smooth_rows(h[None])[0] + pseudo / (edges.size - 1)
    return h / (h.sum() * (edges[1] - edges[0]))


def _smooth_rows(h: np.ndarray) -> np.ndarray:
    """Each row of ``h`` (shape (R, B)) smoothed over neighbouring bins (¼, ½, ¼; the
    end bins repeated)."""
    p = np.concatenate((h[:, :1], h, h[:, -1:]), axis=1)
    return 0.25 * p[:, :-2] + 0.5 * p[:, 1:-1] + 0.25 * p[:, 2:]


def _unimodal(h: np.ndarray) -> np.ndarray:
    """The closest unimodal histogram to ``h`` (least squares: rising to the mode, falling
    after it), so that a bump far out — a few tasks where everybody departs — is spread
    over the whole tail instead of passing for sound work."""
    mode = int(np.argmax(h))
    return (np.concatenate((_isotonic(h[:mode + 1]), _isotonic(h[mode + 1:][::-1])[::-1])) if mode + 1 < h.size
            else _isotonic(h))


def _lone(d: np.ndarray, task: np.ndarray, n_tasks: int) -> np.ndarray:
    """Per answer, whether every other answer of its task is less than half as far from the
    consensus: a slip of its own annotator, not a task where several answers depart."""
    if d.size == 0:
        return np.zeros(0, dtype=bool)
    s = np.lexsort((-d, task))
    ts, ds = task[s], d[s]
    head = np.flatnonzero(np.r_[True, ts[1:] != ts[:-1]])
    top1, top2 = np.full(n_tasks, -np.inf), np.full(n_tasks, -np.inf)
    top1[ts[head]] = ds[head]
    nxt = head + 1
    same = nxt < ts.size
    same[same] = ts[nxt[same]] == ts[head[same]]
    top2[ts[head[same]]] = ds[nxt[same]]
    other = np.where(d < top1[task], top1[task], top2[task])
    return other < 0.5 * d


def _sound_pdf(weight: np.ndarray, a: np.ndarray, b: np.ndarray, n_ann: int, edges: np.ndarray,
               lone: np.ndarray) -> np.ndarray:
    """``f_s``: the unimodal histogram of the answers' sound weights (smoothed, with
    :data:`_SOUND_PSEUDO` answers spread evenly as a floor), raised wherever the typical
    annotator lands more often — per bin, the median over the annotators with
    :data:`_TYPICAL_MIN` answers' worth of weight of their smoothed shares.

    A far bump that most annotators share is careful work: careful annotators who miss one
    box in twenty each put one answer in ten or so a whole box away, and under the unimodal
    histogram alone those answers read as departures, so that careful annotators were let
    depart for them (a project of such annotators and nothing else had up to 8.8 % of its
    tasks flagged) and an annotator off by half a box width, whose far answers were fewer,
    stayed hidden among them (with :func:`_own_excess`, ``bench_flags --misses 0.02``'s
    shifted boxes recall 0.64 → 0.98). One annotator's own bump never moves the median.
    Past the mode only ``lone`` far answers count towards it (:func:`_lone`): a few tasks
    where several answers depart at once are no careful annotator's habit, but in a small
    project they are a large share of each annotator's answers (24 tasks, two where
    everybody differed: one of them went unflagged).

    Parameters
    ----------
    weight : ndarray, shape (N,)
        Each answer's sound weight (EM's).
    a, b : ndarray of int, shape (N,)
        Each answer's annotator and bin.
    n_ann : int
    edges : ndarray, shape (B + 1,)
    lone : ndarray of bool, shape (N,)
        :func:`_lone`.

    Returns
    -------
    ndarray, shape (B,)
    """
    n_bins = edges.size - 1
    cell = a * n_bins + b
    per = np.bincount(cell, weights=weight, minlength=n_ann * n_bins).reshape(n_ann, n_bins)
    per_lone = np.bincount(cell, weights=weight * lone, minlength=n_ann * n_bins).reshape(n_ann, n_bins)
    return _sound_pdf_of_sums(per, per_lone, edges)


def _sound_pdf_of_sums(per: np.ndarray, per_lone: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """:func:`_sound_pdf` from the sound weights summed per annotator and bin, shape (A, B):
    ``per`` of every answer, ``per_lone`` of the lone ones."""
    n_bins = edges.size - 1
    h = _smooth_rows(per.sum(axis=0)[None])[0]
    if h.sum() > 0:
        mode = int(np.argmax(h))
        h = _unimodal(h)
        tot = per.sum(axis=1)
        typical = tot >= _TYPICAL_MIN
        if typical.sum() >= 3:
            # past the mode, only lone far answers count: tasks where several answers depart
            # at once are not what a careful annotator does now and then
            alone = np.where(np.arange(n_bins) <= mode, per, per_lone)
            shares = _smooth_rows(alone[typical]) / tot[typical, None]
            h = np.maximum(h, np.median(shares, axis=0) * h.sum())
    h = h + _SOUND_PSEUDO / n_bins
    return h / (h.sum() * (edges[1] - edges[0]))


def _tail_excess(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per annotator (rows of the answer counts ``h``, shape (A, B)): the least chance,
    over the cuts past everybody else's mode, of a tail at least as heavy as theirs given
    everybody else's (binomial), among the cuts where theirs is more than :data:`_EXCESS`
    times as heavy (1 where none is); and that cut."""
    n_ann, n_bins = h.shape
    rest = h.sum(axis=0) - h
    n_a, n_rest = h.sum(axis=1, keepdims=True), np.maximum(rest.sum(axis=1, keepdims=True), 1.0)
    k = np.cumsum(h[:, ::-1], axis=1)[:, ::-1]                   # their answers at bin >= j
    q = np.cumsum(rest[:, ::-1], axis=1)[:, ::-1] / n_rest       # everybody else's share there
    testable = ((np.arange(n_bins) > rest.argmax(axis=1)[:, None]) & (k > _EXCESS * n_a * q)
                & (rest.sum(axis=1, keepdims=True) > 0))
    chance = np.where(testable, binom.sf(k - 1, n_a, np.clip(q, 1e-12, 1.0)), 1.0)
    cut = chance.argmin(axis=1)
    return chance[np.arange(n_ann), cut], cut


def _own_excess(a: np.ndarray, b: np.ndarray, n_ann: int, edges: np.ndarray) -> np.ndarray:
    """Per answer, a departure density of its annotator's own, where they have one: the
    histogram of their answers past the cut (beyond everybody else's mode) where their tail
    is heaviest against everybody else's (:func:`_tail_excess`), if it is heavier than
    chance allows; zero elsewhere and for everybody else.

    The bar is the :data:`_EXCESS_LEVEL` quantile of the least such chance over all
    annotators when the answers are dealt to the annotators at random
    (:data:`_PERMUTATIONS` deals, seeded: the fit stays deterministic), so that in a
    project where nobody departs one annotator is let go in twenty at most, whatever the
    number of cuts and annotators.

    The first test of each annotator (while nobody departs) reads their answers against
    this as well as against where the farthest answers land (:func:`_beyond`): an annotator
    whose departures fall within the reach of careful work — boxes off by half a width, among
    careful annotators whose boxes wander by 2 % of the image and who miss one in twenty —
    is then let depart for what sets them apart, where :func:`_beyond`'s farthest answers
    were everybody's misses. Without the bar, and with a floor outside the excess, every
    answer out of ``f_s``'s reach read as a likelier departure than careful work: all 50
    careful annotators of a 100,000-task project were let depart.

    Parameters
    ----------
    a, b : ndarray of int, shape (N,)
        Each answer's annotator and bin.
    n_ann : int
    edges : ndarray, shape (B + 1,)

    Returns
    -------
    ndarray, shape (N,)
    """
    n_bins = edges.size - 1

    def counts(who: np.ndarray, bins: np.ndarray) -> np.ndarray:
        return np.bincount(who * n_bins + bins, minlength=n_ann * n_bins).reshape(n_ann, n_bins).astype(float)

    h = counts(a, b)
    chance, cut = _tail_excess(h)
    # the deals laid out canonically: the bins sorted, dealt into the annotators' places
    # ordered by their answer count and bins. Dealt from the rows as they came, the bar
    # followed the export's order of annotations and the annotators' ids: a project on
    # PostgreSQL and the same on SQLite had one task flagged on one server only
    ranked = np.lexsort(tuple(h[:, ::-1].T) + (h.sum(axis=1),))
    places = np.repeat(ranked, h.sum(axis=1).astype(np.int64)[ranked])
    bins = np.sort(b)
    rng = np.random.default_rng(_PERMUTATION_SEED)
    dealt = [float(_tail_excess(counts(places[rng.permutation(places.size)], bins))[0].min())
             for _ in range(_PERMUTATIONS)]
    excess = chance < np.quantile(dealt, _EXCESS_LEVEL)
    fine = excess[:, None] & (np.arange(n_bins) >= cut[:, None])
    own = _smooth_rows(h * fine)
    total = own.sum(axis=1, keepdims=True)
    pdf = np.where(fine & (total > 0), own / (np.maximum(total, 1e-300) * (edges[1] - edges[0])), 0.0)
    return pdf[a, b]


def _beyond(d: np.ndarray, b: np.ndarray, by_careful: np.ndarray, edges: np.ndarray,
            departs: np.ndarray | None = None) -> np.ndarray:
    """``f_d``: where departures land beyond the reach of careful work (the
    :data:`_SOUND_REACH` quantile of the careful annotators' distances), and wherever the
    departing annotators' answers land more than :data:`_EXCESS` times as often as the
    careful ones' (each share smoothed over neighbouring bins), over a floor. Past the
    reach only, a departure that careful work also makes now and then was read as careful
    work: careful annotators who miss one entity in fifty leave one answer in twelve a
    missed entity away from the consensus, within their 97.5 %, and an annotator who misses
    a third of the entities had each single miss read as departing with 0.13 (recall 0.57 on
    ``bench_flags --misses 0.02``'s entity shape; 1.00 since). Where they land as often as
    the careful, their answers are careful work's, which keeps f_d from taking in a
    departing annotator's sound answers.

    ``departs``: each answer's weight as a departure (EM's); None while nobody departs:
    every answer past the reach stands in for the departures, so that the first test of
    each annotator reads an answer out there as a departure, not against a density spread
    over the careful answers' own range as well. Spread over ``[0, hi]`` instead, a
    departure density made each of an annotator's careful answers count against their
    departures as much as their far answers counted for them: a box annotator off by half a
    box width on 20 % of their tasks, among careful annotators whose boxes wander by 2 % of
    the image, was never let depart (recall 0.06 at one seed in three)."""
    region = _departure_region(b, by_careful, edges.size - 1, departs is not None)
    weight = region[b].astype(float) if departs is None else departs * region[b]
    return _histogram_pdf(d, weight, edges, _DEPARTS_PSEUDO, bins=b)


def _departure_region(b: np.ndarray, by_careful: np.ndarray, n_bins: int, theirs_too: bool) -> np.ndarray:
    """:func:`_beyond`'s bins where departures land (shape (B,) bool): past the reach of
    careful work, and with ``theirs_too`` where the departing annotators' answers land more
    than :data:`_EXCESS` times as often as the careful ones'. It depends on who is careful
    alone, so an EM run computes it once."""
    careful_h = np.bincount(b[by_careful], minlength=n_bins) / max(int(by_careful.sum()), 1)
    reach = int(np.searchsorted(np.cumsum(careful_h), _SOUND_REACH))
    region = np.arange(n_bins) > reach
    if theirs_too and not by_careful.all():
        smooth = np.array([0.25, 0.5, 0.25])
        theirs = np.bincount(b[~by_careful], minlength=n_bins) / int((~by_careful).sum())
        ratio_theirs = np.convolve(np.r_[theirs[:1], theirs, theirs[-1:]], smooth, mode="valid")
        ratio_careful = np.convolve(np.r_[careful_h[:1], careful_h, careful_h[-1:]], smooth, mode="valid")
        region |= ratio_theirs > _EXCESS * ratio_careful
    return region


def _isotonic(y: np.ndarray) -> np.ndarray:
    """The non-decreasing sequence closest to ``y`` in least squares (pool adjacent violators)."""
    if not (y[1:] < y[:-1]).any():      # nothing to pool (a smooth histogram's flanks often are)
        return y.copy()
    level: list[float] = []
    count: list[int] = []
    for v in y.tolist():
        level.append(v)
        count.append(1)
        while len(level) > 1 and level[-2] > level[-1]:
            total = level[-2] * count[-2] + level[-1] * count[-1]
            count[-2] += count[-1]
            level[-2] = total / count[-2]
            level.pop()
            count.pop()
    return np.repeat(level, count) if level else y


def fit_distance_model(medoid: Medoids, annotator: Sequence[Any], *, distance: str = "",
                       ambiguity: bool = True, max_iter: int = _MAX_ITER, tol: float = _TOL,
                       may_depart: np.ndarray | None = None) -> DistanceModel:
    """Fit ``f_s``, ``f_d``, θ and ρ to the distances of a control's answers to their consensus.

    Everybody starts careful; an annotator is let depart when their distances are clearly
    likelier with θ < 1 (:mod:`.sound_share`), and the others are tested again after each
    refit, as for the label model (:func:`.annotator_model.fit_label_model`). The
    consensus of a two-answer task is left out of the fit: its distance is its partner's.

    Parameters
    ----------
    medoid : Medoids
        From :func:`medoids`.
    annotator : sequence of str, shape (N,)
        Each answer's annotator.
    distance : str
        The distance's name (recorded).
    ambiguity : bool
        Whether tasks may be ambiguous.
    may_depart : ndarray of bool, shape (A,), optional
        Which annotators (in sorted order of their names) may be let depart; default all.

    Returns
    -------
    DistanceModel
    """
    sizes = np.bincount(medoid.task_of, minlength=medoid.items.size)
    # a two-answer task's consensus is left out (its distance is its partner's), unless the
    # two are the same answer: which of them is the consensus then follows the export's
    # order of annotations, and so did whose answer the fit saw
    keep = np.isfinite(medoid.distance) & ~(medoid.is_consensus & (sizes[medoid.task_of] == 2)
                                            & (medoid.distance > 0))
    ann_codes, ann_labels = pd.factorize(pd.Series([str(a) for a in annotator]), sort=True)
    n_ann = len(ann_labels)
    d, a, task, main = (medoid.distance[keep], ann_codes[keep].astype(np.int64), medoid.task_of[keep],
                        medoid.is_consensus[keep])
    n_tasks = medoid.items.size
    hi = float(d.max()) if d.size and d.max() > 0 else 1.0
    edges = np.linspace(0.0, hi, _BINS + 1)
    b = _bin(d, edges)
    careful = np.ones(n_ann, dtype=bool)
    n_answers = np.bincount(ann_codes, minlength=n_ann)
    lone = _lone(d, task, n_tasks)
    state = {"theta": np.full(n_ann, CAREFUL),
             "sound": _sound_pdf(np.ones(d.size), a, b, n_ann, edges, lone),
             "departs": _beyond(d, b, np.ones(d.size, dtype=bool), edges),
             "rho": _AMBIGUITY_START if ambiguity else 1e-12}

    def factors() -> _Factors:
        return _Factors(u=state["sound"][b], v=state["departs"][b], w=1.0 / hi, theta=state["theta"][a], main=main)

    # EM reads the answers by group: an answer's factors depend only on its cell of the
    # factor grid (_cell_factors: reading, annotator, bin), and whether it is lone (_lone) is
    # all the sound density asks besides, so each step sums a task's logs over its groups
    # and each group's posteriors over its tasks (two sparse products) instead of gathering
    # and summing per answer: the same sums in another order (issue 24: the E step per
    # answer was most of a 400,000-answer ranking control's fit)
    groups = _AnswerGroups.of(main * (n_ann * _BINS) + a * _BINS + b, 2 * n_ann * _BINS, lone, task, n_tasks)
    per_annotator = np.maximum(np.bincount(a, minlength=n_ann), 1)

    def em() -> int:
        last, it = -np.inf, 0
        # where departures land depends on who is careful alone, fixed through this run
        region = (None if careful.all()
                  else _departure_region(b, careful[a], _BINS, theirs_too=True).astype(float))
        for it in range(1, max_iter + 1):
            log_o, log_s, theta_n, sound_n, ordinary, sound_share, other_share = np.repeat(
                _cell_factors(state["theta"], state["sound"], state["departs"], 1.0 / hi), 2, axis=1)
            log_o, log_s = groups.per_task(np.column_stack((log_o, log_s))).T    # one pass over the tasks
            p_amb, norm = _posterior_of_sums(log_o, log_s, state["rho"])
            logp = float(norm.sum())
            if it > 1 and abs(logp - last) <= tol * max(abs(logp), 1.0):
                break
            last = logp
            # per group: Σ (1 − pa) θ f_s / ordinary + pa θ ½ f_s / split (the consensus: + pa θ f_s
            # / ordinary), and Σ pa θ ½ w / split (the consensus: 0), as _cell_factors' rows
            pa = groups.per_group(p_amb)
            in_main = theta_n * sound_n / ordinary * (groups.size - pa) + sound_share * pa
            other = other_share * pa
            by = in_main.reshape(2, n_ann, _BINS, 2)        # (reading, annotator, bin, lone)
            state["sound"] = _sound_pdf_of_sums(by.sum(axis=(0, 3)), by[..., 1].sum(axis=0), edges)
            if not careful.all():
                # f_d learns where departures land, beyond the reach of careful work (the
                # careful annotators' upper quantile): below it f_d keeps its floor alone,
                # else a departing annotator's whole distribution (their sound answers too)
                # would pass for departures, or their systematic misses for sound work
                departs = (groups.size - in_main - other).reshape(2, n_ann, _BINS, 2).sum(axis=(0, 1, 3))
                state["departs"] = _pdf_of_histogram(departs * region, edges, _DEPARTS_PSEUDO)
            free = (in_main + other).reshape(2, n_ann, _BINS, 2).sum(axis=(0, 2, 3)) / per_annotator
            state["theta"] = np.where(careful, CAREFUL, np.clip(free, 1e-6, CAREFUL))
            if ambiguity:
                rho = (float(p_amb.sum()) + _AMBIGUITY_PRIOR[0] - 1) / (n_tasks + sum(_AMBIGUITY_PRIOR) - 2)
                state["rho"] = min(max(rho, 1e-6), 0.5)
        return it

    def profile() -> Any:
        # each answer given the rest of its task: P(ambiguous | the others) mixes its readings
        f = factors()
        ordinary, split = f.ordinary, f.split
        log_o = np.bincount(task, weights=np.log(ordinary), minlength=n_tasks)[task] - np.log(ordinary)
        log_a = np.bincount(task, weights=np.log(split), minlength=n_tasks)[task] - np.log(split)
        odds = np.exp(np.clip(log_a - log_o, -700, 700)) * state["rho"] / (1 - state["rho"])
        pa = odds / (1 + odds)
        sound = np.where(main, f.u, (1 - pa) * f.u + pa * 0.5 * (f.u + f.w))
        # a departure is read against f_d: once someone departs, where theirs land; before,
        # where the farthest answers land (_beyond) or where the annotator's own excess does
        departs = f.v if not careful.all() else np.maximum(f.v, _own_excess(a, b, n_ann, edges))
        return sound_profile(sound, departs, a, n_ann)

    n_iter = em()
    prof = profile()
    for _ in range(n_ann):
        freed = careful & (prof.gain() >= DEPARTS_AT)
        if may_depart is not None:
            freed &= may_depart
        if not freed.any():
            break
        careful &= ~freed
        state["theta"] = np.where(freed, np.maximum(prof.best, 1e-3), state["theta"])
        n_iter += em()
        prof = profile()
    if careful.all():
        # nobody departs: the tail that stood in for departures in the test is careful work,
        # and the reading spreads departures evenly (CAREFUL's sliver, against anything)
        state["departs"] = np.full(_BINS, 1.0 / hi)
    return DistanceModel(edges=edges, sound_pdf=state["sound"], departs_pdf=state["departs"],
                         annotators=tuple(str(x) for x in ann_labels), sound=state["theta"], sound_best=prof.best,
                         sound_ci=prof.interval(), ambiguity=float(state["rho"]) if ambiguity else 0.0,
                         n_answers=n_answers, distance=distance, n_iter=n_iter)


@dataclass(frozen=True)
class RegionComparison:
    """Each answer (input order) against its task's consensus, region by region (NaN for the
    consensus itself and an answer alone on its task).

    Attributes
    ----------
    moved, matched : ndarray, shape (N,)
        Its regions matched to one of the consensus's but placed elsewhere (IoU under the
        error classes' cut, :mod:`.error_types`), and those matched.
    missed, shown : ndarray, shape (N,)
        The consensus's regions it leaves out, and the consensus's regions.
    """

    moved: np.ndarray
    matched: np.ndarray
    missed: np.ndarray
    shown: np.ndarray


def compare_regions(pairs: TaskPairs, med: Medoids, kind: str) -> RegionComparison:
    """Every answer against its task's consensus, region by region (one matching per answer,
    the error classes' of :mod:`.error_types`).

    Parameters
    ----------
    pairs : TaskPairs
        The answers (``values``, in ``order``).
    med : Medoids
        Each task's consensus (:func:`medoids` of ``pairs``).
    kind : str
        One of :data:`REGION_KINDS`.

    Returns
    -------
    RegionComparison
    """
    key = (kind, med.consensus.tobytes())
    if key in pairs.compared:
        return pairs.compared[key]
    n = pairs.order.size
    at = np.empty(n, dtype=np.int64)
    at[pairs.order] = np.arange(n)                 # input row -> position in pairs.values
    rows = np.flatnonzero(~med.is_consensus & np.isfinite(med.distance))
    out = [np.full(n, np.nan) for _ in range(4)]
    if rows.size:
        if kind not in pairs.regions:      # packed once: the fit and the reading ask again
            pairs.regions[kind] = RegionSet(pairs.values, kind)
        got = pairs.regions[kind].compare(at[med.consensus[med.task_of[rows]]], at[rows])
        for o, g in zip(out, got):
            o[rows] = g
    pairs.compared.clear()
    pairs.compared[key] = RegionComparison(moved=out[0], matched=out[1], missed=out[2], shown=out[3])
    return pairs.compared[key]


def _without(med: Medoids, explained: np.ndarray) -> Medoids:
    """``med`` with the distances of the ``explained`` answers (shape (N,) bool) left out."""
    return dataclasses.replace(med, distance=np.where(explained, np.nan, med.distance))


def _read_medoids(model: DistanceModel, med: Medoids, theta: np.ndarray) -> tuple[ConsensusReading, np.ndarray]:
    """One model's reading of the answers' distances to given consensus answers, and each
    task's P(nobody departs | ordinary, answers), shape (T,)."""
    n_tasks = med.items.size
    alone = ~np.isfinite(med.distance)
    u, v = model.densities(med.distance)
    f = _Factors(u=u, v=v, w=model.other_pdf, theta=theta, main=med.is_consensus | alone)
    rho = min(max(model.ambiguity, 1e-12), 1 - 1e-12)
    p_amb, _ = _task_posterior(f, med.task_of, n_tasks, rho)
    pa = p_amb[med.task_of]
    ordinary, split = f.ordinary, f.split
    dep_o = (1 - f.theta) * f.v / ordinary
    p_dep = np.where(f.main, 0.0, (1 - pa) * dep_o + pa * (1 - f.theta) * f.v / split)
    other = np.where(f.main, 0.0, pa * f.theta * 0.5 * f.w / split)
    # P(ordinary and nobody departs): the consensus itself is not read as departing
    clean = np.exp(np.bincount(med.task_of, weights=np.where(f.main, 0.0, np.log1p(-np.minimum(dep_o, 1 - 1e-15))),
                               minlength=n_tasks))
    p_flag = np.clip(1.0 - (1 - p_amb) * clean, 0.0, 1.0)
    cons = med.consensus
    sound_cons = np.where(alone[cons], f.theta[cons], f.theta[cons] * f.u[cons] / ordinary[cons])
    return ConsensusReading(medoids=med, consensus_p=sound_cons, p_ambiguous=p_amb, p_flag=p_flag,
                            p_departs=p_dep, p_other_reading=other,
                            log_lr_ambiguous=_log_ratio(f, med.task_of, n_tasks)), clean


def read_consensus(model: DistanceModel, pairs: TaskPairs, annotator: Sequence[Any]) -> ConsensusReading:
    """Read tasks against a fitted model: the consensus (medoid weighted by the annotators'
    θ), who departs from it, and whether the task is ambiguous. With region rates, an
    answer departs when it departs in its distance, in where it puts regions or in leaving
    them out (taken as independent; an answer that one of the last two explains is not read
    by the distance), and a task is clean when it is in all three.

    Parameters
    ----------
    model : DistanceModel
    pairs : TaskPairs
        The tasks' answers' distances (:func:`task_pairs`, under the model's distance).
    annotator : sequence of str, shape (N,)
        Each answer's annotator.

    Returns
    -------
    ConsensusReading
    """
    who = [str(x) for x in annotator]
    theta = model.theta(who)
    if model.moved is None and model.missed is None:
        return _read_medoids(model, medoids(pairs, weight=theta), theta)[0]
    med = medoids(pairs, weight=model.weights(who))
    regions = _read_regions(model, pairs, med, who)
    r, clean = _read_medoids(model, _without(med, regions.explained), theta)
    return dataclasses.replace(
        r, medoids=med, consensus_p=r.consensus_p * regions.consensus_p,
        p_flag=np.clip(1.0 - (1.0 - r.p_ambiguous) * clean * regions.clean, 0.0, 1.0),
        p_departs=1.0 - (1.0 - r.p_departs) * (1.0 - regions.p_moved) * (1.0 - regions.p_missed),
        p_moved=regions.p_moved, p_missed=regions.p_missed)


@dataclass(frozen=True)
class _RegionReading:
    """What the region rates say of each answer (input order) and task."""

    p_moved: np.ndarray          # (N,) it puts a region elsewhere as careful work would not
    p_missed: np.ndarray         # (N,) it leaves out a region as careful work would not
    clean: np.ndarray            # (T,) P(no answer does either)
    consensus_p: np.ndarray      # (T,) P(the consensus answer does neither)

    @property
    def explained(self) -> np.ndarray:
        """Answers whose distance to the consensus one of the two explains: an answer that
        puts regions elsewhere, or leaves them out, is far for that alone. Left in the
        distance model, it made its annotator depart there too, and their ordinary slips
        were then flagged beside it; and read with a careful θ, its task looked split."""
        return (self.p_moved >= 0.5) | (self.p_missed >= 0.5)


def _read_regions(model: DistanceModel, pairs: TaskPairs, med: Medoids, who: Sequence[str],
                  compared: RegionComparison | None = None) -> _RegionReading:
    """The region rates' reading of every answer against ``med``'s consensus (``compared``:
    :func:`compare_regions` of them, when the caller has it)."""
    if compared is None:
        compared = compare_regions(pairs, med, model.regions)
    n = med.distance.size
    cons = [who[k] for k in med.consensus.tolist()]
    p, clean, cons_p = {}, np.ones(med.items.size), np.ones(med.items.size)
    for name, rates, errors, regions in (("moved", model.moved, compared.moved, compared.matched),
                                         ("missed", model.missed, compared.missed, compared.shown)):
        p[name] = (np.zeros(n) if rates is None
                   else np.where(med.is_consensus, 0.0, rates.p_departs(who, errors, regions)))
        clean *= np.exp(np.bincount(med.task_of, weights=np.log1p(-np.minimum(p[name], 1 - 1e-15)),
                                    minlength=med.items.size))
        if rates is not None:
            cons_p = cons_p * rates.theta(cons)
    return _RegionReading(p_moved=p["moved"], p_missed=p["missed"], clean=clean, consensus_p=cons_p)


def consensus_model(item: Sequence[Hashable] | np.ndarray, annotator: Sequence[Any], values: Sequence[Any],
                    distance: DistanceLike, *, ambiguity: bool = True,
                    regions: str | None = None) -> tuple[DistanceModel, ConsensusReading]:
    """Fit and read in one go: medoids with equal weights, a first fit, medoids again
    weighted by the fitted θ (a departing annotator's answer should not be the consensus)
    and the final fit, then the reading of every task. ``regions``: as in
    :func:`fit_consensus`.

    Returns
    -------
    (DistanceModel, ConsensusReading)
    """
    dist = get_distance(distance)
    pairs = task_pairs(item, values, dist)
    model = fit_consensus(pairs, annotator, distance=dist.name, ambiguity=ambiguity, regions=regions)
    return model, read_consensus(model, pairs, annotator)


def fit_consensus(pairs: TaskPairs, annotator: Sequence[Any], *, distance: str = "",
                  ambiguity: bool = True, regions: str | None = None) -> DistanceModel:
    """The fit of :func:`consensus_model` on pairs already computed (a caller that reads
    the tasks its own way need not compute the distances twice).

    Parameters
    ----------
    pairs : TaskPairs
        From :func:`task_pairs`.
    annotator : sequence of str, shape (N,)
        Each answer's annotator (input order).
    distance : str
        The distance's name (recorded).
    ambiguity : bool
        Whether tasks may be ambiguous.
    regions : str, optional
        The answers' region kind, one of :data:`REGION_KINDS`: how often each annotator puts
        regions elsewhere and leaves them out is fitted beside (``DistanceModel.moved``,
        ``.missed``, :mod:`.region_rates`). A distance sums
        what an answer misses, adds, labels otherwise and moves into one number, and careful
        annotators who miss or relabel one region in twenty land as far from the consensus
        as an annotator whose boxes are half a width off: the shift was read as careful work
        (one seed in three of a second generator's shifted boxes flagged nothing, the
        annotator fifth of ten); counted region by region, the shifts and the misses set the
        two apart (a single missed entity of six is where careful slips lie too).
    """
    if regions is not None and regions not in REGION_KINDS:
        raise ValueError(f"regions must be one of {REGION_KINDS}, got {regions!r}")
    who = [str(x) for x in annotator]
    first = fit_distance_model(medoids(pairs), annotator, distance=distance, ambiguity=ambiguity)
    theta = first.theta(who)
    by_theta = medoids(pairs, weight=theta)

    def weighted() -> DistanceModel:
        """The fit on the medoids weighted by the first fit's θ (the first, where all are careful)."""
        if np.all(theta == CAREFUL):
            return first
        return fit_distance_model(by_theta, annotator, distance=distance, ambiguity=ambiguity)

    if regions is None:
        return weighted()
    moved, missed = _fit_regions(compare_regions(pairs, by_theta, regions), annotator)
    if np.all(moved.sound == 1.0) and np.all(missed.sound == 1.0):
        return dataclasses.replace(weighted(), moved=moved, missed=missed, regions=regions)
    # who departs in where they put regions or in leaving them out is no consensus either
    med = medoids(pairs, weight=dataclasses.replace(first, moved=moved, missed=missed, regions=regions).weights(who))
    compared = compare_regions(pairs, med, regions)
    moved, missed = _fit_regions(compared, annotator)
    explained = _read_regions(dataclasses.replace(first, moved=moved, missed=missed, regions=regions),
                              pairs, med, who, compared).explained
    if not explained.any():
        # refitted only where an answer is explained: on other medoids alone the distance
        # model moved for nothing (careful annotators let depart in two projects of forty
        # where nobody else did)
        return dataclasses.replace(weighted(), moved=moved, missed=missed, regions=regions)
    # only those the distance let depart before may depart again: without the answers the
    # region models explain, a large project's careful annotators were let depart one after
    # another (all six of a 10,000-task demo project, θ creeping towards 0 as EM went on)
    model = fit_distance_model(_without(med, explained), annotator,
                               distance=distance, ambiguity=ambiguity, may_depart=first.sound < CAREFUL)
    return dataclasses.replace(model, moved=moved, missed=missed, regions=regions)


def _fit_regions(compared: RegionComparison, annotator: Sequence[Any]) -> tuple[RegionRates, RegionRates]:
    """How often each annotator puts regions elsewhere and leaves them out, from their
    answers compared with a consensus (:func:`compare_regions`)."""
    return (fit_region_rates(annotator, compared.moved, compared.matched),
            fit_region_rates(annotator, compared.missed, compared.shown))

"""A latent-class model of annotators and tasks for categorical controls (docs/formulas.md
"Flags": choices, ratings, pairwise preferences — any control whose answers are a few labels).

It says, per task, the most likely answer, who departs from it, and whether the task
itself is ambiguous; per annotator, the share of their answers that are *sound*.

The model (Dawid & Skene 1979 with MACE's spammer component, Hovy et al. 2013, and an
ambiguous-task component of our own):

* a task is *ordinary* with probability ``1 − ρ``: one true class ``z ~ π``; or
  *ambiguous* with probability ``ρ``: two defensible classes ``{z, z'} ~ ψ``;
* on an ambiguous task each answer reads one of the two classes: with probability ``λ``
  the task splits its annotators evenly between them (:mod:`.even_split`), else each
  answer tosses a coin;
* each answer of annotator ``a`` is *sound* with probability ``θ_a``: its label is drawn
  from the row of the sound confusion matrix ``C`` of its class (its reading); else it
  *departs*: its label is drawn from the annotator's own ``ξ_a``, whatever the task (a
  spammer's constant label, a random click).

``C`` is shared by the annotators: it is what careful work looks like on this control
(the slips between neighbouring ratings, the confusable classes), so one annotator's
excess over it — a random answer on 30 % of their tasks, a constant label — is read as
departures, and a project where everybody slips alike has no departures at all. Each
annotator's confusion matrix is ``θ_a C + (1 − θ_a) 1 ξ_aᵀ``.

A task *holds a departing answer* when one of its answers departs and its label is not
the true class (neither of an ambiguous task's two): the planted problem of a partly
random or spamming annotator, and what the generating model's own posterior counts; its
flag posterior is ``1 − P(ordinary and no answer departs | its answers)``. Fitted by EM with weak Dirichlet
and Beta priors (MAP): missing answers (annotators who did not see a task) simply do not
enter its product, and any number of answers per task works. Reading one task with the
fitted parameters (:func:`read_labels`) needs only its own answers: the live path updates
a task without refitting.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Hashable, Literal, Sequence

import numpy as np
import pandas as pd

from .even_split import Layout, even_split, layout
from .sound_share import CAREFUL, DEPARTS_AT, SoundProfile, sound_profile

#: How a careful answer's slips spread over the other classes (C's off-diagonal): as the
#: data say, evenly, or (ordered grades) by how far they land, alike in every row.
Slips = Literal["patterned", "even", "graded"]
#: How an ambiguous task's careful annotators split: evenly or by coins in a share λ, or
#: all by coins (λ = 0: one number less to pay for).
Split = Literal["mixed", "coins"]

__all__ = ["LabelModel", "LabelReading", "fit_label_model", "read_labels", "own_confusions", "SOUND_PRIOR", "CAREFUL",
           "DEPARTS_AT"]

#: Beta prior of an annotator's share of sound answers (θ): most annotators are careful.
SOUND_PRIOR = (0.5, 0.5)
_AMBIGUITY_PRIOR = (1.0, 1.0)    # Beta prior of ρ: flat
#: Log-posterior gain per parameter and per log task from which the model has ambiguous
#: tasks at all (else ρ = 0): BIC's ½ log T for each of the component's P numbers (ρ and the
#: P − 1 free shares ψ of the K(K − 1)/2 class pairs), as the slips' pattern pays for its own.
AMBIGUOUS_PER_PARAMETER = 0.5
_PAIR_PSEUDO = 10.0              # Dirichlet pseudo-count of each class pair of an ambiguous task (ψ)
_CONFUSION_DIAG, _CONFUSION_OFF = 2.0, 0.5   # Dirichlet pseudo-counts of C's rows
_OWN_WEIGHT = 10.0               # answers behind the shrinkage of an annotator's accuracy towards C's
_EVEN_START = 0.5                # λ of every start: ambiguous tasks split evenly or by coins alike
_EVEN_PRIOR = (2.0, 2.0)         # Beta prior of λ: kept off 0 and 1 while few tasks are ambiguous
_DEPARTING_PSEUDO = 1.0          # Dirichlet pseudo-count (total) of ξ_a, spread as the labels are
_THETA_START = 0.99              # the most a start gives θ: slips go to C first
_AMBIGUITY_STARTS = (0.01, 0.2)  # ρ of EM's two starts
_AMBIGUITY_ITER = 60             # EM steps of an ambiguity start at most
_HOPELESS_AFTER = 5              # EM steps before an ambiguity start may be given up (see _em)
_MAX_ITER = 300
_TOL = 1e-7                      # relative change of the log posterior that stops EM


@dataclass(frozen=True)
class LabelModel:
    """The fitted parameters of one categorical control.

    Attributes
    ----------
    classes : tuple, shape (K,)
        The labels, in the order of the arrays.
    prior : ndarray, shape (K,)
        π: the true class of an ordinary task.
    confusion : ndarray, shape (K, K)
        C: the label of a sound answer (columns) given the true class (rows).
    accuracy : ndarray, shape (A,)
        Each careful annotator's own accuracy (the diagonal of their C_a,
        :attr:`own_confusion`); NaN for an annotator who departs (their C_a is C).
    annotators : tuple of str, shape (A,)
    sound : ndarray, shape (A,)
        θ: each annotator's share of sound answers as the model uses it (CAREFUL unless
        their departures are clear).
    sound_best, sound_ci : ndarray, shapes (A,), (A, 2)
        θ̂, the maximum of the annotator's profile likelihood (their answers given the
        others', read with C) — their *reliability* — and its 95 % interval.
    departing : ndarray, shape (A, K)
        ξ: the labels of each annotator's departing answers.
    ambiguity : float
        ρ: share of ambiguous tasks.
    even_share : float
        λ: share of the ambiguous tasks whose careful annotators split evenly between the
        two classes (the rest each toss a coin for their reading).
    pair_a, pair_b : ndarray of int, shape (P,)
        The class pairs ``{z, z'}`` of an ambiguous task (``pair_a < pair_b``).
    pairs : ndarray, shape (P,)
        ψ: which pair an ambiguous task has.
    n_answers : ndarray of int, shape (A,)
    n_iter : int
    log_posterior : float
    """

    classes: tuple
    prior: np.ndarray
    confusion: np.ndarray
    accuracy: np.ndarray
    annotators: tuple[str, ...]
    sound: np.ndarray
    sound_best: np.ndarray
    sound_ci: np.ndarray
    departing: np.ndarray
    ambiguity: float
    pair_a: np.ndarray
    pair_b: np.ndarray
    pairs: np.ndarray
    n_answers: np.ndarray
    n_iter: int = 0
    log_posterior: float = float("nan")
    even_share: float = _EVEN_START

    def reliability(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each annotator's reliability θ̂ (shape (A,)), its 95 % interval (shape (A, 2))
        and whether they depart (shape (A,) bool), as :meth:`.consensus.DistanceModel.reliability`."""
        return self.sound_best, self.sound_ci, self.sound < CAREFUL

    @property
    def own_confusion(self) -> np.ndarray:
        """Each annotator's C_a, shape (A, K, K)."""
        return own_confusions(self.accuracy, self.confusion)

    @property
    def default_sound(self) -> float:
        """θ of an annotator the fit has not seen: the answer-weighted mean."""
        w = self.n_answers.astype(float)
        return float(np.dot(w, self.sound) / w.sum()) if w.sum() > 0 else CAREFUL

    @property
    def default_departing(self) -> np.ndarray:
        """ξ of an unseen annotator: the answer-weighted mean, shape (K,)."""
        w = self.n_answers.astype(float)
        if w.sum() <= 0:
            return np.full(len(self.classes), 1.0 / len(self.classes))
        return (w[:, None] * self.departing).sum(axis=0) / w.sum()

    def parameters(self, annotators: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """θ, ξ and C_a of ``annotators`` (the defaults and C for unseen ones), shapes (n,),
        (n, K) and (n, K, K)."""
        index = {a: k for k, a in enumerate(self.annotators)}
        codes = np.array([index.get(str(a), -1) for a in annotators], dtype=np.int64)
        seen, at = codes >= 0, np.maximum(codes, 0)
        theta = np.where(seen, self.sound[at], self.default_sound)
        xi = np.where(seen[:, None], self.departing[at], self.default_departing)
        own = np.where(seen[:, None, None], self.own_confusion[at], self.confusion)
        return theta, xi, own


@dataclass(frozen=True)
class LabelReading:
    """What the model says about each task and answer (:func:`read_labels`).

    Attributes
    ----------
    items : ndarray, shape (T,)
        The task ids, in first-seen order.
    consensus : ndarray of int, shape (T,)
        Index into ``classes`` of the most likely answer: the true class of an ordinary
        task, on an ambiguous one each of its two classes in proportion to the posterior it
        would have as an ordinary task's one true class.
    consensus_p : ndarray, shape (T,)
        Its posterior probability.
    p_ambiguous : ndarray, shape (T,)
        Posterior that the task is ambiguous.
    p_flag : ndarray, shape (T,)
        Posterior that the task holds a departing answer or is ambiguous.
    split : ndarray of int, shape (T, 2)
        The most likely pair of an ambiguous reading (class indices).
    p_departs : ndarray, shape (N,)
        Per answer (input order): posterior that it departs and its label is not the true
        class (neither of an ambiguous task's two).
    task_of : ndarray of int, shape (N,)
        Per answer: its task's index in ``items``.
    label : ndarray of int, shape (N,)
        Per answer: its class index.
    log_lr_ambiguous : ndarray, shape (T,)
        log P(answers | ambiguous) − log P(answers | ordinary), whatever ρ.
    p_departs_any : ndarray, shape (N,)
        Per answer (input order): posterior that it departs at all, visible or not (its
        odds over θ's prior odds are the answer's likelihood ratio of departing, which the
        task level pools over a task's controls: plugin/report/flags.py).
    """

    items: np.ndarray
    consensus: np.ndarray
    consensus_p: np.ndarray
    p_ambiguous: np.ndarray
    p_flag: np.ndarray
    split: np.ndarray
    p_departs: np.ndarray
    task_of: np.ndarray
    label: np.ndarray
    log_lr_ambiguous: np.ndarray
    p_departs_any: np.ndarray


# ---------------------------------------------------------------------------------------
# The likelihood of every answer under every task state. On an ordinary task an answer's
# factor depends only on its annotator a, its label y and the class, so it is looked up in
# a table with one row per (a, y) (row a·K + y) and one column per class; the 2P ambiguous
# states (each pair split evenly, then each pair by coins) are built from the same table.
# EM's expected counts are sums of task posteriors over the answers of each row: one
# gather, one segment sum per task and a few bincounts per iteration.
# ---------------------------------------------------------------------------------------

@dataclass
class _Coded:
    """Answers sorted by task: ``task`` (N,), ``row`` (N,) = annotator · K + label, ``label``
    (N,), ``annotator`` (N,), ``starts`` (T,) each task's first answer, ``order`` (N,) the
    input position of each answer, ``items`` (T,) the task ids."""

    task: np.ndarray
    row: np.ndarray
    label: np.ndarray
    annotator: np.ndarray
    starts: np.ndarray
    order: np.ndarray
    items: np.ndarray
    groups: Layout | None = None     # the tasks by number of answers, made at the first even split


def _code(item: Sequence[Hashable] | np.ndarray, label: np.ndarray, annotator: np.ndarray, k: int) -> _Coded:
    task, items = pd.factorize(pd.Series(item if isinstance(item, (np.ndarray, pd.Series)) else list(item)),
                               sort=False)
    order = np.argsort(task, kind="stable")
    t = task[order]
    starts = np.flatnonzero(np.r_[True, t[1:] != t[:-1]]) if t.size else np.zeros(0, dtype=np.int64)
    a, y = annotator[order], label[order]
    return _Coded(task=t, row=a * k + y, label=y, annotator=a, starts=starts, order=order, items=np.asarray(items))


def _patterns(c: _Coded) -> tuple[_Coded, np.ndarray, np.ndarray]:
    """Tasks with the same answers — the same (annotator, label) rows, in any order — have
    the same posterior under every parameter, so the fit reads each pattern once, weighted
    by its tasks (a project of 6 annotators and 3 labels has a few thousand patterns
    whatever its size). Returns the patterns coded as tasks (answers sorted by row), the
    tasks per pattern (T',) and, per answer of ``c`` (N,), its position among the
    patterns' answers."""
    n = c.row.size
    order = np.lexsort((c.row, c.task))                                  # by task, then row
    rows = c.row[order]
    ends = np.r_[c.starts[1:], n]
    keys = [rows[a:b].tobytes() for a, b in zip(c.starts.tolist(), ends.tolist())]
    pid, uniques = pd.factorize(pd.Series(keys, dtype=object), sort=False)
    n_pat = len(uniques)
    weight = np.bincount(pid, minlength=n_pat).astype(float)
    first = np.empty(n_pat, dtype=np.int64)
    first[pid[::-1]] = np.arange(pid.size)[::-1]                          # each pattern's first task
    lengths = (ends - c.starts)[first]
    starts = np.r_[0, np.cumsum(lengths)[:-1]].astype(np.int64)
    at = np.repeat(c.starts[first] - starts, lengths) + np.arange(int(lengths.sum()))
    p_rows = rows[at]
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    answer = starts[pid[c.task]] + rank - c.starts[c.task]
    coded = _Coded(task=np.repeat(np.arange(n_pat), lengths), row=p_rows, label=c.label[order][at],
                   annotator=c.annotator[order][at], starts=starts, order=np.arange(p_rows.size),
                   items=np.arange(n_pat))
    return coded, weight, answer


def _pair_index(k: int) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.triu_indices(k, 1)
    return a.astype(np.int64), b.astype(np.int64)


@dataclass
class _Tables:
    """Per row (a, y): ``sound`` (A·K, K) = θ_a C_a[z, y] for each class z, ``dep`` (A·K,)
    = (1 − θ_a) ξ_a[y] (the same whatever the task), ``log`` (A·K, K) = log(sound + dep):
    an answer's factor on an ordinary task of class z."""

    sound: np.ndarray
    dep: np.ndarray
    log: np.ndarray


def _tables(theta: np.ndarray, xi: np.ndarray, own: np.ndarray) -> _Tables:
    """theta (A,), xi (A, K), own (A, K, K): each annotator's sound confusion."""
    n_ann, k = xi.shape
    sound = (theta[:, None, None] * own.transpose(0, 2, 1)).reshape(n_ann * k, k)      # (A·K, z)
    dep = ((1.0 - theta)[:, None] * xi).reshape(-1)
    return _Tables(sound=sound, dep=dep, log=np.log(sound + dep[:, None]))


def _pair_log_prior(psi: np.ndarray, even: float) -> np.ndarray:
    """log P(state | ambiguous), shape (2P,): each pair split evenly, then each by coins."""
    pair = np.log(np.maximum(psi, 1e-300))
    return np.r_[pair + math.log(max(even, 1e-300)), pair + math.log(max(1.0 - even, 1e-300))]


def _state_log_prior(prior: np.ndarray, rho: float, psi: np.ndarray, even: float) -> np.ndarray:
    """log P(state), shape (K + 2P,): the classes, then the ambiguous states."""
    return np.r_[math.log(max(1.0 - rho, 1e-300)) + np.log(prior),
                 math.log(max(rho, 1e-300)) + _pair_log_prior(psi, even)]


@dataclass
class _Joint:
    """``log`` (T, K + 2P): log P(a task's answers | state), the ambiguous states being
    each pair split evenly (:mod:`.even_split`), then each pair split by coins;
    ``pull`` (N, P): per answer and pair split evenly, the probability that it reads the
    pair's first class given the task's other answers (½ under coins); ``first``, ``second`` (N, P): its factor if it reads the pair's first
    class, its second."""

    log: np.ndarray
    pull: np.ndarray
    first: np.ndarray
    second: np.ndarray

    def factor(self) -> np.ndarray:
        """Per answer and ambiguous state, shape (N, 2P): ``g a + (1 − g) b`` = P(its label
        | the task's other answers, the state), with ``g`` the others' pull."""
        return np.concatenate([self.pull * self.first + (1.0 - self.pull) * self.second,
                               0.5 * (self.first + self.second)], axis=1)

    def readings(self, amb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``amb`` (N, 2P), a weight per answer and ambiguous state, split by the answer's
        reading: the weights of reading each pair's first class and its second, (N, P) each."""
        p = self.pull.shape[1]
        even, coins = amb[:, :p], 0.5 * amb[:, p:]
        return even * self.pull + coins, even * (1.0 - self.pull) + coins


def _joint(c: _Coded, tab: _Tables, pa: np.ndarray, pb: np.ndarray) -> _Joint:
    """Every task's log likelihood under every state (answers sorted by task)."""
    ordinary = np.add.reduceat(tab.log[c.row], c.starts, axis=0) if c.row.size else np.zeros((0, tab.log.shape[1]))
    if not pa.size or not c.row.size:
        empty = np.zeros((c.row.size, 0))
        return _Joint(log=ordinary, pull=empty, first=empty, second=empty)
    # per row (a, y) first, then per answer: one gather each
    row_first, row_second = tab.sound[:, pa] + tab.dep[:, None], tab.sound[:, pb] + tab.dep[:, None]   # (A·K, P)
    first, second = row_first[c.row], row_second[c.row]                                    # (N, P)
    if c.groups is None:
        c.groups = layout(c.starts, c.row.size)
    even = even_split(c.starts, first, second, c.groups)
    coins = np.add.reduceat(np.log(0.5 * (row_first + row_second))[c.row], c.starts, axis=0)
    return _Joint(log=np.concatenate([ordinary, even.log_total, coins], axis=1), pull=even.pull,
                  first=first, second=second)


def _posteriors(joint: _Joint, log_prior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each task's state posterior (T, K + P) and log evidence (T,)."""
    full = joint.log + log_prior
    top = full.max(axis=1, keepdims=True)
    post = np.exp(full - top)
    total = post.sum(axis=1, keepdims=True)
    post /= total
    return post, (top + np.log(total))[:, 0]


# ---------------------------------------------------------------------------------------
# the fit
# ---------------------------------------------------------------------------------------

@dataclass
class _Params:
    """π (K,), C (K, K), each annotator's own sound confusion (A, K, K), θ (A,), ξ (A, K),
    ρ, ψ (P,)."""

    prior: np.ndarray
    conf: np.ndarray
    own: np.ndarray
    theta: np.ndarray
    xi: np.ndarray
    rho: float
    psi: np.ndarray
    even: float


@dataclass
class _Problem:
    """A control's coded answers and what every EM step needs of them."""

    c: _Coded
    k: int
    n_ann: int
    pa: np.ndarray
    pb: np.ndarray
    freq: np.ndarray          # (K,) label frequencies, smoothed
    n_answers: np.ndarray     # (A,)
    ambiguity: bool
    weight: np.ndarray        # (T',) tasks of each coded task (a pattern of answers, _patterns)
    answer: np.ndarray        # (N,) each answer's position among the coded ones
    slips: Slips = "patterned"
    split: Split = "mixed"
    fixed_pairs: bool = False  # ψ held where it starts (uniform), not fitted

    @property
    def n_tasks(self) -> float:
        return float(self.weight.sum())

    @property
    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """The class pairs of the ambiguous states: none when the model has none."""
        return (self.pa, self.pb) if self.ambiguity else (self.pa[:0], self.pb[:0])


@dataclass
class _Reading:
    """One E step: the tables, each state's likelihood of every task, the posteriors
    (T, K + 2P) and each task's log evidence (T,)."""

    tab: _Tables
    joint: _Joint
    post: np.ndarray
    norm: np.ndarray


def _read(p: _Params, pb: _Problem, shared: bool = False) -> _Reading:
    """Tables and task posteriors; ``shared``: every annotator's sound answers read with C."""
    own = np.broadcast_to(p.conf, p.own.shape) if shared else p.own
    tab = _tables(p.theta, p.xi, own)
    pa, pb_ = pb.pairs
    joint = _joint(pb.c, tab, pa, pb_)
    # without ambiguous tasks (ρ = 0) their states are left out, not given no weight
    post, norm = _posteriors(joint, _state_log_prior(p.prior, p.rho, p.psi, p.even)[:joint.log.shape[1]])
    return _Reading(tab=tab, joint=joint, post=post, norm=norm)


def _row_sums(pb: _Problem, post: np.ndarray) -> np.ndarray:
    """Σ over the answers of each row (a, y) of their task's posterior of each column of
    ``post`` (T, S), shape (A·K, S)."""
    s = post.shape[1]
    code = (pb.c.row[:, None] * s + np.arange(s)[None, :]).ravel()
    weights = (post * pb.weight[:, None])[pb.c.task].ravel()
    return np.bincount(code, weights=weights, minlength=pb.n_ann * pb.k * s).reshape(-1, s)


def _confusion(to_class: np.ndarray, slips: Slips = "patterned") -> np.ndarray:
    """C from expected sound counts (K, K: true class × label) and its Dirichlet prior;
    ``slips="even"``: each row's slips spread evenly over the other classes;
    ``slips="graded"``: over the other grades by their distance (:func:`_graded`)."""
    k = to_class.shape[0]
    conf = to_class + _CONFUSION_OFF + np.eye(k) * (_CONFUSION_DIAG - _CONFUSION_OFF)
    if slips == "even" and k > 1:
        off = (conf.sum(axis=1) - conf.diagonal()) / (k - 1)
        conf = np.where(np.eye(k, dtype=bool), conf, off[:, None])
    elif slips == "graded" and k > 2:
        conf = _graded(conf)
    return conf / conf.sum(axis=1, keepdims=True)


def _graded(conf: np.ndarray, n_iter: int = 50) -> np.ndarray:
    """Counts ``conf`` (K, K) with each row's slips re-spread over the other grades by
    distance: row z keeps its slips' total s_z, and a slip lands on y with probability
    ``w_|y−z| / W_z`` (``W_z`` the row's sum over y ≠ z), one weight per distance for every
    row (K − 2 free numbers). The weights are the maximum-likelihood ones for the counts,
    the fixed point ``w_d = N_d / Σ_z s_z c_zd / W_z`` (``N_d`` the slips d grades away,
    ``c_zd`` the cells of row z at distance d)."""
    k = conf.shape[0]
    dist = np.abs(np.arange(k)[:, None] - np.arange(k)[None, :])
    slip = dist > 0
    row = np.where(slip, conf, 0.0).sum(axis=1)                          # s_z
    n_d = np.bincount(dist[slip], weights=conf[slip], minlength=k)       # N_d, d = 0 … K − 1
    cells = np.stack([np.bincount(dist[z][slip[z]], minlength=k) for z in range(k)])   # c_zd (K, K)
    w = np.where(np.arange(k) > 0, 1.0, 0.0)
    for _ in range(n_iter):
        per_row = cells @ w                                              # W_z
        denominator = (row / np.maximum(per_row, 1e-300)) @ cells        # Σ_z s_z c_zd / W_z
        new = np.where(np.arange(k) > 0, n_d / np.maximum(denominator, 1e-300), 0.0)
        new = new / new[1:].sum()
        if np.abs(new - w).max() < 1e-12:
            w = new
            break
        w = new
    spread = w[dist] / np.maximum(cells @ w, 1e-300)[:, None]
    return np.where(slip, row[:, None] * spread, conf)


def _own_accuracy(counts: np.ndarray, conf: np.ndarray) -> np.ndarray:
    """Each annotator's accuracy, shape (A,), from their expected sound answers ``counts``
    (A, K, K: true class × label), shrunk towards C's by :data:`_OWN_WEIGHT` answers."""
    diag = np.einsum("azz->a", counts)
    total = counts.sum(axis=(1, 2))
    mean_acc = float(np.dot(conf.diagonal(), counts.sum(axis=(0, 2))) / max(counts.sum(), 1e-12))
    return (diag + _OWN_WEIGHT * mean_acc) / (total + _OWN_WEIGHT)


def own_confusions(accuracy: np.ndarray, conf: np.ndarray) -> np.ndarray:
    """Each annotator's C_a, shape (A, K, K): C with the annotator's own accuracy on the
    diagonal (one number each, as in GLAD's ability or the one-coin Dawid–Skene; a full
    K × K matrix per annotator overfits a few hundred answers), its slips spread as C
    spreads them; C itself where ``accuracy`` is NaN (an annotator who departs keeps C, so
    that their excess over typical work stays in θ and ξ).

    accuracy : (A,); conf : (K, K)."""
    k = conf.shape[0]
    off = conf * (1 - np.eye(k))
    off = off / np.maximum(off.sum(axis=1, keepdims=True), 1e-300)                      # slips' spread per row
    acc = np.nan_to_num(accuracy, nan=0.0)
    own = acc[:, None, None] * np.eye(k)[None] + (1 - acc)[:, None, None] * off[None]
    return np.where(np.isnan(accuracy)[:, None, None], conf[None], own)


def _votes(c: _Coded, k: int) -> np.ndarray:
    """Each task's label counts, shape (T, K)."""
    return np.bincount(c.task * k + c.label, minlength=c.starts.size * k).reshape(-1, k).astype(float)


def _start(pb: _Problem, rho: float, careful: np.ndarray) -> _Params:
    """A start: majority-vote class posteriors; C and π from them; θ = :data:`CAREFUL`
    where ``careful``, elsewhere from how often the annotator agrees with the majority of
    the others, relative to the median annotator."""
    c, k = pb.c, pb.k
    votes = _votes(c, k)
    post = (votes + 1e-3) / (votes + 1e-3).sum(axis=1, keepdims=True)
    # leave-one-out majority: the others' votes on the answer's own label vs their best label
    others = votes[c.task] - np.eye(k)[c.label]                         # (N, K)
    has_others = others.sum(axis=1) > 0
    agree = (others[np.arange(c.label.size), c.label] >= others.max(axis=1)) & has_others
    tasks = pb.weight[c.task]                                           # (N,) tasks behind each answer
    n_with = np.bincount(c.annotator, weights=has_others * tasks, minlength=pb.n_ann)
    acc = np.bincount(c.annotator, weights=agree * tasks, minlength=pb.n_ann) / np.maximum(n_with, 1)
    chance = float(np.dot(pb.freq, pb.freq))
    typical = float(np.median(acc[n_with > 0])) if (n_with > 0).any() else 1.0
    theta = np.full(pb.n_ann, _THETA_START)
    if typical > chance:
        theta = np.clip((acc - chance) / (typical - chance), 0.05, _THETA_START)
    theta = np.where(careful | (n_with == 0), CAREFUL, theta)
    weight = post[c.task] * (theta[c.annotator] * tasks)[:, None]       # (N, K)
    to_class = np.stack([np.bincount(c.label, weights=weight[:, z], minlength=k) for z in range(k)])
    conf = _confusion(to_class, pb.slips)
    return _Params(prior=(post * pb.weight[:, None]).sum(axis=0) / pb.n_tasks, conf=conf,
                   own=np.tile(conf, (pb.n_ann, 1, 1)), theta=theta, xi=np.tile(pb.freq, (pb.n_ann, 1)), rho=rho,
                   psi=np.full(pb.pa.size, 1.0 / max(pb.pa.size, 1)), even=0.0 if pb.split == "coins" else _EVEN_START)


def _log_prior(p: _Params, pb: _Problem) -> float:
    a_s, b_s = SOUND_PRIOR
    out = float(((a_s - 1) * np.log(p.theta) + (b_s - 1) * np.log1p(-p.theta)).sum())
    if pb.ambiguity:
        out += (_AMBIGUITY_PRIOR[0] - 1) * math.log(max(p.rho, 1e-300)) + \
            (_AMBIGUITY_PRIOR[1] - 1) * math.log1p(-p.rho)
        if pb.split == "mixed":
            out += (_EVEN_PRIOR[0] - 1) * math.log(max(p.even, 1e-300)) + (_EVEN_PRIOR[1] - 1) * math.log1p(-p.even)
    return out


def _m_step(p: _Params, pb: _Problem, r: _Reading, careful: np.ndarray,
            clicks: np.ndarray | None = None) -> _Params:
    """One M step; θ held at :data:`CAREFUL` where ``careful``, ξ at every class alike where
    ``clicks`` (annotators whose departures are random clicks, :func:`_departure_profile`)."""
    k, n_ann, (pa, pb_) = pb.k, pb.n_ann, pb.pairs
    c, tab, post = pb.c, r.tab, r.post
    n_rows = n_ann * k
    # ordinary tasks: an answer's share of being sound is its row's, whatever the task
    sums = _row_sums(pb, post[:, :k])                                    # (A·K, K)
    to_row = sums * tab.sound / (tab.sound + tab.dep[:, None])           # expected sound answers per class
    if pa.size:
        # ambiguous tasks: each answer reads the pair's first class as the others pull it
        # (the even split) and is sound or departs given its reading
        amb = (post[:, k:] * pb.weight[:, None])[c.task] / r.joint.factor()
        reads_first, reads_second = r.joint.readings(amb)                                     # (N, P)
        sound = tab.sound[c.row]                                         # (N, K)
        to_first, to_second = reads_first * sound[:, pa], reads_second * sound[:, pb_]
        for q in range(pa.size):
            to_row[:, pa[q]] += np.bincount(c.row, weights=to_first[:, q], minlength=n_rows)
            to_row[:, pb_[q]] += np.bincount(c.row, weights=to_second[:, q], minlength=n_rows)
    share = to_row.sum(axis=1)                                           # (A·K,)
    n_row = np.bincount(c.row, weights=pb.weight[c.task], minlength=n_rows)
    counts = to_row.reshape(n_ann, k, k).transpose(0, 2, 1)              # (A, z, y)
    conf = _confusion(counts.sum(axis=0), pb.slips)
    own = own_confusions(np.where(careful, _own_accuracy(counts, conf), np.nan), conf)
    a_s, b_s = SOUND_PRIOR
    s_count = share.reshape(n_ann, k).sum(axis=1)
    theta = np.clip((s_count + a_s - 1) / np.maximum(pb.n_answers + a_s + b_s - 2, 1e-12), 1e-6, 1 - 1e-6)
    theta = np.where(careful, CAREFUL, theta)
    xi = np.maximum(n_row - share, 0.0).reshape(n_ann, k) + _DEPARTING_PSEUDO * pb.freq
    if clicks is not None:
        xi = np.where(clicks[:, None], xi.sum(axis=1, keepdims=True) / k, xi)
    state = (post * pb.weight[:, None]).sum(axis=0)
    prior = state[:k] + 1.0
    rho, psi, even = p.rho, p.psi, p.even
    if pb.ambiguity:
        rho = (float(state[k:].sum()) + _AMBIGUITY_PRIOR[0] - 1) / (pb.n_tasks + sum(_AMBIGUITY_PRIOR) - 2)
        rho = min(max(rho, 1e-6), 0.5)
        evenly, coins = state[k:k + pa.size], state[k + pa.size:]
        if not pb.fixed_pairs:
            psi = evenly + coins + _PAIR_PSEUDO
            psi = psi / psi.sum()
        even = 0.0 if pb.split == "coins" else \
            (float(evenly.sum()) + _EVEN_PRIOR[0] - 1) / (float(evenly.sum() + coins.sum()) + sum(_EVEN_PRIOR) - 2)
    return _Params(prior=prior / prior.sum(), conf=conf, own=own, theta=theta,
                   xi=xi / xi.sum(axis=1, keepdims=True), rho=rho, psi=psi, even=even)


def _em(p: _Params, pb: _Problem, max_iter: int, tol: float, careful: np.ndarray,
        target: float | None = None, clicks: np.ndarray | None = None) -> tuple[_Params, float, int]:
    """MAP-EM from ``p`` (θ held at :data:`CAREFUL` where ``careful``, shape (A,)): the
    parameters, their log posterior, the iterations run. ``target``: a log posterior the
    fit is only of use above; EM stops once twice its current gain per step, over the
    steps left, would not reach it."""
    last, it = -np.inf, 0
    for it in range(1, max_iter + 1):
        r = _read(p, pb)
        logp = float(np.dot(r.norm, pb.weight)) + _log_prior(p, pb)
        if it > 1 and abs(logp - last) <= tol * max(abs(logp), 1.0):
            return p, logp, it
        if target is not None and it > _HOPELESS_AFTER and logp + 2.0 * (logp - last) * (max_iter - it) < target:
            return p, logp, it
        last = logp
        p = _m_step(p, pb, r, careful, clicks)
    return p, float(np.dot(_read(p, pb).norm, pb.weight)) + _log_prior(p, pb), it


def _predictive(p: _Params, pb: _Problem) -> tuple[np.ndarray, np.ndarray]:
    """Per answer, the probability of its label if sound, given the task's *other* answers
    (the cavity: the answer's own factor divided out of its task's posterior), and if
    departing (ξ_a[y]); shapes (N,), (N,). Sound answers are read with the shared C: the
    question is whether the annotator departs from typical work, not from their own."""
    c, k = pb.c, pb.k
    r = _read(p, pb, shared=True)
    sound = r.tab.sound[c.row]                                           # (N, K)
    w = r.post[c.task, :k] / (sound + r.tab.dep[c.row][:, None])         # P(class | others), unnormalized
    u, total = (w * sound).sum(axis=1), w.sum(axis=1)
    pa, pb_ = pb.pairs
    if pa.size:
        w_amb = r.post[c.task, k:] / r.joint.factor()                    # P(state | others), unnormalized
        reads_first, reads_second = r.joint.readings(w_amb)
        u = u + (reads_first * sound[:, pa] + reads_second * sound[:, pb_]).sum(axis=1)
        total = total + w_amb.sum(axis=1)
    # back to every answer (of every task a pattern stands for)
    u = u / total / np.maximum(p.theta[c.annotator], 1e-300)
    return u[pb.answer], p.xi[c.annotator, c.label][pb.answer]


def _departure_profile(p: _Params, pb: _Problem, annotator: np.ndarray,
                       n_ann: int) -> tuple[SoundProfile, np.ndarray]:
    """Each annotator's profile of θ (:mod:`.sound_share`) against the likelier of two kinds
    of departure: their fitted ξ_a (a careful annotator's: the labels' frequencies, which a
    spammer of a common label stands out against), or random clicks, every class alike
    (labels' frequencies follow the true classes, so clicks that land as often on rare
    classes as on common ones were read as little more than careful work); and which
    annotators the clicks fit better, shape (A,) bool."""
    u, v = _predictive(p, pb)
    clicks_v = np.full_like(v, 1.0 / pb.k)
    as_fitted, as_clicks = sound_profile(u, v, annotator, n_ann), sound_profile(u, clicks_v, annotator, n_ann)
    clicks = as_clicks.gain() > as_fitted.gain()
    if not clicks.any():
        return as_fitted, clicks
    return sound_profile(u, np.where(clicks[annotator], clicks_v, v), annotator, n_ann), clicks


def _read_ambiguity(p: _Params, logp: float, plain: _Problem, problem: _Problem, careful: np.ndarray,
                    max_iter: int, tol: float) -> tuple[_Params, float, _Problem, int]:
    """The first reading with ambiguous tasks that pays for its numbers, else the plain fit
    ``p`` (log posterior ``logp``): the fit, its log posterior, its problem, EM steps run.

    Ambiguous tasks only where they clearly explain the splits better than slips do:
    careful annotators' slips split a few tasks alike by chance, and a component of P free
    numbers fitted to T tasks gains about P/2 log T from chance alone (BIC) — a fixed bar
    let a null project of 370 tasks read 7 % of them as ambiguous. The readings, tried in
    turn:

    * *mixed*: ρ, the pairs' shares ψ and λ, the share split evenly; from two starts;
    * *coins* (λ = 0, one number less), from the mixed fit: ambiguous tasks whose careful
      annotators each toss a coin, 2–5 answers a task and slips 1 in 100, had the mixed
      fit fall short of its bar, and the ambiguity was read as slips. Where the mixed
      reading pays, it stands: on even splits, coins alone read slips as ambiguity too;
    * for nominal classes (slips spread evenly over the others), *coins between any two
      classes alike* (ψ uniform, not fitted: ρ the one number paid for). A coin-split
      project of 273 tasks gained 7.4 with fitted pairs against their price of 8.4, and
      every split read as a slip (nothing flagged). Not for ordered grades: there a pair of
      neighbours read by coins is what slips look like.
    """
    per_parameter = AMBIGUOUS_PER_PARAMETER * math.log(max(plain.c.starts.size, 2))
    n_pairs = problem.pa.size
    iters = min(max_iter, _AMBIGUITY_ITER)

    def best_fit(pb: _Problem, starts: list[_Params], price: int) -> tuple[_Params, float, int, bool]:
        """The best of EM from ``starts``, its log posterior, the steps run, whether it pays."""
        bar = logp + price * per_parameter
        fits = [_em(start, pb, iters, tol, careful, target=bar) for start in starts]
        best = max(fits, key=lambda f: f[1])
        return best[0], best[1], sum(f[2] for f in fits), best[1] >= bar

    # a component with nothing to explain shrinks slowly (hundreds of steps on a large
    # project); real ambiguity settles within a few dozen: past those a start is judged as
    # it stands (an unconverged fit only scores lower), and one climbing too slowly to
    # clear its bar is given up sooner (_em's target)
    mixed, mixed_logp, n_iter, pays = best_fit(
        problem, [_start(problem, rho, careful) for rho in _AMBIGUITY_STARTS], n_pairs + 1)
    if pays:
        return mixed, mixed_logp, problem, n_iter
    coins = dataclasses.replace(problem, split="coins")
    later = [(coins, dataclasses.replace(mixed, even=0.0), n_pairs)]
    if problem.slips == "even":
        later.append((dataclasses.replace(coins, fixed_pairs=True),
                      dataclasses.replace(mixed, even=0.0, psi=np.full(n_pairs, 1.0 / n_pairs)), 1))
    for pb, start, price in later:
        fit, fit_logp, more, pays = best_fit(pb, [start], price)
        n_iter += more
        if pays:
            return fit, fit_logp, pb, n_iter
    return p, logp, plain, n_iter


def fit_label_model(item: Sequence[Hashable], annotator: Sequence[Any], label: Sequence[Hashable], *,
                    classes: Sequence[Hashable] | None = None, ambiguity: bool = True, ordered: bool = False,
                    max_iter: int = _MAX_ITER, tol: float = _TOL) -> LabelModel:
    """Fit the model to one control's answers.

    Everybody starts careful (θ = 1: their slips make C). An annotator is let depart when
    their answers, given the others', are clearly likelier with θ < 1 (a likelihood ratio
    of :data:`DEPARTS_AT`); C is refitted without them and the rest are tested again.
    Testing every annotator at once from a free fit would let a careful annotator's θ
    sink while C sharpens around the others: sampling noise would become departures. EM
    runs from two starts — few ambiguous tasks and many — and keeps the higher log
    posterior: from few, the splits of ambiguous tasks are first read as slips and widen
    C, and EM rarely finds its way back. Ambiguity is read only where it pays for its
    numbers (docs/formulas.md "Flags"): the mixed reading, else coins with fitted pairs,
    else, for nominal classes, coins between any two classes alike.

    Parameters
    ----------
    item, annotator, label : sequences, shape (N,)
        One row per answer: its task, annotator (str) and label (hashable).
    classes : sequence, optional
        Every label the control offers (default: the labels seen), shape (K,).
    ambiguity : bool
        Whether the model has ambiguous tasks (False: Dawid–Skene with a spammer component).
    ordered : bool
        Whether ``classes`` are grades in order (a rating): slips may then spread by how
        far they land instead of evenly.
    max_iter, tol
        EM stops after ``max_iter`` iterations or when the log posterior changes by less
        than ``tol`` relative.

    Returns
    -------
    LabelModel

    Raises
    ------
    ValueError
        No answers, or fewer than two classes.
    """
    labels = pd.Series(list(label), dtype=object)
    if not len(labels):
        raise ValueError("no answers to fit")
    cls = list(dict.fromkeys(classes)) if classes is not None else []
    cls += [v for v in dict.fromkeys(labels.tolist()) if v not in set(cls)]
    if ordered:
        try:
            cls = sorted(cls)
        except TypeError:
            ordered = False       # grades that do not compare are not in order
    k = len(cls)
    if k < 2:
        raise ValueError("a categorical model needs at least two classes")
    y = pd.Index(cls).get_indexer(labels).astype(np.int64)
    ann_codes, ann_labels = pd.factorize(pd.Series([str(a) for a in annotator]), sort=True)
    c = _code(item, y, ann_codes.astype(np.int64), k)
    n_ann = len(ann_labels)
    pa, pb_ = _pair_index(k)
    counts = np.bincount(c.label, minlength=k).astype(float)
    coded, weight, answer = _patterns(c)
    problem = _Problem(c=coded, k=k, n_ann=n_ann, pa=pa, pb=pb_, freq=(counts + 1.0) / (counts.sum() + k),
                       n_answers=np.bincount(c.annotator, minlength=n_ann), ambiguity=ambiguity and pa.size > 0,
                       weight=weight, answer=answer)
    careful = np.ones(n_ann, dtype=bool)
    plain = dataclasses.replace(problem, ambiguity=False)
    p, logp, n_iter = _em(_start(plain, 0.0, careful), plain, max_iter, tol, careful)
    # Slips spread as the data say, or evenly (one accuracy per class, as the one-coin
    # models), or for ordered grades by how far they land: the fewer numbers unless the
    # pattern pays for its K(K − 2) more (graded: (K − 1)(K − 2)) by BIC. Careful
    # annotators' confusions of nominal classes are mostly even, and a pattern read off a
    # few hundred answers then tips near-ties by noise; ratings' slips go to the
    # neighbouring grades, which an even spread reads as landing anywhere (a rating a
    # point off the others' then looks four times less careful than it is).
    few: Slips = "graded" if ordered and k > 2 else "even"
    price = (k - 1) * (k - 2) if few == "graded" else k * (k - 2)
    fewer = dataclasses.replace(plain, slips=few)
    fit = _em(_start(fewer, 0.0, careful), fewer, max_iter, tol, careful)
    n_iter += fit[2]
    if fit[1] >= logp - 0.5 * price * math.log(max(len(labels), 2)):
        p, logp = fit[0], fit[1]
        plain, problem = fewer, dataclasses.replace(problem, slips=few)
    if problem.ambiguity:
        p, logp, problem, more = _read_ambiguity(p, logp, plain, problem, careful, max_iter, tol)
        n_iter += more
    prof, clicks = _departure_profile(p, problem, c.annotator, n_ann)
    clicking = np.zeros(n_ann, dtype=bool)     # freed annotators whose departures are random clicks
    for _ in range(n_ann):
        freed = careful & (prof.gain() >= DEPARTS_AT)
        if not freed.any():
            break
        careful &= ~freed
        clicking |= freed & clicks
        theta = np.where(freed, np.maximum(prof.best, 1e-3), p.theta)
        xi = np.where(clicking[:, None], 1.0 / k, p.xi)
        p, logp, more = _em(dataclasses.replace(p, theta=theta, xi=xi), problem, max_iter, tol, careful,
                            clicks=clicking)
        n_iter += more
        prof, clicks = _departure_profile(p, problem, c.annotator, n_ann)
    accuracy = np.where(careful, p.own[:, 0, 0], np.nan)
    return LabelModel(classes=tuple(cls), prior=p.prior, confusion=p.conf, accuracy=accuracy,
                      annotators=tuple(str(a) for a in ann_labels), sound=p.theta, sound_best=prof.best,
                      sound_ci=prof.interval(),
                      departing=p.xi, ambiguity=float(p.rho), pair_a=pa, pair_b=pb_, pairs=p.psi,
                      n_answers=problem.n_answers, n_iter=n_iter, log_posterior=logp, even_share=float(p.even))


def read_labels(model: LabelModel, item: Sequence[Hashable], annotator: Sequence[Any],
                label: Sequence[Hashable]) -> LabelReading:
    """Read tasks against a fitted model (the fit's own tasks, or new ones: the live path).

    Parameters
    ----------
    model : LabelModel
    item, annotator, label : sequences, shape (N,)
        One row per answer. Labels the model does not know are left out (they cannot be
        read against it).

    Returns
    -------
    LabelReading
    """
    index = {v: k for k, v in enumerate(model.classes)}
    y_all = np.array([index.get(v, -1) for v in label], dtype=np.int64)
    keep = np.flatnonzero(y_all >= 0)
    items_in = np.asarray(item, dtype=object)[keep] if len(keep) else np.zeros(0, dtype=object)
    anns = pd.Series([str(annotator[i]) for i in keep], dtype=object)
    a_codes, a_labels = pd.factorize(anns, sort=False)
    theta, xi, own = model.parameters(list(a_labels))
    k, pa, pb = len(model.classes), model.pair_a, model.pair_b
    c = _code(items_in, y_all[keep], a_codes.astype(np.int64), k)
    tab = _tables(theta, xi, own)
    jt = _joint(c, tab, pa, pb)
    post, _ = _posteriors(jt, _state_log_prior(model.prior, model.ambiguity, model.pairs, model.even_share))
    # log P(answers | ambiguous) − log P(answers | ordinary), whatever ρ: the evidence the
    # task-level reading pools over a task's controls (metrics/task_ambiguity.py)
    joint = jt.log
    k0 = len(model.classes)
    pairs_prior = model.pairs if model.pairs.size and model.pairs.sum() > 0 else np.full(model.pair_a.size, 1.0)
    amb_prior = _pair_log_prior(pairs_prior / pairs_prior.sum(), model.even_share)
    log_lr = (_logsumexp(joint[:, k0:] + amb_prior) if model.pair_a.size
              else np.full(c.starts.size, -np.inf)) - _logsumexp(joint[:, :k0] + np.log(model.prior))
    # per pair, split evenly or by coins alike
    post_ord, post_amb = post[:, :k], post[:, k:k + pa.size] + post[:, k + pa.size:]
    # the consensus: the true class of an ordinary task; on an ambiguous one, each of its two
    # classes in proportion to the posterior it would have as the one true class (P(z | answers,
    # ordinary), the prior and every answer's likelihood, restricted to the pair): both readings
    # are defensible, and a 1–1 split goes where Dawid–Skene's reading would, to the class the
    # likelier annotator chose or the commoner class, not to a coin flip
    marginal = post_ord.copy()
    if pa.size:
        as_one = joint[:, :k0] + np.log(np.maximum(model.prior, 1e-300))                 # (T, K)
        share_a = 1.0 / (1.0 + np.exp(np.clip(as_one[:, pb] - as_one[:, pa], -700, 700)))   # (T, P)
        for q in range(pa.size):
            marginal[:, pa[q]] += share_a[:, q] * post_amb[:, q]
            marginal[:, pb[q]] += (1 - share_a[:, q]) * post_amb[:, q]
    consensus = marginal.argmax(axis=1)
    # departs: a departing answer whose label is not the task's class (on an ambiguous task,
    # neither of its two): the planted problem a reviewer must see, and what the generating
    # model's own posterior counts. Weighing it by 1 − C[z, y] / C[z, z] (as far as careful
    # slips would not land there) hid wrong clicks wherever slips are frequent: on a third
    # generator's hard + random project 0.61 of the wrong clicks were flagged, now 0.93
    visible = 1.0 - np.eye(model.confusion.shape[0])
    visible_pair = np.minimum(visible[pa], visible[pb])                                 # (P, K)
    y = c.label
    shown = np.concatenate([visible.T[y], np.tile(visible_pair.T[y], 2)], axis=1)       # (N, K + 2P)
    dep = tab.dep[c.row][:, None]
    # on an ordinary task an answer's factor is its own; on an ambiguous one, given the
    # others' pull on its reading (none under coins)
    factor = tab.sound[c.row] + dep
    if pa.size:
        factor = np.concatenate([factor, jt.factor()], axis=1)
    q_any = dep / factor
    q_dep = q_any * shown
    p_dep = (post[c.task] * q_dep).sum(axis=1)
    p_any_sorted = (post[c.task] * q_any).sum(axis=1)
    # P(ordinary and nobody departs) = Σ_z P(z | answers) Π_n (1 − q_n(z))
    clean = np.exp(np.add.reduceat(np.log1p(-np.minimum(q_dep[:, :k], 1 - 1e-15)), c.starts, axis=0))
    p_flag = 1.0 - (post_ord * clean).sum(axis=1)
    best_pair = post_amb.argmax(axis=1) if pa.size else np.zeros(c.starts.size, dtype=np.int64)
    split = np.column_stack([pa[best_pair], pb[best_pair]]) if pa.size else np.zeros((c.starts.size, 2), int)
    # back to input order (answers with unknown labels: nothing departs, task −1)
    p_departs = np.zeros(len(y_all))
    task_of = np.full(len(y_all), -1, dtype=np.int64)
    p_departs[keep[c.order]] = p_dep
    p_any = np.zeros(len(y_all))
    p_any[keep[c.order]] = p_any_sorted
    task_of[keep[c.order]] = c.task
    return LabelReading(items=c.items, consensus=consensus, consensus_p=marginal[np.arange(consensus.size), consensus],
                        p_ambiguous=post_amb.sum(axis=1), p_flag=np.clip(p_flag, 0.0, 1.0), split=split,
                        p_departs=p_departs, task_of=task_of, label=y_all, log_lr_ambiguous=log_lr,
                        p_departs_any=p_any)


def _logsumexp(x: np.ndarray) -> np.ndarray:
    """log Σ exp over the last axis, shape x.shape[:-1]."""
    top = x.max(axis=-1)
    return top + np.log(np.exp(x - top[..., None]).sum(axis=-1))

"""The answers of an ambiguous task whose careful annotators split evenly between two readings.

On an ambiguous task with classes ``{z, z'}`` the annotators do not each toss a coin for
their reading: the task splits them, half reading ``z`` and half ``z'`` (one more on
either side when their number is odd). Which annotators read which is unknown, so the
task's likelihood sums over every even assignment ``S`` (the answers that read ``z``)::

    P(answers | z, z') = Σ_m w_m / C(n, m) Σ_{|S| = m} Π_{i ∈ S} a_i Π_{i ∉ S} b_i

with ``a_i`` (``b_i``) the likelihood of answer ``i`` if it reads ``z`` (``z'``),
``m ∈ {⌊n/2⌋, ⌈n/2⌉}`` and ``w_m = ½`` each (1 when they coincide). The inner sum is the
coefficient of ``x^m`` in ``Π_i (b_i + a_i x)``: a polynomial product per task, no
enumeration. Unlike independent coins, an even split explains a 3–2 split of five answers
far better than a 4–1 (a slip on an ordinary task): that is what sets ambiguity apart
from careful annotators' slips when a task has a few answers.

Per answer the same sums with the answer left out give what the *other* answers say of
its reading: ``P(reads z | the others) = g_i``, so that ``P(y_i | the others) =
g_i a_i + (1 − g_i) b_i`` (the cavity the annotator test reads) and ``P(reads z | all)
= g_i a_i / (g_i a_i + (1 − g_i) b_i)`` (EM's expected counts).
"""
from __future__ import annotations

from dataclasses import dataclass
from math import comb

import numpy as np

__all__ = ["EvenSplit", "Layout", "layout", "even_split"]

_TINY = 1e-300


@dataclass(frozen=True)
class EvenSplit:
    """Per task and pair, the log likelihood of its answers; per answer, what the others say.

    Attributes
    ----------
    log_total : ndarray, shape (T, P)
        ``log P(answers | pair)``.
    pull : ndarray, shape (N, P)
        ``g_i``: the probability that answer ``i`` reads the pair's first class, given the
        task's other answers (½ for a task's only answer).
    """

    log_total: np.ndarray
    pull: np.ndarray


@dataclass(frozen=True)
class Layout:
    """The tasks grouped by their number of answers: per count ``n``, the tasks (T_n,) and
    their answers' positions (T_n, n). The same for every EM step of a fit."""

    n_answers: int
    n_tasks: int
    groups: tuple[tuple[int, np.ndarray, np.ndarray], ...]


def layout(starts: np.ndarray, n_answers: int) -> Layout:
    """Group the tasks of answers sorted by task (``starts``, shape (T,): each task's first)."""
    counts = np.diff(np.r_[starts, n_answers]).astype(np.int64)
    groups = []
    for n in np.unique(counts):
        tasks = np.flatnonzero(counts == n)
        groups.append((int(n), tasks, starts[tasks][:, None] + np.arange(int(n))[None, :]))
    return Layout(n_answers=n_answers, n_tasks=int(starts.size), groups=tuple(groups))


def _weights(n: int) -> list[tuple[int, float]]:
    """The counts ``m`` of answers reading the first class and ``w_m / C(n, m)``."""
    ms = sorted({n // 2, (n + 1) // 2})
    return [(m, 1.0 / len(ms) / comb(n, m)) for m in ms]


def _coefficients(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Coefficients of ``Π_i (second_i + first_i x)`` over axis 1: shapes (T, n, P) → (T, n + 1, P)."""
    t, n, p = first.shape
    coef = np.zeros((t, n + 1, p))
    coef[:, 0] = 1.0
    for j in range(n):
        coef[:, 1:j + 2] = coef[:, 1:j + 2] * second[:, j, None] + coef[:, 0:j + 1] * first[:, j, None]
        coef[:, 0] *= second[:, j]
    return coef


def _without_each(coef: np.ndarray, first: np.ndarray, second: np.ndarray, wanted: list[int]) -> dict[int, np.ndarray]:
    """Coefficients ``wanted`` of the product with each factor left out: per index k,
    shape (T, n, P), row ``i`` the coefficient of ``x^k`` in ``coef / (second_i + first_i x)``.
    The division runs from the low degrees where ``second_i`` is the larger (1 after
    scaling), from the high ones elsewhere — each step then multiplies the error by at most
    1 — and only as far as the wanted indices."""
    n = coef.shape[1] - 1
    a, b = first, second                                                 # (T, n, P)
    c = coef[:, :, None, :].transpose(0, 2, 1, 3)                        # (T, 1, n + 1, P)
    low: dict[int, np.ndarray] = {}
    high: dict[int, np.ndarray] = {}
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):   # the direction not taken may overflow
        q = c[:, :, 0] / b
        low[0] = q
        for j in range(1, max(wanted) + 1):
            q = (c[:, :, j] - a * q) / b
            low[j] = q
        q = c[:, :, n] / a
        high[n - 1] = q
        for j in range(n - 1, min(wanted), -1):
            q = (c[:, :, j] - b * q) / a
            high[j - 1] = q
    forward = b >= a
    return {k: np.where(forward, low[k], high[k]) for k in wanted}


def _few(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`even_split` of tasks of 1, 2 or 3 answers: shapes (T, n, P) → (T, P), (T, n, P)."""
    n = a.shape[1]
    if n == 1:
        return np.log(0.5 * (a[:, 0] + b[:, 0])), np.full(a.shape, 0.5)
    if n == 2:      # one reads each class: (a₁b₂ + b₁a₂) / 2; the other's reading is the opposite
        total = 0.5 * (a[:, 0] * b[:, 1] + b[:, 0] * a[:, 1])
        pull = b[:, ::-1] / (a[:, ::-1] + b[:, ::-1])
        return np.log(total), pull
    # three: one or two read the first class (½ each, any of three alike): the x¹ and x²
    # coefficients of Π(b + a x), over 6; with answer i left out, the other two j, k
    # give b_j b_k + (a_j b_k + b_j a_k) towards its first class, (a_j b_k + b_j a_k) + a_j a_k
    # towards its second (written in place into four buffers: this runs at every EM step)
    pull = np.empty(a.shape)
    mixed, to_first, to_second, both = (np.empty(a.shape[:1] + a.shape[2:]) for _ in range(4))
    total = None
    for i, (j, k) in enumerate(((1, 2), (0, 2), (0, 1))):
        aj, bj, ak, bk = a[:, j], b[:, j], a[:, k], b[:, k]                   # (T, P) views
        np.multiply(aj, bk, out=mixed)
        np.multiply(bj, ak, out=both)
        mixed += both
        np.multiply(bj, bk, out=to_first)
        to_first += mixed
        np.multiply(aj, ak, out=to_second)
        to_second += mixed
        np.add(to_first, to_second, out=both)
        np.divide(to_first, both, out=pull[:, i])
        if total is None:
            total = (a[:, 0] * to_first + b[:, 0] * to_second) / 6.0
    return np.log(total, out=total), pull


def even_split(starts: np.ndarray, first: np.ndarray, second: np.ndarray, at: Layout | None = None) -> EvenSplit:
    """The even-split likelihood of every task and pair, and each answer's pull.

    Parameters
    ----------
    starts : ndarray of int, shape (T,)
        Each task's first answer; answers are sorted by task (task ``t`` holds
        ``starts[t]`` up to the next start).
    first, second : ndarray, shapes (N, P)
        Each answer's likelihood if it reads the pair's first class, its second (sound or
        departing: everything but the reading is already summed in).
    at : Layout, optional
        :func:`layout` of ``starts`` (made here if not given).

    Returns
    -------
    EvenSplit
    """
    n_ans, n_pairs = first.shape
    at = at if at is not None else layout(starts, n_ans)
    log_total = np.zeros((at.n_tasks, n_pairs))
    pull = np.full((n_ans, n_pairs), 0.5)
    for n, tasks, rows in at.groups:
        if len(at.groups) == 1:     # every task has n answers: a view, not a copy
            a, b = first.reshape(-1, n, n_pairs), second.reshape(-1, n, n_pairs)
        else:
            a, b = first[rows], second[rows]                                  # (T_n, n, P)
        if n <= 3:      # most tasks: the sums written out (likelihoods, no scaling needed)
            logs, pulls = _few(a, b)
            if len(at.groups) == 1:
                return EvenSplit(log_total=logs, pull=pulls.reshape(n_ans, n_pairs))
            log_total[tasks], pull[rows] = logs, pulls
            continue
        # each answer scaled by its larger likelihood: the coefficients stay within C(n, m)
        scale = np.maximum(np.maximum(a, b), _TINY)
        a, b = a / scale, b / scale
        coef = _coefficients(a, b)
        weights = _weights(n)
        total = sum(w * coef[:, m] for m, w in weights)                      # (T_n, P)
        log_total[tasks] = np.log(scale).sum(axis=1) + np.log(np.maximum(total, _TINY))
        wanted = sorted({m - 1 for m, _ in weights if m >= 1} | {m for m, _ in weights if m <= n - 1})
        rest = _without_each(coef, a, b, wanted)                              # index -> (T_n, n, P)
        to_first = sum(w * rest[m - 1] for m, w in weights if m >= 1)
        to_second = sum(w * rest[m] for m, w in weights if m <= n - 1)
        both = to_first + to_second
        pull[rows] = np.where(both > 0, to_first / np.maximum(both, _TINY), 0.5)
    return EvenSplit(log_total=log_total, pull=pull)

"""CrowdTruth's AQS through per-(unit set, worker, answer) sums (``AnswerSums``, linear in the
workers of a unit when they share their units) against its pairwise definition, written
independently here: every ordered pair of distinct workers, every answer, in plain Python.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from ls_agreement.metrics.crowdtruth_sums import SMALL, AnswerSums


def _pairwise_aqs(cells: dict, uqs: np.ndarray, wqs: np.ndarray, n_a: int) -> np.ndarray:
    """``AQS_a = Σ_{i≠j, D_ij>0} w_i w_j N_ij / D_ij / Σ_{i≠j, D_ij>0} w_i w_j`` (CrowdTruth-core's
    ``Metrics.annotation_quality_score``), ``N``/``D`` over the units i and j share.

    cells : {worker: {unit: {answer: count}}}
    """
    out = np.empty(n_a)
    for a in range(n_a):
        num = den = 0.0
        for i, ui in cells.items():
            for j, uj in cells.items():
                if i == j:
                    continue
                shared = set(ui) & set(uj)
                n = math.fsum(uqs[u] * ui[u].get(a, 0.0) * uj[u].get(a, 0.0) for u in shared)
                d = math.fsum(uqs[u] * uj[u].get(a, 0.0) for u in shared)
                if d > 0:
                    num += wqs[i] * wqs[j] * n / d
                    den += wqs[i] * wqs[j]
        out[a] = max(num / den if den > SMALL else SMALL, SMALL)
    return out


def _random_judgements(rng: np.random.Generator, n_u: int, n_w: int, n_a: int, shared_sets: bool):
    """Judgements (unit, worker) and chosen cells; workers on the same units or each on a random subset."""
    ju, jw, ch_j, ch_a, ch_c = [], [], [], [], []
    every = rng.random(n_w) < 0.5 if not shared_sets else np.ones(n_w, dtype=bool)
    for w in range(n_w):
        units = np.arange(n_u) if every[w] else np.flatnonzero(rng.random(n_u) < 0.5)
        for u in units:
            j = len(ju)
            ju.append(int(u))
            jw.append(w)
            answers = rng.choice(n_a, size=int(rng.integers(1, 3)), replace=False)
            for a in answers:
                ch_j.append(j)
                ch_a.append(int(a))
                ch_c.append(float(rng.integers(1, 3)))       # a repeated answer counts twice
    arr = lambda x, t=np.int64: np.asarray(x, dtype=t)  # noqa: E731
    return arr(ju), arr(jw), arr(ch_j), arr(ch_a), arr(ch_c, np.float64)


@pytest.mark.parametrize("shared_sets", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_aqs_sums_equal_pairwise_definition(seed: int, shared_sets: bool) -> None:
    rng = np.random.default_rng(seed)
    n_u, n_w, n_a = 5, 14, 4
    ju, jw, ch_j, ch_a, ch_c = _random_judgements(rng, n_u, n_w, n_a, shared_sets)
    cells: dict = {}
    for j, a, c in zip(ch_j, ch_a, ch_c):
        cells.setdefault(int(jw[j]), {}).setdefault(int(ju[j]), {})[int(a)] = float(c)
    for w, u in zip(jw, ju):                           # a judgement is on its unit even if empty of a
        cells.setdefault(int(w), {}).setdefault(int(u), {})
    sums = AnswerSums.build(ju, jw, ch_j, ch_a, ch_c, n_u, n_w, n_a)
    # qualities as iterations leave them, a near-zero worker and a zero-quality unit among them
    uqs = rng.uniform(0.05, 1.0, n_u)
    uqs[0] = 0.0
    wqs = rng.uniform(0.05, 1.0, n_w)
    wqs[1] = 1e-9
    got = sums.aqs(uqs, wqs)
    np.testing.assert_allclose(got, _pairwise_aqs(cells, uqs, wqs, n_a), rtol=1e-12, atol=0)


def test_aqs_keeps_its_digits_when_one_worker_dominates() -> None:
    # a unit set whose weight is nearly all one worker's: "the others" of that worker are tiny
    # and must not come out of a difference of large sums
    ju = np.array([0, 0, 0, 1, 1, 1])
    jw = np.array([0, 1, 2, 0, 1, 2])
    ch_j, ch_a, ch_c = np.arange(6), np.array([0, 0, 1, 0, 1, 0]), np.ones(6)
    sums = AnswerSums.build(ju, jw, ch_j, ch_a, ch_c, 2, 3, 2)
    uqs, wqs = np.array([1.0, 0.5]), np.array([1.0, 3e-13, 7e-13])
    cells = {w: {} for w in range(3)}
    for j in range(6):
        cells[int(jw[j])].setdefault(int(ju[j]), {})[int(ch_a[j])] = 1.0
    np.testing.assert_allclose(sums.aqs(uqs, wqs), _pairwise_aqs(cells, uqs, wqs, 2), rtol=1e-12)


def test_terms_are_linear_in_workers_sharing_units() -> None:
    # 2,000 workers on the same 3 units: one unit set, one term per chosen cell
    rng = np.random.default_rng(0)
    n_w, n_u = 2000, 3
    ju = np.tile(np.arange(n_u), n_w)
    jw = np.repeat(np.arange(n_w), n_u)
    ch_j = np.arange(ju.size)
    ch_a = rng.integers(0, 5, ju.size)
    sums = AnswerSums.build(ju, jw, ch_j, ch_a, np.ones(ju.size), n_u, n_w, 5)
    assert sums.x_cell.size == ch_j.size

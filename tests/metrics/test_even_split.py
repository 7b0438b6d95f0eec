"""The even-split likelihood (metrics/even_split.py) against a brute-force sum over every
even assignment of readings, and each answer's pull against the same sum with its
reading fixed."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ls_agreement.metrics.even_split import even_split


def _brute(a: np.ndarray, b: np.ndarray) -> tuple[float, np.ndarray]:
    """One task and pair: P(answers) and, per answer, P(reads the first class | the others)."""
    n = a.size
    counts = sorted({n // 2, (n + 1) // 2})
    total = 0.0
    joint_first = np.zeros(n)       # Σ over assignments where i reads the first class, i's factor left out
    joint_second = np.zeros(n)
    for m in counts:
        w = 1.0 / len(counts) / math.comb(n, m)
        for firsts in itertools.combinations(range(n), m):
            f = [a[i] if i in firsts else b[i] for i in range(n)]
            total += w * math.prod(f)
            for i in range(n):
                rest = w * math.prod(f[j] for j in range(n) if j != i)
                if i in firsts:
                    joint_first[i] += rest
                else:
                    joint_second[i] += rest
    return total, joint_first / (joint_first + joint_second)


@pytest.mark.parametrize("sizes", [(1, 2, 3), (4, 5), (6, 7, 2), (3, 3, 8)])
def test_against_every_assignment(sizes: tuple[int, ...]) -> None:
    rng = np.random.default_rng(sum(sizes))
    n_pairs = 3
    first = rng.uniform(0.001, 1.0, (sum(sizes), n_pairs))
    second = rng.uniform(0.001, 1.0, (sum(sizes), n_pairs))
    first[::4] *= 1e-6                    # a few answers nearly impossible under one reading
    starts = np.cumsum([0, *sizes[:-1]])
    got = even_split(starts, first, second)
    for t, (s, n) in enumerate(zip(starts, sizes)):
        for q in range(n_pairs):
            total, pull = _brute(first[s:s + n, q], second[s:s + n, q])
            assert got.log_total[t, q] == pytest.approx(math.log(total), rel=1e-10, abs=1e-10)
            assert got.pull[s:s + n, q] == pytest.approx(pull, rel=1e-9, abs=1e-12)


def test_an_even_split_is_likelier_than_a_lopsided_one() -> None:
    """Five answers, each sure of its reading: 3–2 is possible, 4–1 is not (up to slips)."""
    sure = np.array([[1.0], [1.0], [1.0], [1e-9], [1e-9]])      # three read the first class
    got = even_split(np.array([0]), sure, 1.0 - sure)
    lopsided = even_split(np.array([0]), np.array([[1.0], [1.0], [1.0], [1.0], [1e-9]]),
                          np.array([[1e-9], [1e-9], [1e-9], [1e-9], [1.0]]))
    assert got.log_total[0, 0] == pytest.approx(math.log(0.5 / math.comb(5, 3)), rel=1e-6)
    assert lopsided.log_total[0, 0] < got.log_total[0, 0] - 15

"""Coverage probabilities of randomly placed segments (paper 003's random annotation model).

An annotator marked ``k`` segments of lengths ``l_1..l_k`` (total ``L``) on a text of
``N`` tokens. The random model keeps the number and the lengths of the segments and
places them uniformly at random:

* *non-overlapping* model — every arrangement of the ``k`` distinct segments without
  overlap is equally likely (paper 003, Proposition 2);
* *overlapping* model — each segment's start is uniform on ``[0, N - l]``, independently
  (Proposition 5).

What the chance-corrected F1 needs is, per token ``t``, the expected number of random
segments covering ``t`` (:func:`coverage`); in the non-overlapping model that is the
probability that ``t`` is covered.

Exact non-overlapping coverage (why it is polynomial)
-----------------------------------------------------
A non-overlapping arrangement is a sequence of ``k`` blocks and ``F = N - L`` free
tokens; each of the ``k! * C(F + k, k)`` sequences is equally likely, and the order of
the blocks is independent of where the free tokens fall. Token ``t`` is *un*covered
exactly when some free token, say the ``q``-th, lands on it, i.e. when the blocks before
that free token number ``j`` and have total length ``b = t - q``. The chance of ``j``
blocks before the ``q``-th free token is ``C(q+j, j) C(F-1-q+k-j, k-j) / C(F+k, k)``, and
those ``j`` blocks are a uniform ``j``-subset of the segments, whose total length has
distribution ``p[j, b]`` — a knapsack count over (number, total length), computed once
in ``O(k^2 L)`` as a convex-combination recurrence (no subset is ever enumerated, no
count overflows). ``P(t uncovered) = sum_j (p[j] * w[j])[t]`` is ``k + 1`` convolutions.
This is Proposition 2's "count by how many segments lie left and their total length",
taken from the point of view of a free token instead of a fixed segment, which needs a
single knapsack table instead of one per segment.

Uniform approximation
---------------------
For long sparse texts the exact start distribution of every segment is flat except at
the ends, where it peaks at ``1 / (F + k)`` (the segment first, no gap before it)
against the uniform ``1 / (N - l + 1)`` (paper 003, Proposition 3 and "Uniform
approximation"). :func:`uniform_gap` returns ``eps = (N - l_min + 1) / (F + k) - 1``;
when ``eps <= approx_tol`` the uniform starts (the overlapping model's coverage) may
replace the exact one. Documented tolerance: the expected number of tokens covered by
both of two annotators (E[TP]) under the approximation is within a relative ``eps``
(the larger of the two annotators' gaps) of the exact value — on 20,000 random cases
the worst error was 0.13 eps; ``tests/seed/test_span_chance.py`` checks the bound.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import numpy as np
from scipy.special import gammaln
from .errors import BadInput

__all__ = [
    "coverage", "coverage_nonoverlapping", "coverage_overlapping", "subset_length_distribution",
    "uniform_gap", "observed_coverage", "coverage_sorted",
]

# Above this many multiply-adds the k + 1 convolutions go through the FFT.
_DIRECT_LIMIT = 400_000


def _check_lengths(n_tokens: int, lengths: Sequence[int], *, disjoint: bool) -> np.ndarray:
    n = int(n_tokens)
    if n < 0:
        raise BadInput(f"n_tokens must be >= 0, got {n_tokens!r}")
    ls = np.asarray(lengths, dtype=np.int64).ravel()
    if ls.size and ls.min() < 1:
        raise BadInput(f"segment lengths must be >= 1, got {ls.tolist()}")
    if ls.size and ls.max() > n:
        raise BadInput(f"a segment of length {int(ls.max())} does not fit in {n} tokens")
    if disjoint and ls.sum() > n:
        raise BadInput(
            f"{ls.size} non-overlapping segments of total length {int(ls.sum())} do not fit "
            f"in {n} tokens")
    return ls


def subset_length_distribution(lengths: Sequence[int]) -> np.ndarray:
    """Distribution of the total length of a uniformly random ``j``-subset of segments.

    Parameters
    ----------
    lengths : sequence of int, shape (k,)

    Returns
    -------
    ndarray, shape (k + 1, L + 1)
        ``p[j, b]`` = probability that ``j`` segments drawn without replacement have
        total length ``b`` (each row sums to 1). Built segment by segment with
        ``p_i[j] = (i-j)/i * p_{i-1}[j] + j/i * shift(p_{i-1}[j-1], l_i)`` — only
        convex combinations, so it stays accurate where the subset counts themselves
        (up to ``C(k, k/2)``) would overflow (paper 003, Proposition 2).
    """
    ls = np.asarray(lengths, dtype=np.int64).ravel()
    k, total = ls.size, int(ls.sum())
    p = np.zeros((k + 1, total + 1))
    p[0, 0] = 1.0
    reach = 0  # largest total reachable so far: columns beyond it are zero
    for i, l in enumerate(ls.tolist(), start=1):
        j = np.arange(1, i + 1, dtype=np.float64)[:, None]
        new_reach = reach + l
        keep = p[1:i + 1, :new_reach + 1] * ((i - j) / i)
        keep[:, l:new_reach + 1] += p[0:i, :reach + 1] * (j / i)
        p[1:i + 1, :new_reach + 1] = keep
        reach = new_reach
    return p


def _free_token_weights(n_free: int, k: int) -> np.ndarray:
    """``w[j, q]``: chance that exactly ``j`` of ``k`` blocks precede the ``q``-th free token.

    Returns ndarray, shape (k + 1, n_free), computed in log space (counts reach
    ``C(F + k, k)``, far beyond float range for long texts).
    """
    # log-factorials once, then log-binomials by table look-up (gammaln per cell is slow)
    lf = gammaln(np.arange(n_free + k + 1, dtype=np.float64) + 1.0)
    q = np.arange(n_free)[None, :]
    j = np.arange(k + 1)[:, None]
    r = n_free - 1 - q  # free tokens after the q-th one
    logw = (lf[q + j] - lf[j] - lf[q]) + (lf[r + k - j] - lf[k - j] - lf[r]) \
        - (lf[n_free + k] - lf[k] - lf[n_free])
    w = np.exp(logw)
    # each column is a distribution over j: renormalizing removes the log-table rounding
    w /= w.sum(axis=0, keepdims=True)
    return w


@lru_cache(maxsize=65536)
def _coverage_nonoverlapping_cached(n: int, lengths: tuple[int, ...]) -> np.ndarray:
    k = len(lengths)
    out = np.zeros(n)
    if k == 0:
        return out
    n_free = n - sum(lengths)
    if n_free == 0:
        out[:] = 1.0
        return out
    p = subset_length_distribution(lengths)
    w = _free_token_weights(n_free, k)
    if p.size * n_free <= _DIRECT_LIMIT:
        unc = np.zeros(n)
        for pj, wj in zip(p, w):
            unc += np.convolve(pj, wj)
    else:
        # imported here: scipy.signal costs every report's start-up ~0.1 s, and only long texts get here
        from scipy.signal import fftconvolve

        unc = fftconvolve(p, w, axes=1).sum(axis=0)
    cov = 1.0 - unc
    np.clip(cov, 0.0, 1.0, out=cov)
    cov.flags.writeable = False
    return cov


def coverage_nonoverlapping(n_tokens: int, lengths: Sequence[int]) -> np.ndarray:
    """Exact probability that each token is covered, non-overlapping random model.

    Parameters
    ----------
    n_tokens : int
        ``N``, the text length in tokens.
    lengths : sequence of int, shape (k,)
        The annotator's segment lengths (their order does not matter).

    Returns
    -------
    ndarray of float64, shape (N,)
        Read-only (results are cached by ``(N, sorted lengths)``). Polynomial:
        ``O(k^2 L + k N log N)``. Reference: paper 003, Propositions 1-2; module
        docstring for the derivation.
    """
    ls = _check_lengths(n_tokens, lengths, disjoint=True)
    return _coverage_nonoverlapping_cached(int(n_tokens), tuple(sorted(ls.tolist())))


@lru_cache(maxsize=65536)
def _coverage_overlapping_cached(n: int, lengths: tuple[int, ...]) -> np.ndarray:
    out = np.zeros(n)
    if not lengths:
        return out
    t = np.arange(n)
    ls, counts = np.unique(np.asarray(lengths, dtype=np.int64), return_counts=True)
    for l, c in zip(ls.tolist(), counts.tolist()):
        # starts covering t: s in [max(0, t-l+1), min(t, N-l)]
        n_starts = np.minimum(t, n - l) - np.maximum(0, t - l + 1) + 1
        out += c * n_starts / (n - l + 1)
    out.flags.writeable = False
    return out


def coverage_overlapping(n_tokens: int, lengths: Sequence[int]) -> np.ndarray:
    """Expected number of random segments covering each token, overlapping model.

    Each segment of length ``l`` starts uniformly on ``[0, N - l]``, so it covers ``t``
    with probability ``#{s : max(0, t-l+1) <= s <= min(t, N-l)} / (N - l + 1)``
    (paper 003, Proposition 5).

    Returns
    -------
    ndarray of float64, shape (N,), read-only.
    """
    ls = _check_lengths(n_tokens, lengths, disjoint=False)
    return _coverage_overlapping_cached(int(n_tokens), tuple(sorted(ls.tolist())))


def uniform_gap(n_tokens: int, lengths: Sequence[int]) -> float:
    """How far the exact non-overlapping start distribution is from uniform.

    ``eps = (N - l_min + 1) / (N - L + k) - 1``: the largest start probability,
    ``1 / (N - L + k)`` (a segment flush with a text end), over the uniform one,
    minus 1 (paper 003, "Uniform approximation"). 0 for a single segment; ``inf`` when
    the segments fill the text.
    """
    ls = _check_lengths(n_tokens, lengths, disjoint=True)
    if ls.size == 0:
        return 0.0
    denom = int(n_tokens) - int(ls.sum()) + ls.size
    return (int(n_tokens) - int(ls.min()) + 1) / denom - 1.0


def coverage(n_tokens: int, lengths: Sequence[int], model: str = "non-overlapping",
             approx_tol: float = 0.0) -> np.ndarray:
    """Expected coverage of each token under paper 003's random annotation model.

    Parameters
    ----------
    n_tokens : int
    lengths : sequence of int, shape (k,)
    model : {"non-overlapping", "overlapping"}
    approx_tol : float
        Non-overlapping model only: use the uniform approximation when
        :func:`uniform_gap` ``<= approx_tol`` (0 = always exact).

    Returns
    -------
    ndarray of float64, shape (N,), read-only.
    """
    if model == "overlapping":
        return coverage_overlapping(n_tokens, lengths)
    if model != "non-overlapping":
        raise BadInput(f"model must be 'non-overlapping' or 'overlapping', got {model!r}")
    if approx_tol > 0 and len(lengths) and uniform_gap(n_tokens, lengths) <= approx_tol:
        return coverage_overlapping(n_tokens, lengths)
    return coverage_nonoverlapping(n_tokens, lengths)


def coverage_sorted(n_tokens: int, lengths: tuple[int, ...], model: str = "non-overlapping",
                    approx_tol: float = 0.0) -> np.ndarray:
    """:func:`coverage` for already validated, sorted lengths (no checks: hot loops).

    Parameters
    ----------
    n_tokens : int
    lengths : tuple of int, sorted ascending, shape (k,); non-overlapping model: sum <= N

    Returns
    -------
    ndarray of float64, shape (N,), read-only (cached).
    """
    if model == "overlapping":
        return _coverage_overlapping_cached(n_tokens, lengths)
    if approx_tol > 0 and lengths:
        gap = (n_tokens - lengths[0] + 1) / (n_tokens - sum(lengths) + len(lengths)) - 1.0
        if gap <= approx_tol:
            return _coverage_overlapping_cached(n_tokens, lengths)
    return _coverage_nonoverlapping_cached(n_tokens, lengths)


def observed_coverage(n_tokens: int, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Number of the given segments ``[start, end)`` covering each token.

    Returns
    -------
    ndarray of float64, shape (N,)
    """
    diff = np.zeros(int(n_tokens) + 1)
    np.add.at(diff, np.asarray(starts, dtype=np.int64), 1.0)
    np.add.at(diff, np.asarray(ends, dtype=np.int64), -1.0)
    return np.cumsum(diff[:-1])

"""Item bootstrap: resample items (not pairs), as paper 001's block bootstrap does.

Reference: Wong, Paritosh & Aroyo (2021), "Cross-replication Reliability", §5; our
docs/formulas.md §9. Resampling items keeps each item's annotations together, so the
interval reflects both annotator and item variability.
"""
from __future__ import annotations

import functools
import math
from typing import Callable, Iterator

import numpy as np
from scipy.special import ndtr, ndtri
from scipy.stats import t as student_t

__all__ = ["item_multiplicities", "iter_multiplicities", "jackknife_weights", "percentile_interval",
           "bca_interval", "bca_intervals", "expanded_level"]


def item_multiplicities(n_items: int, n_boot: int, seed: int | np.random.Generator = 0) -> np.ndarray:
    """How often each item is drawn in each bootstrap replicate.

    Returns
    -------
    ndarray of int32, shape (n_boot, n_items); every row sums to ``n_items``.
    """
    return np.concatenate(list(iter_multiplicities(n_items, n_boot, seed)), axis=0) if n_boot else \
        np.zeros((0, n_items), dtype=np.int32)


def iter_multiplicities(n_items: int, n_boot: int, seed: int | np.random.Generator = 0,
                        chunk: int | None = None, dtype: type = np.int32,
                        transposed: bool = False) -> Iterator[np.ndarray]:
    """Like :func:`item_multiplicities`, in chunks of replicates to bound memory.

    Yields
    ------
    ndarray of ``dtype``, shape (≤ chunk, n_items), or (n_items, ≤ chunk) when
    ``transposed`` (items by replicates, as the vectorized replicate code reads them; drawn
    with 32-bit integers, a different stream from the untransposed form).
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    if chunk is None:
        chunk = max(1, min(n_boot, 2_000_000 // max(n_items, 1)))
    done = 0
    while done < n_boot:
        b = min(chunk, n_boot - done)
        if transposed and n_items * b < 2 ** 31:
            counts = _counts(rng.integers(0, n_items, size=(b, n_items), dtype=np.int32), n_items)
            out = np.empty((n_items, b), dtype=dtype)
            out[...] = counts.T
            yield out
        else:
            counts = _counts(rng.integers(0, n_items, size=(b, n_items)), n_items)
            yield np.ascontiguousarray(counts.T).astype(dtype, copy=False) if transposed else counts.astype(dtype, copy=False)
        done += b


def _counts(draws: np.ndarray, n_items: int) -> np.ndarray:
    """How often each item is drawn in each replicate.

    Parameters
    ----------
    draws : ndarray of int, shape (b, n_items)
        The items drawn, one row per replicate (int32 only when ``b · n_items < 2**31``).

    Returns
    -------
    ndarray of int64, shape (b, n_items)
        Counted a replicate at a time while there are few (a replicate's counts stay in
        cache, where one count over all replicates scatters across the whole table), else
        in one count of the draws offset by their replicate.
    """
    b = draws.shape[0]
    if b <= 256:
        out = np.empty((b, n_items), dtype=np.int64)
        for r in range(b):
            out[r] = np.bincount(draws[r], minlength=n_items)
        return out
    offset = draws + (np.arange(b, dtype=draws.dtype) * n_items)[:, None]
    return np.bincount(offset.ravel(), minlength=b * n_items).reshape(b, n_items)


def percentile_interval(samples: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of bootstrap samples, ignoring undefined (NaN) replicates.

    Returns ``(nan, nan)`` when no replicate is defined.
    """
    s = np.asarray(samples, dtype=np.float64)
    s = s[np.isfinite(s)]
    if s.size == 0:
        return (float("nan"), float("nan"))
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(s, [a, 1.0 - a])
    return (float(lo), float(hi))


#: Above this many items the jackknife deletes groups of items, not single items.
JACKKNIFE_GROUPS = 200


def jackknife_weights(n_items: int, chunk: int = 200, groups: int = JACKKNIFE_GROUPS) -> Iterator[np.ndarray]:
    """Item weights of the delete-one jackknife (or delete-a-group above ``groups`` items).

    Yields
    ------
    ndarray of float64, shape (≤ chunk, n_items): 1 for kept items, 0 for deleted ones.
    """
    g = min(n_items, groups)
    group = np.arange(n_items) * g // max(n_items, 1)   # contiguous, nearly equal groups
    for start in range(0, g, chunk):
        rows = np.arange(start, min(g, start + chunk))
        yield (group[None, :] != rows[:, None]).astype(np.float64)


@functools.lru_cache(maxsize=4096)
def expanded_level(level: float, n_units: int | None) -> float:
    """The confidence level whose normal quantile is ``sqrt(n/(n−1)) · t_{n−1}`` of ``level``.

    Hesterberg's expanded percentile interval (T. Hesterberg, "What teachers should know
    about the bootstrap", The American Statistician, 2015): bootstrap distributions are
    too narrow by about ``sqrt((n−1)/n)`` and ignore the t correction for an estimated
    spread, which makes plain bootstrap intervals undercover with few resampled units.
    ``None`` or fewer than 2 units: ``level`` unchanged.
    """
    if n_units is None or n_units < 2:
        return level
    z = math.sqrt(n_units / (n_units - 1.0)) * float(student_t.ppf(0.5 + level / 2.0, n_units - 1))
    return float(1.0 - 2.0 * ndtr(-z))


def bca_interval(samples: np.ndarray, jackknife: np.ndarray, estimate: float,
                 level: float = 0.95, n_units: int | None = None) -> tuple[float, float]:
    """Bias-corrected and accelerated (BCa) bootstrap interval (Efron 1987).

    Parameters
    ----------
    samples : array, shape (n_boot,) — bootstrap replicates (NaN = undefined, ignored)
    jackknife : array, shape (n_jack,) — (grouped) jackknife replicates
    estimate : float — the full-sample estimate
    level : float — confidence level
    n_units : int, optional — resampled units (items); when given, the quantile levels
        are expanded as in :func:`expanded_level`

    Ties with the estimate count half below, half above, so a discrete statistic (σ is a
    share of pairs) gets no spurious bias correction. Falls back to the percentile
    interval when the correction is undefined.
    """
    level = expanded_level(level, n_units)
    s = np.asarray(samples, dtype=np.float64)
    s = np.sort(s[np.isfinite(s)])
    if s.size == 0:
        return (float("nan"), float("nan"))
    a_lo, a_hi = (1.0 - level) / 2.0, 1.0 - (1.0 - level) / 2.0
    if not np.isfinite(estimate):
        return percentile_interval(s, level)
    below = np.searchsorted(s, estimate, side="left")
    ties = np.searchsorted(s, estimate, side="right") - below
    share = (below + 0.5 * ties) / s.size
    if not 0.0 < share < 1.0:
        return percentile_interval(s, level)
    z0 = float(ndtri(share))
    j = np.asarray(jackknife, dtype=np.float64)
    j = j[np.isfinite(j)]
    acc = 0.0
    if j.size >= 3:
        dev = j.mean() - j
        den = float(np.sum(dev ** 2))
        acc = float(np.sum(dev ** 3) / (6.0 * den ** 1.5)) if den > 0 else 0.0
    qs = []
    for a in (a_lo, a_hi):
        z = z0 + float(ndtri(a))
        q = float(ndtr(z0 + z / (1.0 - acc * z))) if 1.0 - acc * z > 0 else a
        # an expanded level of 1 (two units: t with one degree of freedom) puts z at ±inf
        qs.append(q if math.isfinite(q) else a)
    lo, hi = np.quantile(s, qs)
    return (float(lo), float(hi))


def bca_intervals(samples: np.ndarray, jackknife: np.ndarray, estimates: np.ndarray, level: float = 0.95,
                  n_units: np.ndarray | None = None) -> np.ndarray:
    """:func:`bca_interval` of many statistics at once (one per column).

    Parameters
    ----------
    samples : array, shape (n_boot, k) — replicates of k statistics (NaN = undefined)
    jackknife : array, shape (n_jack, k)
    estimates : array, shape (k,)
    n_units : array of int, shape (k,), optional — resampled units behind each statistic

    Returns
    -------
    ndarray, shape (k, 2) — the same bounds as ``bca_interval`` column by column, without
    a Python loop over the columns (a crowd project has thousands of annotators).
    """
    s = np.sort(np.asarray(samples, dtype=np.float64), axis=0)   # NaN sort last
    k = s.shape[1]
    n = np.isfinite(s).sum(axis=0)
    est = np.asarray(estimates, dtype=np.float64)
    if n_units is None:
        lev = np.full(k, level)
    else:
        units = np.asarray(n_units, dtype=np.int64)
        uniq, inv = np.unique(units, return_inverse=True)
        lev = np.array([expanded_level(level, int(u)) for u in uniq])[inv.ravel()]
    a_lo = (1.0 - lev) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        share = ((s < est).sum(axis=0) + 0.5 * (s == est).sum(axis=0)) / n
        use = np.isfinite(est) & (n > 0) & (share > 0.0) & (share < 1.0)
        z0 = np.where(use, ndtri(np.where(use, share, 0.5)), 0.0)
        j = np.asarray(jackknife, dtype=np.float64)
        fin = np.isfinite(j)
        n_j = fin.sum(axis=0)
        mean = np.where(fin, j, 0.0).sum(axis=0) / np.maximum(n_j, 1)
        dev = np.where(fin, mean - j, 0.0)
        den = (dev ** 2).sum(axis=0)
        acc = np.where((n_j >= 3) & (den > 0), (dev ** 3).sum(axis=0) / (6.0 * np.maximum(den, 1e-300) ** 1.5), 0.0)
        out = np.full((k, 2), np.nan)
        cols = np.arange(k)
        for side, a in enumerate((a_lo, 1.0 - a_lo)):
            z = z0 + ndtri(a)
            ok = 1.0 - acc * z > 0
            q = np.where(use & ok, ndtr(z0 + z / np.where(ok, 1.0 - acc * z, 1.0)), a)
            q = np.clip(np.where(np.isfinite(q), q, a), 0.0, 1.0)
            pos = q * np.maximum(n - 1, 0)
            i0 = np.clip(np.floor(pos).astype(np.int64), 0, np.maximum(n - 1, 0))
            i1 = np.minimum(i0 + 1, np.maximum(n - 1, 0))
            lo, hi = s[i0, cols], s[i1, cols]
            frac = pos - i0
            out[:, side] = np.where(n > 0, lo + frac * (hi - lo), np.nan)
    return out


def weighted_interval(stat: Callable[[np.ndarray], np.ndarray], n_items: int, estimate: float, *,
                      bootstrap: int, seed: int, confidence: float) -> tuple[float, float]:
    """BCa interval (item bootstrap, grouped jackknife) of a statistic that is a function
    of item weights — what the single-number measures (κ, α) need.

    Parameters
    ----------
    stat : callable
        ``stat(w)`` with ``w`` of shape (r, n_items), one row of item weights per replicate,
        returns the r statistics, shape (r,) (NaN where undefined).
    n_items : int
    estimate : float
        The statistic on the full table (all weights 1).
    bootstrap, seed, confidence
        Replicates, their seed, and the interval's level in (0, 1).

    Returns
    -------
    (low, high), NaN when undefined (fewer than two items, a flat distribution, or an
    interval that misses its estimate, as elsewhere: docs/formulas.md §9).
    """
    if bootstrap <= 0 or n_items < 2 or not np.isfinite(estimate):
        return (float("nan"), float("nan"))
    samples = np.concatenate([stat(w.astype(np.float64)) for w in iter_multiplicities(n_items, bootstrap, seed)])
    jack = np.concatenate([stat(w) for w in jackknife_weights(n_items)])
    lo, hi = bca_interval(samples, jack, estimate, confidence, n_units=n_items)
    if not (hi > lo) or lo > estimate + 1e-9 or hi < estimate - 1e-9:
        return (float("nan"), float("nan"))
    return (float(min(lo, estimate)), float(max(hi, estimate)))

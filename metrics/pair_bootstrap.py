"""The pair bootstrap of the annotator matrix: each pair's shared items resampled.

D̂e is held at the project's estimate; only a pair's own distances are redrawn. 0/1
distances have an exact (binomial) bootstrap distribution; other discrete distances are
drawn per distinct value (a multinomial as chained binomials), continuous ones per item.
"""
from __future__ import annotations

import numpy as np
from scipy.stats import binom

from .bootstrap import expanded_level

#: Fewest replicates a bound on the draws may leave.
MIN_BOOTSTRAP = 200
# bootstrap draws held in memory at once (replicates × observed pairs)
_CHUNK_DRAWS = 4_000_000
_TOL = 1e-9


def pair_intervals(d: np.ndarray, pair: np.ndarray, n_pairs: int, d_e: float, alpha: np.ndarray,
               n_items: np.ndarray, bootstrap: int, confidence: float, max_draws: int | None,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, int]:
    """Percentile intervals of α_ab when each pair's shared items are resampled.

    Parameters
    ----------
    d : ndarray, shape (n,) — distance per shared item; ``pair`` its pair (0..n_pairs-1)
    alpha, n_items : ndarray, shape (n_pairs,) — estimates, shared items

    Returns
    -------
    low, high : ndarray, shape (n_pairs,) — NaN where the interval is undefined, flat or
    misses its estimate (as the engine's intervals).
    used : int — replicates drawn (fewer than ``bootstrap`` past ``max_draws``; the
    requested number for 0/1 distances, whose bootstrap distribution is exact)
    """
    size = np.bincount(pair, minlength=n_pairs)
    level = np.array([expanded_level(confidence, int(n)) for n in n_items])
    lo, hi = np.full(n_pairs, np.nan), np.full(n_pairs, np.nan)
    if np.all((d == 0.0) | (d == 1.0)):
        # 0/1 distances (nominal): a pair's resampled disagreements are Binomial(N, D̄), so the
        # bootstrap quantiles are read off exactly, with no draw (α decreases in the count)
        p_hat = np.bincount(pair, weights=d, minlength=n_pairs) / size
        lo = 1.0 - binom.ppf((1 + level) / 2, size, p_hat) / size / d_e
        hi = 1.0 - binom.ppf((1 - level) / 2, size, p_hat) / size / d_e
    else:
        if max_draws is not None:
            bootstrap = min(bootstrap, max(MIN_BOOTSTRAP, max_draws // max(_draw_cost(d, pair, n_pairs)[0], 1)))
        total = _resampled_sums(d, pair, n_pairs, bootstrap, rng)
        reps = 1.0 - total / size[None, :] / d_e
        # one quantile call per distinct item count (the expanded level depends on N), not per pair
        for n in np.unique(n_items):
            cols = n_items == n
            lv = level[cols][0]
            q = np.quantile(reps[:, cols], [(1 - lv) / 2, (1 + lv) / 2], axis=0)
            lo[cols], hi[cols] = q[0], q[1]
    bad = ~(np.isfinite(lo) & np.isfinite(hi) & np.isfinite(alpha)) | (hi <= lo) \
        | (alpha < lo - _TOL) | (alpha > hi + _TOL)
    return np.where(bad, np.nan, np.fmin(lo, alpha)), np.where(bad, np.nan, np.fmax(hi, alpha)), bootstrap


def _distinct_cells(d: np.ndarray, pair: np.ndarray, n_pairs: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (pair, distance) cells: their code, count, pair, the distinct distances,
    and the number of cells per pair (shape (n_pairs,))."""
    values, inverse = np.unique(d, return_inverse=True)
    cell, cell_count = np.unique(pair * values.size + inverse.ravel(), return_counts=True)
    cell_pair = cell // max(values.size, 1)
    return cell, cell_count, cell_pair, values, np.bincount(cell_pair, minlength=n_pairs)


# a binomial draw costs about as much as this many uniform draws and gathers
_BINOMIAL_COST = 8


def _draw_cost(d: np.ndarray, pair: np.ndarray, n_pairs: int) -> tuple[int, bool]:
    """Cost of one replicate of :func:`_resampled_sums` in uniform draws, and whether the
    per-distinct-distance (multinomial) draw is the cheaper one."""
    per_pair = _distinct_cells(d, pair, n_pairs)[4]
    width = int(per_pair.max()) if per_pair.size else 0
    multinomial = _BINOMIAL_COST * width * n_pairs
    return min(multinomial, d.size), multinomial < d.size


def _resampled_sums(d: np.ndarray, pair: np.ndarray, n_pairs: int, bootstrap: int,
                    rng: np.random.Generator) -> np.ndarray:
    """Sum of ``N_p`` distances drawn with replacement from each pair's own, per replicate;
    shape (bootstrap, n_pairs).

    A pair's resampled sum only depends on how often each of its *distinct* distances is
    drawn — a multinomial, drawn as one binomial per distinct value (conditionally on the
    ones before). That costs pairs × (most distinct distances of a pair) per replicate
    instead of one draw per shared item: discrete distances (nominal, ratings, pooled crowd
    cells) have few distinct values; continuous ones take the per-item draw.
    """
    order = np.argsort(pair, kind="stable")
    d, pair = d[order], pair[order]
    size = np.bincount(pair, minlength=n_pairs)
    start = np.cumsum(size) - size
    cell, cell_count, cell_pair, values, per_pair = _distinct_cells(d, pair, n_pairs)
    width = int(per_pair.max()) if per_pair.size else 0
    total = np.zeros((bootstrap, n_pairs))
    if _BINOMIAL_COST * width * n_pairs < d.size:
        # distinct distances of each pair in a (pairs × width) grid, zero-probability padding
        slot = np.arange(cell.size) - (np.cumsum(per_pair) - per_pair)[cell_pair]
        val = np.zeros((n_pairs, width))
        prob = np.zeros((n_pairs, width))
        val[cell_pair, slot] = values[cell % values.size]
        prob[cell_pair, slot] = cell_count / size[cell_pair]
        left = np.broadcast_to(size, (bootstrap, n_pairs)).astype(np.int64)
        mass = np.ones(n_pairs)
        for t in range(width):              # over distinct values, never over pairs
            share = np.clip(np.divide(prob[:, t], mass, out=np.zeros(n_pairs), where=mass > 1e-12), 0.0, 1.0)
            got = left if t == width - 1 else rng.binomial(left, share[None, :])
            total += got * val[:, t][None, :]
            left = left - got
            mass = mass - prob[:, t]
        return total
    chunk = max(1, _CHUNK_DRAWS // max(d.size, 1))
    for b0 in range(0, bootstrap, chunk):
        b = min(chunk, bootstrap - b0)
        # draw N_p of the pair's own rows for each pair: row = start + ⌊u · N_p⌋
        idx = start[pair][None, :] + (rng.random((b, d.size)) * size[pair][None, :]).astype(np.int64)
        total[b0:b0 + b] = np.add.reduceat(d[idx], start, axis=1)
    return total

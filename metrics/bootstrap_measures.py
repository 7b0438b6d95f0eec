"""Item-bootstrap intervals of α, KS and σ, vectorized over replicates.

Reference: measures.md §9; Wong, Paritosh & Aroyo (2021) §5 (resample items).

A replicate draws items with replacement; every pair is re-weighted by the multiplicity
of its item (observed) or the product of its two items' multiplicities (expected), so no
distance is recomputed. To keep the cost independent of the data size, KS and σ use a
seeded subsample of at most ``MAX_PAIRS`` observed and ``MAX_EXPECTED`` expected pairs, σ's
significance test is evaluated exactly at the observed distances with the full-sample
bandwidth held fixed, and α uses the full per-item sums. Per-annotator intervals hold the project's ``d*`` and ``D̂e`` fixed.
"""
from __future__ import annotations


import numpy as np
import pandas as pd
from scipy import sparse
from scipy.special import ndtr

from .bootstrap import bca_interval, iter_multiplicities, jackknife_weights
from .distances.base import Distance, check_distances
from .expected import Expected
from .groups import annotator_pair_sides
from .table import CodedTable, sample_between_pairs

__all__ = ["bootstrap_intervals", "MAX_PAIRS"]

MAX_PAIRS = 20_000        # observed pairs behind each replicate's KS and σ
MAX_EXPECTED = 10_000     # expected pairs behind each replicate's KS, σ and chance mean


def _subsample(n: int, cap: int, rng: np.random.Generator) -> np.ndarray:
    return np.sort(rng.choice(n, cap, replace=False)) if n > cap else np.arange(n)


class _Significance:
    """Which observed distances each replicate finds significant: ``F_w(d) < p``.

    ``F_w`` is the KDE mass on ``[0, d]`` of the replicate's re-weighted expected sample,
    with the full-sample bandwidth held fixed. Because ``F_w`` increases with ``d``, the
    significant observed distances are a prefix of the sorted distinct observed values:
    a bisection over those values finds it exactly, for every replicate at once. No grid
    is involved, so point masses, ties and tiny or zero bandwidths are resolved exactly
    (a 128-point grid cannot see a bandwidth of 1e-7).
    """

    def __init__(self, de_sorted: np.ndarray, p: float, bandwidth: float, observed: np.ndarray) -> None:
        starts = np.flatnonzero(np.r_[True, de_sorted[1:] != de_sorted[:-1]])
        self.run_starts = starts            # equal expected distances share one kernel column
        self.values = de_sorted[starts]     # (U,) distinct expected distances
        self.p, self.bw = p, bandwidth
        self.levels = np.unique(observed)   # (G,) distinct observed distances, sorted
        self.below_zero = ndtr(-self.values / bandwidth) if bandwidth > 0 else (self.values < 0).astype(float)

    def _mass(self, wu: np.ndarray, tot: np.ndarray, d: np.ndarray) -> np.ndarray:
        """``F_w(d_r)`` per replicate ``r``; ``wu`` (B, U), ``tot`` and ``d`` (B,)."""
        if self.bw > 0:
            k = ndtr((d[:, None] - self.values[None, :]) / self.bw) - self.below_zero[None, :]
        else:  # a zero bandwidth makes the KDE the expected sample itself
            k = (self.values[None, :] <= d[:, None]) - self.below_zero[None, :]
        return np.einsum("bu,bu->b", wu, k) / tot

    def cutoffs(self, we: np.ndarray, tot: np.ndarray) -> np.ndarray:
        """Per replicate, how many distinct observed values are significant; -1 where the
        replicate drew no expected pair (undefined). ``we`` has shape (B, n_expected)."""
        wu = np.add.reduceat(we, self.run_starts, axis=1)
        b = we.shape[0]
        lo, hi = np.zeros(b, dtype=np.int64), np.full(b, self.levels.size, dtype=np.int64)
        safe = np.where(tot > 0, tot, 1.0)
        while True:
            open_ = lo < hi
            if not open_.any():
                break
            mid = (lo + hi) // 2
            reached = self._mass(wu, safe, self.levels[np.minimum(mid, self.levels.size - 1)]) >= self.p
            hi = np.where(open_ & reached, mid, hi)
            lo = np.where(open_ & ~reached, mid + 1, lo)
        return np.where(tot > 0, lo, -1)


def bootstrap_intervals(ct: CodedTable, dist: Distance, prepared: object, do: np.ndarray, oi: np.ndarray,
                        oj: np.ndarray, ex: Expected, *, form: str, p: float, n_boot: int,
                        rng: np.random.Generator, ks_method: str, level: float, bandwidth: float,
                        threshold: float, d_e: float, per_annotator: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """BCa intervals of α, KS, σ; adds per-annotator interval columns in place.

    The bias correction and acceleration of the BCa interval (Efron 1987) come from the
    same replicate code fed with (grouped) jackknife weights; they matter with few items
    and with discrete statistics such as σ, where plain percentile intervals undercover.
    """
    n_items = ct.n_items
    pair_item = ct.item[oi]
    m = ct.item_size.astype(np.float64)
    s_do = np.bincount(pair_item, weights=do, minlength=n_items)
    n_o = np.bincount(pair_item, minlength=n_items).astype(np.float64)

    sel = _subsample(do.size, MAX_PAIRS, rng)
    do_s, it_s = do[sel], pair_item[sel]
    if ex.i is not None:
        esel = _subsample(ex.distances.size, MAX_EXPECTED, rng)
        ei, ej, de = ex.i[esel], ex.j[esel], ex.distances[esel]
    else:  # tabulated exactly: draw item-aware pairs for the replicates
        ei, ej = sample_between_pairs(ct, min(MAX_EXPECTED, max(ex.n_between, 1)), rng)
        de = check_distances(dist.compute(prepared, ei, ej), dist.name)
    order = np.argsort(de, kind="stable")
    de, ia, ib = de[order], ct.item[ei][order], ct.item[ej][order]
    pos = np.searchsorted(de, do_s, side="right")
    sig = _Significance(de, p, bandwidth, do_s)
    obs_level = np.searchsorted(sig.levels, do_s)

    ann, ann_item, ann_d = annotator_pair_sides(pair_item, ct.annotator[oi], ct.annotator[oj], do)
    n_ann = ct.annotator_labels.size
    shape = (n_items, n_ann)
    s_n = sparse.csr_matrix((np.ones_like(ann_d), (ann_item, ann)), shape=shape)
    s_sum = sparse.csr_matrix((ann_d, (ann_item, ann)), shape=shape)
    s_below = sparse.csr_matrix(((ann_d < threshold).astype(np.float64), (ann_item, ann)), shape=shape)

    chunk = max(1, min(200, 4_000_000 // max(de.size, do_s.size, n_items, 1)))
    s_nT, s_sumT, s_belowT = s_n.T.tocsr(), s_sum.T.tocsr(), s_below.T.tocsr()

    def replicates(w: np.ndarray) -> tuple[np.ndarray, ...]:
        """α, KS, σ and per-annotator σ, α of replicates with item weights ``w`` (B, n_items)."""
        we = w[:, ia] * w[:, ib]
        tot = we.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            de_mean = (we @ de) / tot
            if form == "pairwise":
                alpha = 1.0 - ((w @ s_do) / (w @ n_o)) / de_mean
            else:
                n_b = w @ m
                do_c = 2.0 * (w @ (s_do / (m - 1.0))) / n_b
                n_between = (n_b * (n_b - 1.0) - w @ (m * (m - 1.0))) / 2.0
                de_c = 2.0 * (w @ s_do + de_mean * n_between) / (n_b * (n_b - 1.0))
                alpha = 1.0 - do_c / de_c
            wo = w[:, it_s]
            wo_tot = wo.sum(axis=1)
            cum0 = np.concatenate((np.zeros((we.shape[0], 1)), np.cumsum(we, axis=1)), axis=1)
            above = tot[:, None] - cum0[:, pos]
            one_minus_p = above / (tot[:, None] + 1.0)
            if ks_method == "scipy":
                big = tot > 10000
                if big.any():
                    n = tot[big, None]
                    z = np.sqrt(n / (n + 1.0)) * above[big] / n
                    one_minus_p[big] = 1.0 - np.exp(-2.0 * z * z - 2.0 * z * (n + 2.0) / (3.0 * np.sqrt(n * (n + 1.0))))
            ks = (wo * one_minus_p).sum(axis=1) / wo_tot
            cut = sig.cutoffs(we, tot)
            sigma = np.where(cut >= 0, (wo * (obs_level[None, :] < cut[:, None])).sum(axis=1) / wo_tot, np.nan)
            wt = np.ascontiguousarray(w.T)  # sparse @ dense wants C order: transpose once per chunk
            cnt = (s_nT @ wt).T
            a_sig = (s_belowT @ wt).T / cnt
            a_alpha = 1.0 - ((s_sumT @ wt).T / cnt) / d_e if d_e > 0 else np.full_like(cnt, np.nan)
        return alpha, ks, sigma, a_sig, a_alpha

    def run(weights) -> list[np.ndarray]:
        parts = [replicates(w) for w in weights]
        return [np.concatenate([p[k] for p in parts]) for k in range(5)]

    boot = run(iter_multiplicities(n_items, n_boot, rng, chunk=chunk, dtype=np.float64))
    jack = run(jackknife_weights(n_items, chunk=chunk))
    full = replicates(np.ones((1, n_items)))
    names = ("alpha", "ks", "sigma")
    out = {k: bca_interval(boot[q], jack[q], float(full[q][0]), level) for q, k in enumerate(names)}
    for q, name in ((3, "sigma"), (4, "alpha")):
        bounds = np.array([bca_interval(boot[q][:, a], jack[q][:, a], float(full[q][0, a]), level)
                           for a in range(n_ann)]).reshape(n_ann, 2)
        per_annotator[f"{name}_ci_low"] = bounds[:, 0]
        per_annotator[f"{name}_ci_high"] = bounds[:, 1]
    return out

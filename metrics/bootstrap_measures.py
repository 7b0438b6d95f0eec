"""Item-bootstrap intervals of α, KS and σ, vectorized over replicates.

Reference: measures.md §9; Wong, Paritosh & Aroyo (2021) §5 (resample items).

A replicate draws items with replacement; every pair is re-weighted by the multiplicity
of its item (observed) or the product of its two items' multiplicities (expected), so no
distance is recomputed. To keep the cost independent of the data size, KS and σ use a
seeded subsample of at most ``MAX_PAIRS`` observed and ``MAX_EXPECTED`` expected pairs, σ's threshold is
read off a grid of the KDE mass with the full-sample bandwidth held fixed, and α uses the
full per-item sums. Per-annotator intervals hold the project's ``d*`` and ``D̂e`` fixed.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.special import ndtr

from .bootstrap import iter_multiplicities, percentile_interval
from .distances.base import Distance, check_distances
from .distributional import sigma_threshold
from .expected import Expected
from .groups import annotator_pair_sides
from .table import CodedTable, sample_between_pairs

__all__ = ["bootstrap_intervals", "MAX_PAIRS"]

MAX_PAIRS = 20_000        # observed pairs behind each replicate's KS and σ
MAX_EXPECTED = 5_000      # expected pairs behind each replicate's KS, σ and chance mean
_GRID = 128
_WINDOW = 9.0


def _subsample(n: int, cap: int, rng: np.random.Generator) -> np.ndarray:
    return np.sort(rng.choice(n, cap, replace=False)) if n > cap else np.arange(n)


class _SigmaGrid:
    """KDE mass of the expected sample on a grid, for every replicate's weights at once."""

    def __init__(self, de_sorted: np.ndarray, p: float, bandwidth: float) -> None:
        self.de, self.p, self.bw = de_sorted, p, bandwidth
        if bandwidth <= 0:
            self.grid = None
            return
        hi = sigma_threshold(de_sorted, min(0.95, 4.0 * p + 0.05), bandwidth=bandwidth)
        if not math.isfinite(hi):
            hi = float(de_sorted[-1]) + _WINDOW * bandwidth
        # identical distances (scalar kinds have few) share one kernel column; the
        # sample is sorted, so equal distances are contiguous runs
        self.run_starts = np.flatnonzero(np.r_[True, de_sorted[1:] != de_sorted[:-1]])
        de_sorted = de_sorted[self.run_starts]
        self.grid = np.linspace(0.0, hi, _GRID)
        self.win = int(np.searchsorted(de_sorted, hi + _WINDOW * bandwidth, side="right"))
        self.kernel = ndtr((self.grid[:, None] - de_sorted[None, : self.win]) / bandwidth)  # (G, win)
        self.below_zero = ndtr(-de_sorted / bandwidth)

    def thresholds(self, we: np.ndarray, tot: np.ndarray) -> np.ndarray:
        """``d*`` per replicate; ``we`` has shape (n_rep, n_expected)."""
        out = np.full(we.shape[0], np.nan)  # a replicate that drew no expected pair has no d*
        if self.grid is None:
            for r in np.flatnonzero(tot > 0):
                out[r] = sigma_threshold(self.de, self.p, weights=we[r], bandwidth=0.0)
            return out
        wu = np.add.reduceat(we, self.run_starts, axis=1)
        f = (wu[:, : self.win] @ self.kernel.T - (wu @ self.below_zero)[:, None]) / tot[:, None]
        reached = f >= self.p
        k = np.argmax(reached, axis=1)
        ok = reached[np.arange(we.shape[0]), k] & (k > 0) & (tot > 0)
        r = np.flatnonzero(ok)
        g0, g1 = self.grid[k[r] - 1], self.grid[k[r]]
        f0, f1 = f[r, k[r] - 1], f[r, k[r]]
        out[r] = g0 + (self.p - f0) * (g1 - g0) / np.where(f1 > f0, f1 - f0, 1.0)
        for r in np.flatnonzero(~ok & (tot > 0)):  # beyond the grid: exact root for this replicate
            out[r] = sigma_threshold(self.de, self.p, weights=we[r], bandwidth=self.bw)
        return out


def bootstrap_intervals(ct: CodedTable, dist: Distance, prepared: object, do: np.ndarray, oi: np.ndarray,
                        oj: np.ndarray, ex: Expected, *, form: str, p: float, n_boot: int,
                        rng: np.random.Generator, ks_method: str, level: float, bandwidth: float,
                        threshold: float, d_e: float, per_annotator: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """Percentile intervals of α, KS, σ; adds per-annotator interval columns in place."""
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
    sig = _SigmaGrid(de, p, bandwidth)

    ann, ann_item, ann_d = annotator_pair_sides(pair_item, ct.annotator[oi], ct.annotator[oj], do)
    n_ann = ct.annotator_labels.size
    shape = (n_items, n_ann)
    s_n = sparse.csr_matrix((np.ones_like(ann_d), (ann_item, ann)), shape=shape)
    s_sum = sparse.csr_matrix((ann_d, (ann_item, ann)), shape=shape)
    s_below = sparse.csr_matrix(((ann_d < threshold).astype(np.float64), (ann_item, ann)), shape=shape)

    alphas, kss, sigmas, a_sig, a_alpha = [], [], [], [], []
    chunk = max(1, min(200, 4_000_000 // max(de.size, do_s.size, n_items, 1)))
    s_nT, s_sumT, s_belowT = s_n.T.tocsr(), s_sum.T.tocsr(), s_below.T.tocsr()
    for w in iter_multiplicities(n_items, n_boot, rng, chunk=chunk, dtype=np.float64):
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
            kss.append((wo * one_minus_p).sum(axis=1) / wo_tot)
            dstar = sig.thresholds(we, tot)
            sigmas.append((wo * (do_s[None, :] < dstar[:, None])).sum(axis=1) / wo_tot)
            alphas.append(alpha)
            wt = np.ascontiguousarray(w.T)  # sparse @ dense wants C order: transpose once per chunk
            cnt = (s_nT @ wt).T
            a_sig.append((s_belowT @ wt).T / cnt)
            a_alpha.append(1.0 - ((s_sumT @ wt).T / cnt) / d_e if d_e > 0 else np.full_like(cnt, np.nan))

    a_sig_all, a_alpha_all = np.concatenate(a_sig), np.concatenate(a_alpha)
    for name, samples in (("sigma", a_sig_all), ("alpha", a_alpha_all)):
        bounds = np.array([percentile_interval(samples[:, k], level) for k in range(n_ann)]).reshape(n_ann, 2)
        per_annotator[f"{name}_ci_low"] = bounds[:, 0]
        per_annotator[f"{name}_ci_high"] = bounds[:, 1]
    return {
        "alpha": percentile_interval(np.concatenate(alphas), level),
        "ks": percentile_interval(np.concatenate(kss), level),
        "sigma": percentile_interval(np.concatenate(sigmas), level),
    }

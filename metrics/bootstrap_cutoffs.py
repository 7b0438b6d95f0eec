"""Each bootstrap replicate's σ threshold d*, found exactly (docs/formulas.md §3, §9).

A replicate reweights the chance distances; its d* is where the replicate's kernel-smoothed
chance CDF reaches ``p``. :class:`Cutoffs` finds, for every replicate at once, how many of
the distinct observed distances lie below that d* — the only thing σ needs — by probes of
open brackets, Taylor solves around anchors and finer grids, never a fixed grid.
"""
from __future__ import annotations

import numpy as np
from scipy.special import ndtr

from .distributional import KERNEL_WINDOW, P_STABLE, kernel_mass

__all__ = ["Cutoffs"]


class Cutoffs:
    """Per replicate, how many distinct observed distances are significant (``F_w(d) < p``).

    ``F_w(d) = Σ_u wu_u K(d, v_u) / Σ_u wu_u`` with ``K`` a Gaussian kernel's mass on
    ``[0, d]`` (the full-sample bandwidth ``h``; a point mass when ``h = 0``), exactly as
    :func:`~.distributional.sigma_threshold` defines it. ``F_w`` increases with ``d``, so
    the significant levels are a prefix ``[0, cut)``. Each replicate's cut is narrowed
    inside a bracket by rounds of probes — ``F_w`` at a few observed levels for all open
    replicates in one matrix product: first levels spaced geometrically around the
    full-sample cut, then levels on ever finer grids (32 times finer per round) inside the
    open brackets, down to every level. No interpolation: the cut is exact.
    """

    _CACHE = 8_000_000   # kernel-row elements kept between blocks
    #: Kernel-row elements of one product with the weights: the rows of many probes or
    #: Taylor anchors times a large chance sample (U grows with the project) are built and
    #: multiplied a block at a time, so memory stays bounded whatever U (issue 24).
    _BLOCK = 4_000_000

    def __init__(self, values: np.ndarray, h: float, p: float, levels: np.ndarray, center: int) -> None:
        self.v, self.h, self.p, self.levels = values, float(h), float(p), levels
        self.stable = p < P_STABLE and self.h > 0
        if self.h > 0:
            self.nb = ndtr(-values / self.h)    # a kernel's mass below 0
            self.kinf = ndtr(values / self.h)   # … and above 0
        g = levels.size
        steps = 2 ** np.arange(int(np.ceil(np.log2(g + 1))) + 1)
        self.first = np.unique(np.clip(np.concatenate((center - steps, center + steps - 1, [center - 1, center])),
                                       0, g - 1))
        self._rows: dict[int, np.ndarray] = {}

    def _kernel(self, d: np.ndarray, idx: np.ndarray) -> np.ndarray:
        v = self.v[idx]
        if self.h <= 0:
            return (v <= d).astype(np.float64)
        if self.stable:
            return kernel_mass(d, v, self.h)
        return ndtr((d - v) / self.h) - self.nb[idx]

    def _row(self, g: int) -> np.ndarray:
        """``K(level_g, v_u)`` for every chance value ``u``, windowed to ±9 bandwidths."""
        row = self._rows.get(g)
        if row is not None:
            return row
        d, u = float(self.levels[g]), self.v.size
        if self.h <= 0:
            row = (self.v <= d).astype(np.float64)
        elif self.stable:  # every kernel within 39 bandwidths (farther ones underflow to 0)
            lo = int(np.searchsorted(self.v, d - KERNEL_WINDOW * self.h, side="left"))
            hi = int(np.searchsorted(self.v, d + 39.0 * self.h, side="right"))
            row = np.zeros(u)
            row[:lo] = self.kinf[:lo]
            row[lo:hi] = kernel_mass(d, self.v[lo:hi], self.h)
        else:
            lo = int(np.searchsorted(self.v, d - KERNEL_WINDOW * self.h, side="left"))
            hi = int(np.searchsorted(self.v, d + KERNEL_WINDOW * self.h, side="right"))
            row = np.zeros(u)
            row[:lo] = self.kinf[:lo]
            row[lo:hi] = self._kernel(np.float64(d), np.arange(lo, hi))
        if (len(self._rows) + 1) * u > self._CACHE:
            self._rows.clear()
        self._rows[g] = row
        return row

    def __call__(self, wu: np.ndarray, tot: np.ndarray) -> np.ndarray:
        """``(B,)`` cut per replicate from chance weights ``wu`` (U, B); -1 where there is no chance pair."""
        g = self.levels.size
        ok = tot > 0
        tot = np.where(ok, tot, 1.0)
        lo, hi = np.zeros(tot.size, dtype=np.int64), np.full(tot.size, g, dtype=np.int64)
        self._probe(wu, tot, lo, hi, np.flatnonzero(ok), self.first)
        # a replicate whose KDE never reaches p at any level: all significant
        self._probe(wu, tot, lo, hi, np.flatnonzero(ok & (lo < hi) & (hi == g)), np.array([g - 1]))
        step, taylor = g, self.h > 0 and not self.stable
        while True:
            cols = np.flatnonzero(ok & (lo < hi))
            if not cols.size:
                break
            spans = np.unique(np.stack((lo[cols], hi[cols]), axis=1), axis=0)
            inside = np.zeros(g + 1, dtype=np.int64)     # levels in the union of the open brackets
            np.add.at(inside, spans[:, 0], 1)
            np.add.at(inside, spans[:, 1], -1)
            inside = np.flatnonzero(np.cumsum(inside)[:g] > 0)
            if inside.size <= self._ALL_LEVELS or step == 1:
                self._probe(wu, tot, lo, hi, cols, inside)       # resolves every open bracket
                continue
            if taylor and self._taylor(wu, tot, lo, hi, cols):
                taylor = False                                   # once: what it leaves open is exact-probed
                continue
            step = max(1, step // 32)
            self._probe(wu, tot, lo, hi, cols, inside[inside % step == 0])
        return np.where(ok, lo, -1)

    _ALL_LEVELS = 256     # probe every level of the open brackets up to this many levels
    _TERMS = 17           # Taylor terms of F_w around an anchor (|d − anchor| ≤ h/4)
    _MAX_ANCHORS = 64
    _AMBIGUOUS = 1e-8     # bandwidths: a level this close to a Taylor d* is probed exactly

    def _probe(self, wu: np.ndarray, tot: np.ndarray, lo: np.ndarray, hi: np.ndarray, cols: np.ndarray,
               probes: np.ndarray) -> None:
        """Narrow the brackets ``[lo, hi]`` of replicates ``cols`` with ``F_w`` at levels ``probes``."""
        if not (cols.size and probes.size):
            return
        w, need = wu[:, cols], self.p * tot[cols]
        per = max(1, self._BLOCK // max(self.v.size, 1))
        reach = np.concatenate([(np.stack([self._row(int(q)) for q in probes[k:k + per]]) @ w) >= need
                                for k in range(0, probes.size, per)])      # (P, open)
        inside = (probes[:, None] >= lo[cols]) & (probes[:, None] < hi[cols])
        hit = reach & inside
        first = np.where(hit.any(axis=0), hit.argmax(axis=0), probes.size)
        new_hi = np.where(first < probes.size, probes[np.minimum(first, probes.size - 1)], hi[cols])
        miss = ~reach & inside & (probes[:, None] < new_hi)
        last = np.where(miss.any(axis=0), probes.size - 1 - miss[::-1].argmax(axis=0), -1)
        new_lo = np.where(last >= 0, probes[np.maximum(last, 0)] + 1, lo[cols])
        hi[cols] = new_hi
        lo[cols] = np.minimum(new_lo, new_hi)

    def _taylor(self, wu: np.ndarray, tot: np.ndarray, lo: np.ndarray, hi: np.ndarray, cols: np.ndarray) -> bool:
        """Solve ``F_w(d*) = p`` per replicate on Taylor expansions of ``F_w`` around anchors
        h/2 apart, then count the levels below ``d*``. Only levels within 1e-8 bandwidths of a
        ``d*`` are left open (the exact probes settle them). False if too many anchors."""
        h, levels = self.h, self.levels
        if self._MAX_ANCHORS < 1 or np.any(hi[cols] >= levels.size):
            return False
        left = np.where(lo[cols] > 0, levels[np.maximum(lo[cols] - 1, 0)], 0.0)   # F(left) < p
        right = levels[hi[cols]]                                                  # F(right) ≥ p
        d_lo, half = float(left.min()), 0.5 * h
        n_anchor = max(1, int(np.ceil((float(right.max()) - d_lo) / half)))
        if n_anchor > self._MAX_ANCHORS:
            return False
        anchors = d_lo + half * (np.arange(n_anchor) + 0.5)
        w, per = wu[:, cols], max(1, self._BLOCK // max(self._TERMS * self.v.size, 1))
        coef = np.concatenate([self._taylor_rows(anchors[k:k + per]) @ w for k in range(0, n_anchor, per)]
                              ).reshape(n_anchor, self._TERMS, cols.size)
        coef /= tot[cols]
        a, b = left.copy(), right.copy()
        j = np.arange(cols.size)
        for _ in range(1100):   # bisection to adjacent doubles on the piecewise polynomial
            mid = 0.5 * (a + b)
            moving = (mid > a) & (mid < b)
            if not moving.any():
                break
            cell = np.clip(((mid - d_lo) / half).astype(np.int64), 0, n_anchor - 1)
            s = (mid - anchors[cell]) / h
            c = coef[cell, :, j]                                                  # (open, terms)
            f = c[:, -1]
            for k in range(self._TERMS - 2, -1, -1):
                f = f * s + c[:, k]
            reach = (f >= self.p) & moving
            b = np.where(reach, mid, b)
            a = np.where(moving & ~reach, mid, a)
        cut = np.clip(np.searchsorted(levels, b, side="left"), lo[cols], hi[cols])
        tol = self._AMBIGUOUS * h + 8.0 * np.spacing(b)
        near_below = (cut > lo[cols]) & (np.abs(levels[np.maximum(cut - 1, 0)] - b) <= tol)
        near_above = (cut < hi[cols]) & (np.abs(levels[np.minimum(cut, levels.size - 1)] - b) <= tol)
        new_lo = np.where(near_below, cut - 1, cut)
        new_hi = np.where(near_above, np.minimum(cut + 1, hi[cols]), cut)
        lo[cols], hi[cols] = new_lo, np.maximum(new_hi, new_lo)
        return True

    def _taylor_rows(self, anchors: np.ndarray) -> np.ndarray:
        """``(anchors × terms, U)``: row k of an anchor ``a`` is ``h^k ∂_d^k K(a, v) / k!``, so that
        ``F_w(a + s h) = Σ_k s^k (row_k · wu) / Σ wu``."""
        u, h, t = self.v.size, self.h, self._TERMS
        out = np.zeros((anchors.size, t, u))
        for n, a in enumerate(anchors):
            lo = int(np.searchsorted(self.v, a - 12.0 * h, side="left"))
            hi = int(np.searchsorted(self.v, a + 12.0 * h, side="right"))
            lo9 = int(np.searchsorted(self.v, a - KERNEL_WINDOW * h, side="left"))
            hi9 = int(np.searchsorted(self.v, a + KERNEL_WINDOW * h, side="right"))
            out[n, 0, :lo9] = self.kinf[:lo9]
            out[n, 0, lo9:hi9] = self._kernel(np.float64(a), np.arange(lo9, hi9))
            z = (a - self.v[lo:hi]) / h
            phi = np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi)
            he_prev, he = np.zeros_like(z), np.ones_like(z)     # He_{-1} := 0, He_0 = 1
            fact = 1.0
            for k in range(1, t):                               # d^k/dd^k K = (−1)^{k−1} He_{k−1}(z) φ(z) / h^k
                fact *= k
                out[n, k, lo:hi] = (-1.0) ** (k - 1) * he * phi / fact
                he_prev, he = he, z * he - (k - 1) * he_prev
        return out.reshape(anchors.size * t, u)

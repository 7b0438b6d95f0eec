"""Chance pairs within strata: the expected distances of items that offer their own answers.

When items offer answers of their own (:mod:`.item_options`) a chance pair joins two
values of different items of one *stratum* (items that offer as many answers), compared
in their chance view (options as positions). Per stratum ``s`` (docs/formulas.md §1–2):

* ``D̄e_s`` — the mean distance of its between-item pairs;
* pairwise form: ``D̂e = Σ_s P_s D̄e_s / Σ_s P_s``, ``P_s`` the observed pairs of its items
  (each observed pair is read against the chance of its own stratum);
* canonical form: ``D̂e = Σ_s n_s D̂e_s / Σ_s n_s`` with Krippendorff's
  ``D̂e_s = (Σ_within_s D + D̄e_s · B_s) / (n_s(n_s − 1)/2)``, ``n_s`` the values of its
  items and ``B_s`` its between-item pairs (each item weighs its values, as in D̂o);
* the chance *distribution* (KS, σ) mixes the strata in proportion to ``P_s``.

With a single stratum every formula is the usual one. A stratum of one item has no chance
pair: it is left out of ``D̂e`` (its observed pairs still count in ``D̂o``).

Bootstrap replicates (:class:`StrataChance`) weigh a chance pair by ``w_a w_b`` and each
stratum's sums by its items' weights, so a replicate recomputes every ``D̄e_s`` and the
mixture exactly as above.
"""
from __future__ import annotations

import numpy as np
from scipy import sparse

from .cells import ObservedCells
from .chance_distances import Expected, Strata
from .distances.base import Distance, check_distances, compute_distinct
from .table import CodedTable
from .errors import BadInput

__all__ = ["stratified_expected", "StrataChance"]


def _rows_by_stratum(ct: CodedTable, row_stratum: np.ndarray, n_strata: int) -> tuple[np.ndarray, np.ndarray]:
    """Value rows grouped by stratum (stable) and each stratum's first position, shape (S + 1,)."""
    order = np.argsort(row_stratum, kind="stable")
    start = np.searchsorted(row_stratum[order], np.arange(n_strata + 1))
    return order, start


def _all_pairs(ct: CodedTable, row_stratum: np.ndarray, n_strata: int) -> tuple[np.ndarray, np.ndarray]:
    """Every unordered pair of value rows of different items in one stratum, ``i < j``."""
    order, start = _rows_by_stratum(ct, row_stratum, n_strata)
    out_i, out_j = [], []
    for s in range(n_strata):   # strata are few: one per count of answers offered
        rows = order[start[s]:start[s + 1]]
        a, b = np.triu_indices(rows.size, k=1)
        keep = ct.item[rows[a]] != ct.item[rows[b]]
        i, j = rows[a[keep]], rows[b[keep]]
        out_i.append(np.minimum(i, j))
        out_j.append(np.maximum(i, j))
    return np.concatenate(out_i).astype(np.int64), np.concatenate(out_j).astype(np.int64)


def _sampled_pairs(ct: CodedTable, row_stratum: np.ndarray, n_strata: int, between: np.ndarray, size: int,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``size`` pairs drawn uniformly among all within-stratum between-item pairs (with
    replacement): a stratum with probability ∝ its between pairs, then two of its rows,
    rejecting same-item draws."""
    order, start = _rows_by_stratum(ct, row_stratum, n_strata)
    count = np.diff(start)
    cum = np.cumsum(between / between.sum())
    got_i, got_j, got = [], [], 0
    while got < size:
        want = int((size - got) * 1.2) + 16
        s = np.minimum(np.searchsorted(cum, rng.random(want), side="right"), n_strata - 1)
        i = order[start[s] + (rng.random(want) * count[s]).astype(np.int64)]
        j = order[start[s] + (rng.random(want) * count[s]).astype(np.int64)]
        ok = ct.item[i] != ct.item[j]
        got_i.append(np.minimum(i[ok], j[ok]))
        got_j.append(np.maximum(i[ok], j[ok]))
        got += int(ok.sum())
    return np.concatenate(got_i)[:size], np.concatenate(got_j)[:size]


def stratified_expected(ct: CodedTable, dist: Distance, prepared: object, keys: np.ndarray | None,
                        cells: ObservedCells, target: int | None, max_all: int, rng: np.random.Generator):
    """The :class:`~.expected.Expected` of a table whose items offer their own answers, in ≥ 2 strata.

    Parameters
    ----------
    ct : coded table with ``ct.options`` (its chance view and strata)
    prepared, keys : ``dist.prepare`` and value keys of the *chance* values (keys None: no pooling)
    cells : the observed pairs (on the values themselves)
    target : chance pairs to draw when there are more (None: all of them, up to ``max_all``)

    Raises
    ------
    ValueError
        No stratum holds two items (no chance pair at all), or ``target`` None and more
        than ``max_all`` pairs.
    """
    opts = ct.options
    n_strata = opts.n_strata
    row_stratum = opts.item_stratum[ct.item]
    m = ct.item_size.astype(np.float64)
    n_s = np.bincount(row_stratum, minlength=n_strata).astype(np.float64)
    within_s = np.bincount(opts.item_stratum, weights=m * (m - 1.0) / 2.0, minlength=n_strata)
    between_s = n_s * (n_s - 1.0) / 2.0 - within_s
    n_between = int(round(between_s.sum()))
    if n_between == 0:
        raise BadInput("no two items offer as many answers: no chance pairs can be formed from what the "
                         "items offer (each item's answers are its own), so chance agreement is undefined")
    if target is None and n_between > max_all:
        raise BadInput(f"expected_pairs='all' would compute {n_between:,} between-item distances "
                         f"(limit {max_all:,}); pass a sample size instead")
    exact = target is None or n_between <= target
    if exact:
        i, j = _all_pairs(ct, row_stratum, n_strata)
    else:
        i, j = _sampled_pairs(ct, row_stratum, n_strata, between_s, target, rng)
    d = check_distances(compute_distinct(dist, prepared, keys, i, j), dist.name)
    ps = row_stratum[i]
    drawn = np.bincount(ps, minlength=n_strata).astype(np.float64)
    has = drawn > 0
    mean_s = np.divide(np.bincount(ps, weights=d, minlength=n_strata), drawn, out=np.zeros(n_strata), where=has)
    cell_stratum = opts.item_stratum[cells.item]
    p_s = np.bincount(cell_stratum, weights=cells.weight, minlength=n_strata)
    obs_sum_s = np.bincount(cell_stratum, weights=cells.weight * cells.d, minlength=n_strata)
    between_mean = float(np.dot(p_s[has], mean_s[has]) / p_s[has].sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        canonical_s = (obs_sum_s + mean_s * between_s) / (n_s * (n_s - 1.0) / 2.0)
    d_e_canonical = float(np.dot(n_s[has], canonical_s[has]) / n_s[has].sum())
    n = ct.n_values
    # pair weights: each stratum's share of the observed pairs, spread over its chance pairs
    weights = (p_s / p_s[has].sum() * d.size / np.where(has, drawn, 1.0))[ps]
    values, where = np.unique(d, return_inverse=True)
    pooled = (values, np.bincount(where.ravel(), weights=weights, minlength=values.size))
    unpaired = int(np.count_nonzero((n_s > 0) & ~has))
    ex = Expected(d, weights, i, j, d_e_canonical * n * (n - 1.0) / 2.0, n_between, between_mean,
                  exact, exact, int(d.size), pooled)
    ex.chance_prepared = prepared
    ex.strata = Strata(opts.item_stratum, ps, n_strata, unpaired)
    return ex


class StrataChance:
    """A bootstrap replicate's stratified chance: per distinct distance, ``(U, B)`` weights
    mixing the strata by their replicate's observed pairs, and the canonical ``D̂e``.

    Parameters
    ----------
    ct : the coded table (its items' strata in ``strata.item_stratum``)
    item_a, item_b, d : item codes and distance of each chance pair, shape (k,)
    strata : the pairs' strata (``pair_stratum`` may be a subset's, given as ``pair_stratum``)
    linear : the replicate's stacked linear maps (``bootstrap_measures._Linear``)
    n_o, m, s_do : per item observed pairs, values and observed distance sum, shape (n_items,)
    """

    def __init__(self, ct: CodedTable, item_a: np.ndarray, item_b: np.ndarray, d: np.ndarray,
                 pair_stratum: np.ndarray, item_stratum: np.ndarray, n_strata: int, linear,
                 n_o: np.ndarray, m: np.ndarray, s_do: np.ndarray) -> None:
        n_items, n_s = ct.n_items, n_strata
        self.n_strata = n_s
        self.values, level = np.unique(d, return_inverse=True)
        key = np.minimum(item_a, item_b).astype(np.int64) * n_items + np.maximum(item_a, item_b)
        keys, kidx = np.unique(key, return_inverse=True)
        self.pa, self.pb = keys // n_items, keys % n_items
        n_keys = keys.size
        cell, count = np.unique((level.ravel() * n_s + pair_stratum) * n_keys + kidx.ravel(), return_counts=True)
        self.s = sparse.csr_matrix((count.astype(np.float64), (cell // n_keys, cell % n_keys)),
                                   shape=(self.values.size * n_s, n_keys))
        items = np.arange(n_items)
        self.p = linear.add(items, item_stratum, n_s, n_o)
        self.n = linear.add(items, item_stratum, n_s, m)
        self.so = linear.add(items, item_stratum, n_s, s_do)
        self.mm = linear.add(items, item_stratum, n_s, m * (m - 1.0))
        self.width = max(n_keys, self.values.size * n_s)
        self._last: tuple | None = None

    def _sums(self, wt: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per (distance, stratum) pair weights ``(U, S, B)``, per stratum ``C_s`` and ``M_s`` ``(S, B)``."""
        if self._last is not None and self._last[0] is wt:
            return self._last[1]
        z = np.take(wt, self.pa, axis=0) * np.take(wt, self.pb, axis=0)
        lev = np.asarray(self.s @ z).reshape(self.values.size, self.n_strata, wt.shape[1])
        c_s = lev.sum(axis=0)
        m_s = np.einsum("u,usb->sb", self.values, lev)
        self._last = (wt, (lev, c_s, m_s))
        return lev, c_s, m_s

    def weights(self, wt: np.ndarray) -> np.ndarray:
        """``(U, B)``: each stratum's pairs scaled to its share of the replicate's observed pairs,
        summing to the replicate's chance pair weight."""
        lev, c_s, _ = self._sums(wt)
        ok = c_s > 0
        p_s = np.where(ok, self.p(wt), 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            scale = np.where(ok, p_s / p_s.sum(axis=0) * c_s.sum(axis=0) / np.where(ok, c_s, 1.0), 0.0)
        return np.einsum("usb,sb->ub", lev, scale)

    def canonical_d_e(self, wt: np.ndarray) -> np.ndarray:
        """``(B,)``: the canonical ``D̂e`` of each replicate (module docstring)."""
        _, c_s, m_s = self._sums(wt)
        ok = c_s > 0
        n_s, so_s, mm_s = self.n(wt), self.so(wt), self.mm(wt)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_s = m_s / np.where(ok, c_s, 1.0)
            between_s = (n_s * (n_s - 1.0) - mm_s) / 2.0
            can_s = 2.0 * (so_s + mean_s * between_s) / (n_s * (n_s - 1.0))
            w = np.where(ok, n_s, 0.0)
            return np.einsum("sb,sb->b", w, np.where(ok, can_s, 0.0)) / w.sum(axis=0)


def subsample_by_stratum(pair_stratum: np.ndarray, n_strata: int, cap: int, rng: np.random.Generator) -> np.ndarray:
    """Sorted indexes of at most about ``cap`` pairs, each stratum keeping its share and at
    least ``min(its pairs, 100)``, so that a small stratum is never dropped from replicates."""
    if pair_stratum.size <= cap:
        return np.arange(pair_stratum.size)
    count = np.bincount(pair_stratum, minlength=n_strata)
    keep = np.minimum(count, np.maximum(np.ceil(cap * count / count.sum()).astype(np.int64), 100))
    order = np.argsort(pair_stratum, kind="stable")
    start = np.concatenate(([0], np.cumsum(count)))
    out = [order[start[s] + rng.choice(count[s], keep[s], replace=False)] for s in range(n_strata) if keep[s]]
    return np.sort(np.concatenate(out))

"""Item-bootstrap intervals of α, KS and σ, vectorized over replicates.

Reference: docs/formulas.md §9; Wong, Paritosh & Aroyo (2021) §5 (resample items); Efron
(1987) for the BCa interval.

A replicate draws items with replacement. No distance is recomputed: an observed pair
weighs the multiplicity ``w_i`` of its item, a chance (between-item) pair the product
``w_a w_b`` of its two items' multiplicities — the replicate's own chance distribution —,
and the full-sample bandwidth is held fixed. Replicates are computed ``B`` at a time, with
the weights as an (items × B) matrix:

* the chance distribution is one weight per distinct expected distance (``U × B``):
  exact from per-item value counts for scalar distances with few values
  (:class:`_CellChance`), else from the expected pairs pooled by item
  pair (:class:`_PairChance`; a seeded subsample of ``MAX_EXPECTED``
  when there are more);
* every observed pair counts (no subsample): per-item sums are linear maps of the
  weights, stacked into one matrix product per block (:class:`_Linear`);
* KS groups the observed pairs by where they fall among the distinct expected distances;
* σ: significance ``F_w(d) < p`` is monotone in ``d``, so a replicate's significant
  observed distances are a prefix of the sorted distinct observed distances, and its
  length (the cut) is found exactly (:class:`~.bootstrap_cutoffs.Cutoffs`) — no grid, so ties, point masses
  and tiny or zero bandwidths are resolved (a 128-point grid cannot see a bandwidth of
  1e-7);
* α from per-item sums; per-annotator σ and α with the replicate's own cut and ``D̂e``.

The same code at all-ones weights gives the full-sample estimates. When a subsample makes
it differ from the point estimate, every replicate is shifted by the difference, so the
subsample cannot pull the interval away from the estimate it belongs to.
"""
from __future__ import annotations

import contextlib

import numpy as np
import pandas as pd
from scipy import sparse

from .bootstrap import bca_interval, bca_intervals, iter_multiplicities, jackknife_weights
from .distances.base import Distance, check_distances
from .distances.scalars import ScalarDistance
from .bootstrap_cutoffs import Cutoffs
from .cells import ObservedCells, pairs_as_cells
from .chance_distances import Expected
from .stratified_chance import StrataChance, subsample_by_stratum
from .table import CodedTable, all_between_pairs, sample_between_pairs

__all__ = ["bootstrap_intervals", "Replicates", "MAX_EXPECTED", "MAX_CELLS"]

# -- maps from a block of replicates' item weights (shape (n_items, B)) to what a replicate
# needs: per-item linear maps stacked into one product (_Linear), and the replicate's chance
# distribution, exact from value counts (_CellChance) or from pooled expected pairs (_PairChance)
_ELEMS = 4_000_000        # float64 elements of one (replicates × something) block
# Replicates drawn per block: the weights (items × replicates) and the dozen arrays of that
# shape a block makes. At 4 million elements a 100,000-task box control's worker peaked
# in them (about 0.4 GB of its 1.0 GB), and beside the spans' worker over a 2 GB budget;
# at 2 million the blocks are twice as many and the same draws (issue 24). Below a few
# replicates a block, its fixed work (the σ cuts' probes, the sides whose cut differs)
# dominates: at 1,000,000 items 2 replicates a block took 1.28× the time of 4 (8: 1.07×),
# so a block then takes up to twice the elements to hold that many.
_REPLICATE_ELEMS = 2_000_000
_MIN_REPLICATES = 4
_DENSE_COLS = 32          # item × group matrices up to this many columns multiply densely


class _Linear:
    """The per-item linear maps of a replicate's weights, evaluated together.

    Maps with few rows are stacked into one dense matrix, so the weights (items ×
    replicates) are read once per block by a single BLAS product instead of once per map;
    wide maps stay sparse.
    """

    def __init__(self, n_items: int) -> None:
        self.n_items = n_items
        self._parts: list[np.ndarray] = []
        self._rows = 0
        self._stack: np.ndarray | None = None
        self._wt: np.ndarray | None = None
        self._out: np.ndarray | None = None
        self._wt32: tuple[np.ndarray | None, np.ndarray | None, float] = (None, None, np.inf)

    def whole32(self, wt: np.ndarray) -> tuple[np.ndarray | None, float]:
        """``wt`` in float32 and its largest entry, when every entry is a whole number (a
        replicate's multiplicities; cached for the block's maps); else None and inf."""
        if self._wt32[0] is not wt:
            whole = wt.size > 0 and bool(np.all(wt == np.rint(wt)))
            self._wt32 = (wt, wt.astype(np.float32) if whole else None, float(np.abs(wt).max()) if whole else np.inf)
        return self._wt32[1], self._wt32[2]

    def add(self, item: np.ndarray, col: np.ndarray, k: int, data: np.ndarray | None = None,
            dense_up_to: int = _DENSE_COLS) -> "_ItemMatrix":
        """``Mᵀ @ wt`` for the (items × k) matrix with entries ``data`` at ``(item, col)`` (summed)."""
        data = np.ones(item.size) if data is None else np.asarray(data, dtype=np.float64)
        mt = sparse.csr_matrix((data, (col, item)), shape=(k, self.n_items))
        if k > dense_up_to or (self._rows + k) * self.n_items > _ELEMS:
            return _ItemMatrix(self, None, k, mt)
        return self.add_rows(mt.toarray())

    def add_rows(self, rows: np.ndarray) -> "_ItemMatrix":
        """``rows @ wt`` for dense ``rows`` of shape (k, n_items)."""
        rows = np.atleast_2d(np.asarray(rows, dtype=np.float64))
        self._parts.append(rows)
        self._stack = None
        self._rows += rows.shape[0]
        return _ItemMatrix(self, self._rows - rows.shape[0], rows.shape[0], None)

    def evaluate(self, wt: np.ndarray) -> np.ndarray:
        if self._wt is not wt:
            if self._stack is None:
                self._stack = np.ascontiguousarray(np.concatenate(self._parts, axis=0))
            self._out, self._wt = self._stack @ wt, wt
        return self._out


class _ItemMatrix:
    """One map of a :class:`_Linear`: ``(k, B)`` from item weights ``wt`` of shape ``(n_items, B)``.

    A sparse map of whole non-negative entries is also kept in float32: with whole weights
    whose every partial sum stays below 2^24 its product is exact there (as
    :class:`_PairChance`'s), and half the memory traffic (the σ side sums of a
    100,000-item bootstrap: 4.7 → 2.8 s of a ranking control, the same numbers).
    """

    def __init__(self, linear: _Linear, offset: int | None, k: int, mt: sparse.csr_matrix | None) -> None:
        self.linear, self.offset, self.k, self.mt = linear, offset, k, mt
        self.mt32: sparse.csr_matrix | None = None
        self.row_top = np.inf                 # the largest row sum of mt32's entries
        if mt is not None and mt.nnz and bool(np.all(mt.data >= 0)) and bool(np.all(mt.data == np.rint(mt.data))):
            self.mt32 = mt.astype(np.float32)
            self.row_top = float(np.max(mt.sum(axis=1)))

    def __call__(self, wt: np.ndarray) -> np.ndarray:
        if self.mt is not None:
            if self.mt32 is not None:
                w32, top = self.linear.whole32(wt)
                if w32 is not None and self.row_top * top < 2.0 ** 24:
                    return np.asarray(self.mt32 @ w32, dtype=np.float64)
            return np.asarray(self.mt @ wt)
        return self.linear.evaluate(wt)[self.offset:self.offset + self.k]


def _incidence(row: np.ndarray, col: np.ndarray, n_rows: int, n_cols: int,
               data: np.ndarray | None = None) -> sparse.csr_matrix:
    """``(n_rows, n_cols)``: the sum of ``data`` (ones when None) at each ``(row, col)``, in
    canonical CSR form (sorted, no duplicates), as scipy's COO constructor gives it.

    Where the grid of cells is small against the entries, a count per cell gives the sorted
    cells at once: scipy's conversion sorts each row's columns (``csr_sort_indices``), and
    a σ side map's single row of every observed pair, unsorted, took 2.7 s of a
    100,000-task box control's 46 s (issue 24). Elsewhere scipy's conversion stands (a
    counting sort by row, nothing more where each row's columns already ascend)."""
    data = np.ones(row.size) if data is None else data
    if row.size and n_rows * n_cols <= 4 * row.size:
        key = np.asarray(row, dtype=np.int64) * n_cols + col
        summed = np.bincount(key, weights=data, minlength=n_rows * n_cols)
        key = np.flatnonzero(np.bincount(key, minlength=n_rows * n_cols))
        indptr = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(np.bincount(key // n_cols, minlength=n_rows), out=indptr[1:])
        return sparse.csr_matrix((summed[key], key % n_cols, indptr), shape=(n_rows, n_cols))
    return sparse.csr_matrix((data, (row, col)), shape=(n_rows, n_cols))


class _PairChance:
    """Replicate chance weights from expected pairs: ``w_a w_b`` summed per distinct distance.

    Pairs are first pooled by (distance, item pair), so a replicate costs one product per
    distinct item pair and one sparse product.
    """

    def __init__(self, item_a: np.ndarray, item_b: np.ndarray, d: np.ndarray, n_items: int) -> None:
        self.values, level = np.unique(d, return_inverse=True)
        level = level.ravel()
        key = np.minimum(item_a, item_b).astype(np.int64) * n_items + np.maximum(item_a, item_b)
        keys, kidx = np.unique(key, return_inverse=True)
        self.pa, self.pb = keys // n_items, keys % n_items
        cell, count = np.unique(level * keys.size + kidx.ravel(), return_counts=True)
        self.s = _incidence(cell // keys.size, cell % keys.size, self.values.size, keys.size,
                            count.astype(np.float64))
        self.s32 = self.s.astype(np.float32)
        self.n_pairs = float(d.size)
        self.width = keys.size

    def weights(self, wt: np.ndarray) -> np.ndarray:
        """``(U, B)``."""
        top = float(wt.max()) if wt.size else 0.0
        if self.n_pairs * top * top < 2.0 ** 24:
            # integer weights whose every partial sum stays below 2^24 are exact in float32,
            # which halves the memory traffic of the gathers
            w32 = wt.astype(np.float32)
            z = np.take(w32, self.pa, axis=0)
            z *= np.take(w32, self.pb, axis=0)
            return np.asarray(self.s32 @ z, dtype=np.float64)
        z = np.take(wt, self.pa, axis=0)
        z *= np.take(wt, self.pb, axis=0)
        return np.asarray(self.s @ z)


class _CellChance:
    """Exact replicate chance distribution of a scalar distance, from per-item value counts.

    With ``c_iv`` item ``i``'s count of value ``v`` and ``N = Σ_i w_i c_i`` the replicate's
    value counts, its unordered between-item pairs of values are
    ``N_v N_v' − Σ_i w_i² c_iv c_iv'`` for ``v ≠ v'`` and ``(N_v² − Σ_i w_i² c_iv²)/2`` for
    ``v = v'`` (copies of one item are not pairs between items) — at ``w = 1`` exactly the
    tabulated expected distribution.
    """

    def __init__(self, ct: CodedTable, dist: ScalarDistance, cells: ObservedCells,
                 domain: np.ndarray, code: np.ndarray, linear: _Linear) -> None:
        n_items, v = ct.n_items, domain.size
        self.counts = linear.add(ct.item, code, v)
        # per item, c_iv c_iv' (v < v') and c_iv² = c_iv + 2·#{within pairs (v, v)}; a cell
        # of observed pairs shares one value pair, so it counts its pairs at once
        a, b = code[cells.a], code[cells.b]
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        pair_item = cells.item
        same = lo == hi
        key = np.concatenate((lo * v + hi, code * v + code, lo[same] * v + lo[same]))
        item = np.concatenate((pair_item, ct.item, pair_item[same]))
        count = np.concatenate((cells.weight, np.ones(ct.n_values), cells.weight[same]))
        c = np.bincount(code, minlength=v).astype(np.float64)
        iu, ju = np.triu_indices(v)
        cell_keys = iu * v + ju
        within = np.bincount(np.searchsorted(cell_keys, key), weights=count, minlength=iu.size)
        n_pair = c[iu] * c[ju]
        full = np.where(iu == ju, (n_pair - within) / 2.0, n_pair - within)
        keep = full > 0   # a value pair never seen across items stays 0 in every replicate
        d = dist.delta(domain[iu[keep]], domain[ju[keep]])
        self.ca, self.cb = iu[keep], ju[keep]
        self.half = self.ca == self.cb
        kept = cell_keys[keep]
        pos = np.searchsorted(kept, key)
        hit = (pos < kept.size) & (kept[np.minimum(pos, kept.size - 1)] == key)
        self.within = _Linear(n_items).add(item[hit], pos[hit], kept.size, count[hit])   # applied to w²
        self.values, level = np.unique(d, return_inverse=True)
        self.s = _incidence(level.ravel(), np.arange(kept.size), self.values.size, kept.size)
        self.width = max(kept.size, v)

    def weights(self, wt: np.ndarray) -> np.ndarray:
        """``(U, B)``."""
        n = self.counts(wt)
        cw = n[self.ca] * n[self.cb] - self.within(wt * wt)
        cw[self.half] *= 0.5
        return np.asarray(self.s @ cw)


# -- the replicates' measures -------------------------------------------------------------------
MAX_EXPECTED = 50_000     # expected pairs behind each replicate's chance distribution
MAX_CELLS = 20_000        # value pairs of an exact scalar chance distribution in replicates
_MAX_LEVEL_COLS = 200_000  # (group, level) columns of one σ-side map, at most


_BLAS: list = []


def _one_blas_thread():
    """Run the replicate products on one BLAS thread (threadpoolctl, when installed).

    They are many mid-sized products; on a machine whose other core is busy, BLAS threads
    spin waiting for each other and a bootstrap ran 10 times slower than on one thread.
    """
    if not _BLAS:
        try:
            from threadpoolctl import ThreadpoolController
            _BLAS.append(ThreadpoolController())
        except Exception:  # optional: without it, BLAS keeps its own threading
            _BLAS.append(None)
    return _BLAS[0].limit(limits=1, user_api="blas") if _BLAS[0] is not None else contextlib.nullcontext()


def _subsample(n: int, cap: int, rng: np.random.Generator) -> np.ndarray:
    return np.sort(rng.choice(n, cap, replace=False)) if n > cap else np.arange(n)


class _Below:
    """Per group and replicate, the weight of observed pair sides whose level is below the cut.

    With few (group, level) combinations their weights are one more stacked linear map and
    the cut reads a running sum; otherwise the sides below every replicate's cut are summed
    once (cached per block's lowest cut) and only the sides between the lowest and highest
    cut are weighed replicate by replicate.
    """

    def __init__(self, item: np.ndarray, group: np.ndarray, g: np.ndarray, n_groups: int, n_levels: int,
                 linear: _Linear, weight: np.ndarray | None = None) -> None:
        """``item, group, g`` (shape (s,)): each side's item, group and level; ``weight``: the
        pairs each side stands for (pooled cells; None: one each)."""
        self.n_groups, self.n_levels, self.n_items = n_groups, n_levels, linear.n_items
        # one column per (group, level) while that is no more than the sides themselves:
        # many annotators on few distinct distances (a crowd project) then cost their
        # combinations, not every side of every replicate
        combos = n_groups * n_levels
        if combos <= 2 * _DENSE_COLS or (combos <= item.size // 4 and combos <= _MAX_LEVEL_COLS):
            self.by_level = linear.add(item, group * n_levels + g, combos, weight, dense_up_to=2 * _DENSE_COLS)
            return
        self.by_level = None
        order = np.argsort(g, kind="stable")
        self.item, self.group, self.g = item[order], group[order], g[order]
        self.weight = None if weight is None else weight[order]
        self._base: dict[int, sparse.csr_matrix] = {}

    def __call__(self, wt: np.ndarray, cut: np.ndarray) -> np.ndarray:
        """``(n_groups, B)``; ``wt`` (n_items, B), ``cut`` (B,) level counts."""
        b = wt.shape[1]
        if self.by_level is not None:
            y = self.by_level(wt).reshape(self.n_groups, self.n_levels, b)
            cum = np.concatenate((np.zeros((self.n_groups, 1, b)), np.cumsum(y, axis=1)), axis=1)
            return cum[:, cut, np.arange(b)]
        k0 = int(np.searchsorted(self.g, cut.min(), side="left"))
        k1 = int(np.searchsorted(self.g, cut.max(), side="left"))
        base = self._base.get(k0)
        if base is None:
            if len(self._base) > 8:
                self._base.clear()
            base = self._base[k0] = _incidence(self.group[:k0], self.item[:k0], self.n_groups, self.n_items,
                                               None if self.weight is None else self.weight[:k0])
        out = np.asarray(base @ wt)
        step = max(1, _ELEMS // max(b, 1))
        for s in range(k0, k1, step):  # sides whose significance differs between replicates
            e = min(k1, s + step)
            contrib = np.take(wt, self.item[s:e], axis=0) * (self.g[s:e, None] < cut[None, :])
            side_w = None if self.weight is None else self.weight[s:e]
            out += np.asarray(_incidence(self.group[s:e], np.arange(e - s), self.n_groups, e - s, side_w) @ contrib)
        return out


class Replicates:
    """α, KS, σ and per-annotator σ, α of item-weighted replicates of one table.

    Built from what :func:`~.engine.agreement` computed; call it with item weights
    ``w`` of shape ``(B, n_items)`` (item order of the coded table, ``item_labels``).
    :meth:`from_table` builds it from a plain long table, as the engine would.
    """

    def __init__(self, ct: CodedTable, dist: Distance, prepared: object, do: np.ndarray | None,
                 oi: np.ndarray | None, oj: np.ndarray | None, ex: Expected, *, form: str, p: float,
                 ks_method: str, bandwidth: float, threshold: float, rng: np.random.Generator,
                 cells: ObservedCells | None = None) -> None:
        """``cells``: the observed pairs pooled by (item, value pair); when None, they are the
        pairs ``(oi, oj)`` with distances ``do`` (each shape (n_pairs,)), one cell each."""
        self.form, self.ks_method, self.n_items = form, ks_method, ct.n_items
        self.item_labels, self.annotator_labels = ct.item_labels, ct.annotator_labels
        if cells is None:
            cells = pairs_as_cells(ct, oi, oj, do)
        n_items = ct.n_items
        # every observed sum below runs over cells, each weighing its pairs
        pair_item, do, cw = cells.item, cells.d, cells.weight
        self.m = ct.item_size.astype(np.float64)
        self.s_do = np.bincount(pair_item, weights=do * cw, minlength=n_items)
        self.n_o = np.bincount(pair_item, weights=cw, minlength=n_items)
        self.linear = _Linear(n_items)
        self.alpha_sums = self.linear.add_rows(np.stack((self.s_do, self.n_o, self.m, self.s_do / (self.m - 1.0),
                                                          self.m * (self.m - 1.0))))

        # chance distribution of a replicate
        self.chance = self._chance(ct, dist, prepared, cells, ex, rng, self.linear)
        self.stratified = isinstance(self.chance, StrataChance)
        values = self.chance.values

        # observed side: distinct levels, KS groups, σ sides
        levels, g = np.unique(do, return_inverse=True)
        g = g.ravel()
        kpos = np.searchsorted(values, levels, side="right")[g]   # chance values ≤ d
        self.ks_pos, kidx = np.unique(kpos, return_inverse=True)
        self.ks_groups = self.linear.add(pair_item, kidx.ravel(), self.ks_pos.size, cw)
        # chance weight above each KS group = sums of the chance segments between groups
        seg = np.searchsorted(self.ks_pos, np.arange(values.size), side="right")
        self.ks_seg = _incidence(seg, np.arange(values.size), self.ks_pos.size + 1, values.size)
        self.below = _Below(pair_item, np.zeros_like(pair_item), g, 1, levels.size, self.linear, cw)
        center = int(np.searchsorted(levels, threshold, side="left"))
        self.cutoffs = Cutoffs(values, bandwidth, p, levels, center)

        # per annotator: each pair once per annotator in it (pooled: linear per-value sides)
        ann, ann_item, ann_d, ann_w = cells.sides()
        n_ann = ct.annotator_labels.size
        self.n_ann = n_ann
        self.a_n = self.linear.add(ann_item, ann, n_ann, ann_w)
        self.a_sum = self.linear.add(ann_item, ann, n_ann, ann_d * ann_w)
        self.a_below = _Below(ann_item, ann, np.searchsorted(levels, ann_d), n_ann, levels.size, self.linear,
                              ann_w)
        self.width = max(self.chance.width, values.size + 1, self.ks_pos.size, n_items, n_ann)

    @staticmethod
    def _chance(ct: CodedTable, dist: Distance, prepared: object, cells: ObservedCells, ex: Expected,
                rng: np.random.Generator, linear: _Linear) -> _PairChance | _CellChance | StrataChance:
        if ex.chance_prepared is not None:   # items offering their own answers: chance on its own view
            prepared = ex.chance_prepared
        if ex.strata is not None:
            st = ex.strata
            sel = subsample_by_stratum(st.pair_stratum, st.n_strata, MAX_EXPECTED, rng)
            m = ct.item_size.astype(np.float64)
            n_o = np.bincount(cells.item, weights=cells.weight, minlength=ct.n_items)
            s_do = np.bincount(cells.item, weights=cells.weight * cells.d, minlength=ct.n_items)
            return StrataChance(ct, ct.item[ex.i[sel]], ct.item[ex.j[sel]], ex.distances[sel],
                                st.pair_stratum[sel], st.item_stratum, st.n_strata, linear, n_o, m, s_do)
        if ex.i is not None:
            sel = _subsample(ex.distances.size, MAX_EXPECTED, rng)
            return _PairChance(ct.item[ex.i[sel]], ct.item[ex.j[sel]], ex.distances[sel], ct.n_items)
        # tabulated exactly from value counts (a scalar distance)
        if isinstance(dist, ScalarDistance):
            x = np.asarray(prepared, dtype=np.float64)
            if dist.level == "nominal":
                code = x.astype(np.int64)
                domain = np.arange(int(code.max()) + 1, dtype=np.float64)
            else:
                domain, code = np.unique(x, return_inverse=True)
                code = code.ravel()
            if domain.size * (domain.size + 1) // 2 <= MAX_CELLS:
                return _CellChance(ct, dist, cells, domain, code, linear)
        if ex.n_between <= MAX_EXPECTED:
            ei, ej = all_between_pairs(ct)
        else:
            ei, ej = sample_between_pairs(ct, MAX_EXPECTED, rng)
        de = check_distances(dist.compute(prepared, ei, ej), dist.name)
        return _PairChance(ct.item[ei], ct.item[ej], de, ct.n_items)

    @classmethod
    def from_table(cls, table: pd.DataFrame, distance, *, p: float = 0.05, form: str = "canonical",
                   expected_pairs=None, seed: int = 0, ks_method: str = "exact",
                   duplicates: str = "error") -> "Replicates":
        """The replicates :func:`~.engine.agreement` resamples for ``table`` (same seed, same pairs)."""
        from .distances.registry import get_distance
        from .distributional import ExpectedDistribution, sigma_threshold
        from .core import alpha_core
        from .table import code_table

        dist = get_distance(distance)
        ct = code_table(table, duplicates)
        rng = np.random.default_rng(seed)
        core = alpha_core(ct, dist, form, expected_pairs, rng)
        chance = ExpectedDistribution(*core.expected.distribution())
        return cls(ct, dist, core.prepared, None, None, None, core.expected, form=form, p=p,
                   ks_method=ks_method, bandwidth=chance.bandwidth(), threshold=sigma_threshold(chance, p),
                   rng=rng, cells=core.cells)

    def __call__(self, w: np.ndarray) -> dict[str, np.ndarray]:
        """Measures of replicates with item weights ``w`` (B, n_items); NaN where undefined.

        Returns ``alpha, ks, sigma`` of shape (B,) and ``annotator_sigma, annotator_alpha``
        of shape (B, n_annotators).
        """
        return self.transposed(np.ascontiguousarray(np.asarray(w, dtype=np.float64).T))

    def transposed(self, wt: np.ndarray) -> dict[str, np.ndarray]:
        """:meth:`__call__` with the weights given as ``wt`` of shape (n_items, B)."""
        with _one_blas_thread():
            return self._transposed(np.ascontiguousarray(wt, dtype=np.float64))

    def _transposed(self, wt: np.ndarray) -> dict[str, np.ndarray]:
        self.linear.evaluate(wt)
        wu = self.chance.weights(wt)                                      # (U, B)
        tot = wu.sum(axis=0)
        ok = tot > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            de_mean = np.where(ok, (self.chance.values @ wu) / tot, np.nan)
            so, no, n_b, so_c, n_m1 = self.alpha_sums(wt)
            if self.form == "pairwise":
                d_e = de_mean
                alpha = 1.0 - (so / no) / d_e
            else:
                do_c = 2.0 * so_c / n_b
                n_between = (n_b * (n_b - 1.0) - n_m1) / 2.0
                d_e = (self.chance.canonical_d_e(wt) if self.stratified else
                       2.0 * (so + de_mean * n_between) / (n_b * (n_b - 1.0)))
                alpha = 1.0 - do_c / d_e

            # KS: mean over observed pairs of the chance weight above them / (total + 1)
            seg = np.asarray(self.ks_seg @ wu)            # (K + 1, B): chance weight between groups
            above = np.cumsum(seg[::-1], axis=0)[::-1][1:]                # (K, B): above each group
            one_minus_p = above / (tot[None, :] + 1.0)
            if self.ks_method == "scipy":
                big = tot > 10000
                if big.any():
                    n = tot[None, big]
                    z = np.sqrt(n / (n + 1.0)) * above[:, big] / n
                    one_minus_p[:, big] = 1.0 - np.exp(-2.0 * z * z - 2.0 * z * (n + 2.0)
                                                       / (3.0 * np.sqrt(n * (n + 1.0))))
            ks = np.where(ok, np.einsum("kb,kb->b", self.ks_groups(wt), one_minus_p) / no, np.nan)

            # σ: the share of observed weight below each replicate's own cut
            cut = self.cutoffs(wu, tot)
            cut_ok = np.where(ok, cut, 0)
            sigma = np.where(ok, self.below(wt, cut_ok)[0] / no, np.nan)

            cnt = self.a_n(wt)                                               # (n_ann, B)
            a_sigma = np.where(ok[None, :], self.a_below(wt, cut_ok) / cnt, np.nan)
            a_alpha = 1.0 - (self.a_sum(wt) / cnt) / d_e[None, :]
        return {"alpha": alpha, "ks": ks, "sigma": sigma, "annotator_sigma": a_sigma.T,
                "annotator_alpha": a_alpha.T}

    def run(self, weights, transposed: bool = False) -> dict[str, np.ndarray]:
        """Concatenated :meth:`__call__` (or :meth:`transposed`) over an iterable of weight blocks."""
        parts = [self.transposed(w) if transposed else self(w) for w in weights]
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}

    def chunk(self) -> int:
        """Replicates per block, bounding memory to a few blocks of ``_REPLICATE_ELEMS`` floats
        (up to twice that where it keeps :data:`_MIN_REPLICATES` a block)."""
        per_block = _REPLICATE_ELEMS // self.width
        if per_block < _MIN_REPLICATES:
            per_block = min(_MIN_REPLICATES, 2 * _REPLICATE_ELEMS // self.width)
        return max(1, per_block)


_BOUNDS = {"alpha": (-np.inf, 1.0), "ks": (0.0, 1.0), "sigma": (0.0, 1.0)}


def _recentre(boot: np.ndarray, jack: np.ndarray, full: np.ndarray, estimate: np.ndarray,
              bounds: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Shift replicates by ``estimate − full`` where the replicate code's full-sample value
    differs from the point estimate (a subsampled chance distribution); else leave them."""
    with np.errstate(invalid="ignore"):
        delta = np.where(np.abs(estimate - full) > 1e-12 * np.maximum(1.0, np.abs(estimate)), estimate - full, 0.0)
    delta = np.where(np.isfinite(delta), delta, 0.0)
    if not np.any(delta):
        return boot, jack
    return np.clip(boot + delta, *bounds), np.clip(jack + delta, *bounds)


def bootstrap_intervals(ct: CodedTable, dist: Distance, prepared: object, do: np.ndarray | None,
                        oi: np.ndarray | None, oj: np.ndarray | None, ex: Expected, *, form: str, p: float,
                        bootstrap: int, rng: np.random.Generator, ks_method: str, confidence: float,
                        bandwidth: float, threshold: float, d_e: float, per_annotator: pd.DataFrame,
                        estimates: dict[str, float] | None = None,
                        cells: ObservedCells | None = None) -> dict[str, tuple[float, float]]:
    """BCa intervals of α, KS, σ; adds per-annotator interval columns in place.

    The observed pairs are ``cells`` (pooled by item and value pair, with counts) or, when
    None, the pairs ``(oi, oj)`` with distances ``do``, shape (n_pairs,) each.

    ``estimates`` are the point estimates the intervals belong to (default: the replicate
    code's own full-sample values). The bias correction and acceleration of the BCa
    interval (Efron 1987) come from the same replicate code fed with (grouped) jackknife
    weights; they matter with few items and with discrete statistics such as σ. Quantile
    levels are expanded for the number of items behind each interval
    (:func:`~.bootstrap.expanded_level`), which keeps coverage near nominal with few items.
    """
    rep = Replicates(ct, dist, prepared, do, oi, oj, ex, form=form, p=p, ks_method=ks_method,
                     bandwidth=bandwidth, threshold=threshold, rng=rng, cells=cells)
    n_items = ct.n_items
    chunk = rep.chunk()
    full = rep(np.ones((1, n_items)))
    boot = rep.run(iter_multiplicities(n_items, bootstrap, rng, chunk=chunk, dtype=np.float64, transposed=True),
                   transposed=True)
    jack = rep.run(jackknife_weights(n_items, chunk=chunk))
    out = {}
    for name in ("alpha", "ks", "sigma"):
        est = float(full[name][0]) if estimates is None else float(estimates[name])
        b, j = _recentre(boot[name], jack[name], full[name][0], np.float64(est), _BOUNDS[name])
        out[name] = bca_interval(b, j, est, confidence, n_units=n_items)
    units = (per_annotator["n_items"].to_numpy() if "n_items" in per_annotator
             else np.full(rep.n_ann, n_items))
    for name in ("sigma", "alpha"):
        key = f"annotator_{name}"
        est = per_annotator[name].to_numpy(dtype=np.float64) if name in per_annotator else full[key][0]
        b, j = _recentre(boot[key], jack[key], full[key][0], est, _BOUNDS[name])
        bounds = bca_intervals(b, j, est, confidence, n_units=units).reshape(rep.n_ann, 2)
        per_annotator[f"{name}_ci_low"] = bounds[:, 0]
        per_annotator[f"{name}_ci_high"] = bounds[:, 1]
    return out

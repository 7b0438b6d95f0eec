"""Maps from a block of bootstrap replicates' item weights (shape ``(n_items, B)``) to
what a replicate needs: per-item linear maps stacked into one product (:class:`_Linear`),
and the replicate's chance distribution, exact from value counts (:class:`_CellChance`)
or from pooled expected pairs (:class:`_PairChance`). Used by :mod:`.bootstrap_measures`.
"""
from __future__ import annotations

import numpy as np
from scipy import sparse

from .cells import ObservedCells
from .distances.scalars import ScalarDistance
from .table import CodedTable

_ELEMS = 4_000_000        # float64 elements of one (replicates × something) block
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
    """One map of a :class:`_Linear`: ``(k, B)`` from item weights ``wt`` of shape ``(n_items, B)``."""

    def __init__(self, linear: _Linear, offset: int | None, k: int, mt: sparse.csr_matrix | None) -> None:
        self.linear, self.offset, self.k, self.mt = linear, offset, k, mt

    def __call__(self, wt: np.ndarray) -> np.ndarray:
        if self.mt is not None:
            return np.asarray(self.mt @ wt)
        return self.linear.evaluate(wt)[self.offset:self.offset + self.k]


def _incidence(row: np.ndarray, col: np.ndarray, n_rows: int, n_cols: int,
               data: np.ndarray | None = None) -> sparse.csr_matrix:
    data = np.ones(row.size) if data is None else data
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

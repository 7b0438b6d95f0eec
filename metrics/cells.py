"""The observed within-item pairs pooled by (item, value pair), with pair counts.

With many annotators on an item (a crowd project) the pairs — ``m(m−1)/2`` per item — far
outnumber the distinct values on it: 1,500 annotators choosing among 5 classes make
1.1 million pairs but only 15 (value, value) combinations. Every measure of the engine
(α, KS, σ, per-item and per-annotator tables, the bootstrap replicates) is a sum over
pairs of a function of the pair's distance and item, so it is the same sum over these
*cells*, each weighted by its count of pairs; the cost is then in cells, not pairs.

Per annotator, the pairs an annotator's value ``v_r`` on item ``i`` is in are summed in
the linear form ``Σ_v (c_i(v) − [v = v_r]) f(D(v_r, v))`` over the distinct values ``v``
of the item (``c_i(v)`` their counts): one *side* per (value row, distinct value of its
item) instead of one per pair.

With few annotators per item every pair is its own cell of weight 1 (pooling would only
add work), and sides are the pairs seen from each of their two annotators.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from .distances.base import Distance, check_distances, compute_distinct, value_keys
from .table import CodedTable, observed_pairs, show
from .errors import BadInput

__all__ = ["ObservedCells", "observed_cells", "pairs_as_cells"]

# Pool only when pairs outnumber values this many times (value_keys hashes every value)
POOL_MIN_PAIRS_PER_VALUE = 8


@dataclass
class ObservedCells:
    """Observed pairs pooled into cells of equal (item, value pair).

    Attributes
    ----------
    ct : CodedTable
    item : ndarray of int64, shape (k,) — item code of each cell
    a, b : ndarray of int64, shape (k,) — value rows of one pair of the cell
    d : ndarray of float64, shape (k,) — the cell's distance
    weight : ndarray of float64, shape (k,) — pairs in the cell (≥ 1)
    n_pairs : int — observed pairs in all (``weight.sum()``)
    pooled : bool — cells pool several pairs (else one cell per pair, in pair order)
    keys : ndarray of int64 or None, shape (n_values,) — value keys when pooled
    """

    ct: CodedTable
    item: np.ndarray
    a: np.ndarray
    b: np.ndarray
    d: np.ndarray
    weight: np.ndarray
    n_pairs: int
    pooled: bool
    keys: np.ndarray | None = None
    # pooled only: value row -> (item-local) group of equal values; group layout per item
    _group: np.ndarray | None = field(default=None, repr=False)
    _group_start: np.ndarray | None = field(default=None, repr=False)
    _n_groups: np.ndarray | None = field(default=None, repr=False)
    _group_count: np.ndarray | None = field(default=None, repr=False)
    _full_index: np.ndarray | None = field(default=None, repr=False)
    _cell_start: np.ndarray | None = field(default=None, repr=False)
    _pairs: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    _pair_d: np.ndarray | None = field(default=None, repr=False)
    _sides: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    @property
    def total(self) -> float:
        """``Σ`` of the observed distances over all pairs."""
        # one cell per pair: the plain sum, as the distances were always summed
        return float(np.dot(self.weight, self.d)) if self.pooled else float(self.d.sum())

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Every observed pair ``(i, j)`` as :func:`~.table.observed_pairs` lists them, shape (n_pairs,) each."""
        if self._pairs is None:
            self._pairs = (self.a, self.b) if not self.pooled else observed_pairs(self.ct)
        return self._pairs

    def pair_distances(self) -> np.ndarray:
        """The distance of every pair of :meth:`pairs`, shape (n_pairs,), read off its cell."""
        if not self.pooled:
            return self.d
        if self._pair_d is None:  # millions of entries in a crowd project: built once, on demand
            i, j = self.pairs()
            self._pair_d = self.d[self.pair_cells(i, j)]
        return self._pair_d

    def distribution(self) -> tuple[np.ndarray, np.ndarray | None]:
        """``(distances, weights)`` of the observed pairs without listing them: the cells' distances
        and pair counts when pooled (shape (k,) each), else every pair's distance and None."""
        return (self.d, self.weight) if self.pooled else (self.d, None)

    def pair_cells(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """The cell of each within-item pair ``(i, j)`` of value rows, shape (n,) (pooled cells)."""
        x, y = self._group[i], self._group[j]
        lo, hi = np.minimum(x, y), np.maximum(x, y)
        k = self._n_groups[self.ct.item[i]]
        # position of (lo, hi), lo ≤ hi, in the row-major upper triangle (diagonal included)
        local = lo * k - lo * (lo - 1) // 2 + (hi - lo)
        return self._full_index[self._cell_start[self.ct.item[i]] + local]

    def sides(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Each pair once per annotator in it (once when both sides are the same annotator).

        Returns
        -------
        annotator, item : ndarray of int64, shape (s,)
        d, weight : ndarray of float64, shape (s,) — distance and number of pairs of the side
        """
        if self._sides is None:
            self._sides = self._pooled_sides() if self.pooled else self._pair_sides()
        return self._sides

    def _pair_sides(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        ct = self.ct
        a, b = ct.annotator[self.a], ct.annotator[self.b]
        other = a != b
        d = np.concatenate((self.d, self.d[other]))
        return (np.concatenate((a, b[other])), np.concatenate((self.item, self.item[other])), d,
                np.ones(d.size))

    def _pooled_sides(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per value row ``r`` and distinct value ``v`` of its item: ``c(v) − [v = v_r]`` pairs at ``D(v_r, v)``."""
        ct = self.ct
        per_row = self._n_groups[ct.item]                       # distinct values on the row's item
        row = np.repeat(np.arange(ct.n_values), per_row)
        offset = np.arange(row.size) - np.repeat(np.cumsum(per_row) - per_row, per_row)
        other = self._group_start[ct.item[row]] + offset         # global group of the co-value
        mine = self._group[row]
        w = self._group_count[other] - (offset == mine)
        keep = w > 0
        row, offset, w = row[keep], offset[keep], w[keep]
        item = ct.item[row]
        lo, hi = np.minimum(mine[keep], offset), np.maximum(mine[keep], offset)
        k = self._n_groups[item]
        cell = self._full_index[self._cell_start[item] + lo * k - lo * (lo - 1) // 2 + (hi - lo)]
        return ct.annotator[row], item, self.d[cell], w.astype(np.float64)


def pairs_as_cells(ct: CodedTable, i: np.ndarray, j: np.ndarray, d: np.ndarray) -> ObservedCells:
    """Observed pairs ``(i, j)`` with distances ``d`` (each shape (n_pairs,)) as cells of weight 1."""
    d = np.asarray(d, dtype=np.float64)
    return ObservedCells(ct, ct.item[i], i, j, d, np.ones(d.size), int(d.size), False)


def observed_cells(ct: CodedTable, dist: Distance, prepared: object) -> ObservedCells:
    """The observed pairs of ``ct`` under ``dist`` (``prepared = dist.prepare(ct.values)``), pooled
    by (item, value pair) when many annotators share items, else one cell per pair.

    Raises
    ------
    ValueError
        ``dist`` returned a negative or non-finite distance (message names the pair).
    """
    sizes = ct.item_size
    n_pairs = int(np.sum(sizes * (sizes - 1) // 2))
    if n_pairs < POOL_MIN_PAIRS_PER_VALUE * ct.n_values or not getattr(dist, "symmetric", True):
        # an asymmetric distance needs each pair's orientation: no pooling
        i, j = observed_pairs(ct)
        return pairs_as_cells(ct, i, j, _checked(dist.compute(prepared, i, j), dist, ct, i, j))
    keys = value_keys(ct.values)
    if _repeats_annotator(ct):
        # an annotator twice on an item (duplicates="keep"): sides must see each pair's annotators
        i, j = observed_pairs(ct)
        return pairs_as_cells(ct, i, j, _checked(compute_distinct(dist, prepared, keys, i, j), dist, ct, i, j))
    return _pooled(ct, dist, prepared, keys, n_pairs)


def _repeats_annotator(ct: CodedTable) -> bool:
    key = ct.item * max(int(ct.annotator.max()) + 1, 1) + ct.annotator
    return bool(np.unique(key).size < key.size)


def _pooled(ct: CodedTable, dist: Distance, prepared: object, keys: np.ndarray, n_pairs: int) -> ObservedCells:
    n_keys = int(keys.max()) + 1
    code = ct.item * n_keys + keys                               # rows are sorted by item
    order = np.argsort(code, kind="stable")
    sc = code[order]
    first = np.ones(sc.size, dtype=bool)
    first[1:] = sc[1:] != sc[:-1]
    start = np.flatnonzero(first)                                # groups of equal (item, value)
    count = np.diff(np.append(start, sc.size))
    group_item = sc[start] // n_keys
    n_groups = np.bincount(group_item, minlength=ct.n_items)
    group_start = np.cumsum(n_groups) - n_groups
    group = np.empty(ct.n_values, dtype=np.int64)                # item-local group of each row
    group[order] = np.repeat(np.arange(start.size) - group_start[group_item], count)

    # cells: every (x ≤ y) of an item's groups, as observed_pairs does for rows
    n_cells = n_groups * (n_groups + 1) // 2
    cell_start = np.cumsum(n_cells) - n_cells
    parts = []
    for k in np.unique(n_groups):
        x, y = np.triu_indices(int(k))
        items = np.flatnonzero(n_groups == k)
        parts.append(((cell_start[items][:, None] + np.arange(x.size)[None, :]).ravel(),
                      (group_start[items][:, None] + x[None, :]).ravel(),
                      (group_start[items][:, None] + y[None, :]).ravel()))
    pos = np.concatenate([p[0] for p in parts])
    gx = np.empty(pos.size, dtype=np.int64)
    gy = np.empty(pos.size, dtype=np.int64)
    gx[pos] = np.concatenate([p[1] for p in parts])
    gy[pos] = np.concatenate([p[2] for p in parts])
    same = gx == gy
    w = np.where(same, count[gx] * (count[gx] - 1) // 2, count[gx] * count[gy])
    keep = w > 0
    full_index = np.full(gx.size, -1, dtype=np.int64)
    full_index[keep] = np.arange(int(keep.sum()))
    gx, gy, same, w = gx[keep], gy[keep], same[keep], w[keep]
    # one pair of each cell: the group's first row, and its second for a (v, v) cell
    a = order[start[gx]]
    b = order[np.where(same, start[gy] + 1, start[gy])]
    a, b = np.minimum(a, b), np.maximum(a, b)
    d = _checked(compute_distinct(dist, prepared, keys, a, b), dist, ct, a, b)
    return ObservedCells(ct, group_item[gx], a, b, d, w.astype(np.float64), n_pairs, True, keys,
                         _group=group, _group_start=group_start, _n_groups=n_groups, _group_count=count,
                         _full_index=full_index, _cell_start=cell_start)


def _checked(d: np.ndarray, dist: Distance, ct: CodedTable, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """:func:`check_distances` of the pairs ``(i, j)``, naming the item and annotators of a bad one."""
    try:
        return check_distances(d, dist.name)
    except ValueError as exc:
        m = re.search(r"pair #(\d+)", str(exc))
        if not m:
            raise
        k = int(m.group(1))
        raise BadInput(f"{exc} (item {show(ct.item_labels[ct.item[i[k]]])}, annotators "
                         f"{show(ct.annotator_labels[ct.annotator[i[k]]])} and "
                         f"{show(ct.annotator_labels[ct.annotator[j[k]]])})") from None

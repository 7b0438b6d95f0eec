"""What α needs and KS/σ reuse: the observed pairs and distances of a coded table, the
chance distances, and the form's mean distances (docs/formulas.md §1–§2).

Shared by the engine, the bootstrap replicates and ``krippendorff_alpha``; it imports
neither of them, so the three depend on it and not on each other. The observed pairs are
carried as :class:`~.cells.ObservedCells` — pooled by (item, value pair) with pair counts
when many annotators share items — and expanded to one entry per pair only on demand.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .cells import ObservedCells, observed_cells
from .distances.base import Distance
from .chance_distances import Expected
from .expected import expected_distances
from .table import CodedTable

__all__ = ["AlphaCore", "alpha_core"]


@dataclass
class AlphaCore:
    """What α needs and KS/σ reuse: observed pairs and distances, expected distances.

    ``cells`` are the observed pairs pooled with counts (what every measure sums over);
    ``observed``, ``i`` and ``j`` list them pair by pair (shape (n_pairs,)), built on
    first use.
    """

    prepared: Any
    cells: ObservedCells
    expected: Expected
    d_o: float
    d_e: float
    alpha: float

    @property
    def observed(self) -> np.ndarray:
        """Observed distances, one per pair of ``(i, j)``; shape (n_pairs,) (built once, by the cells)."""
        return self.cells.pair_distances()

    @property
    def i(self) -> np.ndarray:
        return self.cells.pairs()[0]

    @property
    def j(self) -> np.ndarray:
        return self.cells.pairs()[1]

    @property
    def n_pairs(self) -> int:
        return self.cells.n_pairs


def alpha_core(ct: CodedTable, dist: Distance, form: str, expected_pairs: int | str | None,
               rng: np.random.Generator) -> AlphaCore:
    """α of a coded table: observed distances, chance distances, and the form's means."""
    prepared = dist.prepare(ct.values)
    cells = observed_cells(ct, dist, prepared)
    ex = expected_distances(ct, dist, prepared, cells, expected_pairs=expected_pairs, rng=rng)
    d_o, d_e = _form_means(ct, cells, ex, form)
    alpha = 1.0 - d_o / d_e if d_e > 0 else math.nan
    return AlphaCore(prepared, cells, ex, d_o, d_e, alpha)


def _form_means(ct: CodedTable, cells: ObservedCells, ex: Expected, form: str) -> tuple[float, float]:
    """``(D̂o, D̂e)`` of the chosen form (docs/formulas.md §2)."""
    if form == "pairwise":
        return cells.total / cells.n_pairs, ex.between_mean
    n = ct.n_values
    m = ct.item_size[cells.item].astype(np.float64)
    d_o = 2.0 * float(np.sum(cells.weight * cells.d / (m - 1.0))) / n
    d_e = 2.0 * ex.total_sum / (n * (n - 1.0))
    return d_o, d_e

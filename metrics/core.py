"""What α needs and KS/σ reuse: the observed pairs and distances of a coded table, the
chance distances, and the form's mean distances (docs/formulas.md §1–§2).

Shared by the engine, the bootstrap replicates and ``krippendorff_alpha``; it imports
neither of them, so the three depend on it and not on each other.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .distances.base import Distance, check_distances, compute_distinct, value_keys
from .expected import Expected, expected_distances
from .table import CodedTable, observed_pairs, show

__all__ = ["AlphaCore", "alpha_core"]


@dataclass
class AlphaCore:
    """What α needs and KS/σ reuse: observed pairs and distances, expected distances."""

    prepared: Any
    observed: np.ndarray
    i: np.ndarray
    j: np.ndarray
    expected: Expected
    d_o: float
    d_e: float
    alpha: float


def alpha_core(ct: CodedTable, dist: Distance, form: str, expected_pairs: int | str | None,
               rng: np.random.Generator) -> AlphaCore:
    """α of a coded table: observed distances, chance distances, and the form's means."""
    prepared = dist.prepare(ct.values)
    oi, oj = observed_pairs(ct)
    # many annotators per item: pairs far outnumber values, and repeat few value combinations
    keys = value_keys(ct.values) if oi.size >= 8 * ct.n_values else None
    try:
        do = check_distances(compute_distinct(dist, prepared, keys, oi, oj), dist.name)
    except ValueError as exc:
        raise _name_pair(exc, ct, oi, oj) from None
    ex = expected_distances(ct, dist, prepared, do, oi, oj, expected_pairs=expected_pairs, rng=rng,
                            keys=keys)
    d_o, d_e = _form_means(ct, do, oi, ex, form)
    alpha = 1.0 - d_o / d_e if d_e > 0 else math.nan
    return AlphaCore(prepared, do, oi, oj, ex, d_o, d_e, alpha)


def _form_means(ct: CodedTable, do: np.ndarray, oi: np.ndarray, ex: Expected, form: str) -> tuple[float, float]:
    """``(D̂o, D̂e)`` of the chosen form (docs/formulas.md §2)."""
    if form == "pairwise":
        return float(do.mean()), ex.between_mean
    n = ct.n_values
    m = ct.item_size[ct.item[oi]].astype(np.float64)
    d_o = 2.0 * float(np.sum(do / (m - 1.0))) / n
    d_e = 2.0 * ex.total_sum / (n * (n - 1.0))
    return d_o, d_e


def _name_pair(exc: ValueError, ct: CodedTable, oi: np.ndarray, oj: np.ndarray) -> ValueError:
    """Add the item and annotators of the offending pair to a distance error."""
    import re

    m = re.search(r"pair #(\d+)", str(exc))
    if not m:
        return exc
    k = int(m.group(1))
    return ValueError(f"{exc} (item {show(ct.item_labels[ct.item[oi[k]]])}, annotators "
                      f"{show(ct.annotator_labels[ct.annotator[oi[k]]])} and "
                      f"{show(ct.annotator_labels[ct.annotator[oj[k]]])})")

"""Numeric vectors (several numbers per annotation): binary mismatch share and RMSE.

References: paper 000 appendix ("Vectors: Binary", "Vectors: Euclidean") and its
reference data note: the Euclidean row is reproduced by the RMSE of the raw values
(the appendix prints ``1 − RMSE``, a sign slip; any positive rescaling leaves α, KS and
σ unchanged).

- ``vectors.binary``: ``1 − (1/N) Σ 1[a_i = b_i]``, the share of mismatching components.
- ``vectors.rmse``: ``sqrt((1/N) Σ (a_i − b_i)²)``, raw units (not bounded by 1).

All vectors of a batch must have the same length N. Fully vectorized.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .base import Distance
from .registry import register
from ..errors import BadInput

__all__ = ["VectorDistance"]

METHODS = ("binary", "rmse")
_CHUNK = 1 << 20  # vector components per step


class VectorDistance(Distance):
    """Binary mismatch share or RMSE of two equal-length numeric vectors.

    Parameters
    ----------
    variant : {"binary", "rmse"}
    """

    kind = "vectors"

    def __init__(self, variant: str = "rmse") -> None:
        if variant not in METHODS:
            raise BadInput(f"vector variant must be one of {METHODS}, got {variant!r}")
        self.method = variant
        self.name = f"vectors.{variant}"

    def prepare(self, values: Sequence[Any]) -> np.ndarray:
        """Stack the vectors, shape (n_values, N); errors name the offending value."""
        lengths = set()
        rows = []
        for n, v in enumerate(values):
            try:
                row = np.asarray(v, dtype=np.float64).ravel()
            except (TypeError, ValueError):
                raise BadInput(f"{self.name}: value #{n} ({v!r:.60}) is not a numeric vector") from None
            if not np.all(np.isfinite(row)):
                raise BadInput(f"{self.name}: value #{n} ({v!r:.60}) has a non-finite component")
            lengths.add(row.size)
            if len(lengths) > 1:
                raise BadInput(f"{self.name}: value #{n} has {row.size} components, others "
                                 f"{sorted(lengths - {row.size})[0]}: vectors must have one length")
            rows.append(row)
        return np.vstack(rows) if rows else np.zeros((0, 0))

    def compute(self, x: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        out = np.empty(i.size)
        step = max(1, _CHUNK // max(x.shape[1], 1))
        for lo in range(0, i.size, step):
            a, b = x[i[lo: lo + step]], x[j[lo: lo + step]]
            if x.shape[1] == 0:
                out[lo: lo + step] = 0.0
            elif self.method == "binary":
                out[lo: lo + step] = (a != b).mean(axis=1)
            else:
                out[lo: lo + step] = np.sqrt(((a - b) ** 2).mean(axis=1))
        return out


register("vectors.binary", VectorDistance("binary"), kind="vectors", candidate=True)
register("vectors.rmse", VectorDistance("rmse"), kind="vectors", candidate=True)

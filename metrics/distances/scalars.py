"""Krippendorff's four scalar levels: nominal, ordinal, interval, ratio.

Reference: K. Krippendorff, "Computing Krippendorff's Alpha-Reliability" (2011), the
difference functions δ² of its section C.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..table import factorize
from .base import Distance
from .registry import register
from ..errors import BadInput

__all__ = ["ScalarDistance", "scalar_codes", "ordinal_midranks"]


def scalar_codes(values: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values and, per value, its index among them.

    Returns
    -------
    domain : ndarray, shape (n_distinct,)
    codes : ndarray of int64, shape (n_values,)
    """
    arr = np.asarray(values)
    if arr.dtype == object:
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            arr = arr.astype(str)
    domain, codes = np.unique(arr, return_inverse=True)
    return domain, codes.astype(np.int64).ravel()


def ordinal_midranks(counts: np.ndarray) -> np.ndarray:
    """Mid-rank of each ordered category given its marginal count.

    Krippendorff's ordinal δ²(c, k) = (Σ_{g=c..k} n_g − (n_c + n_k)/2)² equals
    (M_k − M_c)² with M_v = Σ_{g<v} n_g + n_v / 2, so ordinal data is interval data
    on mid-ranks — which is what lets α be computed in O(values).
    """
    counts = np.asarray(counts, dtype=np.float64)
    return np.cumsum(counts) - counts / 2.0


class ScalarDistance(Distance):
    kind = "scalars"

    def __init__(self, level: str) -> None:
        self.level = level
        self.name = level

    def prepare(self, values: Sequence[Any]) -> np.ndarray:
        if self.level == "nominal":
            # categories need no order: hashing beats sorting on millions of values
            arr = values if isinstance(values, np.ndarray) else np.asarray(values, dtype=object)
            return factorize(arr)[0].astype(np.float64)
        if self.level == "ordinal":
            domain, codes = scalar_codes(values)
            return ordinal_midranks(np.bincount(codes, minlength=domain.size))[codes]
        arr = np.asarray(values)
        try:
            return arr.astype(np.float64)
        except (TypeError, ValueError):
            raise BadInput(f"{self.level} distance needs numbers, got {arr[:3].tolist()!r}...") from None

    def compute(self, x: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        return self.delta(x[i], x[j])

    def delta(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """δ² on prepared numbers (codes, mid-ranks or raw values)."""
        if self.level == "nominal":
            return (a != b).astype(np.float64)
        if self.level in ("ordinal", "interval"):
            return (a - b) ** 2
        s = a + b
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.where(s == 0, 0.0, (a - b) / np.where(s == 0, 1.0, s))
        return r ** 2


for _level in ("nominal", "ordinal", "interval", "ratio"):
    register(_level, ScalarDistance(_level), kind="scalars", candidate=True)

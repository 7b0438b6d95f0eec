"""Item bootstrap: resample items (not pairs), as paper 001's block bootstrap does.

Reference: Wong, Paritosh & Aroyo (2021), "Cross-replication Reliability", §5; our
measures.md §9. Resampling items keeps each item's annotations together, so the
interval reflects both annotator and item variability.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

__all__ = ["item_multiplicities", "iter_multiplicities", "percentile_interval"]


def item_multiplicities(n_items: int, n_boot: int, seed: int | np.random.Generator = 0) -> np.ndarray:
    """How often each item is drawn in each bootstrap replicate.

    Returns
    -------
    ndarray of int32, shape (n_boot, n_items); every row sums to ``n_items``.
    """
    return np.concatenate(list(iter_multiplicities(n_items, n_boot, seed)), axis=0) if n_boot else \
        np.zeros((0, n_items), dtype=np.int32)


def iter_multiplicities(n_items: int, n_boot: int, seed: int | np.random.Generator = 0,
                        chunk: int | None = None, dtype: type = np.int32) -> Iterator[np.ndarray]:
    """Like :func:`item_multiplicities`, in chunks of replicates to bound memory.

    Yields
    ------
    ndarray of ``dtype``, shape (≤ chunk, n_items)
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    if chunk is None:
        chunk = max(1, min(n_boot, 2_000_000 // max(n_items, 1)))
    done = 0
    while done < n_boot:
        b = min(chunk, n_boot - done)
        draws = rng.integers(0, n_items, size=(b, n_items))
        draws += (np.arange(b) * n_items)[:, None]
        yield np.bincount(draws.ravel(), minlength=b * n_items).reshape(b, n_items).astype(dtype, copy=False)
        done += b


def percentile_interval(samples: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of bootstrap samples, ignoring undefined (NaN) replicates.

    Returns ``(nan, nan)`` when no replicate is defined.
    """
    s = np.asarray(samples, dtype=np.float64)
    s = s[np.isfinite(s)]
    if s.size == 0:
        return (float("nan"), float("nan"))
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(s, [a, 1.0 - a])
    return (float(lo), float(hi))

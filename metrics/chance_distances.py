"""What a table's chance baseline holds: its between-item distances (:class:`Expected`) and,
where items offer answers of their own, the strata its chance pairs come from
(:class:`Strata`). Built by :mod:`.expected` and :mod:`.stratified_chance`, read by the
engine and the bootstrap.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Expected", "Strata"]


@dataclass
class Strata:
    """Where the chance pairs of a stratified baseline come from.

    Attributes
    ----------
    item_stratum : ndarray of int64, shape (n_items,)
    pair_stratum : ndarray of int64, shape (k,) — stratum of each chance pair
    n_strata : int
    unpaired : int — strata (of at least one item) without any chance pair
    """

    item_stratum: np.ndarray
    pair_stratum: np.ndarray
    n_strata: int
    unpaired: int


@dataclass
class Expected:
    """Chance distances of one table.

    Attributes
    ----------
    distances : ndarray, shape (k,) — between-item distances (distinct values when exact)
    weights : ndarray or None, shape (k,) — pair counts when tabulated exactly
    i, j : ndarray or None, shape (k,) — value rows of sampled pairs (None when tabulated)
    total_sum : float — Σ D over all unordered pairs of pairable values (within + between)
    n_between : int — number of between-item unordered pairs in the data
    between_mean : float — mean D over between-item pairs
    exact_mean : bool — total_sum/between_mean exact (not estimated from a sample)
    exact_distribution : bool — distances/weights are the full distribution
    n_pairs : int — pairs behind ``distances`` (sum of weights, or sample size)
    pooled : tuple of ndarray, shape (u,) each — the distribution as distinct distances
        and their pair counts (what KS and σ read; a crowd project's large sample of
        chance pairs holds few distinct distances)
    chance_prepared : ``dist.prepare`` of the values chance pairs compare, when they are
        not the values themselves (items offering their own answers: ``ct.options``)
    strata : the chance pairs' strata (:class:`Strata`) when items
        offering their own answers fall in several; ``weights`` then mix the strata
    """

    distances: np.ndarray
    weights: np.ndarray | None
    i: np.ndarray | None
    j: np.ndarray | None
    total_sum: float
    n_between: int
    between_mean: float
    exact_mean: bool
    exact_distribution: bool
    n_pairs: int
    pooled: tuple[np.ndarray, np.ndarray] | None = None
    chance_prepared: object = None
    strata: Strata | None = None

    def distribution(self) -> tuple[np.ndarray, np.ndarray | None]:
        """``(distances, weights)`` of the chance distribution, pooled when that is smaller."""
        return self.pooled if self.pooled is not None else (self.distances, self.weights)

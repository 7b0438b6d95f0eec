"""Sets of labels (Choices with multiple selection, Taxonomy paths): Jaccard and MASI.

References: docs/formulas.md §4; Passonneau 2006, "Measuring Agreement on Set-Valued Items
(MASI) for Semantic and Pragmatic Annotation" — equal to nltk's ``masi_distance``.

- ``sets.jaccard``: ``1 − |A ∩ B| / |A ∪ B|``.
- ``sets.masi``: ``1 − J · M`` with ``M`` = 1 if A = B, 2/3 if one contains the other,
  1/3 if they only overlap, 0 if disjoint.

Empty vs empty is 0 (nltk would divide by zero). Values may be any iterable of hashable
labels (a frozenset, list, tuple); a single string is one label. Intersections of all
pairs are computed at once on a sparse membership matrix.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .base import Distance
from ._ragged import hashable_codes, intersection_sizes, membership_matrix
from .registry import register
from ..errors import BadInput

__all__ = ["SetDistance"]

METHODS = ("jaccard", "masi")


class SetDistance(Distance):
    """Jaccard or MASI distance between two sets.

    Parameters
    ----------
    variant : {"jaccard", "masi"}
    """

    kind = "sets"

    def __init__(self, variant: str = "jaccard") -> None:
        if variant not in METHODS:
            raise BadInput(f"set variant must be one of {METHODS}, got {variant!r}")
        self.method = variant
        self.name = f"sets.{variant}"

    def prepare(self, values: Sequence[Any]) -> dict:
        sets = []
        for n, v in enumerate(values):
            if v is None:
                sets.append(frozenset())
            elif isinstance(v, (str, bytes)):
                sets.append(frozenset([v]))
            else:
                try:
                    sets.append(frozenset(v))
                except TypeError:
                    raise BadInput(f"{self.name}: value #{n} ({v!r:.60}) is not a set of hashable labels") from None
        _, labels = hashable_codes([x for s in sets for x in s])
        index = {x: k for k, x in enumerate(labels)}
        codes = [np.fromiter((index[x] for x in s), dtype=np.int64, count=len(s)) for s in sets]
        return {"m": membership_matrix(codes, len(labels)),
                "size": np.array([len(s) for s in sets], dtype=np.float64)}

    def compute(self, prep: dict, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        inter = intersection_sizes(prep["m"], i, j)
        na, nb = prep["size"][i], prep["size"][j]
        union = na + nb - inter
        with np.errstate(invalid="ignore", divide="ignore"):
            jac = np.where(union > 0, inter / np.maximum(union, 1), 1.0)
        if self.method == "masi":
            m = np.select([(na == nb) & (inter == na), inter == np.minimum(na, nb), inter > 0],
                          [1.0, 2.0 / 3.0, 1.0 / 3.0], 0.0)
            jac = jac * m
        return np.clip(1.0 - jac, 0.0, 1.0)


register("sets.jaccard", SetDistance("jaccard"), kind="sets", candidate=True)
register("sets.masi", SetDistance("masi"), kind="sets", candidate=True)

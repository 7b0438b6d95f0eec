"""Per-region answers (``perRegion`` Choices, TextArea, Rating, Number, Taxonomy, DateTime).

A value is the tuple of :class:`~ls_agreement.metrics.model.Attributed` an annotator gave
on a task: each region with the answer given to it. Two values ``A`` and ``B`` are
compared in three steps (docs/formulas.md, "Relations and per-region answers"):

1. the regions of A and B are matched one-to-one by the label-agnostic region similarity
   ``s`` of :mod:`.region_match` (the matching with the largest total ``s``, scipy's
   ``linear_sum_assignment``), so the order in which regions were drawn plays no part;
2. a matched pair ``(a, b)`` earns ``s(a, b) · (1 − d(a.value, b.value))``, ``d`` the
   answer's own distance in [0, 1];
3. ``D(A, B) = 1 − Σ_matched s·(1 − d) / max(|A|, |B|)``: every region left unmatched
   counts as a full disagreement — OSPA's padding (Schuhmacher et al. 2008) with cut-off
   1 and order 1. Empty vs empty is 0, empty vs non-empty 1.

The answer's distance ``d``, by registry name:

- ``attributes.nominal``: 0 for equal answers, else 1 (single Choices);
- ``attributes.jaccard`` / ``attributes.masi``: the set distances of :mod:`.sets`
  (multiple Choices, Taxonomy);
- ``attributes.levenshtein`` / ``attributes.chars``: the normalised token / character
  edit distances of :mod:`.text` (TextArea);
- ``attributes.interval``: ``|x − y| / (max − min)`` over every answer of the batch
  (Rating, Number, DateTime): the interval difference scaled into [0, 1].
"""
from __future__ import annotations

from typing import Any, Literal, Sequence

import numpy as np

from ..model import Attributed
from ._ragged import cross_layout, hashable_codes, pair_chunks
from .base import Distance
from .region_match import RegionIndex, match
from .registry import get_distance, register
from ..errors import BadInput

__all__ = ["AttributeDistance", "ATTRIBUTE_DISTANCES", "flatten_attributed"]

AttributeName = Literal["nominal", "jaccard", "masi", "levenshtein", "chars", "interval"]
#: answer distance -> the registered distance it delegates to (None: computed here)
ATTRIBUTE_DISTANCES: dict[str, str | None] = {
    "nominal": None, "jaccard": "sets.jaccard", "masi": "sets.masi",
    "levenshtein": "text.levenshtein", "chars": "text.chars", "interval": None,
}


def flatten_attributed(values: Sequence[Any], what: str) -> tuple[list, list, np.ndarray]:
    """The regions and answers of every value, flat, and each value's count.

    Returns
    -------
    regions, answers : list, length n_objects
    counts : ndarray of int64, shape (n_values,)

    Raises
    ------
    ValueError
        Naming the value (position in the batch) that is not a sequence of Attributed.
    """
    regions: list = []
    answers: list = []
    counts = np.zeros(len(values), dtype=np.int64)
    for v, value in enumerate(values):
        if value is None:
            continue
        if not isinstance(value, (tuple, list)):
            raise BadInput(f"{what}: value #{v} is {type(value).__name__}, expected a sequence of Attributed")
        for k, item in enumerate(value):
            if not isinstance(item, Attributed):
                raise BadInput(f"{what}: value #{v}, object #{k} is {type(item).__name__} "
                                 f"({item!r:.60}), expected Attributed")
            regions.append(item.region)
            answers.append(item.value)
        counts[v] = len(value)
    return regions, answers, counts


class AttributeDistance(Distance):
    """Distance between two sets of per-region answers (see the module docstring).

    Parameters
    ----------
    answer : {"nominal", "jaccard", "masi", "levenshtein", "chars", "interval"}
        The distance between two answers.
    """

    kind = "attributes"

    def __init__(self, answer: AttributeName = "nominal") -> None:
        if answer not in ATTRIBUTE_DISTANCES:
            raise BadInput(f"answer distance must be one of {sorted(ATTRIBUTE_DISTANCES)}, got {answer!r}")
        self.answer = answer
        self.name = f"attributes.{answer}"

    def prepare(self, values: Sequence[Any]) -> dict:
        regions, answers, counts = flatten_attributed(values, self.name)
        value_of = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
        prep: dict = {"counts": counts, "starts": np.cumsum(counts) - counts,
                      "regions": RegionIndex(regions, value_of)}
        delegate = ATTRIBUTE_DISTANCES[self.answer]
        if delegate is not None:
            dist = get_distance(delegate)
            if self.answer in ("jaccard", "masi"):
                # a single answer compared with a set of answers is the set holding it
                answers = [a if isinstance(a, frozenset) else frozenset((a,)) for a in answers]
            prep["answer"] = (dist, dist.prepare(answers))
        elif self.answer == "nominal":
            prep["codes"] = hashable_codes(answers)[0]
        else:
            x = self._numbers(answers)
            span = float(x.max() - x.min()) if x.size else 0.0
            prep["x"] = x / span if span > 0 else np.zeros_like(x)
        return prep

    def _numbers(self, answers: list) -> np.ndarray:
        try:
            x = np.asarray(answers, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise BadInput(f"{self.name} needs numeric answers, got {answers[:3]!r}...") from None
        if not np.isfinite(x).all():
            raise BadInput(f"{self.name} needs finite answers")
        return x

    def answer_distances(self, prep: dict, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Distance between the answers of objects ``a[k]`` and ``b[k]``, shape (n,), in [0, 1]."""
        if "answer" in prep:
            dist, prepared = prep["answer"]
            return np.clip(np.asarray(dist.compute(prepared, a, b), dtype=np.float64), 0.0, 1.0)
        if "codes" in prep:
            return (prep["codes"][a] != prep["codes"][b]).astype(np.float64)
        return np.abs(prep["x"][a] - prep["x"][b])

    def compute(self, prep: dict, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        counts, starts = prep["counts"], prep["starts"]
        na, nb = counts[i], counts[j]
        out = np.where((na == 0) & (nb == 0), 0.0, 1.0)
        both = np.flatnonzero((na > 0) & (nb > 0))
        if both.size == 0:
            return out
        ii, jj = i[both], j[both]
        ca, cb = na[both], nb[both]
        credit = np.empty(both.size)
        for sl in pair_chunks(ca * cb):
            lay = cross_layout(starts[ii[sl]], ca[sl], starts[jj[sl]], cb[sl])
            sim = prep["regions"].pairs(lay.a, lay.b)
            earned = sim * (1.0 - self.answer_distances(prep, lay.a, lay.b))
            got = np.empty(lay.na.size)
            for p in range(lay.na.size):
                lo, n_a, n_b = lay.offsets[p], lay.na[p], lay.nb[p]
                r, c = match(sim[lo: lo + n_a * n_b].reshape(n_a, n_b))
                got[p] = earned[lo: lo + n_a * n_b].reshape(n_a, n_b)[r, c].sum()
            credit[sl] = got
        out[both] = 1.0 - credit / np.maximum(ca, cb)
        return np.clip(out, 0.0, 1.0)


for _answer in ATTRIBUTE_DISTANCES:
    register(f"attributes.{_answer}", AttributeDistance(_answer), kind="attributes", candidate=True)

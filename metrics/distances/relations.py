"""Relations between regions (Label Studio's ``Relations``): sets of (from, to, label).

A value is the tuple of :class:`~ls_agreement.metrics.model.Relation` an annotator drew on
a task. Two values ``A`` and ``B`` are compared after deciding which region of one is
which region of the other (docs/formulas.md, "Relations and per-region answers"):

1. the regions the relations of A connect (each once) are matched one-to-one with those
   of B by the label-agnostic region similarity ``s`` of :mod:`.region_match`, the
   matching with the largest total ``s`` (scipy's ``linear_sum_assignment``); only the
   regions of relations take part, so a region nobody related cannot steal a match;
2. each relation of A becomes a triple (matched from, matched to, label) in B's regions;
   an undirected relation (``direction="bi"``) is the same triple both ways round;
3. the two sets of triples are compared:

- ``relations.jaccard``: a matched pair of regions counts when ``s ≥ 0.5`` (the usual IoU
  threshold of detection benchmarks, PASCAL VOC); ``D = 1 − |A ∩ B| / |A ∪ B|``;
- ``relations.masi``: the same matching, ``D = 1 − J · M`` with Passonneau's (2006)
  monotonicity ``M`` (1 equal sets, 2/3 one inside the other, 1/3 overlapping, 0 disjoint),
  as :mod:`.sets`;
- ``relations.soft``: every matched pair with ``s > 0`` counts, a shared triple weighing
  ``s(from) · s(to)``: ``D = 1 − w / (|A| + |B| − w)`` with ``w`` the summed weights — the
  relation is as credible as the overlap of both its ends.

Empty vs empty is 0 (neither annotator related anything), empty vs non-empty 1.
"""
from __future__ import annotations

from typing import Any, Literal, Sequence

import numpy as np

from ..model import Relation
from ._ragged import cross_layout, hashable_codes, pair_chunks
from .base import Distance
from .region_match import RegionIndex, match
from .registry import register
from ..errors import BadInput

__all__ = ["RelationDistance", "VARIANTS", "MATCH_THRESHOLD"]

VARIANTS = ("jaccard", "masi", "soft")
#: region similarity from which two regions are the same region (jaccard, masi)
MATCH_THRESHOLD = 0.5


def _flatten(values: Sequence[Any], what: str) -> tuple[list, np.ndarray, list]:
    """Distinct endpoint regions of each value, flat; the triples of each value on them.

    Returns
    -------
    regions : list, length n_objects — value after value
    counts : ndarray of int64, shape (n_values,) — endpoint regions per value
    triples : list, length n_values, of list of (from, to, label, directed)
        ``from``/``to`` index the value's own regions; an undirected triple has from <= to.
    """
    regions: list = []
    counts = np.zeros(len(values), dtype=np.int64)
    triples: list = []
    for v, value in enumerate(values):
        own: dict = {}
        mine: set = set()
        if value is not None:
            if not isinstance(value, (tuple, list)):
                raise BadInput(f"{what}: value #{v} is {type(value).__name__}, expected a sequence of Relation")
            for k, rel in enumerate(value):
                if not isinstance(rel, Relation):
                    raise BadInput(f"{what}: value #{v}, object #{k} is {type(rel).__name__} "
                                     f"({rel!r:.60}), expected Relation")
                f = own.setdefault(rel.source, len(own))
                t = own.setdefault(rel.target, len(own))
                mine.add(_key(f, t, rel.label, bool(rel.directed)))
        regions.extend(own)
        counts[v] = len(own)
        triples.append(list(mine))
    return regions, counts, triples


def _key(f: int, t: int, label: Any, directed: bool) -> tuple:
    if not directed and t < f:
        f, t = t, f
    return (f, t, label, directed)


class RelationDistance(Distance):
    """Distance between two sets of relations (see the module docstring).

    Parameters
    ----------
    variant : {"jaccard", "masi", "soft"}
    threshold : float
        Region similarity from which two regions match (jaccard, masi).
    """

    kind = "relations"

    def __init__(self, variant: Literal["jaccard", "masi", "soft"] = "jaccard",
                 threshold: float = MATCH_THRESHOLD) -> None:
        if variant not in VARIANTS:
            raise BadInput(f"relations variant must be one of {VARIANTS}, got {variant!r}")
        if not 0.0 < threshold <= 1.0:
            raise BadInput(f"threshold must be in (0, 1], got {threshold!r}")
        self.variant = variant
        self.threshold = float(threshold)
        self.name = f"relations.{variant}"

    def prepare(self, values: Sequence[Any]) -> dict:
        regions, counts, triples = _flatten(values, self.name)
        value_of = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
        # labels as small ints: cheap hashing of the triples compared pair after pair
        labels = [t[2] for ts in triples for t in ts]
        codes = iter(hashable_codes(labels)[0].tolist()) if labels else iter(())
        coded = [[(f, t, next(codes), d) for f, t, _, d in ts] for ts in triples]
        return {"counts": counts, "starts": np.cumsum(counts) - counts, "triples": coded,
                "regions": RegionIndex(regions, value_of)}

    def compute(self, prep: dict, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        triples = prep["triples"]
        n_rel = np.fromiter((len(t) for t in triples), dtype=np.int64, count=len(triples))
        ta, tb = n_rel[i], n_rel[j]
        out = np.where((ta == 0) & (tb == 0), 0.0, 1.0)
        both = np.flatnonzero((ta > 0) & (tb > 0))
        if both.size == 0:
            return out
        ii, jj = i[both], j[both]
        ca, cb = prep["counts"][ii], prep["counts"][jj]
        res = np.empty(both.size)
        for sl in pair_chunks(ca * cb):
            lay = cross_layout(prep["starts"][ii[sl]], ca[sl], prep["starts"][jj[sl]], cb[sl])
            sim = prep["regions"].pairs(lay.a, lay.b)
            for p, (vi, vj) in enumerate(zip(ii[sl].tolist(), jj[sl].tolist())):
                lo, n_a, n_b = lay.offsets[p], lay.na[p], lay.nb[p]
                block = sim[lo: lo + n_a * n_b].reshape(n_a, n_b)
                res[sl.start + p] = self._pair(block, triples[vi], triples[vj])
        out[both] = res
        return np.clip(out, 0.0, 1.0)

    def _pair(self, sim: np.ndarray, a: list, b: list) -> float:
        """Distance of two non-empty triple sets, ``sim`` the similarity of their regions."""
        r, c = match(sim)
        s = sim[r, c]
        keep = s >= self.threshold if self.variant != "soft" else s > 0.0
        to_b = dict(zip(r[keep].tolist(), c[keep].tolist()))
        weight = dict(zip(r[keep].tolist(), s[keep].tolist()))
        in_b = set(b)
        shared = 0.0
        for f, t, lab, d in a:
            if f in to_b and t in to_b and _key(to_b[f], to_b[t], lab, d) in in_b:
                shared += 1.0 if self.variant != "soft" else weight[f] * weight[t]
        union = len(a) + len(b) - shared
        jac = shared / union if union > 0 else 1.0
        if self.variant != "masi" or jac in (0.0, 1.0):
            return 1.0 - jac
        # shared < both sizes: overlapping; shared == the smaller size: one inside the other
        m = 2.0 / 3.0 if shared >= min(len(a), len(b)) else 1.0 / 3.0
        return 1.0 - jac * m


for _variant in VARIANTS:
    register(f"relations.{_variant}", RelationDistance(_variant), kind="relations", candidate=True)

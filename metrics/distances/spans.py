"""Text spans (Labels on Text/HyperText): the NER distances of paper 000.

References: paper 000 appendix ("NER: single to multi", "both lenient", "strict tag",
"strict range", "both strict"); docs/formulas.md §4. All forms are ``D = 1 − F1(P, R)`` with
``F1 = 2PR / (P + R)`` (0 when P = R = 0):

- ``spans.lenient`` (both lenient): ``P`` = mean over spans of A of the share of their
  units covered by any span of B, ``R`` the same from B to A; tags ignored.
- ``spans.lenient_range`` (paper's "strict tag"): the same, a unit counting only when
  covered by a span of B with the same tag.
- ``spans.lenient_tag`` (paper's "strict range"): ``F1`` over the *sets* of exact
  ``(start, end)``; tags ignored.
- ``spans.strict`` (both strict, CoNLL): ``F1`` over the sets of exact ``(start, end, tag)``.
- ``spans.count``: ``||A| − |B||``.

Units are whatever the spans' offsets count: token offsets give paper 000's token units;
Label Studio's character offsets are turned into token offsets with
:func:`ls_agreement.metrics.tokens.char_spans_to_tokens` (given the task text) before
computing — the report does this for Labels on Text. Empty vs empty is 0, empty
vs non-empty 1; zero-length spans mark nothing and are ignored. All pairs are computed
vectorized.
"""
from __future__ import annotations

from itertools import chain, compress
from operator import attrgetter
from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp

from ..model import Span
from .base import Distance
from ._ragged import cross_layout, hashable_codes, intersection_sizes, pair_chunks
from .multi_object import CountDistance, PackedObjects, flatten_regions
from .registry import register
from ..errors import BadInput

__all__ = ["SpanDistance", "MODES"]

MODES = ("lenient", "lenient_range", "lenient_tag", "strict")

_START, _END = attrgetter("start"), attrgetter("end")


def _merged_coverage(value_of: np.ndarray, labels: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                     n_values: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The union of each (value, label) group of spans as disjoint sorted intervals, every
    group at once (a crowd control has thousands of values: one sort, no loop over them).

    Parameters
    ----------
    value_of, labels, starts, ends : ndarray of int64, shape (n,)
        Each span's value, label code and bounds.
    n_values : int

    Returns
    -------
    mstart, mend, mlabel : ndarray of int64, shape (k,)
        The disjoint intervals, by value, then label, then start.
    mcount : ndarray of int64, shape (n_values,) — intervals per value
    """
    if starts.size == 0:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty, np.zeros(n_values, dtype=np.int64)
    o = np.lexsort((starts, labels, value_of))  # stable: equal starts keep their order
    v, lab, s, e = value_of[o], labels[o], starts[o], ends[o]
    first = np.ones(v.size, dtype=bool)
    first[1:] = (v[1:] != v[:-1]) | (lab[1:] != lab[:-1])
    group = np.cumsum(first) - 1
    # running maximum of the ends within each group: lift each group above all ends before it
    low = int(e.min())
    lift = int(e.max()) - low + 1
    if lift * int(group[-1] + 1) < 2 ** 62:
        reach = np.maximum.accumulate(group * lift + (e - low)) - group * lift + low
    else:  # offsets too large to lift: group by group
        reach = np.concatenate([np.maximum.accumulate(e[a:b]) for a, b in
                                zip(np.flatnonzero(first), [*np.flatnonzero(first)[1:], e.size])])
    new = first.copy()
    new[1:] |= s[1:] > reach[:-1]
    cut = np.flatnonzero(new)
    return s[cut], np.maximum.reduceat(reach, cut), lab[cut], np.bincount(v[cut], minlength=n_values)


def _packed_spans(values: Sequence[Any], what: str) -> tuple[PackedObjects, np.ndarray, np.ndarray]:
    """Every value's spans, flat, without the zero-length ones (they mark no unit: else 0/0
    shares in the lenient modes), and their bounds.

    A crowd control has tens of thousands of values of a few spans each: when every value is
    a tuple of Span (the adapters' values), the spans are read once, at C speed
    (``attrgetter``), and the zero-length ones dropped with one mask; anything else takes
    the general path, which names the value that is not a sequence of Span.

    Returns
    -------
    packed : PackedObjects
    start, end : ndarray of int64, shape (n_spans,)
    """
    if not set(map(type, values)) - {tuple}:
        objs = list(chain.from_iterable(values))
        if not set(map(type, objs)) - {Span}:
            n = len(objs)
            start = np.fromiter(map(_START, objs), dtype=np.int64, count=n)
            end = np.fromiter(map(_END, objs), dtype=np.int64, count=n)
            counts = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
            empty = end <= start
            if empty.any():
                keep = ~empty
                counts = counts - np.bincount(np.repeat(np.arange(counts.size), counts)[empty],
                                              minlength=counts.size)
                objs = list(compress(objs, keep.tolist()))
                start, end = start[keep], end[keep]
            return PackedObjects(objs, counts), start, end
    values = [tuple(sp for sp in v if not (isinstance(sp, Span) and sp.end <= sp.start))
              if isinstance(v, (tuple, list)) else v for v in values]
    packed = flatten_regions(values, Span, what)
    objs = packed.objects
    n = len(objs)
    start = np.fromiter((o.start for o in objs), dtype=np.int64, count=n)
    end = np.fromiter((o.end for o in objs), dtype=np.int64, count=n)
    return packed, start, end


class SpanDistance(Distance):
    """Distance between two sets of spans (see module doc for the modes).

    Parameters
    ----------
    variant : {"lenient", "lenient_range", "lenient_tag", "strict"}
    """

    kind = "spans"

    def __init__(self, variant: str = "lenient") -> None:
        if variant not in MODES:
            raise BadInput(f"span variant must be one of {MODES}, got {variant!r}")
        self.mode = variant
        self.name = f"spans.{variant}"

    def prepare(self, values: Sequence[Any]) -> dict:
        packed, start, end = _packed_spans(values, self.name)
        objs = packed.objects
        prep = {"counts": packed.counts}
        if self.mode in ("lenient_tag", "strict"):
            tagged = self.mode == "strict"
            bounds = zip(start.tolist(), end.tolist())
            keys = [(s, e, o.label) for (s, e), o in zip(bounds, objs)] if tagged else list(bounds)
            codes, distinct = hashable_codes(keys)
            # each value's distinct codes, ascending: one sort of (value, code) for all values
            # (a crowd control has thousands of values; np.unique per value cost ~10 µs each)
            width = max(len(distinct), 1)
            owner, code = np.divmod(np.unique(packed.value_of * width + codes), width)
            sizes = np.bincount(owner, minlength=packed.counts.size)
            prep["sizes"] = sizes.astype(np.float64)
            prep["members"] = sp.csr_matrix((np.ones(code.size), code, np.concatenate(([0], np.cumsum(sizes)))),
                                            shape=(packed.counts.size, width))
            return prep
        tagged = self.mode == "lenient_range"
        labels = packed.labels if tagged else np.zeros(len(objs), dtype=np.int64)
        # Disjoint coverage of each value (per tag when tags count), so a unit covered by
        # two overlapping spans of B is counted once.
        ms, me, ml, mcount = _merged_coverage(packed.value_of, labels, start, end, packed.counts.size)
        prep.update(start=start, end=end, label=labels, starts=packed.starts,
                    mstart=ms, mend=me, mlabel=ml, mcounts=mcount, mstarts=np.cumsum(mcount) - mcount)
        return prep

    def compute(self, prep: dict, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        na, nb = prep["counts"][i], prep["counts"][j]
        out = np.where((na == 0) & (nb == 0), 0.0, 1.0)
        both = np.flatnonzero((na > 0) & (nb > 0))
        if both.size == 0:
            return out
        ii, jj = i[both], j[both]
        if "members" in prep:
            inter = intersection_sizes(prep["members"], ii, jj)
            f1 = 2.0 * inter / (prep["sizes"][ii] + prep["sizes"][jj])
        else:
            p = self._coverage(prep, ii, jj)
            r = self._coverage(prep, jj, ii)
            with np.errstate(invalid="ignore", divide="ignore"):
                f1 = np.where(p + r > 0, 2.0 * p * r / (p + r), 0.0)
        out[both] = 1.0 - f1
        return np.clip(out, 0.0, 1.0)

    @staticmethod
    def _coverage(prep: dict, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Mean share of each span of value i covered by value j's spans, shape (n_pairs,)."""
        na, nb = prep["counts"][i], prep["mcounts"][j]
        out = np.empty(i.size)
        for sl in pair_chunks(na * nb):
            lay = cross_layout(prep["starts"][i[sl]], na[sl], prep["mstarts"][j[sl]], nb[sl])
            a, b = lay.a, lay.b
            sa, ea, sb, eb = prep["start"][a], prep["end"][a], prep["mstart"][b], prep["mend"][b]
            ov = np.clip(np.minimum(ea, eb) - np.maximum(sa, sb), 0, None).astype(np.float64)
            # A zero-length span is covered when it lies inside a span of the other side.
            point = (ea == sa) & (sb <= sa) & ((sa < eb) | (sb == eb))
            ov = np.where(ea == sa, point.astype(np.float64), ov)
            ov *= prep["label"][a] == prep["mlabel"][b]
            # Merged spans are disjoint, so summing the overlaps over B counts each unit once.
            pair = np.repeat(np.arange(na[sl].size), na[sl])
            local = np.arange(pair.size) - np.repeat(np.cumsum(na[sl]) - na[sl], na[sl])
            covered = np.add.reduceat(ov, lay.offsets[pair] + local * nb[sl][pair])
            span_idx = prep["starts"][i[sl]][pair] + local
            share = covered / np.maximum(prep["end"] - prep["start"], 1)[span_idx]
            out[sl] = np.bincount(pair, weights=share, minlength=na[sl].size) / na[sl]
        return out


for _mode in MODES:
    register(f"spans.{_mode}", SpanDistance(_mode), kind="spans", candidate=True)
register("spans.count", CountDistance("spans", Span), kind="spans")

"""What kind of disagreement: localization, label or missed/extra regions (docs/formulas.md §11).

For every item and every pair of annotators on it, the two annotators' regions (boxes,
polygons, spans or 1-d intervals) are matched one to one by overlap: Hungarian assignment maximizing
the summed IoU (``scipy.optimize.linear_sum_assignment``; labels ignored, ties broken
towards the same label), and only pairs that overlap (IoU > 0) count as matched. Then
each matched pair is

* ``agreed``       IoU ≥ threshold and the same label,
* ``label``        IoU ≥ threshold, different labels,
* ``localization`` IoU < threshold, the same label (for spans: *boundary*, different
  start or end),
* ``both``         IoU < threshold and different labels,

and a region without a match is ``extra`` for its annotator and ``missed`` for the other.
Spans compare exact boundaries (threshold 1: any boundary difference is a boundary
error); boxes and polygons default to IoU 0.5 (PASCAL VOC's and TIDE's foreground cut,
Bolya et al. 2020, whose error classes these follow). Zero-length spans mark nothing and
are ignored, as in the span distances. Intervals score by the similarity of
``intervals.overlap`` (1-d IoU; an instant by its distance to the other region, relative
to the tolerance τ) with the boxes' threshold 0.5.

An annotator's *disagreement* is their localization + label + both + missed + extra
counts over all their pairs; the shares say which kind dominates. A control's counts take
each pair once (``unmatched`` = regions without a match on either side).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Literal, Sequence

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment

from .distances._ragged import cross_layout, pair_chunks
from .distances.base import value_keys
from .distances.multi_object import flatten_regions
from .model import Box, Interval, Polygon, Span
from .result import Result, finite_or_none
from .distances.registry import canonical_kind
from .table import CodedTable, Duplicates, code_table, observed_pairs, tabular
from .errors import BadInput

__all__ = ["ErrorTypesResult", "error_types", "pair_error_counts", "RegionSet", "CATEGORIES",
           "RegionKind"]

RegionKind = Literal["boxes", "polygons", "spans", "intervals"]
#: The disagreement categories of one annotator, in report order.
CATEGORIES = ("localization", "label", "both", "missed", "extra")
_TYPES = {"boxes": Box, "polygons": Polygon, "spans": Span, "intervals": Interval}
# a tiny bonus for the same label: among equally overlapping regions, the same label matches
_SAME_LABEL_TIE = 1e-9
# pool pairs by (item, value pair) only when pairs outnumber values this many times (as metrics/cells.py)
_POOL_MIN_PAIRS_PER_VALUE = 8


@dataclass(frozen=True)
class ErrorTypesResult(Result):
    """Error types of one table (:func:`error_types`).

    Attributes
    ----------
    pairs : DataFrame, one row per (item, annotator pair), shape (n_pairs, 9)
        Property: ``item``, ``annotator_a``, ``annotator_b``, ``agreed``, ``localization``,
        ``label``, ``both``, ``unmatched_a`` (regions of a without a match), ``unmatched_b``.
        Listed pair by pair only when read (a crowd item has ``m(m−1)/2`` of them).
    annotators : DataFrame, index annotator
        ``agreed``, ``localization``, ``label``, ``both``, ``missed``, ``extra`` (counts over
        their pairs), ``disagreement`` (their sum but ``agreed``), ``share_<category>`` for
        each of :data:`CATEGORIES` (NaN without disagreement), ``n_pairs``.
    overall : dict
        Counts over all pairs, each once: ``agreed``, ``localization``, ``label``,
        ``both``, ``unmatched``, ``disagreement``, and ``share_<category>``.
    kind : {"boxes", "polygons", "spans", "intervals"}
    threshold : float
    """

    ESTIMATE: ClassVar[str | None] = None

    annotators: pd.DataFrame
    overall: dict[str, float]
    kind: str
    threshold: float
    # builds the per-pair table on demand: millions of rows for one crowd item
    _pairs_of: Callable[[], pd.DataFrame] | None = field(default=None, repr=False, compare=False)

    @property
    def pairs(self) -> pd.DataFrame:
        """Every (item, annotator pair) with its counts, shape (n_pairs, 9) (see the class docstring)."""
        return self._pairs_of()

    def to_dict(self) -> dict[str, Any]:
        """Strict-JSON dict: ``overall``, ``annotators: {id: {column: value}}``, kind, threshold."""
        rows = {str(a): {c: _plain(v) for c, v in rec.items()}
                for a, rec in self.annotators.to_dict("index").items()}
        return {"overall": {k: _plain(v) for k, v in self.overall.items()}, "annotators": rows,
                "kind": self.kind, "threshold": float(self.threshold)}


def _plain(v: Any) -> Any:
    return int(v) if isinstance(v, (int, np.integer)) else finite_or_none(v)


@tabular()
def error_types(table: pd.DataFrame, *, kind: RegionKind | None = None,
                threshold: float | None = None, duplicates: Duplicates = "error") -> ErrorTypesResult:
    """Localization, label and missed/extra errors per annotator (module docstring).

    Parameters
    ----------
    table : DataFrame with columns item, annotator, value, shape (n_rows, 3)
        One row per annotator per item; a value is a sequence of :class:`Box`,
        :class:`Polygon`, :class:`Span` or :class:`Interval` (possibly empty).
    kind : {"boxes", "polygons", "spans", "intervals"}, optional
        Default: from the first region found; the singular names (``"box"``, ...) are read
        as the plural, as everywhere a kind is passed in.
    threshold : float, optional
        IoU below which a matched pair is a localization error; default 0.5 for boxes,
        polygons and intervals, 1 (exact boundaries) for spans.

    Returns
    -------
    ErrorTypesResult

    Raises
    ------
    ValueError
        A malformed table, values that are not regions of ``kind``, a threshold outside
        (0, 1].
    """
    ct = code_table(table, duplicates)
    kind, threshold, values, packed, iou = _regions(list(ct.values), kind, threshold)
    pooled = _value_groups(ct, values)
    if pooled is not None:
        return _pooled_result(ct, packed, iou, float(threshold), kind, pooled)
    i, j = observed_pairs(ct)
    counts, un_a, un_b = _pair_counts(packed, iou, float(threshold), i, j)
    annotators = _per_annotator(ct.annotator[i], ct.annotator[j], counts, un_a, un_b, ct.annotator_labels)
    total = counts.sum(axis=0)
    return ErrorTypesResult(annotators=annotators, overall=_overall(total, int(un_a.sum() + un_b.sum())),
                            kind=kind, threshold=float(threshold),
                            _pairs_of=lambda: _pair_frame(ct, i, j, counts, un_a, un_b))


def _regions(values: list, kind: str | None, threshold: float | None
             ) -> tuple[str, float, list, Any, Callable[[np.ndarray, np.ndarray], np.ndarray]]:
    """The kind and threshold resolved and checked, the values as measured (spans without
    their empty ones), their regions packed, their IoU."""
    if kind is not None:
        kind = canonical_kind(kind)
    if kind is None:
        first = next((r for v in values for r in (v or ())), None)
        kind = next((k for k, t in _TYPES.items() if isinstance(first, t)), "boxes")
    if kind not in _TYPES:
        raise BadInput(f"kind must be one of {tuple(_TYPES)}, got {kind!r}")
    if threshold is None:
        threshold = 1.0 if kind == "spans" else 0.5
    if not 0.0 < threshold <= 1.0:
        raise BadInput(f"threshold must be in (0, 1], got {threshold!r}")
    if kind == "spans":
        # zero-length spans mark no unit (as in the span distances)
        values = [tuple(s for s in v if isinstance(s, Span) and s.end > s.start)
                  if isinstance(v, (tuple, list)) else v for v in values]
    packed = flatten_regions(values, _TYPES[kind], f"error_types ({kind})")
    return kind, float(threshold), values, packed, _iou_function(kind, packed)


def pair_error_counts(a: Sequence[Any], b: Sequence[Any], *, kind: RegionKind | None = None,
                      threshold: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The error classes of aligned value pairs ``(a[k], b[k])``, without a table: what
    :func:`error_types` counts for each pair of a table, for pairs already chosen (an answer
    and its task's consensus, on the live path one task at a time).

    Parameters
    ----------
    a, b : sequences of region lists, length n each
    kind, threshold
        As in :func:`error_types`.

    Returns
    -------
    counts : ndarray of int64, shape (n, 4)
        Matched region pairs per category: agreed, localization, label, both.
    missed, extra : ndarray of int64, shape (n,)
        Regions of ``a[k]`` / ``b[k]`` without a match.
    """
    if len(a) != len(b):
        raise BadInput(f"pair_error_counts: {len(a)} values against {len(b)}")
    n = len(a)
    _, threshold, _, packed, iou = _regions([v for pair in zip(a, b) for v in pair], kind, threshold)
    i = np.arange(0, 2 * n, 2, dtype=np.int64)
    return _pair_counts(packed, iou, threshold, i, i + 1)


class RegionSet:
    """The regions of a list of values packed once, for the error classes of any pairs of
    them (a control's answers against their consensus, compared again after each fit).

    Parameters
    ----------
    values : sequence of region lists, length n
    kind
        As in :func:`error_types`.
    """

    def __init__(self, values: Sequence[Any], kind: RegionKind | None = None) -> None:
        if len(values):
            _, self._threshold, _, self._packed, self._iou = _regions(list(values), kind, None)

    def compare(self, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """For the value pairs ``(values[i[k]], values[j[k]])``, shapes (len(i),): the regions
        of ``values[j[k]]`` matched to one of ``values[i[k]]`` but placed elsewhere (IoU
        under the threshold: *localization* or *both*), those matched, the regions of
        ``values[i[k]]`` that ``values[j[k]]`` leaves out (no match), and the regions of
        ``values[i[k]]``."""
        if i.size == 0:
            return np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0)
        counts, left_out, _ = _pair_counts(self._packed, self._iou, self._threshold, i, j)
        return ((counts[:, 1] + counts[:, 3]).astype(float), counts.sum(axis=1).astype(float),
                left_out.astype(float), self._packed.counts[i].astype(float))


def _pair_counts(packed: Any, iou: Callable[[np.ndarray, np.ndarray], np.ndarray], threshold: float,
                 i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Match the regions of the value pairs ``(i[k], j[k])`` (value rows, shape (n,) each).

    Returns
    -------
    counts : ndarray of int64, shape (n, 4)
        Matched region pairs per category: agreed, localization, label, both.
    un_a, un_b : ndarray of int64, shape (n,)
        Regions of ``i[k]`` / ``j[k]`` without a match.
    """
    na, nb = packed.counts[i], packed.counts[j]
    counts = np.zeros((i.size, 4), dtype=np.int64)    # agreed, localization, label, both
    matched = np.zeros(i.size, dtype=np.int64)
    both_sides = np.flatnonzero((na > 0) & (nb > 0))
    # a block of value pairs at a time: the object pairs of a big project's every value pair
    # (16 M spans at 100,000 tasks) never laid out at once; each value pair's matching is its own
    for sl in pair_chunks(na[both_sides] * nb[both_sides]):
        rows = both_sides[sl]
        lay = cross_layout(packed.starts[i[rows]], na[rows], packed.starts[j[rows]], nb[rows])
        s = iou(lay.a, lay.b)
        same = packed.labels[lay.a] == packed.labels[lay.b]
        chosen = _match(np.where(s > 0, s + _SAME_LABEL_TIE * same, 0.0), lay)
        good = s[chosen] >= threshold - 1e-12
        cat = np.where(good, np.where(same[chosen], 0, 2), np.where(same[chosen], 1, 3))
        np.add.at(counts, (rows[lay.pair[chosen]], cat), 1)
    if both_sides.size:
        matched = counts.sum(axis=1)
    return counts, na - matched, nb - matched


def _overall(total: np.ndarray, unmatched: int) -> dict[str, float]:
    """The control's counts from the category totals, shape (4,), and the unmatched regions."""
    overall: dict[str, float] = {"agreed": int(total[0]), "localization": int(total[1]), "label": int(total[2]),
                                 "both": int(total[3]), "unmatched": int(unmatched)}
    dis = overall["localization"] + overall["label"] + overall["both"] + overall["unmatched"]
    overall["disagreement"] = int(dis)
    for c in ("localization", "label", "both", "unmatched"):
        overall[f"share_{c}"] = overall[c] / dis if dis else float("nan")
    return overall


def _pair_frame(ct: CodedTable, i: np.ndarray, j: np.ndarray, counts: np.ndarray, un_a: np.ndarray,
                un_b: np.ndarray) -> pd.DataFrame:
    """The per-pair table of :attr:`ErrorTypesResult.pairs` (pairs ``(i, j)``, shape (n_pairs,) each)."""
    return pd.DataFrame({
        "item": ct.item_labels[ct.item[i]], "annotator_a": ct.annotator_labels[ct.annotator[i]],
        "annotator_b": ct.annotator_labels[ct.annotator[j]], "agreed": counts[:, 0],
        "localization": counts[:, 1], "label": counts[:, 2], "both": counts[:, 3],
        "unmatched_a": un_a, "unmatched_b": un_b})


@dataclass
class _Groups:
    """Value rows grouped by (item, equal value), for the pooled form.

    Attributes
    ----------
    group : ndarray of int64, shape (n_values,) — global group of each row
    rep : ndarray of int64, shape (n_groups,) — one row of each group
    count : ndarray of int64, shape (n_groups,) — rows per group
    start : ndarray of int64, shape (n_groups,) — where the group's rows begin in ``rows``
    rows : ndarray of int64, shape (n_values,) — rows ordered by group, then row
    item_first, n_groups : ndarray of int64, shape (n_items,) — each item's groups are
        ``item_first[u] : item_first[u] + n_groups[u]``
    """

    group: np.ndarray
    rep: np.ndarray
    count: np.ndarray
    start: np.ndarray
    rows: np.ndarray
    item_first: np.ndarray
    n_groups: np.ndarray


def _value_groups(ct: CodedTable, values: list) -> _Groups | None:
    """Rows grouped by (item, equal value) when that pays: the ordered pairs of groups and the
    (row, group of its item) sides must be far fewer than the pairs of rows (a crowd item:
    many annotators, few distinct answers). None otherwise.

    Equal values (``==`` of their regions: geometry and label, a span's text aside) match
    alike, so a pair's counts depend only on the two groups."""
    sizes = ct.item_size
    n_pairs = int(np.sum(sizes * (sizes - 1) // 2))
    if n_pairs < _POOL_MIN_PAIRS_PER_VALUE * ct.n_values:
        return None
    keys = value_keys(values)
    n_keys = int(keys.max()) + 1 if keys.size else 1
    code = ct.item * n_keys + keys                 # rows are sorted by item already
    rows = np.argsort(code, kind="stable")         # by (item, value), then row
    sc = code[rows]
    first = np.ones(sc.size, dtype=bool)
    first[1:] = sc[1:] != sc[:-1]
    start = np.flatnonzero(first)
    count = np.diff(np.append(start, sc.size))
    group_item = sc[start] // n_keys
    n_groups = np.bincount(group_item, minlength=ct.n_items)
    cells = int(np.sum(n_groups * n_groups))       # ordered (group, group) pairs
    sides = int(np.sum(sizes * n_groups))          # (row, group of its item)
    if 4 * (cells + sides) > n_pairs:
        return None
    group = np.empty(ct.n_values, dtype=np.int64)
    group[rows] = np.repeat(np.arange(start.size), count)
    return _Groups(group=group, rep=rows[start], count=count, start=start, rows=rows,
                   item_first=np.cumsum(n_groups) - n_groups, n_groups=n_groups)


def _pooled_result(ct: CodedTable, packed: Any, iou: Callable[[np.ndarray, np.ndarray], np.ndarray],
                   threshold: float, kind: str, g: _Groups) -> ErrorTypesResult:
    """:func:`error_types` in a form linear in the annotators of an item.

    The pairs of an item are ``(r, s)``, ``r < s`` in row order (as :func:`observed_pairs`
    lists them), and a pair's counts are ``f(G(r), G(s))`` for the groups of equal values:
    matching is evaluated once per *ordered* pair of groups of an item (``f(x, y)`` and
    ``f(y, x)`` both, so ties in the assignment resolve as the pairwise form resolves them).
    Row ``r``'s pairs are then, per group ``h`` of its item, ``after(r, h)`` pairs where it is
    the first side, at ``f(G(r), h)``, and ``before(r, h)`` where it is the second, at
    ``f(h, G(r))`` — ``before(r, h)`` = rows of ``h`` preceding ``r`` and
    ``after(r, h) = |h| − before(r, h) − [h = G(r)]``. Annotator sums and the control's
    totals (each pair once: the first side's terms) are sums over these (row, group) sides.
    """
    # every ordered pair (x, y) of groups of an item, laid out as cell_start[u] + lx * k + ly
    k_of = g.n_groups
    cell_start = np.cumsum(k_of * k_of) - k_of * k_of
    gx = np.empty(int(np.sum(k_of * k_of)), dtype=np.int64)
    gy = np.empty_like(gx)
    for k in np.unique(k_of[k_of > 0]):
        items = np.flatnonzero(k_of == k)
        lx, ly = np.divmod(np.arange(int(k) * int(k)), int(k))
        pos = (cell_start[items][:, None] + np.arange(lx.size)[None, :]).ravel()
        gx[pos] = (g.item_first[items][:, None] + lx[None, :]).ravel()
        gy[pos] = (g.item_first[items][:, None] + ly[None, :]).ravel()
    counts, un_a, un_b = _pair_counts(packed, iou, threshold, g.rep[gx], g.rep[gy])

    # sides: every row r with every group h of its item
    item_r = ct.item
    per_row = k_of[item_r]
    r = np.repeat(np.arange(ct.n_values, dtype=np.int64), per_row)
    lh = np.arange(r.size, dtype=np.int64) - np.repeat(np.cumsum(per_row) - per_row, per_row)
    u = item_r[r]
    h = g.item_first[u] + lh
    mine = g.group[r]
    # rows of h before r: a search in h's rows (ordered by group, then row)
    n = ct.n_values
    ordered_key = np.repeat(np.arange(g.count.size, dtype=np.int64), g.count) * n + g.rows
    before = np.searchsorted(ordered_key, h * n + r) - g.start[h]
    after = g.count[h] - before - (h == mine)
    lm = mine - g.item_first[u]
    as_a = cell_start[u] + lm * k_of[u] + lh      # f(G(r), h): r is the first of the pair
    as_b = cell_start[u] + lh * k_of[u] + lm      # f(h, G(r)): r is the second

    ann = ct.annotator[r]
    n_ann = ct.annotator_labels.size

    def per_annotator(w_a: np.ndarray, w_b: np.ndarray) -> np.ndarray:
        # Σ over sides of after·(term as first side) + before·(term as second side), exact in float64
        return np.bincount(ann, weights=after * w_a[as_a] + before * w_b[as_b], minlength=n_ann)

    out = pd.DataFrame(index=pd.Index(ct.annotator_labels, name="annotator"))
    for c, name in enumerate(("agreed", "localization", "label", "both")):
        out[name] = per_annotator(counts[:, c], counts[:, c]).astype(np.int64)
    out["missed"] = per_annotator(un_b, un_a).astype(np.int64)
    out["extra"] = per_annotator(un_a, un_b).astype(np.int64)
    _shares(out)
    out["n_pairs"] = np.bincount(ct.annotator, weights=ct.item_size[ct.item] - 1, minlength=n_ann).astype(np.int64)
    total = np.array([int(np.dot(after, counts[as_a, c])) for c in range(4)], dtype=np.int64)
    unmatched = int(np.dot(after, un_a[as_a] + un_b[as_a]))

    def pairs_of() -> pd.DataFrame:
        i, j = observed_pairs(ct)
        cell = cell_start[ct.item[i]] + (g.group[i] - g.item_first[ct.item[i]]) * k_of[ct.item[i]] + (
            g.group[j] - g.item_first[ct.item[i]])
        return _pair_frame(ct, i, j, counts[cell], un_a[cell], un_b[cell])

    return ErrorTypesResult(annotators=out, overall=_overall(total, unmatched), kind=kind, threshold=threshold,
                            _pairs_of=pairs_of)


def _iou_function(kind: str, packed: Any) -> Any:
    """IoU of object pairs ``(a[k], b[k])`` (flat indices), geometry only."""
    if kind == "spans":
        se = np.array([(o.start, o.end) for o in packed.objects], dtype=np.int64).reshape(-1, 2)

        def span_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            inter = np.clip(np.minimum(se[a, 1], se[b, 1]) - np.maximum(se[a, 0], se[b, 0]), 0, None)
            union = (se[a, 1] - se[a, 0]) + (se[b, 1] - se[b, 0]) - inter
            return inter / np.maximum(union, 1)
        return span_iou
    from .distances.boxes import BoxDistance
    from .distances.intervals import IntervalDistance
    from .distances.polygons import PolygonDistance

    dist = {"boxes": lambda: BoxDistance("iou", labels="ignore"), "intervals": lambda: IntervalDistance(labels="ignore"),
            "polygons": lambda: PolygonDistance(labels="ignore")}[kind]()
    dist.pack(packed)
    return lambda a, b: np.clip(dist.similarity(packed, a, b), 0.0, 1.0)


def _match(score: np.ndarray, lay: Any) -> np.ndarray:
    """Object pairs (positions in the layout) chosen by a one-to-one matching per value pair
    maximizing the summed score, only where the score is > 0.

    Blocks with one region on a side are a grouped argmax (vectorized); the others go
    through ``linear_sum_assignment``, one call per distinct block (it has no batched form).
    """
    out = []
    single = (lay.na == 1) | (lay.nb == 1)
    if single.any():
        # the best object pair of each one-row/one-column block
        blk = np.flatnonzero(single[lay.pair])
        sc, pair = score[blk], lay.pair[blk]
        order = np.lexsort((-sc, pair))
        first = np.ones(order.size, dtype=bool)
        first[1:] = pair[order][1:] != pair[order][:-1]
        best = blk[order[first]]
        out.append(best[score[best] > 0])
    blocks = np.flatnonzero(~single)
    shape = lay.na[blocks] * (int(lay.nb.max(initial=0)) + 1) + lay.nb[blocks]
    for code in np.unique(shape):
        # blocks of one shape: equal score matrices (frequent for spans, whose IoUs are a
        # few fractions) are solved once; the loop only solves (Python numbers)
        mine = blocks[shape == code]
        a, b = int(lay.na[mine[0]]), int(lay.nb[mine[0]])
        scores = np.ascontiguousarray(score[lay.offsets[mine][:, None] + np.arange(a * b)])
        raw, width = scores.tobytes(), scores.itemsize * a * b
        seen: dict[bytes, int] = {}     # a block's bytes -> its distinct block
        inverse = np.fromiter((seen.setdefault(raw[k:k + width], len(seen)) for k in range(0, len(raw), width)),
                              dtype=np.int64, count=mine.size)
        first = np.zeros(len(seen), dtype=np.int64)
        first[inverse[::-1]] = np.arange(mine.size - 1, -1, -1)
        solved = [linear_sum_assignment(m.reshape(a, b), maximize=True) for m in scores[first]]
        rows = np.array([r for r, _ in solved], dtype=np.int64).reshape(len(solved), -1)
        cols = np.array([c for _, c in solved], dtype=np.int64).reshape(len(solved), -1)
        chosen = (lay.offsets[mine][:, None] + rows[inverse] * b + cols[inverse]).ravel()
        out.append(chosen[score[chosen] > 0])
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def _per_annotator(ann_a: np.ndarray, ann_b: np.ndarray, counts: np.ndarray, un_a: np.ndarray,
                   un_b: np.ndarray, labels: np.ndarray) -> pd.DataFrame:
    """Each annotator's counts over their pairs: shared categories on both sides, a side's
    unmatched regions its ``extra`` and the other side's ``missed``."""
    k = labels.size

    def side_sum(w_a: np.ndarray, w_b: np.ndarray) -> np.ndarray:
        return (np.bincount(ann_a, weights=w_a, minlength=k) + np.bincount(ann_b, weights=w_b, minlength=k))

    out = pd.DataFrame(index=pd.Index(labels, name="annotator"))
    for c, name in enumerate(("agreed", "localization", "label", "both")):
        out[name] = side_sum(counts[:, c], counts[:, c]).astype(np.int64)
    out["missed"] = side_sum(un_b, un_a).astype(np.int64)
    out["extra"] = side_sum(un_a, un_b).astype(np.int64)
    _shares(out)
    out["n_pairs"] = (np.bincount(ann_a, minlength=k) + np.bincount(ann_b, minlength=k)).astype(np.int64)
    return out


def _shares(out: pd.DataFrame) -> None:
    """Add ``disagreement`` and ``share_<category>`` to a per-annotator count table (in place)."""
    dis = out[list(CATEGORIES)].sum(axis=1).to_numpy()
    out["disagreement"] = dis
    with np.errstate(invalid="ignore", divide="ignore"):
        for c in CATEGORIES:
            out[f"share_{c}"] = np.where(dis > 0, out[c].to_numpy() / np.maximum(dis, 1), np.nan)

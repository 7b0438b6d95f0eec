"""What kind of disagreement: localization, label or missed/extra regions (docs/formulas.md §11).

For every item and every pair of annotators on it, the two annotators' regions (boxes,
polygons or spans) are matched one to one by overlap: Hungarian assignment maximizing
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
are ignored, as in the span distances.

An annotator's *disagreement* is their localization + label + both + missed + extra
counts over all their pairs; the shares say which kind dominates. A control's counts take
each pair once (``unmatched`` = regions without a match on either side).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment

from .distances._ragged import cross_layout
from .distances.multi_object import flatten_regions
from .model import Box, Polygon, Span
from .result import Result, finite_or_none
from .table import code_table, observed_pairs

__all__ = ["ErrorTypesResult", "error_types", "CATEGORIES", "RegionKind"]

RegionKind = Literal["boxes", "polygons", "spans"]
#: The disagreement categories of one annotator, in report order.
CATEGORIES = ("localization", "label", "both", "missed", "extra")
_TYPES = {"boxes": Box, "polygons": Polygon, "spans": Span}
# a tiny bonus for the same label: among equally overlapping regions, the same label matches
_SAME_LABEL_TIE = 1e-9


@dataclass(frozen=True)
class ErrorTypesResult(Result):
    """Error types of one table (:func:`error_types`).

    Attributes
    ----------
    pairs : DataFrame, one row per (item, annotator pair), shape (n_pairs, 9)
        ``item``, ``annotator_a``, ``annotator_b``, ``agreed``, ``localization``, ``label``,
        ``both``, ``unmatched_a`` (regions of a without a match), ``unmatched_b``.
    annotators : DataFrame, index annotator
        ``agreed``, ``localization``, ``label``, ``both``, ``missed``, ``extra`` (counts over
        their pairs), ``disagreement`` (their sum but ``agreed``), ``share_<category>`` for
        each of :data:`CATEGORIES` (NaN without disagreement), ``n_pairs``.
    overall : dict
        Counts over all pairs, each once: ``agreed``, ``localization``, ``label``,
        ``both``, ``unmatched``, ``disagreement``, and ``share_<category>``.
    kind : {"boxes", "polygons", "spans"}
    threshold : float
    """

    ESTIMATE: ClassVar[str | None] = None

    pairs: pd.DataFrame
    annotators: pd.DataFrame
    overall: dict[str, float]
    kind: str
    threshold: float

    def to_dict(self) -> dict[str, Any]:
        """Strict-JSON dict: ``overall``, ``annotators: {id: {column: value}}``, kind, threshold."""
        rows = {str(a): {c: _plain(v) for c, v in rec.items()}
                for a, rec in self.annotators.to_dict("index").items()}
        return {"overall": {k: _plain(v) for k, v in self.overall.items()}, "annotators": rows,
                "kind": self.kind, "threshold": float(self.threshold)}


def _plain(v: Any) -> Any:
    return int(v) if isinstance(v, (int, np.integer)) else finite_or_none(v)


def error_types(table: pd.DataFrame, *, kind: RegionKind | None = None,
                threshold: float | None = None) -> ErrorTypesResult:
    """Localization, label and missed/extra errors per annotator (module docstring).

    Parameters
    ----------
    table : DataFrame with columns item, annotator, value, shape (n_rows, 3)
        One row per annotator per item; a value is a sequence of :class:`Box`,
        :class:`Polygon` or :class:`Span` (possibly empty).
    kind : {"boxes", "polygons", "spans"}, optional
        Default: from the first region found.
    threshold : float, optional
        IoU below which a matched pair is a localization error; default 0.5 for boxes
        and polygons, 1 (exact boundaries) for spans.

    Returns
    -------
    ErrorTypesResult

    Raises
    ------
    ValueError
        A malformed table, values that are not regions of ``kind``, a threshold outside
        (0, 1].
    """
    ct = code_table(table)
    values = list(ct.values)
    if kind is None:
        first = next((r for v in values for r in (v or ())), None)
        kind = next((k for k, t in _TYPES.items() if isinstance(first, t)), "boxes")
    if kind not in _TYPES:
        raise ValueError(f"kind must be one of {tuple(_TYPES)}, got {kind!r}")
    if threshold is None:
        threshold = 1.0 if kind == "spans" else 0.5
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
    if kind == "spans":
        # zero-length spans mark no unit (as in the span distances)
        values = [tuple(s for s in v if isinstance(s, Span) and s.end > s.start)
                  if isinstance(v, (tuple, list)) else v for v in values]
    packed = flatten_regions(values, _TYPES[kind], f"error_types ({kind})")
    iou = _iou_function(kind, packed)
    i, j = observed_pairs(ct)
    na, nb = packed.counts[i], packed.counts[j]
    counts = np.zeros((i.size, 4), dtype=np.int64)    # agreed, localization, label, both
    matched = np.zeros(i.size, dtype=np.int64)
    both_sides = np.flatnonzero((na > 0) & (nb > 0))
    if both_sides.size:
        lay = cross_layout(packed.starts[i[both_sides]], na[both_sides], packed.starts[j[both_sides]],
                           nb[both_sides])
        s = iou(lay.a, lay.b)
        same = packed.labels[lay.a] == packed.labels[lay.b]
        chosen = _match(np.where(s > 0, s + _SAME_LABEL_TIE * same, 0.0), lay)
        good = s[chosen] >= threshold - 1e-12
        cat = np.where(good, np.where(same[chosen], 0, 2), np.where(same[chosen], 1, 3))
        row = both_sides[lay.pair[chosen]]
        np.add.at(counts, (row, cat), 1)
        matched = counts.sum(axis=1)
    un_a, un_b = na - matched, nb - matched
    pairs = pd.DataFrame({
        "item": ct.item_labels[ct.item[i]], "annotator_a": ct.annotator_labels[ct.annotator[i]],
        "annotator_b": ct.annotator_labels[ct.annotator[j]], "agreed": counts[:, 0],
        "localization": counts[:, 1], "label": counts[:, 2], "both": counts[:, 3],
        "unmatched_a": un_a, "unmatched_b": un_b})
    annotators = _per_annotator(ct.annotator[i], ct.annotator[j], counts, un_a, un_b, ct.annotator_labels)
    total = counts.sum(axis=0)
    overall: dict[str, float] = {"agreed": int(total[0]), "localization": int(total[1]), "label": int(total[2]),
                                 "both": int(total[3]), "unmatched": int(un_a.sum() + un_b.sum())}
    dis = overall["localization"] + overall["label"] + overall["both"] + overall["unmatched"]
    overall["disagreement"] = int(dis)
    for c in ("localization", "label", "both", "unmatched"):
        overall[f"share_{c}"] = overall[c] / dis if dis else float("nan")
    return ErrorTypesResult(pairs=pairs, annotators=annotators, overall=overall, kind=kind,
                            threshold=float(threshold))


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
    from .distances.polygons import PolygonDistance

    dist = BoxDistance("iou", labels="ignore") if kind == "boxes" else PolygonDistance(labels="ignore")
    dist.pack(packed)
    return lambda a, b: np.clip(dist.similarity(packed, a, b), 0.0, 1.0)


def _match(score: np.ndarray, lay: Any) -> np.ndarray:
    """Object pairs (positions in the layout) chosen by a one-to-one matching per value pair
    maximizing the summed score, only where the score is > 0.

    Blocks with one region on a side are a grouped argmax (vectorized); the others go
    through ``linear_sum_assignment``, one call per block (it has no batched form).
    """
    n = lay.na.size
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
    for p in np.flatnonzero(~single):
        o, a, b = lay.offsets[p], lay.na[p], lay.nb[p]
        m = score[o:o + a * b].reshape(a, b)
        r, c = linear_sum_assignment(m, maximize=True)
        keep = m[r, c] > 0
        out.append(o + r[keep] * b + c[keep])
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
    dis = out[list(CATEGORIES)].sum(axis=1).to_numpy()
    out["disagreement"] = dis
    with np.errstate(invalid="ignore", divide="ignore"):
        for c in CATEGORIES:
            out[f"share_{c}"] = np.where(dis > 0, out[c].to_numpy() / np.maximum(dis, 1), np.nan)
    out["n_pairs"] = (np.bincount(ann_a, minlength=k) + np.bincount(ann_b, minlength=k)).astype(np.int64)
    return out

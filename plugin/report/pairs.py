"""The report's annotator × annotator matrices and per-label sections (issue 13, items 1–2).

Per measured control: :func:`~ls_agreement.metrics.pair_matrix.pairwise_agreement` on the
control's agreement result (its observed pairs and D̂e are reused, nothing is measured
again) and, for label-bearing tags, :func:`~ls_agreement.metrics.per_label.per_label_agreement`.
The project matrix averages each pair's α over the measured controls, weighted by shared
items (:func:`~ls_agreement.metrics.pair_matrix.combine_pairwise`).
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from ls_agreement.adapters.control import ControlData
from ls_agreement.metrics.pair_matrix import combine_pairwise, pairwise_agreement
from ls_agreement.metrics.per_label import per_label_agreement
from ls_agreement.metrics.result import finite_or_none

from ..settings import ReportSettings
from .model import (AnnotatorPair, ConfusionMatrix, ControlReport, LabelConfusion, LabelEntry, LabelSection,
                    PairMatrix)

__all__ = ["pair_matrix_section", "label_section", "project_pair_matrix", "LABEL_TAGS", "MAX_PAIR_ANNOTATORS",
           "MIN_PAIR_ITEMS", "TOP_CONFUSIONS"]

#: Tags whose values carry labels from a declared list (lower case, as ``ControlData.tag``).
LABEL_TAGS = frozenset({"choices", "labels", "rectanglelabels", "polygonlabels", "keypointlabels", "taxonomy",
                        "ellipselabels", "brushlabels", "hypertextlabels", "paragraphlabels", "timeserieslabels",
                        "bitmasklabels", "vectorlabels",
                        "timelinelabels",
                        "videorectangle",    # its labels come from the Labels tag on its Video
                        "relations"})
#: Annotators paired per control: like the co-annotator map, the matrix grows as annotators².
MAX_PAIR_ANNOTATORS = 100
#: Pairs sharing fewer tasks are left out of the matrix.
MIN_PAIR_ITEMS = 3
#: Confused label pairs kept per control.
TOP_CONFUSIONS = 10
# region values join a region's several labels with "|" (adapters/fields.py label_key)
_REGION_KINDS = {"boxes", "polygons", "keypoints", "spans", "masks", "ellipses", "curves", "intervals", "tracks"}


def _interval(lo: Any, hi: Any) -> tuple[float | None, float | None]:
    lo, hi = finite_or_none(lo), finite_or_none(hi)
    return (lo, hi) if lo is not None and hi is not None else (None, None)


def pair_matrix_section(res: Any, table: pd.DataFrame, settings: ReportSettings, entry: ControlReport) -> None:
    """``entry.pair_matrix`` from the control's agreement result ``res``; a failure or the
    annotator cap becomes a warning of the control."""
    try:
        pm = pairwise_agreement(table, res, min_items=MIN_PAIR_ITEMS, max_annotators=MAX_PAIR_ANNOTATORS,
                                bootstrap=settings.bootstrap, seed=settings.seed)
    except (ValueError, ZeroDivisionError, FloatingPointError) as exc:
        entry.warnings.append(f"annotator pairs not computed: {exc}")
        return
    if pm.left_out:
        entry.warnings.append(f"annotator pairs: only the {MAX_PAIR_ANNOTATORS} most active of {pm.n_annotators} "
                              f"annotators are paired (the matrix would hold {pm.n_annotators ** 2:,} entries)")
    t = pm.table
    cols = {c: t[c].to_numpy() for c in t.columns}
    pairs = [AnnotatorPair(a=str(cols["annotator_a"][k]), b=str(cols["annotator_b"][k]),
                           alpha=finite_or_none(cols["alpha"][k]), ci=_interval(cols["ci_low"][k], cols["ci_high"][k]),
                           mean_distance=finite_or_none(cols["mean_distance"][k]), n_items=int(cols["n_items"][k]))
             for k in range(len(t))]
    entry.pair_matrix = PairMatrix(annotators=list(pm.annotators), pairs=pairs, expected=pm.expected,
                                   d_e=finite_or_none(pm.d_e), min_items=pm.min_items, max_annotators=pm.max_annotators,
                                   left_out=list(pm.left_out), n_below_min=pm.n_below_min,
                                   bootstrap=pm.bootstrap, seed=pm.seed)


def label_section(ctl: ControlData, settings: ReportSettings, entry: ControlReport) -> None:
    """``entry.per_label`` for a label-bearing control (:data:`LABEL_TAGS`); a failure is a warning."""
    if ctl.tag.lower() not in LABEL_TAGS or not len(ctl.table):
        return
    if ctl.kind == "tracks" and not ctl.options:   # no Labels tag on its Video: tracks carry no label
        return
    try:
        r = per_label_agreement(ctl.table, form=settings.form, bootstrap=settings.bootstrap, seed=settings.seed,
                                split="|" if ctl.kind in _REGION_KINDS else None, top=TOP_CONFUSIONS)
    except (ValueError, ZeroDivisionError, FloatingPointError) as exc:
        entry.warnings.append(f"per-label agreement not computed: {exc}")
        return
    t = r.table
    cols = {c: t[c].to_numpy() for c in t.columns}
    labels = {str(cols["label"][k]): LabelEntry(alpha=finite_or_none(cols["alpha"][k]),
                                                ci=_interval(cols["ci_low"][k], cols["ci_high"][k]),
                                                support=int(cols["support"][k]), n_items=int(cols["n_items"][k]))
              for k in range(len(t))}
    confusions = [LabelConfusion(a=str(a), b=str(b), count=int(c))
                  for a, b, c in r.confusions[["label_a", "label_b", "count"]].itertuples(index=False)]
    matrix = None
    if r.single:  # a single-choice control: the full matrix is small and reads as a confusion matrix
        matrix = ConfusionMatrix(labels=[str(x) for x in r.confusion.index],
                                 counts=[[int(v) for v in row] for row in r.confusion.to_numpy()])
    entry.per_label = LabelSection(labels=labels, confusions=confusions, confusion=matrix, n_items=r.n_items,
                                   form=r.form, bootstrap=r.bootstrap, seed=r.seed)


def project_pair_matrix(controls: Mapping[str, ControlReport]) -> PairMatrix | None:
    """Each pair's α over the measured controls, weighted by shared tasks; None without pairs."""
    tables = {}
    for name, c in controls.items():
        if c.measured and c.pair_matrix is not None and c.pair_matrix.pairs:
            tables[name] = pd.DataFrame([(p.a, p.b, p.n_items, np.nan if p.alpha is None else p.alpha)
                                         for p in c.pair_matrix.pairs],
                                        columns=["annotator_a", "annotator_b", "n_items", "alpha"])
    if not tables:
        return None
    g = combine_pairwise(tables)
    pairs = [AnnotatorPair(a=str(a), b=str(b), alpha=finite_or_none(al), n_items=int(n), n_controls=int(k))
             for a, b, al, n, k in g[["annotator_a", "annotator_b", "alpha", "n_items", "n_controls"]]
             .itertuples(index=False)]
    first = next(c.pair_matrix for c in controls.values() if c.pair_matrix is not None)
    left = sorted({a for c in controls.values() if c.pair_matrix is not None for a in c.pair_matrix.left_out})
    return PairMatrix(annotators=sorted(set(g["annotator_a"]) | set(g["annotator_b"])), pairs=pairs,
                      expected="project", d_e=None, min_items=first.min_items, max_annotators=first.max_annotators,
                      left_out=left, bootstrap=0, seed=first.seed)

"""Ground truth, predictions and error types of one control (issue 13 items 3-4).

``reference_measures(ctl, table, entry, settings)`` fills, on a control entry that has its
distance and D̂e:

* ``ground_truth`` — each human annotator's agreement with the ground-truth annotations
  (Label Studio's ``ground_truth: true``; ``ControlData.ground_truth``). A ground-truth
  annotation stays an ordinary annotation of its author in every inter-annotator number
  (as Label Studio Enterprise does); it is only not compared with itself here.
* ``predictions`` — each human's agreement with the model predictions on their items
  (all versions pooled), Label Studio's "prediction agreement" column.
* ``models`` — per model version: agreement with the humans (every human value on the
  items it predicted; each item weighs once) and with ground truth.
* ``error_types`` — for boxes, polygons, spans and intervals (``metrics/error_types.py``).

All agreements use the control's distance and D̂e (docs/formulas.md §10), bootstrap
intervals with the report's resamples and seed. A failure becomes a warning.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ls_agreement.adapters.control import ControlData
from ls_agreement.metrics.error_types import CATEGORIES, error_types
from ls_agreement.metrics.reference import agreement_with_reference
from ls_agreement.metrics.result import finite_or_none

from .model import (ControlReport, ErrorCounts, ErrorTypesSection, ModelAgreement, ReferenceAgreement,
                    ReferenceIntervals)

__all__ = ["reference_measures", "MODEL_PREFIX", "ERROR_KINDS"]

MODEL_PREFIX = "model:"
ERROR_KINDS = ("boxes", "polygons", "spans", "intervals")
# the IoU below which a matched region pair is a localization error (TIDE's foreground cut)
ERROR_IOU = 0.5


def reference_measures(ctl: ControlData, table: pd.DataFrame, entry: ControlReport, settings: Any) -> None:
    """Fill ``entry.ground_truth``, ``predictions``, ``models`` and ``error_types`` (module
    docstring); ``table`` is the table the control was measured on (token units for spans)."""
    if entry.distance is None or not len(table):
        return
    try:
        _agreements(ctl, table, entry, settings)
    except (ValueError, ZeroDivisionError, FloatingPointError) as exc:
        entry.warnings.append(f"ground-truth / prediction agreement not computed: {exc}")
    if ctl.kind in ERROR_KINDS:
        try:
            entry.error_types = error_section(table, ctl.kind)
        except (ValueError, ZeroDivisionError, FloatingPointError) as exc:
            entry.warnings.append(f"error types not computed: {exc}")


def _agreements(ctl: ControlData, table: pd.DataFrame, entry: ControlReport, settings: Any) -> None:
    kw = dict(distance=entry.distance, chance="table", d_e=entry.d_e if entry.d_e is not None else float("nan"),
              bootstrap=settings.bootstrap, seed=settings.seed)
    ann = table["annotator"].astype(str)
    is_model = ann.str.startswith(MODEL_PREFIX).to_numpy()
    gt = _ground_truth_rows(table, ctl.ground_truth)
    if gt.any():
        res = agreement_with_reference(table, table[gt], **kw)
        both = _records(res.annotators)
        entry.ground_truth = {a: r for a, r in both.items() if not a.startswith(MODEL_PREFIX)}
        for a, r in both.items():
            if a.startswith(MODEL_PREFIX):
                entry.models.setdefault(a[len(MODEL_PREFIX):], ModelAgreement()).ground_truth = r
    if is_model.any() and (~is_model).any():
        humans, models = table[~is_model], table[is_model]
        for a, r in _records(agreement_with_reference(models, humans, **kw).annotators).items():
            entry.models.setdefault(a[len(MODEL_PREFIX):], ModelAgreement()).humans = r
        entry.predictions = _records(agreement_with_reference(humans, models, **kw).annotators)
    entry.models = dict(sorted(entry.models.items()))


def _ground_truth_rows(table: pd.DataFrame, marks: set) -> np.ndarray:
    """Which rows of ``table`` are ground-truth annotations (``(item, annotator)`` marks)."""
    if not marks:
        return np.zeros(len(table), dtype=bool)
    keys = pd.MultiIndex.from_arrays([table["item"].astype(str), table["annotator"].astype(str)])
    wanted = pd.MultiIndex.from_tuples([(str(i), str(a)) for i, a in marks])
    return keys.isin(wanted)


def _records(df: pd.DataFrame) -> dict[str, ReferenceAgreement]:
    cols = {c: df[c].to_numpy() for c in df.columns}
    out = {}
    for k, a in enumerate(df.index):
        ci = ReferenceIntervals(similarity=(finite_or_none(cols["similarity_ci_low"][k]), finite_or_none(cols["similarity_ci_high"][k])),
                                alpha=(finite_or_none(cols["alpha_ci_low"][k]), finite_or_none(cols["alpha_ci_high"][k])))
        has_ci = any(v is not None for v in (*ci.similarity, *ci.alpha))
        out[str(a)] = ReferenceAgreement(similarity=finite_or_none(cols["similarity"][k]), alpha=finite_or_none(cols["alpha"][k]),
                                         mean_distance=finite_or_none(cols["mean_distance"][k]),
                                         n_items=int(cols["n_items"][k]), ci=ci if has_ci else None)
    return out


def error_section(table: pd.DataFrame, kind: str) -> ErrorTypesSection | None:
    """The error types of a region control; None when no item has two annotators."""
    if not (table.groupby("item", sort=False).size() >= 2).any():
        return None
    res = error_types(table, kind=kind, threshold=None)
    o = res.overall
    overall = ErrorCounts(agreed=o["agreed"], localization=o["localization"], label=o["label"], both=o["both"],
                          unmatched=o["unmatched"], disagreement=o["disagreement"],
                          shares={c: finite_or_none(o[f"share_{c}"]) for c in ("localization", "label", "both", "unmatched")})
    anns = {}
    for a, r in res.annotators.to_dict("index").items():
        anns[str(a)] = ErrorCounts(agreed=int(r["agreed"]), localization=int(r["localization"]),
                                   label=int(r["label"]), both=int(r["both"]), missed=int(r["missed"]),
                                   extra=int(r["extra"]), disagreement=int(r["disagreement"]),
                                   shares={c: finite_or_none(r[f"share_{c}"]) for c in CATEGORIES})
    return ErrorTypesSection(kind=kind, threshold=res.threshold, overall=overall, annotators=anns)

"""Rendering of the ground-truth, prediction and error-type parts of a report (issue 13).

* :func:`members_table` — the quality page's Members-style table: per annotator, their
  agreement (α, project), their agreement with ground truth and with the predictions
  (similarity and α, means over the controls that have them, weighted by shared items);
* :func:`quality_section` — per control: ground truth and predictions per annotator, the
  models, and the error types;
* :data:`QUALITY_COLUMNS` / :func:`quality_cells` — the per-annotator CSV's new columns.
"""
from __future__ import annotations

import html
from typing import Any

from .model import ControlReport, ErrorCounts, ReferenceAgreement, Report

__all__ = ["members_table", "quality_section", "QUALITY_COLUMNS", "quality_cells", "weighted_reference"]

MODEL_PREFIX = "model:"

QUALITY_COLUMNS = ["gt_similarity", "gt_similarity_ci_low", "gt_similarity_ci_high", "gt_alpha", "gt_alpha_ci_low",
                   "gt_alpha_ci_high", "gt_n_items", "prediction_similarity", "prediction_alpha",
                   "prediction_n_items", "humans_similarity", "humans_alpha", "humans_n_items",
                   "errors_agreed", "errors_localization", "errors_label", "errors_both", "errors_missed",
                   "errors_extra"]


def _f(v: Any, digits: int = 3) -> str:
    return "–" if v is None else f"{v:.{digits}f}" if isinstance(v, float) else html.escape(str(v))


def _ci(ci: Any) -> str:
    if not isinstance(ci, (list, tuple)) or len(ci) != 2 or ci[0] is None or ci[1] is None:
        return ""
    return f" <span class=ci>[{ci[0]:.3f}, {ci[1]:.3f}]</span>"


def _ref_cells(r: ReferenceAgreement | None) -> tuple[Any, ...]:
    """(similarity, lo, hi, alpha, lo, hi, n_items) of an agreement, Nones when absent."""
    if r is None:
        return (None,) * 6 + (None,)
    s_ci = r.ci.similarity if r.ci is not None else (None, None)
    a_ci = r.ci.alpha if r.ci is not None else (None, None)
    return (r.similarity, s_ci[0], s_ci[1], r.alpha, a_ci[0], a_ci[1], r.n_items)


def quality_cells(e: ControlReport, annotator: str) -> dict[str, Any]:
    """The :data:`QUALITY_COLUMNS` of one (control, annotator) row: a model's ground-truth
    and humans agreement, a human's ground-truth and prediction agreement."""
    is_model = annotator.startswith(MODEL_PREFIX)
    m = e.models.get(annotator[len(MODEL_PREFIX):]) if is_model else None
    gt = m.ground_truth if m is not None else e.ground_truth.get(annotator)
    pred = None if is_model else e.predictions.get(annotator)
    humans = m.humans if m is not None else None
    err = e.error_types.annotators.get(annotator) if e.error_types is not None else None
    g = _ref_cells(gt)
    return {"gt_similarity": g[0], "gt_similarity_ci_low": g[1], "gt_similarity_ci_high": g[2], "gt_alpha": g[3],
            "gt_alpha_ci_low": g[4], "gt_alpha_ci_high": g[5], "gt_n_items": g[6],
            "prediction_similarity": pred.similarity if pred else None,
            "prediction_alpha": pred.alpha if pred else None, "prediction_n_items": pred.n_items if pred else None,
            "humans_similarity": humans.similarity if humans else None,
            "humans_alpha": humans.alpha if humans else None, "humans_n_items": humans.n_items if humans else None,
            **{f"errors_{c}": getattr(err, c) if err is not None else None
               for c in ("agreed", "localization", "label", "both", "missed", "extra")}}


def weighted_reference(parts: list[ReferenceAgreement]) -> tuple[float | None, float | None, int]:
    """Similarity and α over several controls: means weighted by shared items, each over
    the controls where it is defined; and the shared items."""
    out = []
    for key in ("similarity", "alpha"):
        num = sum(getattr(p, key) * p.n_items for p in parts if getattr(p, key) is not None)
        den = sum(p.n_items for p in parts if getattr(p, key) is not None)
        out.append(num / den if den else None)
    return out[0], out[1], sum(p.n_items for p in parts)


def members_table(report: Report) -> str:
    """Members-style table: per annotator, agreement, ground-truth and prediction agreement."""
    gt: dict[str, list[ReferenceAgreement]] = {}
    pred: dict[str, list[ReferenceAgreement]] = {}
    for e in report.controls.values():
        for a, r in e.ground_truth.items():
            gt.setdefault(a, []).append(r)
        for a, r in e.predictions.items():
            pred.setdefault(a, []).append(r)
    if not gt and not pred:
        return ""
    rows = []
    for a, v in sorted(report.annotators.items(), key=lambda kv: (kv[1].alpha is None, -(kv[1].alpha or 0.0))):
        if a.startswith(MODEL_PREFIX):
            continue
        g, p = weighted_reference(gt.get(a, [])), weighted_reference(pred.get(a, []))
        rows.append(f"<tr><td>{html.escape(str(v.name or a))}</td><td>{_f(v.alpha)}</td><td>{v.n_items}</td>"
                    f"<td>{_f(g[0])}</td><td>{_f(g[1])}</td><td>{g[2] or '–'}</td>"
                    f"<td>{_f(p[0])}</td><td>{_f(p[1])}</td><td>{p[2] or '–'}</td></tr>")
    return ("<h3>Members</h3><p>Agreement: α with the other annotators; ground truth: with the "
            "annotations marked ground truth (on the tasks both have, not with their own); "
            "predictions: with the model predictions. Similarity = 1 − mean distance, α = 1 − mean "
            "distance / D̂e of the control; means over controls weighted by shared tasks; n: shared tasks "
            "summed over the controls.</p>"
            "<table><tr><th rowspan=2>annotator</th><th rowspan=2>agreement α</th><th rowspan=2>tasks</th>"
            "<th colspan=3>ground truth</th><th colspan=3>predictions</th></tr><tr><th>similarity</th>"
            "<th>α</th><th>n</th><th>similarity</th><th>α</th><th>n</th></tr>" + "".join(rows) + "</table>")


def _ref_row(r: ReferenceAgreement | None) -> str:
    """Similarity, α (with intervals) and shared tasks as three cells."""
    if r is None:
        return "<td>–</td><td>–</td><td>–</td>"
    ci = r.ci
    return (f"<td>{_f(r.similarity)}{_ci(ci.similarity if ci else None)}</td>"
            f"<td>{_f(r.alpha)}{_ci(ci.alpha if ci else None)}</td><td>{r.n_items}</td>")


def _error_cells(c: ErrorCounts, per_annotator: bool) -> str:
    cats = ("localization", "label", "both", "missed", "extra") if per_annotator else \
        ("localization", "label", "both", "unmatched")
    return "".join(f"<td>{getattr(c, k)}<span class=ci> ({_f(c.shares.get(k), 2)})</span></td>" for k in cats)


def quality_section(e: ControlReport) -> str:
    """Per control: ground truth and predictions per annotator, models, error types."""
    out = ""
    names = {a: (v.name or a) for a, v in e.annotators.items()}
    who = sorted(set(e.ground_truth) | set(e.predictions))
    if who:
        rows = "".join(f"<tr><td>{html.escape(str(names.get(a, a)))}</td>{_ref_row(e.ground_truth.get(a))}"
                       f"{_ref_row(e.predictions.get(a))}</tr>" for a in who)
        out += ("<h3>Ground truth and predictions</h3><table><tr><th rowspan=2>annotator</th>"
                "<th colspan=3>vs ground truth</th><th colspan=3>vs predictions</th></tr><tr><th>similarity</th>"
                "<th>α</th><th>tasks</th><th>similarity</th><th>α</th><th>tasks</th></tr>" + rows + "</table>")
    if e.models:
        rows = "".join(f"<tr><td><code>{html.escape(v)}</code></td>{_ref_row(m.humans)}"
                       f"{_ref_row(m.ground_truth)}</tr>" for v, m in e.models.items())
        out += ("<h3>Models</h3><table><tr><th rowspan=2>model version</th><th colspan=3>vs humans</th>"
                "<th colspan=3>vs ground truth</th></tr><tr><th>similarity</th><th>α</th><th>tasks</th>"
                "<th>similarity</th><th>α</th><th>tasks</th></tr>" + rows + "</table>")
    et = e.error_types
    if et is not None:
        loc = "boundary" if et.kind == "spans" else f"localization (IoU &lt; {et.threshold:g})"
        rows = "".join(f"<tr><td>{html.escape(str(names.get(a, a)))}</td><td>{c.agreed}</td>"
                       f"{_error_cells(c, True)}</tr>"
                       for a, c in sorted(et.annotators.items(), key=lambda kv: -kv[1].disagreement))
        o = et.overall
        out += (f"<h3>Error types</h3><p>Regions matched one to one by overlap between every two annotators "
                f"of a task: {o.agreed} agreed, {o.disagreement} disagreements — {loc} "
                f"{o.localization} ({_f(o.shares.get('localization'), 2)}), label {o.label} "
                f"({_f(o.shares.get('label'), 2)}), both {o.both} ({_f(o.shares.get('both'), 2)}), unmatched "
                f"{o.unmatched} ({_f(o.shares.get('unmatched'), 2)}). Per annotator: counts (share of their "
                "disagreement).</p><table><tr><th>annotator</th><th>agreed</th>"
                f"<th>{'boundary' if et.kind == 'spans' else 'localization'}</th><th>label</th><th>both</th>"
                f"<th>missed</th><th>extra</th></tr>{rows}</table>")
    return out

"""Quality-page parts and CSV tables of the annotator × annotator matrices and per-label sections.

The matrix is drawn as an HTML table heatmap rather than an image: each cell can then link
to the Label Studio Data Manager showing the tasks both annotators annotated (through
``serve``, which saves that filter as a view: :func:`pair_link`), and carries its interval
and counts in its tooltip.
"""
from __future__ import annotations

import csv
import html
import io
from typing import Any, Callable
from urllib.parse import urlencode

from .model import ControlReport, LabelSection, PairMatrix, Report

__all__ = ["pairs_html", "labels_html", "project_pairs_html", "render_pairs_csv", "render_labels_csv",
           "pair_link", "PAIR_CSV_COLUMNS", "LABEL_CSV_COLUMNS", "MAX_HEATMAP_ANNOTATORS"]

PAIR_CSV_COLUMNS = ["control", "annotator_a", "name_a", "annotator_b", "name_b", "alpha", "alpha_ci_low",
                    "alpha_ci_high", "mean_distance", "n_items", "n_controls"]
LABEL_CSV_COLUMNS = ["control", "label", "alpha", "alpha_ci_low", "alpha_ci_high", "support", "n_items"]
PROJECT_ROW = "(project)"
#: Annotators drawn in a heatmap (the most paired first); the CSV and JSON hold them all.
MAX_HEATMAP_ANNOTATORS = 30

Link = Callable[[str, str], "str | None"]


def pair_link(base: str | None, project_id: int | None) -> Link:
    """``link(a, b)``: the address that opens, in Label Studio's Data Manager, the tasks
    annotators ``a`` and ``b`` both annotated, or None.

    Label Studio's Data Manager reads no filters from its URL (only ``?tab=<view id>``), so
    the link goes to ``serve``'s ``/projects/<id>/pair?a=&b=``, which saves that filter as
    a view (plugin/views.py ``ensure_pair_view``) and redirects to its tab. ``base`` is
    serve's address ("" on a page serve itself answers); None (a page written to a file)
    or an annotator that is not a user id (``model:<version>``) gives no link.
    """
    def link(a: str, b: str) -> str | None:
        if base is None or project_id is None or not (a.isdigit() and b.isdigit()):
            return None
        return f"{base.rstrip('/')}/projects/{int(project_id)}/pair?{urlencode({'a': a, 'b': b})}"
    return link


def _color(alpha: float | None) -> str:
    """Cell background: red below 0 (worse than chance), white at 0, green towards 1."""
    if alpha is None:
        return "#f6f8fa"
    a = max(-1.0, min(1.0, alpha))
    if a >= 0:
        g = int(255 - 120 * a)
        return f"rgb({g},{int(255 - 40 * a)},{g})"
    r = int(255 + 60 * a)
    return f"rgb(255,{r},{r})"


def _heatmap(pm: PairMatrix, names: dict[str, str], link: Link | None, interval: bool = True) -> str:
    by = {(p.a, p.b): p for p in pm.pairs}
    count: dict[str, int] = {}
    for p in pm.pairs:
        count[p.a] = count.get(p.a, 0) + p.n_items
        count[p.b] = count.get(p.b, 0) + p.n_items
    shown = sorted(count, key=lambda a: (-count[a], a))[:MAX_HEATMAP_ANNOTATORS]
    shown.sort(key=lambda a: str(names.get(a, a)))
    label = {a: html.escape(str(names.get(a, a))[:20]) for a in shown}
    # a rotated header takes the height its name needs (a fixed cap let long names spill
    # upwards over the paragraph above the table); the full name is its tooltip
    head = "".join(f"<th class=rot title='{html.escape(str(names.get(a, a)))}'><div>{label[a]}</div></th>"
                   for a in shown)
    rows = []
    for a in shown:
        cells = []
        for b in shown:
            p = by.get((a, b)) or by.get((b, a))
            if a == b or p is None:
                cells.append("<td class=hm></td>")
                continue
            tip = f"{names.get(a, a)} × {names.get(b, b)}: α {_fmt(p.alpha)}"
            if interval and p.ci[0] is not None:
                tip += f" [{p.ci[0]:.3f}, {p.ci[1]:.3f}]"
            tip += f", {p.n_items} shared tasks" if p.n_controls <= 1 else \
                f", {p.n_items} shared task-controls over {p.n_controls} controls"
            if p.mean_distance is not None:
                tip += f", mean distance {p.mean_distance:.3g}"
            text = _fmt(p.alpha, 2)
            url = link(a, b) if link else None
            if url:
                text = f"<a href='{html.escape(url)}'>{text}</a>"
            cells.append(f"<td class=hm style='background:{_color(p.alpha)}' title='{html.escape(tip)}'>{text}</td>")
        rows.append(f"<tr><th>{label[a]}</th>{''.join(cells)}</tr>")
    more = (f"<p>The {MAX_HEATMAP_ANNOTATORS} annotators with most shared tasks are drawn; the CSV and JSON "
            f"hold all {len(count)}.</p>" if len(count) > MAX_HEATMAP_ANNOTATORS else "")
    return f"<table class=heat><tr><th></th>{head}</tr>{''.join(rows)}</table>{more}"


def _fmt(v: float | None, digits: int = 3) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _names(e: ControlReport | None, report: Report | None) -> dict[str, str]:
    out: dict[str, str] = {}
    if report is not None:
        out.update({k: v.name or k for k, v in report.annotators.items()})
    if e is not None:
        out.update({k: v.name or k for k, v in e.annotators.items()})
    return out


def _caveats(pm: PairMatrix) -> str:
    notes = []
    if pm.n_below_min:
        notes.append(f"{pm.n_below_min} pair(s) sharing fewer than {pm.min_items} tasks are left out")
    if pm.left_out:
        notes.append(f"{len(pm.left_out)} less active annotator(s) are not paired (at most {pm.max_annotators})")
    return f"<p><small>{html.escape('; '.join(notes))}.</small></p>" if notes else ""


def _click(link: Link | None) -> str:
    if link is not None:
        return "click: those tasks in Label Studio's Data Manager"
    return ("on this page as <code>ls-agreement serve</code> shows it, a click opens those tasks in "
            "Label Studio's Data Manager")


def pairs_html(e: ControlReport, report: Report | None = None, link: Link | None = None) -> str:
    """The control's annotator × annotator heatmap, or ""."""
    pm = e.pair_matrix
    if pm is None or not pm.pairs:
        return ""
    return ("<details open><summary>annotator × annotator agreement</summary>"
            "<p>Each cell: Krippendorff's α of the two annotators on the tasks both annotated, read "
            f"against this control's chance distance D̂e = {_fmt(pm.d_e)} so that pairs compare on one "
            f"scale (hover: interval, shared tasks, mean distance; {_click(link)}). Red is worse "
            "than chance.</p>"
            f"{_heatmap(pm, _names(e, report), link)}{_caveats(pm)}</details>")


def project_pairs_html(report: Report, link: Link | None = None) -> str:
    pm = report.pair_matrix
    if pm is None or not pm.pairs:
        return ""
    return ("<h3>Annotator pairs</h3><p>Each cell: the pair's α averaged over the measured controls, "
            "weighted by shared tasks (per-control matrices, with intervals, are in each control's "
            f"section; {_click(link)}).</p>{_heatmap(pm, _names(None, report), link, interval=False)}"
            f"{_caveats(pm)}")


def labels_html(e: ControlReport) -> str:
    """The control's per-label table, most confused pairs and confusion matrix, or ""."""
    s: LabelSection | None = e.per_label
    if s is None or not s.labels:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{v.support}</td><td>{v.n_items}</td><td>{_fmt(v.alpha)}"
        + (f" <span class=ci>[{v.ci[0]:.3f}, {v.ci[1]:.3f}]</span>" if v.ci[0] is not None else "")
        + "</td></tr>" for k, v in s.labels.items())
    conf = "".join(f"<li>{html.escape(c.a)} ↔ {html.escape(c.b)}: {c.count} pair(s)</li>" for c in s.confusions)
    matrix = ""
    if s.confusion is not None and s.confusion.labels:
        labs = [html.escape(x) for x in s.confusion.labels]
        peak = max((max(r) for r in s.confusion.counts if r), default=0) or 1
        body = "".join(
            f"<tr><th>{labs[i]}</th>" + "".join(
                f"<td style='background:rgba(31,111,235,{0.6 * c / peak:.2f})'>{c}</td>" for c in row) + "</tr>"
            for i, row in enumerate(s.confusion.counts))
        matrix = ("<p>Confusion matrix: annotator pairs on one task giving the row and column labels "
                  "(diagonal: pairs agreeing).</p>"
                  f"<table><tr><th></th>{''.join(f'<th>{x}</th>' for x in labs)}</tr>{body}</table>")
    return ("<details><summary>agreement per label</summary>"
            "<p>α one-vs-rest: each annotation read as \"has this label\" yes/no (nominal α); support: "
            "annotations carrying the label.</p>"
            f"<table><tr><th>label</th><th>support</th><th>tasks</th><th>α</th></tr>{rows}</table>"
            + (f"<p>Most confused labels (one annotator gave one but not the other, the second annotator "
               f"the reverse):</p><ul>{conf}</ul>" if conf else "") + f"{matrix}</details>")


def _cell(v: Any) -> Any:
    return "" if v is None else v


def render_pairs_csv(report: Report) -> str:
    """One row per (control, annotator pair), then ``(project)`` rows; columns :data:`PAIR_CSV_COLUMNS`."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(PAIR_CSV_COLUMNS)
    parts = [(n, e.pair_matrix, _names(e, report)) for n, e in report.controls.items() if e.pair_matrix]
    if report.pair_matrix is not None:
        parts.append((PROJECT_ROW, report.pair_matrix, _names(None, report)))
    for name, pm, names in parts:
        for p in pm.pairs:
            w.writerow([name, p.a, names.get(p.a, p.a), p.b, names.get(p.b, p.b), _cell(p.alpha), _cell(p.ci[0]),
                        _cell(p.ci[1]), _cell(p.mean_distance), p.n_items, p.n_controls])
    return buf.getvalue()


def render_labels_csv(report: Report) -> str:
    """One row per (control, label); columns :data:`LABEL_CSV_COLUMNS`."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(LABEL_CSV_COLUMNS)
    for name, e in report.controls.items():
        if e.per_label is None:
            continue
        for label, v in e.per_label.labels.items():
            w.writerow([name, label, _cell(v.alpha), _cell(v.ci[0]), _cell(v.ci[1]), v.support, v.n_items])
    return buf.getvalue()

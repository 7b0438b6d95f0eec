"""Report dict -> CSV files and the self-contained HTML quality page.

CSV (README): ``render_csv`` returns two tables: one row per (control, task) and one row
per (control, annotator), the latter with ``control = "(project)"`` rows for the
project-level summary. The HTML page (``render_html``) is the admins' quality page, also
served by the plugin: inline CSS, charts as inline SVG whose marks carry their numbers
(render_charts.py), one small inline script for sortable tables, the control filter and
the chart tooltips (render_interactive.py): one file, no request of any kind, works offline.
"""
from __future__ import annotations

import csv
import html
import io
import json
from typing import Any

from .explain import advice
from .render_charts import annotator_svg, distribution_svg
from .render_interactive import PAGE_CSS, control_filter, page_script
from .model import ControlReport, Diagnostic, Report, to_jsonable
from .render_quality import QUALITY_COLUMNS, members_table, quality_cells, quality_section
from .render_pairs import (Link, pair_link, labels_html, pairs_html, project_pairs_html,  # issue 13
                           render_labels_csv, render_pairs_csv)

__all__ = ["render_html", "render_csv", "annotator_rows", "TASK_COLUMNS", "ANNOTATOR_COLUMNS", "PROJECT_ROW",
           "render_pairs_csv", "render_labels_csv"]

TASK_COLUMNS = ["control", "task", "sigma", "alpha", "mean_distance", "n_pairs", "flag", "annotators", "p_flag",
                "consensus", "consensus_by", "consensus_p"]
ANNOTATOR_COLUMNS = ["control", "annotator", "name", "reliability", "reliability_ci_low", "reliability_ci_high",
                     "sigma", "sigma_ci_low", "sigma_ci_high", "alpha",
                     "alpha_ci_low", "alpha_ci_high", "mean_distance", "n_pairs", "n_items", "crowdtruth_wqs",
                     "co_annotators"] + QUALITY_COLUMNS   # ground truth, predictions, error types (issue 13)
PROJECT_ROW = "(project)"   # the control column of an annotator's project-wide row
_MAX_FLAGGED = 50
_MAX_CONSENSUS = 200   # tasks in the page's consensus table (every task is in report.json)

def _f(v: Any, digits: int = 3) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return html.escape(str(v))


def _ci(ci: Any) -> str:
    if not isinstance(ci, (list, tuple)) or len(ci) != 2 or ci[0] is None or ci[1] is None:
        return ""
    return f" <span class=ci>[{ci[0]:.3f}, {ci[1]:.3f}]</span>"


def _explain(diags: list[Diagnostic]) -> str:
    out = []
    for d in diags:
        why = advice(d.code)
        out.append(f"<li><b>{html.escape(d.message)}</b>"
                   + (f"<br><span class=why>{html.escape(why)}</span>" if why else "") + "</li>")
    return "<ul class=diag>" + "".join(out) + "</ul>" if out else ""


def _flagged(entry: ControlReport, reasons: dict[str, str] | None = None) -> str:
    """The tasks this control flags, worst first, each with why (``reasons``: task -> why)."""
    reasons = reasons or {}
    rows = [(k, v) for k, v in entry.items.items() if v.flag]
    if not rows:
        return "<p>No flagged task.</p>"
    rows.sort(key=lambda kv: (kv[1].sigma if kv[1].sigma is not None else -1.0, -(kv[1].mean_distance or 0.0)))
    body = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{_f(v.sigma)}</td><td>{_f(v.alpha)}</td>"
        f"<td>{_f(v.mean_distance)}</td><td>{v.n_pairs}</td>"
        f"<td>{html.escape(', '.join(v.annotators))}</td><td>{html.escape(reasons.get(k, ''))}</td></tr>"
        for k, v in rows[:_MAX_FLAGGED])
    more = f"<p>… and {len(rows) - _MAX_FLAGGED} more.</p>" if len(rows) > _MAX_FLAGGED else ""
    return (f"<p>{len(rows)} task(s) flagged by this control, worst first:</p>"
            "<table><tr><th>task</th><th>σ</th><th>α</th><th>mean distance</th><th>pairs</th>"
            f"<th>annotators</th><th>why</th></tr>{body}</table>{more}")


def _reliability(entry: ControlReport) -> str:
    """The annotators' reliability in this control's annotator model, least reliable first."""
    rows = sorted(((a, e) for a, e in entry.annotators.items() if e.reliability is not None),
                  key=lambda kv: kv[1].reliability)
    if not rows:
        return ""
    cells = "".join(
        f"<tr><td>{html.escape(str(e.name or a))}</td><td>{e.reliability:.2f}{_ci(e.reliability_ci)}</td>"
        f"<td>{'departs' if e.departs else ''}</td></tr>" for a, e in rows)
    model = "labels" if entry.flags is not None and entry.flags.model == "labels" else "distances to the consensus"
    return ("<details><summary>reliability (share of sound answers) behind the flags</summary>"
            f"<p>Annotator model of this control: {model}. <i>departs</i>: the model reads this "
            "annotator's excess over typical work as departures.</p>"
            f"<table><tr><th>annotator</th><th>reliability</th><th></th></tr>{cells}</table></details>")


def _flag_rule(report: Report) -> str:
    """How tasks are flagged (docs/formulas.md, "Flags"), with this report's settings."""
    s = report.settings or {}
    post, below = s.get("flag_posterior", 0.5), s.get("flag_below", 0.0)
    legacy = (f" Also flagged: a task whose σ on a control is below {_f(below)} (<code>flag_below</code>)."
              if below else "")
    return ("<details class=rule><summary>How tasks are flagged</summary>"
            "<p>A model of annotators and tasks is fitted on each control: per task the most "
            "likely answer (the <i>consensus</i>), who departs from it and how, and whether the "
            "task itself is ambiguous; per annotator the share of their answers that are sound "
            "(their <i>reliability</i>). Labels (choices, ratings) are read by a latent-class "
            "model of the Dawid–Skene family: careful work has its own slips, shared by the "
            "annotators; an annotator's excess over it (a constant label, random clicks) is "
            "departures. Any other answer is read by its distance to the task's consensus (the "
            "medoid), against how far careful answers go: a shifted box or a missed entity departs "
            "even when it is nowhere near chance.</p>"
            "<p>A task is flagged when the posterior that it holds a departing answer or is "
            f"ambiguous reaches {_f(post)} (<code>flag_posterior</code>). Each flagged task says "
            "who departs and how, or that careful annotators split; an annotator whose answer is "
            f"the consensus is never named.{legacy}</p></details>")


def _status_text(e: ControlReport) -> str:
    """``no_variation`` -> "no variation" (why a control has no agreement numbers)."""
    return e.status.replace("_", " ")


def _flag_cell(e: ControlReport) -> str:
    if not e.measured:
        return f"not measured: {html.escape(_status_text(e))}"
    return str(e.n_flagged)


def _control_section(name: str, e: ControlReport, report: Report | None = None, link: Link | None = None) -> str:
    form = "Krippendorff's canonical weighting" if e.form == "canonical" else "pairwise means (paper 000)"
    ci = e.ci
    head = (f"<h2 id='c-{html.escape(name)}'>{html.escape(name)} <small>{html.escape(str(e.tag))} · "
            f"{html.escape(str(e.kind))}</small></h2>")
    nums = (f"<div class=cards><div><b>α</b> {_f(e.alpha)}{_ci(ci.alpha)}<br><small>{form}</small></div>"
            f"<div><b>KS</b> {_f(e.ks)}{_ci(ci.ks)}<br><small>D+ = {_f(e.ks_statistic)}</small></div>"
            f"<div><b>σ</b> {_f(e.sigma)}{_ci(ci.sigma)}<br><small>d* = {_f(e.threshold)}, "
            f"p = {_f(e.p)}</small></div></div>"
            f"<p>distance <code>{html.escape(str(e.distance))}</code> · {e.n_items} tasks · "
            f"{e.n_pairs} observed pairs · {e.n_expected_pairs} expected pairs · "
            f"95% item bootstrap, {ci.bootstrap} resamples, seed {ci.seed}</p>")
    if not e.measured:
        nums = (f"<p class=unmeasured><b>Not measured:</b> {html.escape(str(e.reason))}. This control "
                "takes no part in the flags, in each task's σ or in the annotators' means.</p>")
    cands = ""
    if e.candidates:
        rows = "".join(f"<tr><td><code>{html.escape(c.distance)}</code></td><td>{_f(c.ks)}</td>"
                       f"<td>{_f(c.alpha)}</td><td>{_f(c.sigma)}</td></tr>" for c in e.candidates)
        cands = ("<details><summary>distance chosen by KS (auto)</summary><table><tr><th>distance</th>"
                 f"<th>KS</th><th>α</th><th>σ</th></tr>{rows}</table></details>")
    seeds = ""
    for key, part in (("kappa_x", e.kappa_x or None), ("span_f1", e.span_f1), ("crowdtruth", e.crowdtruth)):
        if part is not None:
            seeds += (f"<details><summary>{key}</summary><pre>"
                      f"{html.escape(json.dumps(to_jsonable(part), indent=1)[:20000])}</pre></details>")
    warn = "".join(f"<li>{html.escape(w)}</li>" for w in e.warnings)
    return (f"<section class=control>{head}{nums}{cands}{_explain(e.diagnostics)}"
            f"<div class=plots>{distribution_svg(e)}{annotator_svg(e)}</div>"
            f"<h3>Flagged tasks</h3>{_flagged(e, _reasons(report, name))}{_reliability(e)}{quality_section(e)}{pairs_html(e, report, link)}{labels_html(e)}{seeds}"
            + (f"<ul class=warn>{warn}</ul>" if warn else "") + "</section>")


def _reasons(report: Report | None, control: str) -> dict[str, str]:
    if report is None:
        return {}
    return {k: t.reasons[control] for k, t in report.tasks.items() if control in t.reasons}


_CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#1f2328}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #d0d7de;padding:2px 8px;font-size:.9em}
th{background:#f6f8fa}.cards{display:flex;gap:1em}.cards div{border:1px solid #d0d7de;border-radius:6px;
padding:.5em 1em;font-size:1.2em}.ci{color:#57606a;font-size:.8em}small{color:#57606a}
section{border-top:2px solid #d0d7de;margin-top:2em}.warn{color:#9a6700}.diag .why{color:#57606a}
.plots img{max-width:100%;margin-right:1em}
table.heat td.hm{min-width:2.6em;text-align:center}table.heat th.rot{vertical-align:bottom}
table.heat th.rot div{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap}
table.heat a{color:inherit;text-decoration:none}
.wide{overflow-x:auto}table.consensus td:last-child{min-width:24em}table.consensus td{vertical-align:top}"""


def _annotators_table(report: Report) -> str:
    """The annotators, least reliable first: the annotator model's reliability (share of
    sound answers, 95 % interval) leads; σ and α beside it."""
    def key(kv: tuple[str, Any]) -> tuple:
        r = kv[1].reliability
        return (r is None, r if r is not None else 0.0, kv[1].sigma if kv[1].sigma is not None else 0.0)

    rows = "".join(
        f"<tr><td>{_f(v.reliability, 2)}{_ci2(v.reliability_ci)}</td><td>{html.escape(a)}</td>"
        f"<td>{html.escape(str(v.name))}</td><td>{'departs' if v.departs else ''}</td><td>{_f(v.sigma)}</td>"
        f"<td>{_f(v.alpha)}</td><td>{v.n_items}</td><td>{v.n_pairs}</td></tr>"
        for a, v in sorted(report.annotators.items(), key=key))
    return ("<section id=reliability><h2>Annotator reliability</h2><p>Reliability: the share of an "
            "annotator's answers that are sound in the annotator model (what careful work on each "
            "control looks like; a departure is an answer beyond it — a constant label, a random "
            "click, a shifted box, a missed entity), with its 95% interval, averaged over the "
            "controls by their answers. <i>departs</i>: the model reads some of their answers as "
            "departures. σ and α (agreement beyond chance): pair-weighted means over the measured "
            "controls.</p><table class=reliability><tr><th>reliability</th><th>id</th><th>name</th>"
            f"<th>model</th><th>σ</th><th>α</th><th>tasks</th><th>pairs</th></tr>{rows}</table></section>")


def _ci2(ci: Any) -> str:
    if not isinstance(ci, (list, tuple)) or len(ci) != 2 or ci[0] is None or ci[1] is None:
        return ""
    return f" <span class=ci>[{ci[0]:.2f}, {ci[1]:.2f}]</span>"


def _consensus_cell(e: ControlReport, rec: Any, names: dict[str, str]) -> str:
    if rec is None or rec.consensus_p is None:
        return "<td>–</td>"
    if rec.consensus is not None:
        what = html.escape(str(rec.consensus))
    elif rec.consensus_by is not None:
        what = f"{html.escape(names.get(rec.consensus_by, rec.consensus_by))}'s"
    else:
        what = "–"
    return f"<td>{what} <span class=ci>({rec.consensus_p:.2f})</span></td>"


def _consensus_table(report: Report) -> str:
    """The consensus answers: flagged tasks first (most likely first), then the least
    certain consensus; per control the answer and its posterior, and why a task is flagged."""
    controls = [n for n, c in report.controls.items() if c.measured and c.flags is not None]
    if not controls:
        return ""
    names = {a: (v.name or a) for a, v in report.annotators.items()}

    def certainty(tid: str) -> float:
        ps = [report.controls[c].items[tid].consensus_p for c in controls
              if tid in report.controls[c].items and report.controls[c].items[tid].consensus_p is not None]
        return min(ps) if ps else 1.0

    order = sorted(report.tasks, key=lambda t: (not report.tasks[t].flag, -(report.tasks[t].p_flag or 0.0),
                                                certainty(t), t))
    shown = order[:_MAX_CONSENSUS]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in controls)
    body = "".join(
        f"<tr><td>{html.escape(t)}</td><td>{_f(report.tasks[t].p_flag, 2)}</td>"
        + "".join(_consensus_cell(report.controls[c], report.controls[c].items.get(t), names) for c in controls)
        + f"<td>{html.escape('; '.join(f'{c}: {w}' for c, w in report.tasks[t].reasons.items()))}</td></tr>"
        for t in shown)
    more = f"<p>… and {len(order) - len(shown)} more tasks (all in report.json).</p>" if len(order) > len(shown) else ""
    return ("<section id=consensus><h2>Consensus answers</h2><p>Each task's most likely answer per "
            "control, with its posterior: for labels the label, for any other answer the one of the "
            "annotator closest to all the others (the medoid: <i>name's</i>). Flagged tasks first: the posterior that "
            "the task holds a departing answer or is ambiguous, and who departs and how (an "
            "annotator whose answer is the consensus is never named). With "
            "<code>[sync] consensus_prediction = true</code> the consensus is a prediction in Label "
            "Studio, accepted in one click.</p>"
            f"<div class=wide><table class=consensus><tr><th>task</th><th>flag posterior</th>{head}<th>why</th></tr>"
            f"{body}</table></div>{more}</section>")


def render_html(report: Report, *, pair_base: str | None = None, project_id: int | None = None) -> str:
    """The quality page of a report: one self-contained HTML document (no external files).

    Parameters
    ----------
    report : Report
        Output of :func:`~.build.build_report` (or ``Report.from_dict`` of a stored one).
    pair_base, project_id : str and int, optional
        The address of ``ls-agreement serve`` ("" for a page it answers itself) and the
        project's id: each annotator-pair heatmap cell then links to serve's
        ``/projects/<id>/pair``, which opens the tasks both annotators annotated in Label
        Studio's Data Manager. Without them (a page written to a file) cells have no link.

    Returns
    -------
    str
        HTML with inline CSS, inline SVG charts and one inline script (sortable tables, a
        control filter, chart tooltips); paper 000 §6.1 pathologies explained.
    """
    controls = report.controls
    link = pair_link(pair_base, project_id) if pair_base is not None and project_id is not None else None
    summary = "".join(
        f"<tr><td><a href='#c-{html.escape(n)}'>{html.escape(n)}</a></td><td>{html.escape(str(e.tag))}</td>"
        f"<td><code>{html.escape(str(e.distance))}</code></td><td>{_f(e.alpha)}</td>"
        f"<td>{_f(e.ks)}</td><td>{_f(e.sigma)}</td><td>{e.n_items}</td>"
        f"<td>{_flag_cell(e)}</td></tr>"
        for n, e in controls.items())
    unmeasured = [(n, e) for n, e in controls.items() if not e.measured]
    left_out = ""
    if unmeasured:
        left_out = ("<p class=unmeasured>Not measured, so left out of the flags, of each task's σ and of "
                    "the annotators' means: " + "; ".join(
                        f"<a href='#c-{html.escape(n)}'>{html.escape(n)}</a> "
                        f"({html.escape(_status_text(e))})" for n, e in unmeasured) + ".</p>")
    warn = "".join(f"<li>{html.escape(w)}</li>" for w in report.warnings[:300])
    body = (f"<h1>Annotation quality</h1>{control_filter(controls)}<p>{report.n_tasks} tasks · {report.n_flagged} flagged "
            "(the posterior that a task holds a departing answer or is ambiguous reaches "
            f"{_f((report.settings or {}).get('flag_posterior', 0.5), 2)})</p>"
            f"{_annotators_table(report)}{_consensus_table(report)}{_flag_rule(report)}"
            "<h3>Controls</h3><table><tr><th>control</th><th>tag</th><th>distance</th><th>α</th><th>KS</th><th>σ</th>"
            f"<th>tasks</th><th>flagged</th></tr>{summary}</table>{left_out}"
            + members_table(report) + project_pairs_html(report, link)
            + "".join(_control_section(n, e, report, link) for n, e in controls.items())
            + (f"<section><h2>Warnings</h2><ul class=warn>{warn}</ul></section>" if warn else ""))
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>ls-agreement quality</title>"
            f"<style>{_CSS}\n{PAGE_CSS}</style></head><body>{body}{page_script()}</body></html>")


def _cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return v


def annotator_rows(report: Report) -> list[dict[str, Any]]:
    """The per-annotator table — one schema (:data:`ANNOTATOR_COLUMNS`) for the CSV of
    ``report --format csv`` and the ``annotators.csv`` of every sync: one row per
    (control, annotator), then one ``(project)`` row per annotator."""
    rows: list[dict[str, Any]] = []
    for name, e in report.controls.items():
        for a, v in e.annotators.items():
            s_ci = v.ci.sigma if v.ci is not None else (None, None)
            a_ci = v.ci.alpha if v.ci is not None else (None, None)
            rows.append({"control": name, "annotator": a, "name": v.name or a, "reliability": v.reliability,
                         "reliability_ci_low": v.reliability_ci[0], "reliability_ci_high": v.reliability_ci[1],
                         "sigma": v.sigma,
                         "sigma_ci_low": s_ci[0], "sigma_ci_high": s_ci[1], "alpha": v.alpha,
                         "alpha_ci_low": a_ci[0], "alpha_ci_high": a_ci[1], "mean_distance": v.mean_distance,
                         "n_pairs": v.n_pairs, "n_items": v.n_items, "crowdtruth_wqs": e.crowdtruth_wqs(a),
                         "co_annotators": json.dumps(v.pairs, sort_keys=True), **quality_cells(e, a)})
    for a, p in report.annotators.items():
        rows.append({"control": PROJECT_ROW, "annotator": a, "name": p.name or a, "reliability": p.reliability,
                     "reliability_ci_low": p.reliability_ci[0], "reliability_ci_high": p.reliability_ci[1],
                     "sigma": p.sigma,
                     "sigma_ci_low": None, "sigma_ci_high": None, "alpha": p.alpha, "alpha_ci_low": None,
                     "alpha_ci_high": None, "mean_distance": None, "n_pairs": p.n_pairs, "n_items": p.n_items,
                     "crowdtruth_wqs": None, "co_annotators": "{}", **dict.fromkeys(QUALITY_COLUMNS)})
    return rows


def render_csv(report: Report) -> tuple[str, str]:
    """Two CSV texts: per (control, task) and per (control, annotator).

    Returns
    -------
    (tasks_csv, annotators_csv) : tuple of str
        Columns :data:`TASK_COLUMNS` and :data:`ANNOTATOR_COLUMNS`; empty numbers are "".
    """
    t_buf, a_buf = io.StringIO(), io.StringIO()
    tw = csv.writer(t_buf, lineterminator="\n")
    tw.writerow(TASK_COLUMNS)
    for name, e in report.controls.items():
        for task, v in e.items.items():
            tw.writerow([name, task, _cell(v.sigma), _cell(v.alpha), _cell(v.mean_distance), v.n_pairs,
                         _cell(bool(v.flag)), ";".join(v.annotators), _cell(v.p_flag),
                         _cell(v.consensus if isinstance(v.consensus, (str, int, float)) else None),
                         _cell(v.consensus_by), _cell(v.consensus_p)])
    aw = csv.DictWriter(a_buf, fieldnames=ANNOTATOR_COLUMNS, lineterminator="\n")
    aw.writeheader()
    for row in annotator_rows(report):
        aw.writerow({k: _cell(v) for k, v in row.items()})
    return t_buf.getvalue(), a_buf.getvalue()

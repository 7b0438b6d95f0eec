"""Report dict -> CSV files and the self-contained HTML quality page.

CSV (README): ``render_csv`` returns two tables: one row per (control, task) and one row
per (control, annotator), the latter with ``control = "(project)"`` rows for the
project-level summary. The HTML page (``render_html``) is the admins' quality page, also
served by the plugin: inline CSS, plots as embedded PNG (matplotlib's object API, no
pyplot global state, so it is safe in a server thread).
"""
from __future__ import annotations

import base64
import csv
import html
import io
import json
from typing import Any

__all__ = ["render_html", "render_csv", "TASK_COLUMNS", "ANNOTATOR_COLUMNS"]

TASK_COLUMNS = ["control", "task", "sigma", "alpha", "mean_distance", "n_pairs", "flag", "annotators"]
ANNOTATOR_COLUMNS = ["control", "annotator", "name", "sigma", "sigma_ci_low", "sigma_ci_high", "alpha",
                     "alpha_ci_low", "alpha_ci_high", "mean_distance", "n_pairs", "n_items"]
_MAX_FLAGGED = 50

# Why a pathology of paper 000 §6.1 matters, keyed by a phrase of the engine's diagnostic.
_EXPLAIN = {
    "low end": "Most chance pairs already agree (few possible values or one dominant answer), so "
               "d* sits at the bottom of the scale and σ cannot rise above the share of exact "
               "matches; read α and KS, and consider a finer-grained distance.",
    "high end": "Observed distances sit at the maximum: the distance only rewards exact matches. "
                "A lenient distance (IoU instead of exact boxes, lenient spans, token edit "
                "distance) separates near-agreement from chance better; try distance = auto.",
    "multi-modal": "The chance distances form several clusters (e.g. empty vs non-empty answers), "
                   "so one threshold d* summarises them poorly; look at the plot and the flagged "
                   "tasks rather than the headline σ alone.",
    "single value": "Tasks annotated by one person cannot be compared and do not count.",
    "sample": "The chance baseline comes from a random sample of between-task pairs (seeded): "
              "repeat with another seed to see the sampling spread.",
}


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


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return ("<img alt='plot' src='data:image/png;base64,"
            + base64.b64encode(buf.getvalue()).decode("ascii") + "'>")


def _distribution_plot(entry: dict) -> str:
    hist = entry.get("histogram")
    if not hist:
        return ""
    from matplotlib.figure import Figure
    import numpy as np

    edges = np.asarray(hist["edges"], dtype=float)
    obs = np.asarray(hist["observed"], dtype=float)
    exp = np.asarray(hist["expected"], dtype=float)
    width = np.diff(edges)
    fig = Figure(figsize=(6.0, 2.8))
    ax = fig.add_subplot(1, 1, 1)
    if obs.sum() > 0:
        ax.stairs(obs / obs.sum() / width, edges, label="observed (same task)", color="#1f6feb", linewidth=2)
    if exp.sum() > 0:
        ax.stairs(exp / exp.sum() / width, edges, label="expected (different tasks)", color="#999",
                  fill=True, alpha=0.4)
    if entry.get("threshold") is not None:
        ax.axvline(entry["threshold"], color="#d1242f", linestyle="--", label=f"d* = {entry['threshold']:.3g}")
    ax.set_xlabel(f"distance ({entry.get('distance')})")
    ax.set_ylabel("density")
    ax.legend(fontsize=8, frameon=False)
    return _png(fig)


def _annotator_plot(entry: dict) -> str:
    anns = [(k, v) for k, v in entry.get("annotators", {}).items() if v.get("sigma") is not None]
    if not anns:
        return ""
    from matplotlib.figure import Figure

    anns.sort(key=lambda kv: kv[1]["sigma"])
    anns = anns[:40]
    labels = [str(v.get("name") or k)[:24] for k, v in anns]
    fig = Figure(figsize=(6.0, 0.3 * len(anns) + 1.0))
    for col, key in enumerate(("sigma", "alpha")):
        ax = fig.add_subplot(1, 2, col + 1)
        vals = [v.get(key) if v.get(key) is not None else 0.0 for _, v in anns]
        lo, hi = [], []
        for k, (_, v) in enumerate(anns):
            ci = (v.get("ci") or {}).get(key) or [None, None]
            lo.append(max(0.0, vals[k] - ci[0]) if ci[0] is not None else 0.0)
            hi.append(max(0.0, ci[1] - vals[k]) if ci[1] is not None else 0.0)
        ax.barh(range(len(anns)), vals, xerr=[lo, hi], color="#1f6feb" if key == "sigma" else "#8250df",
                ecolor="#333", capsize=2)
        ax.set_yticks(range(len(anns)))
        ax.set_yticklabels(labels if col == 0 else [""] * len(anns), fontsize=8)
        ax.set_xlabel("σ" if key == "sigma" else "α")
        ax.axvline(0, color="#666", linewidth=0.5)
    return _png(fig)


def _explain(diags: list[str]) -> str:
    out = []
    for d in diags:
        why = next((txt for key, txt in _EXPLAIN.items() if key in d), "")
        out.append(f"<li><b>{html.escape(d)}</b>" + (f"<br><span class=why>{html.escape(why)}</span>" if why else "") + "</li>")
    return "<ul class=diag>" + "".join(out) + "</ul>" if out else ""


def _flagged(entry: dict) -> str:
    rows = [(k, v) for k, v in entry.get("items", {}).items() if v.get("flag")]
    if not rows:
        return "<p>No flagged task.</p>"
    rows.sort(key=lambda kv: (kv[1]["sigma"] if kv[1]["sigma"] is not None else -1.0,
                              -(kv[1].get("mean_distance") or 0.0)))
    body = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{_f(v['sigma'])}</td><td>{_f(v['alpha'])}</td>"
        f"<td>{_f(v['mean_distance'])}</td><td>{v['n_pairs']}</td>"
        f"<td>{html.escape(', '.join(v.get('annotators', [])))}</td></tr>" for k, v in rows[:_MAX_FLAGGED])
    more = f"<p>… and {len(rows) - _MAX_FLAGGED} more.</p>" if len(rows) > _MAX_FLAGGED else ""
    return (f"<p>{len(rows)} flagged task(s) (σ below {_f(entry.get('flag_below'))}), worst first:</p>"
            "<table><tr><th>task</th><th>σ</th><th>α</th><th>mean distance</th><th>pairs</th>"
            f"<th>annotators</th></tr>{body}</table>{more}")


def _status_text(e: dict) -> str:
    """``no_variation`` -> "no variation" (why a control has no agreement numbers)."""
    return str(e.get("status", "ok")).replace("_", " ")


def _flag_cell(e: dict) -> str:
    if e.get("status", "ok") != "ok":
        return f"not measured: {html.escape(_status_text(e))}"
    return str(sum(1 for v in e.get("items", {}).values() if v.get("flag")))


def _control_section(name: str, e: dict) -> str:
    form = "Krippendorff's canonical weighting" if e.get("form") == "canonical" else "pairwise means (paper 000)"
    ci = e.get("ci", {})
    head = (f"<h2 id='c-{html.escape(name)}'>{html.escape(name)} <small>{html.escape(str(e.get('tag')))} · "
            f"{html.escape(str(e.get('kind')))}</small></h2>")
    nums = (f"<div class=cards><div><b>α</b> {_f(e.get('alpha'))}{_ci(ci.get('alpha'))}<br><small>{form}</small></div>"
            f"<div><b>KS</b> {_f(e.get('ks'))}{_ci(ci.get('ks'))}<br><small>D+ = {_f(e.get('ks_statistic'))}</small></div>"
            f"<div><b>σ</b> {_f(e.get('sigma'))}{_ci(ci.get('sigma'))}<br><small>d* = {_f(e.get('threshold'))}, "
            f"p = {_f(e.get('p'))}</small></div></div>"
            f"<p>distance <code>{html.escape(str(e.get('distance')))}</code> · {e.get('n_items')} tasks · "
            f"{e.get('n_pairs')} observed pairs · {e.get('n_expected_pairs')} expected pairs · "
            f"95% item bootstrap, {ci.get('bootstrap')} resamples, seed {ci.get('seed')}</p>")
    if e.get("status", "ok") != "ok":
        nums = (f"<p class=unmeasured><b>Not measured:</b> {html.escape(str(e.get('reason')))}. This control "
                "takes no part in the flags, in each task's σ or in the annotators' means.</p>")
    cands = ""
    if e.get("candidates"):
        rows = "".join(f"<tr><td><code>{html.escape(c['distance'])}</code></td><td>{_f(c['ks'])}</td>"
                       f"<td>{_f(c['alpha'])}</td><td>{_f(c['sigma'])}</td></tr>" for c in e["candidates"])
        cands = ("<details><summary>distance chosen by KS (auto)</summary><table><tr><th>distance</th>"
                 f"<th>KS</th><th>α</th><th>σ</th></tr>{rows}</table></details>")
    seeds = ""
    for key in ("kappa_x", "span_f1", "crowdtruth"):
        if key in e:
            seeds += (f"<details><summary>{key}</summary><pre>"
                      f"{html.escape(json.dumps(e[key], indent=1, default=str)[:20000])}</pre></details>")
    warn = "".join(f"<li>{html.escape(w)}</li>" for w in e.get("warnings", []))
    return (f"<section class=control>{head}{nums}{cands}{_explain(e.get('diagnostics', []))}"
            f"<div class=plots>{_distribution_plot(e)}{_annotator_plot(e)}</div>"
            f"<h3>Flagged tasks</h3>{_flagged(e)}{seeds}"
            + (f"<ul class=warn>{warn}</ul>" if warn else "") + "</section>")


_CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#1f2328}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #d0d7de;padding:2px 8px;font-size:.9em}
th{background:#f6f8fa}.cards{display:flex;gap:1em}.cards div{border:1px solid #d0d7de;border-radius:6px;
padding:.5em 1em;font-size:1.2em}.ci{color:#57606a;font-size:.8em}small{color:#57606a}
section{border-top:2px solid #d0d7de;margin-top:2em}.warn{color:#9a6700}.diag .why{color:#57606a}
.plots img{max-width:100%;margin-right:1em}"""


def render_html(report: dict) -> str:
    """The quality page of a report: one self-contained HTML document (no external files).

    Parameters
    ----------
    report : dict
        Output of :func:`ls_agreement.plugin.report.build.build_report` (possibly round-tripped
        through JSON).

    Returns
    -------
    str
        HTML with inline CSS and embedded PNG plots (paper 000 §6.1 pathologies explained).
    """
    controls = report.get("controls", {})
    tasks = report.get("tasks", {})
    n_flag = sum(1 for t in tasks.values() if t.get("flag"))
    summary = "".join(
        f"<tr><td><a href='#c-{html.escape(n)}'>{html.escape(n)}</a></td><td>{html.escape(str(e.get('tag')))}</td>"
        f"<td><code>{html.escape(str(e.get('distance')))}</code></td><td>{_f(e.get('alpha'))}</td>"
        f"<td>{_f(e.get('ks'))}</td><td>{_f(e.get('sigma'))}</td><td>{e.get('n_items')}</td>"
        f"<td>{_flag_cell(e)}</td></tr>"
        for n, e in controls.items())
    unmeasured = [(n, e) for n, e in controls.items() if e.get("status", "ok") != "ok"]
    left_out = ""
    if unmeasured:
        left_out = ("<p class=unmeasured>Not measured, so left out of the flags, of each task's σ and of "
                    "the annotators' means: " + "; ".join(
                        f"<a href='#c-{html.escape(n)}'>{html.escape(n)}</a> "
                        f"({html.escape(_status_text(e))})" for n, e in unmeasured) + ".</p>")
    anns = "".join(
        f"<tr><td>{html.escape(a)}</td><td>{html.escape(str(v.get('name')))}</td><td>{_f(v.get('sigma'))}</td>"
        f"<td>{_f(v.get('alpha'))}</td><td>{v.get('n_items')}</td><td>{v.get('n_pairs')}</td></tr>"
        for a, v in sorted(report.get("annotators", {}).items(),
                           key=lambda kv: (kv[1].get("sigma") is None, kv[1].get("sigma") or 0.0)))
    warn = "".join(f"<li>{html.escape(w)}</li>" for w in report.get("warnings", [])[:300])
    body = (f"<h1>Annotation quality</h1><p>{report.get('n_tasks', len(tasks))} tasks · {n_flag} flagged "
            "(σ below threshold in at least one control; a task's σ is its minimum over controls)</p>"
            "<table><tr><th>control</th><th>tag</th><th>distance</th><th>α</th><th>KS</th><th>σ</th>"
            f"<th>tasks</th><th>flagged</th></tr>{summary}</table>{left_out}"
            "<h3>Annotators</h3><p>σ and α: pair-weighted means over the measured controls.</p>"
            "<table><tr><th>id</th>"
            f"<th>name</th><th>σ</th><th>α</th><th>tasks</th><th>pairs</th></tr>{anns}</table>"
            + "".join(_control_section(n, e) for n, e in controls.items())
            + (f"<section><h2>Warnings</h2><ul class=warn>{warn}</ul></section>" if warn else ""))
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>ls-agreement quality</title>"
            f"<style>{_CSS}</style></head><body>{body}</body></html>")


def _cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return v


def render_csv(report: dict) -> tuple[str, str]:
    """Two CSV texts: per (control, task) and per (control, annotator).

    Returns
    -------
    (tasks_csv, annotators_csv) : tuple of str
        Columns :data:`TASK_COLUMNS` and :data:`ANNOTATOR_COLUMNS`; empty numbers are "".
    """
    t_buf, a_buf = io.StringIO(), io.StringIO()
    tw, aw = csv.writer(t_buf, lineterminator="\n"), csv.writer(a_buf, lineterminator="\n")
    tw.writerow(TASK_COLUMNS)
    aw.writerow(ANNOTATOR_COLUMNS)
    for name, e in report.get("controls", {}).items():
        for task, v in e.get("items", {}).items():
            tw.writerow([name, task, _cell(v.get("sigma")), _cell(v.get("alpha")), _cell(v.get("mean_distance")),
                         v.get("n_pairs", 0), _cell(bool(v.get("flag"))), ";".join(v.get("annotators", []))])
        for a, v in e.get("annotators", {}).items():
            ci = v.get("ci", {})
            s_ci, a_ci = ci.get("sigma", [None, None]), ci.get("alpha", [None, None])
            aw.writerow([name, a, v.get("name", a), _cell(v.get("sigma")), _cell(s_ci[0]), _cell(s_ci[1]),
                         _cell(v.get("alpha")), _cell(a_ci[0]), _cell(a_ci[1]), _cell(v.get("mean_distance")),
                         v.get("n_pairs", 0), v.get("n_items", 0)])
    for a, v in report.get("annotators", {}).items():
        aw.writerow(["(project)", a, v.get("name", a), _cell(v.get("sigma")), "", "", _cell(v.get("alpha")),
                     "", "", "", v.get("n_pairs", 0), v.get("n_items", 0)])
    return t_buf.getvalue(), a_buf.getvalue()

"""The HTML of ``serve``'s project list (``GET /``): the served projects with their
headline numbers, last job and update time. The quality page itself is
:func:`~ls_agreement.plugin.report.render.render_html`."""
from __future__ import annotations

import html
import time
from typing import Any, Iterable

from .job_backend import JobBackend

__all__ = ["index_page", "when"]


def index_page(queue: JobBackend, served: Iterable[int]) -> str:
    """The list of served projects with their headline numbers."""
    rows = queue.projects()
    last_jobs: dict[int, Any] = {}
    for j in queue.recent(200):
        last_jobs.setdefault(j.project_id, j)
    ids = sorted(set(int(p) for p in served))
    body = []
    for pid in ids:
        row = rows.get(pid) or {}
        s = row.get("summary") or {}
        ctrls = s.get("controls") or {}
        job = last_jobs.get(pid)
        status = (f"{job.status}" + (f": {html.escape(job.error[:120])}"
                                     if job.error else "")) if job else "–"
        numbers = "<br>".join(
            f"<code>{html.escape(n)}</code> α={_f(c.get('alpha'))} σ={_f(c.get('sigma'))}"
            f" KS={_f(c.get('ks'))} <small>({html.escape(str(c.get('distance')))}, "
            f"{c.get('n_items')} tasks)</small>" for n, c in ctrls.items()) or "no report yet"
        title = html.escape(str(s.get("title") or f"project {pid}"))
        link = (f"<a href='/projects/{pid}'>{title}</a>" if row.get("report_path")
                else title)
        body.append(f"<tr><td>{pid}</td><td>{link}</td><td>{numbers}</td>"
                    f"<td>{s.get('n_tasks', '–')}</td><td>{s.get('n_flagged', '–')}</td>"
                    f"<td>{when(row.get('updated_at'))}</td><td>{status}</td></tr>")
    counts = queue.counts()
    table = ("<table><tr><th>id</th><th>project</th><th>agreement per control</th>"
             "<th>tasks</th><th>flagged</th><th>updated</th><th>last job</th></tr>"
             + "".join(body) + "</table>") if body else "<p>No project served yet: run " \
        "<code>ls-agreement connect --project ID ...</code>.</p>"
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            "<title>ls-agreement</title><style>body{font-family:system-ui,sans-serif;"
            "margin:2em;color:#1f2328}table{border-collapse:collapse}td,th{border:1px "
            "solid #d0d7de;padding:.3em .6em;text-align:left;vertical-align:top}"
            "small{color:#57606a}</style></head><body><h1>Annotation quality</h1>"
            f"{table}<p><small>jobs: {counts['pending']} pending, {counts['running']} "
            f"running, {counts['done']} done, {counts['failed']} failed · "
            "<a href='/jobs'>/jobs</a> · <a href='/health'>/health</a></small></p>"
            "</body></html>")


def _f(v: Any) -> str:
    return f"{v:.3f}" if isinstance(v, (int, float)) and not isinstance(v, bool) else "–"


def when(ts: Any) -> str:
    if not isinstance(ts, (int, float)):
        return "–"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))

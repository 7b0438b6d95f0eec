"""HTTP side of ``ls-agreement serve``: the webhook endpoint and the admins' quality page.

Routes (stdlib ``ThreadingHTTPServer``; one thread per request)::

    POST /webhook                  Label Studio events → 200 queued | 401 | 400 | 503
    GET  /                         served projects with their headline numbers (HTML)
    GET  /projects/<id>            latest report as the quality page (adapters.render)
    GET  /projects/<id>/report.json  latest report (JSON)
    GET  /jobs[?limit=N&project=ID]  recent jobs with status (JSON)
    GET  /health                   {"status": "UP"|"DEGRADED", ...} (503 when the worker died)

The pages have no authentication of their own: bind to 127.0.0.1 (the default) or put the
service behind the same proxy/auth as Label Studio.
"""
from __future__ import annotations

import html
import json
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterable, TextIO
from urllib.parse import parse_qs, urlsplit

from .jobs import JobQueue
from .webhooks import MAX_BODY, Receiver

_PROJECT = re.compile(r"^/projects/(\d+)(/report\.json)?/?$")


@dataclass
class App:
    """What the request handlers read.

    ``projects()`` lists the served project ids; ``worker_alive()`` reports the worker
    thread; ``ls_url`` links back to Label Studio.
    """

    queue: JobQueue
    receiver: Receiver
    projects: Callable[[], Iterable[int]]
    worker_alive: Callable[[], bool] = lambda: True
    ls_url: str = ""
    log: TextIO | None = sys.stderr
    started_at: float = field(default_factory=time.time)
    _cache: dict[int, tuple[tuple[str, int, int], str]] = field(default_factory=dict)
    _cache_lock: threading.Lock = field(default_factory=threading.Lock)

    # -- reports --------------------------------------------------------------------------
    def report_path(self, project_id: int) -> Path | None:
        row = self.queue.projects().get(int(project_id))
        p = row.get("report_path") if row else None
        return Path(p) if p and Path(p).exists() else None

    def report_html(self, project_id: int, path: Path) -> str:
        """render_html of a report file, cached until the file changes (plots are costly)."""
        from .report.model import Report
        from .report.render import render_html

        st = path.stat()
        key = (str(path), st.st_mtime_ns, st.st_size)
        with self._cache_lock:
            hit = self._cache.get(project_id)
            if hit is not None and hit[0] == key:
                return hit[1]
        report, header = Report.from_file(json.loads(path.read_text(encoding="utf-8")))
        page = render_html(report)
        title = header.get("project_title") or f"project {project_id}"
        link = (f" · <a href='{html.escape(self.ls_url)}/projects/{project_id}/data'>open in "
                "Label Studio</a>" if self.ls_url else "")
        nav = (f"<nav><a href='/'>all projects</a> · <b>{html.escape(str(title))}</b>"
               f" · <a href='/projects/{project_id}/report.json'>report.json</a>{link}"
               f"<br><small>generated {_when(header.get('generated_at'))}</small></nav>")
        page = page.replace("<body>", "<body>" + nav, 1)
        with self._cache_lock:
            self._cache[project_id] = (key, page)
        return page

    def index_html(self) -> str:
        """The list of served projects with their headline numbers."""
        rows = self.queue.projects()
        last_jobs: dict[int, Any] = {}
        for j in self.queue.recent(200):
            last_jobs.setdefault(j.project_id, j)
        served = sorted(set(int(p) for p in self.projects()))
        body = []
        for pid in served:
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
                        f"<td>{_when(row.get('updated_at'))}</td><td>{status}</td></tr>")
        counts = self.queue.counts()
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


def _when(ts: Any) -> str:
    if not isinstance(ts, (int, float)):
        return "–"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


class Handler(BaseHTTPRequestHandler):
    """Routes requests to the :class:`App` attached to the server."""

    server: "QualityServer"
    server_version = "ls-agreement"
    protocol_version = "HTTP/1.1"

    # -- plumbing -------------------------------------------------------------------------
    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj, default=str, indent=1).encode(),
                   "application/json; charset=utf-8")

    def _html(self, status: int, text: str) -> None:
        self._send(status, text.encode("utf-8"), "text/html; charset=utf-8")

    def log_message(self, fmt: str, *args: Any) -> None:
        log = self.server.app.log
        if log is not None:
            print(f"{self.address_string()} {fmt % args}", file=log, flush=True)

    def _guard(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as exc:  # noqa: BLE001 - an error page, never a traceback
            self.log_message("internal error on %s: %s: %s", self.path, type(exc).__name__, exc)
            try:
                self._json(500, {"status": "error", "error": f"{type(exc).__name__}: {exc}"})
            except OSError:
                pass

    # -- methods --------------------------------------------------------------------------
    def do_POST(self) -> None:
        self._guard(self._post)

    def do_GET(self) -> None:
        self._guard(self._get)

    def do_HEAD(self) -> None:
        self._guard(self._get)

    def _not_allowed(self) -> None:
        self._json(405, {"status": "error", "error": f"{self.command} not allowed here"})

    do_PUT = do_DELETE = do_PATCH = _not_allowed

    def _post(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        if path != "/webhook":
            if path in ("", "/health", "/jobs") or _PROJECT.match(path):
                return self._not_allowed()
            return self._json(404, {"status": "error", "error": f"no route {path}"})
        length = self.headers.get("Content-Length")
        if length is None or not length.strip().isdigit():
            self.close_connection = True
            return self._json(411, {"status": "rejected", "error": "Content-Length required"})
        n = int(length)
        if n > MAX_BODY:
            self.close_connection = True
            return self._json(413, {"status": "rejected",
                                    "error": f"body of {n} bytes exceeds {MAX_BODY}"})
        body = self.rfile.read(n)
        status, out = self.server.app.receiver.handle(self.headers, body)
        self._json(status, out)

    def _get(self) -> None:
        app = self.server.app
        url = urlsplit(self.path)
        path = url.path
        if path in ("/", "/index.html"):
            return self._html(200, app.index_html())
        if path.rstrip("/") == "/health":
            alive = app.worker_alive()
            return self._json(200 if alive else 503, {
                "status": "UP" if alive else "DEGRADED", "worker_alive": alive,
                "uptime": round(time.time() - app.started_at, 1),
                "jobs": app.queue.counts(), "projects": sorted(set(app.projects())),
                # per project: differences reconciles found (lost events), republished tasks
                "live": {str(k): v for k, v in app.queue.live_stats().items()},
                "webhooks": app.receiver.ack_stats()})
        if path.rstrip("/") == "/jobs":
            q = parse_qs(url.query)
            try:
                limit = min(500, max(1, int(q.get("limit", ["50"])[0])))
                project = int(q["project"][0]) if "project" in q else None
            except ValueError:
                return self._json(400, {"status": "error",
                                        "error": "limit and project must be integers"})
            jobs = [j.to_dict() for j in app.queue.recent(limit, project)]
            return self._json(200, {"counts": app.queue.counts(), "jobs": jobs})
        m = _PROJECT.match(path)
        if m:
            pid = int(m.group(1))
            report = app.report_path(pid)
            if report is None:
                known = pid in set(app.projects())
                msg = (f"project {pid}: no report yet (see /jobs?project={pid})" if known
                       else f"project {pid} is not served here")
                if m.group(2):
                    return self._json(404, {"status": "error", "error": msg})
                return self._html(404, f"<!DOCTYPE html><p>{html.escape(msg)}</p>"
                                       "<p><a href='/'>all projects</a></p>")
            if m.group(2):
                return self._send(200, report.read_bytes(), "application/json; charset=utf-8")
            return self._html(200, app.report_html(pid, report))
        self._json(404, {"status": "error", "error": f"no route {path}"})


class QualityServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` carrying the :class:`App`."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], app: App) -> None:
        self.app = app
        super().__init__(address, Handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

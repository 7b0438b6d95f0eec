"""HTTP side of ``ls-agreement serve``: the webhook endpoint, the JSON API and the quality pages.

FastAPI application served by uvicorn in a thread of the service
(:class:`~.web_server.QualityServer`)::

    POST /webhook                    Label Studio events → 200 queued | 401 | 400 | 411 | 413 | 503
    GET  /                           served projects with their headline numbers (HTML)
    GET  /projects/<id>              latest report as the quality page (adapters.render)
    GET  /projects/<id>/report.json  latest report (JSON)
    GET  /projects/<id>/pair?a=&b=   → 303 to Label Studio's Data Manager tab of the tasks
                                     annotators a and b both annotated (a saved view)
    GET  /jobs[?limit=N&project=ID]  recent jobs with status (JSON)
    GET  /health                     {"status": "UP"|"DEGRADED", ...} (503 when the worker died)
    GET  /openapi.json               OpenAPI description of the routes above

``/webhook`` checks the shared-secret header before reading the body and refuses bodies
over ``webhooks.MAX_BODY`` from their Content-Length, or while streaming a chunked one.
Every other route follows :class:`~ls_agreement.plugin.web_auth.ApiAuth`: open on a
loopback bind, else a token is required (``/health`` then answers only its status to a
request without one, enough for a liveness probe). The request log redacts tokens.
"""
from __future__ import annotations

import html
import json
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, TextIO

import anyio
import anyio.to_thread
from fastapi import Depends, FastAPI, Header, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, Response
from fastapi.security import APIKeyQuery, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from . import webhooks
from .job_backend import JobBackend
from .web_auth import ApiAuth, AuthUnavailable, token_from
from .web_models import REPORT_DOC, ErrorOut, HealthOut, JobsOut, WebhookOut
from .web_middleware import Plumbing, TokenCookie
from .web_pages import index_page, when
from .webhooks import SECRET_HEADER, Receiver, WebhookRejected, authenticate

REQUEST_TIMEOUT = 60.0      # s: reading a webhook body, answering a page or the JSON API
JSON_TYPE = "application/json; charset=utf-8"


@dataclass
class App:
    """What the request handlers read.

    ``projects()`` lists the served project ids; ``worker_alive()`` reports the worker
    thread; ``ls_url`` links back to Label Studio; ``auth`` decides who reads the pages
    and the JSON API; ``request_timeout`` bounds reading a webhook body and answering a
    page (rendering a report's plots can take seconds on a busy machine).
    """

    queue: JobBackend
    receiver: Receiver
    projects: Callable[[], Iterable[int]]
    worker_alive: Callable[[], bool] = lambda: True
    ls_url: str = ""
    log: TextIO | None = sys.stderr
    started_at: float = field(default_factory=time.time)
    auth: ApiAuth = field(default_factory=lambda: ApiAuth(required=False))
    request_timeout: float = REQUEST_TIMEOUT
    queue_name: str = "sqlite"
    #: (project, a, b) -> id of the Data Manager view of a pair's shared tasks
    pair_view: Callable[[int, int, int], int] | None = None
    _cache: dict[int, tuple[tuple[str, int, int], str]] = field(default_factory=dict)
    _cache_lock: threading.Lock = field(default_factory=threading.Lock)

    # -- reports --------------------------------------------------------------------------
    def report_path(self, project_id: int) -> Path | None:
        # past one machine the file is a local copy of what a worker stored in Redis
        return self.queue.report_file(int(project_id))

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
        page = render_html(report, project_id=project_id,
                           pair_base="" if self.pair_view is not None and self.ls_url else None)
        title = header.get("project_title") or f"project {project_id}"
        link = (f" · <a href='{html.escape(self.ls_url)}/projects/{project_id}/data'>open in "
                "Label Studio</a>" if self.ls_url else "")
        nav = (f"<nav><a href='/'>all projects</a> · <b>{html.escape(str(title))}</b>"
               f" · <a href='/projects/{project_id}/report.json'>report.json</a>{link}"
               f"<br><small>generated {when(header.get('generated_at'))}</small></nav>")
        page = page.replace("<body>", "<body>" + nav, 1)
        with self._cache_lock:
            self._cache[project_id] = (key, page)
        return page

    def index_html(self) -> str:
        """The list of served projects with their headline numbers."""
        return index_page(self.queue, self.projects())


# -- helpers -----------------------------------------------------------------------------
def _json(status: int, obj: Any, *, close: bool = False,
          headers: dict[str, str] | None = None) -> Response:
    # indent=1 and default=str as the stdlib server answered: a human reads these too
    hdrs = dict(headers or {})
    if close:   # the body was not read: the connection cannot carry another request
        hdrs["Connection"] = "close"
    return Response(json.dumps(obj, default=str, indent=1).encode(), status_code=status,
                    media_type=JSON_TYPE, headers=hdrs)


def _html(status: int, text: str) -> HTMLResponse:
    return HTMLResponse(text, status_code=status)


# -- the application ---------------------------------------------------------------------
def create_app(app: App) -> FastAPI:
    """The FastAPI application over ``app`` (routes in the module docstring).

    Parameters
    ----------
    app : App
        Queue, receiver, served projects, access rule and timeouts.

    Returns
    -------
    FastAPI
        Without the interactive /docs (its page loads scripts from a CDN); the OpenAPI
        description is at ``/openapi.json``, under the same access rule as the API.
    """
    api = FastAPI(
        title="ls-agreement serve", version="1", docs_url=None, redoc_url=None,
        openapi_url=None,
        description="Webhook receiver, job status and agreement reports of "
                    "`ls-agreement serve`. Every route but `/webhook` needs a token unless "
                    "the service is bound to a loopback address without `--api-token`.")
    # declared for the OpenAPI security schemes; the token itself is read by token_from,
    # which also takes Label Studio's own `Authorization: Token <t>` and the cookie
    bearer = HTTPBearer(auto_error=False, scheme_name="bearer",
                        description="--api-token, or a Label Studio API token")
    query = APIKeyQuery(name="token", auto_error=False, scheme_name="token",
                        description="same token as a query parameter (sets a cookie)")

    def authorized(request: Request, _b: Any = Depends(bearer), _q: Any = Depends(query)) -> bool:
        # sync: FastAPI runs it in a worker thread, and a check may ask Label Studio
        try:
            return app.auth.accepts(token_from(request.headers, request.query_params,
                                               request.cookies))
        except AuthUnavailable as exc:
            raise HTTPException(503, str(exc)) from None

    def require_token(ok: bool = Depends(authorized)) -> None:
        if not ok:
            raise HTTPException(401, f"a token is required: {app.auth.schemes}, as "
                                     "'Authorization: Bearer <token>' or '?token=<token>'",
                                headers={"WWW-Authenticate": "Bearer"})

    guarded = [Depends(require_token)]
    errors: dict[int | str, dict[str, Any]] = {
        401: {"model": ErrorOut, "description": "token missing or refused"},
        503: {"model": ErrorOut, "description": "Label Studio could not check the token"},
        504: {"model": ErrorOut, "description": "not answered within --request-timeout"}}

    async def run(fn: Callable[..., Response], *args: Any) -> Response:
        """``fn(*args)`` in a worker thread, bounded by the request timeout.

        The thread is abandoned, not killed, at the timeout: a page render finishes in the
        background and fills the page cache, so the next request is answered at once.
        """
        with anyio.move_on_after(app.request_timeout):
            try:
                return await anyio.to_thread.run_sync(fn, *args, abandon_on_cancel=True)
            except Exception as exc:  # noqa: BLE001 - an error answer, never a traceback
                log_line(app, f"internal error: {type(exc).__name__}: {exc}")
                return _json(500, {"status": "error", "error": f"{type(exc).__name__}: {exc}"})
        return _json(504, {"status": "error", "error": f"not answered within "
                                                       f"{app.request_timeout:g} s"})

    # -- webhook ------------------------------------------------------------------------
    @api.post("/webhook", response_model=WebhookOut, tags=["webhook"],
              summary="Label Studio webhook events",
              responses={400: {"model": ErrorOut}, 401: {"model": ErrorOut},
                         408: {"model": ErrorOut}, 411: {"model": ErrorOut},
                         413: {"model": ErrorOut}, 503: {"model": ErrorOut}},
              openapi_extra={"requestBody": {"required": True, "content": {
                  "application/json": {"schema": {
                      "type": "object", "required": ["action"],
                      "description": "Label Studio's payload (send_payload=true)"}}}}})
    async def webhook(request: Request, secret: str | None = Header(
            None, alias=SECRET_HEADER, description="the shared secret of `--secret`"),
    ) -> Response:
        """Persist a coalesced job for the event's project before answering 200."""
        # ``secret`` is declared for the OpenAPI description; the check itself is the
        # receiver's (webhooks.authenticate, constant time) on the raw headers
        headers = request.headers
        try:
            authenticate(headers, app.receiver.secret)
        except WebhookRejected:
            # no work done: the body is not read; the receiver answers (and counts) the 401
            status, out = app.receiver.handle(headers, b"")
            return _json(status, out, close=True)
        limit = webhooks.MAX_BODY       # read now: tests and deployments may lower it
        length = headers.get("content-length")
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        if length is not None:
            if not length.strip().isdigit():
                return _json(400, {"status": "rejected", "error": "bad Content-Length"},
                             close=True)
            if int(length) > limit:
                return _json(413, {"status": "rejected", "error": f"body of {int(length)} "
                                   f"bytes exceeds {limit}"}, close=True)
        elif not chunked:
            return _json(411, {"status": "rejected", "error": "Content-Length required"},
                         close=True)
        parts: list[bytes] = []
        size = 0
        # a client trickling its body must not hold a connection forever
        with anyio.move_on_after(app.request_timeout) as scope:
            try:
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > limit:     # chunked bodies announce no length
                        return _json(413, {"status": "rejected", "error": f"body exceeds "
                                           f"{limit} bytes"}, close=True)
                    parts.append(chunk)
            except ClientDisconnect:
                return Response(status_code=400)     # nobody is left to read it
        if scope.cancelled_caught:
            return _json(408, {"status": "rejected", "error": f"body not received within "
                                                              f"{app.request_timeout:g} s"},
                         close=True)
        status, out = await anyio.to_thread.run_sync(app.receiver.handle, headers,
                                                     b"".join(parts))
        return _json(status, out)

    # alias: the stdlib server accepted a trailing slash; a redirect would lose a POST
    api.add_api_route("/webhook/", webhook, methods=["POST"], include_in_schema=False)

    # -- JSON API -------------------------------------------------------------------------
    @api.get("/health", response_model=HealthOut, tags=["api"], summary="Service health",
             responses={503: {"model": HealthOut, "description": "the worker died"}})
    async def health(ok: bool = Depends(authorized)) -> Response:
        """Worker, jobs, live-path and webhook statistics; only ``status`` without a token."""
        def answer() -> Response:
            alive = app.worker_alive()
            out: dict[str, Any] = {"status": "UP" if alive else "DEGRADED"}
            if ok:
                out.update({"worker_alive": alive,
                            "uptime": round(time.time() - app.started_at, 1),
                            "queue": app.queue_name, "webhooks": app.receiver.ack_stats()})
                try:
                    out.update({
                        "jobs": app.queue.counts(), "projects": sorted(set(app.projects())),
                        # per project: differences reconciles found (lost events), republished
                        "live": {str(k): v for k, v in app.queue.live_stats().items()}})
                except Exception as exc:  # noqa: BLE001 - Redis down: say so, do not 500
                    alive = False
                    out.update(status="DEGRADED", queue_error=f"{type(exc).__name__}: {exc}"[:300])
            return _json(200 if alive else 503, out)
        return await run(answer)

    @api.get("/jobs", response_model=JobsOut, tags=["api"], summary="Recent jobs",
             dependencies=guarded, responses={400: {"model": ErrorOut}, **errors})
    async def jobs(limit: int = Query(50, description="how many (clamped to 1..500)"),
                   project: int | None = Query(None, description="only this project"),
                   ) -> Response:
        """Job counts and the most recent jobs, newest first."""
        def answer() -> Response:
            n = min(500, max(1, limit))
            return _json(200, {"counts": app.queue.counts(),
                               "jobs": [j.to_dict() for j in app.queue.recent(n, project)]})
        return await run(answer)

    @api.get("/projects/{project_id:int}/report.json", tags=["api"], dependencies=guarded,
             summary="Latest report of a project", response_model=dict[str, Any],
             response_description=REPORT_DOC,
             responses={404: {"model": ErrorOut, "description": "no report (yet)"}, **errors})
    async def report_json(project_id: int) -> Response:
        """The latest report file of the project, as stored."""
        def answer() -> Response:
            path = app.report_path(project_id)
            if path is None:
                return _json(404, {"status": "error", "error": _missing(app, project_id)})
            return Response(path.read_bytes(), media_type=JSON_TYPE)
        return await run(answer)

    # -- pages ----------------------------------------------------------------------------
    @api.get("/", response_class=HTMLResponse, tags=["pages"], dependencies=guarded,
             summary="Served projects with their headline numbers", responses=errors)
    async def index() -> Response:
        return await run(lambda: _html(200, app.index_html()))

    api.add_api_route("/index.html", index, methods=["GET"], include_in_schema=False,
                      dependencies=guarded)

    @api.get("/projects/{project_id:int}", response_class=HTMLResponse, tags=["pages"],
             dependencies=guarded, summary="Quality page of a project",
             responses={404: {"description": "no report (yet)"}, **errors})
    async def project_page(project_id: int) -> Response:
        def answer() -> Response:
            path = app.report_path(project_id)
            if path is None:
                return _html(404, f"<!DOCTYPE html><p>{html.escape(_missing(app, project_id))}"
                                  "</p><p><a href='/'>all projects</a></p>")
            return _html(200, app.report_html(project_id, path))
        return await run(answer)

    @api.get("/projects/{project_id:int}/pair", tags=["pages"], dependencies=guarded,
             summary="Open a pair's shared tasks in Label Studio",
             responses={303: {"description": "to the Data Manager tab of those tasks"},
                        400: {"model": ErrorOut}, 404: {"model": ErrorOut},
                        502: {"model": ErrorOut}, **errors})
    async def pair(project_id: int, a: int = Query(..., description="a user id"),
                   b: int = Query(..., description="another user id")) -> Response:
        """The quality page's heatmap cells land here: Label Studio's Data Manager takes no
        filter from its URL, so the pair's filter is saved as a view (kept among the few
        most recent pair views) and the browser is sent to its tab."""
        from .errors import LabelStudioError, ServerUnavailable

        def answer() -> Response:
            if app.pair_view is None or not app.ls_url:
                return _json(404, {"status": "error", "error": "this service has no Label "
                                   "Studio connection to open a pair's tasks with"})
            if project_id not in set(app.projects()):
                return _json(404, {"status": "error", "error": f"project {project_id} is "
                                   "not served here"})
            if a == b:
                return _json(400, {"status": "error", "error": "a and b must be two "
                                   "different annotators"})
            try:
                view = app.pair_view(project_id, a, b)
            except ServerUnavailable as exc:
                return _json(503, {"status": "error", "error": str(exc)})
            except LabelStudioError as exc:
                return _json(502, {"status": "error", "error": str(exc)})
            return Response(status_code=303, headers={
                "Location": f"{app.ls_url}/projects/{project_id}/data?tab={view}"})
        return await run(answer)

    @api.get("/openapi.json", include_in_schema=False, dependencies=guarded)
    async def openapi() -> Response:
        return _json(200, api.openapi())

    # -- errors in the shape the stdlib server answered -----------------------------------
    @api.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 404:
            msg = f"no route {request.url.path}"
        elif exc.status_code == 405:
            msg = f"{request.method} not allowed here"
        else:
            msg = str(exc.detail)
        if exc.status_code == 401 and "text/html" in request.headers.get("accept", ""):
            # a browser, e.g. from the link in the project's description: ask for a token
            # (the form sends it as ?token=, which then leaves the cookie)
            page = ("<!DOCTYPE html><html lang=en><meta charset=utf-8><title>ls-agreement"
                    "</title><body style='font-family:system-ui,sans-serif;margin:2em'>"
                    f"<p>{html.escape(msg)}.</p><form method=get><label>Token "
                    "<input type=password name=token autofocus size=48></label> "
                    "<button>Open</button></form><p><small>Your Label Studio API token is "
                    "under Account &amp; Settings.</small></p></body></html>")
            return HTMLResponse(page, status_code=401, headers=dict(exc.headers or {}))
        return _json(exc.status_code, {"status": "error", "error": msg},
                     headers=dict(exc.headers or {}))

    @api.exception_handler(RequestValidationError)
    async def bad_parameters(request: Request, exc: RequestValidationError) -> Response:
        msg = "; ".join(f"{'.'.join(map(str, e.get('loc', ())))}: {e.get('msg')}"
                        for e in exc.errors())
        return _json(400, {"status": "error", "error": msg or "bad parameters"})

    api.add_middleware(TokenCookie, enabled=lambda: app.auth.required)
    api.add_middleware(Plumbing, log=lambda: app.log)
    return api



def _missing(app: App, project_id: int) -> str:
    known = project_id in set(app.projects())
    return (f"project {project_id}: no report yet (see /jobs?project={project_id})" if known
            else f"project {project_id} is not served here")


def log_line(app: App, line: str) -> None:
    """One line of the service's log (a log stream that was closed is skipped)."""
    if app.log is not None:
        try:
            print(line, file=app.log, flush=True)
        except (OSError, ValueError):
            pass

"""``ls-agreement serve``: webhook receiver, job worker, periodic reconcile and the
admins' quality page, in one process (see plugin/web.py for the routes: FastAPI on
uvicorn, in a thread of :class:`Service`).

State (jobs, served projects, latest reports, sync fingerprints) lives in one SQLite file
(``--state``); report files under ``--out/project-<id>/``. With ``--queue
redis://HOST:PORT/DB`` the jobs, the served projects and the projects' live state are in
Redis instead, and ``ls-agreement worker --queue …`` processes (any number, any machine)
run the jobs: serve then only receives, enqueues, reconciles and shows the pages. SIGTERM or Ctrl-C stops it:
the HTTP server stops accepting, the worker finishes its current job (up to ``--grace``
seconds; an unfinished job stays ``running`` and is picked up again at the next start).

Access (plugin/web_auth.py): on a loopback ``--host`` the pages and JSON API are open; on
any other address (or with ``--api-token``) they need ``--api-token`` or a Label Studio
user's API token, and the service refuses to start on a non-loopback address without a
webhook ``--secret`` (anyone on the network could otherwise queue jobs).
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Sequence, TextIO
from .common import (EXIT_OK, SECRET_ENV, add_queue_arguments,
                     add_server_arguments, add_service_arguments)

HELP = ("Run the webhook receiver, the job worker and the quality page: agreement is "
        "recomputed after annotation events and reconciled periodically.")
API_TOKEN_ENV = "LS_AGREEMENT_API_TOKEN"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``ls-agreement serve``."""
    add_server_arguments(parser)
    parser.add_argument("--project", type=int, action="append", default=[],
                        help="serve only this project (repeatable; default: every project "
                             "registered with `connect` or sending authenticated events)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default 127.0.0.1). Any other than a loopback "
                             "address needs --secret, and the pages and JSON API then need "
                             "a token (--api-token or a Label Studio user's API token)")
    parser.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 = any)")
    parser.add_argument("--api-token", default=os.environ.get(API_TOKEN_ENV),
                        help="token for the pages and JSON API, sent as 'Authorization: "
                             "Bearer <token>' or '?token=' (default: $" + API_TOKEN_ENV +
                             "); giving it requires it on a loopback address too")
    parser.add_argument("--request-timeout", type=float, default=60.0,
                        help="seconds to receive a webhook body or to answer a page / the "
                             "JSON API before giving up with 408 / 504 (default 60)")
    add_service_arguments(parser)
    add_queue_arguments(parser)
    parser.add_argument("--interval", type=float, default=600.0,
                        help="seconds between reconcile syncs of every served project "
                             "(default 600; 0 = only at start-up)")
    parser.add_argument("--max-attempts", type=int, default=3,
                        help="tries per job before it is marked failed (default 3)")
    parser.add_argument("--retry-backoff", type=float, default=5.0,
                        help="seconds before the first retry, doubled after each (default 5)")
    parser.add_argument("--grace", type=float, default=30.0,
                        help="seconds to let a running sync finish on shutdown (default 30)")
    parser.add_argument("--quiet", action="store_true", help="no request/job log lines")


class Service:
    """The running service: HTTP server + worker + reconciler over one job queue.

    Build it with :func:`make_service`; :meth:`start` returns once the port is bound;
    :meth:`stop` shuts everything down (idempotent).
    """

    def __init__(self, args: argparse.Namespace, settings: Any, log: TextIO | None) -> None:
        from ..errors import BadInput
        from ..queue import open_queue
        from ..queue.redis_queue import redact_url
        from ..web import App
        from ..web_server import QualityServer
        from ..web_auth import ApiAuth, is_loopback
        from ..webhooks import Receiver
        from ..live.runner import LiveRunner
        from ..settings import PluginSettings
        from ..worker import Reconciler, Worker

        self.args, self.log = args, log
        self.url = args.url.strip().rstrip("/")
        self.fixed = sorted(set(args.project))
        self.stop_event = threading.Event()
        self._served: set[int] = set()
        # past one machine (--queue redis://…) serve only enqueues: `ls-agreement worker`
        # processes run the jobs; else one worker thread here runs them from SQLite
        self.queue_url: str | None = getattr(args, "queue", None) or None
        self.queue = open_queue(self.queue_url or args.state, max_attempts=args.max_attempts,
                                backoff=args.retry_backoff, lease=getattr(args, "lease", 30.0),
                                report_dir=Path(args.out) / ".pages")
        for pid in self.fixed:
            self.queue.add_project(pid, "cli")
        self.recovered = self.queue.recover()
        self.worker: Worker | None = None
        if self.queue_url is None:
            runner = LiveRunner(self.url, args.token, settings or PluginSettings(), self.queue,
                                args.state, args.out, log=log)
            self.worker = Worker(self.queue, runner, self.stop_event, log=log)
        self.reconciler = Reconciler(self.queue, self.project_ids, self.stop_event,
                                     args.interval, log=log)
        self.receiver = Receiver(self.queue, args.secret or None, accepts=self._accepts)
        api_token = getattr(args, "api_token", None) or None
        # a token is needed as soon as the port is reachable from elsewhere, or when one
        # was configured (e.g. a loopback bind behind a reverse proxy)
        self.auth = ApiAuth(required=bool(api_token) or not is_loopback(args.host),
                            api_token=api_token, ls_url=self.url)
        app = App(self.queue, self.receiver, self.project_ids,
                  worker_alive=self.worker_alive, ls_url=self.url, log=log,
                  auth=self.auth,
                  queue_name=redact_url(self.queue_url) if self.queue_url else "sqlite",
                  request_timeout=float(getattr(args, "request_timeout", 60.0)),
                  pair_view=self.pair_view)
        try:
            self.http = QualityServer((args.host, args.port), app)
        except OSError as exc:       # port busy, permission denied, no such address
            self.queue.close()
            raise BadInput(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from exc
        self._stopped = False

    @property
    def port(self) -> int:
        return self.http.port

    @property
    def address(self) -> str:
        host = self.args.host
        return f"http://{'[' + host + ']' if ':' in host else host}:{self.port}"

    def worker_alive(self) -> bool:
        """The worker thread, or with --queue: at least one RQ worker registered."""
        if self.worker is not None:
            return self.worker.is_alive()
        try:
            return self.queue.workers() > 0      # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - Redis down: /health says so through this
            return False

    def pair_view(self, project_id: int, a: int, b: int) -> int:
        """The Data Manager view of the tasks annotators ``a`` and ``b`` both annotated
        (the quality page's heatmap cells lead there through ``/projects/<id>/pair``)."""
        from ..client import Connection, RetryPolicy
        from ..views import ensure_pair_view

        conn = Connection(self.url, self.args.token, timeout=30, retry=RetryPolicy(attempts=2))
        try:
            return ensure_pair_view(conn, project_id, a, b, conn.users())
        finally:
            conn.close()

    def project_ids(self) -> list[int]:
        """Served projects: ``--project`` if given, else all the state file knows."""
        return list(self.fixed) if self.fixed else sorted(self.queue.projects())

    def _accepts(self, project_id: int) -> bool:
        if self.fixed:
            return project_id in self.fixed
        # open mode: an authenticated event for a new project makes it served (recorded
        # once per process: a write per event would cost a disk flush per webhook)
        if project_id not in self._served:
            self.queue.add_project(project_id, "webhook")
            self._served.add(project_id)
        return True

    def start(self) -> "Service":
        self.http.start()
        if self.worker is not None:
            self.worker.start()
        self.reconciler.start()
        return self

    def stop(self, grace: float | None = None) -> None:
        """Stop accepting requests, then let the worker finish its job (``grace`` s)."""
        if self._stopped:
            return
        self._stopped = True
        self.stop_event.set()
        self.queue.notify()
        self.http.stop()
        if self.worker is not None:
            self.worker.join(self.args.grace if grace is None else grace)
        self.reconciler.join(1.0)
        if self.worker is None or not self.worker.is_alive():
            self.queue.close()
        # else: the sync is still running in a daemon thread; its job stays `running` and
        # `recover()` re-queues it at the next start.

    def wait(self) -> None:
        """Block until :meth:`stop` is requested (signal handler or another thread)."""
        while not self.stop_event.wait(0.5):
            pass


def make_service(args: argparse.Namespace, log: TextIO | None = sys.stderr) -> Service:
    """Validate the options and build (not start) the service.

    Raises
    ------
    BadInput
        Missing URL/token, bad options, unreadable settings, a state file or queue URL
        that cannot be used, a port that cannot be bound (exit 2).
    QueueUnavailable
        The Redis of ``--queue`` does not answer (exit 3).
    """
    from ..errors import BadInput
    from ..settings import load_settings

    if not args.url or not args.token:
        raise BadInput("--url and --token are required (or LABEL_STUDIO_URL / "
                       "LABEL_STUDIO_API_KEY)")
    if not args.url.strip().startswith(("http://", "https://")):
        raise BadInput(f"--url must start with http:// or https:// (got {args.url!r})")
    if args.interval < 0 or args.max_attempts < 1 or args.retry_backoff < 0:
        raise BadInput("--interval and --retry-backoff must be >= 0, --max-attempts >= 1")
    if getattr(args, "request_timeout", 60.0) <= 0:
        raise BadInput("--request-timeout must be > 0")
    from ..web_auth import is_loopback
    if not is_loopback(args.host) and not args.secret:
        # the webhook would queue work for anyone who can reach the port
        raise BadInput(f"--host {args.host} is reachable from other machines: set a webhook "
                       f"--secret (or ${SECRET_ENV}); the pages and JSON API then need "
                       f"--api-token (or ${API_TOKEN_ENV}) or a Label Studio user's token")
    if getattr(args, "lease", 30.0) <= 0:
        raise BadInput("--lease must be > 0 seconds")
    from ..queue import is_redis_url
    if getattr(args, "queue", None) and not is_redis_url(args.queue):
        raise BadInput(f"--queue must be a Redis URL, redis://HOST:PORT/DB (got {args.queue!r}); "
                       "leave it out for the embedded SQLite queue in --state")
    settings = load_settings(args.settings)
    return Service(args, settings, None if args.quiet else log)


def run(args: argparse.Namespace) -> int:
    """Serve until SIGTERM/SIGINT; return 0 (errors are raised, see plugin/cli.py)."""
    from ..client import Connection, LabelStudioError, RetryPolicy
    from ..queue.redis_queue import redact_url

    svc = make_service(args)
    if not args.secret:
        print("warning: no --secret: webhook requests are accepted without "
              "authentication (use only on a trusted network)", file=sys.stderr)
    if svc.auth.required:   # says which kinds of token, never a token
        print(f"pages and JSON API need a token: {svc.auth.schemes}", file=sys.stderr)
    try:   # only a warning: Label Studio may come up later, jobs retry
        conn = Connection(svc.url, args.token, timeout=10, retry=RetryPolicy(attempts=1))
        try:
            conn.whoami()
        finally:
            conn.close()
    except LabelStudioError as exc:
        print(f"warning: {exc}", file=sys.stderr)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: svc.stop_event.set())
    svc.start()
    where = ("jobs in SQLite, run here" if svc.queue_url is None else
             f"jobs on {redact_url(svc.queue_url)}, run by `ls-agreement worker` processes")
    print(f"serving on {svc.address} (webhook: {svc.address}/webhook; quality page: "
          f"{svc.address}/); projects: {', '.join(map(str, svc.project_ids())) or 'none yet'}"
          f"; {where}"
          + (f"; re-queued {len(svc.recovered)} interrupted job(s)" if svc.recovered else ""),
          file=sys.stderr, flush=True)
    try:
        svc.wait()
    finally:
        print("stopping", file=sys.stderr, flush=True)
        svc.stop()
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ls_agreement.plugin.commands.serve``: ``ls-agreement serve``, exit codes included."""
    from ..cli import main as cli_main

    return cli_main(["serve", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())

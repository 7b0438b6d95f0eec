"""``ls-agreement serve``: webhook receiver, job worker, periodic reconcile and the
admins' quality page, in one process (see plugin/web.py for the routes).

State (jobs, served projects, latest reports, sync fingerprints) lives in one SQLite file
(``--state``); report files under ``--out/project-<id>/``. SIGTERM or Ctrl-C stops it:
the HTTP server stops accepting, the worker finishes its current job (up to ``--grace``
seconds; an unfinished job stays ``running`` and is picked up again at the next start).
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any, Sequence, TextIO
from .common import EXIT_BAD_INPUT, EXIT_OK, add_server_arguments, add_service_arguments

HELP = ("Run the webhook receiver, the job worker and the quality page: agreement is "
        "recomputed after annotation events and reconciled periodically.")



def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``ls-agreement serve``."""
    add_server_arguments(parser)
    parser.add_argument("--project", type=int, action="append", default=[],
                        help="serve only this project (repeatable; default: every project "
                             "registered with `connect` or sending authenticated events)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 = any)")
    add_service_arguments(parser)
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
        from ..jobs import JobQueue
        from ..web import App, QualityServer
        from ..webhooks import Receiver
        from ..live.runner import LiveRunner
        from ..settings import PluginSettings
        from ..worker import Reconciler, Worker

        self.args, self.log = args, log
        self.url = args.url.strip().rstrip("/")
        self.fixed = sorted(set(args.project))
        self.stop_event = threading.Event()
        self.queue = JobQueue(args.state, max_attempts=args.max_attempts,
                              backoff=args.retry_backoff)
        for pid in self.fixed:
            self.queue.add_project(pid, "cli")
        self.recovered = self.queue.recover()
        runner = LiveRunner(self.url, args.token, settings or PluginSettings(), self.queue,
                            args.state, args.out, log=log)
        self.worker = Worker(self.queue, runner, self.stop_event, log=log)
        self.reconciler = Reconciler(self.queue, self.project_ids, self.stop_event,
                                     args.interval, log=log)
        self.receiver = Receiver(self.queue, args.secret or None, accepts=self._accepts)
        app = App(self.queue, self.receiver, self.project_ids,
                  worker_alive=self.worker.is_alive, ls_url=self.url, log=log)
        self.http = QualityServer((args.host, args.port), app)
        self._http_thread = threading.Thread(target=self.http.serve_forever,
                                             name="ls-agreement-http", daemon=True)
        self._stopped = False

    @property
    def port(self) -> int:
        return self.http.port

    @property
    def address(self) -> str:
        return f"http://{self.args.host}:{self.port}"

    def project_ids(self) -> list[int]:
        """Served projects: ``--project`` if given, else all the state file knows."""
        return list(self.fixed) if self.fixed else sorted(self.queue.projects())

    def _accepts(self, project_id: int) -> bool:
        if self.fixed:
            return project_id in self.fixed
        # open mode: an authenticated event for a new project makes it served
        self.queue.add_project(project_id, "webhook")
        return True

    def start(self) -> "Service":
        self._http_thread.start()
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
        self.http.shutdown()
        self.http.server_close()
        self.worker.join(self.args.grace if grace is None else grace)
        self.reconciler.join(1.0)
        if not self.worker.is_alive():
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
    LabelStudioError
        Missing URL/token, unreadable settings (``BadInput``, exit 2).
    """
    from ..client import BadInput
    from ..settings import load_settings

    if not args.url or not args.token:
        raise BadInput("--url and --token are required (or LABEL_STUDIO_URL / "
                       "LABEL_STUDIO_API_KEY)")
    if not args.url.strip().startswith(("http://", "https://")):
        raise BadInput(f"--url must start with http:// or https:// (got {args.url!r})")
    if args.interval < 0 or args.max_attempts < 1 or args.retry_backoff < 0:
        raise BadInput("--interval and --retry-backoff must be >= 0, --max-attempts >= 1")
    settings = load_settings(args.settings)
    try:
        return Service(args, settings, None if args.quiet else log)
    except ValueError as exc:      # unusable state file
        raise BadInput(str(exc)) from exc


def run(args: argparse.Namespace) -> int:
    """Serve until SIGTERM/SIGINT; return an exit code (see plugin/cli.py)."""
    from ..client import Connection, LabelStudioError, RetryPolicy

    try:
        svc = make_service(args)
    except LabelStudioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:         # port busy, permission denied
        print(f"error: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not args.secret:
        print("warning: no --secret: webhook requests are accepted without "
              "authentication (use only on a trusted network)", file=sys.stderr)
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
    print(f"serving on {svc.address} (webhook: {svc.address}/webhook; quality page: "
          f"{svc.address}/); projects: {', '.join(map(str, svc.project_ids())) or 'none yet'}"
          + (f"; re-queued {len(svc.recovered)} interrupted job(s)" if svc.recovered else ""),
          file=sys.stderr, flush=True)
    try:
        svc.wait()
    finally:
        print("stopping", file=sys.stderr, flush=True)
        svc.stop()
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ls_agreement.plugin.commands.serve`` (same as ``ls-agreement serve``)."""
    p = argparse.ArgumentParser(prog="ls-agreement serve", description=HELP)
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

"""``ls-agreement connect``: register the project's webhook to the ``serve`` receiver and
run a first sync (which creates the Data Manager views).

Idempotent: the project's webhook with the same receiver URL is found again and updated
(duplicates removed), never duplicated. Label Studio webhooks carry no signature
(docs/label-studio.md §8), so the shared secret goes into a header set on the webhook
(``X-LS-Agreement-Secret``) and ``serve --secret`` checks it.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .common import EXIT_OK, add_server_arguments, add_service_arguments

HELP = ("Register a project's webhook to the `ls-agreement serve` receiver (idempotent) "
        "and run a first sync, which creates the Data Manager views.")

PUBLIC_URL_ENV = "LS_AGREEMENT_PUBLIC_URL"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``ls-agreement connect``."""
    add_server_arguments(parser)
    parser.add_argument("--project", type=int, required=True, help="project id")
    parser.add_argument("--receiver", default=os.environ.get(PUBLIC_URL_ENV),
                        help="URL at which Label Studio reaches `serve`, e.g. "
                             "http://127.0.0.1:8765/webhook (a bare base URL gets /webhook; "
                             f"default: ${PUBLIC_URL_ENV})")
    add_service_arguments(parser)
    parser.add_argument("--no-sync", action="store_true",
                        help="only register the webhook (no first sync)")
    parser.add_argument("--quiet", action="store_true", help="no progress output")


def receiver_url(raw: str) -> str:
    """Normalise the receiver URL: http(s) only; an empty path becomes ``/webhook``.

    Raises
    ------
    BadInput
        Not an http(s) URL with a host.
    """
    from ..client import BadInput

    parts = urlsplit((raw or "").strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise BadInput(f"--receiver must be an http(s) URL such as "
                       f"http://127.0.0.1:8765/webhook (got {raw!r})")
    path = parts.path if parts.path not in ("", "/") else "/webhook"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def ensure_webhook(conn: Any, project_id: int, url: str,
                   secret: str | None) -> tuple[int, str]:
    """Create or update the project's webhook pointing at ``url``.

    Parameters
    ----------
    conn : plugin.client.Connection
        Connection (retries, error translation) whose ``sdk`` is the SDK client.
    project_id : int
        The project.
    url : str
        The receiver URL.
    secret : str or None
        Sent by Label Studio in the ``X-LS-Agreement-Secret`` header.

    Returns
    -------
    (int, str)
        The webhook id and what happened: ``"created"``, ``"updated"`` or ``"unchanged"``.
    """
    from ..client import as_plain_dict
    from ..webhooks import SECRET_HEADER

    headers = {SECRET_HEADER: secret} if secret else {}
    want = {"url": url, "send_payload": True, "send_for_all_actions": True,
            "is_active": True, "headers": headers}
    hooks = [as_plain_dict(h) for h in conn.call(
        f"listing webhooks of project {project_id}", "GET", conn.sdk.webhooks.list,
        project=str(project_id))]
    mine = sorted((h for h in hooks if h.get("project") == project_id
                   and (h.get("url") or "").rstrip("/") == url.rstrip("/")),
                  key=lambda h: int(h["id"]))
    if not mine:
        hook = as_plain_dict(conn.call(f"creating the webhook of project {project_id}", "POST",
                                  conn.sdk.webhooks.create, project=project_id, **want))
        return int(hook["id"]), "created"
    keep, extra = mine[0], mine[1:]
    for h in extra:    # an earlier race or manual copy: one webhook = one event per change
        conn.call(f"deleting duplicate webhook {h['id']}", "DELETE",
                  conn.sdk.webhooks.delete, int(h["id"]))
    same = all(keep.get(k) == v for k, v in want.items() if k != "headers") and \
        (keep.get("headers") or {}) == headers
    if same:
        return int(keep["id"]), "unchanged"
    conn.call(f"updating webhook {keep['id']}", "PATCH", conn.sdk.webhooks.update,
              int(keep["id"]), **want)
    return int(keep["id"]), "updated"


def run(args: argparse.Namespace) -> int:
    """Register the webhook, record the project for `serve`, run the first sync."""
    from ..client import BadInput, Connection, LabelStudioError
    from ..jobs import JobQueue
    from ..settings import load_settings
    from ..sync import sync_project
    from ..worker import summarize

    try:
        if not args.url or not args.token:
            raise BadInput("--url and --token are required (or LABEL_STUDIO_URL / "
                           "LABEL_STUDIO_API_KEY)")
        if not args.receiver:
            raise BadInput(f"--receiver is required (or ${PUBLIC_URL_ENV})")
        hook_url = receiver_url(args.receiver)
        settings = load_settings(args.settings)
        conn = Connection(args.url, args.token, timeout=30)
        try:
            conn.whoami()
            conn.get_project(args.project)
            hook_id, what = ensure_webhook(conn, args.project, hook_url, args.secret)
        finally:
            conn.close()
        print(f"project {args.project}: webhook {hook_id} {what} → {hook_url}"
              + ("" if args.secret else " (no secret: the receiver must run without one)"))
        try:
            queue = JobQueue(args.state)
        except ValueError as exc:
            raise BadInput(str(exc)) from exc
        try:
            queue.add_project(args.project, "connect", hook_id)
            if args.no_sync:
                # a running service fills its mirror of the project with a full read now
                queue.enqueue(args.project, "connect", action="RECONCILE")
                return EXIT_OK
            res = sync_project(args.url, args.token, args.project, settings,
                               state_path=args.state, progress=not args.quiet,
                               out_dir=Path(args.out) / f"project-{args.project}")
            queue.set_latest(args.project, str(res.report_paths["report"]), summarize(res))
            # after the sync's files: a running service fills its mirror with a full read now
            queue.enqueue(args.project, "connect", action="RECONCILE")
        finally:
            queue.close()
    except LabelStudioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    views = res.views
    print(f"first sync: {res.n_tasks} tasks, wrote {res.n_written}"
          + (f"; views created {len(views.created)}, updated {len(views.updated)}"
             if views is not None else ""))
    print(f"report: {res.report_paths['report']}")
    return EXIT_OK

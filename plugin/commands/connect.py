"""``ls-agreement connect``: register the project's webhook to the ``serve`` receiver and
run a first sync (which creates the Data Manager views).

Idempotent: the project's webhook with the same receiver URL is found again and updated
(duplicates removed), never duplicated. Label Studio webhooks carry no signature
(docs/label-studio.md §8), so the shared secret goes into a header set on the webhook
(``X-LS-Agreement-Secret``) and ``serve --secret`` checks it.

The quality page is made reachable from Label Studio: one line of the project's description
(``ls-agreement quality page: <receiver base>/projects/<id>``) links to it. The line is the
marker: a later ``connect`` replaces it (a new address) rather than adding a second one,
``--no-page-link`` removes it, and the rest of the description is the user's and is kept.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .common import EXIT_OK, add_queue_arguments, add_server_arguments, add_service_arguments

HELP = ("Register a project's webhook to the `ls-agreement serve` receiver (idempotent) "
        "and run a first sync, which creates the Data Manager views.")

PUBLIC_URL_ENV = "LS_AGREEMENT_PUBLIC_URL"
#: Start of the description line linking to the quality page; also how it is found again.
PAGE_LINK_PREFIX = "ls-agreement quality page: "


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``ls-agreement connect``."""
    add_server_arguments(parser)
    parser.add_argument("--project", type=int, required=True, help="project id")
    parser.add_argument("--receiver", default=os.environ.get(PUBLIC_URL_ENV),
                        help="URL at which Label Studio reaches `serve`, e.g. "
                             "http://127.0.0.1:8765/webhook (a bare base URL gets /webhook; "
                             f"default: ${PUBLIC_URL_ENV})")
    add_service_arguments(parser)
    add_queue_arguments(parser)
    parser.add_argument("--no-sync", action="store_true",
                        help="only register the webhook (no first sync)")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.add_argument("--no-page-link", action="store_true",
                        help="do not link the quality page from the project's description "
                             "(and remove the link an earlier connect added)")


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


def quality_page_url(hook_url: str, project_id: int) -> str:
    """The quality page ``serve`` shows for a project, next to its webhook receiver.

    ``serve`` answers ``/webhook`` and ``/projects/<id>`` side by side, so the page is the
    receiver URL with its last path segment replaced: ``http://h:8765/webhook`` →
    ``http://h:8765/projects/7``, and behind a proxy prefix ``https://h/lsa/webhook`` →
    ``https://h/lsa/projects/7``.
    """
    parts = urlsplit(hook_url)
    base = parts.path.rsplit("/", 1)[0]
    return urlunsplit((parts.scheme, parts.netloc, f"{base}/projects/{int(project_id)}", "", ""))


def with_page_link(description: str | None, page_url: str | None) -> str:
    """``description`` with exactly one quality-page line (none when ``page_url`` is None).

    Lines starting with :data:`PAGE_LINK_PREFIX` are removed and, with a URL, one is put at
    the end after a blank line; the user's own lines are kept as they are. Idempotent:
    ``with_page_link(with_page_link(d, u), u) == with_page_link(d, u)``.
    """
    kept = [line for line in (description or "").splitlines() if not line.startswith(PAGE_LINK_PREFIX)]
    text = "\n".join(kept).rstrip()
    if page_url:
        text = (text + "\n\n" if text else "") + PAGE_LINK_PREFIX + page_url
    return text


def ensure_page_link(conn: Any, project: dict[str, Any], page_url: str | None) -> str:
    """Put (``page_url``) or remove (None) the quality-page line of the project's description.

    Parameters
    ----------
    conn : plugin.client.Connection
        Connection whose ``sdk`` is the SDK client.
    project : dict
        The project as :meth:`Connection.get_project` reads it (``id``, ``description``).
    page_url : str or None
        The quality page's address; None removes the line.

    Returns
    -------
    str
        ``"added"``, ``"updated"``, ``"removed"`` or ``"unchanged"`` (then nothing is written).
    """
    old = project.get("description") or ""
    had = any(line.startswith(PAGE_LINK_PREFIX) for line in old.splitlines())
    if not had and not page_url:
        return "unchanged"     # nothing of ours to remove: leave the user's text byte for byte
    new = with_page_link(old, page_url)
    if new == old:
        return "unchanged"
    conn.call(f"linking the quality page from project {project['id']}'s description", "PATCH",
              conn.sdk.projects.update, int(project["id"]), description=new)
    return "removed" if not page_url else "updated" if had else "added"


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
    from ..queue import open_queue
    from ..settings import load_settings
    from ..sync import sync_project
    from ..worker import summarize

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
        project = conn.get_project(args.project)
        page_url = None if args.no_page_link else quality_page_url(hook_url, args.project)
        # before the webhook exists: Label Studio would send our own edit to it (PROJECT_UPDATED)
        try:
            linked = ensure_page_link(conn, {"id": args.project, **project}, page_url)
        except LabelStudioError as exc:   # a convenience: the webhook and sync matter more
            linked = "not written"
            print(f"warning: could not link the quality page from the description: {exc}",
                  file=sys.stderr)
        hook_id, what = ensure_webhook(conn, args.project, hook_url, args.secret)
    finally:
        conn.close()
    print(f"project {args.project}: webhook {hook_id} {what} → {hook_url}"
          + ("" if args.secret else " (no secret: the receiver must run without one)"))
    if page_url:
        print(f"quality page (linked from the project's description, {linked}): {page_url}")
    from ..queue import is_redis_url
    if args.queue and not is_redis_url(args.queue):
        raise BadInput(f"--queue must be a Redis URL, redis://HOST:PORT/DB (got {args.queue!r})")
    # the service's queue: Redis past one machine, else the SQLite state file
    queue = open_queue(args.queue or args.state)
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
    views = res.views
    print(f"first sync: {res.n_tasks} tasks, wrote {res.n_written}"
          + (f"; views created {len(views.created)}, updated {len(views.updated)}"
             if views is not None else ""))
    print(f"report: {res.report_paths['report']}")
    return EXIT_OK

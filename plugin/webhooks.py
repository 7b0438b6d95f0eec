"""Webhook receiver logic (no HTTP here: ``web.py`` feeds it headers and body).

Label Studio posts ``{"action": ..., "project": {...}, ...}`` to each project's webhook,
synchronously, with a 1 s timeout, no retries and no signature (docs/label-studio.md §8;
real payloads in ``data/label-studio/webhooks/``). So the receiver:

1. authenticates with a shared secret carried in a header set on the webhook
   (``X-LS-Agreement-Secret``; constant-time comparison) → 401 otherwise;
2. parses the payload and finds the project id (``project.id``, else the ``project`` of
   the annotation/task(s)) → 400 with a message when it cannot;
3. persists a coalesced job for the project *before* answering 200.

Every action that can change agreement is stored with its payload and coalesced into the
project's pending job; the live runner (``plugin/live``) applies the stored events to its
mirror of the project and rescores only the touched tasks. Actions that cannot change
agreement (or that Label Studio adds later) are acknowledged and ignored.
"""
from __future__ import annotations

import hmac
import json
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .job_backend import JobBackend

SECRET_HEADER = "X-LS-Agreement-Secret"
MAX_BODY = 50 * 1024 * 1024
ACK_WINDOW = 10_000   # a TASKS_CREATED payload of a big import can be large

SYNC_ACTIONS = frozenset({
    "ANNOTATION_CREATED", "ANNOTATIONS_CREATED", "ANNOTATION_UPDATED", "ANNOTATIONS_DELETED",
    "TASKS_CREATED", "TASKS_DELETED", "PROJECT_UPDATED",
})


class WebhookRejected(Exception):
    """A request the receiver refuses; ``status`` is the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


@dataclass(frozen=True)
class Event:
    """What the receiver needs from one payload."""

    action: str
    project_id: int
    task_ids: tuple[int, ...] = ()

    def describe(self) -> str:
        tasks = ",".join(map(str, self.task_ids[:5])) + ("…" if len(self.task_ids) > 5 else "")
        return f"{self.action}" + (f" task {tasks}" if tasks else "")


def _header(headers: Any, name: str) -> str | None:
    """Case-insensitive header lookup on an ``email.message.Message`` or a Mapping."""
    if hasattr(headers, "get_all"):
        v = headers.get(name)
        return None if v is None else str(v)
    for k, v in dict(headers or {}).items():
        if str(k).lower() == name.lower():
            return str(v)
    return None


def authenticate(headers: Any, secret: str | None) -> None:
    """Check the shared-secret header.

    Raises
    ------
    WebhookRejected
        401 when a secret is configured and the header is missing or different.
    """
    if not secret:
        return
    got = _header(headers, SECRET_HEADER)
    if got is None or not hmac.compare_digest(got.encode(), secret.encode()):
        raise WebhookRejected(401, f"missing or wrong {SECRET_HEADER} header")


def _int_id(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int) and v > 0:
        return v
    if isinstance(v, str) and v.strip().isdigit() and int(v) > 0:
        return int(v)
    return None


def _project_id(payload: Mapping[str, Any]) -> int | None:
    proj = payload.get("project")
    if isinstance(proj, Mapping):
        pid = _int_id(proj.get("id"))
        if pid is not None:
            return pid
    elif proj is not None:
        pid = _int_id(proj)
        if pid is not None:
            return pid
    # ANNOTATION_* and TASKS_* carry the project on the annotation / tasks too
    for key in ("annotation", "task"):
        obj = payload.get(key)
        if isinstance(obj, Mapping) and _int_id(obj.get("project")) is not None:
            return _int_id(obj.get("project"))
    for key in ("annotations", "tasks"):
        objs = payload.get(key)
        if isinstance(objs, list):
            for o in objs:
                if isinstance(o, Mapping) and _int_id(o.get("project")) is not None:
                    return _int_id(o.get("project"))
    return None


def _task_ids(payload: Mapping[str, Any]) -> tuple[int, ...]:
    ids: list[int] = []
    task = payload.get("task")
    if isinstance(task, Mapping) and _int_id(task.get("id")):
        ids.append(int(task["id"]))
    ann = payload.get("annotation")
    if isinstance(ann, Mapping) and _int_id(ann.get("task")) and not ids:
        ids.append(int(ann["task"]))
    tasks = payload.get("tasks")
    for t in tasks if isinstance(tasks, list) else []:
        if isinstance(t, Mapping) and _int_id(t.get("id")):
            ids.append(int(t["id"]))
    return tuple(ids)


def parse_event(body: bytes) -> Event:
    """Parse a webhook body.

    Parameters
    ----------
    body : bytes
        The request body (JSON object with ``action`` and the project).

    Returns
    -------
    Event

    Raises
    ------
    WebhookRejected
        400 naming what is wrong: not UTF-8 JSON, not an object, no ``action`` string,
        no project id (only for actions the receiver acts on).
    """
    if not body:
        raise WebhookRejected(400, "empty body: expected a JSON object with 'action'")
    try:
        payload = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise WebhookRejected(400, "body is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise WebhookRejected(400, f"body is not valid JSON: {exc.msg} at line "
                                   f"{exc.lineno} column {exc.colno}") from None
    if not isinstance(payload, dict):
        raise WebhookRejected(400, f"payload must be a JSON object, got "
                                   f"{type(payload).__name__}")
    action = payload.get("action")
    if not isinstance(action, str) or not action.strip():
        raise WebhookRejected(400, "payload has no 'action' string")
    action = action.strip().upper()
    pid = _project_id(payload)
    if pid is None:
        if action not in SYNC_ACTIONS:
            return Event(action, 0)
        raise WebhookRejected(400, f"{action} payload carries no project id (expected "
                                   "'project': {'id': <int>} — was the webhook created with "
                                   "send_payload=true?)")
    return Event(action, pid, _task_ids(payload))


@dataclass
class Receiver:
    """Authenticate, parse, enqueue.

    Parameters
    ----------
    queue : JobBackend
        Where jobs go (persisted before :meth:`handle` returns).
    secret : str or None
        The shared secret (None: accept unauthenticated requests — local use only).
    accepts : callable, optional
        ``accepts(project_id) -> bool``; events for other projects are acknowledged
        and ignored (a receiver started with ``--project`` serves only those).
    on_accept : callable, optional
        Called with each accepted event after its job is persisted.
    """

    queue: JobBackend
    secret: str | None = None
    accepts: Callable[[int], bool] | None = None
    on_accept: Callable[[Event], None] | None = None
    # seconds from receiving a body to answering it, last ACK_WINDOW requests (``/health``)
    ack_seconds: deque[float] = field(default_factory=lambda: deque(maxlen=ACK_WINDOW))
    n_requests: int = 0

    def handle(self, headers: Any, body: bytes) -> tuple[int, dict[str, Any]]:
        """One webhook request → (HTTP status, JSON body). Never raises."""
        t0 = time.perf_counter()
        try:
            return self._handle(headers, body)
        finally:
            self.ack_seconds.append(time.perf_counter() - t0)
            self.n_requests += 1

    def ack_stats(self) -> dict[str, float | int | None]:
        """Answer times of the recent requests: count, median, p99 and max in seconds."""
        xs = sorted(self.ack_seconds)
        if not xs:
            return {"n": self.n_requests, "p50": None, "p99": None, "max": None}
        return {"n": self.n_requests, "p50": round(xs[len(xs) // 2], 4),
                "p99": round(xs[min(len(xs) - 1, int(len(xs) * 0.99))], 4), "max": round(xs[-1], 4)}

    def _handle(self, headers: Any, body: bytes) -> tuple[int, dict[str, Any]]:
        try:
            authenticate(headers, self.secret)
            event = parse_event(body)
        except WebhookRejected as exc:
            return exc.status, {"status": "rejected", "error": exc.message}
        if event.action not in SYNC_ACTIONS:
            return 200, {"status": "ignored", "action": event.action,
                         "why": "this action does not change agreement"}
        try:
            # accepts() records a newly served project: the same store as the job
            if self.accepts is not None and not self.accepts(event.project_id):
                return 200, {"status": "ignored", "action": event.action,
                             "project": event.project_id, "why": "project not served here"}
            # the body is stored with the job: the live runner updates its mirror from it
            job = self.queue.enqueue(event.project_id, event.describe(), action=event.action,
                                     payload=body)
        except Exception as exc:  # noqa: BLE001 - the sender must get an answer, not a trace
            return 503, {"status": "error", "error": f"could not persist the job: "
                                                     f"{type(exc).__name__}: {exc}"}
        if self.on_accept is not None:
            self.on_accept(event)
        return 200, {"status": "queued", "action": event.action,
                     "project": event.project_id, "job": job.id, "events": job.events}

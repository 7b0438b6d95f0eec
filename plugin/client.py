"""A thin, fault-tolerant wrapper around label-studio-sdk: the one client of Label Studio.

Every call goes through the SDK (``LabelStudio(base_url=..., api_key=...)``); this module
adds what a long sync needs on top of it: bounded retries with exponential backoff on
5xx, 408/429, timeouts and connection errors, clear errors for a wrong URL, a refused
token and an unknown project, token-kind detection (legacy key vs personal access
token), and per-method request counters (tests use them to assert "nothing written").

Reference: docs/label-studio.md §9 (tokens, endpoints) and §2 (export shapes); label-studio-sdk 2.1.2
``core/http_client.py`` (its own retries are switched off here so ours are the only
ones and are bounded) and ``tokens/client_ext.py`` (PAT → 5-minute Bearer exchange).
"""
from __future__ import annotations

import base64
import json
import math
import os
import random
import re
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar

import httpx

from ls_agreement.adapters.errors import AdapterError
from ls_agreement.adapters.export_stream import iter_export, may_hold_lone_surrogates, without_lone_surrogates

from .errors import (AuthError, BadInput, IncompatibleSDK, LabelStudioError, NotFound, RequestRejected,
                     ServerUnavailable)

T = TypeVar("T")

__all_errors__ = (AuthError, BadInput, LabelStudioError, NotFound, RequestRejected, ServerUnavailable)


# -- what a failed request means, and when to try it again: transport failures, timeouts,
# 5xx, 408 and 429 are transient (retried a bounded number of times with exponential
# backoff and jitter); anything else is translated at once by Connection into our errors
def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return int(status) if isinstance(status, int) else None


def _is_transient(exc: BaseException) -> bool:
    """Worth retrying: transport failures, timeouts, 5xx, 408 and 429."""
    if isinstance(exc, (httpx.TransportError, ConnectionError, TimeoutError)):
        return True
    status = _status_of(exc)
    return status is not None and (status >= 500 or status in (408, 429))


def _body_text(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        body = body.get("detail") or body.get("validation_errors") or body
    text = str(body if body is not None else exc)
    return text if len(text) < 300 else text[:300] + "…"


@dataclass
class RetryPolicy:
    """Bounded retries: ``attempts`` tries in all, sleeping ``base * 2**k`` (±25 % jitter,
    capped at ``cap`` seconds) between them."""

    attempts: int = 4
    base: float = 0.5
    cap: float = 8.0

    def delay(self, k: int) -> float:
        d = min(self.cap, self.base * 2.0 ** k)
        return d * random.uniform(0.75, 1.25)


def token_kind(token: str) -> str:
    """Classify an API token as ``"legacy"``, ``"pat"`` (refresh JWT) or ``"access"`` JWT.

    Parameters
    ----------
    token : str
        What the user passed to ``--token``.

    Returns
    -------
    str
        ``"legacy"`` for an opaque key (sent as ``Authorization: Token``), ``"pat"`` for a
        personal access token (a refresh JWT the SDK exchanges for Bearer tokens itself),
        ``"access"`` for a short-lived access JWT.

    Raises
    ------
    AuthError
        A JWT whose ``exp`` lies in the past (docs/label-studio.md §9).
    """
    parts = token.strip().split(".")
    if len(parts) != 3:
        return "legacy"
    try:
        pad = "=" * (-len(parts[1]) % 4)
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + pad))
    except (ValueError, json.JSONDecodeError):
        return "legacy"
    if not isinstance(claims, dict):
        return "legacy"
    exp = claims.get("exp")
    if isinstance(exp, (int, float)) and exp < time.time():
        raise AuthError("the personal access token has expired: create a new one in "
                        "Label Studio (Account & Settings → Personal Access Token)")
    return "pat" if claims.get("token_type", "refresh") == "refresh" else "access"


# The oldest label-studio-sdk this client works with (setup.cfg declares the same floor):
# 1.0.x has no `LabelStudio` import or rejects `max_retries=`, 2.0.x rejects `max_retries=`,
# before 2.1.0 there is no `actions.with_raw_response`, and 2.1.0-2.1.1 return a raw
# response without `.response` (a task deleted during a sync would count as written).
SDK_FLOOR = "2.1.2"


def sdk_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("label-studio-sdk")
    except PackageNotFoundError:
        return "(not installed)"


def check_sdk() -> None:
    """Refuse an SDK older than :data:`SDK_FLOOR` with a message saying so (exit 1), before
    any call whose failure would read as a refused token or a server problem."""
    found = sdk_version()
    try:
        parts = tuple(int(p) for p in re.findall(r"\d+", found)[:3])
    except ValueError:
        parts = ()
    floor = tuple(int(p) for p in SDK_FLOOR.split("."))
    if not parts or parts < floor:
        raise IncompatibleSDK(f"label-studio-sdk {found} is installed; ls-agreement needs "
                              f"label-studio-sdk>={SDK_FLOOR} (pip install 'label-studio-sdk>={SDK_FLOOR}')")


def _check_whole(path: Path) -> None:
    """A JSON export whose body was cut short (Label Studio has answered an export with 0
    bytes while its tasks were being written) is a transport failure, read again: its
    first and last characters must be those of a list."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        head = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
        fh.seek(max(0, size - 4096))
        tail = fh.read().rstrip(b" \t\r\n")
    if not head.startswith(b"[") or not tail.endswith(b"]"):
        raise ConnectionError(f"the export's body is not a whole JSON list ({size} bytes)")


class ExportFile:
    """A project's export on disk, read back task by task (:meth:`Connection.stream_tasks`);
    a context manager that removes the file at its end."""

    def __init__(self, path: Path, what: str) -> None:
        self.path, self.what = path, what

    def __enter__(self) -> "ExportFile":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.path.unlink(missing_ok=True)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        try:
            for task in iter_export(self.path):
                if not isinstance(task, dict):
                    raise ValueError(f"a task that is not an object: {type(task).__name__}")
                yield task
        except (AdapterError, ValueError) as exc:
            # what the server sent, not the user's input: the read is retried as a whole
            raise ServerUnavailable(f"{self.what} could not be read: {exc}") from None


class Connection:
    """An SDK client plus retries, error translation and request counting.

    Parameters
    ----------
    url : str
        Label Studio base URL, e.g. ``http://localhost:8080``.
    token : str
        Legacy API key or personal access token (detected by :func:`token_kind`).
    timeout : float
        Per-request timeout in seconds.
    retry : RetryPolicy, optional
        Retry policy for transient failures.
    """

    def __init__(self, url: str, token: str, *, timeout: float = 60.0,
                 retry: RetryPolicy | None = None, pool: int = 16) -> None:
        check_sdk()
        from label_studio_sdk import LabelStudio

        url = (url or "").strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise BadInput(f"--url must start with http:// or https:// (got {url!r})")
        if not token or not token.strip():
            raise BadInput("--token is empty")
        self.url = url
        self.kind = token_kind(token)
        self.retry = retry or RetryPolicy()
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()
        # Learned from this server during the connection's life (push.py): the
        # Data Manager actions per project and the measured PATCH concurrency.
        self._dm_actions: dict[int, frozenset[str]] = {}
        self.patch_workers: int | None = None
        self._lean_patch = True   # see update_task
        limits = httpx.Limits(max_connections=pool, max_keepalive_connections=pool)
        http = httpx.Client(timeout=timeout, follow_redirects=True, limits=limits)
        self._http = http  # ours to close; the SDK only borrows it
        try:
            # max_retries=0: the SDK's own retries are unbounded in time (Retry-After up to
            # 60 s) and skip timeouts; ours below cover both.
            self.sdk = LabelStudio(base_url=url, api_key=token.strip(),
                                   httpx_client=http, timeout=timeout, max_retries=0)
        except TypeError as exc:  # a signature we do not know: the SDK's fault, not the token's
            raise IncompatibleSDK(f"label-studio-sdk {sdk_version()} does not take the arguments "
                                  f"ls-agreement passes ({exc}); install label-studio-sdk>="
                                  f"{SDK_FLOOR}") from exc
        except Exception as exc:  # the SDK validates JWTs eagerly
            raise AuthError(f"token refused by the SDK: {_body_text(exc)}") from exc

    # -- core -----------------------------------------------------------------------------
    def call(self, what: str, method: str, fn: Callable[..., T], *args: Any,
             not_found: str | None = None, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` with retries; translate failures into our errors.

        ``what`` names the operation in messages; ``method`` (GET/PATCH/...) is counted in
        :attr:`calls` once per attempt that reached the network layer.
        """
        last: BaseException | None = None
        for k in range(self.retry.attempts):
            with self._lock:
                self.calls[method] += 1
            try:
                return fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - translated below
                if not _is_transient(exc):
                    raise self._translate(exc, what, not_found) from exc
                last = exc
                if k + 1 < self.retry.attempts:
                    time.sleep(self.retry.delay(k))
        assert last is not None
        raise self._unavailable(last, what) from last

    def _unavailable(self, exc: BaseException, what: str) -> ServerUnavailable:
        status = _status_of(exc)
        if status is not None:
            why = f"HTTP {status}: {_body_text(exc)}"
        elif isinstance(exc, httpx.TimeoutException):
            why = "timed out"
        elif isinstance(exc, httpx.ConnectError):
            why = "connection refused or host unreachable"
        else:
            why = f"{type(exc).__name__}: {exc}"
        return ServerUnavailable(
            f"Label Studio at {self.url} failed while {what} after "
            f"{self.retry.attempts} attempts ({why})")

    def _translate(self, exc: BaseException, what: str,
                   not_found: str | None) -> LabelStudioError:
        status = _status_of(exc)
        if status in (401, 403):
            kind = {"legacy": "legacy API token", "pat": "personal access token",
                    "access": "access token"}[self.kind]
            hint = (" (legacy tokens must be enabled for the organization: Organization → "
                    "API Tokens Settings)" if self.kind == "legacy" else "")
            return AuthError(f"Label Studio at {self.url} refused the {kind} while {what}: "
                             f"HTTP {status} {_body_text(exc)}{hint}")
        if status == 404:
            return NotFound(not_found or f"not found while {what} at {self.url}")
        if status is not None and status < 400:
            return ServerUnavailable(
                f"{self.url} did not answer like Label Studio while {what} (HTTP {status}, "
                f"{_body_text(exc)[:80]!r}); is the URL right?")
        if status is not None:
            return RequestRejected(f"Label Studio refused {what}: HTTP {status} "
                                   f"{_body_text(exc)}")
        if isinstance(exc, (json.JSONDecodeError, ValueError)):
            return ServerUnavailable(
                f"{self.url} did not answer like Label Studio while {what} "
                f"({type(exc).__name__}: {exc}); is the URL right?")
        if isinstance(exc, LabelStudioError):
            return exc
        return ServerUnavailable(f"unexpected failure while {what}: "
                                 f"{type(exc).__name__}: {exc}")

    # -- operations -----------------------------------------------------------------------
    def whoami(self) -> dict[str, Any]:
        """The authenticated user (checks URL and token in one request)."""
        user = self.call("checking the token", "GET", self.sdk.users.whoami)
        return as_plain_dict(user)

    def get_project(self, project_id: int) -> dict[str, Any]:
        """Project fields (``label_config``, ``title``, ...) as a dict."""
        proj = self.call(f"reading project {project_id}", "GET", self.sdk.projects.get,
                         project_id, not_found=f"project {project_id} does not exist on "
                         f"{self.url} (or this token cannot see it)")
        return as_plain_dict(proj)

    def export_tasks(self, project_id: int,
                     ids: Sequence[int] | None = None) -> list[dict[str, Any]]:
        """All tasks of a project (or the given ids) through the JSON export.

        One request returns every task with ``data``, ``meta``, ``annotations`` and
        ``predictions``; far cheaper than paging ``tasks.list`` through pydantic models.
        """
        def go() -> list[dict[str, Any]]:
            # LS reads the subset from `ids[]` (data_export/api.py); the SDK's own `ids`
            # parameter is sent as `ids` and silently ignored, so pass it ourselves.
            opts = ({"additional_query_parameters": {"ids[]": [int(i) for i in ids]}}
                    if ids is not None else None)
            chunks = self.sdk.projects.exports.download_sync(
                project_id, export_type="JSON", download_all_tasks=True,
                request_options=opts)
            body = b"".join(chunks)
            try:
                payload = json.loads(body)
            except ValueError as exc:
                # a body cut short (Label Studio answered an export with 0 bytes while its
                # tasks were being written): a transport failure, read again
                raise ConnectionError(f"the export's body is not JSON ({len(body)} bytes): {exc}") from exc
            if not isinstance(payload, list):
                raise ValueError("export is not a JSON list")
            if may_hold_lone_surrogates(body):
                payload = [without_lone_surrogates(t, f"project {project_id}'s export") for t in payload]
            return payload
        what = (f"exporting project {project_id}" if ids is None
                else f"re-reading {len(ids)} tasks of project {project_id}")
        return self.call(what, "GET", go, not_found=f"project {project_id} does not exist "
                         f"on {self.url} (or this token cannot see it)")

    def stream_tasks(self, project_id: int) -> "ExportFile":
        """All tasks of a project through the JSON export, spooled to a temporary file and
        read back one task at a time: ``with conn.stream_tasks(p) as tasks: for t in tasks``.
        A full read then holds one task parsed, never the whole project (issue 24: a served
        100,000-task project); the file goes when the ``with`` ends."""
        def go() -> ExportFile:
            fd, name = tempfile.mkstemp(prefix=f"ls-agreement-export-{project_id}-", suffix=".json")
            try:
                with os.fdopen(fd, "wb") as fh:
                    for chunk in self.sdk.projects.exports.download_sync(
                            project_id, export_type="JSON", download_all_tasks=True):
                        fh.write(chunk)
                _check_whole(Path(name))
            except BaseException:
                os.unlink(name)
                raise
            return ExportFile(Path(name), f"the export of project {project_id} from {self.url}")
        return self.call(f"exporting project {project_id}", "GET", go,
                         not_found=f"project {project_id} does not exist on {self.url} (or this token cannot see it)")

    def list_tasks(self, project_id: int, page_size: int = 100) -> list[dict[str, Any]]:
        """All tasks through the paginated task list (each page retried on its own)."""
        out: list[dict[str, Any]] = []
        page = 1
        while True:
            pager = self.call(f"listing tasks of project {project_id} (page {page})", "GET",
                              self.sdk.tasks.list, project=project_id, page=page,
                              page_size=page_size, fields="all",
                              not_found=f"project {project_id} does not exist on {self.url}"
                              if page == 1 else "")  # LS answers 404 past the last page
            items = [as_plain_dict(t) for t in (pager.items or [])]
            out.extend(items)
            if len(items) < page_size or not pager.has_next:
                return out
            page += 1

    def update_task(self, task_id: int, *, data: dict[str, Any] | None = None,
                    meta: dict[str, Any] | None = None) -> None:
        """PATCH a task's ``data`` and/or ``meta`` (each replaces the whole dict).

        Sent with ``?review=true``: Label Studio 1.23 loads the task for a PATCH through
        its Data Manager queryset, by default with every computed column (``all_fields``);
        with ``review`` only two (tasks/api.py ``TaskAPI.get_queryset``). The write and its
        answer are the same, the server's time per PATCH ≈15 % lower (125 vs 146 ms
        measured). Should a server refuse the parameter (4xx other than 404), the PATCH is
        repeated without it, and it is not sent again on this connection.
        """
        kwargs: dict[str, Any] = {}
        if data is not None:
            kwargs["data"] = data
        if meta is not None:
            kwargs["meta"] = meta
        what = f"writing task {task_id}"
        gone = f"task {task_id} was deleted during the sync"
        if self._lean_patch:
            try:
                self.call(what, "PATCH", self.sdk.tasks.update, str(task_id), not_found=gone,
                          request_options={"additional_query_parameters": {"review": "true"}},
                          **kwargs)
                return
            except (AuthError, RequestRejected):
                self._lean_patch = False
        self.call(what, "PATCH", self.sdk.tasks.update, str(task_id), not_found=gone, **kwargs)

    def dm_actions(self, project_id: int) -> frozenset[str]:
        """Ids of the Data Manager actions this token may run on the project.

        ``GET /api/dm/actions?project=ID`` (SDK ``actions.list``). Experimental actions such
        as ``add_data_field`` are listed only when the server runs with the feature flag
        ``ff_back_experimental_features`` (or ``EXPERIMENTAL_FEATURES``) on, and only to
        users allowed to change the project.
        """
        items = self.call(f"listing Data Manager actions of project {project_id}", "GET",
                          self.sdk.actions.list, project=int(project_id),
                          not_found=f"project {project_id} does not exist on {self.url} "
                          "(or this token cannot see it)")
        return frozenset(str(as_plain_dict(a).get("id")) for a in items or [])

    def has_dm_action(self, project_id: int, action: str) -> bool:
        """Whether the project lists ``action`` (asked once per connection and project)."""
        pid = int(project_id)
        if pid not in self._dm_actions:
            self._dm_actions[pid] = self.dm_actions(pid)
        return action in self._dm_actions[pid]

    def forget_dm_actions(self, project_id: int) -> None:
        """Treat the project as offering no actions (one was refused)."""
        self._dm_actions[int(project_id)] = frozenset()

    def set_data_field(self, project_id: int, task_ids: Sequence[int], key: str,
                       value: Any) -> int | None:
        """Set ``task.data[key] = value`` on many tasks in one request.

        The Data Manager action ``add_data_field`` (``POST /api/dm/actions?id=
        add_data_field&project=ID``, SDK ``actions.create`` with the action's own fields
        as extra body parameters). Other data keys are left alone. The value keeps its
        JSON type, so the tasks end exactly as a ``PATCH`` writing ``value`` would leave
        them: a float goes as ``value_type`` "Number" (the server applies ``float()``); an
        int or null as the "Expression" ``choices([v])`` (a one-element population: every
        task draws ``v``, parsed as JSON — "Number" would turn ``3`` into ``3.0``); a
        string as "String".

        Parameters
        ----------
        project_id : int
            The project; ids outside it are skipped by the server.
        task_ids : Sequence[int]
            The tasks.
        key : str
            The data key.
        value : int, float, str or None
            The value (floats must be finite).

        Returns
        -------
        int or None
            How many tasks the server says it updated (fewer than asked: some ids are
            gone), None when its answer does not say.

        Raises
        ------
        BadInput
            A value the action cannot set exactly.
        RequestRejected, NotFound
            The server refused the action (not enabled, not allowed).
        """
        if isinstance(value, float) and math.isfinite(value):
            vtype, sent = "Number", value
        elif value is None or (isinstance(value, int) and not isinstance(value, bool)):
            vtype, sent = "Expression", f"choices([{json.dumps(value)}])"
        elif isinstance(value, str):
            vtype, sent = "String", value
        else:
            raise BadInput(f"cannot bulk-write {type(value).__name__} {value!r} to {key!r}")
        ids = [int(i) for i in task_ids]
        opts = {"additional_body_parameters": {"value_name": key, "value_type": vtype,
                                               "value": sent}}
        raw = self.call(f"setting {key!r} on {len(ids)} tasks of project {project_id}",
                        "POST", self.sdk.actions.with_raw_response.create,
                        id="add_data_field", project=int(project_id),
                        selected_items={"all": False, "included": ids},
                        request_options=opts,
                        not_found=f"project {project_id} or its action add_data_field "
                        f"does not exist on {self.url}")
        try:
            detail = raw.response.json().get("detail", "")
        except (ValueError, AttributeError):
            return None
        m = re.search(r"Updated (\d+) tasks", str(detail))
        return int(m.group(1)) if m else None

    def get_task(self, task_id: int) -> dict[str, Any]:
        """One task as ``GET /api/tasks/<id>`` answers it.

        Unlike the JSON export it carries ``overlap`` and ``is_labeled`` (the export
        excludes both: data_export/serializers.py), which routing (routing.py) needs.
        """
        task = self.call(f"reading task {task_id}", "GET", self.sdk.tasks.get, str(task_id),
                         not_found=f"task {task_id} does not exist on {self.url}")
        return as_plain_dict(task)

    def list_predictions(self, project_id: int) -> list[dict[str, Any]]:
        """Every prediction of a project (the JSON export lists prediction ids only:
        Label Studio 1.23 data_export/serializers.py), one request."""
        preds = self.call(f"listing the predictions of project {project_id}", "GET", self.sdk.predictions.list,
                          project=int(project_id), not_found=f"project {project_id} does not exist on {self.url}")
        return [as_plain_dict(p) for p in preds or []]

    def create_prediction(self, task_id: int, result: list[dict[str, Any]], score: float,
                          model_version: str) -> int:
        """POST a prediction onto a task (the consensus answer, plugin/consensus.py); its id."""
        pred = self.call(f"writing the consensus prediction of task {task_id}", "POST", self.sdk.predictions.create,
                         task=int(task_id), result=result, score=float(score), model_version=model_version,
                         not_found=f"task {task_id} does not exist on {self.url}")
        return int(as_plain_dict(pred)["id"])

    def update_prediction(self, prediction_id: int, result: list[dict[str, Any]], score: float) -> None:
        """PATCH a prediction's result and score."""
        self.call(f"updating prediction {prediction_id}", "PATCH", self.sdk.predictions.update,
                  int(prediction_id), result=result, score=float(score),
                  not_found=f"prediction {prediction_id} does not exist on {self.url}")

    def delete_prediction(self, prediction_id: int) -> None:
        """DELETE a prediction (a task that no longer has a consensus, a duplicate)."""
        self.call(f"deleting prediction {prediction_id}", "DELETE", self.sdk.predictions.delete,
                  int(prediction_id), not_found=f"prediction {prediction_id} does not exist on {self.url}")

    def set_task_overlap(self, task_id: int, *, overlap: int | None, is_labeled: bool | None,
                         meta: dict[str, Any]) -> None:
        """PATCH a task's ``overlap``, ``is_labeled`` and ``meta`` in one request.

        ``overlap`` None leaves it alone (only ``meta`` is written). Label Studio 1.23 does
        not recompute ``is_labeled`` when a PATCH changes ``overlap`` (TaskAPI saves the
        serializer's fields as sent), and the next-task logic only hands out tasks with
        ``is_labeled`` false, so the caller sends the value that matches the new overlap.
        """
        kwargs: dict[str, Any] = {"meta": meta}
        if overlap is not None:
            kwargs["overlap"] = int(overlap)
        if is_labeled is not None:
            kwargs["is_labeled"] = bool(is_labeled)
        self.call(f"setting the overlap of task {task_id}", "PATCH", self.sdk.tasks.update,
                  str(task_id), not_found=f"task {task_id} was deleted during the sync",
                  **kwargs)

    def dm_columns(self, project_id: int) -> list[dict[str, Any]]:
        """The Data Manager columns of a project (``GET /api/dm/columns?project=ID``).

        The SDK has no method for it, so the request goes through its own HTTP client
        (same base URL and authentication). Each column has ``id``, ``parent`` (``data``
        for task data keys) and ``visibility_defaults`` (``explore``/``labeling``).
        """
        from label_studio_sdk.core.api_error import ApiError

        def go() -> list[dict[str, Any]]:
            resp = self.sdk._client_wrapper.httpx_client.request(
                "api/dm/columns/", method="GET", params={"project": int(project_id)})
            if resp.status_code >= 400:
                raise ApiError(status_code=resp.status_code, body=resp.text[:300])
            cols = resp.json().get("columns")
            if not isinstance(cols, list):
                raise ValueError("no 'columns' list in the answer")
            return [c for c in cols if isinstance(c, dict)]

        return self.call(f"listing Data Manager columns of project {project_id}", "GET", go,
                         not_found=f"project {project_id} does not exist on {self.url}")

    def list_views(self, project_id: int) -> list[dict[str, Any]]:
        views = self.call(f"listing views of project {project_id}", "GET",
                          self.sdk.views.list, project=project_id)
        return [as_plain_dict(v) for v in views]

    def create_view(self, project_id: int, data: dict[str, Any]) -> dict[str, Any]:
        return as_plain_dict(self.call(f"creating view {data.get('title')!r}", "POST",
                                  self.sdk.views.create, project=project_id, data=data))

    def update_view(self, view_id: int, project_id: int,
                    data: dict[str, Any]) -> dict[str, Any]:
        return as_plain_dict(self.call(f"updating view {data.get('title')!r}", "PATCH",
                                  self.sdk.views.update, str(view_id), project=project_id,
                                  data=data))

    def delete_view(self, view_id: int) -> None:
        self.call(f"deleting view {view_id}", "DELETE", self.sdk.views.delete, str(view_id))

    def view_task_ids(self, project_id: int, view_id: int) -> list[int]:
        """Ids of the tasks a Data Manager view shows, in its order."""
        out: list[int] = []
        page = 1
        while True:
            pager = self.call(f"listing view {view_id}", "GET", self.sdk.tasks.list,
                              project=project_id, view=view_id, page=page, page_size=500,
                              fields="task_only", not_found="")
            items = list(pager.items or [])
            out.extend(int(as_plain_dict(t)["id"]) for t in items)
            if len(items) < 500 or not pager.has_next:
                return out
            page += 1

    def users(self) -> dict[int, str]:
        """Organization users: id -> email."""
        users = self.call("listing users", "GET", self.sdk.users.list)
        return {int(u["id"]): str(u.get("email") or "") for u in map(as_plain_dict, users)}

    def close(self) -> None:
        self._http.close()


def as_plain_dict(obj: Any) -> dict[str, Any]:
    """SDK pydantic model (or dict) → plain dict, extra fields included."""
    if isinstance(obj, dict):
        return obj
    for attr in ("model_dump", "dict"):
        fn = getattr(obj, attr, None)
        if fn is not None:
            try:
                return fn(mode="json") if attr == "model_dump" else fn()
            except TypeError:
                return fn()
    raise TypeError(f"cannot read {type(obj).__name__} as a dict")


def chunked(seq: Sequence[T] | Iterable[T], n: int) -> Iterable[list[T]]:
    """Consecutive chunks of at most ``n`` items."""
    buf: list[T] = []
    for x in seq:
        buf.append(x)
        if len(buf) == n:
            yield buf
            buf = []
    if buf:
        yield buf

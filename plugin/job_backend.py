"""The job queue's interface: jobs, stored events and the calls every backend answers.

Two backends implement :class:`JobBackend`: :class:`~ls_agreement.plugin.jobs.JobQueue`
(SQLite, one machine) and :class:`~ls_agreement.plugin.queue.redis_queue.RedisQueue`
(Redis + RQ workers). Everything else (receiver, worker, live runner, pages) sees only this.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Protocol

PENDING, RUNNING, DONE, FAILED = "pending", "running", "done", "failed"


@dataclass(frozen=True)
class Job:
    """One sync job (a row of the ``jobs`` table)."""

    id: int
    project_id: int
    reason: str
    last_reason: str
    events: int
    status: str
    attempts: int
    max_attempts: int
    not_before: float
    created_at: float
    started_at: float | None
    finished_at: float | None
    error: str | None
    report_path: str | None
    result: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class StoredEvent:
    """A webhook event kept until the live runner applied it (``payload``: its JSON body)."""

    id: int
    action: str
    payload: str | None
    received_at: float


class JobBackend(Protocol):
    """What the receiver, the worker, the live runner and the pages need from a queue:
    :class:`JobQueue` (SQLite, one machine) or
    :class:`~ls_agreement.plugin.queue.redis_queue.RedisQueue` (Redis + RQ workers)."""

    def enqueue(self, project_id: int, reason: str, *, delay: float = 0.0,
                action: str | None = None, payload: bytes | str | None = None) -> Job: ...

    def claim(self) -> Job | None: ...

    def finish(self, job: Job, ok: bool, error: str | None = None, *,
               retry: bool = True, report_path: str | None = None,
               result: Mapping[str, Any] | None = None) -> Job: ...

    def recover(self) -> list[Job]: ...

    def events(self, project_id: int, limit: int = 100_000) -> list[StoredEvent]: ...

    def drop_events(self, project_id: int, upto: int) -> None: ...

    def add_live_stats(self, project_id: int, *, lost: int = 0, republished: int = 0,
                       baselines: int = 0) -> None: ...

    def live_stats(self) -> dict[int, dict[str, Any]]: ...

    def get(self, job_id: int) -> Job: ...

    def recent(self, limit: int = 50, project_id: int | None = None) -> list[Job]: ...

    def counts(self) -> dict[str, int]: ...

    def add_project(self, project_id: int, source: str, webhook_id: int | None = None) -> None: ...

    def projects(self) -> dict[int, dict[str, Any]]: ...

    def set_latest(self, project_id: int, report_path: str,
                   summary: Mapping[str, Any] | None) -> None: ...

    def report_file(self, project_id: int) -> Path | None: ...

    def notify(self) -> None: ...

    def wait(self, timeout: float) -> None: ...

    def next_due_in(self) -> float | None: ...

    def close(self) -> None: ...

"""Response models of the JSON API of ``ls-agreement serve`` (its OpenAPI description).

The routes (plugin/web.py) build their answers as plain dicts, written as before the move
to FastAPI; these models document them, and tests/plugin/test_web_api.py checks real
answers against them. ``extra="allow"``: a new key in an answer is not an error.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ErrorOut", "WebhookOut", "JobCounts", "HealthOut", "JobOut", "JobsOut",
           "REPORT_DOC"]


class ErrorOut(BaseModel):
    """Any refused or failed request."""

    status: Literal["error", "rejected"]
    error: str = Field(description="what is wrong, for a human")


class WebhookOut(BaseModel):
    """Answer to Label Studio: the event was queued, or ignored, and why."""

    model_config = ConfigDict(extra="allow")
    status: Literal["queued", "ignored", "rejected", "error"]
    action: str | None = None
    project: int | None = None
    job: int | None = Field(None, description="id of the (coalesced) pending job")
    events: int | None = Field(None, description="events coalesced into that job so far")
    why: str | None = None
    error: str | None = None


class JobCounts(BaseModel):
    """Number of jobs per status."""

    model_config = ConfigDict(extra="allow")
    pending: int
    running: int
    done: int
    failed: int


class HealthOut(BaseModel):
    """``/health``. Without a required token only ``status`` is present."""

    model_config = ConfigDict(extra="allow")
    status: Literal["UP", "DEGRADED"] = Field(
        description="DEGRADED (HTTP 503): the worker died, no RQ worker is registered, or the "
                    "queue (Redis) does not answer")
    worker_alive: bool | None = None
    queue: str | None = Field(None, description="sqlite, or the Redis URL without its password")
    queue_error: str | None = Field(None, description="why the queue could not be read")
    uptime: float | None = Field(None, description="seconds since the service started")
    jobs: JobCounts | None = None
    projects: list[int] | None = Field(None, description="served project ids")
    live: dict[str, dict[str, Any]] | None = Field(
        None, description="per project id: lost_events (found by reconciles), republished, "
                          "baselines")
    webhooks: dict[str, float | int | None] | None = Field(
        None, description="answer times of recent webhook requests: n, p50, p99, max (s)")


class JobOut(BaseModel):
    """One sync job (``plugin/jobs.py`` ``Job``); times are Unix seconds."""

    model_config = ConfigDict(extra="allow")
    id: int
    project_id: int
    reason: str = Field(description="what created the job (first event or 'reconcile')")
    last_reason: str
    events: int = Field(description="events coalesced into the job")
    status: Literal["pending", "running", "done", "failed"]
    attempts: int
    max_attempts: int
    not_before: float
    created_at: float
    started_at: float | None
    finished_at: float | None
    error: str | None
    report_path: str | None
    result: dict[str, Any] | None = Field(description="the sync's summary (n_written, ...)")


class JobsOut(BaseModel):
    """``/jobs``: counts over all jobs and the most recent ones, newest first."""

    counts: JobCounts
    jobs: list[JobOut]


REPORT_DOC = ("The latest report of the project as written by the sync (the report.json "
              "of `ls-agreement report --format json`: `project`, `controls` with alpha, "
              "sigma, KS, intervals and diagnostics per control, ...); served as stored.")

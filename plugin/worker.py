"""The job worker and the periodic reconcile of ``ls-agreement serve``.

The worker takes due jobs from the queue one at a time and runs the (incremental) sync of
the job's project: only tasks whose values changed are written back. A failure is
recorded with its message; transient ones (server down, timeouts, unexpected errors) are
retried with backoff a bounded number of times by the queue, permanent ones (bad token,
deleted project, a labeling config the plugin cannot read) are not — a later event or
reconcile opens a new job anyway.

The reconciler enqueues a sync of every served project at start-up and then every
``interval`` seconds, because webhooks are only hints: Label Studio drops them while the
receiver is down (docs/design.md, "State and scale").
"""
from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, TextIO

from .client import AuthError, BadInput, NotFound, RequestRejected
from .job_backend import Job, JobBackend

SyncRunner = Callable[[int], Any]   # project id -> SyncResult (see plugin/sync.py)

# Errors a retry cannot fix: the token, the project or the input must change first.
PERMANENT = (AuthError, BadInput, NotFound, RequestRejected)


def summarize(result: Any) -> dict[str, Any]:
    """Headline numbers of a :class:`~ls_agreement.plugin.sync.SyncResult` (quality index).

    Returns
    -------
    dict
        ``{"title", "n_tasks", "n_flagged", "n_written", "skipped", "run_id",
        "generated_at", "n_warnings", "controls": {name: {"tag", "kind", "distance",
        "alpha", "ks", "sigma", "n_items", "n_pairs"}}}``.
    """
    report = result.report
    controls = {
        name: {"tag": c.tag, "kind": c.kind, "distance": c.distance, "alpha": c.alpha, "ks": c.ks,
               "sigma": c.sigma, "n_items": c.n_items, "n_pairs": c.n_pairs}
        for name, c in report.controls.items()}
    title = None
    if getattr(result, "state_path", None) is not None:
        # sync_project saved the project header (title included) in its state
        from .state import SyncState, project_key
        try:
            with SyncState(result.state_path) as st:
                title = (st.project(project_key(result.url, result.project_id)) or {}).get(
                    "project_title")
        except (ValueError, OSError):
            title = None
    return {"title": title, "n_tasks": result.n_tasks,
            "n_flagged": report.n_flagged,
            "n_written": result.n_written, "skipped": result.skipped, "run_id": result.run_id,
            "generated_at": time.time(), "n_warnings": len(result.warnings or []),
            "controls": controls}


def make_runner(url: str, token: str, settings: Any, state_path: Path | str,
                out_root: Path | str) -> SyncRunner:
    """A runner syncing one project into ``<out_root>/project-<id>/``.

    Parameters
    ----------
    url, token : str
        Label Studio address and API token.
    settings : PluginSettings or None
        Report settings and sync options (``plugin/settings.py``).
    state_path : path
        The SQLite file of the sync state (shared with the job queue).
    out_root : path
        Root folder of the per-project report files.
    """
    from .sync import sync_project

    def run(project_id: int) -> Any:
        return sync_project(url, token, int(project_id), settings, state_path=state_path,
                            progress=False, out_dir=Path(out_root) / f"project-{int(project_id)}")
    return run


def _log(stream: TextIO | None, msg: str) -> None:
    if stream is not None:
        print(time.strftime("%H:%M:%S ") + msg, file=stream, flush=True)


class Worker(threading.Thread):
    """Runs due jobs until ``stop`` is set.

    Parameters
    ----------
    queue : JobBackend
        The job queue.
    runner : callable
        ``runner(project_id) -> SyncResult`` (see :func:`make_runner`).
    stop : threading.Event
        Set to ask the worker to exit after its current job.
    poll : float
        Longest sleep between two looks at the queue (jobs enqueued by another process
        do not wake this one).
    log : text stream or None
        Where one line per job goes.
    """

    def __init__(self, queue: JobBackend, runner: SyncRunner, stop: threading.Event, *,
                 poll: float = 1.0, log: TextIO | None = sys.stderr) -> None:
        super().__init__(name="ls-agreement-worker", daemon=True)
        self.queue, self.runner, self.stop, self.poll, self.log = queue, runner, stop, poll, log
        self.current: Job | None = None
        self.n_done = 0
        self.n_failed = 0

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                job = self.queue.claim()
            except Exception as exc:  # noqa: BLE001 - a locked/broken DB must not kill us
                _log(self.log, f"worker: cannot read the job queue: {exc}")
                self.stop.wait(self.poll)
                continue
            if job is None:
                due = self.queue.next_due_in()
                self.queue.wait(self.poll if due is None else min(self.poll, max(due, 0.01)))
                continue
            self.execute(job)

    def execute(self, job: Job) -> Job:
        """Run one claimed job and record its outcome."""
        self.current = job
        t0 = time.perf_counter()
        _log(self.log, f"job {job.id}: syncing project {job.project_id} "
                       f"({job.reason}; {job.events} event(s), attempt {job.attempts})")
        try:
            res = self.runner(job) if getattr(self.runner, "takes_job", False) else self.runner(job.project_id)
        except Exception as exc:  # noqa: BLE001 - recorded on the job
            retry = not isinstance(exc, PERMANENT)
            msg = f"{type(exc).__name__}: {exc}"[:2000]
            out = self.queue.finish(job, False, msg, retry=retry)
            self.n_failed += 1
            _log(self.log, f"job {job.id}: failed ({msg}); now {out.status}")
        else:
            summary = summarize(res)
            summary["seconds"] = round(time.perf_counter() - t0, 3)
            path = (res.report_paths or {}).get("report")
            out = self.queue.finish(job, True, report_path=str(path) if path else None,
                                    result=summary)
            self.n_done += 1
            _log(self.log, f"job {job.id}: project {job.project_id} done in "
                           f"{summary['seconds']:.1f}s ({res.n_written} task(s) written, "
                           f"{summary['n_flagged']} flagged)")
        finally:
            self.current = None
        return out


class Reconciler(threading.Thread):
    """Enqueues a sync of every served project at start and every ``interval`` seconds.

    Parameters
    ----------
    queue : JobBackend
        The job queue.
    projects : callable
        ``projects() -> iterable of project ids`` (read at every tick: new ones count).
    stop : threading.Event
        Set to stop.
    interval : float
        Seconds between ticks; 0 = only the start-up tick.
    """

    def __init__(self, queue: JobBackend, projects: Callable[[], Iterable[int]],
                 stop: threading.Event, interval: float, *,
                 log: TextIO | None = sys.stderr) -> None:
        super().__init__(name="ls-agreement-reconcile", daemon=True)
        self.queue, self.projects, self.stop = queue, projects, stop
        self.interval, self.log = float(interval), log
        self.ticks = 0

    def tick(self, reason: str) -> list[int]:
        """Enqueue one sync per served project; returns their ids."""
        ids = sorted({int(p) for p in self.projects()})
        for pid in ids:
            self.queue.enqueue(pid, reason, action="RECONCILE")
        self.ticks += 1
        if ids:
            _log(self.log, f"{reason}: queued {len(ids)} project(s)")
        return ids

    def run(self) -> None:
        try:
            self.tick("startup")
        except Exception as exc:  # noqa: BLE001
            _log(self.log, f"startup reconcile failed: {exc}")
        if self.interval <= 0:
            return
        while not self.stop.wait(self.interval):
            try:
                self.tick("reconcile")
            except Exception as exc:  # noqa: BLE001 - try again next time
                _log(self.log, f"reconcile failed: {exc}")

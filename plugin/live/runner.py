"""The worker's runner for ``serve`` and ``worker``: one :class:`~.project.LiveProject`
per served project, and, past one machine, the store that lets any worker take a project's
next job (:class:`SharedStore`, on Redis in plugin/queue/shared_state.py)."""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Protocol, TextIO

from ..client import Connection, LabelStudioError, RetryPolicy
from ..job_backend import Job, JobBackend, StoredEvent
from ..settings import PluginSettings
from ..state import SyncState
from ..sync import SyncResult
from .baseline import ProjectBaseline
from .project import BASELINE, RECONCILE, LiveOutcome, LiveProject, _log

__all__ = ["LiveRunner", "SharedStore", "LiveProject", "LiveOutcome", "RECONCILE", "BASELINE"]


class SharedStore(Protocol):
    """Where a project's live state is kept between jobs past one machine, so any worker
    can run its next job (implemented by plugin/queue/shared_state.py on Redis)."""

    def version(self, project_id: int) -> int: ...

    def restore(self, proj: "LiveProject") -> bool: ...

    def save(self, proj: "LiveProject", out: "LiveOutcome", events: list[StoredEvent]) -> int: ...

    def put_next(self, project_id: int, base: ProjectBaseline) -> None: ...

    def take_next(self, project_id: int) -> ProjectBaseline | None: ...

    def forget(self, project_id: int) -> None: ...


class LiveRunner:
    """The worker's runner for ``serve``: one :class:`LiveProject` per served project.

    Called with a claimed :class:`~ls_agreement.plugin.job_backend.Job`, it applies the project's
    stored events and drops them once their tasks are written (a failed job keeps them:
    applying them again gives the same mirror).
    """

    takes_job = True

    def __init__(self, url: str, token: str, settings: PluginSettings, queue: JobBackend,
                 state_path: Path | str, out_root: Path | str, log: TextIO | None = sys.stderr,
                 shared: SharedStore | None = None) -> None:
        opts = settings.sync
        self.conn = Connection(url, token, timeout=opts.timeout,
                               retry=RetryPolicy(attempts=opts.attempts, base=opts.backoff),
                               pool=max(4, opts.workers * 2))
        self.settings, self.queue, self.log = settings, queue, log
        self.state_path, self.out_root = Path(state_path), Path(out_root)
        self._state: SyncState | None = None   # opened in the worker thread (SQLite is per thread)
        self.projects: dict[int, LiveProject] = {}
        self.last: dict[int, LiveOutcome] = {}
        # past one machine (serve/worker --queue redis://): the projects' state in Redis
        self.shared = shared

    def project(self, project_id: int) -> LiveProject:
        pid = int(project_id)
        if pid not in self.projects:
            if self._state is None:
                self._state = SyncState(self.state_path)
            shared = self.shared
            self.projects[pid] = LiveProject(
                self.conn, pid, self.settings, self._state, self.out_root / f"project-{pid}", self.log,
                wake=lambda: self._wake(pid),
                on_baseline=None if shared is None else (lambda b: shared.put_next(pid, b)),
                adopt=None if shared is None else (lambda: shared.take_next(pid)))
        return self.projects[pid]

    def _wake(self, pid: int) -> None:
        """A new baseline is ready (called from its builder's thread): a job swaps it in."""
        try:
            self.queue.enqueue(pid, "baseline ready", action=BASELINE)
        except Exception as exc:  # noqa: BLE001 - a thread's callback: nothing above it to tell
            # the queue closed while the baseline was being built (the service stopping), or
            # its backend is unreachable: the next job of the project swaps it in anyway
            _log(self.log, f"project {pid}: a new baseline is ready, but its wake-up could not be "
                           f"queued ({type(exc).__name__}: {exc}); the project's next job takes it")

    def __call__(self, job: Job) -> SyncResult:
        t0 = time.perf_counter()
        proj = self.project(job.project_id)
        restored = False
        if self.shared is not None:
            ver = self.shared.version(proj.project_id)
            if ver != proj.version:    # another worker ran the project since: take its state
                restored = self.shared.restore(proj)
                proj.version = ver
        events = self.queue.events(job.project_id)
        try:
            out = proj.run(events)
        except BaseException as exc:
            # the mirror may hold half-applied events: the next job starts from a full read
            proj.reset()
            if self.shared is not None:
                proj.version = -1
                if restored and not isinstance(exc, LabelStudioError):
                    # our own code failed on a state it restored: that state is suspect, and
                    # every retry would restore it again; the next job reads the project anew
                    self.shared.forget(proj.project_id)
            raise
        if self.shared is not None:
            proj.version = self.shared.save(proj, out, events)
        if events:
            self.queue.drop_events(job.project_id, events[-1].id)
        self.queue.add_live_stats(job.project_id, lost=out.lost, republished=len(out.republished),
                                  baselines=int(out.mode != "events"))
        self.last[job.project_id] = out
        assert proj.base is not None and proj.mirror is not None
        report = proj.base.report
        return SyncResult(project_id=proj.project_id, url=self.conn.url, report=report,
                          report_paths={"report": proj.out_dir / "report.json"},
                          n_tasks=len(proj.mirror), n_written=len(out.written),
                          skipped=len(out.touched) - len(out.written), written=out.written,
                          state_path=self.state_path,
                          timings={**out.timings, "total": time.perf_counter() - t0},
                          calls=dict(self.conn.calls), warnings=list(report.warnings))

    def close(self) -> None:
        if self._state is not None:
            self._state.close()
        self.conn.close()

"""One served project on the live path: stored webhook events → mirror → touched tasks → push.

Per project it keeps a :class:`~.mirror.ProjectMirror` and a
:class:`~.baseline.ProjectBaseline` in memory, and what each task carries from us:

- a **full read** (first job of a project after start-up, a ``RECONCILE`` event, a
  ``PROJECT_UPDATED``, an event the mirror cannot place) exports the project, compares it
  with the mirror (each difference is a lost event: logged and counted in ``/health``),
  refills the mirror, makes a new baseline and writes every task whose values differ
  from what it carries on the server;
- **events** update the mirror from their payloads (a GET of the task when a payload is
  incomplete) and rescore only the touched tasks against the current baseline; only
  those are written, and only when their values changed;
- after ``[sync] rebaseline_events`` events a **new baseline** is made from a snapshot of
  the mirror (no server read) in a background thread, while events go on being rescored
  against the current one. When it is ready (a ``BASELINE`` event wakes the worker), the
  tasks touched since the snapshot are rescored against it and every task whose pushed
  values it changes is republished, once per baseline. A reconcile does the same after its
  full read; only the very first baseline of a project is made on the event path.

docs/design.md, "Live path", has the reasoning.
"""
from __future__ import annotations

import copy
import json
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, TextIO

from ls_agreement.adapters.export_stream import may_hold_lone_surrogates, without_lone_surrogates

from ..annotator_report import annotator_quality, write_reports
from ..client import BadInput, Connection, LabelStudioError
from ..job_backend import StoredEvent
from ..consensus import ours_by_task, push_consensus
from ..push import push
from ..pushback import Desired, PushOutcome, Write, current_of, desired_for, needs_write
from ..report.model import Report
from ..settings import PluginSettings
from ..state import SyncState, project_key
from ..sync import annotator_emails, name_annotators, project_summary
from ..routing import route_flagged, routing_view
from ..views import ensure_views
from .baseline import ProjectBaseline, apply_scores, make_baseline, score_tasks
from .baseline_worker import make_baseline_in_worker
from .events import Applied, apply_event
from .mirror import MirrorTask, ProjectMirror

__all__ = ["LiveProject", "LiveOutcome", "RECONCILE", "BASELINE"]

#: The stored event that asks for a full read (enqueued by the reconciler and ``connect``).
RECONCILE = "RECONCILE"
#: The stored event a finished background baseline enqueues to be swapped in.
BASELINE = "BASELINE"
#: An event's writes of this many tasks or fewer go by PATCH even where the bulk action is
#: listed (:func:`~..push.push`): per moved key, bulk costs a request; per task, PATCH does.
EVENT_PATCH_UP_TO = 3


@dataclass
class LiveOutcome:
    """What one job did to one project."""

    mode: str                          # "full", "events" or "rebaseline"
    n_events: int = 0
    touched: list[int] = field(default_factory=list)
    written: list[int] = field(default_factory=list)
    republished: list[int] = field(default_factory=list)
    lost: int = 0
    timings: dict[str, float] = field(default_factory=dict)


def _log(stream: TextIO | None, msg: str) -> None:
    if stream is not None:
        print(time.strftime("%H:%M:%S ") + msg, file=stream, flush=True)


class LiveProject:
    """Mirror, baseline and pushed values of one served project (see the module docstring).

    Parameters
    ----------
    conn : Connection
    project_id : int
    settings : PluginSettings
    state : SyncState
        Where pushed values are recorded (shared with ``sync``).
    out_dir : Path
        The project's report files.
    """

    def __init__(self, conn: Connection, project_id: int, settings: PluginSettings,
                 state: SyncState, out_dir: Path, log: TextIO | None = None,
                 wake: Callable[[], None] | None = None,
                 on_baseline: Callable[[ProjectBaseline], None] | None = None,
                 adopt: Callable[[], ProjectBaseline | None] | None = None) -> None:
        self.conn, self.project_id, self.settings = conn, int(project_id), settings
        self.state, self.out_dir, self.log = state, Path(out_dir), log
        self.key = project_key(conn.url, self.project_id)
        self.mirror: ProjectMirror | None = None
        self.base: ProjectBaseline | None = None
        self.config_xml = ""
        self.title: str | None = None
        self.pushed: dict[int, Desired | None] = {}
        self.names: dict[str, str] = {}
        self.users: dict[int, str] = {}
        # a baseline being made beside the event path, and what events touched meanwhile
        self.wake = wake
        # past one machine: a background baseline is published for any worker to adopt
        self.on_baseline, self.adopt = on_baseline, adopt
        self.version = 0       # of the shared state this copy reflects (plugin/queue/shared_state.py)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"ls-agreement-baseline-{project_id}")
        self._next: Future[ProjectBaseline] | None = None
        self._next_touched: set[int] = set()
        self._next_events = 0
        # a full read while a baseline is in flight: the reason of the baseline to make after it
        self._after: str | None = None
        self._files_at = 0.0
        # our consensus predictions by task (listed at the first push, then kept here)
        self._ours: dict[int, list[dict[str, Any]]] | None = None

    # -- the three ways a job goes ------------------------------------------------------------
    def run(self, events: list[StoredEvent]) -> LiveOutcome:
        """Apply stored events (oldest first); a full read when they ask for one."""
        if self.mirror is None or self.base is None:
            return self.full("start-up", n_events=len(events))
        if self._next is None and self.adopt is not None and any(ev.action == BASELINE for ev in events):
            self._adopt()
        applied = self._apply(events)
        if applied.reset:
            # the events of this job are in the server's state the read brings; their tasks
            # are rescored and written with the read's differences, not at the baseline swap
            return self.full(applied.reset, n_events=len(events),
                             touched=applied.touched | applied.deleted | applied.fetch)
        t0 = time.perf_counter()
        n_real = sum(ev.action != BASELINE for ev in events)
        self.base.events_since += n_real
        touched = applied.touched | applied.deleted
        if self._next is not None:
            self._next_touched |= touched
            self._next_events += n_real
        scores = score_tasks(self.base, self.mirror, applied.touched)
        apply_scores(self.base.report, scores, applied.deleted)
        t1 = time.perf_counter()
        out = LiveOutcome("events", n_events=len(events), touched=sorted(touched))
        pushed = self._push(self._plan(touched))
        out.written = pushed.written
        self._route(touched)
        self._consensus(touched)
        out.timings = {"score": t1 - t0, "push": time.perf_counter() - t1}
        if self._next is not None and self._next.done():
            return self._swap(out)
        if self._next is None and self.base.events_since >= self.settings.sync.rebaseline_events:
            self._start_baseline(f"{self.base.events_since} events")
        self._files()
        return out

    def _apply(self, events: list[StoredEvent]) -> Applied:
        """Events into the mirror (a GET for the tasks whose payload is incomplete)."""
        assert self.mirror is not None
        applied = Applied()
        for ev in events:
            if ev.action == RECONCILE:
                applied.reset = applied.reset or "reconcile"
                continue
            if ev.action == BASELINE:
                continue            # only wakes the worker: the swap below happens anyway
            try:
                payload = json.loads(ev.payload or "{}")
            except json.JSONDecodeError:
                applied.reset = applied.reset or f"event {ev.id}: stored payload unreadable"
                continue
            if isinstance(payload, Mapping):
                if may_hold_lone_surrogates(ev.payload or ""):
                    payload = without_lone_surrogates(payload, f"event {ev.id}")
                applied.merge(apply_event(self.mirror, payload))
        if applied.reset or not applied.fetch:
            return applied
        got = {int(t["id"]): t for t in self.conn.export_tasks(self.project_id, sorted(applied.fetch))}
        for tid in sorted(applied.fetch):
            if tid in got:
                self.mirror.put_task(MirrorTask.of(got[tid]))
            else:
                self.mirror.delete_tasks([tid])
                applied.deleted.add(tid)
        applied.touched |= applied.fetch - applied.deleted
        return applied

    def replay(self, events: list[StoredEvent]) -> None:
        """Apply events another worker already applied and pushed (plugin/queue/
        shared_state.py): the mirror and the report as they left them, nothing written."""
        assert self.mirror is not None and self.base is not None
        applied = self._apply(events)
        if applied.reset:       # never logged (a full read saves a snapshot); be safe anyway
            self.reset()
            return
        self.base.events_since += sum(ev.action != BASELINE for ev in events)
        apply_scores(self.base.report, score_tasks(self.base, self.mirror, applied.touched),
                     applied.deleted)

    def reset(self) -> None:
        """Forget the in-memory state (the next job reads the project in full)."""
        self.mirror = self.base = self._next = None
        self._next_touched, self._next_events, self._after = set(), 0, None
        self.pushed, self.names, self.users = {}, {}, {}

    def _adopt(self) -> None:
        """Take a baseline another worker made in the background (shared state only)."""
        assert self.adopt is not None and self.mirror is not None
        new = self.adopt()
        if new is None:
            return
        fut: Future[ProjectBaseline] = Future()
        fut.set_result(new)
        # which tasks events touched since its snapshot is known only to its maker:
        # rescore them all against it
        self._next, self._next_touched, self._next_events = fut, set(self.mirror.tasks), 0

    def full(self, reason: str, n_events: int = 0, touched: set[int] | None = None) -> LiveOutcome:
        """Read the whole project, repair the mirror, make a baseline, write what differs.

        ``touched``: tasks that events of the same job changed (already in the mirror, so
        the read finds no difference there): rescored and written like the differences.
        """
        touched = touched or set()
        t0 = time.perf_counter()
        project = self.conn.get_project(self.project_id)
        include = self.settings.report.include_predictions
        fresh = ProjectMirror(include)
        current: dict[int, Desired | None] = {}
        routing: list[dict[str, Any]] = []
        with self.conn.stream_tasks(self.project_id) as stream:
            # one task parsed at a time: the read keeps each task packed in the new mirror,
            # what we last wrote on it and its routing record, never the project parsed
            for t in stream:
                task = MirrorTask.of(t)
                fresh.put_task(task)
                current[task.id] = current_of(t)
                routing.append(routing_view(t))
        t1 = time.perf_counter()
        lost, diff = 0, None
        if self.mirror is not None and project.get("label_config") == self.config_xml:
            diff = self.mirror.diff_with(fresh)
            # a task an event of this job announced (one whose payload needed a GET) is no loss
            missed = diff.tasks - touched
            lost = len(missed)
            if lost:
                _log(self.log, f"project {self.project_id}: full read ({reason}) found {lost} "
                               f"difference(s) the events did not bring (lost events): tasks "
                               f"{sorted(missed)[:10]}")
        self.config_xml = project.get("label_config") or ""
        self.title = project.get("title")
        if not self.config_xml.strip():
            raise BadInput(f"project {self.project_id} has no labeling config")
        first = self.base is None or diff is None
        self.mirror = fresh
        self.users = self.conn.users()
        self.names = {str(i): e for i, e in self.users.items() if e}
        self.pushed = current
        if first:
            self._next, self._after = None, None   # made of another config (or none): stale
        else:
            assert self.base is not None and diff is not None
            # what the events missed or brought, against the current baseline; the new
            # baseline's swap then compares every task with what the read found on the server
            moved = diff.tasks | touched
            if self._next is None:
                # serve events against the current baseline while the new one is made
                self._start_baseline(reason)
            else:
                # One is in flight, made from the mirror before this read. Dropping it would
                # let full reads that come faster than a baseline is made (reconciles,
                # events the mirror cannot place) starve the project of every new baseline:
                # it goes in at its swap, with the read's tasks rescored against it, and
                # this read's own baseline is started then.
                self._next_touched |= moved
                self._after = reason
            live = moved & set(self.mirror.tasks)
            apply_scores(self.base.report, score_tasks(self.base, self.mirror, live), moved - live)
            out = LiveOutcome("full", n_events=n_events, touched=sorted(moved), lost=lost)
            out.written = self._push(self._plan(moved)).written
            self._ours = None                      # what a full read finds on the server
            self._consensus(moved)
            out.timings = {"read": t1 - t0, "push": time.perf_counter() - t1}
            if self._after is not None and self._next is not None and self._next.done():
                return self._swap(out)    # the kept one's wake-up may have been in this very job
            self._files()
            return out
        self.base = self._baseline(reason)
        t2 = time.perf_counter()
        pushed = self._push(self._plan(self.mirror.tasks))
        out = LiveOutcome("full", n_events=n_events, touched=sorted(self.mirror.tasks),
                          written=pushed.written, lost=lost)
        if self.settings.sync.views:
            ensure_views(self.conn, self.project_id, annotator_emails(self.base.report, self.users),
                         controls=list(self.base.report.controls))
        # the read has every task's meta: routing records are found without a request
        route_flagged(self.conn, self.project_id, self.base.report, self.settings, tasks=routing)
        self._ours = None                          # what a full read finds on the server
        self._consensus(set(self.mirror.tasks))
        self._files(force=True)
        out.timings = {"read": t1 - t0, "baseline": t2 - t1, "push": time.perf_counter() - t2}
        return out

    # -- baselines beside the event path --------------------------------------------------------
    def _start_baseline(self, reason: str) -> None:
        """Make a new baseline from a snapshot of the mirror in the background."""
        assert self.mirror is not None
        snapshot = self.mirror.copy()    # shares the packed tasks, which events replace, never mutate
        config = self.config_xml

        def make() -> ProjectBaseline:
            base = self._baseline(reason, snapshot, config)
            if self.on_baseline is not None:
                self.on_baseline(base)
            return base

        self._next_touched, self._next_events = set(), 0
        self._next = self._pool.submit(make)
        if self.wake is not None:
            # only once the future is done (success or failure): a job woken earlier would
            # find it unfinished, skip the swap, and nothing would wake the worker again
            wake = self.wake
            self._next.add_done_callback(lambda _f: wake())

    def baseline_ready(self) -> bool:
        """A background baseline is made and waits for its swap."""
        return self._next is not None and self._next.done()

    def baseline_pending(self) -> bool:
        """A background baseline is being made or waits for its swap."""
        return self._next is not None

    def _swap(self, out: LiveOutcome | None = None) -> LiveOutcome:
        """Put a finished background baseline in place; republish what it moved."""
        assert self._next is not None and self.mirror is not None
        fut, self._next = self._next, None
        if self.adopt is not None:
            self.adopt()            # the published copy of this baseline is used up too
        t0 = time.perf_counter()
        after, self._after = self._after, None
        touched, n_events = self._next_touched, self._next_events
        try:
            new = fut.result()        # a failure is the job's failure; the old baseline stays
        finally:
            if after is not None:     # a full read came while it was made: its own baseline now
                self._start_baseline(after)
        stale = {int(t) for t in new.report.tasks} | {int(t) for c in new.report.controls.values() for t in c.items}
        deleted = stale - set(self.mirror.tasks)
        apply_scores(new.report, score_tasks(new, self.mirror, touched), deleted)
        new.events_since = n_events
        self.base = new
        t1 = time.perf_counter()
        pushed = self._push(self._plan(set(self.mirror.tasks) | deleted))
        res = out or LiveOutcome("rebaseline")
        res.mode = "rebaseline"
        res.republished = sorted(set(pushed.written) - set(res.touched))
        res.written = sorted(set(res.written) | set(pushed.written))
        self._route(set(pushed.written) | touched)
        self._consensus(set(self.mirror.tasks))   # a new baseline's models may move any consensus
        res.timings = {**res.timings, "swap": t1 - t0, "republish": time.perf_counter() - t1}
        self._files(force=True)
        return res

    # -- parts ---------------------------------------------------------------------------------
    def _baseline(self, reason: str, mirror: ProjectMirror | None = None,
                  config: str | None = None) -> ProjectBaseline:
        mirror = mirror if mirror is not None else self.mirror
        assert mirror is not None
        try:
            if self.settings.sync.baseline_worker == "process":
                base = make_baseline_in_worker(config or self.config_xml, mirror, self.settings.report,
                                               reason=reason, annotator_names=self.names, fallback=True)
            else:
                base = make_baseline(config or self.config_xml, mirror, self.settings.report, reason=reason,
                                     annotator_names=self.names)
        except BadInput as exc:   # AdapterError and the measures' bad arguments; other errors are bugs
            raise BadInput(f"project {self.project_id}: cannot compute agreement: {exc}") from exc
        name_annotators(base.report, self.names)
        base.quality = annotator_quality(base.report)   # with the annotators' names, as sync has them
        return base

    def desired(self, task_id: int) -> Desired | None:
        """What one task should carry now (None: no agreement on it, or deleted)."""
        assert self.mirror is not None and self.base is not None
        task = self.mirror.tasks.get(int(task_id))
        if task is None:
            return None
        return desired_for(self.base.report, int(task_id), task.fingerprint(self.mirror.include_predictions),
                           self.names, self.base.quality, meta=self.settings.sync.meta)

    def _plan(self, task_ids: Any) -> list[Write]:
        """Writes for the tasks whose desired values differ from what they carry."""
        assert self.mirror is not None
        out = []
        for tid in sorted(int(t) for t in task_ids):
            want = self.desired(tid)
            have = self.pushed.get(tid)
            if tid not in self.mirror.tasks:
                if have is not None:
                    out.append(Write(tid, "", None, {}))
                else:
                    self.pushed.pop(tid, None)
                continue
            if needs_write(want, have):
                task = self.mirror.tasks[tid]
                fp = task.fingerprint(self.mirror.include_predictions)
                out.append(Write(tid, fp, want, dict(task.data)))
        return out

    def _route(self, task_ids: set[int]) -> None:
        """Routing of the tasks whose flag may have moved (opt-in; a reconcile's full read
        also undoes what routing raised once it is switched off)."""
        if self.settings.sync.route_flagged and task_ids and self.base is not None:
            route_flagged(self.conn, self.project_id, self.base.report, self.settings, task_ids=task_ids)

    def _consensus(self, task_ids: set[int]) -> None:
        """The consensus predictions of tasks whose consensus may have moved (opt-in; off,
        ours are removed where a task still carries one). Written only where they differ
        from what the task carries (listed once, then kept up to date here)."""
        if self.base is None or self.mirror is None or not task_ids:
            return
        on = self.settings.sync.consensus_prediction
        if self._ours is None:
            self._ours = ours_by_task(self.conn.list_predictions(self.project_id))
        ids = {t for t in task_ids if t in self.mirror.tasks and (on or t in self._ours)}
        if not ids:
            return
        done = push_consensus(self.conn, self.base.report if on else None,
                              [self.mirror.tasks[t].as_task() for t in sorted(ids)], self._ours,
                              workers=self.settings.sync.workers)
        for t in ids:
            self._ours.pop(t, None)
            if t in done.now:
                self._ours[t] = [done.now[t]]

    def _push(self, writes: list[Write]) -> PushOutcome:
        done: list[Write] = []

        def record(w: Write) -> None:
            self.pushed[w.task_id] = w.desired
            done.append(w)

        if not writes:
            return PushOutcome()
        opts = self.settings.sync
        try:
            # With the meta detail on, a task whose annotations changed always needs a PATCH
            # (its fingerprint is in the detail), so the bulk action would only add a read.
            out = push(self.conn, self.project_id, writes, workers=opts.workers, chunk=opts.chunk,
                       on_written=record, bulk=opts.bulk and not opts.meta,
                       patch_up_to=EVENT_PATCH_UP_TO)
        finally:   # what was written is recorded even when the push stops half-way (one transaction)
            self.state.forget_tasks(self.key, [w.task_id for w in done if w.desired is None])
            self.state.record_tasks(self.key, [(w.task_id, w.fingerprint,
                                                {"data": w.desired.data, "meta": w.desired.meta})
                                               for w in done if w.desired is not None], None)
        for tid in out.vanished:
            self.pushed.pop(tid, None)
        self.state.forget_tasks(self.key, out.vanished)
        return out

    def _files(self, force: bool = False) -> None:
        """Rewrite the report files: at baselines, else at most every ``report_every`` s."""
        assert self.base is not None
        if not force and time.monotonic() - self._files_at < self.settings.sync.report_every:
            return
        self._files_at = time.monotonic()
        self.base.report.baseline = self.base.info()
        header = {"server": self.conn.url, "project": self.project_id, "project_title": self.title,
                  "generated_at": int(time.time())}
        write_reports(self.out_dir, self.base.report, header)
        self.state.save_project(self.key, {**header, "controls": project_summary(self.base.report)})

    def mismatches(self, tasks: Any) -> list[str]:
        """Tasks (as exported now) whose values differ from a sync from scratch at the
        current baseline: a fresh mirror of ``tasks``, every task rescored. Empty when the
        event path left every task as a full sync would."""
        assert self.base is not None
        tasks = list(tasks)
        fresh = ProjectMirror(self.settings.report.include_predictions)
        fresh.fill(tasks)
        report = copy.deepcopy(self.base.report)
        stale = {int(t) for t in report.tasks} | {int(t) for c in report.controls.values() for t in c.items}
        apply_scores(report, score_tasks(self.base, fresh, fresh.tasks), stale - set(fresh.tasks))
        bad = []
        for task in tasks:
            tid = int(task["id"])
            want = desired_for(report, tid, fresh.tasks[tid].fingerprint(fresh.include_predictions),
                               self.names, self.base.quality, meta=self.settings.sync.meta)
            have = current_of(task)
            if needs_write(want, have):
                bad.append(f"task {tid}: a full sync writes {want and want.data}, it has {have and have.data}")
        return bad

    @property
    def report(self) -> Report | None:
        return None if self.base is None else self.base.report

"""``sync``: read a project from a running Label Studio, compute agreement for every
control tag, write the results back.

Steps: connect (checks URL and token) → read project and all tasks (one JSON export,
spooled to a file and read back a task at a time) → ``build_report`` on the whole project,
as the tasks are read → plan per-task writes by comparing the
desired values with what each task carries on the server → push (fresh re-read +
concurrent PATCH; state recorded per task after its write) → Data Manager views →
per-annotator JSON/CSV report. See docs/design.md ("Back into Label Studio", "State and scale")
and docs/label-studio.md §6–7.
"""
from __future__ import annotations

import pickle
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from .annotator_report import annotator_quality, write_reports
from .report.model import Report, to_jsonable
from .client import BadInput, Connection, RetryPolicy
from .consensus import ConsensusOutcome, ours_by_task, push_consensus, without_ours
from .push import push
from .pushback import Desired, PushOutcome, Write, current_of, desired_for, fingerprint, needs_write
from .routing import RoutingOutcome, route_flagged, routing_view
from .settings import PluginSettings, SyncOptions, settings_from_mapping
from .state import SyncState, project_key
from .views import ViewsOutcome, ensure_views

ProgressCallback = Callable[[int, int], None]


@dataclass
class SyncResult:
    """What a sync did.

    ``report`` is the ``build_report`` output; ``n_written`` tasks were written (PATCH or
    bulk); ``skipped`` tasks already carried the right values; ``calls`` counts requests by
    method; ``push`` says how the push went (mode, PATCH concurrency, request counts).
    """

    project_id: int
    url: str
    report: Report
    report_paths: dict[str, Path]
    n_tasks: int
    n_written: int
    skipped: int
    written: list[int] = field(default_factory=list)
    merged_fresh: list[int] = field(default_factory=list)
    vanished: list[int] = field(default_factory=list)
    views: ViewsOutcome | None = None
    run_id: int | None = None
    state_path: Path | None = None
    timings: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    push: PushOutcome | None = None
    routing: RoutingOutcome | None = None
    consensus: ConsensusOutcome | None = None


@dataclass(frozen=True, slots=True)
class _Kept:
    """What a sync keeps of one exported task once the report has read it: its id, the
    fingerprint of its annotations, what it carries from us, and its ``data`` and ``meta``
    packed (the writes start from them; the annotations are not kept)."""

    id: int
    fingerprint: str
    current: Desired | None
    _data: bytes
    _meta: bytes

    @classmethod
    def of(cls, task: Mapping[str, Any], include_predictions: bool) -> "_Kept":
        meta = task.get("meta")
        return cls(int(task["id"]), fingerprint(task, include_predictions), current_of(task),
                   pickle.dumps(dict(task.get("data") or {}), protocol=pickle.HIGHEST_PROTOCOL),
                   pickle.dumps(dict(meta) if isinstance(meta, Mapping) else {}, protocol=pickle.HIGHEST_PROTOCOL))

    @property
    def data(self) -> dict[str, Any]:
        return pickle.loads(self._data)

    @property
    def meta(self) -> dict[str, Any]:
        return pickle.loads(self._meta)


def as_plugin_settings(settings: Any) -> PluginSettings:
    if settings is None:
        return PluginSettings()
    if isinstance(settings, PluginSettings):
        return settings
    if isinstance(settings, Mapping):
        return settings_from_mapping(settings)
    return PluginSettings(report=settings)  # a ReportSettings


def default_out_dir(project_id: int) -> Path:
    """``./ls-agreement-reports/project-<id>/``."""
    return Path("ls-agreement-reports") / f"project-{int(project_id)}"


class _Progress:
    """tqdm on a terminal, plain lines otherwise, plus an optional callback."""

    def __init__(self, total: int, enabled: bool, callback: ProgressCallback | None) -> None:
        self.total, self.callback, self.bar = total, callback, None
        self.enabled = enabled and total > 0
        self.last_line = 0.0
        if self.enabled and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc="writing tasks", unit="task", file=sys.stderr)
        elif self.enabled:
            print(f"writing {total} tasks", file=sys.stderr, flush=True)
        self.done = 0

    def __call__(self, done: int) -> None:
        if self.bar is not None:
            self.bar.update(done - self.done)
        elif self.enabled and (time.monotonic() - self.last_line > 5 or done == self.total):
            print(f"  {done}/{self.total} tasks written", file=sys.stderr, flush=True)
            self.last_line = time.monotonic()
        self.done = done
        if self.callback:
            self.callback(done, self.total)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def annotator_emails(report: Report, users: Mapping[int, str]) -> dict[int, str]:
    """Human annotators (numeric ids) seen in the report → email."""
    ids: set[int] = set()
    names: dict[int, str] = {}
    for ctrl in report.controls.values():
        for a, e in ctrl.annotators.items():
            if a.isdigit():
                ids.add(int(a))
                if e.name:
                    names.setdefault(int(a), e.name)
    return {i: users.get(i) or names.get(i) or str(i) for i in ids}


def name_annotators(report: Report, names: Mapping[str, str]) -> None:
    """Exports carry user ids only: show each annotator's email in the report (in place)."""
    entries: list[Mapping[str, Any]] = [report.annotators]
    entries += [ctrl.annotators for ctrl in report.controls.values()]
    for annotators in entries:
        for ann_id, entry in annotators.items():
            if ann_id in names and entry.name in (None, "", ann_id):
                entry.name = names[ann_id]


def project_summary(report: Report) -> dict[str, Any]:
    """Project-level numbers per control (no per-item / per-annotator detail)."""
    return {name: {k: v for k, v in to_jsonable(ctrl).items() if k not in ("items", "annotators")}
            for name, ctrl in report.controls.items()}


def sync_project(url: str, token: str, project_id: int, settings: Any = None,
                 state_path: str | Path | None = None, progress: bool = True, *,
                 out_dir: str | Path | None = None,
                 on_progress: ProgressCallback | None = None) -> SyncResult:
    """Sync one project: compute agreement for every control tag and write it back.

    Parameters
    ----------
    url, token : str
        Label Studio base URL and API token (legacy key or personal access token).
    project_id : int
        The project.
    settings : PluginSettings, ReportSettings, Mapping or None
        Report settings (distances, flag threshold, ...) and sync options.
    state_path : path, optional
        SQLite state file; default ``<out_dir>/state.sqlite``.
    progress : bool
        Show progress (tqdm on a terminal, plain lines otherwise).
    out_dir : path, optional
        Where the report files go; default ``./ls-agreement-reports/project-<id>/``.
    on_progress : callable, optional
        ``on_progress(done, total)`` after each written task (tests stop servers from it).

    Returns
    -------
    SyncResult

    Raises
    ------
    LabelStudioError
        Server, auth, not-found problems (exit 3) or bad input (exit 2); tasks written
        before the failure are recorded, nothing else is.
    """
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    ps = as_plugin_settings(settings)
    opts: SyncOptions = ps.sync
    project_id = int(project_id)
    out = Path(out_dir) if out_dir is not None else default_out_dir(project_id)
    state_file = Path(state_path) if state_path is not None else out / "state.sqlite"
    conn = Connection(url, token, timeout=opts.timeout,
                      retry=RetryPolicy(attempts=opts.attempts, base=opts.backoff),
                      pool=max(16, opts.workers * 2))
    state = SyncState(state_file)
    key = project_key(conn.url, project_id)
    run_id: int | None = None
    stack = ExitStack()     # the spooled export, removed at the end
    try:
        conn.whoami()
        run_id = state.start_run(key)
        project = conn.get_project(project_id)
        users = conn.users()
        names = {str(i): e for i, e in users.items() if e}
        include_preds = bool(getattr(ps.report, "include_predictions", False))
        export = stack.enter_context(conn.stream_tasks(project_id))
        timings["read"] = time.perf_counter() - t0

        # the export is read task by task (issue 24: never the project parsed at once):
        # the report reads each task as it comes, and of each only what the writes and the
        # routing need is kept, packed
        kept: list[_Kept] = []
        routing_tasks: list[dict[str, Any]] = []

        def read() -> Iterator[Mapping[str, Any]]:
            for raw in export:
                # our consensus prediction is no agreement input (should an export expand predictions)
                task = without_ours(raw)
                kept.append(_Kept.of(task, include_preds))
                routing_tasks.append(routing_view(task))
                yield task

        t1 = time.perf_counter()
        report = checked_report(project, read(), ps.report, project_id, names)
        timings["compute"] = time.perf_counter() - t1

        t2 = time.perf_counter()
        name_annotators(report, names)
        quality = annotator_quality(report)
        rows = state.task_rows(key)
        writes: list[Write] = []
        unchanged: list[tuple[int, str, dict[str, Any]]] = []
        for task in kept:
            want = desired_for(report, task.id, task.fingerprint, names, quality, meta=opts.meta)
            if needs_write(want, task.current):
                writes.append(Write(task.id, task.fingerprint, want, task.data, task.meta))
            elif want is not None and rows.get(task.id, ("", None))[0] != task.fingerprint:
                unchanged.append((task.id, task.fingerprint, {"data": want.data, "meta": want.meta}))
        state.record_tasks(key, unchanged, run_id)
        known = {task.id for task in kept}
        state.forget_tasks(key, [t for t in rows if t not in known])

        bar = _Progress(len(writes), progress, on_progress)
        # Written tasks are recorded in batches: a bulk write finishes thousands of tasks
        # at once, and one SQLite commit per task would cost more than the writes. The
        # batch is flushed at least every second and whatever happens (finally below).
        done_rows: list[tuple[int, str, dict[str, Any]]] = []
        gone_rows: list[int] = []
        last_flush = [time.monotonic()]

        def flush() -> None:
            if done_rows:
                state.record_tasks(key, done_rows, run_id)
                done_rows.clear()
            if gone_rows:
                state.forget_tasks(key, gone_rows)
                gone_rows.clear()
            last_flush[0] = time.monotonic()

        def record(w: Write) -> None:
            if w.desired is None:
                gone_rows.append(w.task_id)
            else:
                done_rows.append((w.task_id, w.fingerprint,
                                  {"data": w.desired.data, "meta": w.desired.meta}))
            if len(done_rows) + len(gone_rows) >= 500 or time.monotonic() - last_flush[0] > 1:
                flush()

        try:
            pushed: PushOutcome = push(conn, project_id, writes, workers=opts.workers,
                                       chunk=opts.chunk, on_written=record, on_progress=bar,
                                       bulk=opts.bulk)
        finally:
            flush()
            bar.close()
        state.forget_tasks(key, pushed.vanished)
        timings["push"] = time.perf_counter() - t2

        # Routing after the push: it reads each task it changes fresh, and the push keeps
        # its meta key. Run even with routing off, to undo what an earlier run raised
        # (no request at all when no task carries a routing record).
        t_route = time.perf_counter()
        routed = route_flagged(conn, project_id, report, opts, tasks=routing_tasks)
        timings["routing"] = time.perf_counter() - t_route

        # the consensus answers as predictions (opt-in); off, what an earlier run wrote goes
        t_cons = time.perf_counter()
        ours = ours_by_task(conn.list_predictions(project_id))
        consensus = None
        if (opts.consensus_prediction and kept) or ours.keys() & known:
            # the consensus copies annotators' results: a second read of the spooled export
            carrying = (without_ours(t) for t in export if opts.consensus_prediction or int(t["id"]) in ours)
            consensus = push_consensus(conn, report if opts.consensus_prediction else None, carrying, ours,
                                       workers=opts.workers)
        timings["consensus"] = time.perf_counter() - t_cons

        t3 = time.perf_counter()
        views = None
        if opts.views:
            views = ensure_views(conn, project_id, annotator_emails(report, users),
                                 controls=list(report.controls))
        timings["views"] = time.perf_counter() - t3

        header = {"server": conn.url, "project": project_id,
                  "project_title": project.get("title"), "run_id": run_id,
                  "generated_at": int(time.time())}
        paths = write_reports(out, report, header)
        state.save_project(key, {**header, "controls": project_summary(report)})
        timings["total"] = time.perf_counter() - t0
        state.finish_run(run_id, "ok", len(kept), len(pushed.written))
        return SyncResult(
            project_id=project_id, url=conn.url, report=report, report_paths=paths,
            n_tasks=len(kept), n_written=len(pushed.written),
            skipped=len(kept) - len(writes), written=pushed.written,
            merged_fresh=pushed.merged_fresh, vanished=pushed.vanished, views=views,
            run_id=run_id, state_path=state_file, timings=timings, calls=dict(conn.calls),
            warnings=list(report.warnings), push=pushed, routing=routed, consensus=consensus)
    except BaseException as exc:
        if run_id is not None:
            state.finish_run(run_id, "failed", message=f"{type(exc).__name__}: {exc}"[:500])
        raise
    finally:
        stack.close()
        state.close()
        conn.close()


def checked_report(project: Mapping[str, Any], tasks: list[dict[str, Any]], report_settings: Any,
                   project_id: int, annotator_names: Mapping[str, str] | None = None) -> Report:
    """``build_report`` with its failures turned into bad-input errors naming the project."""
    from ls_agreement.plugin.report.build import build_report

    config = project.get("label_config") or ""
    if not config.strip():
        raise BadInput(f"project {project_id} has no labeling config")
    try:
        return build_report(config, tasks, report_settings, annotator_names=annotator_names)
    except BadInput as exc:  # AdapterError and the measures' bad arguments; other errors are bugs
        raise BadInput(f"project {project_id}: cannot compute agreement: {exc}") from exc

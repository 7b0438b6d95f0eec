"""Routing in open source: one more annotator for each low-agreement task.

Label Studio Enterprise can "assign one more annotator" when a task's agreement is low.
Open source has no such setting, but its next-task logic hands a task out as long as the
task is not ``is_labeled`` — fewer distinct annotators than the task's ``overlap``
(docs/label-studio.md §11). So raising ``overlap`` by one (and clearing ``is_labeled``)
sends a flagged task to one more annotator, and with the project's ``maximum_annotations``
above 1 the breadth-first queue serves such half-done tasks before fresh ones.

What this module changes it records on the task itself, in ``task.meta["agreement_routing"]``
(a key of its own: the sync rewrites ``meta["agreement"]`` whole at every push):

``{"original": 3, "raised_to": 4, "at": <epoch>}``
    we raised the overlap from 3 to 4;
``{..., "released": true}``
    the overlap was changed by someone else since (a user, or Label Studio re-spreading
    overlaps after a project settings change): hands off, the record is dropped once the
    task is no longer flagged.

Undoing restores ``original`` only while the overlap is still ``raised_to``, so a user's
own overlap change is never overwritten. The record lives on the server, so a sync, the
live service and another machine's state file all see the same thing.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from .client import Connection
from .errors import NotFound
from .report.model import Report
from .settings import PluginSettings, SyncOptions

ROUTING_KEY = "agreement_routing"


@dataclass
class RoutingOutcome:
    """What one routing pass did (task ids).

    ``raised``: overlap raised by one; ``restored``: overlap put back to its original;
    ``released``: our record dropped or marked released, the overlap left alone because
    someone else changed it; ``at_max``: flagged but already at ``route_max_overlap``;
    ``vanished``: deleted before we could write.
    """

    raised: list[int] = field(default_factory=list)
    restored: list[int] = field(default_factory=list)
    released: list[int] = field(default_factory=list)
    at_max: list[int] = field(default_factory=list)
    vanished: list[int] = field(default_factory=list)

    @property
    def changed(self) -> list[int]:
        """Tasks whose overlap we changed."""
        return sorted(self.raised + self.restored)


def _options(settings: Any) -> SyncOptions:
    if isinstance(settings, PluginSettings):
        return settings.sync
    if isinstance(settings, SyncOptions):
        return settings
    if settings is None:
        return SyncOptions()
    raise TypeError(f"routing needs PluginSettings or SyncOptions, got {type(settings).__name__}")


def record_of(task: Mapping[str, Any]) -> dict[str, Any] | None:
    """Our routing record on a task (``meta["agreement_routing"]``), None if absent or
    malformed (treated as absent: a raise then writes a well-formed one over it)."""
    meta = task.get("meta")
    rec = meta.get(ROUTING_KEY) if isinstance(meta, Mapping) else None
    if (isinstance(rec, Mapping) and isinstance(rec.get("original"), int)
            and isinstance(rec.get("raised_to"), int)):
        return dict(rec)
    return None


def routing_view(task: Mapping[str, Any]) -> dict[str, Any]:
    """What routing reads of an exported task, its id and its routing record: kept from a
    full read that does not keep the tasks (plugin/live/project.py)."""
    rec = record_of(task)
    return {"id": int(task["id"]), "meta": {ROUTING_KEY: rec} if rec is not None else {}}


def is_flagged(report: Report, task_id: int) -> bool:
    """Whether the report flags the task (report ``tasks[id].flag``)."""
    entry = report.tasks.get(str(int(task_id)))
    return bool(entry is not None and entry.flag)


def n_annotators(task: Mapping[str, Any]) -> int:
    """Distinct annotators with a finished (not skipped, non-empty) annotation.

    What Label Studio 1.23 counts for ``is_labeled`` (``TaskMixin._get_is_labeled_value``:
    ``completed_annotations`` = ``was_cancelled`` false and ``result`` not null; projects
    whose skip queue is ``IGNORE_SKIPPED`` also count skips, which we do not see here —
    there a skipped task may be handed out once more than the overlap says).
    """
    who: set[Any] = set()
    for ann in task.get("annotations") or []:
        if not isinstance(ann, Mapping) or ann.get("was_cancelled") or ann.get("result") is None:
            continue
        by = ann.get("completed_by")
        if isinstance(by, Mapping):
            by = by.get("id")
        who.add(by)
    return len(who)


def _candidates(report: Report, tasks: Iterable[Mapping[str, Any]], on: bool) -> list[int]:
    """Tasks that may need a write, from an export (no request needed).

    Flagged tasks without a record (to raise) and recorded tasks no longer flagged (to
    undo); with routing off every recorded task is undone.
    """
    out = []
    for t in tasks:
        tid = int(t["id"])
        rec = record_of(t)
        flagged = on and is_flagged(report, tid)
        if (flagged and rec is None) or (rec is not None and not flagged):
            out.append(tid)
    return out


def route_flagged(conn: Connection, project_id: int, report: Report, settings: Any, *,
                  tasks: Sequence[Mapping[str, Any]] | None = None,
                  task_ids: Iterable[int] | None = None) -> RoutingOutcome:
    """Raise the overlap of flagged tasks by one; restore it once they are not flagged.

    Parameters
    ----------
    conn : Connection
        Connected client (the token must be allowed to change tasks).
    project_id : int
        The project.
    report : Report
        ``build_report`` output; ``tasks[id].flag`` says which tasks are flagged.
    settings : PluginSettings or SyncOptions
        ``route_flagged`` (off: only undo what an earlier pass raised) and
        ``route_max_overlap`` (a task at or above it is not raised).
    tasks : sequence of task dicts, optional
        The project's tasks as exported (with ``meta``): candidates are chosen from them
        without a request (the sync passes its export; the routing key survives its push).
    task_ids : iterable of int, optional
        Tasks to look at (the live service passes the tasks an event touched); each is
        read with ``GET /api/tasks/<id>``. With neither, the whole project is exported.

    Returns
    -------
    RoutingOutcome

    Raises
    ------
    LabelStudioError
        The server refused or failed a read or write (tasks done before are done).
    """
    opts = _options(settings)
    on = bool(opts.route_flagged)
    if task_ids is not None:
        ids = sorted({int(t) for t in task_ids})
    else:
        if tasks is None:
            tasks = conn.export_tasks(int(project_id))
        ids = _candidates(report, tasks, on)
    out = RoutingOutcome()
    for tid in ids:
        try:
            task = conn.get_task(tid)
        except NotFound:
            out.vanished.append(tid)
            continue
        try:
            _route_one(conn, task, report, opts, on, out)
        except NotFound:
            out.vanished.append(tid)
    return out


def _route_one(conn: Connection, task: Mapping[str, Any], report: Report, opts: SyncOptions,
               on: bool, out: RoutingOutcome) -> None:
    """Decide and write one task (fresh from ``GET /api/tasks/<id>``)."""
    tid = int(task["id"])
    raw_meta = task.get("meta")
    meta = dict(raw_meta) if isinstance(raw_meta, Mapping) else {}
    rec = record_of(task)
    flagged = on and is_flagged(report, tid)
    overlap = task.get("overlap")
    overlap = int(overlap) if isinstance(overlap, int) else 1
    if flagged:
        if rec is not None:
            if not rec.get("released") and overlap != rec["raised_to"]:
                # Someone else moved the overlap: it is theirs now; keep a released
                # record so we neither raise it again nor "restore" it later.
                meta[ROUTING_KEY] = {**rec, "released": True}
                conn.set_task_overlap(tid, overlap=None, is_labeled=None, meta=meta)
                out.released.append(tid)
            return
        if overlap >= opts.route_max_overlap:
            out.at_max.append(tid)
            return
        new = overlap + 1
        meta[ROUTING_KEY] = {"original": overlap, "raised_to": new, "at": int(time.time())}
        conn.set_task_overlap(tid, overlap=new, is_labeled=n_annotators(task) >= new, meta=meta)
        out.raised.append(tid)
        return
    if rec is None:
        return
    meta.pop(ROUTING_KEY, None)
    if not rec.get("released") and overlap == rec["raised_to"]:
        orig = int(rec["original"])
        conn.set_task_overlap(tid, overlap=orig, is_labeled=n_annotators(task) >= orig,
                              meta=meta)
        out.restored.append(tid)
    else:
        conn.set_task_overlap(tid, overlap=None, is_labeled=None, meta=meta)
        out.released.append(tid)

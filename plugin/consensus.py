"""The consensus answer as a Label Studio prediction (``[sync] consensus_prediction = true``).

Per task, one prediction of our own ``model_version`` (:data:`MODEL_VERSION`) holds, for
each control the annotator model read, the consensus answer: the result items of the
annotation that gave it (``ItemEntry.consensus_by``: for labels an annotator who chose
the consensus label, for any other kind the medoid's author), copied for that control.
Its ``score`` is the posterior that every consensus answer of the task is right (the
product over its controls). A reviewer accepts it in one click in the labeling editor.

The prediction is written only when it differs from what the task carries (result and
score to 3 decimals; what it carries is listed through the API, the JSON export holding
prediction ids only): a second sync with nothing changed writes nothing; a task without a
consensus any more loses ours; duplicates of ours (a retried POST) are deleted. Our
predictions never take part in agreement: :func:`without_ours` drops them from a task
(an export with predictions expanded) before it is read or fingerprinted.
"""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from .client import Connection
from .errors import NotFound
from .report.model import Report

__all__ = ["MODEL_VERSION", "ConsensusOutcome", "is_ours", "without_ours", "ours_by_task", "consensus_prediction",
           "push_consensus"]

MODEL_VERSION = "ls-agreement consensus"
_DIGITS = 3


@dataclass
class ConsensusOutcome:
    """What one consensus push did (task ids)."""

    created: list[int] = field(default_factory=list)
    updated: list[int] = field(default_factory=list)
    deleted: list[int] = field(default_factory=list)
    unchanged: int = 0
    vanished: list[int] = field(default_factory=list)
    #: task id -> our prediction after the push (``id``, ``result``, ``score``)
    now: dict[int, dict[str, Any]] = field(default_factory=dict)


def is_ours(pred: Any) -> bool:
    return isinstance(pred, Mapping) and pred.get("model_version") == MODEL_VERSION


def without_ours(task: Mapping[str, Any]) -> Mapping[str, Any]:
    """The task without our consensus predictions (the same object when it has none)."""
    preds = task.get("predictions")
    if not preds or not any(is_ours(p) for p in preds):
        return task
    return {**task, "predictions": [p for p in preds if not is_ours(p)]}


def _annotation_of(task: Mapping[str, Any], annotator: str, control: str) -> list[dict[str, Any]]:
    """The result items of ``control`` in ``annotator``'s annotation of the task."""
    for ann in task.get("annotations") or []:
        if not isinstance(ann, Mapping) or ann.get("was_cancelled"):
            continue
        by = ann.get("completed_by")
        by = by.get("id", by.get("email")) if isinstance(by, Mapping) else by
        if str(by) != annotator:
            continue
        items = [dict(r) for r in ann.get("result") or [] if isinstance(r, Mapping) and r.get("from_name") == control]
        if items:
            return items
    return []


def consensus_prediction(report: Report, task: Mapping[str, Any]) -> tuple[list[dict[str, Any]], float] | None:
    """The consensus prediction one task should carry: ``(result, score)``, None when no
    control has a consensus answer for it.

    Parameters
    ----------
    report : Report
    task : mapping
        The task as exported or mirrored (its annotations' results are copied).
    """
    tid = str(task.get("id"))
    result: list[dict[str, Any]] = []
    score = 1.0
    for name, ctl in report.controls.items():
        rec = ctl.items.get(tid)
        if rec is None or not ctl.measured or rec.consensus_by is None or rec.consensus_p is None:
            continue
        items = _annotation_of(task, rec.consensus_by, name)
        if not items:
            continue
        result += items
        score *= rec.consensus_p
    if not result:
        return None
    return result, round(score, _DIGITS)


def _same(pred: Mapping[str, Any], result: list[dict[str, Any]], score: float) -> bool:
    have = pred.get("score")
    return (pred.get("result") == result and isinstance(have, (int, float)) and math.isclose(
        float(have), score, abs_tol=10 ** -_DIGITS / 2))


def ours_by_task(predictions: Iterable[Mapping[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """Our predictions (from ``Connection.list_predictions``) by task id."""
    out: dict[int, list[dict[str, Any]]] = {}
    for p in predictions:
        task = p.get("task")
        if is_ours(p) and isinstance(p.get("id"), int) and isinstance(task, int):
            out.setdefault(task, []).append(dict(p))
    return out


def push_consensus(conn: Connection, report: Report | None, tasks: Iterable[Mapping[str, Any]],
                   ours: Mapping[int, list[Mapping[str, Any]]], *, workers: int = 8) -> ConsensusOutcome:
    """Create, update or delete our prediction on each task so it holds the consensus.

    Parameters
    ----------
    conn : Connection
    report : Report or None
        The report the tasks were read into; None removes our predictions (the setting
        was switched off).
    tasks : iterable of mappings
        The tasks as exported (their annotations' results are copied).
    ours : mapping task id -> list of our predictions
        What the tasks carry now (:func:`ours_by_task`).
    workers : int
        Requests in flight at once.

    Returns
    -------
    ConsensusOutcome
        ``now``: our prediction per task after the push (id, result, score).
    """
    out = ConsensusOutcome()
    jobs = []
    for task in tasks:
        tid = int(task["id"])
        have = list(ours.get(tid, []))
        want = consensus_prediction(report, task) if report is not None else None
        keep = have[0] if have else None
        for extra in have[1:]:
            jobs.append(("delete", tid, extra["id"], None))
        if want is None:
            if keep is not None:
                jobs.append(("delete", tid, keep["id"], None))
            continue
        if keep is None:
            jobs.append(("create", tid, None, want))
        elif _same(keep, *want):
            out.unchanged += 1
            out.now[tid] = {"id": int(keep["id"]), "result": keep.get("result"), "score": keep.get("score")}
        else:
            jobs.append(("update", tid, keep["id"], want))

    def run(job: tuple[str, int, int | None, Any]) -> tuple[str, int, int | None, Any]:
        kind, tid, pid, want = job
        try:
            if kind == "create":
                return kind, tid, conn.create_prediction(tid, want[0], want[1], MODEL_VERSION), want
            if kind == "update":
                conn.update_prediction(int(pid), want[0], want[1])
                return kind, tid, pid, want
            conn.delete_prediction(int(pid))
            return kind, tid, None, None
        except NotFound:
            return "vanished", tid, None, None

    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="ls-agreement-consensus") as pool:
        for kind, tid, pid, want in pool.map(run, jobs):
            if kind == "vanished":
                out.vanished.append(tid)
                continue
            {"create": out.created, "update": out.updated, "delete": out.deleted}[kind].append(tid)
            if pid is not None:
                out.now[tid] = {"id": int(pid), "result": want[0], "score": want[1]}
    return out

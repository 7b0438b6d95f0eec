"""A project's annotations as the service last saw them, kept between full reads.

The mirror holds, per task, what agreement reads: the task's data (texts of span
controls), its annotations keyed by annotation id, and its predictions. It is filled by a
full read (``connect``, start-up, each reconcile) and updated between those by webhook
events (:mod:`.events`), so an event costs the service one task, not one project.

Annotations are stored normalised to the fields the adapters and the fingerprint read, so
an annotation that arrived in a webhook payload and the same annotation read from an
export compare equal: a reconcile that finds a difference has found a lost event.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ..consensus import is_ours
from ..pushback import fingerprint

__all__ = ["MirrorTask", "ProjectMirror", "MirrorDiff", "normalize_annotation"]

# What adapters/tasks.py and pushback.fingerprint read from an annotation.
_ANNOTATION_KEYS = ("id", "completed_by", "result", "was_cancelled", "ground_truth",
                    "created_at", "updated_at")
_PREDICTION_KEYS = ("id", "model_version", "result", "score", "created_at", "updated_at")


def _user_id(by: Any) -> Any:
    """``completed_by`` is a user id in exports and payloads, a user object in some APIs."""
    if isinstance(by, Mapping):
        return by.get("id", by.get("email"))
    return by


def normalize_annotation(ann: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of one annotation that agreement reads, in one shape whatever the source."""
    out = {k: ann.get(k) for k in _ANNOTATION_KEYS if k in ann}
    if "completed_by" in out:
        out["completed_by"] = _user_id(out["completed_by"])
    return out


def _normalize_prediction(pred: Mapping[str, Any]) -> dict[str, Any]:
    return {k: pred.get(k) for k in _PREDICTION_KEYS if k in pred}


@dataclass
class MirrorTask:
    """One task: data, annotations by id, predictions."""

    id: int
    data: dict[str, Any]
    annotations: dict[int, dict[str, Any]] = field(default_factory=dict)
    predictions: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, task: Mapping[str, Any]) -> "MirrorTask":
        """From a task as exported (``annotations`` and ``predictions`` lists)."""
        anns = {}
        for a in task.get("annotations") or []:
            if isinstance(a, Mapping) and isinstance(a.get("id"), int):
                anns[int(a["id"])] = normalize_annotation(a)
        preds = [_normalize_prediction(p) for p in task.get("predictions") or [] if isinstance(p, Mapping)]
        data = task.get("data")
        return cls(int(task["id"]), dict(data) if isinstance(data, Mapping) else {}, anns, preds)

    def as_task(self) -> dict[str, Any]:
        """The task in export shape (annotations in id order), what ``adapt`` reads: our
        own consensus prediction is left out (it never takes part in agreement)."""
        return {"id": self.id, "data": self.data,
                "annotations": [self.annotations[k] for k in sorted(self.annotations)],
                "predictions": [p for p in self.predictions if not is_ours(p)]}

    def fingerprint(self, include_predictions: bool = False) -> str:
        return fingerprint(self.as_task(), include_predictions)


@dataclass
class MirrorDiff:
    """What a full read found that the mirror did not know (each one a lost event)."""

    added: list[int] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)
    changed: list[int] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.added) + len(self.removed) + len(self.changed)

    @property
    def tasks(self) -> set[int]:
        return set(self.added) | set(self.removed) | set(self.changed)


class ProjectMirror:
    """The tasks of one project, keyed by task id, with an annotation id → task index.

    Parameters
    ----------
    include_predictions : bool
        Whether predictions take part in agreement (they are then part of the fingerprint).
    """

    def __init__(self, include_predictions: bool = False) -> None:
        self.include_predictions = include_predictions
        self.tasks: dict[int, MirrorTask] = {}
        self.annotation_task: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self.tasks)

    # -- full reads -------------------------------------------------------------------------
    def fill(self, tasks: Iterable[Mapping[str, Any]]) -> None:
        """Replace everything with a full read."""
        self.tasks, self.annotation_task = {}, {}
        for t in tasks:
            self.put_task(MirrorTask.of(t))

    def diff(self, tasks: Iterable[Mapping[str, Any]]) -> MirrorDiff:
        """Compare with a full read, by task and annotation fingerprint."""
        fresh = {int(t["id"]): MirrorTask.of(t) for t in tasks}
        out = MirrorDiff()
        for tid, task in fresh.items():
            mine = self.tasks.get(tid)
            if mine is None:
                out.added.append(tid)
            elif mine.fingerprint(self.include_predictions) != task.fingerprint(self.include_predictions):
                out.changed.append(tid)
        out.removed = [t for t in self.tasks if t not in fresh]
        return out

    def export(self) -> list[dict[str, Any]]:
        """Every task in export shape, in id order."""
        return [self.tasks[t].as_task() for t in sorted(self.tasks)]

    # -- events -----------------------------------------------------------------------------
    def put_task(self, task: MirrorTask) -> int:
        """Insert or replace a whole task (a TASKS_CREATED payload, a GET of the task)."""
        old = self.tasks.get(task.id)
        if old is not None:
            for aid in old.annotations:
                self.annotation_task.pop(aid, None)
        self.tasks[task.id] = task
        for aid in task.annotations:
            self.annotation_task[aid] = task.id
        return task.id

    def put_annotation(self, annotation: Mapping[str, Any], task_id: int,
                       task_data: Mapping[str, Any] | None = None) -> int:
        """Insert or replace one annotation (ANNOTATION_CREATED / UPDATED)."""
        aid = int(annotation["id"])
        old_task = self.annotation_task.get(aid)
        if old_task is not None and old_task != task_id and old_task in self.tasks:
            self.tasks[old_task].annotations.pop(aid, None)
        task = self.tasks.get(task_id)
        if task is None:
            task = self.tasks[task_id] = MirrorTask(task_id, {})
        if isinstance(task_data, Mapping):
            task.data = dict(task_data)
        task.annotations[aid] = normalize_annotation(annotation)
        self.annotation_task[aid] = task_id
        return task_id

    def delete_annotations(self, annotation_ids: Iterable[int]) -> tuple[set[int], list[int]]:
        """Drop annotations by id (ANNOTATIONS_DELETED carries only ids).

        Returns
        -------
        touched : set of int
            Tasks that lost an annotation.
        unknown : list of int
            Ids the mirror does not hold (their task is unknown: a full read finds it).
        """
        touched: set[int] = set()
        unknown: list[int] = []
        for aid in annotation_ids:
            tid = self.annotation_task.pop(int(aid), None)
            if tid is None or tid not in self.tasks:
                unknown.append(int(aid))
                continue
            self.tasks[tid].annotations.pop(int(aid), None)
            touched.add(tid)
        return touched, unknown

    def delete_tasks(self, task_ids: Iterable[int]) -> set[int]:
        """Drop tasks by id (TASKS_DELETED); returns those the mirror held."""
        gone: set[int] = set()
        for tid in task_ids:
            task = self.tasks.pop(int(tid), None)
            if task is not None:
                for aid in task.annotations:
                    self.annotation_task.pop(aid, None)
                gone.add(int(tid))
        return gone

    # -- size -------------------------------------------------------------------------------
    def approx_bytes(self) -> int:
        """Rough size of what the mirror holds (its JSON), for ``/health`` and benchmarks."""
        return sum(len(json.dumps(t.as_task(), default=str)) for t in self.tasks.values())

"""A project's annotations as the service last saw them, kept between full reads.

The mirror holds, per task, what agreement reads: the task's data (texts of span
controls), its annotations keyed by annotation id, and its predictions. It is filled by a
full read (``connect``, start-up, each reconcile) and updated between those by webhook
events (:mod:`.events`), so an event costs the service one task, not one project.

Annotations are stored normalised to the fields the adapters and the fingerprint read, so
an annotation that arrived in a webhook payload and the same annotation read from an
export compare equal: a reconcile that finds a difference has found a lost event.

Each task's data, each annotation and the predictions are held packed (issue 24: a served
100,000-task project): parsed JSON holds about 6 times the export's bytes in Python
objects, packed bytes about 0.6 times. An event unpacks only its own task; a baseline
unpacks the tasks one at a time as it reads them (:meth:`ProjectMirror.iter_tasks`), and
the snapshot a background baseline is made from shares the packed bytes (:meth:`ProjectMirror.copy`).
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

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


def _pack(value: Any) -> bytes:
    # pickle, not JSON: the smallest and quickest to make of the codecs tried (json, marshal,
    # pickle; decoding costs them all alike). The bytes never leave this process: what is
    # stored or shared (plugin/live/snapshot.py) is export-shaped JSON
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


_unpack = pickle.loads


class MirrorTask:
    """One task: data, annotations by id (``annotations``: id → packed normalised
    annotation), predictions; read through :attr:`data`, :attr:`predictions` and
    :meth:`as_task`, which unpack."""

    __slots__ = ("id", "_data", "annotations", "_predictions")

    def __init__(self, id: int, data: Mapping[str, Any] | None = None,
                 annotations: Mapping[int, Mapping[str, Any]] | None = None,
                 predictions: Iterable[Mapping[str, Any]] | None = None) -> None:
        self.id = int(id)
        self._data = _pack(dict(data or {}))
        self.annotations: dict[int, bytes] = {int(k): _pack(dict(v)) for k, v in (annotations or {}).items()}
        self._predictions = _pack([dict(p) for p in predictions or []])

    @classmethod
    def of(cls, task: Mapping[str, Any]) -> "MirrorTask":
        """From a task as exported (``annotations`` and ``predictions`` lists)."""
        anns = {}
        for a in task.get("annotations") or []:
            if isinstance(a, Mapping) and isinstance(a.get("id"), int):
                anns[int(a["id"])] = normalize_annotation(a)
        preds = [_normalize_prediction(p) for p in task.get("predictions") or [] if isinstance(p, Mapping)]
        data = task.get("data")
        return cls(int(task["id"]), data if isinstance(data, Mapping) else {}, anns, preds)

    @property
    def data(self) -> dict[str, Any]:
        """The task's data (a fresh dict: assign to change it)."""
        return _unpack(self._data)

    @data.setter
    def data(self, value: Mapping[str, Any]) -> None:
        self._data = _pack(dict(value))

    @property
    def predictions(self) -> list[dict[str, Any]]:
        return _unpack(self._predictions)

    def put_annotation(self, annotation_id: int, annotation: Mapping[str, Any]) -> None:
        """Insert or replace one (normalised) annotation."""
        self.annotations[int(annotation_id)] = _pack(dict(annotation))

    @property
    def packed_size(self) -> int:
        """Bytes of the packed parts."""
        return len(self._data) + len(self._predictions) + sum(map(len, self.annotations.values()))

    def copy(self) -> "MirrorTask":
        """A copy sharing the packed bytes (immutable): cheap whatever the task's size."""
        out = MirrorTask.__new__(MirrorTask)
        out.id, out._data, out._predictions = self.id, self._data, self._predictions
        out.annotations = dict(self.annotations)
        return out

    def as_task(self) -> dict[str, Any]:
        """The task in export shape (annotations in id order), what ``adapt`` reads: our
        own consensus prediction is left out (it never takes part in agreement)."""
        return {"id": self.id, "data": self.data,
                "annotations": [_unpack(self.annotations[k]) for k in sorted(self.annotations)],
                "predictions": [p for p in self.predictions if not is_ours(p)]}

    def fingerprint(self, include_predictions: bool = False) -> str:
        return fingerprint(self.as_task(), include_predictions)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MirrorTask):
            return NotImplemented
        return (self.id, self._data, self.annotations, self._predictions) == \
            (other.id, other._data, other.annotations, other._predictions)

    def __repr__(self) -> str:
        return f"MirrorTask(id={self.id}, annotations={sorted(self.annotations)})"


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
        fresh = ProjectMirror(self.include_predictions)
        fresh.fill(tasks)
        return self.diff_with(fresh)

    def diff_with(self, fresh: "ProjectMirror") -> MirrorDiff:
        """Compare with a mirror filled from a full read, by task and annotation fingerprint."""
        out = MirrorDiff()
        for tid, task in fresh.tasks.items():
            mine = self.tasks.get(tid)
            if mine is None:
                out.added.append(tid)
            elif mine.fingerprint(self.include_predictions) != task.fingerprint(self.include_predictions):
                out.changed.append(tid)
        out.removed = [t for t in self.tasks if t not in fresh.tasks]
        return out

    def iter_tasks(self) -> Iterator[dict[str, Any]]:
        """Every task in export shape, in id order, unpacked one at a time (a baseline
        reads the mirror without holding it all parsed)."""
        for t in sorted(self.tasks):
            task = self.tasks.get(t)
            if task is not None:
                yield task.as_task()

    def export(self) -> list[dict[str, Any]]:
        """Every task in export shape, in id order."""
        return list(self.iter_tasks())

    def copy(self) -> "ProjectMirror":
        """A snapshot that later events do not change (they replace or drop a task's
        packed parts in the original, never the bytes both share)."""
        out = ProjectMirror(self.include_predictions)
        out.tasks = {t: task.copy() for t, task in self.tasks.items()}
        out.annotation_task = dict(self.annotation_task)
        return out

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
            task = self.tasks[task_id] = MirrorTask(task_id)
        if isinstance(task_data, Mapping):
            task.data = dict(task_data)
        task.put_annotation(aid, normalize_annotation(annotation))
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
    def packed_bytes(self) -> int:
        """The bytes of the tasks' packed parts: what the mirror holds, its index aside."""
        return sum(t.packed_size for t in self.tasks.values())

"""Webhook payloads applied to a :class:`~.mirror.ProjectMirror`.

What each action carries (docs/label-studio.md §8, payloads in the shared data):

- ``ANNOTATION_CREATED`` / ``ANNOTATION_UPDATED``: the annotation (with ``task`` id) and
  the task (data, no annotations) → the annotation is put in place;
- ``ANNOTATIONS_CREATED``: a list of annotations → each is put in place;
- ``ANNOTATIONS_DELETED``: annotation ids only → the mirror's index finds their tasks;
- ``TASKS_CREATED``: the tasks (data; annotations when imported with them);
- ``TASKS_DELETED``: task ids only;
- ``PROJECT_UPDATED``: the labeling config may have changed → a full read.

A payload that lacks what is needed (an annotation without its result, an id the mirror
does not know) names the tasks to GET; when not even the task is known, a full read.
Applying an event twice gives the same mirror, so a job that fails half-way can replay
its events.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .mirror import MirrorTask, ProjectMirror

__all__ = ["Applied", "apply_event", "RESET_ACTIONS"]

#: Actions after which only a full read (and a new baseline) is right.
RESET_ACTIONS = frozenset({"PROJECT_UPDATED"})


@dataclass
class Applied:
    """What one or more events changed.

    Attributes
    ----------
    touched : set of int
        Tasks whose annotations changed (rescore and push these).
    fetch : set of int
        Tasks whose payload was incomplete: GET them, then rescore.
    deleted : set of int
        Tasks that no longer exist.
    reset : str or None
        Why a full read is needed instead (config changed, an unknown id), else None.
    """

    touched: set[int] = field(default_factory=set)
    fetch: set[int] = field(default_factory=set)
    deleted: set[int] = field(default_factory=set)
    reset: str | None = None

    def merge(self, other: "Applied") -> None:
        self.touched |= other.touched
        self.fetch |= other.fetch
        self.deleted |= other.deleted
        self.touched -= other.deleted
        self.fetch -= other.deleted
        self.reset = self.reset or other.reset


def _id(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().isdigit():
        return int(v)
    return None


def _ids(objs: Any) -> list[int]:
    out = []
    for o in objs if isinstance(objs, list) else []:
        i = _id(o.get("id")) if isinstance(o, Mapping) else _id(o)
        if i is not None:
            out.append(i)
    return out


def _annotation(mirror: ProjectMirror, ann: Any, task: Any, out: Applied) -> None:
    if not isinstance(ann, Mapping) or _id(ann.get("id")) is None:
        out.reset = out.reset or "an annotation event without an annotation id"
        return
    tid = _id(ann.get("task"))
    if tid is None and isinstance(task, Mapping):
        tid = _id(task.get("id"))
    if tid is None:
        tid = mirror.annotation_task.get(int(_id(ann.get("id"))))  # type: ignore[arg-type]
    if tid is None:
        out.reset = out.reset or f"annotation {ann.get('id')} names no task"
        return
    if not isinstance(ann.get("result"), list) or (tid not in mirror.tasks and not isinstance(task, Mapping)):
        out.fetch.add(tid)
        return
    data = task.get("data") if isinstance(task, Mapping) and _id(task.get("id")) == tid else None
    mirror.put_annotation({**ann, "id": _id(ann["id"])}, tid, data)
    out.touched.add(tid)


def apply_event(mirror: ProjectMirror, payload: Mapping[str, Any]) -> Applied:
    """Apply one webhook payload to ``mirror`` (in place).

    Parameters
    ----------
    mirror : ProjectMirror
    payload : Mapping
        The JSON body Label Studio posted (``action`` and the objects it carries).

    Returns
    -------
    Applied
    """
    out = Applied()
    action = str(payload.get("action") or "").strip().upper()
    if action in RESET_ACTIONS:
        out.reset = f"{action}: the labeling config may have changed"
    elif action in ("ANNOTATION_CREATED", "ANNOTATION_UPDATED"):
        _annotation(mirror, payload.get("annotation"), payload.get("task"), out)
    elif action == "ANNOTATIONS_CREATED":
        anns = payload.get("annotations")
        for ann in anns if isinstance(anns, list) else []:
            _annotation(mirror, ann, None, out)
    elif action == "ANNOTATIONS_DELETED":
        touched, unknown = mirror.delete_annotations(_ids(payload.get("annotations")))
        out.touched |= touched
        if unknown:
            out.reset = f"deleted annotation(s) {unknown[:5]} unknown to the mirror"
    elif action == "TASKS_CREATED":
        for task in payload.get("tasks") or []:
            tid = _id(task.get("id")) if isinstance(task, Mapping) else None
            if tid is None:
                continue
            if not isinstance(task.get("data"), Mapping):
                out.fetch.add(tid)
                continue
            if "annotations" not in task and tid in mirror.tasks:
                # a repeated creation event: keep what the mirror knows of its annotations
                mirror.tasks[tid].data = dict(task["data"])
            else:
                mirror.put_task(MirrorTask.of({**task, "id": tid}))
            out.touched.add(tid)
            if task.get("total_annotations") and "annotations" not in task:
                out.fetch.add(tid)      # imported with annotations the payload leaves out
    elif action == "TASKS_DELETED":
        gone = mirror.delete_tasks(_ids(payload.get("tasks")))
        out.deleted |= gone | set(_ids(payload.get("tasks")))
    out.touched -= out.deleted
    return out

"""Which annotations of a Label Studio task count, and who made them.

Export files are read by :mod:`.export_stream` (shapes and their checks:
:mod:`.export_shape`).

Ids: task and annotation ids are ints (64-bit, as Label Studio's keys) or non-empty
strings; an annotation id seen twice on a task, a ``was_cancelled`` that is not a boolean
(is it an answer or not?) and an out-of-range ``completed_by`` are bad input (strict: an
error; lenient: the annotation is skipped with a warning). A ``ground_truth`` that is not
a boolean is taken as false, with a warning.

Rules (documented in the README): cancelled (skipped) annotations and drafts never count;
when one annotator has several annotations on a task the latest counts (``updated_at``,
then ``created_at``, then id) and a warning says so; predictions count only when asked,
as annotator ``model:<model_version>``; ``ground_truth`` annotations are marked.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterable

from .errors import AdapterError, Problems, show

__all__ = ["Annotation", "annotator_of", "select_annotations"]


@dataclass(slots=True)
class Annotation:
    """One annotation that counts: who, which, its results, and whether ground truth."""

    annotator: str
    annotation_id: Any
    result: list
    ground_truth: bool
    display: str | None = None
    prediction: bool = False


def annotator_of(completed_by: Any) -> tuple[str, str | None]:
    """Annotator id (as str) and display name from ``completed_by``.

    ``completed_by`` is a user id (JSON export), a dict with ``id``/``email``/names
    (snapshot exports with expanded users), or an email (tasks imported by email).

    Raises
    ------
    ValueError
        For None, booleans, non-finite numbers, and dicts without ``id`` or ``email``.
    """
    t = type(completed_by)
    if t is int:
        if not -_MAX_ID <= completed_by < _MAX_ID:
            raise ValueError(f"completed_by {show(completed_by)} is not a user id (out of range)")
        return str(completed_by), None
    if t is dict:
        uid = completed_by.get("id")
        email = completed_by.get("email")
        name = " ".join(s for s in (completed_by.get("first_name"), completed_by.get("last_name"))
                        if isinstance(s, str) and s)
        display = email if isinstance(email, str) and email else (name or None)
        if type(uid) is int and -_MAX_ID <= uid < _MAX_ID or (isinstance(uid, str) and uid):
            return str(uid), display
        if uid is not None:
            raise ValueError(f"completed_by.id {show(uid)} is not a user id")
        if isinstance(email, str) and email:
            return email, display
        raise ValueError("completed_by has neither an id nor an email")
    if t is str and completed_by:
        return completed_by, completed_by if "@" in completed_by else None
    if t is float and math.isfinite(completed_by) and completed_by == int(completed_by) \
            and abs(completed_by) < 2 ** 53:
        return str(int(completed_by)), None
    raise ValueError(f"completed_by must be a user id or a user object, got {show(completed_by)}")


# Label Studio's ids are 64-bit database keys: anything larger is not an id.
_MAX_ID = 2 ** 63


def _when(value: Any) -> float:
    """Timestamp for ordering; unparsable or absent sorts first."""
    if isinstance(value, str) and value:
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return -math.inf
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return dt.timestamp()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            f = float(value)  # a 400-digit integer overflows: no usable time
        except OverflowError:
            return -math.inf
        return f if math.isfinite(f) else -math.inf
    return -math.inf


def _order_key(ann: dict) -> tuple:
    aid = ann.get("id")
    return (_when(ann.get("updated_at")), _when(ann.get("created_at")),
            aid if type(aid) in (int, float) else -math.inf, str(aid))


def select_annotations(task: dict, task_id: Any, problems: Problems,
                       include_predictions: bool = False) -> list[Annotation]:
    """The annotations of one task that count, at most one per annotator.

    Parameters
    ----------
    task : dict
        One task of the export.
    task_id : Any
        Its id (already validated).
    problems : Problems
        Where malformed annotations are reported.
    include_predictions : bool
        Add each prediction as annotator ``model:<model_version>``.
    """
    anns = task.get("annotations")
    if anns is None:
        anns = []
    if not isinstance(anns, list):
        problems.report(f"annotations must be a list, got {type(anns).__name__}",
                        task_id=task_id, field="annotations")
        anns = []
    chosen: dict[str, tuple[dict, Annotation]] = {}
    ids: set = set()
    for k, ann in enumerate(anns):
        if not isinstance(ann, dict):
            problems.report(f"annotation must be an object, got {type(ann).__name__}",
                            task_id=task_id, field=f"annotations[{k}]")
            continue
        aid = ann.get("id")
        if aid is not None:
            if not (type(aid) is int and -_MAX_ID <= aid < _MAX_ID or type(aid) is str and aid):
                problems.report(f"annotation id must be an integer or a non-empty string, got "
                                f"{type(aid).__name__} {show(aid)}", task_id=task_id,
                                field=f"annotations[{k}].id")
                continue
            if aid in ids:
                problems.report("duplicate annotation id (the first one is kept)", task_id=task_id,
                                annotation_id=aid, field=f"annotations[{k}].id")
                continue
            ids.add(aid)
        cancelled = ann.get("was_cancelled")
        if cancelled is not None and type(cancelled) is not bool:
            problems.report(f"was_cancelled must be true or false, got {show(cancelled)}",
                            task_id=task_id, annotation_id=aid, field="was_cancelled")
            continue
        if cancelled:
            continue  # skipped by the annotator: not an answer
        gt = ann.get("ground_truth")
        if gt is not None and type(gt) is not bool:
            msg = f"ground_truth must be true or false, got {show(gt)}"
            if problems.strict:
                problems.report(msg, task_id=task_id, annotation_id=aid, field="ground_truth")
            problems.warn(f"task {task_id}, annotation {aid}, field 'ground_truth': {msg} "
                          "(taken as false)")
        try:
            who, display = annotator_of(ann.get("completed_by"))
        except ValueError as exc:
            problems.report(str(exc), task_id=task_id, annotation_id=aid, field="completed_by")
            continue
        usable = None   # the updated_at string found usable: a created_at equal to it is too
        for key in ("updated_at", "created_at"):
            stamp = ann.get(key)
            if stamp is None or type(stamp) is str and stamp == usable:
                continue
            if _when(stamp) != -math.inf:
                if type(stamp) is str:
                    usable = stamp
            else:
                msg = f"unusable timestamp {show(stamp, 60)}"
                if problems.strict:
                    problems.report(msg, task_id=task_id, annotation_id=aid, field=key)
                problems.warn(f"task {task_id}, annotation {aid}, field {key!r}: {msg} "
                              "(ignored when choosing an annotator's latest annotation)")
        result = ann.get("result")
        if not isinstance(result, list):
            problems.report(f"result must be a list, got {type(result).__name__}",
                            task_id=task_id, annotation_id=aid, field="result")
            continue
        item = Annotation(who, aid, result, ann.get("ground_truth") is True, display)
        prev = chosen.get(who)
        if prev is not None:
            keep, drop = (ann, item), prev
            if _order_key(prev[0]) > _order_key(ann):
                keep, drop = prev, (ann, item)
            problems.warn(f"task {task_id}: annotator {who} has several annotations; the latest "
                          f"(id {keep[1].annotation_id}) counts, id {drop[1].annotation_id} is ignored")
            chosen[who] = keep
        else:
            chosen[who] = (ann, item)
    out = [a for _, a in chosen.values()]
    if include_predictions:
        out.extend(_predictions(task, task_id, problems, set(chosen)))
    return out


def _predictions(task: dict, task_id: Any, problems: Problems, taken: set[str]) -> Iterable[Annotation]:
    preds = task.get("predictions") or []
    if not isinstance(preds, list):
        problems.report("predictions must be a list", task_id=task_id, field="predictions")
        return []
    found: dict[str, Annotation] = {}
    for k, pred in enumerate(preds):
        if not isinstance(pred, dict):
            # snapshot exports list prediction ids only
            problems.warn(f"task {task_id}: prediction #{k} is an id, not an object; export with "
                          f"predictions expanded to include them")
            continue
        version = pred.get("model_version")
        if version is not None and type(version) not in (str, int):
            problems.report(f"model_version must be a string, got {type(version).__name__} {show(version)}",
                            task_id=task_id, annotation_id=_id_or_none(pred.get("id")),
                            field=f"predictions[{k}].model_version")
            continue
        who = f"model:{version if version not in (None, '') else 'unknown'}"
        result = pred.get("result")
        if not isinstance(result, list):
            problems.report("prediction result must be a list", task_id=task_id,
                            annotation_id=_id_or_none(pred.get("id")), field=f"predictions[{k}].result")
            continue
        if who in found:
            problems.warn(f"task {task_id}: several predictions of {show(who)}; the last one counts")
        found[who] = Annotation(who, _id_or_none(pred.get("id")), result, False, who, True)
    return found.values()


def _id_or_none(v: Any) -> Any:
    """An id fit for messages: an int or string as is, anything else left out."""
    return v if type(v) is int and -_MAX_ID <= v < _MAX_ID or type(v) is str else None

"""Writing agreement back onto Label Studio tasks.

Per task, flat numeric ``task.data`` keys prefixed ``agreement_`` (Data Manager columns
that filter and sort numerically) and, unless switched off (``[sync] meta = false``), the
per-control detail under ``task.meta["agreement"]``.

How the writes go out (bulk action or per-task PATCH) is :mod:`.push`.

What gets written is decided by comparing the desired values with the values the task
carries on the server (read in the same sync): equal → nothing is written, so a second
sync with nothing changed writes nothing, and an interrupted sync resumes where it stopped.
The annotations' fingerprint is part of the meta payload, so a task whose annotations
changed is re-pushed even when its numbers did not move (with the meta detail off, only
moved numbers are written). Both ways leave byte-for-byte the same values in ``task.data``:
the bulk requests keep each value's JSON type (see :meth:`.client.Connection.set_data_field`).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from ls_agreement.metrics.result import finite_or_none

from .report.model import Report, TaskEntry, to_jsonable

PREFIX = "agreement_"
META_KEY = "agreement"
UPDATED_KEY = PREFIX + "updated"
PAYLOAD_VERSION = 1
# Project-level quality of the task's annotators, as of the task's last write. It drifts
# with every annotation anywhere in the project, so it never by itself makes a task need
# a write (that would rewrite every task on every change): it is refreshed whenever the
# task is written for its own reasons, and is always current in the report files.
SNAPSHOT_KEY = "annotator_quality"
_DIGITS = 3   # Data Manager display precision; full precision lives in report.json
# A task's α comes from its 3-10 pairs: plausible resamples move it by more than 0.1, so a
# third decimal is noise. It is not free: it multiplies the distinct values (on the
# 2,000-task demo project 537 at 3 decimals), and the bulk action writes one value per
# request; and a new baseline (a new D̂e) would move the third decimal of every task's α,
# republishing them all. σ's values are fractions of pairs and keep 3 decimals.
ALPHA_DIGITS = 2
# The data keys this plugin writes, recognised by name when a task carries no meta payload
# listing them (``meta = false``, or a bulk write whose task was never PATCHed).
_FIXED_KEYS = frozenset(PREFIX + k for k in ("sigma", "alpha", "flag", "n_annotators",
                                             "updated"))
CONTROL_KEY = PREFIX + "sigma__"
# The annotator model's posteriors of a task (issue 22) stay out of the meta detail: every
# refit of the project's models moves them a little on every task, and each move would
# rewrite the task; its consensus, who gave it and the reason stay (report.json has all).
_MODEL_FLOATS = frozenset({"p_flag", "p_ambiguous", "consensus_p", "departs", "ambiguity_lr", "departing_lr"})


@dataclass
class Desired:
    """What one task should carry: ``data`` keys (without the timestamp) and the meta
    payload (without its timestamp); ``meta`` None = no payload (the detail is off)."""

    data: dict[str, Any]
    meta: dict[str, Any] | None


@dataclass
class Write:
    """A planned write for one task (``desired`` None = remove our keys).

    ``snapshot_data``/``snapshot_meta`` are the task's ``data``/``meta`` as read by the
    caller in this sync. The bulk path plans from them without re-reading; a write whose
    ``snapshot_meta`` is None (not known) is re-read before it is planned.
    """

    task_id: int
    fingerprint: str
    desired: Desired | None
    snapshot_data: dict[str, Any]
    snapshot_meta: dict[str, Any] | None = None


@dataclass
class PushOutcome:
    """What a push did: tasks written, merged with a fresh user edit, gone meanwhile;
    ``mode`` "bulk", "patch" or "bulk+patch" (what went out), the ``PATCH`` concurrency
    last used, and request counts."""

    written: list[int] = field(default_factory=list)
    merged_fresh: list[int] = field(default_factory=list)   # user part changed meanwhile
    vanished: list[int] = field(default_factory=list)       # deleted during the sync
    mode: str = "patch"
    workers: int = 0
    bulk_requests: int = 0
    patches: int = 0


def _rounded(x: Any, digits: int = _DIGITS) -> float | int | None:
    """A rounded number, so float noise never forces a write (NaN/inf → None, the package's
    one rule: :func:`~ls_agreement.metrics.result.finite_or_none`)."""
    if isinstance(x, bool):
        return int(x)
    f = finite_or_none(x)
    if f is None:
        return None
    if isinstance(x, int) or (f.is_integer() and abs(f) < 2 ** 53 and not isinstance(x, float)):
        return int(f)
    return round(f, digits)


def rounded_json(obj: Any) -> Any:
    """Round every float in a JSON-like structure; NaN → None."""
    if isinstance(obj, Mapping):
        return {str(k): rounded_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        seq = sorted(obj, key=str) if isinstance(obj, (set, frozenset)) else obj
        return [rounded_json(v) for v in seq]
    if isinstance(obj, (bool, str)) or obj is None:
        return obj
    if isinstance(obj, (int, float)) or hasattr(obj, "__float__"):
        return _rounded(obj)
    return str(obj)


def fingerprint(task: Mapping[str, Any], include_predictions: bool = False) -> str:
    """Hash of a task's annotations: ids, ``updated_at``, author, cancelled flag, results.

    Parameters
    ----------
    task : Mapping
        A task as exported (``annotations``: list of dicts; ``predictions`` likewise).
    include_predictions : bool
        Also hash predictions (when they take part in agreement).

    Returns
    -------
    str
        A 40-hex-digit SHA-1 digest; equal digests mean the agreement input is unchanged.
    """
    def ann_key(a: Mapping[str, Any]) -> list[Any]:
        by = a.get("completed_by")
        if isinstance(by, Mapping):
            by = by.get("id", by.get("email"))
        return [a.get("id"), a.get("updated_at"), by, bool(a.get("was_cancelled")),
                bool(a.get("ground_truth")), a.get("result")]

    anns = sorted((ann_key(a) for a in task.get("annotations") or [] if isinstance(a, Mapping)),
                  key=lambda k: str(k[0]))
    parts: list[Any] = [anns]
    if include_predictions:
        preds = [p for p in task.get("predictions") or [] if isinstance(p, Mapping)]
        parts.append(sorted(([p.get("id"), p.get("model_version"), p.get("updated_at"),
                              p.get("result")] for p in preds), key=lambda k: str(k[0])))
    blob = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha1(blob.encode()).hexdigest()


def safe_key(name: str) -> str:
    """A control name usable inside a flat data key (Data Manager paths split on dots)."""
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in name)


def desired_for(report: Report, task_id: int, fp: str,
                names: Mapping[str, str] | None = None,
                quality: Mapping[str, Any] | None = None, *,
                meta: bool = False) -> Desired | None:
    """The values one task should carry, from a :class:`~.report.model.Report`.

    Parameters
    ----------
    report : Report
        ``build_report`` output.
    task_id : int
        The task.
    fp : str
        The task's annotation fingerprint (stored in the meta payload).
    names : Mapping[str, str], optional
        Annotator id -> email, stored with the task's annotators.
    quality : Mapping, optional
        ``annotator_report.annotator_quality(report)``: the entries of the task's
        annotators are stored under ``SNAPSHOT_KEY``.
    meta : bool
        Carry the per-control detail in ``task.meta`` (False: ``Desired.meta`` is None,
        the task carries data keys only and any earlier payload is removed).

    Returns
    -------
    Desired or None
        None when the task has no agreement (fewer than two annotators on every control).
    """
    tid = str(task_id)
    per_control: dict[str, Any] = {}
    for name, ctrl in report.controls.items():
        item = ctrl.items.get(tid)
        if item is not None:
            entry = {k: v for k, v in to_jsonable(item).items() if k not in _MODEL_FLOATS}
            per_control[name] = {**entry, "distance": ctrl.distance}
    task = report.tasks.get(tid)
    if not per_control and task is None:
        return None
    task = task or TaskEntry()
    sigma, alpha, flag = task.sigma, task.alpha, task.flag
    annotators = sorted({str(a) for c in per_control.values() for a in c["annotators"]})
    controls = report.controls
    data: dict[str, Any] = {
        PREFIX + "sigma": _rounded(sigma),
        PREFIX + "alpha": _rounded(alpha, ALPHA_DIGITS),
        PREFIX + "flag": 1 if flag else 0,
        PREFIX + "n_annotators": len(annotators),
    }
    if len(controls) > 1:
        for name, c in per_control.items():
            data[f"{CONTROL_KEY}{safe_key(name)}"] = _rounded(c["sigma"])
    if not meta:
        return Desired(data=data, meta=None)
    payload = rounded_json({
        "version": PAYLOAD_VERSION,
        "fingerprint": fp,
        "sigma": sigma, "alpha": alpha, "flag": bool(flag),
        "annotators": {a: (names or {}).get(a, a) for a in annotators},
        "controls": per_control,
        "keys": sorted(data) + [UPDATED_KEY],
        SNAPSHOT_KEY: {a: quality[a] for a in annotators if a in quality} if quality else None,
    })
    if payload[SNAPSHOT_KEY] is None:
        del payload[SNAPSHOT_KEY]
    return Desired(data=data, meta=payload)


def _comparable(meta: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in meta.items() if k not in (SNAPSHOT_KEY, "updated")}


def meta_differs(want: Mapping[str, Any] | None, cur: Mapping[str, Any] | None) -> bool:
    """The meta payload must be written (or removed: ``want`` None)."""
    if want is None or cur is None:
        return (want is None) != (cur is None)
    return _comparable(want) != _comparable(cur)


def _our_keys(data: Mapping[str, Any], meta: Mapping[str, Any] | None) -> set[str]:
    """Data keys this plugin wrote earlier.

    Those listed in its meta payload; without a payload (the detail is off, or a bulk
    write reached the task before any ``PATCH`` did) the keys named as this plugin names
    them — not any ``agreement_*`` key, a user's ``agreement_mine`` stays the user's.
    """
    payload = (meta or {}).get(META_KEY) if isinstance(meta, Mapping) else None
    keys = payload.get("keys") if isinstance(payload, Mapping) else None
    if isinstance(keys, list):
        listed = {k for k in keys if isinstance(k, str) and k.startswith(PREFIX)}
    else:
        listed = {k for k in data if k in _FIXED_KEYS or k.startswith(CONTROL_KEY)}
    return listed & set(data)


def current_of(task: Mapping[str, Any]) -> Desired | None:
    """What a task (as read from the server) currently carries from us."""
    data = task.get("data") or {}
    meta = task.get("meta") if isinstance(task.get("meta"), Mapping) else {}
    payload = meta.get(META_KEY)
    keys = _our_keys(data, meta)
    if not isinstance(payload, Mapping) and not keys:
        return None
    cur_meta = ({k: v for k, v in payload.items() if k != "updated"}
                if isinstance(payload, Mapping) else None)
    return Desired(data={k: data[k] for k in keys if k != UPDATED_KEY}, meta=cur_meta)


def needs_write(desired: Desired | None, current: Desired | None) -> bool:
    """True when the server's values differ from the desired ones."""
    if desired is None or current is None:
        return (desired is None) != (current is None)
    return desired.data != current.data or meta_differs(desired.meta, current.meta)


def user_part(data: Mapping[str, Any], meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """The user's own data keys (everything this plugin did not write)."""
    ours = _our_keys(data, meta)
    return {k: v for k, v in data.items() if k not in ours}


def merge(fresh: Mapping[str, Any], desired: Desired | None,
          now: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """New ``data`` and ``meta`` for a task: the fresh dicts, our old keys replaced.

    Parameters
    ----------
    fresh : Mapping
        The task as re-read right before the write (``data``, ``meta``).
    desired : Desired or None
        Our values; None removes our keys and meta entry.
    now : float
        Epoch seconds for ``agreement_updated``.
    """
    fdata = dict(fresh.get("data") or {})
    fmeta = fresh.get("meta")
    fmeta = dict(fmeta) if isinstance(fmeta, Mapping) else {}
    data = {k: v for k, v in fdata.items() if k not in _our_keys(fdata, fmeta)}
    fmeta.pop(META_KEY, None)
    if desired is not None:
        data.update(desired.data)
        data[UPDATED_KEY] = int(now)
        if desired.meta is not None:
            fmeta[META_KEY] = {**desired.meta, "updated": int(now)}
    return data, fmeta

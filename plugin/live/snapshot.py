"""A served project's live state as versioned JSON: data that cannot execute.

Past one machine the live state of a project (mirror, baseline, names, what each task
carries) is kept in Redis so that any worker can take the project's next job
(plugin/queue/shared_state.py). Whoever can write to that Redis must not be able to run
code in the workers, and after a rolling upgrade a worker must not read a state written
by another version of the code as if it were its own. So the state is plain JSON,
validated on the way in by pydantic against the types below, behind a header::

    {"format": "ls-agreement.live-state", "version": 1, "schema": "<hash>", "kind": "project"}\\n
    {...the body...}

``version`` is bumped by hand when the meaning of a field changes; ``schema`` is a hash of
the body's JSON schema, so any change of its shape (a field of the report added, renamed or
retyped) changes it too. A reader refuses (:class:`SnapshotError`) a header that is not its
own before it parses the body, and a body that does not validate; the caller then rebuilds
the state from Label Studio, never guesses.

What is stored is what cannot be recomputed cheaply: the mirror's tasks in export shape,
the baseline's report and per-control quantities (the ordinal level's category counts
included), its settings and annotator quality. The parsed labeling config is not: it is
parsed again from the stored XML.

A large project is never one value, parsed or serialised whole (:class:`Stored`): the head
holds everything but the tasks and the report's per-task entries, which follow in blocks
(:data:`TASKS_PER_BLOCK` tasks, :data:`ENTRIES_PER_BLOCK` entries of one control or of the
task level), each validated as it is read. The head counts its blocks, so a state missing
one is refused too. Writing streams the mirror and the report a block at a time; reading
fills the mirror and the report a block at a time. The store (plugin/queue/shared_state.py)
writes the blocks first and switches to them with the head.
"""
from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Literal

import numpy as np
from pydantic import TypeAdapter, ValidationError

from ls_agreement.adapters.config import parse_config
from ls_agreement.metrics.baseline import Baseline

from ..job_backend import StoredEvent
from ..pushback import Desired
from ..report.model import REPORT_VERSION, ItemEntry, Report, TaskEntry, chunks
from ..settings import ReportSettings
from .baseline import ProjectBaseline
from .mirror import ProjectMirror

if TYPE_CHECKING:
    from .project import LiveProject

__all__ = ["SNAPSHOT_VERSION", "SnapshotError", "Stored", "dump_project", "load_project", "dump_baseline",
           "load_baseline", "dump_pushed", "load_pushed", "dump_event", "load_event"]

#: Bumped by hand when a stored field changes meaning without changing its type.
SNAPSHOT_VERSION = 2
#: Tasks per block of the mirror (a demo task is about 10 KB of JSON).
TASKS_PER_BLOCK = 1_000
#: Per-task entries of the report per block (one control's, or the task level's).
ENTRIES_PER_BLOCK = 5_000
FORMAT = "ls-agreement.live-state"
Kind = Literal["project", "baseline"]
# the ordinal categories' dtypes a baseline may hold (numbers, booleans, text)
_DTYPE_KINDS = frozenset("biufU")


class SnapshotError(ValueError):
    """A stored state this code does not read: another version, or not valid data."""


@dataclass(frozen=True)
class Stored:
    """A state as it is stored: the head, then the blocks it counts.

    ``tasks`` (JSON arrays of tasks in export shape) and ``entries`` (JSON
    :class:`EntryBlock` objects) are produced one block at a time as they are consumed;
    a baseline has no task blocks."""

    head: bytes
    tasks: Iterator[bytes]
    entries: Iterator[bytes]


@dataclass
class EntryBlock:
    """Per-task entries of the baseline's report: one control's ``items`` (``control``
    its name), or the task level's ``tasks`` (``control`` None)."""

    control: str | None
    items: dict[str, ItemEntry] = field(default_factory=dict)
    tasks: dict[str, TaskEntry] = field(default_factory=dict)


@dataclass
class ControlBaselineData:
    """A control's :class:`~ls_agreement.metrics.baseline.Baseline`; the ordinal level's
    sorted categories as a list with their numpy dtype (``ordinal_dtype``)."""

    distance: str
    d_e: float
    threshold: float
    flag_below: float
    ordinal_dtype: str | None = None
    ordinal_domain: list[Any] | None = None
    ordinal_counts: list[int] | None = None


@dataclass
class BaselineData:
    """A :class:`~.baseline.ProjectBaseline`; ``report`` without its per-task entries, which
    follow in ``entry_blocks`` blocks."""

    report: Report
    entry_blocks: int
    controls: dict[str, ControlBaselineData]
    config_xml: str
    settings: dict[str, Any]
    quality: dict[str, Any]
    made_at: float
    events_since: int
    reason: str


@dataclass
class ProjectData:
    """A :class:`~.project.LiveProject`'s state; the mirror follows in ``task_blocks``
    blocks of tasks in export shape."""

    project_id: int
    config_xml: str
    title: str | None
    names: dict[str, str]
    users: dict[int, str]
    include_predictions: bool
    task_blocks: int
    baseline: BaselineData


@functools.cache
def _adapter(tp: Any) -> TypeAdapter[Any]:
    return TypeAdapter(tp)


def _strip(schema: Any) -> Any:
    """A JSON schema without its prose: a docstring edit is no change of shape."""
    if isinstance(schema, dict):
        return {k: _strip(v) for k, v in schema.items() if k != "description"}
    if isinstance(schema, list):
        return [_strip(v) for v in schema]
    return schema


@functools.cache
def schema_hash(kind: Kind) -> str:
    """The hash of the stored body's shape (16 hex digits)."""
    tp = ProjectData if kind == "project" else BaselineData
    shapes = [_adapter(t).json_schema() for t in (tp, EntryBlock, list[dict[str, Any]])]
    text = json.dumps(_strip(shapes), sort_keys=True)
    return hashlib.sha256(f"{REPORT_VERSION}:{text}".encode()).hexdigest()[:16]


def _header(kind: Kind) -> bytes:
    return json.dumps({"format": FORMAT, "version": SNAPSHOT_VERSION, "schema": schema_hash(kind),
                       "kind": kind}).encode()


def _body(blob: bytes, kind: Kind) -> bytes:
    """The body after a header that is exactly ours, else :class:`SnapshotError`."""
    head, sep, body = bytes(blob).partition(b"\n")
    try:
        got = json.loads(head) if sep else None
    except (ValueError, UnicodeDecodeError):
        got = None
    if not isinstance(got, dict) or got.get("format") != FORMAT:
        raise SnapshotError("not a stored live state of ls-agreement")
    if got.get("kind") != kind:
        raise SnapshotError(f"a stored {got.get('kind')!r} where a {kind!r} was expected")
    if got.get("version") != SNAPSHOT_VERSION or got.get("schema") != schema_hash(kind):
        raise SnapshotError(f"written by another version (format {got.get('version')!r}, schema "
                            f"{got.get('schema')!r}; this one reads {SNAPSHOT_VERSION}, "
                            f"{schema_hash(kind)})")
    return body


def _validated(tp: Any, raw: bytes | str, what: str) -> Any:
    try:
        return _adapter(tp).validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0] if exc.error_count() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise SnapshotError(f"stored {what} is not valid: {where}: {first.get('msg', exc)}") from None


# -- baselines --------------------------------------------------------------------------------
def _baseline_data(base: ProjectBaseline) -> BaselineData:
    controls = {}
    for name, b in base.controls.items():
        dom = b.ordinal_domain
        controls[name] = ControlBaselineData(
            b.distance, b.d_e, b.threshold, b.flag_below,
            None if dom is None else dom.dtype.str, None if dom is None else dom.tolist(),
            None if b.ordinal_counts is None else [int(c) for c in b.ordinal_counts])
    return BaselineData(report=base.report.without_entries(),
                        entry_blocks=base.report.n_entry_blocks(ENTRIES_PER_BLOCK), controls=controls,
                        config_xml=base.config_xml,
                        settings=base.settings.to_dict(), quality=base.quality,
                        made_at=base.made_at, events_since=base.events_since, reason=base.reason)


def _entry_blocks(report: Report) -> Iterator[bytes]:
    """The report's per-task entries as :class:`EntryBlock` JSON, a block at a time."""
    dump = _adapter(EntryBlock).dump_json
    for control, block in report.entry_blocks(ENTRIES_PER_BLOCK):
        yield dump(EntryBlock(control=control, items=block) if control is not None
                   else EntryBlock(control=None, tasks=block))


def _fill_entries(report: Report, blocks: Iterable[bytes], expected: int) -> None:
    """Put the per-task entries back into ``report`` (the head's), block by block."""
    n = 0
    for raw in blocks:
        block: EntryBlock = _validated(EntryBlock, raw, "report entries")
        if block.control is not None and (block.control not in report.controls or block.tasks):
            raise SnapshotError(f"stored report entries are not valid: control {block.control!r}")
        report.add_entries(block.control, block.items if block.control is not None else block.tasks)
        n += 1
    if n != expected:
        raise SnapshotError(f"stored report entries are incomplete: {n} blocks of {expected}")


def _control_baseline(c: ControlBaselineData) -> Baseline:
    if c.ordinal_domain is None:
        return Baseline(c.distance, c.d_e, c.threshold, c.flag_below)
    dtype = np.dtype(c.ordinal_dtype or "<f8")
    if dtype.kind not in _DTYPE_KINDS or c.ordinal_counts is None \
            or len(c.ordinal_counts) != len(c.ordinal_domain):
        raise SnapshotError(f"stored ordinal categories of {c.distance!r} are not valid")
    return Baseline(c.distance, c.d_e, c.threshold, c.flag_below,
                    np.asarray(c.ordinal_domain, dtype=dtype), np.asarray(c.ordinal_counts, dtype=np.int64))


def _project_baseline(d: BaselineData) -> ProjectBaseline:
    if d.report.version != REPORT_VERSION:
        raise SnapshotError(f"stored report has version {d.report.version}, this one reads {REPORT_VERSION}")
    try:
        settings = ReportSettings.from_mapping(d.settings)
    except ValueError as exc:
        raise SnapshotError(f"stored report settings are not valid: {exc}") from None
    return ProjectBaseline(report=d.report, controls={n: _control_baseline(c) for n, c in d.controls.items()},
                           config=parse_config(d.config_xml, strict=settings.strict), settings=settings,
                           quality=d.quality, made_at=d.made_at, events_since=d.events_since,
                           reason=d.reason, config_xml=d.config_xml)


def dump_baseline(base: ProjectBaseline) -> Stored:
    """A baseline as versioned JSON: a head and its blocks of report entries."""
    head = _header("baseline") + b"\n" + _adapter(BaselineData).dump_json(_baseline_data(base))
    return Stored(head=head, tasks=iter(()), entries=_entry_blocks(base.report))


def load_baseline(head: bytes, entries: Iterable[bytes]) -> ProjectBaseline:
    """The baseline of :func:`dump_baseline`.

    Raises
    ------
    SnapshotError
        Another version's state, one that is not valid, or one missing blocks.
    """
    d: BaselineData = _validated(BaselineData, _body(head, "baseline"), "baseline")
    base = _project_baseline(d)
    _fill_entries(base.report, entries, d.entry_blocks)
    return base


# -- projects ---------------------------------------------------------------------------------
def dump_project(proj: "LiveProject") -> Stored:
    """A project's mirror, baseline, config, title and names as versioned JSON: a head, the
    mirror's tasks a block at a time, the report's entries a block at a time."""
    assert proj.mirror is not None and proj.base is not None
    mirror = proj.mirror
    data = ProjectData(project_id=proj.project_id, config_xml=proj.config_xml, title=proj.title,
                       names=proj.names, users=proj.users, include_predictions=mirror.include_predictions,
                       task_blocks=-(-len(mirror) // TASKS_PER_BLOCK), baseline=_baseline_data(proj.base))
    dump = _adapter(list[dict[str, Any]]).dump_json
    tasks = (dump(block) for block in chunks(mirror.iter_tasks(), TASKS_PER_BLOCK))
    return Stored(head=_header("project") + b"\n" + _adapter(ProjectData).dump_json(data), tasks=tasks,
                  entries=_entry_blocks(proj.base.report))


def load_project(proj: "LiveProject", head: bytes, tasks: Iterable[bytes], entries: Iterable[bytes]) -> None:
    """Put the state of :func:`dump_project` into ``proj`` (its ``pushed`` untouched); ``proj``
    is changed only once every block has been read.

    Raises
    ------
    SnapshotError
        Another version's state, one that is not valid or missing blocks, or another
        project's.
    """
    d: ProjectData = _validated(ProjectData, _body(head, "project"), "project state")
    if d.project_id != proj.project_id:
        raise SnapshotError(f"stored state is project {d.project_id}'s, not {proj.project_id}'s")
    base = _project_baseline(d.baseline)
    _fill_entries(base.report, entries, d.baseline.entry_blocks)
    mirror = ProjectMirror(d.include_predictions)
    read = 0

    def stored_tasks() -> Iterator[dict[str, Any]]:
        nonlocal read
        for raw in tasks:
            read += 1
            yield from _validated(list[dict[str, Any]], raw, "tasks")

    try:
        mirror.fill(stored_tasks())
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, SnapshotError):
            raise
        raise SnapshotError(f"stored tasks are not valid: {type(exc).__name__}: {exc}") from None
    if read != d.task_blocks:
        raise SnapshotError(f"stored tasks are incomplete: {read} blocks of {d.task_blocks}")
    proj.mirror, proj.base = mirror, base
    proj.config_xml, proj.title, proj.names, proj.users = d.config_xml, d.title, d.names, d.users


# -- what each task carries, and the events applied since the snapshot ---------------------------
def dump_pushed(value: Desired | None) -> bytes:
    return _adapter(Desired | None).dump_json(value)


def load_pushed(raw: bytes) -> Desired | None:
    return _validated(Desired | None, raw, "task values")


def dump_event(event: StoredEvent) -> bytes:
    return _adapter(StoredEvent).dump_json(event)


def load_event(raw: bytes) -> StoredEvent:
    return _validated(StoredEvent, raw, "event")

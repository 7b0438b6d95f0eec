"""Labeling config + tasks -> one :class:`ControlData` per control tag.

One pass over tasks, annotations and results: each result is dispatched by ``from_name``
to its control's family module (``regions``, ``spans``, ``text``, ``choices``,
``scalars``, ``ranking``, ``pairwise``, ``intervals``), which turns it into a common-model object. Then
each control builds one value per (task, annotator). A Chat's ``chatmessage`` results are
read by ``chat`` as the messages per-message answers point at, never as a control's values.

Missing vs empty (README, "Adapters"): an annotator who submitted an annotation on a task
gives every applicable control a value; for multi-object kinds (regions, spans, intervals) and set
kinds (multiple choice, taxonomy) a control left empty is the empty value (``()`` /
``frozenset()``): "nothing to mark" is an answer. For scalar-like kinds (single choice,
rating, number, datetime, text, ranking, pairwise) an unanswered control is *missing*
(no row). Predictions (when included) give values only for the controls they have
results for. An annotator who did not annotate the task is missing from it. A control does
not apply to a task whose ``data`` lacks the key its object reads (a result for it there is
reported: an error in strict mode, ignored with a warning otherwise).

Checked per result before its family parses it: ``from_name`` a string naming a control,
``type`` (when given) one of the control's result types, ``to_name`` (when given) the
control's object(s) or its own name (Pairwise), ``value`` an object. Task ids 1 and "1"
cannot be told apart in any output (all key tasks by their id as text): such an export is
refused in both modes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Iterable, Iterator, Sequence

import pandas as pd

from ls_agreement.metrics.model import Span

from . import (choices, intervals, masks, pairwise, per_region, ranking, regions, relations, scalars, shapes, spans,
               text, tracks)
from .chat import Conversation, TaskMessages
from .config import LabelingConfig, parse_config
from .control import ControlData, candidate_distances, default_distance, unread_note
from .errors import AdapterError, BadValue, PartsDiffer, Problems, SuspectValue, show
from .fields import MISSING
from .gc_pause import gc_paused
from .offered import offered_answers, offers_answers
from .region_links import Linked, RegionResolver
from .tasks import select_annotations

__all__ = ["Adapted", "adapt", "read_part", "adapt_parts", "PartRead", "PartsDiffer"]

FAMILIES = {"regions": regions, "spans": spans, "text": text, "choices": choices,
            "scalars": scalars, "ranking": ranking, "pairwise": pairwise, "intervals": intervals,
            "per_region": per_region, "relations": relations,
            "tracks": tracks, "masks": masks, "shapes": shapes}
_KNOWN_TYPES = set().union(*(m.TYPES for m in FAMILIES.values()))


class _Empty(list):
    """Marker: an annotation without results for a multi-object/set control (no parsed
    results to build). Compared by identity, so it unpickles as itself (see ``MISSING``)."""

    def __reduce__(self) -> str:
        return "_EMPTY"


_EMPTY = _Empty()
# Kinds whose answers repeat across tasks and annotators (a label, a ranking, a text, the
# same spans): stored once per distinct answer. Geometry (boxes, polygons, tracks) rarely
# repeats exactly, and hashing it would cost more than it saves.
_REPEATING = frozenset({"scalars", "sets", "text", "rankings", "pairwise", "spans"})
# Families whose value is a function of the annotation's own results only (no plan)
_EAGER_FAMILIES = (choices, ranking, scalars, pairwise, text, spans)


# A span's fields as one plain tuple: a key that hashes and compares in C, where the Span
# itself would call its dataclass __hash__/__eq__ in Python for every span of every value
_SPAN_KEY = attrgetter("__class__", "start", "end", "label", "text")


def _shared(same: dict, v: Any) -> Any:
    """The first value equal to ``v`` seen on this control (``v`` itself if new or unhashable).
    Spans compare without their text snippet, which the key adds: equal offsets on two
    tasks' texts are other words, and each task keeps its own. (A span's key is its class,
    offsets, label and text: equal keys are equal Spans with equal texts.)"""
    try:
        if type(v) is tuple and v and type(v[0]) is Span:
            return same.setdefault(tuple(map(_SPAN_KEY, v)), v)
        return same.setdefault(v, v)
    except (TypeError, AttributeError):   # unhashable, or not spans after all: kept unshared
        return v


@dataclass
class Adapted:
    """The adapted controls (config order) and the warnings not tied to one control."""

    controls: dict[str, ControlData]
    warnings: list[str] = field(default_factory=list)
    n_tasks: int = 0


_MAX_ID = 2 ** 63   # Label Studio's ids are 64-bit database keys


def _task_id(task: dict, k: int, problems: Problems) -> Any:
    tid = task.get("id")
    if type(tid) is int:
        if -_MAX_ID <= tid < _MAX_ID:
            return tid
        problems.report(f"task id {show(tid)} out of range (Label Studio's ids are 64-bit)",
                        field=f"tasks[{k}].id")
        return None
    if type(tid) is str and tid:
        return tid
    problems.report(f"task id missing or not an int/string ({show(tid)})", field=f"tasks[{k}].id")
    return None


def adapt(config: str | LabelingConfig, tasks: Iterable[dict], *, strict: bool = False,
          include_predictions: bool = False) -> Adapted:
    """Adapt a Label Studio project to the common model.

    Parameters
    ----------
    config : str or LabelingConfig
        The labeling config XML (or an already parsed config).
    tasks : iterable of dict
        Tasks of a JSON export, a snapshot export or the API (same shape).
    strict : bool
        Raise :class:`AdapterError` at the first problem instead of skipping the
        offending result/annotation/task with a warning.
    include_predictions : bool
        Add predictions as annotators ``model:<model_version>``.

    Returns
    -------
    Adapted
        ``controls``: name -> ControlData, each with a table of shape (n_values, 3).
    """
    with gc_paused():   # adapting makes no reference cycles: see gc_pause.py
        return _adapt(config, tasks, strict, include_predictions)


@dataclass
class PartRead:
    """What reading some tasks of an export leaves for building the controls' values (the
    read phase of :func:`adapt`): per control its cells ``(task id, annotator, value or
    parsed results)`` in the tasks' order, and the facts the build reads. Parts of one
    export read side by side (``plugin/report/build.py``) are joined in their order by
    :func:`adapt_parts`: the same controls as one reading of the whole."""

    cells: dict[str, list[tuple]]
    gt: dict[str, set]
    texts: dict[str, dict]
    offers: dict[str, dict]
    names: dict[str, str]
    task_ids: list
    results_of: dict[str, int]
    parsed: dict[str, int]
    unrouted_relations: int
    warnings: list[str]
    dropped: int
    task_messages: TaskMessages
    #: a problem was reported with the task's position in the export (``tasks[k]``), which
    #: a part does not know: its reading cannot stand for the whole export's
    positional: bool = False
    #: per control built as it is read, its distinct values in the order first seen
    #: (:func:`_shared`: the first of equal values is the one every cell holds, 50 before
    #: 50.0 keeps 50); the cells hold the same objects, so this costs a reference each
    shared: dict[str, list] = field(default_factory=dict)

    def piece(self, name: str) -> "ControlPiece":
        """Control ``name``'s share of this part (its lists and dicts, not copies)."""
        return ControlPiece(cells=self.cells[name], shared=self.shared.get(name, []),
                            texts=self.texts.get(name, {}), offers=self.offers.get(name, {}), gt=self.gt[name])


def _adapt(config: str | LabelingConfig, tasks: Iterable[dict], strict: bool,
           include_predictions: bool) -> Adapted:
    """:func:`adapt`, with the cyclic collector paused."""
    cfg = _config(config, strict)
    return _build(cfg, read_part(cfg, tasks, strict=strict, include_predictions=include_predictions), strict)


def _config(config: str | LabelingConfig, strict: bool) -> LabelingConfig:
    return config if isinstance(config, LabelingConfig) else parse_config(config, strict=strict)


def adapt_parts(config: str | LabelingConfig, parts: Sequence[PartRead], *, strict: bool = False) -> Adapted:
    """The controls of an export read in parts (each by :func:`read_part`, in the export's
    order): equal to :func:`adapt` of the whole.

    Raises
    ------
    PartsDiffer
        The parts cannot be joined (the caller reads the whole export instead, which
        reports the problem as it does).
    """
    with gc_paused():
        return _build(_config(config, strict), _join(parts), strict)


def _join(parts: Sequence[PartRead]) -> PartRead:
    pieces = {n: [p.piece(n) for p in parts] for n in parts[0].cells} if parts else {}
    first = join_facts(parts)
    for n, of_parts in pieces.items():
        joined = join_control(of_parts)
        first.cells[n], first.gt[n] = joined.cells, joined.gt
        if n in first.texts:
            first.texts[n] = joined.texts
        if n in first.offers:
            first.offers[n] = joined.offers
    first.shared = {}
    return first


def join_facts(parts: Sequence[PartRead]) -> PartRead:
    """The first part with the later parts' facts added (task ids, annotators' names, the
    counts and warnings): everything but the controls' cells, texts, offers and ground
    truth, which :func:`join_control` joins control by control.

    Raises
    ------
    PartsDiffer
        A part cannot stand for its share of the export: a problem named by a task's
        position, or a task id in two parts.
    """
    if not parts:
        raise PartsDiffer("no parts")
    if any(p.positional for p in parts):
        raise PartsDiffer("a problem named by the task's position in the export")
    first = parts[0]
    seen = set(first.task_ids)
    as_text = {str(t) for t in first.task_ids}
    for p in parts[1:]:
        for t in p.task_ids:
            if t in seen or str(t) in as_text:
                raise PartsDiffer(f"task id {t!r} in two parts")
            seen.add(t)
            as_text.add(str(t))
        for who, display in p.names.items():
            first.names.setdefault(who, display)
        first.task_ids.extend(p.task_ids)
        for n in first.results_of:
            first.results_of[n] += p.results_of[n]
            first.parsed[n] += p.parsed[n]
        first.task_messages.join(p.task_messages)
        first.unrouted_relations += p.unrouted_relations
        first.warnings.extend(p.warnings)
        first.dropped += p.dropped
    return first


@dataclass
class ControlPiece:
    """One control's share of one part of an export (:meth:`PartRead.piece`): its cells in
    the tasks' order, its distinct eager values in the order first seen (``PartRead.shared``),
    its tasks' texts and offered answers, and its ground-truth answers."""

    cells: list[tuple]
    shared: list = field(default_factory=list)
    texts: dict = field(default_factory=dict)
    offers: dict = field(default_factory=dict)
    gt: set = field(default_factory=set)


def join_control(pieces: Iterable[ControlPiece]) -> ControlPiece:
    """One control's pieces of the parts, in the parts' order, as one reading of the whole
    leaves it (the first piece, extended; see :func:`in_first_forms`)."""
    it = in_first_forms(pieces)
    first = next(it)
    for p in it:
        first.cells.extend(p.cells)
        first.gt |= p.gt
        first.texts.update(p.texts)
        first.offers.update(p.offers)
    first.shared = []
    return first


def in_first_forms(pieces: Iterable[ControlPiece]) -> Iterator[ControlPiece]:
    """One control's pieces of the parts, in order, each as it comes, with equal values of
    two parts in the earlier part's form, as one reading keeps the first seen (an int
    rating before an equal float, 0.0 before -0.0). Pickling keeps no number's identity,
    so values are matched by value, and replaced only where the forms differ."""
    it = iter(pieces)
    first = next(it)
    yield first
    seen_values: dict | None = None
    for p in it:
        if p.shared:
            if seen_values is None:
                seen_values = {}
                for v in first.shared:
                    _shared(seen_values, v)
            earlier = {v: w for v in p.shared if not _same_form(v, w := _shared(seen_values, v))}
            if earlier:
                p.cells = [(t, a, _in_form(earlier, v)) for t, a, v in p.cells]
        yield p


def _same_form(v: Any, w: Any) -> bool:
    """Whether two equal values are written alike (50 and 50.0, or 0.0 and -0.0, are not)."""
    if type(v) is not type(w):
        return False
    if type(v) is float:
        return math.copysign(1.0, v) == math.copysign(1.0, w)
    if type(v) is tuple:
        return all(_same_form(x, y) for x, y in zip(v, w))
    return True


def _in_form(earlier: dict, v: Any) -> Any:
    try:
        return earlier.get(v, v)
    except TypeError:      # unhashable: never shared
        return v


def read_part(config: str | LabelingConfig, tasks: Iterable[dict], *, strict: bool = False,
              include_predictions: bool = False) -> PartRead:
    """The read phase of :func:`adapt` over ``tasks`` (all of an export's, or one part of
    them: :func:`adapt_parts` joins the parts and builds the values)."""
    cfg = _config(config, strict)
    with gc_paused():
        return _read(cfg, tasks, strict, include_predictions)


def _read(cfg: LabelingConfig, tasks: Iterable[dict], strict: bool, include_predictions: bool) -> PartRead:
    problems = Problems(strict)
    positional = False
    specs = cfg.controls
    fam = {n: FAMILIES[s.family] for n, s in specs.items()}
    multi = {n: (choices.is_multi(s) if fam[n].MULTI is None else fam[n].MULTI)
             for n, s in specs.items()}
    cells: dict[str, list[tuple]] = {n: [] for n in specs}   # (task id, annotator, parts)
    applicable_cache: dict[tuple, list[str]] = {}
    names: dict[str, str] = {}
    gt: dict[str, set] = {n: set() for n in specs}
    texts: dict[str, dict] = {n: {} for n in specs if specs[n].kind == "spans"}
    text_controls = list(texts)
    # answers read from each task's data (dynamic options, a Ranker's List): chance comes
    # from what each task offers (offered.py, metrics' ``options`` column)
    offering = [n for n, s in specs.items() if offers_answers(s)]
    offers: dict[str, dict] = {n: {} for n in offering}
    keys = {n: [k for k in s.data_keys if k is not None] for n, s in specs.items()}
    all_names = list(specs)
    all_multi = [n for n in all_names if multi[n]]
    # what a result's to_name may say: the control's object(s), or its own name (Pairwise)
    to_ok = {n: frozenset((*s.to_name, s.object_name, n)) for n, s in specs.items()}
    # Relations and perRegion answers point at regions by id (region_links.py): per
    # annotation, each id is mapped to the region control result that drew it (only read
    # when some control points at regions)
    dependent = pointing(cfg)
    region_sources = {n for n in specs if multi[n] and n not in dependent and specs[n].kind != "sets"
                      } if dependent else set()
    whole_result = {n for n in specs if getattr(fam[n], "WHOLE_RESULT", False)}
    # a value that needs nothing but its annotation's own results is built as the annotation
    # is read, so a large export never holds every parsed result at once (issue 24); the
    # others wait for a control-wide plan (units of regions, a track's frames) or for regions
    eager = {n for n in specs if fam[n] in _EAGER_FAMILIES and n not in dependent}
    eager_same: dict[str, dict] = {n: {} for n in eager if specs[n].kind in _REPEATING}
    eager_empty = {n: frozenset() if specs[n].kind == "sets" else () for n in eager}
    parsed: dict[str, int] = {n: 0 for n in specs}   # results parsed into a value's parts
    relation_ctl = next((n for n, s in specs.items() if s.family == "relations"), None)
    # a Chat's messages are regions only, read when some control points at regions (chat.py)
    chats = {o.name for o in cfg.objects.values() if o.tag.lower() == "chat"} if dependent else set()
    # per-message answers: chance compares them by their message's place in the task's
    # conversation, the answers a task offers (metrics' ``options`` column)
    chat_of = {n: next(t for t in specs[n].to_name if t in chats) for n in dependent
               if specs[n].family == "per_region" and any(t in chats for t in specs[n].to_name)}
    for n in chat_of:
        offers.setdefault(n, {})
    # everything the per-result loop asks about a control, looked up once per result
    handlers = {n: (fam[n].parse, fam[n].TYPES, s, to_ok[n], n in whole_result, n in region_sources,
                    chat_of.get(n)) for n, s in specs.items()}
    # per eager control: its build and the store of its distinct values (None: not shared)
    eager_build = {n: (fam[n].build, specs[n], eager_same.get(n)) for n in eager}
    task_messages = TaskMessages({c: cfg.objects[c].data_key for c in chats})
    unrouted_relations = 0
    seen: set = set()
    results_of: dict[str, int] = {n: 0 for n in specs}   # results read or skipped, per control
    ids_as_text: dict[str, Any] = {}
    if not isinstance(tasks, (list, tuple)):
        try:
            tasks = iter(tasks)   # a stream (iter_export) is read task by task, never listed
        except TypeError:
            raise AdapterError(f"tasks must be a list of task objects, got {type(tasks).__name__}") from None

    for k, task in enumerate(tasks):
        if type(task) is not dict:
            positional = True
            problems.report(f"a task must be an object, got {type(task).__name__}", field=f"tasks[{k}]")
            continue
        tid = _task_id(task, k, problems)
        if tid is None:
            positional = True
            continue
        if tid in seen:
            problems.report("duplicate task id (the first occurrence is kept)", task_id=tid, field="id")
            continue
        other = ids_as_text.get(str(tid))
        if other is not None:
            # every output keys tasks by their id as text: 1 and "1" would merge silently
            raise AdapterError(f"task ids {show(other)} and {show(tid)} differ only in type (number vs string); "
                               "every report keys tasks by their id as text, so they cannot be told "
                               "apart: give the tasks distinct ids", task_id=tid, field=f"tasks[{k}].id")
        ids_as_text[str(tid)] = tid
        seen.add(tid)
        data = task.get("data")
        if data is not None and type(data) is not dict:
            problems.report(f"data must be an object, got {type(data).__name__}", task_id=tid, field="data")
            data = None
        if data is None:
            applicable, applicable_set, multi_applicable = all_names, set(all_names), all_multi
        else:
            # Tasks of one project nearly always share their data keys: cache by them.
            sig = tuple(data)
            cached = applicable_cache.get(sig)
            if cached is None:
                names_ok = [n for n in all_names if all(key in data for key in keys[n])]
                cached = applicable_cache[sig] = (names_ok, set(names_ok), [n for n in names_ok if multi[n]])
            applicable, applicable_set, multi_applicable = cached
        for n in text_controls:
            if n in applicable:
                t = spans.object_text(specs[n], data)
                if t is not None:
                    texts[n][tid] = t
        for n in offering:
            if n in applicable_set:
                o = offered_answers(specs[n], data)
                if o is not None:
                    offers[n][tid] = o
        for ann in select_annotations(task, tid, problems, include_predictions):
            got: dict[str, list] = {}
            region_ids: dict = {}
            conv = Conversation() if chats else None
            aid = ann.annotation_id
            for r, res in enumerate(ann.result):
                if type(res) is not dict:
                    problems.report("a result must be an object", task_id=tid, annotation_id=aid,
                                    field=f"result[{r}]")
                    continue
                fn = res.get("from_name")
                if fn is None and res.get("type") == "relation":  # Label Studio names no control
                    if relation_ctl is None:
                        unrouted_relations += 1
                        continue
                    fn = relation_ctl
                if type(fn) is not str:  # a list or dict would not even hash
                    problems.report("from_name missing or not a string" if fn is None else
                                    f"from_name missing or not a string (got {type(fn).__name__} {show(fn)})",
                                    task_id=tid, annotation_id=aid, field=f"result[{r}].from_name")
                    continue
                if fn in chats:   # a message of the conversation: a region, never an answer
                    try:
                        conv.read(fn, res)
                    except BadValue as exc:
                        problems.report(exc.message, task_id=tid, annotation_id=aid,
                                        field=f"result[{r}].{exc.field}")
                    continue
                bucket = got.get(fn)
                if bucket is None:
                    if fn not in applicable_set:
                        _unplaced(res, fn, r, specs, cfg, tid, ann, problems)
                        continue
                    bucket = got[fn] = []
                parse_fn, types, spec, to_names, whole, region_source, chat = handlers[fn]
                results_of[fn] += 1
                value = res if whole else res.get("value")
                if type(value) is not dict:
                    problems.report("missing or not an object", task_id=tid, annotation_id=aid,
                                    field=f"result[{r}].value")
                    continue
                rtype = res.get("type")
                if rtype is not None and (type(rtype) is not str or rtype not in types):
                    problems.report(f"result type {show(rtype)} does not fit control {fn!r} ({spec.tag})",
                                    task_id=tid, annotation_id=aid, field=f"result[{r}].type")
                    continue
                tn = res.get("to_name")
                if tn is not None and (type(tn) is not str or tn not in to_names):
                    problems.report(f"to_name {show(tn)} is not the object of control {fn!r} "
                                    f"({spec.object_name!r})", task_id=tid, annotation_id=aid,
                                    field=f"result[{r}].to_name")
                    continue
                n_before = len(bucket)
                try:
                    bucket.append(parse_fn(res, value, spec, data))
                except SuspectValue as exc:
                    if strict:
                        problems.report(exc.message, task_id=tid, annotation_id=aid,
                                        field=f"result[{r}].{exc.field}")
                    problems.warn(f"task {tid}, annotation {aid}, field "
                                  f"'result[{r}].{exc.field}': {exc.message} (kept)")
                    bucket.append(exc.keep)
                except BadValue as exc:
                    problems.report(exc.message, task_id=tid, annotation_id=aid,
                                    field=f"result[{r}].{exc.field}")
                except (ValueError, TypeError, AttributeError, ArithmeticError) as exc:  # model-level checks
                    problems.report((str(exc) or type(exc).__name__)[:300], task_id=tid, annotation_id=aid,
                                    field=f"result[{r}].value")
                if region_source and len(bucket) > n_before and type(res.get("id")) in (str, int):
                    region_ids.setdefault(res["id"], (fn, bucket, n_before))
                if chat is not None and len(bucket) > n_before:
                    conv.carried(chat, res)
            if conv is not None:
                task_messages.add(ann.annotator, conv.link(region_ids))
            who = ann.annotator
            if ann.display and who not in names:
                names[who] = ann.display
            for n, parts in got.items():
                if len(parts) > 1 and not multi[n]:
                    msg = f"{len(parts)} results for single-valued control {n!r}"
                    if strict:
                        problems.report(msg, task_id=tid, annotation_id=aid, field="result")
                    # what the family's build does with them (text: joined; others: the last)
                    problems.warn(f"task {tid}, annotation {aid}: {msg}; "
                                  f"{getattr(fam[n], 'SEVERAL', 'the last one counts')}")
                how = eager_build.get(n)
                if how is not None:
                    parsed[n] += len(parts)
                    build_fn, spec, same = how
                    v = build_fn(parts, spec, None)
                    cells[n].append((tid, who, v if same is None else _shared(same, v)))
                elif n in dependent:
                    cells[n].append((tid, who, Linked(parts, region_ids, tid, aid)))
                else:
                    parsed[n] += len(parts)
                    cells[n].append((tid, who, parts))
                if ann.ground_truth:
                    gt[n].add((tid, who))
            if ann.prediction:
                continue  # a model predicts some controls only: the others are missing
            # no result: the empty value for multi-object/set kinds (scalar kinds: missing)
            for n in multi_applicable:
                if n not in got:
                    cells[n].append((tid, who, eager_empty[n] if n in eager else _EMPTY))
                    if ann.ground_truth:
                        gt[n].add((tid, who))
        if chats:
            conversation = task_messages.end_task(tid, data)
            for n, chat in chat_of.items():
                if conversation.get(chat):
                    offers[n][tid] = (*(offers[n].get(tid) or ()), *conversation[chat])

    return PartRead(cells=cells, gt=gt, texts=texts, offers=offers, names=names, task_ids=list(seen),
                    results_of=results_of, parsed=parsed, unrouted_relations=unrouted_relations,
                    warnings=problems.warnings, dropped=problems.dropped, task_messages=task_messages,
                    positional=positional,
                    shared={n: list(same.values()) for n, same in eager_same.items()})


def _build(cfg: LabelingConfig, part: PartRead, strict: bool) -> Adapted:
    """The build phase of :func:`adapt`: each control's values from its cells."""
    dependent = pointing(cfg)
    states: dict[str, Any] = {}
    controls: dict[str, ControlData] = {}
    # the controls that point at regions are built last, from the regions as built
    for n in build_order(cfg):
        piece = part.piece(n)
        part.cells[n] = []   # the parsed results go with this control's build (dependents hold their own)
        notes: list[str] = []
        if n not in dependent:
            states[n], notes = plan_control(cfg, n, piece.cells)
        controls[n] = build_control(cfg, n, [piece], part, states, notes)
    controls = {n: controls[n] for n in cfg.controls}   # config order
    return Adapted(controls=controls, warnings=project_warnings(cfg, part, strict), n_tasks=len(part.task_ids))


#: Families whose answers point at other controls' regions by id (region_links.py)
_POINTING = ("relations", "per_region")


def pointing(cfg: LabelingConfig) -> set[str]:
    """The controls whose answers point at other controls' regions (relations, per-region)."""
    return {n for n, s in cfg.controls.items() if s.family in _POINTING}


def build_order(cfg: LabelingConfig) -> list[str]:
    """The controls in the order they are built: those that point at regions last."""
    dependent = pointing(cfg)
    return [n for n in cfg.controls if n not in dependent] + [n for n in cfg.controls if n in dependent]


def planned(cfg: LabelingConfig) -> list[str]:
    """The controls whose values wait for a plan over all their cells (pixels or percent,
    a clip's length): what a control pointing at regions needs planned before it is built."""
    dependent = pointing(cfg)
    return [n for n, s in cfg.controls.items() if n not in dependent
            and (hasattr(FAMILIES[s.family], "plan") or hasattr(FAMILIES[s.family], "plan_cells"))]


def plan_control(cfg: LabelingConfig, name: str, cells: Iterable[tuple]) -> tuple[Any, list[str]]:
    """A control's plan from all its cells (the state its ``build`` reads) and the
    control's warnings about it; (None, []) for a control without a plan. A
    ``plan_cells`` plan reads a list and may rewrite the cells' parsed results in place; a
    ``plan`` reads each cell once, so ``cells`` may stream."""
    spec = cfg.controls[name]
    fam = FAMILIES[spec.family]
    if hasattr(fam, "plan_cells"):   # a plan that needs each cell's task (intervals)
        return fam.plan_cells(cells, spec)
    if hasattr(fam, "plan"):
        return fam.plan((c[2] for c in cells), spec)
    return None, []


def build_control(cfg: LabelingConfig, n: str, pieces: Iterable["ControlPiece"], facts: PartRead,
                  states: dict[str, Any], notes: Sequence[str] = ()) -> ControlData:
    """Control ``n``'s values from its cells: ``pieces`` in the tasks' order (each as it
    comes: a piece's parsed results are dropped as its values are built), with the
    reading's ``facts`` (annotators' names, results read and parsed). ``states`` holds the
    plans (:func:`plan_control`): this control's, or for a control pointing at regions,
    those of the controls it points at; ``notes`` are the plan's warnings."""
    specs = cfg.controls
    spec = specs[n]
    fam = FAMILIES[spec.family]
    dependent = spec.family in _POINTING
    eager = fam in _EAGER_FAMILIES and not dependent
    if dependent:
        state = RegionResolver(lambda c, ps: FAMILIES[specs[c].family].build(ps, specs[c], states[c]))
    else:
        state = states[n]
    ctl_warn = list(notes)
    build = fam.build
    empty = frozenset() if spec.kind == "sets" else ()
    vi: list = []
    va: list = []
    vv: list = []
    texts: dict | None = None
    offers: dict | None = None
    gt: set | None = None
    # equal answers kept once (issue 24: a large project repeats a few labels, rankings
    # and texts millions of times); values are immutable, so sharing one is safe
    same: dict | None = {} if spec.kind in _REPEATING and not eager else None
    for piece in pieces:
        cell = piece.cells
        piece.cells = []
        if eager and cell:
            # cells hold values already (shared as they were built): the columns as they are
            ti, ta, tv = zip(*cell)
            cell.clear()
            if any(v is MISSING for v in tv):
                keep = [k for k, v in enumerate(tv) if v is not MISSING]
                ti, ta, tv = [ti[k] for k in keep], [ta[k] for k in keep], [tv[k] for k in keep]
            vi.extend(ti)
            va.extend(ta)
            vv.extend(tv)
            del ti, ta, tv
        for k in range(0 if eager else len(cell)):
            t, a, p = cell[k]
            cell[k] = None   # each parsed result is dropped as its value is built: never both whole
            v = empty if p is _EMPTY else build(p, spec, state)
            if v is not MISSING:
                vi.append(t)
                va.append(a)
                vv.append(v if same is None else _shared(same, v))
        del cell
        if texts is None:
            texts, offers, gt = piece.texts, piece.offers, piece.gt
        else:
            texts.update(piece.texts)
            offers.update(piece.offers)
            gt |= piece.gt
    same = None
    if dependent:
        ctl_warn = ctl_warn + state.warnings(n)
    unread = facts.results_of[n] - facts.parsed[n]
    if unread > 0 and not dependent:
        # said on the control: answers left after skipping may not vary as the export does
        ctl_warn = ctl_warn + [unread_note(unread, facts.results_of[n])]
    kind = spec.kind
    table = pd.DataFrame({
        "item": pd.Series(vi, dtype=object if vi and type(vi[0]) is str else None),
        "annotator": pd.Series(va, dtype=object),
        "value": pd.Series(vv, dtype=None if kind in ("scalars", "pairwise") and vv else object),
    })
    if not len(table):
        table = pd.DataFrame({"item": pd.Series([], dtype=object),
                              "annotator": pd.Series([], dtype=object),
                              "value": pd.Series([], dtype=object)})
    elif offers:
        table["options"] = pd.Series([offers.get(t) for t in vi], dtype=object)
    used = set(va)
    names = facts.names
    return ControlData(
        name=n, tag=spec.tag, object_name=spec.object_name, kind=kind, table=table,
        options=list(spec.labels) if spec.labels else None,
        candidates=candidate_distances(spec), default_distance=default_distance(spec),
        texts=texts if texts is not None else {}, annotator_names={a: names[a] for a in used if a in names},
        ground_truth=gt if gt is not None else set(), warnings=ctl_warn,
    )


def project_warnings(cfg: LabelingConfig, facts: PartRead, strict: bool) -> list[str]:
    """The warnings not tied to one control: the config's, the reading's (in the export's
    order), and the notes on chat messages and relations without a ``<Relations>`` tag."""
    problems = Problems(strict)
    for w in cfg.warnings:
        problems.warn(w)
    for w in facts.warnings:
        problems.warn(w)
    problems.dropped += facts.dropped
    lone_messages = facts.task_messages.note()
    if lone_messages is not None:
        problems.warn(lone_messages)
    if facts.unrouted_relations:
        problems.warn(f"{facts.unrouted_relations} relation result(s) but the labeling config has no "
                      "<Relations> tag; relations are not measured")
    return problems.all()


def _unplaced(res: dict, fn: Any, r: int, specs: dict, cfg: LabelingConfig, tid: Any,
              ann: Any, problems: Problems) -> None:
    """A result whose control is unknown, unsupported, or does not apply to the task."""
    if fn in specs:
        msg = f"result for control {fn!r} but the task's data lacks {specs[fn].data_keys}"
        if problems.strict:
            problems.report(msg, task_id=tid, annotation_id=ann.annotation_id, field=f"result[{r}].from_name")
        problems.warn(f"task {tid}, annotation {ann.annotation_id}, field 'result[{r}].from_name': {msg}; ignored")
        return
    if isinstance(fn, str) and fn in cfg.skipped:
        return  # unsupported control: already warned once at config level
    rtype = res.get("type")
    if type(fn) is not str:
        problems.report("from_name missing or not a string", task_id=tid,
                        annotation_id=ann.annotation_id, field=f"result[{r}].from_name")
    elif fn in cfg.objects:
        problems.report(f"from_name {show(fn)} names the object tag {cfg.objects[fn].tag} of the labeling config, "
                        f"not a control (result type {show(rtype)}); a result names the control that made it",
                        task_id=tid, annotation_id=ann.annotation_id, field=f"result[{r}].from_name")
    elif rtype is not None and (type(rtype) is not str or rtype not in _KNOWN_TYPES):
        problems.report(f"unknown result type {show(rtype)}, from a control {show(fn)} the labeling config "
                        "does not have", task_id=tid, annotation_id=ann.annotation_id, field=f"result[{r}].type")
    else:
        problems.report(f"from_name {show(fn)} is not a control of the labeling config",
                        task_id=tid, annotation_id=ann.annotation_id, field=f"result[{r}].from_name")

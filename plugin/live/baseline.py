"""Baselines: the project-level quantities every task's numbers are read against.

A task's α is ``1 − mean/D̂e`` with the project's D̂e and its σ counts pairs below the
project's d*; ``auto`` picks the distance on the whole project; annotator quality and
the intervals are project-wide too. Recomputing those per event would move every task
(the churn of docs/design.md, "Live path"). So they are frozen in a
:class:`ProjectBaseline`, made from the mirror at reconcile or after enough events, and
between two baselines an event rescores only its tasks against it
(:func:`score_tasks`). A full computation at a baseline gives the same per-task numbers
(tests/plugin/test_live_units.py checks that on every sample export).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Iterator, Mapping, Protocol

import pandas as pd

from ls_agreement.adapters.adapt import adapt
from ls_agreement.adapters.config import parse_config
from ls_agreement.adapters.specs import LabelingConfig
from ls_agreement.adapters.spans import token_table
from ls_agreement.metrics.baseline import Baseline, baseline_of, item_scores
from ls_agreement.metrics.distances.registry import get_distance
from ls_agreement.metrics.result import finite_or_none

from ..annotator_report import annotator_quality
from ..report.build import build_report, collect_warnings
from ..report.flags import pools_departures, read_review
from ..report.model import BaselineInfo, ControlReport, ItemEntry, Report
from ..report.rollup import project_tasks
from ..settings import ReportSettings
from .mirror import ProjectMirror
from .heap import release_freed_memory

__all__ = ["ProjectBaseline", "TaskSource", "make_baseline", "score_tasks", "apply_scores", "TaskScores"]

class TaskSource(Protocol):
    """Where a baseline reads a project's tasks: a :class:`~.mirror.ProjectMirror`, or the
    service's snapshot streamed to a worker process (:mod:`.baseline_worker`)."""

    def iter_tasks(self) -> Iterator[dict[str, Any]]:
        """Every task in export shape, in id order (read once per pass over the project)."""
        ...


#: Per task id (str): per control name, the task's entry (None: no pairs on that control).
TaskScores = dict[str, dict[str, "ItemEntry | None"]]


@dataclass
class ProjectBaseline:
    """A report made from the whole mirror, and what rescoring one task needs from it.

    Attributes
    ----------
    report : Report
        The full report at the baseline; between baselines its touched tasks are
        replaced in place (:func:`apply_scores`).
    controls : dict
        Control name → metrics :class:`~ls_agreement.metrics.baseline.Baseline` (the
        control's distance, D̂e, d*), for every control that has a distance.
    config : LabelingConfig
        The labeling config parsed from ``config_xml``.
    settings : ReportSettings
    quality : dict
        Annotator quality at the baseline (the per-task snapshot of push-back).
    made_at : float
        Epoch seconds.
    events_since : int
        Events applied since it was made.
    reason : str
        Why it was made (a reconcile, a number of events, start-up).
    config_xml : str
        The labeling config it was made of.
    """

    report: Report
    controls: dict[str, Baseline]
    config: LabelingConfig
    settings: ReportSettings
    quality: dict[str, Any]
    made_at: float = field(default_factory=time.time)
    events_since: int = 0
    reason: str = ""
    config_xml: str = ""

    def info(self) -> BaselineInfo:
        return BaselineInfo(made_at=self.made_at, events_since=self.events_since, reason=self.reason)


def _control_baseline(ctl: ControlReport, table: pd.DataFrame | None) -> Baseline | None:
    if ctl.distance is None or ctl.status in ("unpairable", "failed"):
        return None
    if get_distance(ctl.distance).level == "ordinal":
        assert table is not None
        return baseline_of(table, ctl.distance, ctl.d_e or 0.0, ctl.threshold or 0.0, ctl.flag_below)
    return Baseline(ctl.distance, float(ctl.d_e or 0.0), float(ctl.threshold or 0.0), float(ctl.flag_below))


def make_baseline(config_xml: str, mirror: TaskSource, settings: ReportSettings, *,
                  reason: str = "", annotator_names: Mapping[str, str] | None = None) -> ProjectBaseline:
    """Build the report of the whole mirror and freeze its project-level quantities.

    What building it freed is handed back to the operating system (:mod:`.heap`): the
    service runs on beside Label Studio.

    Raises
    ------
    AdapterError, ValueError
        What :func:`~ls_agreement.plugin.report.build.build_report` raises.
    """
    try:
        return _baseline_of(config_xml, mirror, settings, reason, annotator_names)
    finally:
        release_freed_memory()


def _baseline_of(config_xml: str, mirror: TaskSource, settings: ReportSettings, reason: str,
                 annotator_names: Mapping[str, str] | None) -> ProjectBaseline:
    # read task by task from the packed mirror, never all of it parsed at once
    report = build_report(config_xml, mirror.iter_tasks(), settings, annotator_names=annotator_names)
    config = parse_config(config_xml, strict=settings.strict)
    ordinal = [n for n, c in report.controls.items()
               if c.distance is not None and get_distance(c.distance).level == "ordinal"]
    tables: dict[str, pd.DataFrame] = {}
    if ordinal:   # the only distance that reads the project's value counts
        adapted = adapt(config, mirror.iter_tasks(), strict=settings.strict,
                        include_predictions=settings.include_predictions)
        tables = {n: adapted.controls[n].table for n in ordinal}
    controls = {}
    for name, ctl in report.controls.items():
        b = _control_baseline(ctl, tables.get(name))
        if b is not None:
            controls[name] = b
    base = ProjectBaseline(report=report, controls=controls, config=config, settings=settings,
                           quality=annotator_quality(report), reason=reason, config_xml=config_xml)
    report.baseline = base.info()
    return base


def _entries(ctl: ControlReport, scores: pd.DataFrame, table: pd.DataFrame) -> dict[str, ItemEntry]:
    # a plain loop: an event's table holds one task's few answers, where pandas' groupby
    # costs more than the whole rescoring
    who: dict[Any, list[str]] = {}
    for item, annotator in zip(table["item"].tolist(), table["annotator"].tolist()):
        who.setdefault(item, []).append(str(annotator))
    measured = ctl.status == "ok"
    out = {}
    for item, row in zip(scores.index, scores.itertuples(index=False)):
        out[str(item)] = ItemEntry(
            sigma=finite_or_none(row.sigma) if measured else None, alpha=finite_or_none(row.alpha) if measured else None,
            mean_distance=finite_or_none(row.mean_distance), n_pairs=int(row.n_pairs),
            flag=bool(row.flag) if measured else False, annotators=who.get(item, []))
    return out


def score_tasks(base: ProjectBaseline, mirror: ProjectMirror, task_ids: Iterable[int]) -> TaskScores:
    """Every control's entry of each task in ``task_ids`` against the baseline.

    Tasks missing from the mirror (deleted) get no entries. Controls the baseline could not
    measure at all (unpairable, failed) give no entries, as in a full report.

    Returns
    -------
    TaskScores
        ``{task id (str): {control name: ItemEntry or None}}``.
    """
    ids = sorted({int(t) for t in task_ids})
    out: TaskScores = {str(t): {n: None for n in base.report.controls} for t in ids}
    tasks = [mirror.tasks[t].as_task() for t in ids if t in mirror.tasks]
    if not tasks:
        return out
    # label items keep departing_lr where the report's do
    pooled = pools_departures(base.report.controls)
    sink: list[str] = []
    with collect_warnings(sink, "rescoring"):
        adapted = adapt(base.config, tasks, strict=False, include_predictions=base.settings.include_predictions)
        for name, ctl in adapted.controls.items():
            rep, b = base.report.controls.get(name), base.controls.get(name)
            if rep is None or b is None or not len(ctl.table):
                continue
            table = ctl.table
            if ctl.kind == "spans" and (rep.units or "").startswith("tokens"):
                table = token_table(ctl)[0]
            if not len(table):
                continue
            entries = _entries(rep, item_scores(table, b), table)
            if rep.measured:   # consensus, departures and ambiguity against the stored annotator model
                read_review(rep, table, entries, pooled=pooled)
            for item, entry in entries.items():
                out.setdefault(item, {})[name] = entry
    return out   # flags are set by apply_scores (the rule reads the task's entries together)


def apply_scores(report: Report, scores: TaskScores, deleted: Iterable[int] = ()) -> list[str]:
    """Put rescored tasks into the live report (in place) and re-derive their task entries.

    Returns
    -------
    list of str
        The task ids whose entries were replaced or removed.
    """
    changed = [str(t) for t in deleted] + list(scores)
    for tid in changed:
        report.tasks.pop(tid, None)
        for name, ctl in report.controls.items():
            entry = scores.get(tid, {}).get(name)
            if entry is None:
                ctl.items.pop(tid, None)
            else:
                ctl.items[tid] = entry
    subset = {name: replace(ctl, items={t: ctl.items[t] for t in scores if t in ctl.items})
              for name, ctl in report.controls.items()}
    report.tasks.update(project_tasks(subset, report.settings, report.ambiguity, departing=report.departing))
    return changed


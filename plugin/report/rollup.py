"""A project's tasks and annotators rolled up from its controls' entries.

A task is flagged when the posterior that it holds a departing answer or an ambiguous
control reaches the threshold (:func:`.flags.task_flag`) and carries its lowest σ and α
over the controls; an annotator's project σ and α are pair-weighted means over the
controls, their reliability (and its interval's bounds) the answer-weighted mean of the
controls' annotator models.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ls_agreement.metrics.task_ambiguity import task_ambiguity

from .flags import pooled_ratios, task_flag
from .model import AnnotatorControl, ControlReport, ItemEntry, ProjectAnnotator, TaskEntry


def project_tasks(controls: Mapping[str, ControlReport], settings: Mapping[str, Any] | None = None,
                  ambiguity: float = 0.0, ratios: Mapping[str, float] | None = None,
                  departing: Mapping[str, float] | None = None) -> dict[str, TaskEntry]:
    """Every task across the measured controls; its flag from :func:`.flags.task_flag`
    (which also sets each control's ``ItemEntry.flag``). ``ratios``: the tasks' pooled log
    ratios of ambiguity when the caller has them (:func:`.flags.pooled_ratios`, which
    ρ_T ``ambiguity`` was fitted on); read here otherwise. ``departing``: each annotator's
    share of departing tasks (:func:`.flags.fit_departing`, ``Report.departing``)."""
    out: dict[str, TaskEntry] = {}
    per_task: dict[str, dict[str, ItemEntry]] = {}
    for name, ctl in controls.items():
        if not ctl.measured:
            continue
        for item, rec in ctl.items.items():
            t = out.setdefault(item, TaskEntry())
            per_task.setdefault(item, {})[name] = rec
            t.controls.append(name)
            if rec.sigma is not None and (t.sigma is None or rec.sigma < t.sigma):
                t.sigma = rec.sigma
            if rec.alpha is not None and (t.alpha is None or rec.alpha < t.alpha):
                t.alpha = rec.alpha
    # each task's posterior of ambiguity over its controls, in one array operation (the same
    # elementwise floats as task_flag's own, task by task: 100,000 numpy calls on a big project)
    if ratios is None:
        ratios = pooled_ratios(controls)
    lrs = [(item, x) for item in out if (x := ratios.get(item)) is not None]
    p_task = dict(zip([item for item, _ in lrs],
                      task_ambiguity(np.array([x for _, x in lrs], dtype=float), ambiguity).tolist()))
    for item, t in out.items():
        items = per_task[item]
        t.flag, t.reasons, t.p_flag = task_flag(items, controls, settings, ambiguity,
                                                p_task=p_task.get(item, 0.0), departing=departing)
        t.flagged_controls = [c for c in t.controls if c in t.reasons]
        for name, rec in items.items():
            rec.flag = name in t.reasons
    return out


def project_annotators(controls: Mapping[str, ControlReport], n_items: Mapping[str, int],
                       names: Mapping[str, str]) -> dict[str, ProjectAnnotator]:
    """Each annotator's entry over the controls; ``n_items``: the distinct tasks each
    answered (``build.tasks_per_annotator``)."""
    out: dict[str, ProjectAnnotator] = {}
    for a in sorted(n_items):
        rec = ProjectAnnotator(name=names.get(a, a), n_items=n_items[a])
        sw = aw = n_s = n_a = 0.0
        rw, lw, hw, n_r = 0.0, 0.0, 0.0, 0.0
        for cname, ctl in controls.items():
            e = ctl.annotators.get(a)
            if e is None or not ctl.measured:
                continue
            rec.controls[cname] = AnnotatorControl(e.sigma, e.alpha, e.n_pairs, e.reliability)
            if e.reliability is not None and e.n_items:
                lo, hi = e.reliability_ci
                rw += e.reliability * e.n_items
                lw += (e.reliability if lo is None else lo) * e.n_items
                hw += (e.reliability if hi is None else hi) * e.n_items
                n_r += e.n_items
                rec.departs = rec.departs or e.departs
            rec.n_pairs += e.n_pairs
            if e.sigma is not None and e.n_pairs:
                sw += e.sigma * e.n_pairs
                n_s += e.n_pairs
            if e.alpha is not None and e.n_pairs:
                aw += e.alpha * e.n_pairs
                n_a += e.n_pairs
        rec.sigma = sw / n_s if n_s else None
        rec.alpha = aw / n_a if n_a else None
        if n_r:
            rec.reliability, rec.reliability_ci = rw / n_r, (lw / n_r, hw / n_r)
        out[a] = rec
    return out

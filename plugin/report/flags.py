"""Task flags and annotator reliability of a report: the Label Studio side of the annotator
models (``metrics/annotator_model.py`` for labels, ``metrics/consensus.py`` for any other
kind; docs/formulas.md "Flags", README "How tasks are flagged").

``fit_review`` fits a measured control's model once, when the report is built, stores it
(``ControlReport.flags``), reads every task (``ItemEntry``: consensus answer, who departs
from it and how, whether the task is ambiguous, the posterior of either, a one-line
reason) and gives each annotator their reliability with its interval. ``read_review``
reads given tasks against the stored model alone (the live path: one task without
refitting). ``task_flag`` combines a task's controls: the posterior that the task holds a
departing answer or an ambiguous control is ``1 − Π_c (1 − p_c)``, with departures on its
controls of labels one state per annotator (``coupled_departures``, their prior each
annotator's share of departing tasks fitted over the project: ``fit_departing``), and the
task is flagged from ``flag_posterior`` (default ½).

Reasons name who departs and how; they never name an annotator whose answer is the
consensus, and an ambiguous task names no one ("careful annotators split ...").
"""
from __future__ import annotations

import dataclasses
import math
from collections import Counter
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import numpy as np
import pandas as pd

from ls_agreement.metrics.annotator_model import LabelModel, fit_label_model, read_labels
from ls_agreement.metrics.consensus import DistanceModel, TaskPairs, fit_consensus, read_consensus, task_pairs
from ls_agreement.metrics.departures import REGION_KINDS, how_departs
from ls_agreement.metrics.distances.registry import get_distance
from ls_agreement.metrics.region_rates import RegionRates
from ls_agreement.metrics.result import finite_or_none
from ls_agreement.metrics.task_ambiguity import fit_task_ambiguity, task_ambiguity
from ls_agreement.metrics.task_departures import fit_departing_shares

if TYPE_CHECKING:
    from .model import AnnotatorFit, ControlReport, ItemEntry, RatesFit

__all__ = ["fit_review", "read_review", "may_pool_departures", "pools_departures", "drop_departing_ratios",
           "task_flag", "fit_ambiguity", "fit_departing",
           "pooled_ratios", "task_ambiguity_lr", "is_labels", "DEFAULT_POSTERIOR"]

DEFAULT_POSTERIOR = 0.5     # flag a task from this posterior
MAX_CLASSES = 30            # a control of labels has at most this many distinct answers
_KEEP_DEPARTS = 0.05        # ItemEntry.departs lists the annotators from this posterior
_NAMED_FROM = 0.5           # a reason names an annotator who departs from this posterior
_REASON_FROM = 0.2          # a flagged task's reasons: the controls from this posterior
_LABEL_TAGS = ("choices", "rating", "pairwise", "taxonomy")


def is_labels(entry: "ControlReport", table: pd.DataFrame) -> bool:
    """Whether a control is read by the label model: its answers are a few labels (Choices,
    Rating, Pairwise: scalar values, at most :data:`MAX_CLASSES` of them, compared as
    categories or ranks); any other control is read by its distances."""
    if entry.kind not in ("scalars", "pairwise") or not len(table):
        return False
    level = get_distance(entry.distance).level if entry.distance else None
    if level not in ("nominal", "ordinal") and entry.tag.lower() not in _LABEL_TAGS:
        return False
    try:
        n = table["value"].nunique()
    except TypeError:           # unhashable values are not labels
        return False
    return 2 <= n <= MAX_CLASSES


def may_pool_departures(kinds: Iterable[str]) -> bool:
    """Whether a project's controls (their kinds, before any is measured) may pool
    departures per annotator (:func:`coupled_departures`): two or more whose answers may
    be labels. Where it is False no item is given ``departing_lr`` (a list per answer that
    nothing would read); where it is True the measured report decides
    (:func:`pools_departures`)."""
    return sum(k in ("scalars", "pairwise") for k in kinds) >= 2


def pools_departures(controls: Mapping[str, "ControlReport"]) -> bool:
    """Whether a measured report pools departures per annotator: two or more of its
    measured controls are read by a label model. The report's items carry
    ``departing_lr`` exactly then, and the live path reads a touched task alike."""
    return sum(1 for c in controls.values()
               if c.measured and c.flags is not None and c.flags.model == "labels") >= 2


def drop_departing_ratios(controls: Mapping[str, "ControlReport"]) -> None:
    """Take ``departing_lr`` off every item where the report does not pool them (the
    controls' kinds allowed it, their measurement did not: an unmeasured control changes
    nothing else in the report)."""
    if pools_departures(controls):
        return
    for ctl in controls.values():
        for rec in ctl.items.values():
            rec.departing_lr = None


def _plain(v: Any) -> Any:
    """A label as JSON holds it (numpy scalars as Python numbers)."""
    return v.item() if isinstance(v, np.generic) else v


def _labels(values: pd.Series) -> list[Any]:
    """The labels of a table's ``value`` column as Python values (:func:`_plain`): read
    through one object array (iterating a string column costs a lookup per value)."""
    return [_plain(v) for v in values.to_numpy(dtype=object).tolist()]


def _ordered(entry: "ControlReport", classes: list[Any]) -> bool:
    """Whether a control's labels are grades in order (a Rating, a number read on an
    ordinal or interval scale): numbers, of a Rating or under a distance of such a level
    (a Rating's grades stay in order where the nominal distance happens to win)."""
    level = get_distance(entry.distance).level if entry.distance else None
    return (entry.tag.lower() == "rating" or level in ("ordinal", "interval", "ratio")) and all(
        isinstance(c, (int, float)) and not isinstance(c, bool) for c in classes)


def _classes(entry: "ControlReport", values: list[Any]) -> list[Any]:
    seen = list(dict.fromkeys(_plain(v) for v in values))
    if entry.options and all(isinstance(v, str) for v in seen):
        return list(dict.fromkeys(list(entry.options) + seen))
    try:
        return sorted(seen)
    except TypeError:
        return seen


# ---------------------------------------------------------------------------------------
# the stored fit and back
# ---------------------------------------------------------------------------------------

def _label_fit(m: LabelModel) -> "AnnotatorFit":
    from .model import LabelFit

    return LabelFit(classes=[_plain(c) for c in m.classes], prior=m.prior.tolist(), confusion=m.confusion.tolist(),
                    annotators=list(m.annotators), sound=m.sound.tolist(),
                    accuracy=[None if math.isnan(x) else float(x) for x in m.accuracy],
                    departing=m.departing.tolist(), ambiguity=float(m.ambiguity), pairs=m.pairs.tolist(),
                    n_answers=[int(n) for n in m.n_answers], even_share=float(m.even_share))


def _label_model(f: Any) -> LabelModel:
    k = len(f.classes)
    pa, pb = np.triu_indices(k, 1)
    sound = np.asarray(f.sound, dtype=float)
    return LabelModel(classes=tuple(f.classes), prior=np.asarray(f.prior), confusion=np.asarray(f.confusion),
                      accuracy=np.array([np.nan if x is None else x for x in f.accuracy], dtype=float),
                      annotators=tuple(f.annotators), sound=sound, sound_best=sound,
                      sound_ci=np.zeros((sound.size, 2)), departing=np.asarray(f.departing),
                      ambiguity=float(f.ambiguity), pair_a=pa.astype(np.int64), pair_b=pb.astype(np.int64),
                      pairs=np.asarray(f.pairs), n_answers=np.asarray(f.n_answers, dtype=np.int64),
                      even_share=float(f.even_share))


def _distance_fit(m: DistanceModel) -> "AnnotatorFit":
    from .model import DistanceFit

    return DistanceFit(distance=m.distance, edges=m.edges.tolist(), sound_pdf=m.sound_pdf.tolist(),
                       departs_pdf=m.departs_pdf.tolist(), annotators=list(m.annotators), sound=m.sound.tolist(),
                       ambiguity=float(m.ambiguity), n_answers=[int(n) for n in m.n_answers],
                       moved=None if m.moved is None else _rates_fit(m.moved),
                       missed=None if m.missed is None else _rates_fit(m.missed), regions=m.regions)


def _rates_fit(m: RegionRates) -> "RatesFit":
    from .model import RatesFit

    return RatesFit(annotators=list(m.annotators), careful_rate=float(m.careful_rate), rate=m.rate.tolist(),
                    sound=m.sound.tolist(),
                    share=None if m.share is None or np.all(m.share == 1.0) else m.share.tolist())


def _rates(f: Any) -> RegionRates:
    sound = np.asarray(f.sound, dtype=float)
    return RegionRates(annotators=tuple(f.annotators), careful_rate=float(f.careful_rate),
                       rate=np.asarray(f.rate, dtype=float), sound=sound, sound_best=sound,
                       sound_ci=np.zeros((sound.size, 2)), n_regions=np.zeros(sound.size, dtype=np.int64),
                       n_errors=np.zeros(sound.size, dtype=np.int64),
                       share=None if f.share is None else np.asarray(f.share, dtype=float))


def _distance_model(f: Any) -> DistanceModel:
    sound = np.asarray(f.sound, dtype=float)
    return DistanceModel(edges=np.asarray(f.edges), sound_pdf=np.asarray(f.sound_pdf),
                         departs_pdf=np.asarray(f.departs_pdf), annotators=tuple(f.annotators), sound=sound,
                         sound_best=sound, sound_ci=np.zeros((sound.size, 2)), ambiguity=float(f.ambiguity),
                         n_answers=np.asarray(f.n_answers, dtype=np.int64), distance=f.distance,
                         moved=None if f.moved is None else _rates(f.moved),
                         missed=None if f.missed is None else _rates(f.missed), regions=f.regions)


# ---------------------------------------------------------------------------------------
# reading tasks
# ---------------------------------------------------------------------------------------

def _name(names: Mapping[str, str], a: str) -> str:
    # a reviewer knows people by name or email; Label Studio's user ids differ per server
    return names.get(a) or a


def _rows_by_task(task_of: np.ndarray, n_tasks: int) -> list[list[int]]:
    """The answer rows of each task, shape (n_tasks,) of lists, in input order."""
    order = np.argsort(task_of, kind="stable")
    bounds = np.searchsorted(task_of[order], np.arange(n_tasks + 1)).tolist()
    order = order.tolist()
    return [order[bounds[t]:bounds[t + 1]] for t in range(n_tasks)]


def _rows_where(task_of: np.ndarray, where: np.ndarray) -> dict[int, list[int]]:
    """The rows ``where`` holds (shape (N,)) of each task that has some, in input order:
    work in proportion to those rows, not to the tasks."""
    rows = np.flatnonzero(where)
    order = rows[np.argsort(task_of[rows], kind="stable")]
    t = task_of[order]
    starts = np.flatnonzero(np.r_[True, t[1:] != t[:-1]]) if order.size else np.zeros(0, dtype=np.int64)
    bounds = np.r_[starts, order.size].tolist()
    order_l = order.tolist()
    return {task: order_l[bounds[k]:bounds[k + 1]] for k, task in enumerate(t[starts].tolist())}


def _reason(rec: "ItemEntry", named: list[tuple[str, float]], others: list[str], split: str | None,
            names: Mapping[str, str], doubted: str | None = None) -> str | None:
    """The one-line reason of a control's reading of a task (None when nothing is likely);
    ``doubted``: what to say of a majority the consensus overrules."""
    parts = [f"{_name(names, a)}: {rec.how.get(a, 'departs')} (departs {p:.2f})" for a, p in named]
    if split is not None and (rec.p_ambiguous or 0.0) >= 0.5 * (rec.p_flag or 0.0):
        parts.append(f"ambiguous: careful annotators split {split} (posterior {rec.p_ambiguous:.2f})")
    if not parts and others:
        who = ", ".join(_name(names, a) for a in others)
        parts.append(f"one of {who} likely departs from the consensus (posterior {rec.p_flag:.2f})")
    if doubted is not None and rec.p_flag is not None and rec.p_flag >= _REASON_FROM:
        parts.append(doubted)
    return "; ".join(parts) or None


def _departing_lr(model: LabelModel, who: np.ndarray, p_visible: np.ndarray, p_any: np.ndarray) -> list[list[float]]:
    """Per answer (shape (N,) inputs): ``[log LR, shown, prior]`` — the likelihood ratio that
    it departs (its posterior odds over the annotator's prior odds 1 − θ : θ, which for one
    answer given the others is exactly P(answer | departs) / P(answer | sound)), the share of
    a departure that shows (visible over any), and the prior 1 − θ."""
    names = list(dict.fromkeys(who.tolist()))
    theta, _, _ = model.parameters(names)
    prior = 1.0 - np.asarray(theta)[pd.Index(names).get_indexer(who)]
    prior = np.clip(prior, 1e-6, 1 - 1e-6)
    p = np.clip(p_any, 1e-12, 1 - 1e-12)
    log_lr = np.log(p / (1 - p)) - np.log(prior / (1 - prior))
    shown = np.clip(p_visible / p, 0.0, 1.0)
    return np.round(np.column_stack([log_lr, shown, prior]), 6).tolist()


def _per_annotator(items: Mapping[str, "ItemEntry"]) -> dict[str, list[list[float]]] | None:
    """A task's ``departing_lr`` rows per annotator, over its controls of labels (None
    unless two or more controls carry them)."""
    read = [rec.departing_lr for rec in items.values() if rec.departing_lr]
    if len(read) < 2:
        return None
    per: dict[str, list[list[float]]] = {}
    for lrs in read:
        for a, v in lrs.items():
            per.setdefault(a, []).append(v)
    return per


def coupled_departures(items: Mapping[str, "ItemEntry"], shares: Mapping[str, float] | None = None) -> float | None:
    """P(some answer of the task departs visibly) over its controls of labels, with one
    departure state per annotator and task (None unless two or more controls carry
    ``departing_lr``).

    An annotator who departs on a task (answers at random, say) departs on each of its
    controls; read one control at a time, their careful slip on one control looks like a
    departure even where their answer on another is exactly the consensus — which a random
    answer rarely is. Pooled: per annotator, the prior odds of departing (``shares``: δ, their
    share of departing tasks fitted over the project, :func:`fit_departing`; without one,
    the largest of the controls' 1 − θ) times each answer's likelihood ratio of departing;
    the departure shows where one of its answers would show it."""
    per = _per_annotator(items)
    if per is None:
        return None
    shares = shares or {}
    none = 1.0
    for a, rows in per.items():
        prior = shares.get(a)
        if prior is None:
            prior = max(v[2] for v in rows)
        prior = min(max(prior, 1e-6), 1.0 - 1e-6)
        logit = math.log(prior / (1.0 - prior)) + sum(v[0] for v in rows)
        departs = 1.0 / (1.0 + math.exp(-min(max(logit, -700.0), 700.0)))
        hidden = math.prod(1.0 - v[1] for v in rows)
        none *= 1.0 - departs * (1.0 - hidden)
    return 1.0 - none


def fit_departing(controls: Mapping[str, "ControlReport"]) -> dict[str, float]:
    """δ per annotator: their share of departing tasks, fitted on every task that two or
    more measured controls of labels read (``metrics/task_departures.py``): one log ratio
    per (annotator, task), the sum of their answers' over those controls. Annotators of no
    such task are left out (:func:`coupled_departures` falls back to the controls' θ)."""
    labels = [name for name, ctl in controls.items()
              if ctl.measured and ctl.flags is not None and ctl.flags.model == "labels"]
    if len(labels) < 2:     # no task can pool: not worth a pass over the entries
        return {}
    per_task: dict[str, dict[str, "ItemEntry"]] = {}
    for name in labels:
        for item, rec in controls[name].items.items():
            if rec.departing_lr and rec.p_flag is not None:
                per_task.setdefault(item, {})[name] = rec
    who: list[str] = []
    sums: list[float] = []
    for items in per_task.values():
        per = _per_annotator(items)
        for a, rows in (per or {}).items():
            who.append(a)
            sums.append(sum(v[0] for v in rows))
    if not who:
        return {}
    codes, names = pd.factorize(pd.Series(who, dtype=object), sort=True)
    shares = fit_departing_shares(np.asarray(sums, dtype=float), codes.astype(np.int64))
    return {str(a): round(float(d), 6) for a, d in zip(names, shares)}


def _majority(labels: list[Any]) -> tuple[Any, int] | None:
    """The label more than half of ``labels`` gave, and how many gave it; None without one."""
    if not labels:
        return None
    top, n = Counter(labels).most_common(1)[0]
    return (top, n) if 2 * n > len(labels) else None


def _read_labels(entry: "ControlReport", model: LabelModel, table: pd.DataFrame,
                 items: Mapping[str, "ItemEntry"], names: Mapping[str, str], pooled: bool = True) -> None:
    """Read every task of ``table`` against a label model; ``pooled``: whether the items
    keep ``departing_lr`` (only a project with two or more controls of labels pools them)."""
    item = table["item"].to_numpy()
    who = table["annotator"].astype(str).to_numpy()
    vals = _labels(table["value"])
    r = read_labels(model, item, who, vals)
    best = dict(zip(model.annotators, model.sound_best))
    rows = _rows_by_task(r.task_of, len(r.items))
    # the loop below reads Python numbers (a numpy scalar per access costs ten times more)
    p_flag, p_amb, cons_p, lr = r.p_flag.tolist(), r.p_ambiguous.tolist(), r.consensus_p.tolist(), r.log_lr_ambiguous.tolist()
    consensus, p_dep, who_l = r.consensus.tolist(), r.p_departs.tolist(), who.tolist()
    coupled = _departing_lr(model, who, r.p_departs, r.p_departs_any) if pooled else None
    for t, key in enumerate(r.items):
        rec = items.get(str(key))
        if rec is None:
            continue
        cons = model.classes[int(consensus[t])]
        answers = rows[t]
        rec.p_flag, rec.p_ambiguous = p_flag[t], p_amb[t]
        rec.ambiguity_lr = finite_or_none(lr[t])
        rec.consensus, rec.consensus_p = cons, cons_p[t]
        agreeing = [who_l[n] for n in answers if vals[n] == cons]
        rec.consensus_by = max(agreeing, key=lambda a: (best.get(a, 0.0), a)) if agreeing else None
        rec.departs = {who_l[n]: round(p_dep[n], 4) for n in answers if p_dep[n] >= _KEEP_DEPARTS}
        rec.departing_lr = {who_l[n]: coupled[n] for n in answers} if coupled is not None else None
        # a reason never names an annotator who sided with the task's majority: where the
        # consensus overrules a majority (the model gives its answers little weight: a
        # spammer's or a random annotator's vote in it), the reason says so instead
        major = _majority([vals[n] for n in answers])
        overruled = major if major is not None and major[0] != cons else None
        against = [n for n in answers if vals[n] != cons and (overruled is None or vals[n] != overruled[0])]
        rec.how = {who_l[n]: f"said {vals[n]!r} where the consensus is {cons!r}" for n in against
                   if p_dep[n] >= _NAMED_FROM}
        named = sorted(((who_l[n], p_dep[n]) for n in answers if who_l[n] in rec.how), key=lambda x: -x[1])
        others = [who_l[n] for n in against if p_dep[n] >= 0.1]
        doubted = None if overruled is None else (
            f"the majority said {overruled[0]!r} ({overruled[1]} of {len(answers)}) and the consensus is "
            f"{cons!r}: answers that likely depart are in the majority (posterior {rec.p_flag:.2f})")
        split = None
        if rec.p_ambiguous >= 0.2:
            a, b = (model.classes[int(x)] for x in r.split[t])
            n_a = sum(vals[n] == a for n in answers)
            n_b = sum(vals[n] == b for n in answers)
            split = f"between {a!r} ({n_a}) and {b!r} ({n_b})"
        rec.reason = _reason(rec, named, others, split, names, doubted)


def _read_distances(entry: "ControlReport", model: DistanceModel, table: pd.DataFrame,
                    items: Mapping[str, "ItemEntry"], names: Mapping[str, str],
                    pairs: TaskPairs | None = None) -> None:
    """Read every task of ``table`` against ``model``; ``pairs``: the answers' distances
    under the model's distance when the caller has them (the fit computed them)."""
    item = table["item"].to_numpy()
    who = table["annotator"].astype(str).to_numpy()
    vals = list(table["value"])
    r = read_consensus(model, task_pairs(item, vals, model.distance) if pairs is None else pairs, who)
    med = r.medoids
    n_tasks = len(med.items)
    named_rows = np.flatnonzero((r.p_departs >= _NAMED_FROM) & ~med.is_consensus)
    cons_row = med.consensus[med.task_of]
    how: dict[int, str] = {}
    if entry.kind in REGION_KINDS and named_rows.size:
        said = how_departs(entry.kind, [vals[k] for k in cons_row[named_rows]], [vals[k] for k in named_rows])
        how = {int(k): h for k, h in zip(named_rows, said) if h}
    # how far sound answers reach (95 % of f_s), for the reasons of kinds without regions
    at = np.searchsorted(np.cumsum(model.sound_pdf) * (model.edges[1] - model.edges[0]), 0.95)
    reach = float(model.edges[min(int(at) + 1, model.edges.size - 1)])
    # the loop below reads Python numbers (a numpy scalar per access costs ten times more)
    p_flag, p_amb, cons_p = r.p_flag.tolist(), r.p_ambiguous.tolist(), r.consensus_p.tolist()
    lr, consensus = r.log_lr_ambiguous.tolist(), med.consensus.tolist()
    p_dep, distance, who_l = r.p_departs.tolist(), med.distance.tolist(), who.tolist()
    # each task's rows that its entry lists (kept departures, named ones, likely ones),
    # picked for all tasks at once; a task with none, not ambiguous enough to say so, gets
    # no departures and no reason
    kept = _rows_where(med.task_of, r.p_departs >= _KEEP_DEPARTS)
    named_by = _rows_where(med.task_of, (r.p_departs >= _NAMED_FROM) & ~med.is_consensus)
    likely = _rows_where(med.task_of, ~med.is_consensus & (med.distance > 0) & (r.p_departs >= 0.1))
    size = np.bincount(med.task_of, minlength=n_tasks).tolist()
    apart_of = np.bincount(med.task_of, weights=r.p_other_reading >= 0.5, minlength=n_tasks).astype(np.int64).tolist()
    quiet = (~(r.p_ambiguous >= 0.2)).tolist()
    for t, key in enumerate(med.items.tolist()):
        rec = items.get(str(key))
        if rec is None:
            continue
        c = consensus[t]
        rec.p_flag, rec.p_ambiguous = p_flag[t], p_amb[t]
        rec.ambiguity_lr = finite_or_none(lr[t])
        rec.consensus_by, rec.consensus_p = who_l[c], cons_p[t]
        plain = _plain(vals[c])
        rec.consensus = plain if isinstance(plain, (str, int, float)) else None
        if quiet[t] and t not in kept and t not in likely:
            rec.departs, rec.how, rec.reason = {}, {}, None
            continue
        rec.departs = {who_l[n]: round(p_dep[n], 4) for n in kept.get(t, ())}
        rec.how = {}
        for n in named_by.get(t, ()):
            far = f"{distance[n]:.2g} from the consensus ({model.distance}; careful answers stay within {reach:.2g})"
            rec.how[who_l[n]] = how.get(n) or far
        named = sorted(((a, rec.departs[a]) for a in rec.how), key=lambda x: -x[1])
        others = [who_l[n] for n in likely.get(t, ())]
        split = None
        if rec.p_ambiguous >= 0.2:
            apart = apart_of[t]
            split = f"({apart} of {size[t]} answers follow another reading)" if apart else None
        rec.reason = _reason(rec, named, others, split, names)


def read_review(entry: "ControlReport", table: pd.DataFrame, items: Mapping[str, "ItemEntry"],
                names: Mapping[str, str] | None = None, pooled: bool = True) -> None:
    """Read the tasks of ``table`` against the control's stored model (``entry.flags``),
    filling their ``items`` entries (consensus, departures, ambiguity, posterior, reason);
    nothing happens without a stored model.

    Parameters
    ----------
    entry : ControlReport
        The control, with its fitted model.
    table : DataFrame (item, annotator, value)
        The answers of the tasks to read (the control's table, as the engine measured it).
    items : mapping task id -> ItemEntry
        Where the readings go (tasks without an entry are skipped).
    names : mapping annotator id -> display name, optional
    pooled : bool
        Whether the items keep ``departing_lr`` (:func:`pools_departures` of the report's
        controls, as the report's own items do).
    """
    _read(entry, table, items, names, pooled=pooled)


def _read(entry: "ControlReport", table: pd.DataFrame, items: Mapping[str, "ItemEntry"],
          names: Mapping[str, str] | None, pairs: TaskPairs | None = None, pooled: bool = True) -> None:
    """:func:`read_review`; ``pairs``: the answers' distances under the stored model's
    distance, when the fit has just computed them."""
    fit = entry.flags
    if fit is None or not len(table):
        return
    names = names or {a: e.name for a, e in entry.annotators.items()}
    if fit.model == "labels":
        _read_labels(entry, _label_model(fit), table, items, names, pooled)
    else:
        _read_distances(entry, _distance_model(fit), table, items, names, pairs)


def fit_review(entry: "ControlReport", table: pd.DataFrame, names: Mapping[str, str] | None = None,
               pooled: bool = True) -> None:
    """Fit a measured control's annotator model, store it, read every task and give each
    annotator their reliability (``ControlAnnotator.reliability``, ``reliability_ci``,
    ``departs``).

    Parameters
    ----------
    entry : ControlReport
        A measured control (its ``distance``, ``items`` and ``annotators`` filled).
    table : DataFrame (item, annotator, value)
        The answers the engine measured.
    names : mapping annotator id -> display name, optional
    pooled : bool
        Whether the items keep ``departing_lr`` (:func:`may_pool_departures`).
    """
    if not len(table) or entry.distance is None:
        return
    item = table["item"].to_numpy()
    who = table["annotator"].astype(str).to_numpy()
    pairs: TaskPairs | None = None
    if is_labels(entry, table):
        vals = _labels(table["value"])
        classes = _classes(entry, vals)
        model: LabelModel | DistanceModel = fit_label_model(item, who, vals, classes=classes,
                                                            ordered=_ordered(entry, classes))
        entry.flags = _label_fit(model)
    else:
        # the distances of every within-task pair, computed once for the fit and the reading
        dist = get_distance(entry.distance)
        pairs = task_pairs(item, list(table["value"]), dist)
        model = fit_consensus(pairs, who, distance=dist.name,
                              regions=entry.kind if entry.kind in REGION_KINDS else None)
        entry.flags = _distance_fit(model)
        # the reading resolves the stored name; and it starts with no texts read (medoids'
        # ties read a value's text per key, and a span's key ignores its text: which row
        # names a key must be the reading's own first, as when it computed the pairs itself)
        pairs = dataclasses.replace(pairs, texts={}) if get_distance(model.distance) is dist else None
    reliability, interval, departs = model.reliability()
    for a, best, (lo, hi), gone in zip(model.annotators, reliability, interval, departs.tolist()):
        rec = entry.annotators.get(a)
        if rec is not None:
            rec.reliability = finite_or_none(best)
            rec.reliability_ci = (finite_or_none(lo), finite_or_none(hi))
            rec.departs = gone
    _read(entry, table, entry.items, names, pairs, pooled)


def _setting(settings: Mapping[str, Any] | None, key: str, default: float) -> float:
    v = (settings or {}).get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else default


def task_ambiguity_lr(items: Mapping[str, "ItemEntry"], controls: Mapping[str, "ControlReport"]) -> float | None:
    """A task's log likelihood ratio of an ambiguous reading, summed over its measured
    controls (None when no control read it)."""
    xs = [rec.ambiguity_lr for n, rec in items.items()
          if rec.ambiguity_lr is not None and n in controls and controls[n].measured]
    return float(sum(xs)) if xs else None


def pooled_ratios(controls: Mapping[str, "ControlReport"]) -> dict[str, float]:
    """Each task's log likelihood ratio of an ambiguous reading, pooled over its measured
    controls (:func:`task_ambiguity_lr`), in the order the tasks first appear; tasks that
    no control read are left out. Read once per report: :func:`fit_ambiguity` fits ρ_T on
    them and ``rollup.project_tasks`` reads every task's posterior from them."""
    per_task: dict[str, dict[str, "ItemEntry"]] = {}
    for name, ctl in controls.items():
        for item, rec in ctl.items.items():
            per_task.setdefault(item, {})[name] = rec
    return {item: x for item, items in per_task.items() if (x := task_ambiguity_lr(items, controls)) is not None}


def fit_ambiguity(ratios: Mapping[str, float]) -> float:
    """ρ_T of a project: the share of tasks ambiguous over all their controls at once
    (``metrics/task_ambiguity.py``), from every task's pooled log ratio (:func:`pooled_ratios`)."""
    return fit_task_ambiguity(np.fromiter(ratios.values(), dtype=float, count=len(ratios))) if ratios else 0.0


def task_flag(items: Mapping[str, "ItemEntry"], controls: Mapping[str, "ControlReport"],
              settings: Mapping[str, Any] | None = None,
              ambiguity: float = 0.0, p_task: float | None = None,
              departing: Mapping[str, float] | None = None) -> tuple[bool, dict[str, str], float | None]:
    """Whether ONE task is flagged, why, and the posterior.

    Parameters
    ----------
    items : mapping control name -> ItemEntry
        The task's entries (as read by :func:`fit_review` or :func:`read_review`).
    controls : mapping control name -> ControlReport
        The report's controls (their status and legacy ``flag_below`` only).
    settings : mapping, optional
        The report's settings (``flag_posterior``, default ½).
    ambiguity : float
        ρ_T, the project's share of tasks ambiguous over all their controls (:func:`fit_ambiguity`).
    p_task : float, optional
        P(ambiguous over its controls), when the caller read it for many tasks at once
        (``task_ambiguity`` of :func:`task_ambiguity_lr` with ``ambiguity``; 0 without a
        ratio); computed here when None.

    Returns
    -------
    (flag, reasons, posterior)
        ``reasons`` maps each control that flags the task to its one-line reason;
        ``posterior`` = 1 − (1 − max(P(ambiguous over its controls), max_c a_c))
        Π_c (1 − (p_c − a_c)) over the measured controls read by a model, ``a_c`` a
        control's own posterior of ambiguity (``p_c − a_c``: ordinary, and an answer departs).
    """
    threshold = _setting(settings, "flag_posterior", DEFAULT_POSTERIOR)
    reasons: dict[str, str] = {}
    # departures multiply over the controls; ambiguity does not: a control's own reading
    # and the reading over the task's controls weigh the same splits, so the likelier of
    # them stands for both (as a product, one control's 2–1 split counted twice)
    no_departure, amb, read = 1.0, 0.0, False
    measured = {n: rec for n, rec in items.items() if n in controls and controls[n].measured}
    # departures on the controls of labels pooled per annotator (coupled_departures), the
    # others' as separate chances
    pooled = coupled_departures({n: rec for n, rec in measured.items() if rec.p_flag is not None}, departing)
    for name, rec in measured.items():
        ctl = controls[name]
        if ctl.flag_below and rec.sigma is not None and rec.sigma < ctl.flag_below:
            reasons[name] = f"σ {rec.sigma:.2f} below flag_below {ctl.flag_below:g}"
        if rec.p_flag is not None:
            p_amb = min(rec.p_ambiguous or 0.0, rec.p_flag)
            if pooled is None or not rec.departing_lr:
                no_departure *= 1.0 - (rec.p_flag - p_amb)
            amb = max(amb, p_amb)
            read = True
    if pooled is not None:
        no_departure *= 1.0 - pooled
    if p_task is None:
        lr = task_ambiguity_lr(items, controls)
        p_task = float(task_ambiguity(np.array([lr]), ambiguity)[0]) if lr is not None else 0.0
    posterior = 1.0 - no_departure * (1.0 - max(amb, p_task)) if read else None
    if posterior is not None and posterior >= threshold:
        if p_task >= _REASON_FROM:
            # ambiguous over the task's controls together: each control where it shows says so
            showing = [n for n, rec in items.items() if (rec.ambiguity_lr or 0.0) > 0 and n in controls]
            for n in showing or list(items):
                why = f"ambiguous over the task's controls: careful annotators split (posterior {p_task:.2f})"
                reasons[n] = f"{reasons[n]}; {why}" if n in reasons else why
        from_controls = {n: rec for n, rec in items.items() if rec.p_flag is not None and rec.reason}
        strong = {n: r for n, r in from_controls.items() if r.p_flag >= _REASON_FROM}
        if not strong and from_controls:   # flagged by several small posteriors together
            top = max(from_controls, key=lambda n: from_controls[n].p_flag)
            strong = {top: from_controls[top]}
        for n, rec in strong.items():
            reasons[n] = f"{reasons[n]}; {rec.reason}" if n in reasons else str(rec.reason)
        if not strong and p_task < _REASON_FROM:
            # likely, yet no answer against the consensus stands out: the departing answers
            # are the ones that agree with it (a spammer on the majority's side while a
            # careful annotator stands alone); the task is flagged all the same, and its
            # reason names nobody, since those annotators sided with the majority
            top = max((n for n, rec in items.items() if rec.p_flag is not None and n in controls
                       and controls[n].measured),
                      key=lambda n: items[n].p_flag or 0.0)
            why = (f"a departing answer is likely (posterior {posterior:.2f}), none against the "
                   "consensus: the consensus itself may be wrong")
            reasons[top] = f"{reasons[top]}; {why}" if top in reasons else why
    return bool(reasons), {c: reasons[c] for c in items if c in reasons}, posterior

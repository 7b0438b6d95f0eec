"""Task flags of a report: the Label Studio side of :mod:`ls_agreement.metrics.flags`.

``fit_flags`` fits a control's answer model once, when the report is built, and stores it
in the control (``ControlReport.flags``: a few numbers per control and annotator).
``task_flag`` flags ONE task from its per-control item entries (mean distance, σ, pairs,
annotators), those stored models and each control's distance histogram alone, so the live
service can flag a task without the others; the report builder's roll-up
(``rollup.project_tasks``) calls it for every task. The rule (docs/formulas.md, "Flags"):

* *answers farther apart than these annotators reach*: each control's tail probability of
  so large a mean pair distance on an ordinary task with these annotators (read against
  the control's own sound and chance distance distributions), combined over the task's
  controls by Fisher's method, is below ``flag_level`` (default 0.01);
* *an unreliable annotator likely departs*: the posterior that an annotator whose
  reliability is under half the control's median gave an answer that departs (a chance
  answer no sound one would be near) is at least ``flag_posterior`` (default 0.5);
* *legacy cut*: σ below ``flag_below`` (default 0: off).

A control without a usable histogram (an old report) is read by its count of pairs below
d* instead (:func:`~ls_agreement.metrics.flags.item_evidence`).
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Mapping

from ls_agreement.metrics.flags import (DEFAULT_LEVEL, DEFAULT_POSTERIOR, UNRELIABLE_BELOW, DistanceComponents,
                                        DistanceModel, FlagModel, ItemEvidence, agreeing_pairs, combine_flags,
                                        distance_components, distance_evidence, fit_distance_model,
                                        fit_flag_model, item_evidence, unreliable_annotators)

if TYPE_CHECKING:
    from .model import ControlReport, FlagFit, Histogram, ItemEntry

__all__ = ["fit_flags", "task_flag", "flag_model", "components", "DEFAULT_LEVEL", "DEFAULT_POSTERIOR"]


@lru_cache(maxsize=256)
def _components(edges: tuple[float, ...], observed: tuple[float, ...],
                expected: tuple[float, ...]) -> DistanceComponents | None:
    return distance_components(edges, observed, expected)


def components(hist: "Histogram | None") -> DistanceComponents | None:
    """The sound / departing split of a control's distances (None without a usable histogram):
    the same at fit time and at flag time, since both read the stored histogram."""
    if hist is None:
        return None
    return _components(tuple(map(float, hist.edges)), tuple(map(float, hist.observed)),
                       tuple(map(float, hist.expected)))


def fit_flags(entry: "ControlReport", chance: float | None) -> "FlagFit | None":
    """The answer model of a measured control: each annotator's probability of not departing,
    from their mean distance and the control's histogram; without a usable histogram, their
    share of sound answers from their σ and the tasks' counts below d*."""
    from .model import FlagFit

    comp = components(entry.histogram)
    if comp is not None:
        dm = fit_distance_model(comp, {a: (e.mean_distance, e.n_pairs) for a, e in entry.annotators.items()})
        if dm is not None:
            c = chance if chance is not None else 0.0
            # s: the share of sound pairs below d* (bins wholly below it), for the page
            t = entry.threshold
            below = int(t // comp.width) if t is not None and comp.width > 0 else 0
            same = float(sum(comp.sound_pmf[:below]))
            return FlagFit(chance=float(c), same=same, reliability=dict(dm.reliability),
                           default_reliability=dm.default_reliability, unreliable_below=dm.unreliable_below)
    items = [(k, rec.n_pairs, rec.annotators) for rec in entry.items.values()
             if (k := agreeing_pairs(rec.sigma, rec.n_pairs)) is not None]
    model = fit_flag_model({a: (e.sigma, e.n_pairs) for a, e in entry.annotators.items()}, chance, items)
    if model is None:
        return None
    return FlagFit(chance=model.chance, same=model.same, reliability=dict(model.reliability),
                   default_reliability=model.default_reliability, unreliable_below=model.unreliable_below)


def flag_model(fit: "FlagFit") -> FlagModel:
    """The count model of a stored fit (controls without a usable histogram)."""
    return FlagModel(chance=fit.chance, same=fit.same, reliability=fit.reliability,
                     default_reliability=fit.default_reliability, unreliable_below=fit.unreliable_below)


def distance_model(fit: "FlagFit", comp: DistanceComponents) -> DistanceModel:
    """The distance model of a stored fit and its control's histogram split."""
    return DistanceModel(width=comp.width, sound_pmf=comp.sound_pmf, depart_pmf=comp.depart_pmf,
                         chance_pmf=comp.chance_pmf, kappa=comp.kappa, reliability=fit.reliability,
                         default_reliability=fit.default_reliability, unreliable_below=fit.unreliable_below)


def _setting(settings: Mapping[str, Any] | None, key: str, default: float) -> float:
    v = (settings or {}).get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else default


def task_flag(items: Mapping[str, "ItemEntry"], controls: Mapping[str, "ControlReport"],
              settings: Mapping[str, Any] | None = None) -> tuple[bool, dict[str, str]]:
    """Whether ONE task is flagged, and why.

    Parameters
    ----------
    items : mapping control name -> ItemEntry
        The task's entries (mean distance, σ, pairs, annotators) in the controls where it
        has pairs.
    controls : mapping control name -> ControlReport
        The report's controls: only their project-level numbers are read (status,
        ``flags``, ``histogram``, ``flag_below``, annotator names), never their other tasks.
    settings : mapping, optional
        The report's settings (``flag_level``, ``flag_posterior``; defaults 0.01 and 0.5).

    Returns
    -------
    (flag, reasons)
        ``reasons`` maps each control that flags the task to a one-line explanation.
    """
    level = _setting(settings, "flag_level", DEFAULT_LEVEL)
    posterior = _setting(settings, "flag_posterior", DEFAULT_POSTERIOR)
    evidence: dict[str, ItemEvidence] = {}
    reasons: dict[str, str] = {}
    names: dict[str, str] = {}
    # the task's annotators judged over every measured control of the project (project-level
    # numbers only: reliabilities, medians, pair counts)
    who = {a for rec in items.values() for a in rec.annotators}
    fits = [(ctl.flags.reliability, ctl.flags.unreliable_below / UNRELIABLE_BELOW,
             {a: e.n_pairs for a, e in ctl.annotators.items() if a in who})
            for ctl in controls.values() if ctl.measured and ctl.flags is not None]
    unreliable = unreliable_annotators(who, fits)
    for name, rec in items.items():
        ctl = controls.get(name)
        if ctl is None or not ctl.measured:
            continue
        if ctl.flag_below and rec.sigma is not None and rec.sigma < ctl.flag_below:
            reasons[name] = f"σ {rec.sigma:.2f} below flag_below {ctl.flag_below:g}"
        if ctl.flags is None or not rec.n_pairs:
            continue
        comp = components(ctl.histogram)
        if comp is not None and rec.mean_distance is not None and math.isfinite(rec.mean_distance):
            evidence[name] = distance_evidence(distance_model(ctl.flags, comp), rec.mean_distance,
                                               rec.n_pairs, rec.annotators, unreliable)
        else:
            k = agreeing_pairs(rec.sigma, rec.n_pairs)
            if k is None:
                continue
            evidence[name] = item_evidence(flag_model(ctl.flags), k, rec.n_pairs, rec.annotators, unreliable)
        names.update({a: e.name for a, e in ctl.annotators.items() if e.name and e.name != a})
    for name, why in combine_flags(evidence, level, posterior, names).items():
        reasons[name] = f"{reasons[name]}; {why}" if name in reasons else why
    return bool(reasons), {c: reasons[c] for c in items if c in reasons}

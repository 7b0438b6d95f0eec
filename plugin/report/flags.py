"""Task flags of a report: the Label Studio side of :mod:`ls_agreement.metrics.flags`.

``fit_flags`` fits a control's answer model once, when the report is built, and stores it
in the control (``ControlReport.flags``: a few numbers per control and annotator).
``task_flag`` flags ONE task from its per-control item entries (σ, pairs, annotators) and
those stored models alone, so the live service can flag a task without the others; the
report's ``derive`` calls it for every task. The rule (docs/formulas.md, "Flags"):

* *fewer agreeing pairs than these annotators reach*: each control's tail probability of so
  few pairs below d* on an ordinary task with these annotators, combined over the task's
  controls by Fisher's method, is below ``flag_level`` (default 0.01);
* *an unreliable annotator likely departs*: the posterior that an annotator whose
  reliability is under half the control's median gave an unsound answer is at least
  ``flag_posterior`` (default 0.5);
* *legacy cut*: σ below ``flag_below`` (default 0: off).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ls_agreement.metrics.flags import (DEFAULT_LEVEL, DEFAULT_POSTERIOR, FlagModel, ItemEvidence,
                                        agreeing_pairs, combine_flags, fit_flag_model, item_evidence)

if TYPE_CHECKING:
    from .model import ControlReport, FlagFit, ItemEntry

__all__ = ["fit_flags", "task_flag", "flag_model", "DEFAULT_LEVEL", "DEFAULT_POSTERIOR"]


def fit_flags(entry: "ControlReport", chance: float | None) -> "FlagFit | None":
    """The answer model of a measured control, from its annotators' σ and its tasks."""
    from .model import FlagFit

    items = [(k, rec.n_pairs, rec.annotators) for rec in entry.items.values()
             if (k := agreeing_pairs(rec.sigma, rec.n_pairs)) is not None]
    model = fit_flag_model({a: (e.sigma, e.n_pairs) for a, e in entry.annotators.items()}, chance, items)
    if model is None:
        return None
    return FlagFit(chance=model.chance, same=model.same, reliability=dict(model.reliability),
                   default_reliability=model.default_reliability, unreliable_below=model.unreliable_below)


def flag_model(fit: "FlagFit") -> FlagModel:
    return FlagModel(chance=fit.chance, same=fit.same, reliability=fit.reliability,
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
        The task's entries (σ, pairs, annotators) in the controls where it has pairs.
    controls : mapping control name -> ControlReport
        The report's controls: only their project-level numbers are read (status,
        ``flags``, ``flag_below``, annotator names), never their other tasks.
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
    for name, rec in items.items():
        ctl = controls.get(name)
        if ctl is None or not ctl.measured:
            continue
        if ctl.flag_below and rec.sigma is not None and rec.sigma < ctl.flag_below:
            reasons[name] = f"σ {rec.sigma:.2f} below flag_below {ctl.flag_below:g}"
        k = agreeing_pairs(rec.sigma, rec.n_pairs)
        if ctl.flags is None or k is None:
            continue
        evidence[name] = item_evidence(flag_model(ctl.flags), k, rec.n_pairs, rec.annotators)
        names.update({a: e.name for a, e in ctl.annotators.items() if e.name and e.name != a})
    for name, why in combine_flags(evidence, level, posterior, names).items():
        reasons[name] = f"{reasons[name]}; {why}" if name in reasons else why
    return bool(reasons), {c: reasons[c] for c in items if c in reasons}

"""The seed papers' own measures for one control tag of a report (docs/report.md).

``seed_measures(control, settings)`` returns the typed :class:`~.model.SeedMeasures`
the report puts into the control's entry, each part filled only where it applies:

* ``kappa_x`` — cross-replication reliability (paper 001) for every pair of annotator
  pools in ``settings.groups``, and for humans vs each model version when
  ``settings.humans_vs_model`` or ``settings.include_predictions`` and the table holds
  ``model:*`` annotators (``{}`` when none applies);
* ``span_f1`` — chance-corrected span F1 (paper 003) for Labels on Text, characters
  mapped to nltk tokens through ``control.texts`` (None when it does not apply);
* ``crowdtruth`` — CrowdTruth 2.0 scores (paper 004) for Choices and Taxonomy
  (closed) and for spans (open: answers are the (start, end, label) given on a task, counted as often as
  given) (None when it does not apply).

The parts are the report model's dataclasses (str keys, None for undefined numbers);
``Report.to_dict()`` gives their JSON.
"""
from __future__ import annotations

from itertools import combinations
from typing import Any

import pandas as pd

from ls_agreement.metrics.cross_kappa import cross_kappa
from ls_agreement.metrics.crowdtruth import crowdtruth
from ls_agreement.metrics.model import Span
from ls_agreement.metrics.result import finite_or_none
from ls_agreement.metrics.span_f1 import span_f1_table

from ls_agreement.adapters.spans import SPAN_TOKENIZER, token_table

from ..settings import check_groups
from .model import (CrowdTruthSection, CrowdTruthUnit, CrowdTruthWorker, Interval, KappaX, KappaXIntervals,
                    SeedMeasures, SpanF1Scores, SpanF1Section)

__all__ = ["seed_measures", "kappa_x_section", "span_f1_section", "crowdtruth_section"]

MODEL_PREFIX = "model:"
NONE_ANSWER = "(none)"          # CrowdTruth answer of an annotator who marked no span


def _replications(control: Any, settings: Any) -> list[tuple[str, pd.DataFrame, pd.DataFrame]]:
    table = control.table
    ann = table["annotator"].astype(str)
    out = []
    groups = dict(getattr(settings, "groups", {}) or {})
    check_groups(groups)  # overlapping pools have no κx (refused before any work by build_report)
    if len(groups) >= 2:
        for gx, gy in combinations(groups, 2):
            mx, my = set(map(str, groups[gx])), set(map(str, groups[gy]))
            out.append((f"{gx} vs {gy}", table[ann.isin(mx)], table[ann.isin(my)]))
    # predictions included = the user wants the model compared with the humans
    if getattr(settings, "humans_vs_model", False) or getattr(settings, "include_predictions", False):
        is_model = ann.str.startswith(MODEL_PREFIX)
        humans = table[~is_model]
        for model in sorted(ann[is_model].unique()):
            out.append((f"humans vs {model}", humans, table[ann == model]))
    return out


def kappa_x_section(control: Any, settings: Any) -> dict[str, KappaX]:
    """κx per pair of replications, with the control's default distance (paper 001)."""
    out: dict[str, KappaX] = {}
    for name, tx, ty in _replications(control, settings):
        if tx.empty or ty.empty:  # a pool with no annotation on this control: nothing to say
            continue
        try:
            res = cross_kappa(tx, ty, control.default_distance,
                              bootstrap=int(getattr(settings, "bootstrap", 1000)),
                              seed=int(getattr(settings, "seed", 0)))
        except ValueError as exc:
            out[name] = KappaX(error=str(exc))
            continue
        shown = {k: _shown_interval(ci, getattr(res, k, None)) for k, ci in res.ci.items()}
        out[name] = KappaX(
            kappa_x=finite_or_none(res.kappa_x), normalized=finite_or_none(res.normalized), irr_x=finite_or_none(res.irr_x),
            irr_y=finite_or_none(res.irr_y), d_o=finite_or_none(res.d_o), d_e=finite_or_none(res.d_e), n_items=int(res.n_items),
            n_x=int(res.n_x), n_y=int(res.n_y), distance=res.distance,
            ci=KappaXIntervals(**shown, bootstrap=int(res.bootstrap), seed=int(res.seed)))
    return out


def _shown_interval(ci: Any, estimate: Any) -> Interval:
    """An interval only next to a defined estimate it contains (a normalized κx that is
    null must not show a bootstrap interval of its own)."""
    x = finite_or_none(estimate)
    lo, hi = (finite_or_none(ci[0]), finite_or_none(ci[1])) if isinstance(ci, (list, tuple)) and len(ci) == 2 else (None, None)
    if x is None or lo is None or hi is None or not lo - 1e-9 <= x <= hi + 1e-9:
        return (None, None)
    return (min(lo, x), max(hi, x))


def _span_scores(df: pd.DataFrame, difficulty: bool = False) -> dict[str, SpanF1Scores]:
    """Observed, chance and corrected F1 per row of a span F1 table (None where undefined)."""
    cols = ["observed", "chance", "corrected", *(["difficulty"] if difficulty else [])]
    return {str(k): SpanF1Scores(**{c: finite_or_none(v) for c, v in zip(cols, row)})
            for k, row in zip(df.index, df[cols].itertuples(index=False, name=None))}


def span_f1_section(control: Any, settings: Any) -> SpanF1Section | None:
    """Micro-averaged chance-corrected span F1, per annotator and per task (paper 003)."""
    table, n_tokens, warnings = token_table(control)
    if table.empty or table.groupby("item").size().max() < 2:
        return None
    # Label Studio lets one annotator overlap two spans of a label: their union is scored.
    # The section shows no pair of annotators: the per-pair records are never built
    # (max_pairs=0; the totals and the rows per annotator, task and label do not use them)
    res = span_f1_table(table, n_tokens, "non-overlapping", on_overlap="merge", max_pairs=0)
    return SpanF1Section(
        observed=finite_or_none(res.observed), chance=finite_or_none(res.chance), corrected=finite_or_none(res.corrected),
        tp=float(res.tp), expected_tp=float(res.expected_tp), l_sum=float(res.l_sum), model=res.model,
        annotators=_span_scores(res.per_annotator), tasks=_span_scores(res.per_item, difficulty=True),
        labels=_span_scores(res.per_label), tokenizer=SPAN_TOKENIZER, warnings=list(warnings or []))


def _span_answers(value: Any, pool: dict[str, str]) -> tuple[str, ...]:
    """A judgement's span answers, each as often as it was given: CrowdTruth-core counts a
    span marked twice in one annotation twice (its judgement vectors are counts). Each
    answer's text is one object through ``pool``, and equal judgements are equal tuples,
    read once by :func:`~ls_agreement.metrics.crowdtruth.crowdtruth` (issue 24: at 100,000
    tasks a string and a dict per span and judgement were the spans worker's largest part)."""
    keys = sorted(f"{sp.start}-{sp.end}:{sp.label}" for sp in (value or ()) if isinstance(sp, Span))
    return tuple(pool.setdefault(k, k) for k in keys)


def _closed_options(control: Any, table: pd.DataFrame, taxonomy: bool) -> list[str]:
    opts = list(control.options or [])
    if taxonomy:  # a selection may stop at an inner node: every prefix is an answer
        prefixes: set[str] = set()
        for p in opts:  # longest prefix first, stopping at one already seen: each built once
            cut = len(p)
            while cut >= 0 and p[:cut] not in prefixes:
                prefixes.add(p[:cut])
                cut = p.rfind("/", 0, cut)
        opts = sorted(prefixes)
    seen = set(opts)
    for v in table["value"]:
        for a in ([v] if isinstance(v, str) else (v or ())):
            if a not in seen:
                seen.add(a)
                opts.append(a)
    return opts


def crowdtruth_section(control: Any, settings: Any) -> CrowdTruthSection | None:
    """CrowdTruth 2.0 worker, unit and annotation scores (paper 004)."""
    tag = str(control.tag).lower()
    table = control.table[["item", "annotator", "value"]]
    if control.kind == "spans":
        pool: dict[str, str] = {}
        table = table.assign(value=[_span_answers(v, pool) for v in table["value"]])
        options, none_token = None, NONE_ANSWER
    elif tag in ("choices", "taxonomy"):
        options, none_token = _closed_options(control, table, tag == "taxonomy"), None
    else:
        return None
    if table.empty or table.groupby("item").size().max() < 2:
        return None
    try:
        res = crowdtruth(table, options, none_token=none_token)
    except ValueError:  # no unit with two non-empty judgements
        return None
    w = res.workers
    return CrowdTruthSection(
        workers={str(k): CrowdTruthWorker(wqs=finite_or_none(q), wua=finite_or_none(u), wwa=finite_or_none(a))
                 for k, q, u, a in zip(w.index, w["wqs"], w["wua"], w["wwa"])},
        units={str(k): CrowdTruthUnit(uqs=finite_or_none(v)) for k, v in res.units["uqs"].items()},
        annotations={str(k): finite_or_none(v) for k, v in res.annotations["aqs"].items()},
        n_iter=int(res.n_iter), converged=bool(res.converged), closed=options is not None)


def seed_measures(control: Any, settings: Any) -> SeedMeasures:
    """The seed measures that apply to ``control`` (a ControlData) under ``settings``.

    Returns
    -------
    SeedMeasures
        ``kappa_x`` (``{}`` when no pool pair applies), ``span_f1`` and ``crowdtruth``
        (None when they do not apply); docs/report.md.
    """
    out = SeedMeasures(kappa_x=kappa_x_section(control, settings))
    if control.kind == "spans" and control.texts:
        out.span_f1 = span_f1_section(control, settings)
    out.crowdtruth = crowdtruth_section(control, settings)
    return out

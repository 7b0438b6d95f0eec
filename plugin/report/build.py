"""`build_report`: adapters + metrics for every control tag -> the report JSON contract.

Per control: ``agreement(table, distance, p, form, seed, bootstrap, flag_below)`` of the
engine (paper 000 §4-5: α, KS, σ with d*; docs/formulas.md §3, §9); with ``distance="auto"``
the candidates of the control are ranked by KS (``choose_distance``) and the winner is
reported with its intervals. Then the seed measures (κx, span F1, CrowdTruth) are merged,
and each control's annotator model is fitted (``flags.fit_review``: every task's consensus
answer, who departs from it, whether it is ambiguous; each annotator's reliability).

Project level (README): a task's ``flag`` is true when the posterior that it holds a
departing answer or an ambiguous control reaches ``flag_posterior`` (``flags.task_flag``), and its
``sigma`` is the *minimum* σ over the controls where it has pairs (the weakest control
decides). An annotator's project ``sigma``/``alpha`` are the pair-weighted means of their
per-control values (controls with more pairs weigh more); ``n_items`` counts distinct
tasks over all controls.
"""
from __future__ import annotations

import os
import tempfile
import warnings as warnings_module
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Iterable, Mapping, MutableMapping

import numpy as np
import pandas as pd

from ls_agreement.adapters.adapt import Adapted, adapt, read_part
from ls_agreement.adapters.config import LabelingConfig, parse_config
from ls_agreement.adapters.control import ControlData, fitting_distances, unread_warning
from ls_agreement.adapters.errors import AdapterError, PartsDiffer
from ls_agreement.adapters.export_stream import ExportFile, ExportPart, iter_part, split_export
from ls_agreement.adapters.gc_pause import gc_paused, thaw
from ls_agreement.adapters.part_files import PartFiles, SpilledParts, write_part
from ls_agreement.adapters.spans import release_tokens, span_units_table
from ls_agreement.metrics.distances.registry import get_distance
from ls_agreement.metrics.engine import HISTOGRAM_BINS
from ls_agreement.metrics.errors import BadInput
from ls_agreement.metrics.result import finite_or_none

from ..settings import ReportSettings
from .model import (AnnotatorIntervals, Candidate, ControlAnnotator, ControlReport, ControlStatus, Diagnostic,
                    Histogram, Intervals, ItemEntry, Report)
from .flags import drop_departing_ratios, fit_ambiguity, fit_departing, fit_review, may_pool_departures, pooled_ratios
from .quality import reference_measures
from .seed import seed_measures
from .budget import DEFAULT_BUDGET, default_budget, reader_bytes, worker_bytes
from .parallel import ChildFailed, SpilledControls, cpu_count, map_forked, measure_controls, run_forked
from .pairs import label_section, pair_matrix_section, project_pair_matrix
from .rollup import project_annotators, project_tasks

__all__ = ["build_report", "control_report", "collect_warnings"]

# Past this many annotators on a control, the co-annotator map (annotators² entries) would
# dwarf the rest of the report: it is left out, with a warning saying so.
MAX_CO_ANNOTATORS = 100


def _key(item: Any) -> str:
    return str(item)


def _empty_entry(ctl: ControlData, settings: ReportSettings) -> ControlReport:
    table = ctl.table
    return ControlReport(
        tag=ctl.tag, kind=ctl.kind, object=ctl.object_name, default_distance=ctl.default_distance,
        form=settings.form, n_items=int(table["item"].nunique()) if len(table) else 0,
        n_values=int(len(table)), n_annotators=int(table["annotator"].nunique()) if len(table) else 0,
        p=settings.p, flag_below=settings.flag_below,
        ci=Intervals(bootstrap=settings.bootstrap, seed=settings.seed),
        options=list(ctl.options or []), n_ground_truth=len(ctl.ground_truth), warnings=list(ctl.warnings))


# Why a control has no agreement numbers; such a control takes no part in flags, in a
# task's σ or in an annotator's means (agreement is undefined there, not bad).
NO_VARIATION = ("no variation: every distance between the values of this control is 0 under {distance} "
                "(one answer throughout, for example an optional control nobody used), so chance agreement "
                "is perfect and agreement is undefined, not bad")
UNPAIRABLE = ("fewer than two annotators on every task{but}: agreement needs at least two tasks with two "
              "or more annotations, so it is undefined")


def _unpairable_reason(n_pairable: int) -> str:
    return UNPAIRABLE.format(but=f" but {n_pairable}" if n_pairable else "")


def _unmeasured(entry: ControlReport, status: ControlStatus, reason: str) -> None:
    """Null every agreement number of a control that cannot be measured, saying why.

    Such a control takes no part in flags, in a task's σ or in an annotator's means
    (``rollup.project_tasks``, ``rollup.project_annotators``); facts that do not depend on chance
    (pairs, mean distances) stay.
    """
    entry.status, entry.reason = status, reason
    entry.alpha = entry.ks = entry.ks_statistic = entry.sigma = entry.threshold = entry.d_e = None
    entry.flags = None
    entry.histogram = None
    entry.ci = Intervals(bootstrap=entry.ci.bootstrap, seed=entry.ci.seed)
    for rec in entry.items.values():
        rec.sigma = rec.alpha = None
        rec.flag = False
    for a in entry.annotators.values():
        a.sigma = a.alpha = None
        a.ci = None
    # interval notes and the §6.1 pathologies describe numbers that are not shown
    entry.diagnostics = [d for d in entry.diagnostics if d.code in ("no_variation", "unpairable_items")]
    entry.warnings.append(reason)


def _histogram(observed: np.ndarray, observed_weights: np.ndarray | None, expected: np.ndarray,
               weights: np.ndarray | None) -> Histogram:
    """Observed/expected distance distributions on shared bins (for the quality page).

    Parameters
    ----------
    observed, observed_weights : ndarray, shape (k,); ndarray of shape (k,) or None
        Observed distances and their pair counts (``AgreementResult.observed_distribution``:
        pooled cells, so a crowd project's millions of pairs are never listed); None: one
        pair each.
    expected, weights : ndarray, shape (e,); ndarray of shape (e,) or None
        Chance distances and their counts.
    """
    hi = max(float(observed.max()) if observed.size else 0.0, float(expected.max()) if expected.size else 0.0)
    edges = np.linspace(0.0, hi if hi > 0 else 1.0, HISTOGRAM_BINS + 1)
    # integer pair counts summed as floats stay exact (far below 2**53): the same counts as pair by pair
    obs, _ = np.histogram(observed, bins=edges, weights=observed_weights)
    exp, _ = np.histogram(expected, bins=edges, weights=weights)
    return Histogram(edges=[float(e) for e in edges], observed=[int(c) for c in obs],
                     expected=[float(c) for c in exp])


def _measure(ctl: ControlData, table: pd.DataFrame, settings: ReportSettings, wanted: str,
             entry: ControlReport, bootstrap: int) -> Any:
    """The control's agreement under its distance; ``auto`` ranks the candidates by KS
    (``choose_distance``: only the winner is bootstrapped) and records them."""
    from ls_agreement.metrics import agreement, choose_distance

    kw = dict(p=settings.p, form=settings.form, seed=settings.seed, flag_below=settings.flag_below,
              bootstrap=bootstrap)
    if wanted != "auto":
        return agreement(table, wanted, **kw)
    if len(ctl.candidates) == 1:
        return agreement(table, ctl.candidates[0], **kw)
    choice = choose_distance(table, ctl.candidates, **kw)
    entry.candidates = []
    for rec in choice.table.to_dict("records"):
        ok = rec["status"] == "ok"  # KS and σ of a constant baseline mean nothing
        entry.candidates.append(Candidate(distance=str(rec["distance"]), alpha=finite_or_none(rec["alpha"]) if ok else None,
                                          ks=finite_or_none(rec["ks"]) if ok else None,
                                          sigma=finite_or_none(rec["sigma"]) if ok else None, status=str(rec["status"])))
    return choice.result


def control_report(ctl: ControlData, settings: ReportSettings, pooled: bool = True) -> ControlReport:
    """The report entry of one control (see ``build_report``); never raises ValueError:
    bad data becomes a warning and null numbers. ``pooled``: whether its label items keep
    ``departing_lr`` (``flags.may_pool_departures`` of the project's controls)."""
    entry = _empty_entry(ctl, settings)
    table = ctl.table
    if ctl.kind == "spans":
        table, entry.units, notes = span_units_table(ctl)
        entry.warnings.extend(notes)
    n_pairable = int((table.groupby("item", sort=False).size() >= 2).sum()) if len(table) else 0
    if n_pairable < 2:
        wanted = settings.distance_for(ctl.name)
        entry.distance = None if wanted == "auto" else wanted
        try:
            if wanted != "auto":
                get_distance(wanted)
        except (KeyError, ValueError) as exc:
            entry.warnings.append(f"distance not usable: {exc}")
        _annotators_only(ctl, entry)
        _unmeasured(entry, "unpairable", _unpairable_reason(n_pairable))
        return entry
    wanted = settings.distance_for(ctl.name)
    try:
        try:
            res = _measure(ctl, table, settings, wanted, entry, settings.bootstrap)
        except (ValueError, ZeroDivisionError, FloatingPointError) as exc:
            if not settings.bootstrap:
                raise
            # Tiny data can break resamples only: keep the point estimates.
            res = _measure(ctl, table, settings, wanted, entry, 0)
            entry.warnings.append(f"bootstrap intervals not computed: {exc}")
        entry.distance = res.distance
    except (ValueError, ZeroDivisionError, FloatingPointError) as exc:
        _annotators_only(ctl, entry)
        _unmeasured(entry, "failed", f"agreement not computed: {exc}")
        return entry
    entry.alpha, entry.ks, entry.ks_statistic = finite_or_none(res.alpha), finite_or_none(res.ks), finite_or_none(res.ks_statistic)
    entry.sigma, entry.threshold, entry.d_e = finite_or_none(res.sigma), finite_or_none(res.threshold), finite_or_none(res.d_e)
    entry.n_items, entry.n_pairs, entry.n_expected_pairs = int(res.n_items), int(res.n_pairs), int(res.n_expected_pairs)
    entry.distance, entry.form = res.distance, res.form
    ci = {k: (finite_or_none(v[0]), finite_or_none(v[1])) for k, v in res.ci.items()}
    entry.ci = Intervals(alpha=ci.get("alpha", (None, None)), ks=ci.get("ks", (None, None)),
                         sigma=ci.get("sigma", (None, None)), bootstrap=int(res.bootstrap), seed=settings.seed)
    entry.diagnostics = [Diagnostic.of(d) for d in res.diagnostics]
    entry.expected_exact = bool(res.expected_exact)
    observed, observed_weights = res.observed_distribution()
    if observed.size and res.expected.size:
        entry.histogram = _histogram(observed, observed_weights, res.expected, res.expected_weights)
    entry.items = _items(res.per_item, table)
    entry.annotators = _annotators(res, ctl, entry)
    if res.d_e > 0:   # the annotator model: consensus, departures, ambiguity, reliability
        try:
            fit_review(entry, table, ctl.annotator_names, pooled)
        except (ValueError, FloatingPointError) as exc:
            entry.warnings.append(f"annotator model not fitted (no flags, consensus or reliability): {exc}")
    reference_measures(ctl, table, entry, settings)   # ground truth, predictions, error types
    if res.d_e > 0:  # annotator × annotator matrix and per-label agreement (pairs.py)
        pair_matrix_section(res, table, settings, entry)
        label_section(ctl, settings, entry)
    if not res.d_e > 0:
        unread = unread_warning(ctl)   # skipped results may be the only reason the answers left agree
        _unmeasured(entry, "no_variation", NO_VARIATION.format(distance=res.distance)
                    + (f"; but {unread.split(' (')[0]}, so the answers left may not show what the export holds"
                       if unread else ""))
    return entry


def tasks_per_annotator(controls: Iterable[ControlData]) -> dict[str, int]:
    """How many distinct tasks each annotator answered, over all controls (keys compared as
    strings, as the report's ids are).

    Counted once, not kept as each annotator's set of task ids while the controls are
    measured: at 100,000 tasks those sets held 47 MB in the process beside the workers
    (issue 24)."""
    frames = [ctl.table[["annotator", "item"]] for ctl in controls if len(ctl.table)]
    if not frames:
        return {}
    both = pd.concat(frames, ignore_index=True)
    item = both["item"]
    pairs = pd.DataFrame({"annotator": both["annotator"].astype(str),
                          "item": item if pd.api.types.is_integer_dtype(item) else item.astype(str)})
    return {str(a): int(n) for a, n in pairs.drop_duplicates().groupby("annotator", sort=False).size().items()}


def _annotators_by_item(table: pd.DataFrame) -> dict[Any, list[str]]:
    """Each item's annotators (as strings) in table order: a stable sort of the factorized
    items and one split, not a Python-level groupby aggregation per item (100,000 items).

    Items answered by the same annotators in the same order share one list, of one string
    per annotator: the entries hold these lists as they are (nothing changes them), and a
    report of 100,000 tasks held 400,000 copies of six names in 100,000 lists per control
    (31 MB of its 110), in the worker, through the pipe and in the parent."""
    if not len(table):
        return {}
    codes, uniques = pd.factorize(table["item"], sort=False)
    order = np.argsort(codes, kind="stable")
    who, names = pd.factorize(table["annotator"].astype(str), sort=False)
    shared = np.asarray(names, dtype=object)[who[order]].tolist()      # one string object per annotator
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    cuts = [0, *bounds.tolist(), len(shared)]
    lists: dict[tuple[str, ...], list[str]] = {}
    out = {}
    for k, item in enumerate(uniques.tolist()):
        run = tuple(shared[cuts[k]:cuts[k + 1]])
        got = lists.get(run)
        if got is None:
            got = lists[run] = list(run)
        out[item] = got
    return out


def _items(per_item: pd.DataFrame, table: pd.DataFrame) -> dict[str, ItemEntry]:
    who = _annotators_by_item(table)
    cols = {c: per_item[c].to_numpy() for c in ("sigma", "alpha", "mean_distance", "n_pairs", "flag")
            if c in per_item.columns}
    n = len(per_item)
    sigma = [finite_or_none(x) for x in cols["sigma"].tolist()] if "sigma" in cols else [None] * n
    alpha = [finite_or_none(x) for x in cols["alpha"].tolist()] if "alpha" in cols else [None] * n
    mean_d = ([finite_or_none(x) for x in cols["mean_distance"].tolist()] if "mean_distance" in cols
              else [None] * n)
    n_pairs = [int(x) for x in cols["n_pairs"].tolist()] if "n_pairs" in cols else [0] * n
    flag = [bool(x) for x in cols["flag"].tolist()] if "flag" in cols else [False] * n
    out: dict[str, ItemEntry] = {}
    for k, item in enumerate(per_item.index.tolist()):
        out[_key(item)] = ItemEntry(sigma=sigma[k], alpha=alpha[k], mean_distance=mean_d[k], n_pairs=n_pairs[k],
                                    flag=flag[k], annotators=who.get(item, []))
    return out


def _co_annotators(pairs: pd.DataFrame) -> dict[str, dict[str, float | None]]:
    """Mean distance of every annotator to each co-annotator, from the observed pairs."""
    a_codes, labels = pd.factorize(pd.concat([pairs["annotator_a"], pairs["annotator_b"]]).astype(str))
    n, m = len(labels), len(pairs)
    a, b = a_codes[:m], a_codes[m:]
    key = np.concatenate([a * n + b, b * n + a])
    d = np.tile(pairs["distance"].to_numpy(dtype=float), 2)
    count = np.bincount(key, minlength=n * n)
    total = np.bincount(key, d, minlength=n * n)
    co: dict[str, dict[str, float | None]] = {}
    for k in np.flatnonzero(count):
        co.setdefault(labels[k // n], {})[labels[k % n]] = finite_or_none(total[k] / count[k])
    return {x: dict(sorted(v.items())) for x, v in co.items()}


def _annotators(res: Any, ctl: ControlData, entry: ControlReport) -> dict[str, ControlAnnotator]:
    pa = res.per_annotator
    if len(pa) <= MAX_CO_ANNOTATORS:
        co = _co_annotators(res.pairs)
    else:
        co = {}
        entry.warnings.append(f"co-annotator distances left out: {len(pa)} annotators, more than "
                              f"{MAX_CO_ANNOTATORS} (the map would hold {len(pa) ** 2:,} entries)")
    out: dict[str, ControlAnnotator] = {}
    names = ctl.annotator_names
    cols = {c: pa[c].to_numpy() for c in pa.columns}
    has_ci = "sigma_ci_low" in cols
    for k, a in enumerate(pa.index):
        key = str(a)
        rec = ControlAnnotator(
            name=names.get(key, key), sigma=finite_or_none(cols["sigma"][k]) if "sigma" in cols else None,
            alpha=finite_or_none(cols["alpha"][k]) if "alpha" in cols else None,
            mean_distance=finite_or_none(cols["mean_distance"][k]) if "mean_distance" in cols else None,
            n_pairs=int(cols["n_pairs"][k]) if "n_pairs" in cols else 0,
            n_items=int(cols["n_items"][k]) if "n_items" in cols else 0, pairs=co.get(key, {}))
        if has_ci:
            rec.ci = AnnotatorIntervals(sigma=(finite_or_none(cols["sigma_ci_low"][k]), finite_or_none(cols["sigma_ci_high"][k])),
                                        alpha=(finite_or_none(cols["alpha_ci_low"][k]), finite_or_none(cols["alpha_ci_high"][k])))
        out[key] = rec
    return out


def _annotators_only(ctl: ControlData, entry: ControlReport) -> None:
    """Annotators with counts but no numbers (controls without agreement)."""
    if not len(ctl.table):
        return
    counts = ctl.table.groupby("annotator", sort=True)["item"].nunique()
    entry.annotators = {str(a): ControlAnnotator(name=ctl.annotator_names.get(str(a), str(a)), n_items=int(n))
                        for a, n in counts.items()}


def _seed_measures(ctl: ControlData, settings: ReportSettings, entry: ControlReport) -> None:
    """κx, span F1 and CrowdTruth where they apply; a failure is a warning, never a lost report."""
    try:
        extra = seed_measures(ctl, settings)
    except Exception as exc:  # a failing optional measure must not lose the core numbers
        entry.warnings.append(f"seed measures failed: {type(exc).__name__}: {exc}")
        return
    entry.kappa_x = extra.kappa_x
    entry.span_f1 = extra.span_f1
    entry.crowdtruth = extra.crowdtruth


def _share_equal_values(items: Mapping[str, ItemEntry]) -> None:
    """One object for each distinct reason, way of departing and number among a control's
    task entries (issue 24): the report's process holds every control's entries at once, and
    equal strings and floats built task by task were each an object of their own (the five
    controls' entries of 100,000 demo tasks 0.64 GB, shared 0.46 GB); pickling a worker's
    result also sends a shared object once. No value changes; no container is shared, so an
    entry's dicts may still be changed in place."""
    texts: dict[str, str] = {}
    numbers: dict[float, float] = {}

    def number(v: Any) -> Any:
        # floats only (1 == 1.0 would hand an int back), and neither ±0.0 nor NaN (equal
        # across signs, unequal to itself)
        return numbers.setdefault(v, v) if type(v) is float and v == v and v != 0.0 else v

    for rec in items.values():
        if rec.reason is not None:
            rec.reason = texts.setdefault(rec.reason, rec.reason)
        if rec.how:
            rec.how = {a: texts.setdefault(h, h) for a, h in rec.how.items()}
        if rec.departs:
            rec.departs = {a: number(p) for a, p in rec.departs.items()}
        rec.sigma, rec.alpha, rec.mean_distance = number(rec.sigma), number(rec.alpha), number(rec.mean_distance)


def _measured_control(ctl: ControlData, settings: ReportSettings, pooled: bool = True) -> ControlReport:
    """One control's entry: agreement, annotator model, seed measures (in a worker process
    when the report runs several, see :mod:`.parallel`)."""
    # numpy/shapely warnings (a polygon repaired, an overflow near 1e308) become the
    # control's report warnings instead of raw lines with source code on stderr
    caught: list[str] = []
    with collect_warnings(caught, "computing"), gc_paused(collect=True):
        entry = control_report(ctl, settings, pooled)
        _seed_measures(ctl, settings, entry)
        release_tokens(ctl)   # span distances and span F1 read one token table
        _share_equal_values(entry.items)
    entry.warnings.extend(caught)
    return entry


def _read_part(cfg: LabelingConfig, settings: ReportSettings, spill: str, index: int,
               piece: ExportPart) -> tuple[PartFiles, list[str]]:
    """One part of an export read (:func:`_read_in_parts`) and its controls' cells written
    under ``spill``, with the Python warnings raised meanwhile."""
    seen: list[str] = []
    with collect_warnings(seen, "reading the project"):
        part = read_part(cfg, iter_part(piece), strict=settings.strict, include_predictions=settings.include_predictions)
    return write_part(cfg, part, spill, index), seen


#: An export is cut into parts of about this many bytes at most, read a few side by side: a
#: part's reader holds about as much as its part's bytes, so reading stays bounded at any size
PART_BYTES = 256 << 20


def _read_in_parts(config_xml: str, tasks: Iterable[dict], settings: ReportSettings, workers: int,
                   caught: list[str], spill: str | None, annotator_names: Mapping[str, str] | None,
                   budget: int = DEFAULT_BUDGET) -> SpilledParts | None:
    """An export file read in parts side by side (issue 24: reading is one pass over the
    whole export before any control starts, so with one reader the other cores wait):
    :func:`~ls_agreement.adapters.export_stream.split_export` cuts the file at tasks into
    at least one part per worker and parts of at most :data:`PART_BYTES`; each part is read
    in a forked process, as many at a time as there are workers and as the memory
    ``budget`` holds (:func:`.parallel.map_forked`, :func:`.budget.reader_bytes`), and
    writes its controls' cells under ``spill``
    (:func:`~ls_agreement.adapters.part_files.write_part`). The result holds what one
    reading of the whole gives; each control is joined and built from its files by the
    worker that measures it. None where the parts cannot stand for the whole (a cut that
    was no task's start, a task id in two parts, any problem the strict mode raises:
    :class:`PartsDiffer`), where a file cannot be written, or with one worker: the caller
    reads the whole export, which reports any problem as it always does. Python warnings
    raised while a part is read are kept, in the parts' order."""
    at_once = workers if workers > 0 else cpu_count()
    if workers == 1 or spill is None or not isinstance(tasks, ExportFile) or at_once < 2:
        return None
    try:
        size = tasks.path.stat().st_size
    except OSError:
        return None
    pieces = split_export(tasks.path, max(at_once, -(-size // PART_BYTES)))
    if not pieces:
        return None
    # as many readers side by side as the budget holds (one always reads)
    at_once = max(1, min(at_once, budget // reader_bytes(max(p.end - p.start for p in pieces))))
    try:
        cfg = parse_config(config_xml, strict=settings.strict)
    except AdapterError:
        return None                # the whole reading raises it, as always
    try:
        done = map_forked([partial(_read_part, cfg, settings, spill, k, p) for k, p in enumerate(pieces)],
                          at_once=at_once)
        parts = SpilledParts(cfg, [files for files, _ in done], strict=settings.strict,
                             annotator_names=annotator_names)
    except (PartsDiffer, AdapterError, ChildFailed, OSError):
        for name in os.listdir(spill):      # the whole reading's files take their room
            if name.startswith("part-"):
                os.remove(os.path.join(spill, name))
        return None
    # said once, as one reading's collect_warnings says a repeated warning
    caught.extend(dict.fromkeys(w for _, seen in done for w in seen))
    return parts


@dataclass
class _Project:
    """What the report's process needs of the adapted export, made where it was read."""

    n_tasks: int
    controls: MutableMapping[str, ControlData]   # in memory, or SpilledControls / SpilledParts
    warnings: list[str]                           # the adapters', the reading's, the settings'
    names: dict[str, str]                         # annotator id -> name
    n_items: dict[str, int]                       # annotator id -> distinct tasks answered
    costs: dict[str, int]                         # control -> its worker's expected peak bytes (and work's proxy)
    pooled: bool                                  # flags.may_pool_departures of the controls' kinds


def _checked(settings: ReportSettings, kinds: Mapping[str, tuple[str, str]],
             present: Callable[[], set[str]], warnings: list[str]) -> list[str]:
    """``warnings`` and what the settings say of the controls (``kinds``: name -> (kind,
    tag)) and of the annotators ``present()`` gives.

    Raises
    ------
    AdapterError
        A distance named for a control whose values it cannot compare."""
    _check_forced_distances(settings, kinds)
    unknown = sorted(set(settings.distances) - set(kinds))
    if unknown:
        warnings.append(f"settings name distances for unknown control(s) {unknown}")
    warnings.extend(_group_warnings(settings, present))
    return warnings


def _project(adapted: Adapted, caught: list[str], settings: ReportSettings,
             annotator_names: Mapping[str, str] | None, spill: str | None) -> _Project:
    """The adapted export checked against the settings and summed up for the report;
    with ``spill`` (a directory), its controls written there (:class:`.parallel.SpilledControls`;
    kept in memory where the files cannot be written).

    Raises
    ------
    AdapterError
        A distance named for a control whose values it cannot compare."""
    if annotator_names:
        for ctl in adapted.controls.values():
            seen = set(map(str, ctl.table["annotator"].unique())) if len(ctl.table) else set()
            ctl.annotator_names.update({a: n for a, n in annotator_names.items() if a in seen and n})

    def present() -> set[str]:
        out: set[str] = set()
        for ctl in adapted.controls.values():
            if len(ctl.table):
                out.update(ctl.table["annotator"].astype(str).unique().tolist())
        return out

    warnings = _checked(settings, {n: (c.kind, c.tag) for n, c in adapted.controls.items()}, present,
                        list(adapted.warnings) + caught)
    names: dict[str, str] = {}
    for ctl in adapted.controls.values():
        names.update(ctl.annotator_names)
    controls: MutableMapping[str, ControlData] = adapted.controls
    if spill is not None:
        try:
            controls = SpilledControls(spill, adapted.controls)
        except OSError:
            pass        # a full disk: the same report, the controls held in memory as before
    return _Project(n_tasks=adapted.n_tasks, controls=controls, warnings=warnings, names=names,
                    n_items=tasks_per_annotator(adapted.controls.values()),
                    costs={n: worker_bytes(c.kind, len(c.table)) for n, c in adapted.controls.items()},
                    pooled=may_pool_departures(c.kind for c in adapted.controls.values()))


def _project_of_parts(parts: SpilledParts, caught: list[str], settings: ReportSettings) -> _Project:
    """:func:`_project` of an export read in parts, from what the parts counted: no control
    is built here."""
    kinds = parts.kinds()
    warnings = _checked(settings, kinds, lambda: set(parts.tasks_of), list(parts.warnings) + caught)
    return _Project(n_tasks=parts.n_tasks, controls=parts, warnings=warnings, names=parts.names,
                    n_items=dict(parts.tasks_of),
                    costs={n: worker_bytes(kind, parts.answers[n]) for n, (kind, _) in kinds.items()},
                    pooled=may_pool_departures(kind for kind, _ in kinds.values()))


def build_report(config_xml: str, tasks: Iterable[dict], settings: ReportSettings | None = None,
                 *, only_items: Iterable | None = None, annotator_names: Mapping[str, str] | None = None,
                 workers: int = 1, memory: int | None = None) -> Report:
    """Agreement report of a Label Studio project (contract in docs/report.md, README).

    Parameters
    ----------
    config_xml : str
        Labeling config.
    tasks : iterable of dict
        Tasks of a JSON/snapshot export or the API; read once, in order (a stream such as
        ``adapters.export_stream.iter_export`` or a mirror's ``iter_tasks`` is never listed).
        An ``adapters.export_stream.ExportFile`` is read in parts side by side when there
        are worker processes (:func:`_read_in_parts`).
    settings : ReportSettings, optional
    only_items : iterable of task ids, optional
        Restrict the per-task output (``controls.*.items`` and ``tasks``) to these tasks.
        The numbers are still computed on the whole project: the chance baseline and d*
        depend on every task.
    annotator_names : mapping of str to str, optional
        Annotator id -> name (Label Studio's users: an export's ``completed_by`` holds ids
        only), so that the tasks' reasons name people, not numbers.
    workers : int
        Measure the controls in up to this many worker processes (:mod:`.parallel`; the
        numbers are the same as with 1, the default: every control in this process); 0:
        one per control, up to the CPUs. With workers, the adapted controls pass to them as
        temporary files (removed before this returns).
    memory : int, optional
        With workers, the bytes the process tree may hold while the export is read and the
        controls are measured
        (default :func:`.budget.default_budget`: 2 GB, or less where the machine has less):
        a control's worker starts only where its expected peak fits beside the workers
        running (:func:`.parallel.measure_controls`); the numbers do not change.

    Returns
    -------
    Report
        The typed report (``Report.to_dict()`` / ``to_json()`` give the JSON contract).

    Raises
    ------
    AdapterError
        Invalid config; in strict mode, any bad task/annotation/result; a distance named
        for a control whose values it cannot compare.
    ValueError
        Invalid settings (a negative seed, overlapping annotator pools, ...).
    """
    settings = (settings or ReportSettings()).validate()
    budget = memory if memory is not None else default_budget()

    # with worker processes, the export is read in one too, which hands over only what this
    # process needs: the adapted controls stay in files, each read back by the worker that
    # measures it (parallel.SpilledControls), and this process never holds the heap the
    # reading left (parallel.run_forked)
    with tempfile.TemporaryDirectory(prefix="ls-agreement-") if workers != 1 else nullcontext() as spill:
        def read() -> _Project:
            caught: list[str] = []
            with collect_warnings(caught, "reading the project"):
                parts = _read_in_parts(config_xml, tasks, settings, workers, caught, spill, annotator_names, budget)
                out = None if parts is not None else adapt(config_xml, tasks, strict=settings.strict,
                                                           include_predictions=settings.include_predictions)
            if parts is not None:
                return _project_of_parts(parts, caught, settings)
            return _project(out, caught, settings, annotator_names, spill)

        try:
            project = read() if workers == 1 else run_forked(read, errors=(BadInput,))
            # each adapted control is let go once measured: nothing after this needs them
            measured = measure_controls(project.controls,
                                        partial(_measured_control, settings=settings, pooled=project.pooled),
                                        workers, release=True, costs=project.costs,
                                        budget=budget)
        finally:
            # what the pauses froze goes back to the collector (gc_pause.py): a long-lived
            # process that reports again must not keep a cycle of this one for good
            thaw()
    warnings = project.warnings
    keep = None if only_items is None else {_key(i) for i in only_items}
    controls: dict[str, ControlReport] = {}
    for name, entry in measured.items():
        if keep is not None:
            entry.items = {k: v for k, v in entry.items.items() if k in keep}
        warnings.extend(f"{name}: {w}" for w in entry.warnings)
        controls[name] = entry
    drop_departing_ratios(controls)   # where fewer than two label controls were measured after all
    report = Report(n_tasks=project.n_tasks, controls=controls, warnings=warnings, settings=settings.to_dict(),
                    pair_matrix=project_pair_matrix(controls))
    # project-level facts, derived once from the controls: flagged tasks, a task's weakest
    # σ and α, an annotator's pair-weighted means. With the collector paused: the controls'
    # entries (millions of objects at 100,000 tasks) were given back to it just above, and
    # each full collection the roll-up's allocations set off walked all of them (0.45 s each)
    with gc_paused(collect=True):
        ratios = pooled_ratios(controls)
        report.ambiguity = fit_ambiguity(ratios)    # tasks ambiguous over all their controls at once
        report.departing = fit_departing(controls)  # each annotator's share of departing tasks
        report.tasks = project_tasks(controls, report.settings, report.ambiguity, ratios, report.departing)
        report.annotators = project_annotators(controls, project.n_items, project.names)
    return report


# Warnings about our code or its libraries, not about the data: never shown to report readers.
_DEVELOPER_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, FutureWarning, ImportWarning)


@contextmanager
def collect_warnings(sink: list[str], doing: str):
    """Record the Python warnings raised inside (numpy overflow, shapely's make_valid, ...)
    as one line each in ``sink`` -- ``"numerical warning while <doing>: RuntimeWarning: ..."``
    -- instead of letting them reach stderr with a source line. Repeats are said once.
    (``catch_warnings`` is process-wide: concurrent reports in threads may see each
    other's warnings, never lose them.)"""
    with warnings_module.catch_warnings(record=True) as caught:
        warnings_module.simplefilter("always")
        for category in _DEVELOPER_WARNINGS:
            warnings_module.simplefilter("ignore", category)
        yield
    for msg in dict.fromkeys((w.category, str(w.message)) for w in caught):
        kind = "numerical warning" if issubclass(msg[0], RuntimeWarning) else "warning"
        sink.append(f"{kind} while {doing}: {msg[0].__name__}: {msg[1]}")


def _group_warnings(settings: ReportSettings, present: Callable[[], set[str]]) -> list[str]:
    """Annotator pools (κx) that cannot be compared as written: one pool, or ids with no
    annotation in the project (a typo, or a name instead of the user id)."""
    if not settings.groups:
        return []
    out = []
    if len(settings.groups) < 2:
        out.append(f"settings 'groups' name one annotator pool ({', '.join(map(repr, settings.groups))}); "
                   "kappa_x compares two pools or more, so it is not computed")
    seen = present()
    for g, members in settings.groups.items():
        missing = [m for m in dict.fromkeys(map(str, members)) if m not in seen]
        if missing:
            out.append(f"settings 'groups.{g}': annotator id(s) {missing} have no annotation in this "
                       "project (annotators are user ids, or model:<version> for predictions)")
    return out


# Beyond the distances of their kind: free text compared by exact match (a string label).
_ALSO_FITS = {"text": ["nominal"]}


def _check_forced_distances(settings: ReportSettings, kinds: Mapping[str, tuple[str, str]]) -> None:
    """A distance named for a control must compare that control's kind of values: boxes
    under ``nominal`` or choices under a ranking distance would give a silent 0.
    Registered callables without a kind (``register(name, D)``) fit every control."""
    from ls_agreement.metrics import available

    known = set(available())
    for name, dist in sorted(settings.distances.items()):
        if name not in kinds or dist == "auto" or dist not in known:
            continue  # unknown names are refused by the CLI, warned about by the engine
        kind, tag = kinds[name]
        fit = fitting_distances(kind, tag) + _ALSO_FITS.get(kind, [])
        if dist not in fit:
            raise AdapterError(f"distance {dist!r} does not fit control {name!r} ({tag}, "
                               f"{kind} values); distances that fit: {', '.join(fit)} (or auto)",
                               field=f"distances.{name}")

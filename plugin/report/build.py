"""`build_report`: adapters + metrics for every control tag -> the report JSON contract.

Per control: ``agreement(table, distance, p, form, seed, bootstrap, flag_below)`` of the
engine (paper 000 §4-5: α, KS, σ with d*; measures.md §3, §9); with ``distance="auto"``
the candidates of the control are ranked by KS (``choose_distance``) and the winner is
reported with its intervals. Then the seed measures (κx, span F1, CrowdTruth) are merged.

Project level (README): a task's ``flag`` is true when *any* control flags it, and its
``sigma`` is the *minimum* σ over the controls where it has pairs (the weakest control
decides). An annotator's project ``sigma``/``alpha`` are the pair-weighted means of their
per-control values (controls with more pairs weigh more); ``n_items`` counts distinct
tasks over all controls.
"""
from __future__ import annotations

import math
import warnings as warnings_module
from contextlib import contextmanager
from typing import Any, Iterable

import numpy as np
import pandas as pd

from ls_agreement.adapters.adapt import adapt
from ls_agreement.adapters.control import ControlData, fitting_distances
from ls_agreement.adapters.errors import AdapterError
from ls_agreement.adapters.spans import span_units_table
from ls_agreement.metrics.distances.registry import get_distance

from ..settings import ReportSettings

__all__ = ["build_report", "control_report", "collect_warnings", "REPORT_VERSION"]

REPORT_VERSION = 1
SEED_KEYS = ("kappa_x", "span_f1", "crowdtruth")
_HIST_BINS = 30
_MIN_MODAL_PAIRS = 100
# Past this many annotators on a control, the co-annotator map (annotators² entries) would
# dwarf the rest of the report: it is left out, with a warning saying so.
MAX_CO_ANNOTATORS = 100


def _num(v: Any) -> float | None:
    """JSON number: NaN/inf -> None."""
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _key(item: Any) -> str:
    return str(item)


def _empty_entry(ctl: ControlData, settings: ReportSettings) -> dict[str, Any]:
    table = ctl.table
    return {
        "tag": ctl.tag, "kind": ctl.kind, "object": ctl.object_name, "distance": None,
        "default_distance": ctl.default_distance, "form": settings.form,
        "alpha": None, "ks": None, "ks_statistic": None, "sigma": None, "threshold": None,
        "n_items": int(table["item"].nunique()) if len(table) else 0, "n_pairs": 0,
        "n_expected_pairs": 0, "n_values": int(len(table)),
        "n_annotators": int(table["annotator"].nunique()) if len(table) else 0,
        "p": settings.p, "flag_below": settings.flag_below,
        "ci": {"alpha": [None, None], "ks": [None, None], "sigma": [None, None],
               "bootstrap": settings.bootstrap, "seed": settings.seed},
        "options": ctl.options, "n_ground_truth": len(ctl.ground_truth),
        "diagnostics": [], "histogram": None, "items": {}, "annotators": {}, "warnings": list(ctl.warnings),
        "notes": [], "status": "ok", "reason": None,
    }


# Why a control has no agreement numbers; such a control takes no part in flags, in a
# task's σ or in an annotator's means (agreement is undefined there, not bad).
NO_VARIATION = ("no variation: every distance between the values of this control is 0 under {distance} "
                "(one answer throughout, for example an optional control nobody used), so chance agreement "
                "is perfect and agreement is undefined, not bad")
UNPAIRABLE = ("fewer than two annotators on every task{but}: agreement needs at least two tasks with two "
              "or more annotations, so it is undefined")


def _kept_diagnostic(note: str) -> bool:
    """Diagnostics that still hold for an unmeasured control (facts about the data, not
    about the numbers that are not shown): the engine's no-variation note, skipped items."""
    return note.startswith("no variation") or "(not pairable)" in note


def _unpairable_reason(n_pairable: int) -> str:
    return UNPAIRABLE.format(but=f" but {n_pairable}" if n_pairable else "")


def _unmeasured(entry: dict, status: str, reason: str) -> None:
    """Null every agreement number of a control that cannot be measured, saying why.

    Such a control takes no part in flags, in a task's σ or in an annotator's means
    (``_project_tasks``, ``_project_annotators``); facts that do not depend on chance
    (pairs, mean distances) stay.
    """
    entry.update(status=status, reason=reason, alpha=None, ks=None, ks_statistic=None, sigma=None,
                 threshold=None, histogram=None)
    entry["ci"].update(alpha=[None, None], ks=[None, None], sigma=[None, None])
    for rec in entry["items"].values():
        rec.update(sigma=None, alpha=None, flag=False)
    for rec in entry["annotators"].values():
        rec.update(sigma=None, alpha=None)
        rec.pop("ci", None)
    # interval notes and the §6.1 pathologies describe numbers that are not shown
    entry["diagnostics"] = [d for d in entry["diagnostics"] if _kept_diagnostic(d)]
    entry["warnings"].append(reason)


def _histogram(observed: np.ndarray, expected: np.ndarray, weights: np.ndarray | None) -> dict[str, Any]:
    """Observed/expected distance distributions on shared bins (for the quality page)."""
    hi = max(float(observed.max()) if observed.size else 0.0, float(expected.max()) if expected.size else 0.0)
    edges = np.linspace(0.0, hi if hi > 0 else 1.0, _HIST_BINS + 1)
    obs, _ = np.histogram(observed, bins=edges)
    exp, _ = np.histogram(expected, bins=edges, weights=weights)
    return {"edges": [float(e) for e in edges], "observed": [int(c) for c in obs],
            "expected": [float(c) for c in exp]}


def _modes(counts: list[float]) -> int:
    """Number of well-separated peaks of a histogram (valley below half the smaller peak)."""
    c = np.asarray(counts, dtype=float)
    # Few distinct distances (nominal 0/1, small rating scales) are spikes by nature, and a
    # handful of pairs is noise: neither is the pathology of paper 000 §6.1.
    if c.sum() < _MIN_MODAL_PAIRS or np.count_nonzero(c) <= 5 or c.size < 3:
        return 1 if c.sum() > 0 else 0
    sm = np.convolve(np.pad(c, 1, mode="edge"), [0.25, 0.5, 0.25], mode="valid")
    top = sm.max()
    peaks = [k for k in range(sm.size) if sm[k] >= 0.1 * top
             and (k == 0 or sm[k] > sm[k - 1]) and (k == sm.size - 1 or sm[k] >= sm[k + 1])]
    n = 1 if peaks else 0
    for a, b in zip(peaks, peaks[1:]):
        if sm[a:b + 1].min() < 0.5 * min(sm[a], sm[b]):
            n += 1
    return n


def _measure(ctl: ControlData, table: pd.DataFrame, settings: ReportSettings, wanted: str,
             entry: dict, bootstrap: int) -> Any:
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
    rows = []
    for rec in choice.table.to_dict("records"):
        row = {"distance": str(rec["distance"]), "alpha": _num(rec["alpha"]), "ks": _num(rec["ks"]),
               "sigma": _num(rec["sigma"])}
        if rec["status"] != "ok":  # KS and σ of a constant baseline mean nothing
            row.update(alpha=None, ks=None, sigma=None, status=rec["status"])
        rows.append(row)
    entry["candidates"] = rows
    return choice.result


def control_report(ctl: ControlData, settings: ReportSettings) -> dict[str, Any]:
    """The report entry of one control (see ``build_report``); never raises ValueError:
    bad data becomes a warning and null numbers."""
    entry = _empty_entry(ctl, settings)
    table = ctl.table
    if ctl.kind == "spans":
        table, entry["units"], notes = span_units_table(ctl)
        entry["warnings"].extend(notes)
    n_pairable = int((table.groupby("item", sort=False).size() >= 2).sum()) if len(table) else 0
    if n_pairable < 2:
        wanted = settings.distance_for(ctl.name)
        entry["distance"] = None if wanted == "auto" else wanted
        try:
            if wanted != "auto":
                get_distance(wanted)
        except (KeyError, ValueError) as exc:
            entry["warnings"].append(f"distance not usable: {exc}")
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
            entry["warnings"].append(f"bootstrap intervals not computed: {exc}")
        entry["distance"] = res.distance
    except (ValueError, ZeroDivisionError, FloatingPointError) as exc:
        _annotators_only(ctl, entry)
        _unmeasured(entry, "failed", f"agreement not computed: {exc}")
        return entry
    for k in ("alpha", "ks", "ks_statistic", "sigma", "threshold"):
        entry[k] = _num(getattr(res, k))
    entry.update(n_items=int(res.n_items), n_pairs=int(res.n_pairs),
                 n_expected_pairs=int(res.n_expected_pairs), distance=res.distance, form=res.form)
    ci = {k: [_num(v[0]), _num(v[1])] for k, v in res.ci.items()}
    for k in ("alpha", "ks", "sigma"):
        entry["ci"][k] = ci.get(k, [None, None])
    entry["ci"]["bootstrap"] = int(res.bootstrap)
    entry["diagnostics"] = list(res.diagnostics)
    entry["expected_exact"] = bool(res.expected_exact)
    if res.observed.size and res.expected.size:
        entry["histogram"] = _histogram(res.observed, res.expected, res.expected_weights)
        modes = _modes(entry["histogram"]["expected"])
        if modes > 1:
            entry["diagnostics"].append(f"expected distances are multi-modal ({modes} modes): one "
                                        "threshold d* summarises them poorly")
    entry["items"] = _items(res.per_item, table)
    entry["annotators"] = _annotators(res, ctl, entry)
    if not res.d_e > 0:
        _unmeasured(entry, "no_variation", NO_VARIATION.format(distance=res.distance))
    return entry


def _items(per_item: pd.DataFrame, table: pd.DataFrame) -> dict[str, dict]:
    who = table.groupby("item", sort=False)["annotator"].agg(list)
    cols = {c: per_item[c].to_numpy() for c in ("sigma", "alpha", "mean_distance", "n_pairs", "flag")
            if c in per_item.columns}
    out: dict[str, dict] = {}
    for k, item in enumerate(per_item.index):
        out[_key(item)] = {
            "sigma": _num(cols["sigma"][k]) if "sigma" in cols else None,
            "alpha": _num(cols["alpha"][k]) if "alpha" in cols else None,
            "mean_distance": _num(cols["mean_distance"][k]) if "mean_distance" in cols else None,
            "n_pairs": int(cols["n_pairs"][k]) if "n_pairs" in cols else 0,
            "flag": bool(cols["flag"][k]) if "flag" in cols else False,
            "annotators": [str(a) for a in who.get(item, [])],
        }
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
        co.setdefault(labels[k // n], {})[labels[k % n]] = _num(total[k] / count[k])
    return {x: dict(sorted(v.items())) for x, v in co.items()}


def _annotators(res: Any, ctl: ControlData, entry: dict) -> dict[str, dict]:
    pa = res.per_annotator
    if len(pa) <= MAX_CO_ANNOTATORS:
        co = _co_annotators(res.pairs)
    else:
        co = {}
        entry["warnings"].append(f"co-annotator distances left out: {len(pa)} annotators, more than "
                                 f"{MAX_CO_ANNOTATORS} (the map would hold {len(pa) ** 2:,} entries)")
    out: dict[str, dict] = {}
    names = ctl.annotator_names
    cols = {c: pa[c].to_numpy() for c in pa.columns}
    has_ci = "sigma_ci_low" in cols
    for k, a in enumerate(pa.index):
        key = str(a)
        rec = {"name": names.get(key, key), "sigma": _num(cols["sigma"][k]) if "sigma" in cols else None,
               "alpha": _num(cols["alpha"][k]) if "alpha" in cols else None,
               "mean_distance": _num(cols["mean_distance"][k]) if "mean_distance" in cols else None,
               "n_pairs": int(cols["n_pairs"][k]) if "n_pairs" in cols else 0,
               "n_items": int(cols["n_items"][k]) if "n_items" in cols else 0,
               "pairs": co.get(key, {})}
        if has_ci:
            rec["ci"] = {"sigma": [_num(cols["sigma_ci_low"][k]), _num(cols["sigma_ci_high"][k])],
                         "alpha": [_num(cols["alpha_ci_low"][k]), _num(cols["alpha_ci_high"][k])]}
        out[key] = rec
    return out


def _annotators_only(ctl: ControlData, entry: dict) -> None:
    """Annotators with counts but no numbers (controls without agreement)."""
    if not len(ctl.table):
        return
    counts = ctl.table.groupby("annotator", sort=True)["item"].nunique()
    entry["annotators"] = {str(a): {"name": ctl.annotator_names.get(str(a), str(a)), "sigma": None,
                                    "alpha": None, "mean_distance": None, "n_pairs": 0,
                                    "n_items": int(n), "pairs": {}} for a, n in counts.items()}


def _seed_measures(ctl: ControlData, settings: ReportSettings, entry: dict) -> None:
    try:
        from . import seed as seed_measures
    except ImportError:
        entry["notes"].append("seed-unavailable")
        return
    try:
        extra = seed_measures.seed_measures(ctl, settings)
    except Exception as exc:  # a failing optional measure must not lose the core numbers
        entry["warnings"].append(f"seed measures failed: {type(exc).__name__}: {exc}")
        return
    if isinstance(extra, dict):
        for k in SEED_KEYS:
            if k in extra:
                entry[k] = extra[k]


def build_report(config_xml: str, tasks: list[dict], settings: ReportSettings | None = None,
                 *, only_items: Iterable | None = None) -> dict[str, Any]:
    """Agreement report of a Label Studio project (contract in contracts.md, README).

    Parameters
    ----------
    config_xml : str
        Labeling config.
    tasks : list of dict
        Tasks of a JSON/snapshot export or the API.
    settings : ReportSettings, optional
    only_items : iterable of task ids, optional
        Restrict the per-task output (``controls.*.items`` and ``tasks``) to these tasks.
        The numbers are still computed on the whole project: the chance baseline and d*
        depend on every task.

    Returns
    -------
    dict
        JSON-serialisable: ``controls``, ``tasks``, ``annotators``, ``warnings``,
        ``settings``, ``n_tasks``, ``version``.

    Raises
    ------
    AdapterError
        Invalid config; in strict mode, any bad task/annotation/result; a distance named
        for a control whose values it cannot compare.
    ValueError
        Invalid settings (a negative seed, overlapping annotator pools, ...).
    """
    settings = (settings or ReportSettings()).validate()
    caught_adapting: list[str] = []
    with collect_warnings(caught_adapting, "reading the project"):
        adapted = adapt(config_xml, tasks, strict=settings.strict,
                        include_predictions=settings.include_predictions)
    _check_forced_distances(settings, adapted.controls)
    unknown = sorted(set(settings.distances) - set(adapted.controls))
    warnings = list(adapted.warnings) + caught_adapting
    if unknown:
        warnings.append(f"settings name distances for unknown control(s) {unknown}")
    warnings.extend(_group_warnings(settings, adapted.controls))
    keep = None if only_items is None else {_key(i) for i in only_items}
    controls: dict[str, dict] = {}
    notes: set[str] = set()
    for name, ctl in adapted.controls.items():
        # numpy/shapely warnings (a polygon repaired, an overflow near 1e308) become the
        # control's report warnings instead of raw lines with source code on stderr
        caught: list[str] = []
        with collect_warnings(caught, "computing"):
            entry = control_report(ctl, settings)
            _seed_measures(ctl, settings, entry)
        entry["warnings"].extend(caught)
        if keep is not None:
            entry["items"] = {k: v for k, v in entry["items"].items() if k in keep}
        warnings.extend(f"{name}: {w}" for w in entry["warnings"])
        notes.update(entry.pop("notes"))
        controls[name] = entry
    # said once, not once per control
    if "auto-unavailable" in notes:
        warnings.append("distance selection (auto) unavailable: each control uses its default distance")
    if "seed-unavailable" in notes:
        warnings.append("seed measures (kappa_x, span F1, CrowdTruth) unavailable")
    tasks_out = _project_tasks(controls)
    return {
        "version": REPORT_VERSION,
        "n_tasks": adapted.n_tasks,
        "controls": controls,
        "tasks": tasks_out,
        "annotators": _project_annotators(controls, adapted.controls),
        "warnings": warnings,
        "settings": settings.to_dict(),
    }


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


def _group_warnings(settings: ReportSettings, controls: dict[str, ControlData]) -> list[str]:
    """Annotator pools (κx) that cannot be compared as written: one pool, or ids with no
    annotation in the project (a typo, or a name instead of the user id)."""
    if not settings.groups:
        return []
    out = []
    if len(settings.groups) < 2:
        out.append(f"settings 'groups' name one annotator pool ({', '.join(map(repr, settings.groups))}); "
                   "kappa_x compares two pools or more, so it is not computed")
    present: set[str] = set()
    for ctl in controls.values():
        if len(ctl.table):
            present.update(ctl.table["annotator"].astype(str).unique().tolist())
    for g, members in settings.groups.items():
        missing = [m for m in dict.fromkeys(map(str, members)) if m not in present]
        if missing:
            out.append(f"settings 'groups.{g}': annotator id(s) {missing} have no annotation in this "
                       "project (annotators are user ids, or model:<version> for predictions)")
    return out


# Beyond the distances of their kind: free text compared by exact match (a string label).
_ALSO_FITS = {"text": ["nominal"]}


def _check_forced_distances(settings: ReportSettings, controls: dict[str, ControlData]) -> None:
    """A distance named for a control must compare that control's kind of values: boxes
    under ``nominal`` or choices under a ranking distance would give a silent 0.
    Registered callables without a kind (``register(name, D)``) fit every control."""
    from ls_agreement.metrics import available

    known = set(available())
    for name, dist in sorted(settings.distances.items()):
        ctl = controls.get(name)
        if ctl is None or dist == "auto" or dist not in known:
            continue  # unknown names are refused by the CLI, warned about by the engine
        fit = fitting_distances(ctl.kind, ctl.tag) + _ALSO_FITS.get(ctl.kind, [])
        if dist not in fit:
            raise AdapterError(f"distance {dist!r} does not fit control {name!r} ({ctl.tag}, "
                               f"{ctl.kind} values); distances that fit: {', '.join(fit)} (or auto)",
                               field=f"distances.{name}")


def _project_tasks(controls: dict[str, dict]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for name, entry in controls.items():
        if entry.get("status", "ok") != "ok":
            continue
        for item, rec in entry["items"].items():
            t = out.setdefault(item, {"sigma": None, "flag": False, "controls": [], "flagged_controls": []})
            t["controls"].append(name)
            s = rec.get("sigma")
            if s is not None and (t["sigma"] is None or s < t["sigma"]):
                t["sigma"] = s
            if rec.get("flag"):
                t["flag"] = True
                t["flagged_controls"].append(name)
    return out


def _project_annotators(controls: dict[str, dict], data: dict[str, ControlData]) -> dict[str, dict]:
    items: dict[str, set] = {}
    names: dict[str, str] = {}
    for ctl in data.values():
        names.update(ctl.annotator_names)
        if len(ctl.table):
            for a, grp in ctl.table.groupby("annotator", sort=False)["item"]:
                items.setdefault(str(a), set()).update(grp.tolist())
    out: dict[str, dict] = {}
    for a in sorted(items):
        per = {}
        sw = aw = n_s = n_a = 0.0
        pairs = 0
        for name, entry in controls.items():
            rec = entry["annotators"].get(a)
            if rec is None or entry.get("status", "ok") != "ok":
                continue
            per[name] = {"sigma": rec["sigma"], "alpha": rec["alpha"], "n_pairs": rec["n_pairs"]}
            n = rec["n_pairs"]
            pairs += n
            if rec["sigma"] is not None and n:
                sw += rec["sigma"] * n
                n_s += n
            if rec["alpha"] is not None and n:
                aw += rec["alpha"] * n
                n_a += n
        out[a] = {"name": names.get(a, a), "n_items": len(items[a]), "n_pairs": pairs,
                  "sigma": sw / n_s if n_s else None, "alpha": aw / n_a if n_a else None,
                  "controls": per}
    return out

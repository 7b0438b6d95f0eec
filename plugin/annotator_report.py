"""Per-annotator quality report (JSON and CSV) written next to each sync.

Per annotator and control: σ, α, mean distance, agreement with each co-annotator, the
CrowdTruth worker quality score where the control has one, task and pair counts and the
bootstrap intervals — all taken from the ``build_report`` result (issue 4 contract), never
recomputed here. Reference: design.md ("Per annotator"); CrowdTruth worker quality score,
Dumitrache et al. 2018 (papers/), as reported by the seed-measures module.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Mapping

from ls_agreement.plugin.report.render import render_html

from .pushback import _clean

CSV_COLUMNS = ["annotator", "name", "control", "sigma", "alpha", "mean_distance", "n_pairs",
               "n_items", "sigma_lo", "sigma_hi", "alpha_lo", "alpha_hi", "crowdtruth_wqs",
               "co_annotators"]


def _crowdtruth_score(ctrl: Mapping[str, Any], annotator: str) -> Any:
    """Worker quality score of ``annotator`` in a control's ``crowdtruth`` block, if any."""
    ct = ctrl.get("crowdtruth")
    if not isinstance(ct, Mapping):
        return None
    for key in ("workers", "worker", "wqs", "worker_quality"):
        block = ct.get(key)
        if isinstance(block, Mapping) and annotator in block:
            val = block[annotator]
            if isinstance(val, Mapping):
                return val.get("wqs", val.get("score"))
            return val
    return None


def _ci(entry: Mapping[str, Any], which: str) -> tuple[Any, Any]:
    ci = entry.get("ci")
    pair = ci.get(which) if isinstance(ci, Mapping) else None
    if isinstance(pair, (list, tuple)) and len(pair) == 2:
        return pair[0], pair[1]
    return None, None


def annotator_quality(report: Mapping[str, Any]) -> dict[str, Any]:
    """Per-annotator quality from a ``build_report`` result.

    Returns
    -------
    dict
        ``{annotator: {"name", "overall": <report["annotators"][a]>, "controls":
        {control: {"sigma", "alpha", "mean_distance", "n_pairs", "n_items", "ci",
        "co_annotators", "crowdtruth_wqs"}}}}``.
    """
    out: dict[str, Any] = {}
    for cname, ctrl in (report.get("controls") or {}).items():
        for a, e in (ctrl.get("annotators") or {}).items():
            rec = out.setdefault(str(a), {"name": e.get("name"), "overall": {},
                                          "controls": {}})
            rec["name"] = rec["name"] or e.get("name")
            rec["controls"][cname] = {
                "sigma": e.get("sigma"), "alpha": e.get("alpha"),
                "mean_distance": e.get("mean_distance"), "n_pairs": e.get("n_pairs"),
                "n_items": e.get("n_items"), "ci": e.get("ci"),
                "co_annotators": e.get("pairs") or {},
                "crowdtruth_wqs": _crowdtruth_score(ctrl, str(a)),
            }
    for a, summary in (report.get("annotators") or {}).items():
        rec = out.setdefault(str(a), {"name": None, "overall": {}, "controls": {}})
        rec["overall"] = dict(summary) if isinstance(summary, Mapping) else summary
        if isinstance(summary, Mapping) and not rec["name"]:
            rec["name"] = summary.get("name")
    return _clean(out)


def csv_rows(quality: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One CSV row per (annotator, control), columns :data:`CSV_COLUMNS`."""
    rows = []
    for a, rec in sorted(quality.items()):
        for cname, e in sorted((rec.get("controls") or {}).items()):
            s_lo, s_hi = _ci(e, "sigma")
            a_lo, a_hi = _ci(e, "alpha")
            rows.append({
                "annotator": a, "name": rec.get("name") or "", "control": cname,
                "sigma": e.get("sigma"), "alpha": e.get("alpha"),
                "mean_distance": e.get("mean_distance"), "n_pairs": e.get("n_pairs"),
                "n_items": e.get("n_items"), "sigma_lo": s_lo, "sigma_hi": s_hi,
                "alpha_lo": a_lo, "alpha_hi": a_hi, "crowdtruth_wqs": e.get("crowdtruth_wqs"),
                "co_annotators": json.dumps(e.get("co_annotators") or {}, sort_keys=True),
            })
    return rows


def write_reports(out_dir: Path, report: Mapping[str, Any],
                  header: Mapping[str, Any]) -> dict[str, Path]:
    """Write ``report.json`` (the full report), ``report.html`` (the quality page),
    ``annotators.json`` and ``annotators.csv``.

    Parameters
    ----------
    out_dir : Path
        Folder (created if missing).
    report : Mapping
        ``build_report`` output.
    header : Mapping
        Run facts added to both JSON files (server, project id, run id, time).

    Returns
    -------
    dict
        ``{"report": path, "report_html": path, "annotators_json": path, "annotators_csv": path}``.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    quality = annotator_quality(report)
    paths = {"report": out_dir / "report.json",
             "report_html": out_dir / "report.html",
             "annotators_json": out_dir / "annotators.json",
             "annotators_csv": out_dir / "annotators.csv"}
    _atomic_write(paths["report"], json.dumps({**header, **_clean(report)}, indent=1,
                                              sort_keys=True))
    _atomic_write(paths["report_html"], render_html(_clean(report)))
    _atomic_write(paths["annotators_json"],
                  json.dumps({**header, "annotators": quality}, indent=1, sort_keys=True))
    tmp = paths["annotators_csv"].with_suffix(".csv.tmp")
    with tmp.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
        w.writeheader()
        for row in csv_rows(quality):
            w.writerow({k: "" if v is None else v for k, v in row.items()})
    tmp.replace(paths["annotators_csv"])
    return paths


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)

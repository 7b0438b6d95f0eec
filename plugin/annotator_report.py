"""Per-annotator quality report (JSON and CSV) written next to each sync.

Per annotator and control: σ, α, mean distance, agreement with each co-annotator, the
CrowdTruth worker quality score where the control has one, task and pair counts and the
bootstrap intervals — all read from the typed report, never recomputed here. The CSV is
the report's own per-annotator table (:func:`~.report.render.annotator_rows`). Reference: docs/design.md ("The report"); CrowdTruth worker quality score,
Dumitrache et al. 2018 (papers/), as reported by the seed-measures module.
"""
from __future__ import annotations

import csv
import dataclasses
import os
import threading
from pathlib import Path
from typing import Any, BinaryIO, Callable, Mapping

from ls_agreement.metrics.result import json_text, write_json

from .pushback import rounded_json
from .report.model import Report, to_jsonable
from .report.render import ANNOTATOR_COLUMNS, annotator_rows, render_html

CSV_COLUMNS = ANNOTATOR_COLUMNS  # one per-annotator file schema: the report's own


def annotator_quality(report: Report) -> dict[str, Any]:
    """Per-annotator quality from a report, for ``annotators.json`` and the task snapshot.

    Returns
    -------
    dict
        ``{annotator: {"name", "overall": <report.annotators[a]>, "controls":
        {control: {"reliability", "reliability_ci", "departs", "sigma", "alpha",
        "mean_distance", "n_pairs", "n_items", "ci", "co_annotators", "crowdtruth_wqs"}}}}``.
    """
    out: dict[str, Any] = {}
    for cname, ctrl in report.controls.items():
        for a, e in ctrl.annotators.items():
            rec = out.setdefault(a, {"name": e.name, "overall": {}, "controls": {}})
            rec["name"] = rec["name"] or e.name
            rec["controls"][cname] = {
                "reliability": e.reliability, "reliability_ci": list(e.reliability_ci), "departs": e.departs,
                "sigma": e.sigma, "alpha": e.alpha, "mean_distance": e.mean_distance, "n_pairs": e.n_pairs,
                "n_items": e.n_items, "ci": to_jsonable(e.ci), "co_annotators": dict(e.pairs),
                "crowdtruth_wqs": ctrl.crowdtruth_wqs(a),
            }
    for a, summary in report.annotators.items():
        rec = out.setdefault(a, {"name": None, "overall": {}, "controls": {}})
        rec["overall"] = to_jsonable(summary)
        rec["name"] = rec["name"] or summary.name
    return rounded_json(out)


def write_reports(out_dir: Path, report: Report,
                  header: Mapping[str, Any]) -> dict[str, Path]:
    """Write ``report.json`` (the full report), ``report.html`` (the quality page),
    ``annotators.json`` and ``annotators.csv``.

    Parameters
    ----------
    out_dir : Path
        Folder (created if missing).
    report : Report
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
    # the header keys, then the report's in its own order, written by the one serializer
    # streamed: the text of a big project's report is never held whole
    whole = {**header, **{f.name: getattr(report, f.name) for f in dataclasses.fields(report)}}
    _atomic_write(paths["report"], lambda fh: write_json(whole, fh, indent=1))
    # a file has no serve behind it: its annotator-pair cells carry no link (serve's page does)
    _atomic_write(paths["report_html"], render_html(report))
    _atomic_write(paths["annotators_json"],
                  json_text({**header, "annotators": quality}, indent=1))
    tmp = _tmp_path(paths["annotators_csv"])
    with tmp.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
        w.writeheader()
        for row in annotator_rows(report):
            w.writerow({k: "" if v is None else v for k, v in row.items()})
    tmp.replace(paths["annotators_csv"])
    return paths


def _tmp_path(path: Path) -> Path:
    """A temporary name beside ``path`` that no other writer uses: ``connect``'s sync and a
    running service may write the same project's files at the same time."""
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")


def _atomic_write(path: Path, text: str | Callable[[BinaryIO], None]) -> None:
    """``text`` (or what ``text(file)`` writes, streamed) into ``path``, replacing it whole."""
    tmp = _tmp_path(path)
    if isinstance(text, str):
        tmp.write_text(text, encoding="utf-8")
    else:
        with tmp.open("wb") as fh:
            text(fh)
    tmp.replace(path)

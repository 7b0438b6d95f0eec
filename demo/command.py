"""``ls-agreement demo``: a local Label Studio with a sample multi-annotator project.

Steps: install Label Studio into its own cached venv (once, 3-4 min) and start it on the
loopback interface with SQLite in ``--data-dir``; create six annotators; create the
sample project (``demo/data.py``: rectangles, spans, a choice, a text area and a
ranking; a careless annotator and ambiguous tasks) with its annotations; run ``sync``
(compute agreement, push it back into the tasks, create the "Low agreement" view, write
the reports); print the links and a per-annotator table.

Keeping the server: on an interactive terminal the demo leaves Label Studio running until
Ctrl-C (so the links work); otherwise (scripts, CI) it stops it at the end. Force either
with ``--keep-running`` / ``--no-keep-running``. Rerunning with the same ``--data-dir``
reuses the server's database and the project (``--fresh`` rebuilds the project).
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ls_agreement.plugin.commands.common import EXIT_OK
from ls_agreement.plugin.report.model import Report

from . import data
from .local_server import LocalLabelStudio

HELP = ("Start a local Label Studio, load a sample multi-annotator project, compute "
        "agreement, push it back and print the links.")
LOW_AGREEMENT_VIEW = "Low agreement"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, default=Path(".ls-agreement/demo"),
                        help="Label Studio data dir (SQLite, media, reports); default "
                             "./.ls-agreement/demo")
    parser.add_argument("--port", type=int, default=8089,
                        help="port for Label Studio (0 = any free port; a busy port makes "
                             "Label Studio take the next one); default 8089")
    parser.add_argument("--keep-running", action=argparse.BooleanOptionalAction, default=None,
                        help="leave Label Studio running until Ctrl-C (default: yes on an "
                             "interactive terminal, no otherwise)")
    parser.add_argument("--tasks", type=int, default=60, help="number of sample tasks (60)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the sample data (7)")
    parser.add_argument("--bootstrap", type=int, default=1000,
                        help="bootstrap resamples for the intervals (1000)")
    parser.add_argument("--fresh", action="store_true",
                        help="delete the sample project and create it again")


@dataclass
class DemoOutcome:
    """What the demo made; ``server`` is still running when returned by :func:`run_demo`."""

    server: LocalLabelStudio
    project_id: int
    user_ids: dict[str, int]
    report: Report = field(default_factory=Report)
    report_paths: dict[str, str] = field(default_factory=dict)
    view_id: int | None = None
    careless_email: str = ""


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _find_project(client: Any, title: str) -> int | None:
    for project in client.projects.list(title=title):
        if project.title == title:
            return int(project.id)
    return None


def _create_sample_project(client: Any, user_ids: Mapping[str, int], n_tasks: int,
                           seed: int) -> int:
    sample = data.generate(user_ids, n_tasks=n_tasks, seed=seed)
    project = client.projects.create(
        title=data.DEMO_TITLE, label_config=data.DEMO_CONFIG,
        description="Synthetic sample for ls-agreement: 6 annotators (one careless), "
                    "some deliberately ambiguous tasks.")
    # Import in chunks: keeps each request small and shows progress.
    for start in range(0, len(sample.tasks), 20):
        client.projects.import_tasks(id=project.id, request=sample.tasks[start:start + 20])
    return int(project.id)


def run_demo(data_dir: Path, port: int = 8089, *, n_tasks: int = 60, seed: int = 7,
             bootstrap: int = 1000, fresh: bool = False) -> DemoOutcome:
    """Start Label Studio, load the sample project and sync it.

    Returns with the server running; the caller stops it (``outcome.server.stop()``).

    Raises
    ------
    LabelStudioError
        Label Studio could not be installed or started.
    """
    server = LocalLabelStudio(Path(data_dir), port)
    t0 = time.monotonic()
    _say(f"Starting Label Studio (data in {server.data_dir}) ...")
    server.start(timeout=600)
    _say(f"Label Studio is up at {server.url} ({time.monotonic() - t0:.0f} s).")
    try:
        client = server.client()
        user_ids = {a.email: server.create_user(a.email, a.first_name, a.last_name)
                    for a in data.ANNOTATORS}
        pid = _find_project(client, data.DEMO_TITLE)
        if pid is not None and fresh:
            client.projects.delete(id=pid)
            pid = None
        if pid is None:
            _say(f"Creating the sample project ({n_tasks} tasks, "
                 f"{len(data.ANNOTATORS)} annotators) ...")
            pid = _create_sample_project(client, user_ids, n_tasks, seed)
        outcome = DemoOutcome(server=server, project_id=pid, user_ids=user_ids,
                              careless_email=next(a.email for a in data.ANNOTATORS
                                                  if a.careless))
        _say("Computing agreement and pushing it back (sync) ...")
        _sync(outcome, bootstrap)
        if outcome.view_id is None:
            outcome.view_id = _view_id(client, pid, LOW_AGREEMENT_VIEW)
        return outcome
    except BaseException:
        server.stop()
        raise


def _sync(outcome: DemoOutcome, bootstrap: int) -> None:
    from ls_agreement.plugin.settings import ReportSettings
    from ls_agreement.plugin.sync import sync_project

    server = outcome.server
    result = sync_project(server.url, server.token, outcome.project_id,
                          settings=ReportSettings(bootstrap=bootstrap),
                          state_path=server.data_dir / "ls-agreement-state.sqlite",
                          progress=True, out_dir=server.data_dir / "reports")
    outcome.report = result.report
    outcome.report_paths = {k: str(Path(v).resolve())
                            for k, v in (result.report_paths or {}).items()}
    if result.views is not None:
        outcome.view_id = result.views.views.get("low")


def _view_id(client: Any, project_id: int, title: str) -> int | None:
    for view in client.views.list(project=project_id):
        data = view.data if isinstance(view.data, dict) else {}
        if data.get("title") == title:
            return int(view.id)
    return None


# -- presentation -----------------------------------------------------------------------
def _shown(x: float | None) -> float:
    """A report number for the table: its null (no value) as NaN, which sorts last and
    prints as ``-``."""
    return math.nan if x is None else float(x)


def annotator_rows(report: Report) -> list[dict[str, Any]]:
    """One row per annotator, least reliable first (then lowest σ).

    Keys: ``annotator``, ``name``, ``reliability`` and ``reliability_ci`` (the annotator
    model's share of sound answers, issue 22), ``sigma``, ``alpha`` (the report's
    project-level, pair-weighted summary), ``ci`` (pair-weighted mean of the per-control σ
    interval bounds: conservative, wider than an interval of the pooled σ), ``n_items`` and
    ``controls`` (control -> σ).
    """
    rows = []
    for ann, e in report.annotators.items():
        per = {c: _shown(v.sigma) for c, v in e.controls.items()}
        lo = hi = w = 0.0
        for c, v in e.controls.items():
            entry = report.controls[c].annotators.get(ann)
            ci = entry.ci.sigma if entry is not None and entry.ci is not None else (None, None)
            if v.n_pairs > 0 and ci[0] is not None and ci[1] is not None:
                lo, hi, w = lo + v.n_pairs * ci[0], hi + v.n_pairs * ci[1], w + v.n_pairs
        rel_ci = tuple(_shown(x) for x in e.reliability_ci)
        rows.append({"annotator": ann, "name": e.name or ann, "reliability": _shown(e.reliability),
                     "reliability_ci": rel_ci, "sigma": _shown(e.sigma), "alpha": _shown(e.alpha),
                     "ci": (lo / w, hi / w) if w else (math.nan, math.nan), "n_items": e.n_items,
                     "controls": per})
    rows.sort(key=lambda r: (math.isnan(r["reliability"]), 0.0 if math.isnan(r["reliability"]) else r["reliability"],
                             math.isnan(r["sigma"]), r["sigma"]))
    return rows


def _f(x: float, width: int = 6) -> str:
    return f"{'-':>{width}}" if math.isnan(x) else f"{x:{width}.3f}"


def format_table(rows: list[dict[str, Any]]) -> str:
    """Plain-text table of :func:`annotator_rows`: overall numbers, then σ per control."""
    width = max([len(r["name"]) for r in rows] + [9])
    controls = sorted({c for r in rows for c in r["controls"]})
    cw = [max(len(c), 6) for c in controls]
    head = (f"{'annotator':<{width}}  {'reliability':>11}  {'interval':>14}  {'sigma':>6}  {'alpha':>6}  "
            f"{'sigma interval*':>16}  {'tasks':>5}  | " + "  ".join(f"{c:>{w}}" for c, w in zip(controls, cw)))
    lines = [head, "-" * len(head)]
    for k, r in enumerate(rows):
        lo, hi = r["ci"]
        ci = f"{'-':>16}" if math.isnan(lo) else f"[{lo:6.3f}, {hi:6.3f}]"
        rel = r.get("reliability", math.nan)
        rlo, rhi = r.get("reliability_ci", (math.nan, math.nan))
        rci = f"{'-':>14}" if math.isnan(rlo) else f"[{rlo:5.2f}, {rhi:5.2f}]"
        per = "  ".join(_f(r["controls"].get(c, math.nan), w) for c, w in zip(controls, cw))
        mark = ("" if k else "   <- least reliable" if not math.isnan(rel)
                else "   <- lowest agreement" if not math.isnan(r["sigma"]) else "")
        lines.append(f"{r['name']:<{width}}  {_f(rel, 11)}  {rci:>14}  {_f(r['sigma'])}  {_f(r['alpha'])}  "
                     f"{ci:>16}  {r['n_items']:5d}  | {per}{mark}")
    lines.append("reliability: the annotator model's share of sound answers, 95% interval (README, "
                 "'How tasks are flagged')")
    lines.append("* pair-weighted mean of the per-control 95% bootstrap bounds (conservative)")
    return "\n".join(lines)


def print_summary(outcome: DemoOutcome) -> None:
    url, pid = outcome.server.url, outcome.project_id
    print(f"\nLabel Studio:      {url}  (log in as {outcome.server.email} / "
          f"{outcome.server.password})")
    print(f"Sample project:    {url}/projects/{pid}/data")
    if outcome.view_id is not None:
        print(f"Low agreement:     {url}/projects/{pid}/data?tab={outcome.view_id}")
    else:
        print("Low agreement:     (view not found - did sync create it?)")
    for kind, path in outcome.report_paths.items():
        label = {"report": "Report", "report_html": "Quality page", "annotators_json": "Annotators (JSON)",
                 "annotators_csv": "Annotators (CSV)"}.get(kind, kind)
        print(f"{label + ':':<19}{path}")
    rows = annotator_rows(outcome.report)
    if rows:
        emails = {str(uid): email for email, uid in outcome.user_ids.items()}
        for r in rows:
            if r["name"] == r["annotator"] and r["annotator"] in emails:
                r["name"] = emails[r["annotator"]]
        print("\nPer annotator, least reliable first (sigma: agreement beyond chance, "
              "pair-weighted over the controls):\n" + format_table(rows))
    print(f"\nFlagged tasks: {outcome.report.n_flagged} of {len(outcome.report.tasks)}.")


def run(args: argparse.Namespace) -> int:
    keep = args.keep_running
    if keep is None:
        keep = sys.stdin.isatty() and sys.stdout.isatty()
    outcome = run_demo(args.data_dir, args.port, n_tasks=args.tasks, seed=args.seed,
                       bootstrap=args.bootstrap, fresh=args.fresh)
    try:
        print_summary(outcome)
        if keep:
            print("\nLabel Studio keeps running; press Ctrl-C to stop it.", flush=True)
            try:
                outcome.server.wait()
            except KeyboardInterrupt:
                print("stopping Label Studio ...", file=sys.stderr)
    finally:
        outcome.server.stop()
    return EXIT_OK

"""Running ``ls-agreement report`` on a generated export, and what each scenario demands.

``run_report`` runs the CLI: in this process through ``ls_agreement.plugin.cli.main`` (the
function the ``ls-agreement`` script calls; ``--debug`` so an internal error shows its
traceback) or, with ``LS_AGREEMENT_TEMPLATES_SUBPROCESS=1``, as a subprocess.
``check_report`` lists what is wrong, in words (empty = the scenario's expectations hold):

* every run: no traceback, no exit 1, and -- unless the config has no control but the
  Chat object -- exit 0 with a report; every control of the config is in the report with
  status ``ok``, or ``no_variation`` where the export's answers of that control are all the
  same (a nameless ``<Relations>`` is found by its tag; the
  ``<Labels>`` of a ``<VideoRectangle>`` on a Video counts as measured with the
  VideoRectangle, because Label Studio writes those labels inside the VideoRectangle's
  results, ``mergeLabelsAndResults``); a measured α is a finite number; no warning says
  results were skipped (the export is Label Studio's own format);
* ``identical``: α = 1 (to 1e-9) on every control with status ``ok`` (``no_variation`` is
  the documented status when every value is the same);
* ``careless``: on every ``ok`` control the careless annotator has the lowest σ and the
  lowest α of all annotators (strictly);
* ``random``: \\|α\\| < 0.15 on every ``ok`` control.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import os
import subprocess
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .answers import VALUE_KEY
from .generator import Generated, Scenario
from .labeling_config import ControlTag, ParsedConfig

__all__ = ["RunResult", "run_report", "check_report", "control_rows", "RANDOM_BOUND", "MEASURED"]

RANDOM_BOUND = 0.15
MEASURED = ("ok", "no_variation")


@dataclass
class RunResult:
    """One ``report`` run: exit code, its output, and the report (None without one)."""

    exit_code: int
    stdout: str
    stderr: str
    report: dict[str, Any] | None
    traceback: str = ""

    def describe(self) -> str:
        tail = (self.traceback or self.stderr).strip().splitlines()[-6:]
        return f"exit {self.exit_code}: " + " | ".join(tail)


def _bootstrap() -> str:
    return os.environ.get("LS_AGREEMENT_TEMPLATES_BOOTSTRAP", "200")


def run_report(config_xml: str, tasks: list[dict[str, Any]], workdir: Path) -> RunResult:
    """``ls-agreement report --config CONFIG EXPORT --out REPORT --debug`` on ``tasks``.

    The bootstrap is ``$LS_AGREEMENT_TEMPLATES_BOOTSTRAP`` resamples (default 200): the
    expectations read point estimates, which do not depend on it.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    cfg, export, out = workdir / "config.xml", workdir / "export.json", workdir / "report.json"
    cfg.write_text(config_xml, encoding="utf-8")
    export.write_text(json.dumps(tasks), encoding="utf-8")
    out.unlink(missing_ok=True)
    argv = ["report", "--config", str(cfg), str(export), "--out", str(out), "--debug",
            "--bootstrap", _bootstrap()]
    tb = ""
    if os.environ.get("LS_AGREEMENT_TEMPLATES_SUBPROCESS"):
        proc = subprocess.run([sys.executable, "-m", "ls_agreement.plugin.cli", *argv],
                              capture_output=True, text=True, timeout=900)
        code, so, se = proc.returncode, proc.stdout, proc.stderr
    else:
        from ls_agreement.plugin.cli import main

        so_buf, se_buf = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(so_buf), contextlib.redirect_stderr(se_buf):
            try:
                code = int(main(argv) or 0)
            except SystemExit as exc:      # argparse and friends
                code = int(exc.code or 0)
            except BaseException:          # noqa: BLE001 - an escaped exception is the finding
                code, tb = 1, traceback.format_exc()
        so, se = so_buf.getvalue(), se_buf.getvalue()
    if "Traceback (most recent call last)" in se and not tb:
        tb = se
    report = json.loads(out.read_text(encoding="utf-8")) if code == 0 and out.exists() else None
    return RunResult(code, so, se, report, tb)


def _find(report: dict[str, Any], c: ControlTag) -> tuple[str, dict[str, Any]] | None:
    controls = report.get("controls", {})
    if c.name is not None and c.name in controls:
        return c.name, controls[c.name]
    if c.name is None:     # a nameless <Relations>: by its tag
        for name, entry in controls.items():
            if str(entry.get("tag", "")).lower() == c.tag:
                return name, entry
    return None


def _merged_into(cfg: ParsedConfig, c: ControlTag) -> ControlTag | None:
    """The VideoRectangle whose results carry this Labels control's labels, if any."""
    if c.tag != "labels":
        return None
    for obj in c.to_names:
        if cfg.objects.get(obj) is not None and cfg.objects[obj].tag == "video":
            for other in cfg.controls_on(obj):
                if other.tag == "videorectangle":
                    return other
    return None


def _varies(gen: Generated, c: ControlTag) -> bool:
    """Whether the export holds two different answers of ``c`` (its own answer for a
    classification, even per region; the whole value -- geometry and labels -- otherwise)."""
    seen: set[str] = set()
    for task in gen.tasks:
        for ann in task["annotations"]:
            for r in ann["result"]:
                if c.name is None:
                    if r.get("type") != "relation":
                        continue
                    v: Any = {k: r.get(k) for k in ("direction", "labels")}
                elif r.get("from_name") != c.name:
                    continue
                elif c.tag in VALUE_KEY:
                    v = r["value"].get(VALUE_KEY[c.tag])
                else:
                    v = r["value"]
                seen.add(json.dumps(v, sort_keys=True))
                if len(seen) > 1:
                    return True
    return False


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def check_report(scenario: Scenario, gen: Generated, run: RunResult) -> list[str]:
    """What is wrong with ``run`` for ``scenario`` (see the module docstring)."""
    problems: list[str] = []
    cfg = gen.config
    if run.traceback:
        problems.append("traceback: " + " | ".join(run.traceback.strip().splitlines()[-4:]))
    if run.exit_code == 1:
        problems.append("exit 1 (internal error): " + run.describe())
    if not cfg.controls:    # nothing but a Chat: a clear refusal (exit 2) is an answer too
        if run.exit_code not in (0, 2):
            problems.append(f"unexpected exit for a config with no control: {run.describe()}")
        return problems
    if run.report is None:
        if run.exit_code != 1:
            problems.append(f"no report ({run.describe()})")
        return problems
    report = run.report
    # the export is what Label Studio writes: none of it may be dropped as unreadable
    for w in report.get("warnings", []):
        if "skipped" in w.lower():
            problems.append("results skipped: " + w[:300])
    for c in cfg.controls:
        label = c.name or f"<{c.tag}>"
        hit = _find(report, c)
        if hit is None:
            host = _merged_into(cfg, c)
            host_hit = _find(report, host) if host is not None else None
            if host_hit is not None and host_hit[1].get("status") in MEASURED:
                continue
            problems.append(f"{label} ({c.tag}): not measured (absent from the report)")
            continue
        name, entry = hit
        status = entry.get("status")
        if status not in MEASURED:
            problems.append(f"{label} ({c.tag}): status {status!r}: {entry.get('reason')}")
            continue
        if status != "ok":
            if _varies(gen, c):
                problems.append(f"{label} ({c.tag}): status 'no_variation' but the export's answers "
                                f"vary: {entry.get('reason')}")
            continue
        alpha = entry.get("alpha")
        if not _finite(alpha):
            problems.append(f"{label} ({c.tag}): status ok but alpha = {alpha!r}")
            continue
        if scenario == "identical" and abs(alpha - 1.0) > 1e-9:
            problems.append(f"{label} ({c.tag}, {entry.get('kind')}): identical answers but alpha = {alpha:.4f}")
        elif scenario == "random" and abs(alpha) >= RANDOM_BOUND:
            problems.append(f"{label} ({c.tag}, {entry.get('kind')}): random answers but alpha = {alpha:.4f}")
        elif scenario == "careless":
            problems.extend(f"{label} ({c.tag}, {entry.get('kind')}): {p}"
                            for p in _careless_problems(entry, gen))
    return problems


def _careless_problems(entry: dict[str, Any], gen: Generated) -> list[str]:
    anns = entry.get("annotators") or {}
    bad = str(gen.careless)
    if bad not in anns:
        return [f"the careless annotator {bad} is not among the control's annotators {sorted(anns)}"]
    out = []
    for key in ("sigma", "alpha"):
        mine = anns[bad].get(key)
        others = {a: v.get(key) for a, v in anns.items() if a != bad}
        if not _finite(mine) or not all(_finite(v) for v in others.values()):
            out.append(f"{key} not a number for some annotator: careless {mine!r}, others {others}")
        elif not all(mine < v for v in others.values()):
            out.append(f"careless annotator not lowest by {key}: {mine:.3f} vs "
                       + ", ".join(f"{a}: {v:.3f}" for a, v in others.items()))
    return out


def careless_rank(entry: dict[str, Any], gen: Generated, key: str) -> int | None:
    """The careless annotator's rank by ``key`` (1 = lowest), None when unknown."""
    anns = entry.get("annotators") or {}
    mine = anns.get(str(gen.careless), {}).get(key)
    if not _finite(mine):
        return None
    return 1 + sum(1 for a, v in anns.items() if a != str(gen.careless) and _finite(v.get(key)) and v[key] <= mine)


@dataclass
class Row:
    """One line of the summary table: a control of a template across the scenarios."""

    template: str
    control: str
    tag: str
    kind: str = ""
    cells: dict[str, str] = field(default_factory=dict)


def control_rows(template: str, scenario: Scenario, gen: Generated, run: RunResult) -> list[Row]:
    """The summary cells one run gives, per control (``identical``/``random``: α or the
    status; ``careless``: the careless annotator's rank by α and by σ, 1 = lowest)."""
    rows = []
    for c in gen.config.controls:
        row = Row(template, c.name or f"<{c.tag}>", c.tag)
        hit = _find(run.report, c) if run.report else None
        if hit is None:
            cell = f"exit {run.exit_code}" if run.report is None else "absent"
        else:
            entry = hit[1]
            row.kind = str(entry.get("kind", ""))
            status = entry.get("status")
            if status != "ok":
                cell = str(status)
            elif scenario == "careless":
                ra, rs = careless_rank(entry, gen, "alpha"), careless_rank(entry, gen, "sigma")
                cell = f"α#{ra} σ#{rs}"
            else:
                a = entry.get("alpha")
                cell = f"{a:.3f}" if _finite(a) else str(a)
        row.cells[scenario] = cell
        rows.append(row)
    return rows

"""``ls-agreement report``: agreement of an exported project, offline.

Runs the adapters and the metrics on a Label Studio JSON export (or snapshot export) and
its labeling config, for every control tag, and writes the report as JSON (the contract
of ``ls_agreement.plugin.report.build.build_report``), CSV (two tables) or the HTML quality
page. Errors are raised and turned into exit codes by ``cli.main`` (0 ok, 2 bad input, 1
internal error, its traceback with ``--debug``).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from ..errors import BadInput
from .common import EXIT_OK

HELP = "Compute agreement for every control tag of an exported project (offline) and write a report."



def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``ls-agreement report``."""
    parser.add_argument("export", metavar="EXPORT.json", help="Label Studio JSON export or snapshot export")
    parser.add_argument("--config", required=True, metavar="CONFIG.xml", help="labeling config (XML file)")
    parser.add_argument("--distance", action="append", default=[], metavar="FROM_NAME=NAME",
                        help="distance for one control (repeatable); default: auto (best KS)")
    parser.add_argument("--settings", metavar="FILE.toml", help="settings file (flat or [report] table)")
    parser.add_argument("--format", choices=("json", "csv", "html"), default="json", help="output format")
    parser.add_argument("--out", metavar="PATH", help="output file (default: stdout); for csv the "
                        "per-annotator table goes to PATH with '.annotators' before the suffix")
    parser.add_argument("--strict", action="store_true", help="fail on the first bad task/annotation/result")
    parser.add_argument("--include-predictions", action="store_true",
                        help="count predictions as annotators model:<model_version>")
    parser.add_argument("--bootstrap", type=int, metavar="B", help="bootstrap resamples (default 1000)")
    parser.add_argument("--seed", type=int, help="random seed (default 0)")
    parser.add_argument("--workers", type=int, default=0, metavar="N",
                        help="measure the controls in up to N worker processes (default 0: one per "
                             "control, up to the CPUs; 1: all in this process); the numbers do not change")
    parser.add_argument("--memory", type=float, metavar="GB",
                        help="with workers, the memory the report's processes may hold while the controls "
                             "are measured: a control's worker starts only where its expected peak fits "
                             "(default 2, or 80%% of the available memory where less); the numbers do not change")


def _settings(args: argparse.Namespace):  # -> ReportSettings
    from ls_agreement.plugin.settings import ReportSettings, load_settings

    settings = load_settings(args.settings).report if args.settings else ReportSettings()
    for spec in args.distance:
        name, sep, dist = spec.partition("=")
        if not sep or not name.strip() or not dist.strip():
            raise BadInput(f"--distance expects FROM_NAME=NAME, got {spec!r}")
        settings.distances[name.strip()] = dist.strip()
    try:
        settings.distances = ReportSettings.from_mapping({"distances": settings.distances}).distances
    except BadInput as exc:
        raise BadInput(f"--distance: {exc}") from None
    if args.strict:
        settings.strict = True
    if args.include_predictions:
        settings.include_predictions = True
    if args.bootstrap is not None:
        if args.bootstrap < 0:
            raise BadInput(f"--bootstrap must be >= 0, got {args.bootstrap}")
        settings.bootstrap = args.bootstrap
    if args.seed is not None:
        if args.seed < 0:
            raise BadInput(f"--seed must be >= 0, got {args.seed}")
        settings.seed = args.seed
    return settings.validate()


@contextmanager
def _replacing(path: str) -> Iterator[BinaryIO]:
    """A file written beside ``path`` that replaces it once complete: a run that fails while
    writing leaves the previous output as it was, never a cut one."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.part")   # created as open() creates: umask's mode
    try:
        with open(tmp, "wb") as fh:
            yield fh
        os.replace(tmp, target)
    except OSError as exc:
        raise BadInput(f"cannot write {path!r}: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)


def _write(text: str, path: str | None) -> None:
    if path is None:
        sys.stdout.write(text)
        if not text.endswith("\n"):
            sys.stdout.write("\n")
        return
    with _replacing(path) as fh:
        fh.write(text.encode("utf-8"))


def _write_json(report, path: str | None) -> None:
    """The report's JSON streamed to ``path`` (stdout when None), as :func:`_write` writes
    text: the text of a big report is never held whole (issue 24)."""
    if path is None:
        sys.stdout.flush()
        report.write_json(sys.stdout.buffer, indent=1)
        sys.stdout.buffer.write(b"\n")
        sys.stdout.buffer.flush()
        return
    with _replacing(path) as fh:
        report.write_json(fh, indent=1)


def _rendered(render, report):
    """``render(report)`` with Python warnings (numpy's) turned into report
    warnings, never raw lines on stderr; rendered again when there were some, so the page
    lists them."""
    from ls_agreement.plugin.report.build import collect_warnings

    caught: list[str] = []
    with collect_warnings(caught, "rendering the report"):
        out = render(report)
    if not caught:
        return out
    report.warnings.extend(caught)
    with collect_warnings([], "rendering the report"):
        return render(report)


def run(args: argparse.Namespace) -> int:
    """Build the report and write it; return 0 (errors are raised, see plugin/cli.py)."""
    from ls_agreement.adapters.gc_pause import gc_paused
    from ls_agreement.plugin.report.build import build_report
    from ls_agreement.adapters.export_stream import ExportFile

    settings = _settings(args)
    try:
        config_xml = Path(args.config).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read config {args.config!r}: {exc}") from None
    # read task by task while adapting (never the whole export in memory; issue 24), in
    # parts side by side with worker processes: a file-level error is raised from inside
    # build_report, before anything is written
    if args.workers < 0:
        raise BadInput(f"--workers must be >= 0, got {args.workers}")
    if args.memory is not None and not (args.memory > 0 and math.isfinite(args.memory)):
        raise BadInput(f"--memory must be a positive number of GB, got {args.memory}")
    report = build_report(config_xml, ExportFile(args.export), settings, workers=args.workers,
                          memory=None if args.memory is None else int(args.memory * 1e9))
    # writing makes no reference cycles, but its allocations set off full collections, each
    # walking the whole report (0.45 s each at 100,000 tasks: 2 s of the run's serial tail
    # with the roll-up); the process ends after it
    with gc_paused():
        _write_outputs(args, report)
    n_warn = len(report.warnings)
    if n_warn:
        print(f"{n_warn} warning(s); see the report's 'warnings'", file=sys.stderr)
    return EXIT_OK


def _write_outputs(args: argparse.Namespace, report) -> None:
    """The report in ``args.format`` to ``args.out`` (and its side files for csv)."""
    from ls_agreement.plugin.report.render import render_csv, render_html

    if args.format == "json":
        _write_json(report, args.out)
    elif args.format == "html":
        _write(_rendered(render_html, report), args.out)
    else:
        tasks_csv, ann_csv = _rendered(render_csv, report)
        if args.out:
            out = Path(args.out)
            _write(tasks_csv, str(out))
            _write(ann_csv, str(out.with_name(out.stem + ".annotators" + (out.suffix or ".csv"))))
            # issue 13: the annotator × annotator matrices and the per-label table beside them
            from ls_agreement.plugin.report.render import render_labels_csv, render_pairs_csv

            _write(render_pairs_csv(report), str(out.with_name(out.stem + ".pairs" + (out.suffix or ".csv"))))
            _write(render_labels_csv(report), str(out.with_name(out.stem + ".labels" + (out.suffix or ".csv"))))
        else:
            _write(tasks_csv + "\n" + ann_csv, None)

"""``ls-agreement sync``: compute agreement for a project on a running Label Studio and
write it back (task fields, Data Manager views, per-annotator report files)."""
from __future__ import annotations

import argparse
import sys
from .common import EXIT_OK, add_server_arguments

HELP = ("Read a project from a running Label Studio, compute agreement for every control "
        "tag, and write the results back (task data/meta, views, report files).")



def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``ls-agreement sync``."""
    add_server_arguments(parser)
    parser.add_argument("--project", type=int, required=True, help="project id")
    parser.add_argument("--settings", help="TOML settings file ([report], [sync] tables)")
    parser.add_argument("--state", help="SQLite state file (default: <out>/state.sqlite)")
    parser.add_argument("--out", help="report folder "
                        "(default: ./ls-agreement-reports/project-<id>/)")
    parser.add_argument("--quiet", action="store_true", help="no progress output")


def run(args: argparse.Namespace) -> int:
    """Run the sync; print a summary; return 0 (errors are raised, see plugin/cli.py)."""
    from ..errors import BadInput
    from ..settings import load_settings
    from ..sync import sync_project

    if not args.url or not args.token:
        raise BadInput("--url and --token are required (or LABEL_STUDIO_URL / LABEL_STUDIO_API_KEY)")
    settings = load_settings(args.settings)
    res = sync_project(args.url, args.token, args.project, settings,
                       state_path=args.state, progress=not args.quiet, out_dir=args.out)
    print(f"project {res.project_id}: {res.n_tasks} tasks, {len(res.report.controls)}"
          f" control(s), {res.report.n_flagged} flagged; wrote {res.n_written} task(s), "
          f"{res.skipped} already up to date")
    for name, c in res.report.controls.items():
        print(f"  {name:<20} {c.distance!s:<16} alpha={_fmt(c.alpha)} "
              f"sigma={_fmt(c.sigma)} items={c.n_items}")
    if res.views is not None and (res.views.created or res.views.updated):
        print(f"views: created {len(res.views.created)}, updated {len(res.views.updated)}")
    for w in res.warnings[:10]:
        print(f"warning: {w}", file=sys.stderr)
    print(f"report: {res.report_paths['report'].parent}")
    return EXIT_OK


def _fmt(x: object) -> str:
    return f"{x:.3f}" if isinstance(x, (int, float)) else "n/a"

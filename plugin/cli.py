"""`ls-agreement` command line: one sub-command per module in ``plugin/commands``.

Exit codes scripts can rely on (``commands/common.py``): 0 ok, 1 internal error,
2 bad input or usage, 3 Label Studio unreachable or refused (auth, unknown project,
server errors).
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

# sub-command -> module under ls_agreement.plugin.commands; each module defines
# `HELP: str`, `add_arguments(parser)` and `run(args) -> int`.
COMMANDS = {
    "report": "report",
    "sync": "sync",
    "connect": "connect",
    "serve": "serve",
    "worker": "worker",
    "demo": "demo",
}

from .commands.common import EXIT_BAD_INPUT


def package_version() -> str:
    """The installed distribution's version: setup.cfg's ``version`` is the one place it is kept."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ls-agreement")
    except PackageNotFoundError:   # run from a checkout that was never installed
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ls-agreement",
        description="Chance-corrected annotator agreement for Label Studio projects.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        try:
            module = importlib.import_module(f"{__package__}.commands.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.endswith(f"commands.{module_name}"):
                continue  # command not built yet
            raise
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

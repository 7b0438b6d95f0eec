"""`ls-agreement` command line: one sub-command per module in ``plugin/commands``.

Exit codes scripts can rely on (one table: ``plugin/errors.py``): 0 ok, 1 internal error,
2 bad input or usage, 3 Label Studio unreachable or refused (auth, unknown project,
server errors). The commands raise; :func:`main` alone turns an exception into a message
and its exit code, with the traceback of an internal error under ``--debug``.
"""
from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from typing import Sequence

# sub-command -> module (under ls_agreement.plugin.commands, or a full module name); each
# module defines `HELP: str`, `add_arguments(parser)` and `run(args) -> int`. `demo` lives
# in its own package (ls_agreement.demo: a local Label Studio and a sample project), which
# nothing of the service imports; where it is not installed the command is not offered.
COMMANDS = {
    "report": "report",
    "sync": "sync",
    "connect": "connect",
    "serve": "serve",
    "worker": "worker",
    "demo": "ls_agreement.demo.command",
}

from .errors import EXIT_BAD_INPUT, EXIT_INTERNAL, AgreementError, describe, exit_code


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
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true",
                        help="print the traceback of an internal error (exit code 1)")
    for name, module_name in COMMANDS.items():
        full = module_name if "." in module_name else f"{__package__}.commands.{module_name}"
        try:
            module = importlib.import_module(full)
        except ModuleNotFoundError as exc:
            if exc.name and full.startswith(exc.name):
                continue  # the command's package is not installed
            raise
        p = sub.add_parser(name, help=module.HELP, description=module.HELP, parents=[common])
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
    except Exception as exc:  # noqa: BLE001 - the one place an exception becomes an exit code
        code = exit_code(exc)
        if code == EXIT_INTERNAL and getattr(args, "debug", False):
            traceback.print_exc()
        print(describe(exc), file=sys.stderr)
        if code == EXIT_INTERNAL and not isinstance(exc, AgreementError) and not getattr(args, "debug", False):
            print("(a bug: run again with --debug for the traceback, and please report it)", file=sys.stderr)
        return code


if __name__ == "__main__":
    sys.exit(main())

"""What every sub-command shares: exit codes scripts rely on, and the server options."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

__all__ = ["EXIT_OK", "EXIT_INTERNAL", "EXIT_BAD_INPUT", "EXIT_SERVER", "add_server_arguments",
           "add_service_arguments", "DEFAULT_OUT", "DEFAULT_STATE", "SECRET_ENV", "QUEUE_ENV", "add_queue_arguments"]

# the one exit-code table lives with the error hierarchy
from ..errors import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_OK, EXIT_SERVER


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """``--url`` and ``--token`` (legacy token or personal access token), with env defaults."""
    parser.add_argument("--url", default=os.environ.get("LABEL_STUDIO_URL"),
                        help="Label Studio base URL (default: $LABEL_STUDIO_URL)")
    parser.add_argument("--token", default=os.environ.get("LABEL_STUDIO_API_KEY"),
                        help="legacy API token or personal access token "
                             "(default: $LABEL_STUDIO_API_KEY)")


# `connect` records projects in the state file that `serve` then works from
DEFAULT_OUT = Path("ls-agreement-reports")
DEFAULT_STATE = DEFAULT_OUT / "serve.sqlite"
SECRET_ENV = "LS_AGREEMENT_WEBHOOK_SECRET"
QUEUE_ENV = "LS_AGREEMENT_QUEUE"


def add_queue_arguments(parser: argparse.ArgumentParser) -> None:
    """``--queue`` and the lease: shared by ``connect``, ``serve`` and ``worker``."""
    parser.add_argument("--queue", default=os.environ.get(QUEUE_ENV) or None,
                        metavar="redis://HOST:PORT/DB",
                        help="the job queue past one machine: Redis, jobs run by `ls-agreement "
                             f"worker` processes (default: ${QUEUE_ENV}; unset = the embedded "
                             "SQLite queue in --state, run by serve itself)")
    parser.add_argument("--lease", type=float, default=30.0,
                        help="with --queue: seconds a running job's heartbeat lasts (whole "
                             "seconds); a killed worker's job goes to another after it (default 30)")


def add_service_arguments(parser: argparse.ArgumentParser) -> None:
    """``--secret``, ``--state``, ``--out``, ``--settings``: shared by ``connect`` and ``serve``."""
    parser.add_argument("--secret", default=os.environ.get(SECRET_ENV),
                        help=f"shared secret of the webhook header (default: ${SECRET_ENV})")
    parser.add_argument("--state", type=Path, default=DEFAULT_STATE,
                        help=f"SQLite file for jobs, served projects and sync state (default {DEFAULT_STATE})")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"report folder root (default {DEFAULT_OUT}/)")
    parser.add_argument("--settings", help="TOML settings file ([report], [sync] tables)")

"""What every sub-command shares: exit codes scripts rely on, and the server options."""
from __future__ import annotations

import argparse
import os

__all__ = ["EXIT_OK", "EXIT_INTERNAL", "EXIT_BAD_INPUT", "EXIT_SERVER", "add_server_arguments"]

# 0 ok, 1 internal error, 2 bad input or usage, 3 Label Studio unreachable or refused
EXIT_OK, EXIT_INTERNAL, EXIT_BAD_INPUT, EXIT_SERVER = 0, 1, 2, 3


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """``--url`` and ``--token`` (legacy token or personal access token), with env defaults."""
    parser.add_argument("--url", default=os.environ.get("LABEL_STUDIO_URL"),
                        help="Label Studio base URL (default: $LABEL_STUDIO_URL)")
    parser.add_argument("--token", default=os.environ.get("LABEL_STUDIO_API_KEY"),
                        help="legacy API token or personal access token "
                             "(default: $LABEL_STUDIO_API_KEY)")

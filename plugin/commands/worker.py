"""``ls-agreement worker --queue redis://HOST:PORT/DB``: run the jobs ``serve --queue``
enqueues (plugin/queue/rq_worker.py). Start any number, on any machine that reaches Redis
and Label Studio; two never work on one project at once (RQ's rate limit of one job per
project), and the job of a worker killed mid-way goes to another once its heartbeat, renewed
every lease/3 s, is ``--lease`` s old.

SIGTERM or Ctrl-C: RQ's warm shutdown (the current job finishes first).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Sequence

from .common import (DEFAULT_OUT, EXIT_OK, add_queue_arguments,
                     add_server_arguments)

HELP = ("Run the jobs of `serve --queue redis://…` (RQ on Redis): agreement recomputed and "
        "pushed back; any number of workers, on any machine.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``ls-agreement worker``."""
    add_server_arguments(parser)
    add_queue_arguments(parser)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"report folder root on this machine (default {DEFAULT_OUT}/); "
                             "serve's pages read the reports from Redis")
    parser.add_argument("--state", type=Path, default=None,
                        help="this worker's SQLite sync bookkeeping (default: "
                             "<out>/worker-<host>.sqlite; nothing in it is shared)")
    parser.add_argument("--settings", help="TOML settings file ([report], [sync] tables); "
                                           "give every worker and serve the same one")
    parser.add_argument("--max-attempts", type=int, default=3,
                        help="tries per job before it is marked failed (default 3)")
    parser.add_argument("--retry-backoff", type=float, default=5.0,
                        help="seconds before the first retry, doubled after each (default 5)")
    parser.add_argument("--name", help="RQ worker name (default: ls-agreement-<host>-<pid>)")
    parser.add_argument("--wait", type=float, default=30.0,
                        help="seconds to wait for Redis to answer at start-up (default 30)")
    parser.add_argument("--burst", action="store_true",
                        help="exit once the queue is empty (batch runs, tests)")
    parser.add_argument("--quiet", action="store_true", help="no job log lines")


def run(args: argparse.Namespace) -> int:
    """Work until SIGTERM/SIGINT; return an exit code (see plugin/cli.py)."""
    import socket

    from ..errors import BadInput, QueueUnavailable
    from ..live.runner import LiveRunner
    from ..queue import is_redis_url
    from ..queue.redis_queue import RedisQueue
    from ..queue.rq_worker import WorkerProcess
    from ..queue.shared_state import SharedProjects
    from ..settings import load_settings

    log = None if args.quiet else sys.stderr
    if not args.queue or not is_redis_url(args.queue):
        raise BadInput("--queue redis://HOST:PORT/DB is required (or $LS_AGREEMENT_QUEUE): "
                       "the worker runs the jobs `serve --queue` puts in Redis")
    if not args.url or not args.token:
        raise BadInput("--url and --token are required (or LABEL_STUDIO_URL / "
                       "LABEL_STUDIO_API_KEY)")
    if not args.url.strip().startswith(("http://", "https://")):
        raise BadInput(f"--url must start with http:// or https:// (got {args.url!r})")
    if args.max_attempts < 1 or args.retry_backoff < 0 or args.lease <= 0 or args.wait < 0:
        raise BadInput("--max-attempts must be >= 1, --retry-backoff >= 0, --lease > 0, "
                       "--wait >= 0")
    settings = load_settings(args.settings)
    queue = RedisQueue(args.queue, max_attempts=args.max_attempts,
                       backoff=args.retry_backoff, lease=args.lease)
    # Redis may come up after the worker (a compose start, a restart): wait a while
    deadline = time.monotonic() + args.wait
    while True:
        try:
            queue.ping()
            break
        except QueueUnavailable:
            if time.monotonic() >= deadline:
                raise
            time.sleep(1.0)
    dur = queue.durability()
    if dur and (dur.get("appendonly") != "yes" or dur.get("appendfsync") != "always"):
        print(f"warning: Redis runs with appendonly={dur.get('appendonly')} appendfsync="
              f"{dur.get('appendfsync')}: acknowledged webhook events can be lost if it "
              "crashes (use --appendonly yes --appendfsync always)", file=sys.stderr)
    state = args.state or Path(args.out) / f"worker-{socket.gethostname()}.sqlite"
    runner = LiveRunner(args.url.strip().rstrip("/"), args.token, settings, queue, state,
                        args.out, log=log, shared=SharedProjects(queue.r, log=log))
    WorkerProcess(queue, runner, name=args.name, log=log).run(burst=args.burst)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ls_agreement.plugin.commands.worker``: ``ls-agreement worker``, exit codes included."""
    from ..cli import main as cli_main

    return cli_main(["worker", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())

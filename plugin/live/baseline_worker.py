"""A baseline made in a worker process, so that the service's own process goes on serving events.

Making a baseline runs the whole report over the project: minutes of CPU on a large one
(about 290 s at 100,000 demo tasks) and, at its peak, everything the report's measures
hold. In a thread of the service it took the interpreter from the event path — events
during a 3,000-task baseline: median 63 ms, max 0.5 s, against 40 and 52 ms idle — and its
peak was the service's own. Here a spawned process (the service runs threads, so it is
not forked) makes the baseline and sends it back in blocks (the per-task entries a few
thousand at a time): the service's thread holds the interpreter only while it unpickles
one block. The worker does not hold the mirror: each time the baseline reads the
project's tasks (twice where a control has the ordinal level), it asks the service, which
streams the snapshot's packed tasks a block at a time, and unpacks them one by one.

What the worker raises is raised here as it was raised there (a bad export is still a
:class:`~ls_agreement.plugin.errors.BadInput`); a worker that dies (killed, out of memory)
is a :class:`BaselineWorkerDied`, and the baseline in place stays.
"""
from __future__ import annotations

import gc
import multiprocessing as mp
import os
import pickle
import threading
import time
import traceback
import warnings
import dataclasses
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Iterable, Iterator, Mapping

from ..report.model import chunks
from ..settings import ReportSettings
from .baseline import ProjectBaseline, make_baseline
from .mirror import ProjectMirror

__all__ = ["BaselineWorkerDied", "BaselineWorkerDidNotStart", "make_baseline_in_worker"]

#: Tasks per message to the worker (packed: about 10 MB at the demo's size).
_TASKS_PER_BLOCK = 2000
#: Per-task entries per message back (one unpickling holds the service's interpreter).
_ENTRIES_PER_BLOCK = 5000
_JOIN_SECONDS = 10.0
_WATCH_SECONDS = 1.0


class BaselineWorkerDied(RuntimeError):
    """The worker process ended without sending a baseline (killed, out of memory)."""


class BaselineWorkerDidNotStart(BaselineWorkerDied):
    """The worker ended before it asked for the tasks: a spawned interpreter could not start
    here (its parent's ``__main__`` cannot be re-imported — a script read from standard
    input —, a frozen application, no ``sys.executable``)."""


@dataclass(frozen=True)
class _Start:
    config_xml: str
    settings: ReportSettings
    reason: str
    names: dict[str, str]


class _ServiceTasks:
    """In the worker: the snapshot's tasks, asked of the service each time they are read
    (:class:`~.baseline.TaskSource`)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def iter_tasks(self) -> Iterator[dict[str, Any]]:
        self.conn.send(("send",))
        while (msg := self.conn.recv())[0] == "tasks":
            for task in msg[1]:
                yield task.as_task()


def make_baseline_in_worker(config_xml: str, mirror: ProjectMirror, settings: ReportSettings, *,
                            reason: str = "", annotator_names: Mapping[str, str] | None = None,
                            fallback: bool = False) -> ProjectBaseline:
    """:func:`~.baseline.make_baseline` in a spawned process; the same baseline.

    ``fallback``: where no worker can start here (:class:`BaselineWorkerDidNotStart`), make
    the baseline in this process instead, with a warning, rather than fail every baseline.

    Raises
    ------
    BadInput, ValueError
        What ``make_baseline`` raised in the worker.
    BaselineWorkerDied
        The worker ended without a baseline (:class:`BaselineWorkerDidNotStart`: before it
        asked for the tasks, unless ``fallback``).
    """
    try:
        return _in_worker(config_xml, mirror, settings, reason, annotator_names)
    except BaselineWorkerDidNotStart as exc:
        if not fallback:
            raise
        warnings.warn(f"{exc}: the baseline is made in this process", RuntimeWarning, stacklevel=2)
        return make_baseline(config_xml, mirror, settings, reason=reason, annotator_names=annotator_names)


def _in_worker(config_xml: str, mirror: ProjectMirror, settings: ReportSettings, reason: str,
               annotator_names: Mapping[str, str] | None) -> ProjectBaseline:
    ctx = mp.get_context("spawn")
    ours, theirs = ctx.Pipe(duplex=True)
    proc = ctx.Process(target=_work, args=(theirs,), name="ls-agreement-baseline", daemon=True)
    proc.start()
    theirs.close()
    asked, collector = False, gc.isenabled()
    try:
        try:
            ours.send(_Start(config_xml, settings, reason, dict(annotator_names or {})))
            while (msg := _held(ours))[0] == "send":
                if collector:        # a request for the tasks: the baseline is not coming yet
                    gc.enable()
                asked = True
                _send_tasks(ours, mirror)
            return _receive(ours, msg)
        except (EOFError, BrokenPipeError, ConnectionResetError):
            proc.join(_JOIN_SECONDS)
            died = BaselineWorkerDied if asked else BaselineWorkerDidNotStart
            raise died(f"the baseline worker process ended without a baseline "
                       f"(exit code {proc.exitcode})") from None
    finally:
        if collector:
            gc.enable()
        ours.close()
        proc.join(_JOIN_SECONDS)
        if proc.is_alive():
            proc.kill()
            proc.join()


def _send_tasks(conn: Connection, mirror: ProjectMirror) -> None:
    """Every task of the snapshot, packed, a block at a time. A worker that stopped reading
    (it failed while reading them) has sent why: it is read next."""
    try:
        for block in chunks((mirror.tasks[t] for t in sorted(mirror.tasks)), _TASKS_PER_BLOCK):
            conn.send(("tasks", block))
        conn.send(("end",))
    except (BrokenPipeError, ConnectionResetError):
        pass


def _receive(conn: Connection, head: tuple[Any, ...]) -> ProjectBaseline:
    """The baseline, its head then its blocks, read with the collector off (:func:`_held`);
    frozen once the last block is in."""
    if head[0] == "raised":
        raise head[1]
    base: ProjectBaseline = head[1]
    while True:
        msg = _held(conn)
        if msg[0] == "entries":
            base.report.add_entries(msg[1], msg[2])
        else:
            gc.freeze()
            return base


def _held(conn: Connection) -> Any:
    """The next message, waited for with the collector as it is and unpickled with it off;
    the caller switches it back on (:func:`_in_worker`'s ``finally``).

    Unpickling the baseline (its head, then blocks of 5,000 per-task entries) allocates
    enough to set off the collector's full pass, which walks every tracked object of the
    service. Measured at 10,000 demo tasks: one pass of about 300 ms as the head or a block
    was unpickled, and the event beside it waited as long (the worst of 335 events, 386 ms,
    against 54 ms idle). The entries are kept until the next baseline and hold no
    reference cycles, so the collector has nothing to find in them: once the last block
    is in they are frozen (``gc.freeze``), freed by reference counting when the baseline is
    replaced and never walked again. The switch is process-wide: for the second or two
    the blocks take, the service's other threads run without collections, and reference
    cycles they dropped in those seconds are frozen with the baseline (kept, never freed);
    the event path makes few. A receipt that fails freezes nothing."""
    raw = conn.recv_bytes()
    gc.disable()
    return pickle.loads(raw)


def _work(conn: Connection) -> None:
    """The worker: make the baseline, send it back in blocks. Once the service is gone
    there is nobody to answer: it ends — at its next message if the service's end of the
    pipe closed, within a second if the service was killed while the worker computes
    (:func:`_end_with_the_service`)."""
    _end_with_the_service(os.getppid())
    try:
        _make_and_send(conn)
    except (EOFError, BrokenPipeError, ConnectionResetError):
        pass
    finally:
        conn.close()


def _make_and_send(conn: Connection) -> None:
    try:
        start: _Start = conn.recv()
        base = make_baseline(start.config_xml, _ServiceTasks(conn), start.settings, reason=start.reason,
                             annotator_names=start.names)
    except (EOFError, BrokenPipeError, ConnectionResetError):
        raise
    except Exception as exc:   # sent back whole, raised there as it was raised here
        conn.send(("raised", _sendable(exc)))
        return
    conn.send(("baseline", dataclasses.replace(base, report=base.report.without_entries())))
    for control, block in base.report.entry_blocks(_ENTRIES_PER_BLOCK):
        conn.send(("entries", control, block))
    conn.send(("end",))


def _end_with_the_service(service: int) -> None:
    """A daemon thread that ends this process once its parent is no longer ``service``: a
    killed service runs no exit handler, and a baseline of a large project computes for
    minutes before it next writes to the pipe."""
    def watch() -> None:
        while os.getppid() == service:
            time.sleep(_WATCH_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="ls-agreement-baseline-watch", daemon=True).start()


def _sendable(exc: Exception) -> Exception:
    """The exception itself if it survives pickling, else a RuntimeError with its text."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")

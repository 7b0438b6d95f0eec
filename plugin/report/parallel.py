"""Each control of a report measured in its own worker process (issue 24.1: bounded memory,
work divided by control).

A report's controls are independent until the project-level roll-up (flags over controls,
a task's weakest σ, an annotator's means), so :func:`measure_controls` runs ``measure(ctl)``
for every control in at most ``workers`` forked worker processes and hands the entries back
in the controls' order. Why fork:

- A forked worker already holds what this process holds (copy-on-write). The adapted
  controls themselves come from the reading child as files (:class:`SpilledControls`):
  each worker reads back its own control alone, so neither it nor this process holds the
  others'. What a worker holds is bounded by its control's data, never the export.
- Only the control's :class:`~.model.ControlReport` travels back (pickled, through a pipe
  of its own).
- No thread is ever started here (``multiprocessing.Process`` and pipes, not a pool whose
  manager threads would be running when the next worker forks): a fork copies one thread,
  and any lock another thread held at that moment would stay held in the child forever.
- The same seed gives the same numbers: every control's resampling draws from its own
  generator seeded by ``settings.seed`` (``metrics.bootstrap``), never from a stream shared
  with the other controls, so the order in which controls run changes nothing.

Reading the export comes first and is one pass over it: :func:`run_forked` runs it in a
child (not daemonic, so that it may fork children of its own), which reads the export's
parts side by side with :func:`map_forked` (``build._read_in_parts``).

The largest controls start first (longest-first keeps the workers busy to the end), each
in a fresh process that ends with it, so a worker's memory is one control's at a time. A
worker that fails for any reason (a result that will not pickle, a killed process) is not
the end of the report: that control is measured again here, in this process, so its real
error -- with its traceback -- is the one raised. Fork is used only where it is safe and
available (POSIX, called from the main thread: forking a process whose other threads hold
locks can deadlock the child); otherwise, or with ``workers <= 1`` or one control, the
controls run one after the other in this process, as before.
"""
from __future__ import annotations

import gc
import math
import multiprocessing
import os
import pickle
import threading
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Iterator, Mapping, MutableMapping, TypeVar

from ls_agreement.adapters.control import ControlData
from ls_agreement.adapters.gc_pause import gc_paused

from .budget import UNPICKLED_PER_BYTE, held_bytes

__all__ = ["measure_controls", "default_workers", "run_forked", "map_forked", "cpu_count", "SpilledControls"]

R = TypeVar("R")


def cpu_count() -> int:
    """The CPUs this process may run on (``sched_getaffinity``: a container's share, not the host's)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_workers(n_controls: int) -> int:
    """Workers for a report of ``n_controls`` controls: one per control, at most the CPUs
    this process may run on."""
    return max(1, min(n_controls, cpu_count()))


def _fork_ok() -> bool:
    return ("fork" in multiprocessing.get_all_start_methods()
            and threading.current_thread() is threading.main_thread()
            and threading.active_count() == 1)


def _child(send: Connection, fn: Callable[[], Any]) -> None:
    """In a forked child: ``(True, fn())``, or ``(False, the error)``, pickled to ``send``."""
    try:
        value = fn()
        with gc_paused():    # pickling makes a state tuple per object and no cycles: see _decode
            payload = pickle.dumps((True, value), protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException as exc:      # whatever it is, the parent decides (re-raise or re-run)
        try:
            payload = pickle.dumps((False, exc), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:
            payload = pickle.dumps((False, None))
    send.send_bytes(payload)
    send.close()


def _start(fn: Callable[[], Any], daemon: bool = True) -> tuple[Connection, multiprocessing.process.BaseProcess]:
    """``fn`` started in a forked child; ``daemon=False`` for a child that may start children
    of its own (multiprocessing refuses them to a daemonic process), which its parent
    always waits for."""
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, fn), daemon=daemon)
    proc.start()
    send.close()          # this end is the child's alone: its exit is the pipe's end
    return recv, proc


def _receive(recv: Connection, proc: multiprocessing.process.BaseProcess) -> bytes | None:
    """The child's pickled ``(ok, value)``, once it has sent it and ended; None when it died
    without a word."""
    try:
        return recv.recv_bytes()
    except (EOFError, OSError):
        return None
    finally:
        recv.close()
        proc.join()


def _decode(data: bytes | None) -> tuple[bool, Any]:
    """``(ok, value)`` from :func:`_receive`'s bytes; ``(False, None)`` for none or a pickle
    that will not load."""
    if data is None:
        return False, None
    try:
        # unpickling a large project's adapted values builds millions of objects, and each
        # collection the allocations trigger walks all built so far: 2.2 s of the 3.9 s that
        # 400,000 box answers took (issue 24); what unpickling builds has no cycles it did
        # not receive, and the caller's collections find those as before
        with gc_paused():
            return pickle.loads(data)
    except Exception:
        return False, None


def _collect(recv: Connection, proc: multiprocessing.process.BaseProcess) -> tuple[bool, Any]:
    """The child's ``(ok, value)``; ``(False, None)`` when it died without a word."""
    return _decode(_receive(recv, proc))


def run_forked(fn: Callable[[], R], errors: tuple[type[BaseException], ...] = ()) -> R:
    """``fn()`` computed in a forked child process and its result unpickled here; where fork
    is unsafe (see the module docstring), or the child fails in any other way, ``fn()`` runs
    here, so its own error (with its traceback) is the one raised. An error of one of the
    types ``errors`` (the input's own: a bad export) is raised as the child raised it.

    Why (issue 24): reading a big export leaves this process's heap fragmented -- each
    task's parsed JSON was freed between the few objects kept from it, and the allocator
    keeps the arenas those few pin (at 100,000 tasks 0.8 GB held for 0.33 GB of values).
    Built in a child, the values arrive here packed, as one unpickling allocates them, and
    the child's heap goes with it. Nothing in ``fn``'s result may depend on object identity
    beyond what pickle keeps (shared references within the result are kept).
    """
    if not _fork_ok():
        return fn()
    # not daemonic: the reading child reads the export's parts in children of its own
    ok, value = _collect(*_start(fn, daemon=False))
    if ok:
        return value
    if errors and isinstance(value, errors):
        raise value
    return fn()      # computed again here: its own error, with its traceback


class ChildFailed(Exception):
    """A forked child of :func:`map_forked` ended without a result (killed, or a result that
    would not pickle)."""


def map_forked(fns: list[Callable[[], R]], at_once: int | None = None) -> list[R]:
    """``[f() for f in fns]``, each in a forked child of its own (what one leaves in its heap
    goes with it), at most ``at_once`` at a time (default: all), in order; all here where
    fork is unsafe. None starts after a failure, and the first failure in order is raised
    once the running ones have ended.

    Raises
    ------
    Exception
        The first failure in order: a child's error as it raised it, :class:`ChildFailed`
        when a child ended without a result.
    """
    if not _fork_ok():
        return [f() for f in fns]
    at_once = max(1, len(fns) if at_once is None else at_once)
    results: dict[int, tuple[bool, Any]] = {}
    running: dict[Connection, tuple[int, multiprocessing.process.BaseProcess]] = {}
    todo = list(range(len(fns)))
    try:
        while todo or running:
            while todo and len(running) < at_once and all(ok for ok, _ in results.values()):
                k = todo.pop(0)
                recv, proc = _start(fns[k])
                running[recv] = (k, proc)
            if not running:
                break
            for recv in wait(list(running)):
                k, proc = running.pop(recv)          # type: ignore[call-overload]
                results[k] = _collect(recv, proc)    # type: ignore[arg-type]
    finally:
        for recv, (_, proc) in running.items():
            proc.terminate()
            proc.join()
            recv.close()
    for k in sorted(results):
        ok, value = results[k]
        if not ok:
            raise value if isinstance(value, BaseException) else ChildFailed("a reading process ended without a result")
    return [results[k][1] for k in range(len(fns))]


class SpilledControls(MutableMapping[str, ControlData]):
    """Adapted controls kept in files, one per control, each read back by the process that
    measures it (issue 24).

    The export is read in a child (:func:`run_forked`); handing the adapted controls to
    this process meant holding all of them here, beside the workers, for as long as any
    control was still to start (0.23 GB of the tree's 2.05 GB peak at 100,000 tasks, and
    about 4 s of unpickling before the first worker could start). Written by the reading
    child, they travel as file names; a forked worker reads its own control alone. The
    files belong to the caller's directory, which outlives them.

    Parameters
    ----------
    directory : str
        Where the files go.
    controls : mapping name -> ControlData
        The controls to write, in order (their order is the mapping's).

    Raises
    ------
    OSError
        A file could not be written (the caller then keeps the controls in memory).
    """

    def __init__(self, directory: str, controls: Mapping[str, ControlData]) -> None:
        self._paths: dict[str, str] = {}
        with gc_paused():    # pickling makes a state tuple per object and no cycles (see _child)
            for k, (name, ctl) in enumerate(controls.items()):
                path = os.path.join(directory, f"control-{k}.pickle")
                with open(path, "wb") as fh:
                    pickle.dump(ctl, fh, protocol=pickle.HIGHEST_PROTOCOL)
                self._paths[name] = path

    def __getitem__(self, name: str) -> ControlData:
        with open(self._paths[name], "rb") as fh, gc_paused():   # see _decode
            return pickle.load(fh)

    def __setitem__(self, name: str, ctl: ControlData) -> None:
        raise TypeError("spilled controls are written once, by the reading process")

    def __delitem__(self, name: str) -> None:
        path = self._paths.pop(name)
        try:
            os.remove(path)
        except OSError:
            pass        # the caller's directory goes anyway

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


def measure_controls(controls: MutableMapping[str, ControlData], measure: Callable[[ControlData], R],
                     workers: int = 1, *, release: bool = False,
                     sizes: Mapping[str, int] | None = None, costs: Mapping[str, int] | None = None,
                     budget: int | None = None) -> dict[str, R]:
    """``{name: measure(ctl)}`` for every control, in the controls' order.

    Parameters
    ----------
    controls : mapping name -> ControlData
        The adapted controls (or :class:`SpilledControls`: each read back by the worker
        that measures it).
    measure : callable ControlData -> R
        Deterministic given the control (and module-level state fixed before the call); its
        result must pickle.
    workers : int
        At most this many worker processes; 1 runs everything here; 0 (or less): one per
        control, up to the CPUs (:func:`default_workers`).
    release : bool
        Delete each control from ``controls`` once its result is in (the caller's last use
        of it): this process then holds the results that have come back and the controls
        still to come, never both whole (issue 24: at the end of a 100,000-task report the
        adapted values were a third of what this process held). A control whose worker
        failed is kept until it has been measured again here.
    sizes : mapping name -> int, optional
        Each control's work, to start the longest first (default: its table's length; give
        them where reading a control back costs, as with :class:`SpilledControls`).
    costs, budget : mapping name -> int, int, optional
        Each control's worker's expected peak bytes (:func:`.budget.worker_bytes`) and the
        process tree's ceiling: a worker starts only while the costs of the workers running
        and its own, beside what this process holds, stay within ``budget`` -- the first
        control, longest first, that fits; one worker always runs. With both, controls are
        started by cost instead of size.
    """
    names = list(controls)
    workers = min(workers if workers > 0 else default_workers(len(names)), len(names))

    def done(n: str, value: R) -> None:
        out[n] = value
        if release:
            del controls[n]

    out: dict[str, R] = {}
    if workers <= 1 or not _fork_ok():
        for n in names:
            done(n, measure(controls[n]))
        return out
    # longest first: the values a control holds are a fair proxy for its work
    order = sorted(names, key=lambda n: -(costs[n] if costs is not None and budget is not None
                                          else sizes[n] if sizes is not None else len(controls[n].table)))

    def room() -> float:
        """What the budget leaves beside the workers running, this process and the results
        it is to unpickle (infinite without a budget)."""
        if costs is None or budget is None:
            return math.inf
        return (budget - held_bytes() - sum(costs[n] for n, _ in running.values())
                - UNPICKLED_PER_BYTE * sum(len(data or b"") for _, data in received))

    def next_fitting() -> str | None:
        """The first control to start that fits the budget beside the workers running."""
        if not running:
            return order[0]
        left = room()
        return next((n for n in order if costs is None or costs[n] <= left), None)

    failed: list[str] = []
    running: dict[Connection, tuple[str, multiprocessing.process.BaseProcess]] = {}
    # what this process holds goes to the collector's permanent generation while workers
    # run: a worker's collections would otherwise write to the header of every object
    # they walk, and each page so written -- everything held here (the adapted controls,
    # where they are not spilled to files), not only the worker's own -- is copied into it
    gc.freeze()
    try:
        # a finished worker's result is read off its pipe at once and kept pickled while
        # controls wait to start: unpickled, a control's entries take 7-8 times the room of
        # their bytes (at 100,000 tasks the entities' 33 MB became 249 MB), and the process
        # tree's peak is this process beside two full workers (issue 24). It is unpickled
        # once every control has started (a slot then stays free), which also keeps its
        # seconds of unpickling off the cores the workers use, and only where the budget
        # leaves room for it beside the workers still running, else once they are done
        # (at 1,000,000 tasks the last worker, 4.7 GB, and the results unpickled beside it
        # made the tree's peak, 9.98 GB)
        received: list[tuple[str, bytes | None]] = []
        while order or running or received:
            while order and len(running) < workers and (n := next_fitting()) is not None:
                # a fresh process per control: what one control's work left in a worker's
                # heap (freed, but kept by the allocator) is never carried into the next
                order.remove(n)
                recv, proc = _start(lambda n=n: measure(controls[n]))
                running[recv] = (n, proc)
            if not order and (not running or room() >= 0):
                for n, data in received:
                    ok, value = _decode(data)
                    if ok:
                        done(n, value)
                    else:          # measured again below: its own error, with its traceback
                        failed.append(n)
                received = []
            for recv in (wait(list(running)) if running else []):
                n, proc = running.pop(recv)          # type: ignore[call-overload]
                received.append((n, _receive(recv, proc)))   # type: ignore[arg-type]
    finally:
        gc.unfreeze()
        for recv, (_, proc) in running.items():
            proc.terminate()
            proc.join()
            recv.close()
    for n in failed:
        done(n, measure(controls[n]))
    return {n: out[n] for n in names}

"""Sending planned writes to Label Studio (the values themselves: :mod:`.pushback`).

Two ways, chosen per push by what the server offers:

* **bulk** — when the project's Data Manager lists the action ``add_data_field`` (Label
  Studio started with ``ff_back_experimental_features=true``), the data keys are written
  one request per distinct (key, value), task ids in chunks. The action sets one key and
  leaves the rest of ``task.data`` alone, so no read-modify-write is needed for them.
  Tasks that need a ``PATCH`` anyway (new meta detail, our keys to remove) carry their
  data keys in that ``PATCH`` instead: one request per task either way.
* **per task** — ``PATCH`` of ``data``/``meta``, which replaces the whole dict
  (docs/label-studio.md §6), so every such write is read-modify-write of a *fresh* copy read
  just before the write: a user's keys are never lost and a task edited meanwhile is
  merged, not overwritten. Only the dict that changed is sent. The concurrency is measured
  on the server, up to ``workers``.

Both ways leave byte-for-byte the same values in ``task.data``: the bulk requests keep each
value's JSON type (see :meth:`.client.Connection.set_data_field`).
"""
from __future__ import annotations

import math
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from .client import Connection, chunked
from .errors import NotFound, RequestRejected, ServerUnavailable
from .pushback import (UPDATED_KEY, PushOutcome, Write, current_of, merge, meta_differs, needs_write,
                       user_part)

BULK_ACTION = "add_data_field"
# Task ids per bulk request (they travel in the JSON body, ~7 bytes each). Measured on
# LS 1.23/SQLite (2,000-task demo project, one request at a time): 1 id 60 ms, 100 ids
# 72 ms, 500 ids 128 ms, 1,000 ids 196 ms, 2,000 ids 460 ms (its UPDATE of a batch is a
# CASE over every id in it: quadratic past the server's batches of 1,000).
BULK_IDS = 1000
# Concurrent bulk requests (on disjoint tasks, see _push_bulk). The ~60 ms a request costs
# is mostly waiting: 100 requests of 5 ids took 6.1 s one at a time, 3.2 s two at a time,
# 1.7 s four at a time on the same server.
BULK_WORKERS = 4
# PATCH concurrency levels timed (up to the ``workers`` cap) before the fastest is kept.
LEVELS = (1, 2, 4, 8, 16)
_AUTO_MIN_TASKS = 40      # fewer planned PATCHes: not worth measuring, use _AUTO_DEFAULT
_AUTO_DEFAULT = 2         # measured best on Label Studio 1.23 (SQLite, dev server)


def _bulkable(v: Any) -> bool:
    """A value the bulk action can set with its JSON type kept (our keys are numbers)."""
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)
                         and math.isfinite(v))


def _value_key(v: Any) -> tuple[str, Any]:
    """Group key of a value: 1 and 1.0 are equal in Python but not in the JSON written."""
    return type(v).__name__, v


@dataclass
class _Plan:
    """How one write goes out: its bulk (key → value) part, or a PATCH."""

    write: Write
    bulk: dict[str, Any] = field(default_factory=dict)
    patch: bool = False


def _plan(w: Write, task: Mapping[str, Any]) -> _Plan | None:
    """Plan a write against the task as known (snapshot or fresh read); None = nothing.

    A task goes by ``PATCH`` when it needs one anyway — our keys removed, the meta payload
    written or removed, a value the bulk action cannot set — and then carries its data
    keys in it; otherwise only the keys whose values moved go in bulk (plus the timestamp).
    """
    cur = current_of(task)
    want = w.desired
    if not needs_write(want, cur):
        return None
    if want is None:
        return _Plan(w, patch=True)
    cur_data = cur.data if cur is not None else {}
    if (set(cur_data) - set(want.data)
            or meta_differs(want.meta, cur.meta if cur is not None else None)
            or not all(_bulkable(v) for v in want.data.values())):
        return _Plan(w, patch=True)
    data = task.get("data") or {}
    moved = {k: v for k, v in want.data.items()
             if k not in data or _value_key(data[k]) != _value_key(v)}
    # Nothing moved yet a write is due: a key the server does not count as ours. The PATCH
    # rewrites the task whole (a bulk stamp alone would be planned again at every sync).
    return _Plan(w, bulk=moved) if moved else _Plan(w, patch=True)


def push(conn: Connection, project_id: int, writes: Sequence[Write], *,
         workers: int = 8, chunk: int = 100,
         on_written: Callable[[Write], None] | None = None,
         on_progress: Callable[[int], None] | None = None,
         bulk: bool = True, patch_up_to: int = 0) -> PushOutcome:
    """Write the planned tasks: data keys in bulk where the server offers it, the rest by
    fresh re-read + concurrent ``PATCH``.

    Parameters
    ----------
    conn : Connection
        The client (it caches the action list and the measured concurrency).
    project_id : int
        The project.
    writes : Sequence[Write]
        Planned writes (``needs_write`` was true when they were planned).
    workers : int
        Most concurrent PATCHes: the first PATCHes are timed at 1, 2, 4, ... up to it and
        the fastest level is kept (remembered on ``conn`` for later pushes).
    chunk : int
        Tasks re-read together right before their PATCHes.
    on_written : callable, optional
        ``on_written(write)``, in the calling thread, once a task carries its values (the
        caller records state there).
    on_progress : callable, optional
        ``on_progress(done)`` with the number of tasks done so far.
    bulk : bool
        Use the Data Manager action ``add_data_field`` when the project lists it.
    patch_up_to : int
        This many writes or fewer go by ``PATCH`` even where the action is listed: the bulk
        path sends one request per moved key and value, key after key, where a task costs
        one re-read and one ``PATCH`` (one task of 7 keys: 490 vs 160 ms measured on Label
        Studio 1.23 here). The live path's events write a task or two at a time.

    Returns
    -------
    PushOutcome

    Raises
    ------
    LabelStudioError
        The first failure (after the client's retries) cancels what is still queued and
        is re-raised; tasks finished before it were reported through ``on_written``.
    """
    out = PushOutcome()
    now = int(time.time())   # one stamp per push: the bulk path writes it as one value
    progress = _Done(on_written, on_progress)
    if not writes:
        return out
    use_bulk = bulk and len(writes) > patch_up_to and conn.has_dm_action(project_id, BULK_ACTION)
    patch_writes: list[Write] = list(writes)
    if use_bulk:
        patch_writes = _push_bulk(conn, project_id, writes, now, chunk, out, progress, workers)
    if patch_writes:
        _push_patches(conn, project_id, patch_writes, workers, chunk, now, out, progress)
    # What actually went out (the action may be listed and still unused: meta detail on).
    out.mode = ("bulk+patch" if out.bulk_requests and out.patches
                else "bulk" if out.bulk_requests else "patch")
    return out


class _Done:
    """Counts finished tasks and reports each one (calling thread only)."""

    def __init__(self, on_written: Callable[[Write], None] | None,
                 on_progress: Callable[[int], None] | None) -> None:
        self.on_written, self.on_progress, self.n = on_written, on_progress, 0

    def __call__(self, w: Write) -> None:
        self.n += 1
        if self.on_written:
            self.on_written(w)
        if self.on_progress:
            self.on_progress(self.n)


def _push_bulk(conn: Connection, project_id: int, writes: Sequence[Write], now: int,
               chunk: int, out: PushOutcome, done: _Done, workers: int = BULK_WORKERS) -> list[Write]:
    """The bulk part; returns the writes left for ``PATCH``.

    Planned from each write's snapshot (re-read first when its meta is not known).
    Groups run key by key, the timestamp last; a task is reported done when its last
    group succeeded. If the server refuses the action (4xx), every write not finished
    yet is handed to the PATCH path, which re-reads and rewrites it whole.
    """
    unknown = [w for w in writes if w.snapshot_meta is None]
    fresh: dict[int, Mapping[str, Any]] = {}
    for part in chunked(unknown, max(1, chunk)):
        fresh.update((int(t["id"]), t) for t in conn.export_tasks(
            project_id, [w.task_id for w in part]))
    patch: list[Write] = []
    plans: list[_Plan] = []
    for w in writes:
        if w.snapshot_meta is None:
            task = fresh.get(w.task_id)
            if task is None:
                out.vanished.append(w.task_id)
                continue
        else:
            task = {"data": w.snapshot_data, "meta": w.snapshot_meta}
        p = _plan(w, task)
        if p is None:                      # already right on the server
            done(w)
        elif p.patch:
            patch.append(w)
        else:
            plans.append(p)
    if not plans:
        return patch

    by_key: dict[str, dict[tuple[str, Any], list[int]]] = {}
    for p in plans:
        for k, v in p.bulk.items():
            by_key.setdefault(k, {}).setdefault(_value_key(v), []).append(p.write.task_id)
    by_id = {p.write.task_id: p for p in plans}
    # The timestamp goes last: a task is complete once it is stamped.
    keys = sorted(by_key)
    by_key[UPDATED_KEY] = {("int", now): list(by_id)}
    keys.append(UPDATED_KEY)
    remaining = {tid: 1 + len(by_id[tid].bulk) for tid in by_id}
    gone: set[int] = set()

    def settle(part: list[int], n: int | None) -> None:
        out.bulk_requests += 1
        if n is not None and n < len(part):
            # deleted meanwhile: the action skips ids outside the project
            # (re-read in chunks: the ids travel in the URL there)
            there = {int(t["id"]) for sub in chunked(part, max(1, chunk))
                     for t in conn.export_tasks(project_id, sub)}
            lost = [i for i in part if i not in there]
            gone.update(lost)
            out.vanished.extend(lost)
        for tid in part:
            if tid in gone:
                continue
            remaining[tid] -= 1
            if remaining[tid] == 0:
                out.written.append(tid)
                done(by_id[tid].write)

    # One key at a time, its requests concurrently: a task has one value per key, so the
    # requests of one key touch disjoint tasks. The server's SQLite path reads each task's
    # data, sets the key and writes the data back; two requests on the same task at once
    # could lose one key, two on different tasks cannot.
    pool = ThreadPoolExecutor(max(1, min(workers, BULK_WORKERS)), thread_name_prefix="bulk")
    try:
        for key in keys:
            jobs = [(value, part) for (_kind, value), ids in sorted(
                        by_key[key].items(), key=lambda kv: str(kv[0][1]))
                    for part in chunked([i for i in ids if i not in gone], BULK_IDS)]
            futures = {pool.submit(conn.set_data_field, project_id, part, key, value): part
                       for value, part in jobs}
            try:
                for fut in as_completed(futures):
                    settle(futures[fut], fut.result())
            finally:
                for fut in futures:
                    fut.cancel()
                wait(list(futures))       # no request of this key outlives its turn
    except (RequestRejected, NotFound, ServerUnavailable):
        # The action is listed but refused or failing (changed semantics, permissions, a
        # server error on it): the per-task path rewrites every unfinished task whole from
        # a fresh copy, or fails on its own if the server is down.
        conn.forget_dm_actions(project_id)
        patch.extend(by_id[t].write for t, r in remaining.items() if r > 0 and t not in gone)
    finally:
        pool.shutdown(wait=True)
    return patch


class _Tuner:
    """``PATCH`` concurrency: remembered on the connection, or measured.

    Measuring times rounds of real (useful) PATCHes at 1, 2, 4, ... workers up to the cap
    and keeps the level with the lowest seconds per task; it stops climbing at the first
    level slower than the best so far (the server is saturated: more workers only queue).
    Label Studio 1.23 on SQLite: 2 workers 80 ms per task, 8 workers 100 ms.
    """

    def __init__(self, conn: Connection, workers: int, planned: int) -> None:
        cap = max(1, int(workers))
        self.conn = conn
        self.levels = [w for w in LEVELS if w < cap] + [cap]
        self.level = 0
        self.best: tuple[float, int] | None = None
        self.fixed: int | None = None
        if len(self.levels) == 1:        # a cap of 1: nothing to choose from
            self.fixed = self.levels[0]
        elif conn.patch_workers:
            self.fixed = min(cap, conn.patch_workers)
        elif planned < _AUTO_MIN_TASKS:
            self.fixed = min(cap, _AUTO_DEFAULT)

    def next(self) -> tuple[int, int | None]:
        """(workers, tasks in this round or None for all that are ready)."""
        if self.fixed is not None:
            return self.fixed, None
        w = self.levels[self.level]
        return w, max(6, 3 * w)

    def record(self, w: int, n: int, seconds: float) -> None:
        if self.fixed is not None or n < max(3, w):
            return   # too few to tell (the end of a chunk): time this level again
        per_task = seconds / n
        if self.best is None or per_task < self.best[0]:
            self.best = (per_task, w)
            self.level += 1
            if self.level < len(self.levels):
                return
        self.fixed = self.best[1]
        self.conn.patch_workers = self.fixed


def _push_patches(conn: Connection, project_id: int, writes: Sequence[Write], workers: int,
                  chunk: int, now: int, out: PushOutcome, done: _Done) -> None:
    """Fresh re-read per chunk, then ``PATCH`` of what changed, in timed rounds.

    The next chunk is re-read while the current one is written (one reader thread): the
    export of 100 tasks costs about as much server time as a few PATCHes, and waiting
    for it between chunks idled the writers. A task's re-read is then at most two chunks
    of writes old when its PATCH goes out (it was one before).
    """
    tuner = _Tuner(conn, workers, len(writes))
    parts = list(chunked(writes, max(1, chunk)))

    def reread(part: list[Write]) -> dict[int, Mapping[str, Any]]:
        return {int(t["id"]): t for t in conn.export_tasks(project_id,
                                                           [w.task_id for w in part])}

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ls-agreement-reread") as reader:
        upcoming = reader.submit(reread, parts[0]) if parts else None
        for i, part in enumerate(parts):
            assert upcoming is not None
            fresh = upcoming.result()
            upcoming = reader.submit(reread, parts[i + 1]) if i + 1 < len(parts) else None
            jobs: list[tuple[Write, dict[str, Any] | None, dict[str, Any] | None]] = []
            for w in part:
                task = fresh.get(w.task_id)
                if task is None:
                    out.vanished.append(w.task_id)
                    continue
                if (user_part(task.get("data") or {}, task.get("meta"))
                        != user_part(w.snapshot_data, task.get("meta"))):
                    out.merged_fresh.append(w.task_id)
                cur = current_of(task)
                if not needs_write(w.desired, cur):
                    done(w)   # already right on the server (e.g. a write whose answer was lost)
                    continue
                data, meta = merge(task, w.desired, now)
                want_data = w.desired.data if w.desired is not None else {}
                send_data = cur is None or want_data != cur.data
                send_meta = meta_differs(w.desired.meta if w.desired is not None else None,
                                          cur.meta if cur is not None else None)
                # Only the dict that changed: the other one is left exactly as it is.
                jobs.append((w, data if send_data else None, meta if send_meta else None))
            while jobs:
                n_workers, n = tuner.next()
                batch, jobs = (jobs, []) if n is None else (jobs[:n], jobs[n:])
                t0 = time.perf_counter()
                _run_round(conn, batch, n_workers, out, done)
                out.workers = n_workers
                tuner.record(n_workers, len(batch), time.perf_counter() - t0)


def _run_round(conn: Connection,
               batch: Sequence[tuple[Write, dict[str, Any] | None, dict[str, Any] | None]],
               workers: int, out: PushOutcome, done: _Done) -> None:
    """PATCH a batch with ``workers`` threads; report each task as its PATCH succeeds."""
    with ThreadPoolExecutor(max_workers=max(1, workers),
                            thread_name_prefix="ls-agreement-push") as pool:
        futures: dict[Future[None], Write] = {
            pool.submit(conn.update_task, w.task_id, data=data, meta=meta): w
            for w, data, meta in batch}
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in finished:
                if f.exception() is not None:
                    for p in pending:
                        p.cancel()
                    _record_finished(pending, futures, out, done)
                    raise f.exception()  # type: ignore[misc]
                w = futures[f]
                out.written.append(w.task_id)
                out.patches += 1
                done(w)


def _record_finished(pending: Iterable[Future[None]], futures: Mapping[Future[None], Write],
                     out: PushOutcome, done: _Done) -> None:
    """After a failure, still record the writes that completed meanwhile."""
    for p in pending:
        try:
            ok = p.done() and not p.cancelled() and p.exception() is None
        except Exception:  # noqa: BLE001 - a cancelled future raises here
            ok = False
        if ok:
            out.written.append(futures[p].task_id)
            done(futures[p])

"""A served project's live state in Redis, so that any worker can take its next job.

The live runner (plugin/live/project.py) keeps per project a mirror of the tasks, a
baseline, and what each task carries from us. In one process they live in memory. Past one
machine, the worker that runs a project's next job may not be the one that ran the last,
so the state lives in Redis (keys ``lsa:proj:<p>:*``), as versioned JSON
(plugin/live/snapshot.py), never as pickles: whoever can write to this Redis must not be
able to run code in the workers.

- ``snap``: the mirror, the baseline and the names, written at every full read and
  baseline swap, and when the log below grows past ``snapshot_events``. It is the head of
  the state (plugin/live/snapshot.py); the mirror's tasks and the report's per-task
  entries follow in blocks, in the lists ``snap:<generation>:tasks`` and
  ``snap:<generation>:entries``, ``gen`` naming the generation the head counts. A new
  state's blocks are written first (a few at a time, expiring until adopted), then one
  transaction switches ``snap`` and ``gen`` to them, and the old generation is unlinked:
  a reader meets one whole state or the other, and neither is ever one value in memory;
- ``log``: the events applied since that snapshot (a worker that restores the snapshot
  replays them: the mirror and the baseline's report come out as the writer left them);
- ``pushed``: what each task carries from us, updated per job for the tasks written
  (a replay pushes nothing: these are the values on the server);
- ``ver``: bumped after every job. A worker whose cached copy has the current version
  uses it as is (the common case, one worker per hot project), so the snapshot is read
  only when the project changed hands;
- ``next``: a baseline made in the background by one worker, adopted by whichever worker
  takes the ``BASELINE`` event (its head; its entries in ``next:<generation>:entries``,
  ``nextgen`` naming it).

A state this worker cannot read — written by another version of the code, or not valid —
is not used: the project's next job reads it from Label Studio again (a full read), as
after a first start. Only the project's running job writes these keys (RQ runs one job per
project at a time: the rate limit of redis_queue.py), except ``next``, which its maker
writes before it enqueues the event.
"""
from __future__ import annotations

import sys
import time
import uuid
from typing import TYPE_CHECKING, Any, Iterable, Iterator, TextIO

from ..client import LabelStudioError
from .redis_queue import UNADOPTED_SECONDS
from ..live.snapshot import (SnapshotError, Stored, dump_baseline, dump_event, dump_project, dump_pushed,
                             load_baseline, load_event, load_project, load_pushed)

if TYPE_CHECKING:
    from ..job_backend import StoredEvent
    from ..live.baseline import ProjectBaseline
    from ..live.project import LiveOutcome, LiveProject

__all__ = ["SharedProjects"]

P = "lsa:proj:"
#: Blocks sent to Redis per round trip while a state is written or read (a block of tasks
#: is about 10 MB of JSON at demo size).
_BLOCKS_PER_TRIP = 4


_GENERATION = {"snap": "gen", "next": "nextgen"}


def _lists(project_id: int, which: str, gen: bytes | str | None) -> tuple[str, str]:
    """The lists of generation ``gen`` of the project's ``snap`` (or ``next``): tasks, entries."""
    base = f"{P}{int(project_id)}:{which}:{gen.decode() if isinstance(gen, bytes) else gen or ''}"
    return f"{base}:tasks", f"{base}:entries"


def state_keys(r: Any, project_id: int, which: str = "snap") -> tuple[str, str] | None:
    """The lists holding the blocks of the project's current ``snap`` (or ``next``): tasks
    and entries; None when it has none."""
    gen = r.get(f"{P}{int(project_id)}:{_GENERATION[which]}")
    return None if gen is None else _lists(project_id, which, gen)


class SharedProjects:
    """Save and restore :class:`~ls_agreement.plugin.live.project.LiveProject` state.

    Parameters
    ----------
    r : redis.Redis
        The queue's connection.
    snapshot_events : int
        Events replayed at most by a worker taking a project over; beyond it a job saves a
        new snapshot instead of appending to the log.
    log : text stream or None
        Where a state that is not used is reported.
    """

    def __init__(self, r: Any, snapshot_events: int = 200, log: TextIO | None = sys.stderr) -> None:
        self.r = r
        self.snapshot_events = int(snapshot_events)
        self.log = log

    def _say(self, msg: str) -> None:
        if self.log is not None:
            print(time.strftime("%H:%M:%S ") + msg, file=self.log, flush=True)

    def version(self, project_id: int) -> int:
        raw = self.r.get(f"{P}{int(project_id)}:ver")
        try:
            return int(raw or 0)
        except ValueError:      # not ours: no copy can be at it, so the state is read (and refused)
            return -2

    # -- restore --------------------------------------------------------------------------------
    def restore(self, proj: "LiveProject") -> bool:
        """Load the project's snapshot, replay its log, load what tasks carry.

        Returns
        -------
        bool
            False when there is no snapshot, or one this code does not read (another
            version's, or not valid data): the project's next job starts with a full read.
        """
        pid = proj.project_id
        head, gen = self.r.mget(f"{P}{pid}:snap", f"{P}{pid}:gen")
        proj.reset()
        if head is None:
            return False
        try:
            tasks, entries = _lists(pid, "snap", gen)
            load_project(proj, head, self._blocks(tasks), self._blocks(entries))
            proj.pushed = {int(k): load_pushed(v) for k, v in self.r.hgetall(f"{P}{pid}:pushed").items()}
            log = [load_event(x) for x in self.r.lrange(f"{P}{pid}:log", 0, -1)]
            if log:
                proj.replay(log)
        except LabelStudioError:
            proj.reset()       # a replay's read failed: the job fails and is retried
            raise
        except Exception as exc:  # noqa: BLE001 - any state we cannot use is rebuilt, never trusted
            proj.reset()
            why = str(exc) if isinstance(exc, SnapshotError) else f"{type(exc).__name__}: {exc}"
            self._say(f"project {pid}: stored live state not used ({why[:300]}); "
                      "reading the project from Label Studio")
            return False
        return True

    # -- save -----------------------------------------------------------------------------------
    def save(self, proj: "LiveProject", out: "LiveOutcome", events: "list[StoredEvent]") -> int:
        """After a job: snapshot or log, what tasks carry, a new version (returned)."""
        pid = proj.project_id
        pipe = self.r.pipeline(transaction=True)
        whole = out.mode != "events"
        old: tuple[str, str] | None = None
        if whole or self.r.llen(f"{P}{pid}:log") + len(events) > self.snapshot_events:
            old = self._switch(pipe, pid, "snap", dump_project(proj))
            pipe.delete(f"{P}{pid}:log")
        elif events:
            pipe.rpush(f"{P}{pid}:log", *[dump_event(e) for e in events])
        if whole:
            pipe.delete(f"{P}{pid}:pushed")
            self._put_pushed(pipe, pid, proj, proj.pushed)
        else:
            self._put_pushed(pipe, pid, proj, set(out.written) | set(out.republished) | set(out.touched))
        pipe.incr(f"{P}{pid}:ver")
        version = int(pipe.execute()[-1])
        if old is not None:
            self.r.unlink(*old)
        return version

    # -- blocks ---------------------------------------------------------------------------------
    def _switch(self, pipe: Any, pid: int, which: str, stored: Stored) -> tuple[str, str] | None:
        """Write ``stored``'s blocks under a new generation of the project's ``which``
        (:meth:`_write`) and queue on the transaction ``pipe`` the switch to it: the head,
        the generation, the blocks kept. Returns the lists of the generation it replaces,
        for the caller to unlink once ``pipe`` has run."""
        old = state_keys(self.r, pid, which)
        gen = uuid.uuid4().hex
        keys = self._write(_lists(pid, which, gen), stored)
        pipe.set(f"{P}{pid}:{which}", stored.head)
        pipe.set(f"{P}{pid}:{_GENERATION[which]}", gen)
        for key in keys:
            pipe.persist(key)
        return old

    def _write(self, keys: tuple[str, str], stored: Stored) -> tuple[str, str]:
        """Append the state's task blocks and entry blocks to ``keys``, a few per round trip;
        they expire unless a switch adopts them (a writer that dies midway leaves nothing
        for good)."""
        for key, blocks in zip(keys, (stored.tasks, stored.entries)):
            pending: list[bytes] = []
            for block in blocks:
                pending.append(block)
                if len(pending) >= _BLOCKS_PER_TRIP:
                    self._append(key, pending)
                    pending = []
            if pending:
                self._append(key, pending)
        return keys

    def _append(self, key: str, blocks: list[bytes]) -> None:
        pipe = self.r.pipeline(transaction=False)
        pipe.rpush(key, *blocks)
        pipe.expire(key, UNADOPTED_SECONDS)
        pipe.execute()

    def _blocks(self, key: str) -> Iterator[bytes]:
        """The blocks of one list, a few per round trip."""
        start = 0
        while chunk := self.r.lrange(key, start, start + _BLOCKS_PER_TRIP - 1):
            yield from chunk
            start += len(chunk)

    @staticmethod
    def _put_pushed(pipe: Any, pid: int, proj: "LiveProject", task_ids: Iterable[int]) -> None:
        batch: dict[str, bytes] = {}
        gone = []
        for tid in task_ids:
            if tid in proj.pushed:
                batch[str(tid)] = dump_pushed(proj.pushed[tid])
            else:
                gone.append(str(tid))
            if len(batch) >= 5000:
                pipe.hset(f"{P}{pid}:pushed", mapping=batch)
                batch = {}
        if batch:
            pipe.hset(f"{P}{pid}:pushed", mapping=batch)
        if gone:
            pipe.hdel(f"{P}{pid}:pushed", *gone)

    # -- background baselines ---------------------------------------------------------------
    def put_next(self, project_id: int, base: "ProjectBaseline") -> None:
        pid = int(project_id)
        pipe = self.r.pipeline(transaction=True)
        old = self._switch(pipe, pid, "next", dump_baseline(base))
        pipe.execute()
        if old is not None:
            self.r.unlink(*old)

    def take_next(self, project_id: int) -> "ProjectBaseline | None":
        pid = int(project_id)
        pipe = self.r.pipeline(transaction=True)
        pipe.getdel(f"{P}{pid}:next")
        pipe.getdel(f"{P}{pid}:nextgen")
        head, gen = pipe.execute()
        if head is None:
            return None
        lists = _lists(pid, "next", gen)
        try:
            return load_baseline(head, self._blocks(lists[1]))
        except Exception as exc:  # noqa: BLE001 - not ours to trust: the next reconcile makes another
            self._say(f"project {pid}: stored background baseline not used ({exc})")
            return None
        finally:
            self.r.unlink(*lists)

    def forget(self, project_id: int) -> None:
        """Drop the project's state (the next job starts with a full read)."""
        pid = int(project_id)
        lists = [k for which in ("snap", "next") for k in (state_keys(self.r, pid, which) or ())]
        self.r.delete(*[f"{P}{pid}:{k}" for k in ("snap", "gen", "log", "pushed", "ver", "next", "nextgen")],
                      *lists)

"""A served project's live state in Redis, so that any worker can take its next job.

The live runner (plugin/live/project.py) keeps per project a mirror of the tasks, a
baseline, and what each task carries from us. In one process they live in memory. Past one
machine, the worker that runs a project's next job may not be the one that ran the last,
so the state lives in Redis (keys ``lsa:proj:<p>:*``):

- ``snap``: a pickle of the mirror, the baseline and the names, written at every full
  read and baseline swap, and when the log below grows past ``snapshot_events``;
- ``log``: the events applied since that snapshot (a worker that restores the snapshot
  replays them: the mirror and the baseline's report come out as the writer left them);
- ``pushed``: what each task carries from us, updated per job for the tasks written
  (a replay pushes nothing: these are the values on the server);
- ``ver``: bumped after every job. A worker whose cached copy has the current version
  uses it as is (the common case, one worker per hot project), so the snapshot is read
  only when the project changed hands;
- ``next``: a baseline made in the background by one worker, adopted by whichever worker
  takes the ``BASELINE`` event.

Only the holder of the project's lock writes these keys (the lock of redis_queue.py),
except ``next``, which its maker writes before it enqueues the event.

Pickles are read back only from this Redis, which the deployment controls the same way as
the job queue; anyone who can write to it can already queue work under the token.
"""
from __future__ import annotations

import json
import pickle
from typing import TYPE_CHECKING, Any, Iterable

from ..job_backend import StoredEvent

if TYPE_CHECKING:
    from ..live.baseline import ProjectBaseline
    from ..live.project import LiveOutcome, LiveProject

__all__ = ["SharedProjects"]

P = "lsa:proj:"


class SharedProjects:
    """Save and restore :class:`~ls_agreement.plugin.live.project.LiveProject` state.

    Parameters
    ----------
    r : redis.Redis
        The queue's connection.
    snapshot_events : int
        Events replayed at most by a worker taking a project over; beyond it a job saves a
        new snapshot instead of appending to the log.
    """

    def __init__(self, r: Any, snapshot_events: int = 200) -> None:
        self.r = r
        self.snapshot_events = int(snapshot_events)

    def version(self, project_id: int) -> int:
        return int(self.r.get(f"{P}{int(project_id)}:ver") or 0)

    # -- restore --------------------------------------------------------------------------------
    def restore(self, proj: "LiveProject") -> bool:
        """Load the project's snapshot, replay its log, load what tasks carry.

        Returns
        -------
        bool
            False when there is no snapshot (the project's next job starts with a full read).
        """
        pid = proj.project_id
        blob = self.r.get(f"{P}{pid}:snap")
        proj.reset()
        if blob is None:
            return False
        snap = pickle.loads(blob)
        proj.mirror, proj.base = snap["mirror"], snap["base"]
        proj.config_xml, proj.title = snap["config_xml"], snap["title"]
        proj.names, proj.users = snap["names"], snap["users"]
        proj.pushed = {int(k): pickle.loads(v)
                       for k, v in self.r.hgetall(f"{P}{pid}:pushed").items()}
        log = [StoredEvent(**json.loads(x)) for x in self.r.lrange(f"{P}{pid}:log", 0, -1)]
        if log:
            proj.replay(log)
        return True

    # -- save -----------------------------------------------------------------------------------
    def save(self, proj: "LiveProject", out: "LiveOutcome", events: list[StoredEvent]) -> int:
        """After a job: snapshot or log, what tasks carry, a new version (returned)."""
        pid = proj.project_id
        pipe = self.r.pipeline(transaction=True)
        whole = out.mode != "events"
        if whole or self.r.llen(f"{P}{pid}:log") + len(events) > self.snapshot_events:
            pipe.set(f"{P}{pid}:snap", pickle.dumps(self._snapshot(proj), protocol=pickle.HIGHEST_PROTOCOL))
            pipe.delete(f"{P}{pid}:log")
        elif events:
            pipe.rpush(f"{P}{pid}:log", *[json.dumps(e.__dict__) for e in events])
        if whole:
            pipe.delete(f"{P}{pid}:pushed")
            self._put_pushed(pipe, pid, proj, proj.pushed)
        else:
            self._put_pushed(pipe, pid, proj, set(out.written) | set(out.republished) | set(out.touched))
        pipe.incr(f"{P}{pid}:ver")
        return int(pipe.execute()[-1])

    @staticmethod
    def _snapshot(proj: "LiveProject") -> dict[str, Any]:
        return {"mirror": proj.mirror, "base": proj.base, "config_xml": proj.config_xml,
                "title": proj.title, "names": proj.names, "users": proj.users}

    @staticmethod
    def _put_pushed(pipe: Any, pid: int, proj: "LiveProject", task_ids: Iterable[int]) -> None:
        batch: dict[str, bytes] = {}
        gone = []
        for tid in task_ids:
            if tid in proj.pushed:
                batch[str(tid)] = pickle.dumps(proj.pushed[tid], protocol=pickle.HIGHEST_PROTOCOL)
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
        self.r.set(f"{P}{int(project_id)}:next", pickle.dumps(base, protocol=pickle.HIGHEST_PROTOCOL))

    def take_next(self, project_id: int) -> "ProjectBaseline | None":
        blob = self.r.getdel(f"{P}{int(project_id)}:next")
        return None if blob is None else pickle.loads(blob)

    def forget(self, project_id: int) -> None:
        """Drop the project's state (the next job starts with a full read)."""
        self.r.delete(*[f"{P}{int(project_id)}:{k}" for k in ("snap", "log", "pushed", "ver", "next")])

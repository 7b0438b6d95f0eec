"""The job queue on Redis, for ``serve --queue redis://…`` and ``worker --queue redis://…``.

The same :class:`~ls_agreement.plugin.job_backend.JobBackend` as the embedded SQLite queue
(plugin/jobs.py), so the receiver, the reconciler, the pages and the live runner do not
know which one they use. What changes past one machine:

- **Transport: RQ.** A job that is due is handed to RQ (the queue Label Studio itself
  uses) as ``run_job(job_id)`` on the queue ``ls-agreement``; any number of ``worker``
  processes, on any machine, take them (plugin/queue/rq_worker.py).
- **Our job records stay ours.** Coalescing, attempts, backoff and the ``/jobs`` history
  need per-project state RQ does not have, so each job is a Redis hash
  (``lsa:job:<id>``) changed only by the Lua scripts below: each transition is atomic
  across every process that talks to this Redis.
- **Per-project lock with a lease.** A worker runs a project's job only while it holds
  ``lsa:lock:<project>`` (``SET NX PX``), renewed every ``lease/3`` seconds. A worker
  killed with SIGKILL stops renewing; once the lease runs out, any worker's reaper puts
  the job back (or fails it when its attempts are used up) and another worker runs it.
  A job whose project is locked waits *as the project's pending job*: the lock holder
  hands it to RQ when it finishes, so events keep coalescing into it meanwhile.
- **Persist before acknowledging.** :meth:`enqueue` stores the event and the job in one
  script before it returns; with ``appendonly yes`` and ``appendfsync always`` (what
  LocalRedis and docker compose set) Redis has written it to disk by then.
- **Delays without a scheduler.** Retries wait in a sorted set (``lsa:delayed``) that the
  workers' reapers move to RQ when due.

Keys (all under ``lsa:``; ``<p>`` a project id, ``<j>`` a job id):
``job:<j>`` hash · ``jobs`` recent job ids (newest first, capped) · ``pending:<p>`` the
project's pending job · ``lock:<p>`` the lease · ``running`` hash project → job ·
``delayed`` zset · ``events:<p>`` list of stored events (JSON) · ``projects`` hash of
served projects (JSON) · ``stats`` hash of live counters · ``report:<p>`` latest report
file (bytes) · ``proj:<p>:*`` the live state of plugin/queue/shared_state.py.
"""
from __future__ import annotations

import json
import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlsplit

from ..errors import BadInput, QueueUnavailable
from ..job_backend import DONE, FAILED, PENDING, RUNNING, Job, StoredEvent
from .scripts import ABANDON, DUE, ENQUEUE, FINISH, KEEP_JOBS, RENEW, START

__all__ = ["RedisQueue", "RQ_QUEUE", "redact_url"]

#: The RQ queue the workers listen on.
RQ_QUEUE = "ls-agreement"
P = "lsa:"
#: A pending job handed to RQ whose RQ job vanished (a crash between our script and RQ's
#: enqueue) is handed again after this many seconds.
LOST_RQ_AFTER = 30.0


def redact_url(url: str) -> str:
    """The queue URL without its password (for logs and ``/health``)."""
    parts = urlsplit(url)
    if parts.password:
        host = parts.hostname or ""
        netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
        return parts._replace(netloc=netloc).geturl()
    return url


_DECODE_INT = ("id", "project_id", "events", "attempts", "max_attempts")
_DECODE_FLOAT = ("not_before", "created_at", "started_at", "finished_at")


def _job(h: Mapping[bytes, bytes]) -> Job:
    d = {k.decode(): v.decode() for k, v in h.items()}
    res = d.get("result") or ""
    return Job(id=int(d["id"]), project_id=int(d["project_id"]), reason=d.get("reason", ""),
               last_reason=d.get("last_reason", ""), events=int(d.get("events", 0)),
               status=d.get("status", PENDING), attempts=int(d.get("attempts", 0)),
               max_attempts=int(d.get("max_attempts", 1)),
               not_before=float(d.get("not_before", 0)), created_at=float(d.get("created_at", 0)),
               started_at=float(d["started_at"]) if d.get("started_at") else None,
               finished_at=float(d["finished_at"]) if d.get("finished_at") else None,
               error=d.get("error") or None, report_path=d.get("report_path") or None,
               result=json.loads(res) if res else None)


class RedisQueue:
    """:class:`~ls_agreement.plugin.job_backend.JobBackend` on Redis, jobs run by RQ workers.

    Parameters
    ----------
    url : str
        ``redis://[:password@]HOST:PORT/DB`` (``rediss://`` for TLS).
    max_attempts, backoff, max_backoff
        As for :class:`~ls_agreement.plugin.jobs.JobQueue`.
    lease : float
        Seconds a worker's project lock lasts without renewal (a killed worker's job
        goes to another worker this long after its last renewal).
    report_dir : Path, optional
        Where :meth:`report_file` materialises the latest report of a project for the
        pages of ``serve`` (the worker that wrote it may be on another machine).
    """

    def __init__(self, url: str, *, max_attempts: int = 3, backoff: float = 5.0,
                 max_backoff: float = 300.0, lease: float = 30.0,
                 report_dir: Path | None = None) -> None:
        import redis
        from rq import Queue

        if max_attempts < 1:
            raise BadInput(f"max_attempts must be >= 1, got {max_attempts}")
        if lease <= 0:
            raise BadInput(f"lease must be > 0 seconds, got {lease}")
        self.url = url
        self.max_attempts, self.backoff, self.max_backoff = max_attempts, backoff, max_backoff
        self.lease = float(lease)
        self.report_dir = Path(report_dir) if report_dir else None
        try:
            # Short timeouts: Label Studio gives a webhook 1 s, so a Redis that is down
            # must give a quick 503, not a blocked receiver. health_check_interval makes a
            # pooled connection that died with a restarted Redis reconnect transparently.
            self.r = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=10,
                                          health_check_interval=15, retry_on_timeout=True)
        except ValueError as exc:
            raise BadInput(f"--queue {redact_url(url)!r} is not a Redis URL "
                             f"(redis://HOST:PORT/DB): {exc}") from exc
        self.rq = Queue(RQ_QUEUE, connection=self.r)
        self._enqueue = self.r.register_script(ENQUEUE)
        self._start = self.r.register_script(START)
        self._renew = self.r.register_script(RENEW)
        self._finish = self.r.register_script(FINISH)
        self._abandon = self.r.register_script(ABANDON)
        self._due = self.r.register_script(DUE)
        self._tokens: dict[int, str] = {}
        self._report_seen: dict[int, tuple[float, int]] = {}
        self._wake = threading.Event()

    def close(self) -> None:
        self.r.close()

    def __enter__(self) -> "RedisQueue":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ping(self) -> None:
        """Raise a clear error when Redis does not answer (start-up check)."""
        import redis
        try:
            self.r.ping()
        except redis.RedisError as exc:
            raise QueueUnavailable(f"Redis at {redact_url(self.url)} does not answer: {exc}") from exc

    def durability(self) -> dict[str, str]:
        """``appendonly``/``appendfsync`` of the server (``{}`` when CONFIG is not allowed,
        as on some managed Redis services)."""
        import redis
        try:
            got = self.r.config_get("append*")
        except redis.RedisError:
            return {}
        dec = (lambda v: v.decode() if isinstance(v, bytes) else str(v))
        return {dec(k): dec(v) for k, v in got.items() if dec(k) in ("appendonly", "appendfsync")}

    # -- the job interface ------------------------------------------------------------------
    def enqueue(self, project_id: int, reason: str, *, delay: float = 0.0,
                action: str | None = None, payload: bytes | str | None = None) -> Job:
        """Store the event (if any) and open or bump the project's pending job; hand a
        new due job to RQ. Both are in Redis when this returns (see the module docstring)."""
        if isinstance(payload, bytes):
            payload = payload.decode("utf-8", errors="replace")
        jid, hand = self._enqueue(args=[int(project_id), reason, action or "", payload or "",
                                        repr(time.time()), repr(float(delay)), self.max_attempts])
        jid = int(jid)
        if int(hand):
            self._hand(jid)
        return self.get(jid)

    def _hand(self, job_id: int) -> None:
        """Give a job to RQ (a fresh RQ id each time: an RQ id is never reused)."""
        n = self.r.hincrby(f"{P}job:{job_id}", "handed", 1)
        self.rq.enqueue_call("ls_agreement.plugin.queue.rq_worker.run_job", args=(int(job_id),),
                             job_id=f"lsa-{job_id}-{n}", timeout=-1, result_ttl=600,
                             failure_ttl=24 * 3600)
        self.r.hset(f"{P}job:{job_id}", "rq_id", f"lsa-{job_id}-{n}")

    def start(self, job_id: int) -> Job | None:
        """Claim a job handed by RQ: None when it is done/failed/running already, or when
        its project is locked by another worker (it then waits as the pending job and the
        lock holder hands it over when it finishes)."""
        token = uuid.uuid4().hex
        got = self._start(args=[int(job_id), token, int(self.lease * 1000), repr(time.time())])
        if (got.decode() if isinstance(got, bytes) else got) != "run":
            return None
        self._tokens[int(job_id)] = token
        return self.get(job_id)

    def claim(self) -> Job | None:
        """Not used past one machine: RQ hands jobs to :meth:`start`."""
        return None

    def renew(self, job: Job) -> bool:
        """Extend the project's lease; False when it was lost (another worker may run it)."""
        token = self._tokens.get(job.id)
        return bool(token) and bool(self._renew(keys=[f"{P}lock:{job.project_id}"],
                                                args=[token, int(self.lease * 1000)]))

    def finish(self, job: Job, ok: bool, error: str | None = None, *, retry: bool = True,
               report_path: str | None = None,
               result: Mapping[str, Any] | None = None) -> Job:
        """Record the outcome, release the lease, hand the project's next job to RQ."""
        token = self._tokens.pop(job.id, "")
        res = json.dumps(dict(result), default=str) if result is not None else ""
        status, nxt = self._finish(args=[job.id, token, int(ok), error or "", int(retry),
                                         repr(time.time()), self.backoff, self.max_backoff,
                                         res, report_path or ""])
        if ok and report_path:
            self._set_latest(job.project_id, report_path, result)
        if nxt:
            self._hand(int(nxt))
        return self.get(job.id)

    # -- the reaper: what a scheduler and RQ's abandoned-job handling would do -------------
    def reap(self) -> list[int]:
        """Hand due retries to RQ, recover jobs whose lease ran out, re-hand jobs whose RQ
        job was lost. Safe to call from every worker at once. Returns the jobs handed."""
        from rq.job import Job as RQJob, JobStatus

        now = time.time()
        handed = [int(j) for j in self._due(args=[repr(now)])]
        for pid in self.r.hkeys(f"{P}running"):
            got = self._abandon(args=[pid.decode(), repr(now)])
            if got:
                handed.append(int(got))
        for key in self.r.scan_iter(f"{P}pending:*", count=500):
            jid = self.r.get(key)
            if jid is None:
                continue
            h = self.r.hmget(f"{P}job:{int(jid)}", "wait", "handed_at", "rq_id")
            if h[0] != b"rq" or now - float(h[1] or 0) < LOST_RQ_AFTER:
                continue
            status = None
            if h[2]:
                try:
                    status = RQJob.fetch(h[2].decode(), connection=self.r).get_status()
                except Exception:  # noqa: BLE001 - NoSuchJobError and friends: it is lost
                    status = None
            if status not in (JobStatus.QUEUED, JobStatus.STARTED, JobStatus.DEFERRED,
                              JobStatus.SCHEDULED):
                self.r.hset(f"{P}job:{int(jid)}", "handed_at", repr(now))
                handed.append(int(jid))
        for jid in handed:
            self._hand(jid)
        return handed

    def recover(self) -> list[Job]:
        """Start-up recovery: what the reaper does (jobs survive in Redis by themselves)."""
        return [self.get(j) for j in self.reap()]

    # -- stored events (the live path) ------------------------------------------------------
    def events(self, project_id: int, limit: int = 100_000) -> list[StoredEvent]:
        rows = self.r.lrange(f"{P}events:{int(project_id)}", 0, limit - 1)
        out = []
        for raw in rows:
            d = json.loads(raw)
            out.append(StoredEvent(int(d["id"]), str(d["action"]), d.get("payload") or None,
                                   float(d["received_at"])))
        return out

    def drop_events(self, project_id: int, upto: int) -> None:
        """Forget the project's events up to id ``upto``: only the lock holder calls it,
        and new events are only ever appended, so the first n are the applied ones."""
        key = f"{P}events:{int(project_id)}"
        n = 0
        for raw in self.r.lrange(key, 0, -1):
            if int(json.loads(raw)["id"]) > upto:
                break
            n += 1
        if n:
            self.r.ltrim(key, n, -1)

    def add_live_stats(self, project_id: int, *, lost: int = 0, republished: int = 0,
                       baselines: int = 0) -> None:
        pipe = self.r.pipeline()
        for name, v in (("lost_events", lost), ("republished", republished), ("baselines", baselines)):
            pipe.hincrby(f"{P}stats:{int(project_id)}", name, int(v))
        pipe.sadd(f"{P}stats", int(project_id))
        pipe.execute()

    def live_stats(self) -> dict[int, dict[str, Any]]:
        out = {}
        for pid in sorted(int(p) for p in self.r.smembers(f"{P}stats")):
            h = self.r.hgetall(f"{P}stats:{pid}")
            out[pid] = {k: int(h.get(k.encode(), 0)) for k in ("lost_events", "republished", "baselines")}
        return out

    # -- waiting (the in-process worker's loop is not used with RQ) -------------------------
    def notify(self) -> None:
        self._wake.set()

    def wait(self, timeout: float) -> None:
        self._wake.wait(timeout)
        self._wake.clear()

    def next_due_in(self) -> float | None:
        got = self.r.zrange(f"{P}delayed", 0, 0, withscores=True)
        return None if not got else max(0.0, float(got[0][1]) - time.time())

    # -- reading ----------------------------------------------------------------------------
    def get(self, job_id: int) -> Job:
        h = self.r.hgetall(f"{P}job:{int(job_id)}")
        if not h:
            raise KeyError(f"no job {job_id}")
        return _job(h)

    def _recent_ids(self, limit: int) -> list[int]:
        return [int(j) for j in self.r.lrange(f"{P}jobs", 0, max(0, limit - 1))]

    def recent(self, limit: int = 50, project_id: int | None = None) -> list[Job]:
        ids = self._recent_ids(KEEP_JOBS if project_id is not None else limit)
        pipe = self.r.pipeline()
        for j in ids:
            pipe.hgetall(f"{P}job:{j}")
        jobs = [_job(h) for h in pipe.execute() if h]
        if project_id is not None:
            jobs = [j for j in jobs if j.project_id == int(project_id)]
        return jobs[:limit]

    def counts(self) -> dict[str, int]:
        """Jobs per status among the last ``KEEP_JOBS``."""
        out = {s: 0 for s in (PENDING, RUNNING, DONE, FAILED)}
        pipe = self.r.pipeline()
        for j in self._recent_ids(KEEP_JOBS):
            pipe.hget(f"{P}job:{j}", "status")
        for s in pipe.execute():
            if s is not None:
                out[s.decode()] = out.get(s.decode(), 0) + 1
        return out

    def workers(self) -> int:
        """RQ workers registered on the queue (alive: they heartbeat)."""
        from rq import Worker
        return len(Worker.all(queue=self.rq))

    # -- served projects ----------------------------------------------------------------------
    def add_project(self, project_id: int, source: str, webhook_id: int | None = None) -> None:
        key = str(int(project_id))
        fresh = {"source": source, "added_at": time.time(), "webhook_id": webhook_id,
                 "report_path": None, "summary": None, "updated_at": None}
        if webhook_id is None:
            # the receiver calls this for every event of an open service: one round trip
            self.r.hsetnx(f"{P}projects", key, json.dumps(fresh))
            return
        raw = self.r.hget(f"{P}projects", key)
        row = json.loads(raw) if raw else fresh
        if webhook_id is not None:
            row["webhook_id"] = webhook_id
        self.r.hset(f"{P}projects", key, json.dumps(row, default=str))

    def projects(self) -> dict[int, dict[str, Any]]:
        return {int(k): json.loads(v) for k, v in sorted(self.r.hgetall(f"{P}projects").items(),
                                                         key=lambda kv: int(kv[0]))}

    def set_latest(self, project_id: int, report_path: str,
                   summary: Mapping[str, Any] | None) -> None:
        self._set_latest(int(project_id), report_path, summary)

    def _set_latest(self, project_id: int, report_path: str,
                    summary: Mapping[str, Any] | None) -> None:
        """The project's headline numbers, and its report file's bytes when they changed
        (the file is on the worker's machine; ``serve``'s pages read it from here)."""
        key = str(int(project_id))
        raw = self.r.hget(f"{P}projects", key)
        row = json.loads(raw) if raw else {"source": "webhook", "added_at": time.time(),
                                           "webhook_id": None}
        row.update(report_path=str(report_path), updated_at=time.time(),
                   summary=dict(summary) if summary is not None else None)
        pipe = self.r.pipeline()
        pipe.hset(f"{P}projects", key, json.dumps(row, default=str))
        path = Path(report_path)
        try:
            st = path.stat()
            seen = (st.st_mtime, st.st_size)
            if self._report_seen.get(project_id) != seen:
                pipe.set(f"{P}report:{project_id}", path.read_bytes())
                pipe.incr(f"{P}report_version:{project_id}")
                self._report_seen[project_id] = seen
        except OSError:
            pass
        pipe.execute()

    def report_file(self, project_id: int) -> Path | None:
        """A local copy of the project's latest report file (None: no report yet)."""
        pid = int(project_id)
        ver = self.r.get(f"{P}report_version:{pid}")
        if ver is None:
            return None
        root = self.report_dir or Path(os.environ.get("TMPDIR", "/tmp")) / "ls-agreement-reports"
        path = root / f"project-{pid}" / "report.json"
        stamp = path.with_suffix(".version")
        if path.exists() and stamp.exists() and stamp.read_text() == ver.decode():
            return path
        data = self.r.get(f"{P}report:{pid}")
        if data is None:
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".report-{os.getpid()}-{threading.get_ident()}.json")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        stamp.write_text(ver.decode())
        return path

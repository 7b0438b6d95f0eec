"""The job queue on Redis, for ``serve --queue redis://…`` and ``worker --queue redis://…``.

The :class:`~ls_agreement.plugin.job_backend.JobBackend` of the embedded SQLite queue
(plugin/jobs.py) on RQ's own primitives (docs/design.md, "Job queue"): an RQ job
``run_job(id)`` per job, with the deterministic id ``lsa-<id>``, RQ's ``Retry`` for the
backoff, RQ's ``RateLimit`` of one job at a time per project, RQ's handling of abandoned
jobs (:func:`on_failure` records them), JSON job data and :class:`OurJob` (no pickle, no
function but ours). What RQ lacks is here: :data:`ENQUEUE`, which stores an event and
coalesces it into the project's pending job in one atomic step (an acknowledged event is
on disk with ``appendfsync always``), and our job records for ``/jobs``.

Keys (ours, under ``lsa:``; ``<p>`` a project id, ``<j>`` a job id): ``job:<j>`` hash ·
``jobs`` recent job ids (newest first, capped) · ``pending:<p>`` the project's pending job ·
``events:<p>`` list of stored events (JSON) · ``projects`` hash of served projects (JSON) ·
``stats`` hash of live counters · ``report:<p>:<generation>`` latest report file (a list of
chunks, ``report_gen:<p>`` naming the current one) · ``proj:<p>:*``
the live state of plugin/queue/shared_state.py. RQ's keys are under ``rq:``.
"""
from __future__ import annotations

import json
import math
import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Mapping
from urllib.parse import urlsplit

from rq.job import Job as RQJob
from rq.utils import import_attribute

from ..errors import BadInput, QueueUnavailable
from ..job_backend import DONE, FAILED, PENDING, RUNNING, Job, StoredEvent

__all__ = ["RedisQueue", "RQ_QUEUE", "RUN_JOB", "OurJob", "JobFailed", "on_failure", "redact_url",
           "rq_id"]

#: The RQ queue the workers listen on, and the one function its jobs run.
RQ_QUEUE = "ls-agreement"
RUN_JOB = "ls_agreement.plugin.queue.rq_worker.run_job"
ON_FAILURE = f"{__name__}.on_failure"
P = "lsa:"
#: Job records kept for ``/jobs`` and ``counts()`` (older ones expire).
KEEP_JOBS = 1000
#: How long values written a chunk at a time wait for the transaction that adopts them
#: (a writer that dies before it leaves nothing for good).
UNADOPTED_SECONDS = 3600
_REPORT_CHUNK = 8 * 2 ** 20      # bytes of a report file per Redis value
JOB_TTL = 7 * 24 * 3600
#: A pending job whose RQ job is missing this long after it was opened (its receiver died
#: between our script and RQ's enqueue) is handed to RQ again by the next event.
LOST_AFTER = 30.0

# Store the event, then bump the project's pending job or open one. Returns {job id, hand}:
# hand = 1 when the job must be given to RQ (new, or its RQ job lost).
ENQUEUE = """
local pid, reason, action, payload, now, maxa, nb, rqp, lost_after = ARGV[1], ARGV[2],
  ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6], ARGV[7], ARGV[8], tonumber(ARGV[9])
if action ~= '' then
  local eid = redis.call('INCR', 'lsa:event_seq')
  redis.call('RPUSH', 'lsa:events:' .. pid, cjson.encode({id=eid, action=action,
    payload=payload, received_at=now}))
end
local jid = redis.call('GET', 'lsa:pending:' .. pid)
if jid then
  local k = 'lsa:job:' .. jid
  redis.call('HINCRBY', k, 'events', 1)
  redis.call('HSET', k, 'last_reason', reason)
  local lost = redis.call('EXISTS', rqp .. jid) == 0 and
    now - tonumber(redis.call('HGET', k, 'created_at') or now) > lost_after
  return {jid, lost and 1 or 0}
end
jid = tostring(redis.call('INCR', 'lsa:job_seq'))
redis.call('HSET', 'lsa:job:' .. jid, 'id', jid, 'project_id', pid, 'reason', reason,
  'last_reason', reason, 'events', 1, 'status', 'pending', 'attempts', 0, 'max_attempts', maxa,
  'not_before', nb, 'created_at', now)
redis.call('SET', 'lsa:pending:' .. pid, jid)
redis.call('LPUSH', 'lsa:jobs', jid)
for _, o in ipairs(redis.call('LRANGE', 'lsa:jobs', %(keep)d, -1)) do
  redis.call('EXPIRE', 'lsa:job:' .. o, %(ttl)d)
end
redis.call('LTRIM', 'lsa:jobs', 0, %(keep)d - 1)
return {jid, 1}
""" % {"keep": KEEP_JOBS, "ttl": JOB_TTL}


def redact_url(url: str) -> str:
    """The queue URL without its password (for logs and ``/health``)."""
    parts = urlsplit(url)
    if parts.password:
        host = parts.hostname or ""
        netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
        return parts._replace(netloc=netloc).geturl()
    return url


def rq_id(job_id: int) -> str:
    """The deterministic RQ id of our job ``job_id``."""
    return f"lsa-{int(job_id)}"


class JobFailed(RuntimeError):
    """Raised to RQ by ``run_job`` after our record says the job failed: RQ retries it
    when the record says ``pending``, and fails it when it says ``failed``."""


class RefusedJob(RuntimeError):
    """An RQ job in our queue that names a function or callback other than ours."""


class OurJob(RQJob):
    """An RQ job that runs :data:`RUN_JOB` and calls :func:`on_failure`, nothing else.

    RQ imports whatever function a job's record names; anyone who can write to the Redis
    could otherwise make every worker run any importable callable."""

    @property
    def func(self) -> Callable[..., Any]:
        if self.func_name != RUN_JOB or self.instance is not None:
            raise RefusedJob(f"RQ job {self.id} names {self.func_name!r}, not {RUN_JOB}: not run")
        # resolved by name, as RQ resolves any job's function: the worker module imports
        # this one, not the other way round
        return import_attribute(RUN_JOB)

    @property
    def failure_callback(self) -> Callable[..., Any] | None:
        return on_failure if self._failure_callback_name == ON_FAILURE else None

    @property
    def success_callback(self) -> None:
        return None

    @property
    def stopped_callback(self) -> None:
        return None


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
        As for :class:`~ls_agreement.plugin.jobs.JobQueue`; RQ's retry intervals are whole
        seconds, so a backoff is rounded up to one.
    lease : float
        Seconds a running job's heartbeat lasts (rounded up to whole seconds, as RQ keeps
        them): a killed worker's job goes to another worker this long after its last beat.
    report_dir : Path, optional
        Where :meth:`report_file` materialises the latest report of a project for the
        pages of ``serve`` (the worker that wrote it may be on another machine).
    """

    def __init__(self, url: str, *, max_attempts: int = 3, backoff: float = 5.0,
                 max_backoff: float = 300.0, lease: float = 30.0,
                 report_dir: Path | None = None) -> None:
        import redis
        from rq import Queue
        from rq.serializers import JSONSerializer

        if max_attempts < 1:
            raise BadInput(f"max_attempts must be >= 1, got {max_attempts}")
        if lease <= 0:
            raise BadInput(f"lease must be > 0 seconds, got {lease}")
        self.url = url
        self.max_attempts, self.backoff, self.max_backoff = max_attempts, backoff, max_backoff
        self.lease = max(1, math.ceil(lease))
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
        self.rq = Queue(RQ_QUEUE, connection=self.r, job_class=OurJob, serializer=JSONSerializer)
        self._enqueue = self.r.register_script(ENQUEUE)
        self.lost_after = LOST_AFTER
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

    def retry_wait(self, attempt: int) -> int:
        """Seconds before the retry that follows attempt ``attempt`` (1-based)."""
        return math.ceil(min(self.max_backoff, self.backoff * 2.0 ** (attempt - 1)))

    # -- the job interface ------------------------------------------------------------------
    def enqueue(self, project_id: int, reason: str, *, delay: float = 0.0,
                action: str | None = None, payload: bytes | str | None = None) -> Job:
        """Store the event (if any) and bump the project's pending job or open one, which
        RQ then holds until the project's running job (if any) ends. Both are in Redis
        when this returns (see the module docstring)."""
        if isinstance(payload, bytes):
            payload = payload.decode("utf-8", errors="replace")
        now = time.time()
        jid, hand = self._enqueue(args=[int(project_id), reason, action or "", payload or "",
                                        repr(now), self.max_attempts, repr(now + max(0.0, delay)),
                                        RQJob.redis_job_namespace_prefix + "lsa-",
                                        self.lost_after])
        jid = int(jid)
        if int(hand):
            self._hand(jid, int(project_id), delay)
        return self.get(jid)

    def _hand(self, job_id: int, project_id: int, delay: float = 0.0) -> None:
        """Give our job to RQ: one RQ job per id, one running job per project."""
        from datetime import timedelta

        from rq import Callback, Retry
        from rq.rate_limit import RateLimit

        if self.rq.job_class.exists(rq_id(job_id), connection=self.r):
            return
        opts: dict[str, Any] = dict(
            args=(int(job_id),), job_id=rq_id(job_id), timeout=-1, result_ttl=600,
            failure_ttl=24 * 3600, on_failure=Callback(ON_FAILURE),
            rate_limit=RateLimit(f"lsa-project-{int(project_id)}", 1),
            retry=Retry(max=self.max_attempts - 1,
                        interval=[self.retry_wait(a) for a in range(1, self.max_attempts)])
            if self.max_attempts > 1 else None)
        if delay > 0:
            opts["job_timeout"] = opts.pop("timeout")
            self.rq.enqueue_in(timedelta(seconds=delay), RUN_JOB, **opts)
        else:
            self.rq.enqueue_call(RUN_JOB, **opts)

    def start(self, job_id: int) -> Job | None:
        """Mark our job running as RQ starts it (None: it ended already). It stops taking
        events first, so the events it then reads include every event it counted."""
        key = f"{P}job:{int(job_id)}"
        pid = self.r.hget(key, "project_id")
        if pid is None:
            return None

        def take(pipe: Any) -> str | None:
            pending = pipe.get(f"{P}pending:{int(pid)}")
            status = (pipe.hget(key, "status") or b"").decode()
            pipe.multi()
            if status in (DONE, FAILED):
                return None
            if pending is not None and int(pending) == int(job_id):
                pipe.delete(f"{P}pending:{int(pid)}")
            pipe.hset(key, mapping={"status": RUNNING, "started_at": repr(time.time()),
                                    "error": ""})
            pipe.hincrby(key, "attempts", 1)
            return status

        if self.r.transaction(take, f"{P}pending:{int(pid)}", key, value_from_callable=True) is None:
            return None
        return self.get(job_id)

    def claim(self) -> Job | None:
        """Not used past one machine: RQ hands jobs to :meth:`start`."""
        return None

    def finish(self, job: Job, ok: bool, error: str | None = None, *, retry: bool = True,
               report_path: str | None = None,
               result: Mapping[str, Any] | None = None) -> Job:
        """Record the outcome. A failure with attempts left (and ``retry``) goes back to
        ``pending`` for RQ's retry, unless the project has a newer pending job, which reads
        the project anyway: then, as for a permanent failure, RQ is told not to retry."""
        from rq import get_current_job

        key = f"{P}job:{job.id}"
        res = json.dumps(dict(result), default=str) if result is not None else ""
        now = time.time()

        rq_job = get_current_job()
        # RQ's count rules (an abandoned attempt used one too); outside a worker, ours
        can_retry = (job.attempts < job.max_attempts if rq_job is None
                     else bool(rq_job.retries_left))

        def record(pipe: Any) -> bool:
            cur = pipe.hgetall(key)
            newer = pipe.get(f"{P}pending:{job.project_id}")
            pipe.multi()
            if not cur or _job(cur).status != RUNNING or _job(cur).attempts != job.attempts:
                return False     # interrupted and taken over meanwhile: keep the newer state
            fields = {"finished_at": repr(now), "error": error or "", "result": res}
            if ok:
                fields.update(status=DONE, error="", report_path=report_path or "")
            elif retry and can_retry and newer is None:
                fields.update(status=PENDING, not_before=repr(now + self.retry_wait(job.attempts)))
            else:
                if newer is not None and retry and can_retry:
                    fields["error"] = f"{error} (retry folded into job {int(newer)})"
                fields["status"] = FAILED
            pipe.hset(key, mapping=fields)
            if fields["status"] != PENDING:
                pipe.expire(key, JOB_TTL)
            return True

        if self.r.transaction(record, key, f"{P}pending:{job.project_id}", value_from_callable=True):
            out = self.get(job.id)
            if out.status == FAILED and rq_job is not None:
                rq_job.retries_left = 0        # RQ fails it instead of retrying
            if ok and report_path:
                self._set_latest(job.project_id, report_path, result)
            return out
        return self.get(job.id)

    def recover(self) -> list[Job]:
        """Nothing to do at start-up: jobs and RQ's state survive in Redis, and a pending job
        RQ lacks (its receiver died before handing it over) is handed again by the project's
        next enqueue, such as ``serve``'s start-up reconcile (:data:`ENQUEUE`)."""
        return []

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
        """Forget the project's events up to id ``upto``: only the project's running job
        calls it, and new events are only ever appended, so the first n are the applied ones."""
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
        return None

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
        self.r.hset(f"{P}projects", key, json.dumps(row, default=str))
        path = Path(report_path)
        try:
            st = path.stat()
            seen = (st.st_mtime, st.st_size)
            if self._report_seen.get(project_id) != seen:
                self._put_report(project_id, path)
                self._report_seen[project_id] = seen
        except OSError:
            pass

    def _put_report(self, project_id: int, path: Path) -> None:
        """The report file's bytes, a chunk at a time (a large project's report is more than
        one Redis value may hold, and never in memory whole), under a new generation that
        one transaction makes current; the old one is unlinked. Chunks of a writer that
        dies before its switch expire."""
        gen = uuid.uuid4().hex
        chunks = f"{P}report:{project_id}:{gen}"
        with path.open("rb") as f:
            while chunk := f.read(_REPORT_CHUNK):
                pipe = self.r.pipeline(transaction=False)
                pipe.rpush(chunks, chunk)
                pipe.expire(chunks, UNADOPTED_SECONDS)
                pipe.execute()
        old = self.r.get(f"{P}report_gen:{project_id}")
        pipe = self.r.pipeline(transaction=True)
        pipe.set(f"{P}report_gen:{project_id}", gen)
        pipe.persist(chunks)
        pipe.incr(f"{P}report_version:{project_id}")
        pipe.execute()
        if old is not None:
            self.r.unlink(f"{P}report:{project_id}:{old.decode()}")

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
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".report-{os.getpid()}-{threading.get_ident()}.json")
        for _ in range(3):
            # a report stored meanwhile unlinks the chunks being read: read the new one
            ver, gen = self.r.mget(f"{P}report_version:{pid}", f"{P}report_gen:{pid}")
            if ver is None or gen is None:
                return None
            chunks = f"{P}report:{pid}:{gen.decode()}"
            with tmp.open("wb") as f:
                start = 0
                while block := self.r.lrange(chunks, start, start):
                    f.write(block[0])
                    start += 1
            if self.r.get(f"{P}report_gen:{pid}") == gen:
                os.replace(tmp, path)
                stamp.write_text(ver.decode())
                return path
        tmp.unlink(missing_ok=True)
        return None


def on_failure(rq_job: RQJob, connection: Any, exc_type: type[BaseException] | None,
               exc: BaseException | None, tb: Any) -> None:
    """RQ's failure callback. A failure our executor recorded (:class:`JobFailed`) is done
    with; a job RQ found abandoned (its worker was killed, its heartbeat ran out), or one
    that raised past the executor, is recorded here: back to pending for RQ's retry, or
    failed when no attempt is left or a newer pending job of the project reads it anyway
    (RQ is then told not to retry it)."""
    from rq.exceptions import AbandonedJobError

    if isinstance(exc, JobFailed) or not rq_job.id.startswith("lsa-"):
        return
    key = f"{P}job:{int(rq_job.id[4:])}"
    h = connection.hgetall(key)
    if not h or _job(h).status != RUNNING:
        return
    newer = connection.get(f"{P}pending:{_job(h).project_id}")
    now = time.time()
    abandoned = isinstance(exc, AbandonedJobError)
    why = "interrupted: its worker stopped beating" if abandoned else f"{type(exc).__name__}: {exc}"[:2000]
    if rq_job.retries_left and newer is None:
        if abandoned:
            # a dead worker is no failure of Label Studio: RQ's retry runs it again now, on
            # the project's slot it holds (the backoff stays stored for real failures: RQ
            # saves a job's fields and keeps those it no longer has in memory)
            rq_job.retry_intervals = None
        connection.hset(key, mapping={"status": PENDING, "error": why, "finished_at": repr(now),
                                      "not_before": repr(now + rq_job.get_retry_interval())})
        return
    why += f"; covered by job {int(newer)}" if newer is not None else "; no attempts left"
    connection.hset(key, mapping={"status": FAILED, "finished_at": repr(now), "error": why})
    connection.expire(key, JOB_TTL)
    rq_job.retries_left = 0

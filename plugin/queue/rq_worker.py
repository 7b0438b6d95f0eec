"""``ls-agreement worker --queue redis://…``: an RQ worker that runs the service's jobs.

Each process runs one RQ ``SimpleWorker`` on the queue ``ls-agreement``: jobs run in the
process itself, not in a forked child, so the live state of the projects it served last
stays in memory and is reused while no other worker touched them (the version check of
plugin/queue/shared_state.py). Start as many as you like, on any machine that reaches
Redis and Label Studio.

Beside RQ's loop, two threads:

- the **lease** thread renews the project lock of the running job every ``lease/3`` s;
- the **reaper** thread (:meth:`RedisQueue.reap`) hands due retries to RQ and gives the
  job of a worker that died (its lease ran out) to another worker.

RQ's own work loop returns on a Redis error outside its wait for jobs (a Redis restart in
the middle of a heartbeat); :func:`serve_forever` starts it again, so a worker outlives a
Redis restart.
"""
from __future__ import annotations

import os
import socket
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, TextIO

from ..job_backend import Job
from .redis_queue import RedisQueue, redact_url

__all__ = ["run_job", "WorkerProcess", "serve_forever"]


@dataclass
class _Context:
    """What :func:`run_job` needs inside a worker process (set by :class:`WorkerProcess`)."""

    queue: RedisQueue
    executor: Any          # plugin.worker.Worker: runs a claimed job and records its outcome
    log: TextIO | None


_CTX: _Context | None = None


def run_job(job_id: int) -> dict[str, Any]:
    """The RQ job: claim our job ``job_id``, run it under the project's lease, record it.

    Returns
    -------
    dict
        ``{"job", "ran", "status"}``; ``ran`` is False when the job was done already or its
        project is busy on another worker (it then waits as the project's pending job).
    """
    ctx = _CTX
    if ctx is None:
        raise RuntimeError("run_job runs inside `ls-agreement worker --queue redis://…`")
    job = ctx.queue.start(int(job_id))
    if job is None:
        return {"job": int(job_id), "ran": False, "status": None}
    stop = threading.Event()
    lease = threading.Thread(target=_renew, args=(ctx.queue, job, stop, ctx.log),
                             name=f"ls-agreement-lease-{job.id}", daemon=True)
    lease.start()
    try:
        out = ctx.executor.execute(job)
    finally:
        stop.set()
    return {"job": job.id, "ran": True, "status": out.status}


def _log(stream: TextIO | None, msg: str) -> None:
    if stream is not None:
        print(time.strftime("%H:%M:%S ") + msg, file=stream, flush=True)


def _renew(queue: RedisQueue, job: Job, stop: threading.Event, log: TextIO | None) -> None:
    while not stop.wait(queue.lease / 3):
        try:
            if not queue.renew(job):
                _log(log, f"job {job.id}: lost the lease of project {job.project_id} "
                          "(another worker may take the job over)")
        except Exception as exc:  # noqa: BLE001 - Redis down: try again; the lease may run out
            _log(log, f"job {job.id}: cannot renew the lease: {exc}")


class WorkerProcess:
    """One worker process: RQ's loop, the lease and the reaper threads.

    Parameters
    ----------
    queue : RedisQueue
    runner : LiveRunner
        Built with ``shared=SharedProjects(queue.r)``.
    name : str, optional
        The RQ worker name (default: host and pid).
    reap_every : float
        Seconds between two reaper passes.
    """

    def __init__(self, queue: RedisQueue, runner: Any, *, name: str | None = None,
                 reap_every: float = 1.0, log: TextIO | None = sys.stderr) -> None:
        from ..worker import Worker

        self.queue, self.runner, self.log = queue, runner, log
        self.name = name or f"ls-agreement-{socket.gethostname()}-{os.getpid()}"
        self.reap_every = float(reap_every)
        self.stop = threading.Event()
        self.executor = Worker(queue, runner, threading.Event(), log=log)   # not started
        self._reaper = threading.Thread(target=self._reap, name="ls-agreement-reaper", daemon=True)

    def _reap(self) -> None:
        while not self.stop.wait(self.reap_every):
            try:
                handed = self.queue.reap()
                if handed:
                    _log(self.log, f"reaper: handed job(s) {handed} to the workers")
            except Exception as exc:  # noqa: BLE001 - Redis restarting: next pass
                _log(self.log, f"reaper: {type(exc).__name__}: {exc}")

    def run(self, *, burst: bool = False) -> int:
        """Work until SIGTERM/SIGINT (or, with ``burst``, until the queue is empty)."""
        global _CTX
        _CTX = _Context(self.queue, self.executor, self.log)
        self._reaper.start()
        _log(self.log, f"worker {self.name} on {redact_url(self.queue.url)} "
                       f"(queue {self.queue.rq.name}, lease {self.queue.lease:g} s)")
        try:
            return serve_forever(self.queue, self.name, burst=burst, log=self.log)
        finally:
            self.stop.set()
            close = getattr(self.runner, "close", None)
            if close is not None:
                close()


def serve_forever(queue: RedisQueue, name: str, *, burst: bool = False,
                  log: TextIO | None = sys.stderr) -> int:
    """RQ's work loop, started again after a Redis error until a stop was requested."""
    from rq import SimpleWorker

    class _Worker(SimpleWorker):
        # RQ leaves its loop the same way on SIGTERM when idle and on a Redis error, so
        # the signal is noted here to tell them apart
        stop_asked = False

        def request_stop(self, signum: Any, frame: Any) -> None:
            self.stop_asked = True
            super().request_stop(signum, frame)

    delay, n = 0.5, 0
    while True:
        # a fresh name after a restart: the old registration may outlive it in Redis
        worker = _Worker([queue.rq], connection=queue.r, name=name if not n else f"{name}.{n}")
        n += 1
        try:
            worker.work(burst=burst, logging_level="WARNING")
        except Exception as exc:  # noqa: BLE001 - registration while Redis is down
            _log(log, f"worker {name}: {type(exc).__name__}: {exc}; retrying in {delay:g} s")
        # a loop that returned without a stop request stopped on a Redis error: go on
        # once Redis answers again
        if burst or worker.stop_asked:
            return 0
        time.sleep(delay)
        delay = min(10.0, delay * 2)

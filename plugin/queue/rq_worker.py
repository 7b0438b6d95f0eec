"""``ls-agreement worker --queue redis://…``: an RQ worker that runs the service's jobs.

Each process runs one RQ ``SimpleWorker`` on the queue ``ls-agreement``: jobs run in the
process itself, so the live state of the projects it served last stays in memory and is
reused while no other worker touched them (plugin/queue/shared_state.py). Start as many
as you like, on any machine that reaches Redis and Label Studio. Added to RQ's worker
(docs/design.md, "Job queue"): a heartbeat of the running job from a thread (a
``SimpleWorker`` beats nobody while its job runs), RQ's scheduler step and abandoned-job
cleanup every second by one worker at a time (:class:`Upkeep`; RQ runs them every 10
minutes and in a forked scheduler), and a restart of RQ's loop after a Redis error.
"""
from __future__ import annotations

import os
import socket
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, TextIO

from ..job_backend import DONE
from .redis_queue import JobFailed, OurJob, RedisQueue, redact_url

__all__ = ["run_job", "WorkerProcess", "Upkeep", "serve_forever"]


@dataclass
class _Context:
    """What :func:`run_job` needs inside a worker process (set by :class:`WorkerProcess`)."""

    queue: RedisQueue
    executor: Any          # plugin.worker.Worker: runs a claimed job and records its outcome
    log: TextIO | None


_CTX: _Context | None = None


def run_job(job_id: int) -> dict[str, Any]:
    """The RQ job: run our job ``job_id`` and record its outcome.

    Returns
    -------
    dict
        ``{"job", "ran", "status"}``; ``ran`` is False when the job had ended already.

    Raises
    ------
    JobFailed
        When the job failed: RQ retries it or fails it, as :meth:`RedisQueue.finish` said.
    """
    ctx = _CTX
    if ctx is None:
        raise RuntimeError("run_job runs inside `ls-agreement worker --queue redis://…`")
    job = ctx.queue.start(int(job_id))
    if job is None:
        return {"job": int(job_id), "ran": False, "status": None}
    out = ctx.executor.execute(job)
    if out.status != DONE and out.attempts == job.attempts:
        raise JobFailed(f"job {job.id}: {out.error}")
    return {"job": job.id, "ran": True, "status": out.status}


def _log(stream: TextIO | None, msg: str) -> None:
    if stream is not None:
        print(time.strftime("%H:%M:%S ") + msg, file=stream, flush=True)


class Upkeep:
    """RQ's two upkeep steps, by one worker at a time (a Redis lock): due retries to the
    queue (the scheduler's step) and jobs of dead workers to their retry or failure (the
    started-job registry's cleanup: :func:`~.redis_queue.on_failure` records them)."""

    def __init__(self, queue: RedisQueue) -> None:
        from rq.registry import StartedJobRegistry
        from rq.scheduler import RQScheduler
        from rq.timeouts import TimerDeathPenalty

        q = self.rq = queue.rq
        self.scheduler = RQScheduler([q], connection=q.connection, serializer=q.serializer,
                                     logging_level="WARNING")
        self.scheduler.prepare_registries([q.name])
        # the failure callbacks of abandoned jobs run here, maybe off the main thread: a
        # timer bounds them, not SIGALRM
        self.started = StartedJobRegistry(queue=q, job_class=OurJob,
                                          death_penalty_class=TimerDeathPenalty)

    def __call__(self) -> bool:
        """One pass; False when another worker holds the lock."""
        lock = self.rq.connection.lock("lsa:upkeep", timeout=30, blocking=False)
        if not lock.acquire():
            return False
        try:
            self.scheduler.enqueue_scheduled_jobs()
            self.started.cleanup()
        finally:
            lock.release()
        return True


class WorkerProcess:
    """One worker process: RQ's loop, the job heartbeat and RQ's upkeep every ``tick`` s.

    Parameters
    ----------
    queue : RedisQueue
    runner : LiveRunner
        Built with ``shared=SharedProjects(queue.r)``.
    name : str, optional
        The RQ worker name (default: host and pid).
    tick : float
        Seconds between two upkeep passes.
    """

    def __init__(self, queue: RedisQueue, runner: Any, *, name: str | None = None,
                 tick: float = 1.0, log: TextIO | None = sys.stderr) -> None:
        from ..worker import Worker

        self.queue, self.runner, self.log = queue, runner, log
        self.name = name or f"ls-agreement-{socket.gethostname()}-{os.getpid()}"
        self.tick = float(tick)
        self.stop = threading.Event()
        self.executor = Worker(queue, runner, threading.Event(), log=log)   # not started
        self._upkeep = threading.Thread(target=self._keep, name="ls-agreement-upkeep", daemon=True)

    def _keep(self) -> None:
        upkeep = Upkeep(self.queue)
        while not self.stop.wait(self.tick):
            try:
                upkeep()
            except Exception as exc:  # noqa: BLE001 - Redis restarting: next pass
                _log(self.log, f"upkeep: {type(exc).__name__}: {exc}")

    def run(self, *, burst: bool = False) -> int:
        """Work until SIGTERM/SIGINT (or, with ``burst``, until the queue is empty)."""
        global _CTX
        _CTX = _Context(self.queue, self.executor, self.log)
        self._upkeep.start()
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
        # the signal is noted here to tell them apart (on the class: a signal between
        # two loops stops the next one too)
        stop_asked = False

        def request_stop(self, signum: Any, frame: Any) -> None:
            type(self).stop_asked = True
            super().request_stop(signum, frame)

        def handle_exception(self, job: Any, *exc_info: Any) -> None:
            if not isinstance(exc_info[1], JobFailed):    # our executor logged it already
                super().handle_exception(job, *exc_info)

        def get_heartbeat_ttl(self, job: Any, working_time: float = 0.0) -> int:
            return queue.lease

        def execute_job(self, job: Any, rq_queue: Any) -> None:
            stop = threading.Event()
            beat = threading.Thread(target=self._beat, args=(job, stop), daemon=True,
                                    name=f"ls-agreement-beat-{job.id}")
            beat.start()
            try:
                super().execute_job(job, rq_queue)
            finally:
                stop.set()

        def _beat(self, job: Any, stop: threading.Event) -> None:
            while not stop.wait(queue.lease / 3):
                execution = next(iter(self.executions.values()), None)
                if execution is None:
                    continue
                try:
                    self.maintain_heartbeats(job, execution)
                except Exception as exc:  # noqa: BLE001 - Redis down: the next beat may do
                    _log(log, f"job {job.id}: heartbeat failed: {exc}")

    delay, n = 0.5, 0
    while True:
        t0 = time.monotonic()
        try:
            # a fresh name after a restart: the old registration may outlive it in Redis
            worker = _Worker([queue.rq], connection=queue.r, name=name if not n else f"{name}.{n}",
                             job_class=OurJob, serializer=queue.rq.serializer)
            n += 1
            worker.work(burst=burst, logging_level="WARNING")
        except Exception as exc:  # noqa: BLE001 - registration while Redis is down
            _log(log, f"worker {name}: {type(exc).__name__}: {exc}; retrying in {delay:g} s")
        # a loop that returned without a stop request stopped on a Redis error: go on
        # once Redis answers again (quickly if it had been working a while)
        if burst or _Worker.stop_asked:
            return 0
        delay = 0.5 if time.monotonic() - t0 > 30 else delay
        time.sleep(delay)
        delay = min(10.0, delay * 2)

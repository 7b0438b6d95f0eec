"""The Redis job queue (plugin/queue/redis_queue.py, rq_worker.py) on a real
``redis-server`` and RQ's own worker: several queue objects stand for several processes
(each has its own connection), a worker process is killed with SIGKILL, Redis is killed
and restarted for real. The jobs run :class:`Runs` in place of the live runner (which
needs Label Studio: test_redis_workers.py runs the whole service)."""
from __future__ import annotations

import dataclasses
import json
import os
import pickle
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any, Callable

import pytest
from rq.job import Job as RQJob, JobStatus

from ls_agreement.plugin.job_backend import DONE, FAILED, PENDING, RUNNING, Job
from tests.local_redis import LocalRedis
from ls_agreement.plugin.queue import open_queue, rq_worker
from ls_agreement.plugin.queue.redis_queue import RedisQueue, redact_url, rq_id


def _queue(redis_server: LocalRedis, **kw: Any) -> RedisQueue:
    return RedisQueue(redis_server.url, **{"lease": 1.0, "backoff": 0.2, **kw})


def _rq_status(q: RedisQueue, job: Job) -> JobStatus | None:
    return RQJob.fetch(rq_id(job.id), connection=q.r, serializer=q.rq.serializer).get_status()


class Runs:
    """Runs each job the worker gives it: records (job id, project, attempt, start, end),
    calls ``during(job)`` mid-run, and fails it with ``fail(job)``'s message if any."""

    def __init__(self, q: RedisQueue, fail: Callable[[Job], str | None] = lambda j: None,
                 during: Callable[[Job], None] = lambda j: None, permanent: bool = False) -> None:
        self.q, self.fail, self.during, self.permanent = q, fail, during, permanent
        self.runs: list[tuple[int, int, int, float, float]] = []

    def execute(self, job: Job) -> Job:
        t0 = time.time()
        self.during(job)
        err = self.fail(job)
        self.runs.append((job.id, job.project_id, job.attempts, t0, time.time()))
        if err:
            return self.q.finish(job, False, err, retry=not self.permanent)
        return self.q.finish(job, True, result={"attempt": job.attempts})


def work(q: RedisQueue, runs: Runs) -> None:
    """RQ's worker (ours: rq_worker.serve_forever) in this process until the queue is empty."""
    rq_worker._CTX = rq_worker._Context(q, runs, None)
    try:
        rq_worker.serve_forever(q, f"test-{time.monotonic_ns()}", burst=True, log=None)
    finally:
        rq_worker._CTX = None


def test_events_coalesce_into_one_pending_job_across_processes(redis_server: LocalRedis) -> None:
    a, b = _queue(redis_server), _queue(redis_server)
    jobs = [(a if i % 2 else b).enqueue(7, f"event {i}", action="ANNOTATION_UPDATED",
                                        payload=json.dumps({"i": i}).encode()) for i in range(20)]
    assert {j.id for j in jobs} == {jobs[0].id}, "one pending job per project"
    assert a.get(jobs[0].id).events == 20
    assert list(a.rq.job_ids) == [rq_id(jobs[0].id)], "handed to RQ once"
    assert [json.loads(e.payload or "")["i"] for e in b.events(7)] == list(range(20))
    other = a.enqueue(8, "another project", action="ANNOTATION_CREATED", payload=b"{}")
    assert other.id != jobs[0].id and len(a.rq.job_ids) == 2
    runs = Runs(a)
    work(a, runs)
    assert sorted(r[0] for r in runs.runs) == sorted({jobs[0].id, other.id})
    assert a.get(jobs[0].id).status == DONE and a.events(7), "events stay until the runner drops them"


def test_one_project_never_runs_on_two_workers(redis_server: LocalRedis) -> None:
    a, b = _queue(redis_server), _queue(redis_server)
    first = a.enqueue(1, "e1", action="ANNOTATION_UPDATED", payload=b"{}")
    seen: dict[str, Any] = {}

    def during(job: Job) -> None:
        if job.id != first.id:
            return
        # events while the first job runs open the project's next job, which RQ holds
        # (its rate limit of one per project) and which keeps coalescing meanwhile
        second = b.enqueue(1, "e2", action="ANNOTATION_UPDATED", payload=b"{}")
        third = b.enqueue(1, "e3", action="ANNOTATION_UPDATED", payload=b"{}")
        other = b.enqueue(2, "other project", action="ANNOTATION_UPDATED", payload=b"{}")
        seen.update(second=second, third=third, held=_rq_status(b, second),
                    other=_rq_status(b, other), queued=list(b.rq.job_ids))

    runs = Runs(a, during=during)
    work(a, runs)
    second = seen["second"]
    assert second.id != first.id and seen["third"].id == second.id
    assert b.get(second.id).events == 2, "coalesced while waiting"
    assert seen["held"] == JobStatus.RATE_LIMITED and rq_id(second.id) not in seen["queued"]
    assert seen["other"] == JobStatus.QUEUED, "another project is not held"
    order = [r for r in runs.runs if r[1] == 1]
    assert [r[0] for r in order] == [first.id, second.id], "RQ promoted the waiting job"
    assert order[1][3] >= order[0][4], "two jobs of one project ran at once"
    assert a.counts()[DONE] == 3


_DOOMED = """
import sys, time
from ls_agreement.plugin.queue import rq_worker
from ls_agreement.plugin.queue.redis_queue import RedisQueue
class Hang:
    def execute(self, job):
        print("running", job.id, flush=True)
        time.sleep(600)
q = RedisQueue(sys.argv[1], lease=3.0, backoff=1.0)
rq_worker._CTX = rq_worker._Context(q, Hang(), None)
rq_worker.serve_forever(q, "doomed", log=None)
"""


def test_a_killed_workers_job_goes_to_another_after_its_lease(redis_server: LocalRedis,
                                                              tmp_path: Path) -> None:
    # a lease of 3 s: on a loaded machine a 1 s lease's heartbeat can land late (the test
    # then reads a living worker as dead, which is the thing it checks does not happen)
    q = _queue(redis_server, backoff=1.0, lease=3.0)
    job = q.enqueue(3, "e", action="ANNOTATION_UPDATED", payload=b"{}")
    log = tmp_path / "doomed.log"
    with open(log, "wb") as fh:
        doomed = subprocess.Popen([sys.executable, "-c", _DOOMED, redis_server.url],
                                  stdout=fh, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while q.get(job.id).status != RUNNING:
            assert time.monotonic() < deadline and doomed.poll() is None, log.read_text()
            time.sleep(0.05)
        upkeep = rq_worker.Upkeep(q)
        time.sleep(4.0)                  # past the lease: only its heartbeat keeps the job
        assert upkeep() and q.get(job.id).status == RUNNING, "a beating worker keeps its job"
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(10)
    finally:
        if doomed.poll() is None:
            doomed.kill()
            doomed.wait(10)
    time.sleep(4.0)                      # the dead worker's last beat runs out
    assert upkeep()
    got = q.get(job.id)
    assert got.status == PENDING and "interrupted" in (got.error or ""), got
    assert _rq_status(q, job) == JobStatus.QUEUED, "RQ's retry, at once: no failure to back off from"
    stored = RQJob.fetch(rq_id(job.id), connection=q.r, serializer=q.rq.serializer)
    assert stored.retries_left == 1 and stored.retry_intervals == [1, 2], "the backoff stays for failures"
    runs = Runs(q)
    work(q, runs)
    again = q.get(job.id)
    assert again.status == DONE and again.attempts == 2 and [r[2] for r in runs.runs] == [2]
    # the killed worker's attempt, finishing late, cannot overwrite the outcome
    late = dataclasses.replace(got, status=RUNNING, attempts=1)
    assert q.finish(late, False, "late").status == DONE


def test_failures_retry_with_backoff_then_fail(redis_server: LocalRedis) -> None:
    q = _queue(redis_server, max_attempts=3, backoff=2.0)
    job = q.enqueue(4, "e", action="ANNOTATION_UPDATED", payload=b"{}")
    runs = Runs(q, fail=lambda j: f"boom {j.attempts}")
    upkeep = rq_worker.Upkeep(q)
    waits = []
    for attempt in (1, 2, 3):
        work(q, runs)
        out = q.get(job.id)
        assert [r[2] for r in runs.runs] == list(range(1, attempt + 1)), "one run per attempt"
        if attempt < 3:
            assert out.status == PENDING and out.error == f"boom {attempt}"
            assert out.finished_at is not None
            waits.append(out.not_before - out.finished_at)
            upkeep()
            work(q, runs)
            # no retry before its backoff: none has run yet, unless this machine stalled past
            # the backoff meanwhile (a full suite beside a 10 GB report once stalled it 60 s),
            # and then it started no earlier than the backoff let it
            assert all(r[3] >= out.not_before for r in runs.runs[attempt:]), "a retry does not start before its backoff"
            if len(runs.runs) == attempt:
                time.sleep(max(0.0, out.not_before - time.time() + 0.1))
                upkeep()
        else:
            assert out.status == FAILED and out.error == "boom 3"
    assert waits == [2.0, 4.0], f"exponential backoff: {waits}"
    assert _rq_status(q, job) == JobStatus.FAILED
    time.sleep(4.1)
    upkeep()
    work(q, runs)
    assert len(runs.runs) == 3, "not retried forever"


def test_permanent_and_covered_failures_are_not_retried(redis_server: LocalRedis) -> None:
    q = _queue(redis_server, max_attempts=3, backoff=1.0)
    job = q.enqueue(5, "e", action="ANNOTATION_UPDATED", payload=b"{}")
    work(q, Runs(q, fail=lambda j: "bad token", permanent=True))
    assert q.get(job.id).status == FAILED and _rq_status(q, job) == JobStatus.FAILED
    # a failure while a newer job of the project waits: that job reads the project anyway
    first = q.enqueue(6, "e", action="ANNOTATION_UPDATED", payload=b"{}")
    newer: list[Job] = []

    def fail(j: Job) -> str | None:
        if j.id == first.id:
            newer.append(q.enqueue(6, "during", action="ANNOTATION_UPDATED", payload=b"{}"))
            return "server down"
        return None

    runs = Runs(q, fail=fail)
    work(q, runs)
    out = q.get(first.id)
    assert out.status == FAILED and f"folded into job {newer[0].id}" in (out.error or "")
    assert _rq_status(q, first) == JobStatus.FAILED
    assert [r[0] for r in runs.runs] == [first.id, newer[0].id]
    assert q.get(newer[0].id).status == DONE


def test_an_error_past_the_executor_is_recorded_not_left_running(redis_server: LocalRedis) -> None:
    q = _queue(redis_server, max_attempts=2, backoff=1.0)
    job = q.enqueue(14, "e", action="ANNOTATION_UPDATED", payload=b"{}")

    class Broken(Runs):
        def execute(self, job: Job) -> Job:
            raise OSError("disk full")

    work(q, Broken(q))
    out = q.get(job.id)
    assert out.status == PENDING and out.error == "OSError: disk full", out
    time.sleep(max(0.0, out.not_before - time.time() + 0.1))
    rq_worker.Upkeep(q)()
    work(q, Broken(q))
    out = q.get(job.id)
    assert out.status == FAILED and out.attempts == 2 and "no attempts left" in (out.error or "")
    assert _rq_status(q, job) == JobStatus.FAILED


def test_rq_jobs_are_json_and_run_only_our_function(redis_server: LocalRedis, tmp_path: Path) -> None:
    q = _queue(redis_server)
    job = q.enqueue(9, "e", action="ANNOTATION_UPDATED", payload=b"{}")
    data = zlib.decompress(q.r.hget(RQJob.key_for(rq_id(job.id)), "data"))
    assert json.loads(data)[0] == "ls_agreement.plugin.queue.rq_worker.run_job", "JSON, no pickle"
    marker = tmp_path / "ran"
    foreign = q.rq.enqueue_call("os.system", args=[f"touch {marker}"])

    class Boom:
        def __reduce__(self) -> tuple[Any, ...]:
            return (os.system, (f"touch {marker}",))

    pickled = q.rq.enqueue_call("ls_agreement.plugin.queue.rq_worker.run_job", args=[job.id])
    q.r.hset(pickled.key, "data", zlib.compress(pickle.dumps((
        "ls_agreement.plugin.queue.rq_worker.run_job", None, [Boom()], {}))))
    runs = Runs(q)
    work(q, runs)
    assert not marker.exists(), "a job naming another function or holding a pickle ran code"
    for jid in (foreign.id, pickled.id):
        assert RQJob.fetch(jid, connection=q.r).get_status() == JobStatus.FAILED
    assert [r[0] for r in runs.runs] == [job.id], "our job ran"


def test_acknowledged_events_survive_a_redis_kill(redis_server: LocalRedis) -> None:
    q = _queue(redis_server)
    acked = [q.enqueue(9, f"e{i}", action="ANNOTATION_UPDATED",
                       payload=json.dumps({"n": i}).encode()).id for i in range(50)]
    redis_server.restart(kill=True)          # SIGKILL: only what the AOF has survives
    # the same client object reconnects by itself
    assert [json.loads(e.payload or "")["n"] for e in q.events(9)] == list(range(50))
    assert q.get(acked[0]).events == 50 and q.get(acked[0]).status == PENDING
    assert list(q.rq.job_ids) == [rq_id(acked[0])], "RQ's job survived too"
    q.enqueue(9, "after", action="ANNOTATION_UPDATED", payload=b"{}")
    assert len(q.events(9)) == 51


def test_a_restarted_service_keeps_pending_jobs(redis_server: LocalRedis, tmp_path: Path) -> None:
    q = _queue(redis_server)
    job = q.enqueue(11, "e", action="ANNOTATION_UPDATED", payload=b"{}")
    q.add_project(11, "connect", webhook_id=5)
    q.close()
    fresh = open_queue(redis_server.url, lease=1.0, report_dir=tmp_path)
    assert fresh.get(job.id).status == PENDING
    assert fresh.projects()[11]["webhook_id"] == 5
    assert fresh.counts()[PENDING] == 1 and list(fresh.rq.job_ids) == [rq_id(job.id)]


def test_a_lost_hand_over_is_repaired_by_the_next_event(redis_server: LocalRedis) -> None:
    """A receiver that stored its job and died before handing it to RQ: the project's next
    enqueue (an event, or serve's start-up reconcile) hands it over, once."""
    q = _queue(redis_server)
    q.lost_after = 0.3
    now = time.time()
    lost = int(q._enqueue(args=[13, "e", "ANNOTATION_UPDATED", "{}", repr(now), 3, repr(now),
                                RQJob.redis_job_namespace_prefix + "lsa-", q.lost_after])[0])
    assert q.enqueue(13, "soon after", action="ANNOTATION_UPDATED", payload=b"{}").id == lost
    assert list(q.rq.job_ids) == [], "not before the receiver had its time"
    time.sleep(0.4)
    assert q.enqueue(13, "startup", action="RECONCILE").id == lost
    assert list(q.rq.job_ids) == [rq_id(lost)]
    assert q.enqueue(13, "later", action="ANNOTATION_UPDATED", payload=b"{}").id == lost
    assert list(q.rq.job_ids) == [rq_id(lost)], "handed once"
    assert q.get(lost).events == 4


def test_report_file_reaches_another_machine(redis_server: LocalRedis, tmp_path: Path) -> None:
    worker_side, serve_side = _queue(redis_server), _queue(redis_server, report_dir=tmp_path / "pages")
    src = tmp_path / "worker" / "report.json"
    src.parent.mkdir()
    src.write_text('{"version": 1}')
    job = worker_side.enqueue(12, "e", action="ANNOTATION_UPDATED", payload=b"{}")
    got = worker_side.start(job.id)
    assert got is not None
    worker_side.finish(got, True, report_path=str(src), result={"n_tasks": 3})
    path = serve_side.report_file(12)
    assert path is not None and path != src and path.read_text() == '{"version": 1}'
    assert serve_side.projects()[12]["summary"] == {"n_tasks": 3}


def test_a_large_report_file_travels_in_chunks_and_replaces_the_last(
        redis_server: LocalRedis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A report file is stored a chunk at a time, never one value (Redis holds at most
    512 MB in one), and a newer one replaces it in one step: the old chunks go."""
    from ls_agreement.plugin.queue import redis_queue

    monkeypatch.setattr(redis_queue, "_REPORT_CHUNK", 1000)
    worker_side, serve_side = _queue(redis_server), _queue(redis_server, report_dir=tmp_path / "pages")
    src = tmp_path / "worker" / "report.json"
    src.parent.mkdir()
    for k, text in enumerate([json.dumps({"tasks": {str(t): t * 7 for t in range(900)}}), '{"n": 2}']):
        src.write_text(text)
        os.utime(src, (k + 1.0, k + 1.0))            # a new report: another mtime
        worker_side.set_latest(12, str(src), {"n": k})
        path = serve_side.report_file(12)
        assert path is not None and path.read_text() == text
        chunks = worker_side.r.keys(f"{redis_queue.P}report:12:*")
        assert len(chunks) == 1, "the last report's chunks were not dropped"
        assert worker_side.r.llen(chunks[0]) == -(-len(text.encode()) // 1000)
        assert worker_side.r.ttl(chunks[0]) == -1


def test_redact_and_bad_urls(redis_server: LocalRedis) -> None:
    assert redact_url("redis://:s3cret@host:6379/0") == "redis://:***@host:6379/0"
    with pytest.raises(ConnectionError, match="127.0.0.1:1/0"):
        open_queue("redis://127.0.0.1:1/0")
    with pytest.raises(ValueError):
        RedisQueue("redis://h/0", lease=0)


@pytest.mark.parametrize("argv, code, message", [
    (["worker", "--url", "http://127.0.0.1:9", "--token", "t"], 2, "--queue redis://"),
    (["worker", "--queue", "notaurl", "--url", "http://127.0.0.1:9", "--token", "t"], 2, "--queue redis://"),
    (["worker", "--queue", "redis://127.0.0.1:1/0", "--url", "ftp://x", "--token", "t"], 2, "--url must"),
    (["worker", "--queue", "redis://127.0.0.1:1/0", "--url", "http://127.0.0.1:9", "--token", "t",
      "--lease", "0"], 2, "--lease"),
    (["worker", "--queue", "redis://:pw@127.0.0.1:1/0", "--url", "http://127.0.0.1:9", "--token", "t",
      "--wait", "0"], 3, "does not answer"),
    (["serve", "--queue", "notaurl", "--url", "http://127.0.0.1:9", "--token", "t"], 2, "Redis URL"),
    (["serve", "--queue", "redis://127.0.0.1:1/0", "--url", "http://127.0.0.1:9", "--token", "t",
      "--port", "0"], 3, "does not answer"),
    (["serve"], 2, "--url and --token are required"),
    (["connect", "--project", "1"], 2, "--url and --token are required"),
])
def test_cli_refuses_bad_queue_options(argv: list[str], code: int, message: str,
                                       capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from ls_agreement.plugin.cli import main as cli_main
    for var in ("LABEL_STUDIO_URL", "LABEL_STUDIO_API_KEY", "LS_AGREEMENT_QUEUE"):
        monkeypatch.delenv(var, raising=False)
    assert cli_main(argv) == code
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert "pw@" not in err, "the Redis password is never printed"

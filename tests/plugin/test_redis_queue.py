"""The Redis job queue (plugin/queue/redis_queue.py) on a real ``redis-server``: several
queue objects stand for several processes (each has its own connection), and Redis is
killed and restarted for real. The processes themselves are in test_redis_workers.py."""
from __future__ import annotations

import json
import time
from typing import Any

import pytest

from ls_agreement.plugin.job_backend import DONE, FAILED, PENDING, RUNNING
from tests.local_redis import LocalRedis
from ls_agreement.plugin.queue import open_queue
from ls_agreement.plugin.queue.redis_queue import RedisQueue, redact_url


def _queue(redis_server: LocalRedis, **kw: Any) -> RedisQueue:
    return RedisQueue(redis_server.url, **{"lease": 1.0, "backoff": 0.2, **kw})


def _rq_ids(q: RedisQueue) -> list[str]:
    return list(q.rq.job_ids)


def test_events_coalesce_into_one_pending_job_across_processes(redis_server: LocalRedis) -> None:
    a, b = _queue(redis_server), _queue(redis_server)
    jobs = [(a if i % 2 else b).enqueue(7, f"event {i}", action="ANNOTATION_UPDATED",
                                        payload=json.dumps({"i": i}).encode()) for i in range(20)]
    assert {j.id for j in jobs} == {jobs[0].id}, "one pending job per project"
    assert a.get(jobs[0].id).events == 20
    assert _rq_ids(a) == [f"lsa-{jobs[0].id}-1"], "handed to RQ once"
    assert [json.loads(e.payload or "")["i"] for e in b.events(7)] == list(range(20))
    other = a.enqueue(8, "another project", action="ANNOTATION_CREATED", payload=b"{}")
    assert other.id != jobs[0].id and len(_rq_ids(a)) == 2


def test_one_project_never_runs_on_two_workers(redis_server: LocalRedis) -> None:
    a, b = _queue(redis_server, lease=30), _queue(redis_server, lease=30)
    first = a.enqueue(1, "e1", action="ANNOTATION_UPDATED", payload=b"{}")
    running = a.start(first.id)
    assert running is not None and running.status == RUNNING
    assert b.start(first.id) is None, "a job is claimed once"
    # an event during the run opens the next job; a second worker cannot start it
    second = b.enqueue(1, "e2", action="ANNOTATION_UPDATED", payload=b"{}")
    assert second.id != first.id
    assert b.start(second.id) is None and b.get(second.id).status == PENDING
    third = b.enqueue(1, "e3", action="ANNOTATION_UPDATED", payload=b"{}")
    assert third.id == second.id and b.get(second.id).events == 2, "coalesced while waiting"
    n_rq = len(_rq_ids(a))
    done = a.finish(running, True, result={"ok": 1})
    assert done.status == DONE
    assert len(_rq_ids(a)) == n_rq + 1, "the lock holder hands the waiting job over"
    assert b.start(second.id) is not None


def test_a_killed_workers_job_goes_to_another_after_its_lease(redis_server: LocalRedis) -> None:
    dead, alive = _queue(redis_server, lease=0.5), _queue(redis_server, lease=0.5)
    job = dead.enqueue(3, "e", action="ANNOTATION_UPDATED", payload=b"{}")
    assert dead.start(job.id) is not None
    assert alive.reap() == [], "a live lease is respected"
    time.sleep(0.8)                      # the "killed" worker never renews
    assert alive.reap() == [job.id]
    assert alive.get(job.id).status == PENDING and "lease" in (alive.get(job.id).error or "")
    again = alive.start(job.id)
    assert again is not None and again.attempts == 2
    assert alive.finish(again, True).status == DONE
    # the dead worker waking up late cannot overwrite the outcome
    assert dead.finish(again, False, "late").status == DONE


def test_failures_retry_with_backoff_then_fail(redis_server: LocalRedis) -> None:
    q = _queue(redis_server, max_attempts=3, backoff=0.3)
    job = q.enqueue(4, "e", action="ANNOTATION_UPDATED", payload=b"{}")
    waits = []
    for attempt in (1, 2, 3):
        got = q.start(job.id)
        assert got is not None and got.attempts == attempt
        out = q.finish(got, False, f"boom {attempt}")
        if attempt < 3:
            assert out.status == PENDING
            waits.append(out.not_before - out.finished_at if out.finished_at else None)
            assert q.start(job.id) is None, "a retry does not start before its backoff"
            assert q.reap() == [], "nor is it handed to RQ before"
            time.sleep(out.not_before - time.time() + 0.05)
            assert q.reap() == [job.id]
        else:
            assert out.status == FAILED and out.error == "boom 3"
    assert waits[1] is not None and waits[0] is not None and waits[1] > waits[0] * 1.5, \
        "exponential backoff"
    assert q.reap() == [], "not retried forever"


def test_acknowledged_events_survive_a_redis_kill(redis_server: LocalRedis) -> None:
    q = _queue(redis_server)
    acked = [q.enqueue(9, f"e{i}", action="ANNOTATION_UPDATED",
                       payload=json.dumps({"n": i}).encode()).id for i in range(50)]
    redis_server.restart(kill=True)          # SIGKILL: only what the AOF has survives
    # the same client object reconnects by itself
    assert [json.loads(e.payload or "")["n"] for e in q.events(9)] == list(range(50))
    assert q.get(acked[0]).events == 50 and q.get(acked[0]).status == PENDING
    q.enqueue(9, "after", action="ANNOTATION_UPDATED", payload=b"{}")
    assert len(q.events(9)) == 51


def test_a_restarted_service_keeps_pending_jobs(redis_server: LocalRedis, tmp_path: Any) -> None:
    q = _queue(redis_server)
    job = q.enqueue(11, "e", action="ANNOTATION_UPDATED", payload=b"{}")
    q.add_project(11, "connect", webhook_id=5)
    q.close()
    fresh = open_queue(redis_server.url, lease=1.0, report_dir=tmp_path)
    assert fresh.get(job.id).status == PENDING
    assert fresh.projects()[11]["webhook_id"] == 5
    assert fresh.counts()[PENDING] == 1


def test_report_file_reaches_another_machine(redis_server: LocalRedis, tmp_path: Any) -> None:
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

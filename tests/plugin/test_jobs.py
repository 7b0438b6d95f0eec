"""The persistent job queue (plugin/jobs.py) and the worker loop, without a server.

Checked against the SQLite file itself (fresh connections, new queue instances), not
against the queue's in-memory view.
"""
from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from ls_agreement.plugin.report.model import Report

from ls_agreement.plugin.client import NotFound, ServerUnavailable
from ls_agreement.plugin.job_backend import DONE, FAILED, PENDING, RUNNING
from ls_agreement.plugin.jobs import JobQueue
from ls_agreement.plugin.webhooks import Receiver, parse_event, WebhookRejected
from ls_agreement.plugin.worker import Reconciler, Worker


def rows(path: Path) -> list[tuple]:
    with sqlite3.connect(str(path)) as db:
        return db.execute("SELECT id, project_id, status, events, attempts FROM jobs "
                          "ORDER BY id").fetchall()


def test_coalescing_one_pending_job_per_project(tmp_path: Path) -> None:
    db = tmp_path / "q.sqlite"
    q = JobQueue(db)
    jobs = [q.enqueue(7, f"ANNOTATION_CREATED task {i}") for i in range(25)]
    other = q.enqueue(8, "TASKS_CREATED")
    assert len({j.id for j in jobs}) == 1 and jobs[-1].events == 25
    assert jobs[-1].reason == "ANNOTATION_CREATED task 0"
    assert jobs[-1].last_reason == "ANNOTATION_CREATED task 24"
    # persisted on return: another connection sees exactly two pending jobs
    assert rows(db) == [(jobs[0].id, 7, PENDING, 25, 0), (other.id, 8, PENDING, 1, 0)]

    # an event while the project's job runs opens one new pending job (the running sync
    # may have read the project before that event), which waits for the first to finish
    running = q.claim()
    assert running is not None and running.project_id == 7 and running.status == RUNNING
    nxt = [q.enqueue(7, "ANNOTATION_UPDATED") for _ in range(3)]
    assert len({j.id for j in nxt}) == 1 and nxt[0].id != running.id and nxt[-1].events == 3
    second = q.claim()
    assert second is not None and second.project_id == 8     # 7 is busy: not handed out twice
    assert q.claim() is None
    q.finish(running, True, report_path=str(tmp_path / "r.json"), result={"n_tasks": 3})
    third = q.claim()
    assert third is not None and third.id == nxt[0].id
    assert q.projects()[7]["report_path"] == str(tmp_path / "r.json")
    assert q.projects()[7]["summary"] == {"n_tasks": 3}


def test_concurrent_enqueue_from_threads_coalesces(tmp_path: Path) -> None:
    q = JobQueue(tmp_path / "q.sqlite")
    ids: list[int] = []
    lock = threading.Lock()

    def burst() -> None:
        for _ in range(20):
            j = q.enqueue(3, "ANNOTATION_CREATED")
            with lock:
                ids.append(j.id)

    threads = [threading.Thread(target=burst) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == 1
    assert rows(tmp_path / "q.sqlite") == [(ids[0], 3, PENDING, 120, 0)]


def test_persistence_across_instances(tmp_path: Path) -> None:
    db = tmp_path / "q.sqlite"
    q1 = JobQueue(db)
    a = q1.enqueue(1, "TASKS_CREATED")
    q1.enqueue(1, "TASKS_CREATED")
    q1.add_project(1, "connect", webhook_id=11)
    q1.close()
    q2 = JobQueue(db)
    assert q2.projects()[1]["webhook_id"] == 11
    got = q2.claim()
    assert got is not None and got.id == a.id and got.events == 2 and got.attempts == 1
    q2.finish(got, True)
    assert q2.get(a.id).status == DONE and q2.claim() is None


def test_crash_recovery_of_running_jobs(tmp_path: Path) -> None:
    db = tmp_path / "q.sqlite"
    q1 = JobQueue(db, max_attempts=2)
    q1.enqueue(1, "ANNOTATION_CREATED")
    q1.enqueue(2, "ANNOTATION_CREATED")
    j1 = q1.claim()
    j2 = q1.claim()
    assert j1 and j2
    q1.enqueue(2, "ANNOTATION_UPDATED")   # project 2 already has a newer pending job
    del q1                                 # "crash": no finish, connection dropped

    q2 = JobQueue(db, max_attempts=2)
    assert q2.claim() is None              # before recover, running jobs block their project
    rec = {j.id: j for j in q2.recover()}
    assert rec[j1.id].status == PENDING and rec[j1.id].error.startswith("interrupted")
    assert rec[j2.id].status == FAILED and "covered by job" in rec[j2.id].error
    claimed = {q2.claim().project_id, q2.claim().project_id}
    assert claimed == {1, 2}
    # the late finish of the crashed run's job object is ignored (stale)
    assert q2.finish(j1, True).attempts == 2


def test_recover_fails_jobs_without_attempts_left(tmp_path: Path) -> None:
    db = tmp_path / "q.sqlite"
    q = JobQueue(db, max_attempts=1)
    q.enqueue(5, "PROJECT_UPDATED")
    j = q.claim()
    q2 = JobQueue(db, max_attempts=1)
    (r,) = q2.recover()
    assert r.id == j.id and r.status == FAILED and "no attempts left" in r.error


def test_bounded_retries_with_backoff(tmp_path: Path) -> None:
    q = JobQueue(tmp_path / "q.sqlite", max_attempts=3, backoff=0.2)
    q.enqueue(4, "ANNOTATION_CREATED")
    seen = []
    for attempt in (1, 2, 3):
        t0 = time.time()
        j = None
        while j is None:
            j = q.claim()
            if j is None:
                time.sleep(0.02)
        seen.append((j.attempts, round(time.time() - t0, 2)))
        out = q.finish(j, False, f"ServerUnavailable: try {attempt}")
        assert out.error == f"ServerUnavailable: try {attempt}"
        assert out.status == (PENDING if attempt < 3 else FAILED)
    assert [a for a, _ in seen] == [1, 2, 3]
    # waits before the 2nd and 3rd attempts: 0.2 s then 0.4 s (exponential backoff)
    assert 0.18 <= seen[1][1] < 0.4 and 0.38 <= seen[2][1] < 0.7
    assert q.claim() is None and q.next_due_in() is None
    # a permanent error is not retried at all
    q.enqueue(9, "x")
    j = q.claim()
    assert q.finish(j, False, "NotFound", retry=False).status == FAILED


def test_event_during_backoff_runs_job_at_once(tmp_path: Path) -> None:
    q = JobQueue(tmp_path / "q.sqlite", backoff=60)
    q.enqueue(4, "a")
    q.finish(q.claim(), False, "boom")
    assert q.claim() is None and q.next_due_in() > 50
    q.enqueue(4, "ANNOTATION_CREATED")
    assert q.claim() is not None


def test_worker_records_done_and_failed(tmp_path: Path) -> None:
    q = JobQueue(tmp_path / "q.sqlite", max_attempts=2, backoff=0.05)
    report = tmp_path / "report.json"
    report.write_text("{}")
    calls: list[int] = []

    def runner(pid: int) -> SimpleNamespace:
        calls.append(pid)
        if pid == 2:
            raise ServerUnavailable("Label Studio at x failed")
        if pid == 3:
            raise NotFound("project 3 does not exist")
        return SimpleNamespace(report=Report.from_dict({"tasks": {"1": {"flag": True}, "2": {"flag": False}},
                                                        "controls": {"c": {"alpha": 0.5, "sigma": 0.7}}}),
                               report_paths={"report": report}, n_tasks=2, n_written=1,
                               skipped=1, run_id=1, warnings=[], state_path=None)

    stop = threading.Event()
    w = Worker(q, runner, stop, poll=0.05, log=None)
    w.start()
    for pid in (1, 2, 3):
        q.enqueue(pid, "test")
    deadline = time.time() + 10
    while time.time() < deadline and q.counts()[PENDING] + q.counts()[RUNNING]:
        time.sleep(0.05)
    stop.set()
    q.notify()
    w.join(5)
    assert not w.is_alive()
    by = {j.project_id: j for j in q.recent(10)}
    assert by[1].status == DONE and by[1].result["n_flagged"] == 1
    assert by[1].result["controls"]["c"]["sigma"] == 0.7
    assert by[2].status == FAILED and by[2].attempts == 2 and "ServerUnavailable" in by[2].error
    assert by[3].status == FAILED and by[3].attempts == 1        # permanent: no retry
    assert calls.count(2) == 2 and calls.count(3) == 1


def test_reconciler_enqueues_every_project_each_tick(tmp_path: Path) -> None:
    q = JobQueue(tmp_path / "q.sqlite")
    stop = threading.Event()
    r = Reconciler(q, lambda: [5, 6], stop, interval=0.1, log=None)
    r.start()
    time.sleep(0.45)
    stop.set()
    r.join(2)
    assert r.ticks >= 3
    # coalesced: nobody claimed, so each project still has exactly one pending job
    pend = [(p, s) for _, p, s, _, _ in rows(tmp_path / "q.sqlite")]
    assert sorted(pend) == [(5, PENDING), (6, PENDING)]


@pytest.mark.parametrize("body, fragment", [
    (b"", "empty body"),
    (b"\xff\xfe", "not UTF-8"),
    (b"{not json", "not valid JSON"),
    (b"[1, 2]", "JSON object"),
    (b'{"project": {"id": 1}}', "no 'action'"),
    (b'{"action": "ANNOTATION_CREATED", "project": {"id": "x"}}', "no project id"),
    (b'{"action": "TASKS_DELETED", "project": {"id": true}}', "no project id"),
])
def test_parse_event_rejects_malformed(body: bytes, fragment: str) -> None:
    with pytest.raises(WebhookRejected) as err:
        parse_event(body)
    assert err.value.status == 400 and fragment in err.value.message


def test_receiver_auth_ignores_and_fallback_project(tmp_path: Path) -> None:
    q = JobQueue(tmp_path / "q.sqlite")
    r = Receiver(q, "s3cret")
    body = b'{"action": "ANNOTATIONS_DELETED", "annotations": [{"id": 1, "project": 9}]}'
    assert r.handle({}, body)[0] == 401
    assert r.handle({"x-ls-agreement-secret": "wrong"}, body)[0] == 401
    status, out = r.handle({"X-LS-Agreement-Secret": "s3cret"}, body)
    assert status == 200 and out["project"] == 9 and out["status"] == "queued"
    status, out = r.handle({"X-LS-Agreement-Secret": "s3cret"},
                           b'{"action": "LABEL_LINK_CREATED"}')
    assert status == 200 and out["status"] == "ignored"
    assert [p for _, p, *_ in rows(tmp_path / "q.sqlite")] == [9]


def test_receiver_serves_only_accepted_projects(tmp_path: Path) -> None:
    q = JobQueue(tmp_path / "q.sqlite")
    r = Receiver(q, None, accepts=lambda pid: pid == 1)
    status, out = r.handle({}, b'{"action": "TASKS_CREATED", "project": {"id": 2}}')
    assert status == 200 and out["status"] == "ignored" and rows(tmp_path / "q.sqlite") == []
    status, out = r.handle({}, b'{"action": "TASKS_CREATED", "project": {"id": 1}}')
    assert status == 200 and out["status"] == "queued"
    assert [p for _, p, *_ in rows(tmp_path / "q.sqlite")] == [1]


def test_concurrent_enqueues_are_each_stored_once_in_order(tmp_path: Path) -> None:
    """The group commit: eight threads enqueue at once; every event is stored exactly once,
    each thread's events in its order, and each project's pending job counts them all."""
    q = JobQueue(tmp_path / "state.sqlite")
    n_threads, n_each = 8, 60

    def send(k: int) -> None:
        for i in range(n_each):
            q.enqueue(k % 3, f"t{k}", action="ANNOTATION_UPDATED", payload=f"{k}:{i}")

    threads = [threading.Thread(target=send, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for pid in range(3):
        got = [e.payload for e in q.events(pid)]
        senders = [k for k in range(n_threads) if k % 3 == pid]
        assert sorted(got) == sorted(f"{k}:{i}" for k in senders for i in range(n_each))
        for k in senders:
            mine = [int(p.split(":")[1]) for p in got if p.startswith(f"{k}:")]
            assert mine == list(range(n_each))
        (job,) = [j for j in q.recent(50, project_id=pid)]
        assert job.events == len(got)

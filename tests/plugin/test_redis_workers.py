"""``serve --queue redis://…`` and ``worker --queue redis://…`` as real processes, on a real
Redis and a real Label Studio: two workers share the projects, a worker is killed with
SIGKILL mid-job, Redis and the service are killed and restarted. Each time, every task
must end up carrying what a sync from scratch at the same baseline gives, restored from
the state the workers left in Redis (plugin/queue/shared_state.py)."""
from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from ls_agreement.plugin.client import Connection
from ls_agreement.plugin.job_backend import DONE, RUNNING
from ls_agreement.plugin.live.project import LiveProject
from tests.local_redis import LocalRedis
from ls_agreement.plugin.queue.redis_queue import RedisQueue
from ls_agreement.plugin.queue.shared_state import SharedProjects
from ls_agreement.demo.host import free_port
from ls_agreement.plugin.settings import load_settings
from ls_agreement.plugin.state import SyncState
from tests.plugin.test_serve import CONFIG, SECRET, SENT, export, make_tasks, result, wait_for

pytestmark = pytest.mark.slow


class Proc:
    """A CLI process whose stderr goes to a file (and is searchable)."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.args, self.log = args, log
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        for k in ("LS_AGREEMENT_WEBHOOK_SECRET", "LS_AGREEMENT_QUEUE", "LS_AGREEMENT_API_TOKEN"):
            env.pop(k, None)
        self.fh = open(log, "ab")
        self.p = subprocess.Popen([sys.executable, "-m", "ls_agreement.plugin.cli", *args],
                                  stdout=self.fh, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, env=env)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGKILL)
            self.p.wait(10)

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()
        self.fh.close()


class Cluster:
    """serve + workers on one Redis, all as processes (started and stopped by the test)."""

    def __init__(self, ls: Any, redis: LocalRedis, tmp: Path) -> None:
        self.ls, self.redis, self.tmp = ls, redis, tmp
        self.port = free_port()
        self.settings = tmp / "settings.toml"
        self.settings.write_text("[report]\nbootstrap = 0\n[sync]\nviews = false\n"
                                 "attempts = 2\nbackoff = 0.2\n")
        self.procs: list[Proc] = []
        self.serve: Proc | None = None
        self.workers: dict[str, Proc] = {}
        self.q = RedisQueue(redis.url)

    def common(self) -> list[str]:
        return ["--queue", self.redis.url, "--url", self.ls.url, "--token", self.ls.token,
                "--settings", str(self.settings)]

    def start_serve(self) -> None:
        before = self.serve.text().count("serving on") if self.serve else 0
        self.serve = Proc(["serve", *self.common(), "--port", str(self.port), "--secret", SECRET,
                           "--state", str(self.tmp / "serve.sqlite"), "--out", str(self.tmp / "out"),
                           "--interval", "0", "--lease", "3"], self.tmp / "serve.log")
        self.procs.append(self.serve)
        serve = self.serve
        wait_for(lambda: serve.text().count("serving on") > before, 60, "serve to listen")

    def start_worker(self, name: str) -> Proc:
        p = Proc(["worker", *self.common(), "--out", str(self.tmp / name), "--lease", "3",
                  "--retry-backoff", "0.5", "--name", name], self.tmp / f"{name}.log")
        self.procs.append(p)
        self.workers[name] = p
        return p

    def connect(self, pid: int) -> None:
        out = subprocess.run([sys.executable, "-m", "ls_agreement.plugin.cli", "connect",
                              *self.common(), "--project", str(pid), "--no-sync", "--quiet",
                              "--receiver", f"http://127.0.0.1:{self.port}/webhook",
                              "--secret", SECRET], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr

    def idle(self, *pids: int) -> bool:
        c = self.q.counts()
        return not c["pending"] and not c["running"] and not any(self.q.events(p) for p in pids)

    def mismatches(self, client: Any, pid: int) -> list[str]:
        """Tasks on the server that differ from a sync from scratch at the baseline the
        workers left in Redis."""
        conn = Connection(self.ls.url, self.ls.token)
        with SyncState(self.tmp / "check.sqlite") as st:
            proj = LiveProject(conn, pid, load_settings(str(self.settings)), st, self.tmp / "check")
            assert SharedProjects(self.q.r).restore(proj), "no shared state for the project"
            return proj.mismatches(export(client, pid).values())

    def close(self) -> None:
        for p in self.procs:
            p.stop()
        self.q.close()


@pytest.fixture
def cluster(ls_server: Any, redis_server: LocalRedis, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(ls_server, redis_server, tmp_path)
    try:
        yield c
    finally:
        c.close()


def _edit(client: Any, rng: random.Random, pid: int, users: list[int]) -> None:
    current = export(client, pid)
    tid = rng.choice(sorted(current))
    anns = current[tid]["annotations"]
    op = rng.choice(["create", "update", "update", "delete"])
    if op == "create":
        free = [u for u in users if u not in {a["completed_by"] for a in anns}]
        if free:
            client.annotations.create(id=tid, result=result(rng.choice(SENT), rng.randint(1, 5)),
                                      completed_by=rng.choice(free))
            return
    if op == "delete" and len(anns) > 1:
        client.annotations.delete(id=rng.choice(anns)["id"])
        return
    if anns:
        client.annotations.update(id=rng.choice(anns)["id"],
                                  result=result(rng.choice(SENT), rng.randint(1, 5)))


def test_two_workers_share_projects_and_never_overlap_on_one(
        cluster: Cluster, ls_client: Any, annotators: list[dict], make_project: Callable) -> None:
    users = [a["id"] for a in annotators]
    pids = [make_project(CONFIG, make_tasks(users, n=12), title=f"redis workers {i}")
            for i in range(2)]
    cluster.start_serve()
    for name in ("w1", "w2"):
        cluster.start_worker(name)
    wait_for(lambda: cluster.q.workers() == 2, 60, "two RQ workers")
    for pid in pids:
        cluster.connect(pid)
    wait_for(lambda: cluster.idle(*pids) and all(cluster.q.recent(5, p) for p in pids), 180,
             "the first full reads")
    rng = random.Random(7)
    for _ in range(16):
        _edit(ls_client, rng, rng.choice(pids), users)
        time.sleep(rng.choice([0.0, 0.2]))
    wait_for(lambda: cluster.idle(*pids), 180, "the events to be applied", step=0.3)
    for pid in pids:
        assert cluster.mismatches(ls_client, pid) == []
        runs = sorted((j.started_at, j.finished_at) for j in cluster.q.recent(500, pid)
                      if j.status == DONE)
        assert len(runs) >= 2
        for (s0, f0), (s1, _f1) in zip(runs, runs[1:]):
            assert s1 >= f0, "two jobs of one project ran at once"
    done_by = {n: len(re.findall(r"job \d+: project \d+ done", p.text()))
               for n, p in cluster.workers.items()}
    assert all(done_by.values()), f"both workers should have run jobs: {done_by}"
    assert cluster.q.live_stats().get(pids[0], {}).get("lost_events", 0) == 0
    # no token or secret in any log, report, state file or in Redis's own files (AOF)
    secrets = [cluster.ls.token.encode(), SECRET.encode()]
    files = [f for f in cluster.tmp.rglob("*") if f.is_file() and f.name != "settings.toml"]
    assert any(f.suffix == ".json" for f in files) and any("appendonly" in f.name or f.suffix == ".aof"
                                                           for f in files)
    leaks = [str(f) for f in files for s in secrets if s in f.read_bytes()]
    assert leaks == []


def test_sigkill_of_a_worker_mid_job_leaves_the_job_to_another(
        cluster: Cluster, ls_client: Any, annotators: list[dict], make_project: Callable) -> None:
    users = [a["id"] for a in annotators]
    pid = make_project(CONFIG, make_tasks(users, n=240), title="redis kill -9")
    # the meta detail makes the push one PATCH per task: long enough to kill a worker in it
    cluster.settings.write_text(cluster.settings.read_text() + "meta = true\n")
    cluster.start_serve()
    first = cluster.start_worker("w1")
    wait_for(lambda: cluster.q.workers() == 1, 60, "the first worker")
    cluster.connect(pid)      # a RECONCILE: a full read and 240 tasks written
    job = wait_for(lambda: next((j for j in cluster.q.recent(5, pid) if j.status == RUNNING), None),
                   60, "the job to start", step=0.05)
    time.sleep(1.5)                           # into the push of 240 tasks
    assert cluster.q.get(job.id).status == RUNNING, "the job ended before the kill (make it longer)"
    first.kill()
    second = cluster.start_worker("w2")
    done = wait_for(lambda: cluster.q.get(job.id).status == DONE and cluster.idle(pid), 240,
                    "another worker to finish the job", step=0.3)
    assert done
    assert cluster.q.get(job.id).attempts == 2
    # the worker records the job done, then says so in its log: read the log once it has
    wait_for(lambda: re.search(rf"job {job.id}: project {pid} done", second.text()), 30,
             "the second worker's log to say the job is done", step=0.1)
    assert cluster.mismatches(ls_client, pid) == []


def test_redis_and_service_restarts_lose_no_acknowledged_event(
        cluster: Cluster, ls_client: Any, annotators: list[dict], make_project: Callable) -> None:
    users = [a["id"] for a in annotators]
    pid = make_project(CONFIG, make_tasks(users, n=10), title="redis restarts")
    cluster.start_serve()
    w = cluster.start_worker("w1")
    cluster.connect(pid)
    wait_for(lambda: cluster.idle(pid) and cluster.q.recent(5, pid), 180, "the first full read")
    w.stop()                                   # events now wait in Redis
    rng = random.Random(3)
    for _ in range(6):
        _edit(ls_client, rng, pid, users)
    acked = wait_for(lambda: len(cluster.q.events(pid)) >= 6 and cluster.q.events(pid), 30,
                     "the webhooks to be acknowledged")
    cluster.redis.stop(kill=True)              # SIGKILL: only the AOF survives
    # meanwhile the receiver says it could not store (Label Studio would log a failed
    # webhook; the reconcile repairs it), and /health says why, quickly
    import requests
    t0 = time.perf_counter()
    r = requests.post(f"http://127.0.0.1:{cluster.port}/webhook", timeout=10,
                      json={"action": "ANNOTATION_UPDATED", "project": {"id": pid},
                            "annotation": {"id": 1, "task": 1, "result": []}},
                      headers={"X-LS-Agreement-Secret": SECRET})
    assert r.status_code == 503 and time.perf_counter() - t0 < 5
    health = requests.get(f"http://127.0.0.1:{cluster.port}/health", timeout=10)
    assert health.status_code == 503 and health.json()["queue_error"]
    cluster.redis.start()
    assert [e.id for e in cluster.q.events(pid)] == [e.id for e in acked]
    wait_for(lambda: requests.get(f"http://127.0.0.1:{cluster.port}/health", timeout=10).json()
             .get("queue", "").startswith("redis://"), 30, "serve to reconnect")
    assert cluster.serve is not None
    cluster.serve.kill()                       # the service dies with jobs pending
    cluster.start_serve()                      # same port: Label Studio's webhook still points here
    assert cluster.q.counts()["pending"] >= 1, "pending jobs kept across the restart"
    for _ in range(3):                         # the restarted service acknowledges new events
        _edit(ls_client, rng, pid, users)
    # the restarted serve queued a RECONCILE at start-up; then the three webhooks
    wait_for(lambda: len(cluster.q.events(pid)) >= len(acked) + 4, 30, "new events after restarts")
    cluster.start_worker("w2")
    wait_for(lambda: cluster.idle(pid), 180, "the pending events to be applied", step=0.3)
    assert cluster.mismatches(ls_client, pid) == []
    # a reconcile finds nothing the events missed
    cluster.q.enqueue(pid, "reconcile", action="RECONCILE")
    wait_for(lambda: cluster.idle(pid), 180, "the reconcile", step=0.3)
    assert cluster.q.live_stats()[pid]["lost_events"] == 0


def test_a_flood_of_webhooks_is_acknowledged_coalesced_and_lost_nowhere(
        cluster: Cluster, ls_client: Any, annotators: list[dict], make_project: Callable) -> None:
    """1,000 ANNOTATION_UPDATED payloads in Label Studio's format within 10 s, from eight
    concurrent senders: each answered 200 in < 1 s, far fewer jobs than events, every event
    applied, and the tasks end equal to a sync from scratch. Label Studio cannot accept
    1,000 edits in 10 s on this machine, so the senders replay payloads built from the
    project's own annotations: random results first, then each annotation as it really is
    on the server, so the final state is Label Studio's."""
    import json as _json
    from concurrent.futures import ThreadPoolExecutor

    import requests

    users = [a["id"] for a in annotators]
    pid = make_project(CONFIG, make_tasks(users, n=30), title="redis flood")
    cluster.start_serve()
    for name in ("w1", "w2"):
        cluster.start_worker(name)
    cluster.connect(pid)
    wait_for(lambda: cluster.idle(pid) and cluster.q.recent(5, pid), 180, "the first full read")
    tasks = export(ls_client, pid)
    anns = [(tid, a) for tid, t in sorted(tasks.items()) for a in t["annotations"]][:40]
    rng = random.Random(11)

    def payload(tid: int, ann: dict[str, Any], res: list[dict[str, Any]]) -> bytes:
        return _json.dumps({"action": "ANNOTATION_UPDATED", "project": {"id": pid},
                            "annotation": {**ann, "task": tid, "result": res},
                            "task": {"id": tid, "data": tasks[tid]["data"]}}).encode()

    noise = [payload(*anns[i % len(anns)], result(rng.choice(SENT), rng.randint(1, 5)))
             for i in range(1000 - len(anns))]
    final = [payload(tid, a, a["result"]) for tid, a in anns]
    n_jobs = len(cluster.q.recent(1000, pid))
    answers: list[tuple[int, float]] = []
    local = threading.local()

    def send(body: bytes) -> None:
        s = getattr(local, "s", None) or requests.Session()
        local.s = s
        t0 = time.perf_counter()
        r = s.post(f"http://127.0.0.1:{cluster.port}/webhook", data=body, timeout=10,
                   headers={"Content-Type": "application/json", "X-LS-Agreement-Secret": SECRET})
        answers.append((r.status_code, time.perf_counter() - t0))

    t0 = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(send, noise))
    with ThreadPoolExecutor(8) as pool:          # after every noise event was acknowledged
        list(pool.map(send, final))
    wall = time.perf_counter() - t0
    assert len(answers) == 1000 and {c for c, _ in answers} == {200}
    assert max(dt for _, dt in answers) < 1.0, sorted(dt for _, dt in answers)[-5:]
    assert wall < 10, f"the senders needed {wall:.1f} s"
    wait_for(lambda: cluster.idle(pid), 300, "the flood to be applied", step=0.3)
    jobs = cluster.q.recent(1000, pid)
    assert len(jobs) - n_jobs < 200, f"{len(jobs) - n_jobs} jobs for 1,000 events: not coalesced"
    assert sum(j.events for j in jobs[: len(jobs) - n_jobs]) >= 1000
    assert cluster.mismatches(ls_client, pid) == []
    cluster.q.enqueue(pid, "reconcile", action="RECONCILE")
    wait_for(lambda: cluster.idle(pid), 180, "the reconcile", step=0.3)
    assert cluster.q.live_stats()[pid]["lost_events"] == 0, "the mirror missed an event"

"""Benchmark of the service past one machine (issue: real parts and past one machine).

Two figures, on real parts started here (``redis-server`` with AOF fsync always, Label
Studio with the bulk action on), the service and the workers as separate processes:

* **receiver**: events acknowledged per second by ``serve`` (webhook → stored → 200), with
  ``--clients`` concurrent senders posting ``--events`` Label Studio payloads (the captured
  ANNOTATION_UPDATED body, 11 kB), for the Redis queue and the embedded SQLite one, with
  the answer times (p50, p99, max; target every one < 1 s);
* **workers**: project syncs per minute with 1, 2 and 4 ``worker --queue`` processes on one
  Redis: ``--projects`` demo projects of ``--tasks`` tasks each are re-read in full
  (export, baseline, compare, push what differs) at once, and the wall time until every
  job is done gives syncs per minute; the ratio to one worker shows how it scales;
* **faults** (``--faults``): a worker SIGKILLed in the middle of a long job (a first sync
  of ``--fault-tasks`` tasks, one PATCH each): seconds until another, idle worker runs the
  job again and until it is done (the default ``--lease``); then Redis SIGKILLed and
  restarted: seconds until ``serve`` answers a webhook 200 again and until a worker has
  run a job queued after the restart; then ``serve`` SIGKILLed and started again: seconds
  until it answers 200.

This machine has few cores (printed), and Label Studio runs on it too: past the core
count, more workers only queue for the CPU. Run: ``python -m benchmarks scale`` (about
10 min) or e.g. ``python -m benchmarks scale -- --projects 8 --tasks 300``.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

SECRET = "bench-secret"
PAYLOAD = (Path(__file__).resolve().parents[2] / "shared" / "data" / "label-studio" / "webhooks"
           / "002_ANNOTATION_UPDATED.json")


class _Proc:
    def __init__(self, args: list[str], log: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LS_AGREEMENT_")}
        env["PYTHONUNBUFFERED"] = "1"
        self.log = log
        self.fh = open(log, "ab")
        self.p = subprocess.Popen([sys.executable, "-m", "ls_agreement.plugin.cli", *args],
                                  stdout=self.fh, stderr=subprocess.STDOUT, env=env)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.fh.close()


def _wait(cond: Any, timeout: float, what: str, step: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(step)
    raise RuntimeError(f"timed out waiting for {what}")


def _serve(tmp: Path, name: str, ls_url: str, token: str, queue: str | None,
           port: int = 0) -> tuple[_Proc, int]:
    from ls_agreement.demo.host import free_port
    port = port or free_port()
    args = ["serve", "--url", ls_url, "--token", token, "--port", str(port), "--secret", SECRET,
            "--state", str(tmp / f"{name}.sqlite"), "--out", str(tmp / f"{name}-out"),
            "--interval", "0", "--quiet", "--retry-backoff", "600"]
    if queue:
        args += ["--queue", queue]
    proc = _Proc(args, tmp / f"{name}.log")
    before = proc.text().count("serving on")
    _wait(lambda: proc.text().count("serving on") > before, 60, f"{name} to listen")
    return proc, port


# -- part 1: the receiver ------------------------------------------------------------------------
def _flood(port: int, n: int, clients: int) -> tuple[float, list[float], int]:
    body = json.loads(PAYLOAD.read_text())["payload"]
    bodies = []
    for i in range(n):
        b = json.loads(json.dumps(body))
        b["project"]["id"] = 1000 + i % 8        # eight projects: coalescing per project
        b["annotation"]["id"] = 10_000 + i
        bodies.append(json.dumps(b).encode())
    lat: list[float] = []
    bad = 0
    lock = threading.Lock()
    local = threading.local()

    def send(data: bytes) -> None:
        nonlocal bad
        s = getattr(local, "s", None) or requests.Session()
        local.s = s
        t0 = time.perf_counter()
        r = s.post(f"http://127.0.0.1:{port}/webhook", data=data, timeout=30,
                   headers={"Content-Type": "application/json", "X-LS-Agreement-Secret": SECRET})
        dt = time.perf_counter() - t0
        with lock:
            lat.append(dt)
            bad += r.status_code != 200
    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(send, bodies))
    return time.perf_counter() - t0, lat, bad


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def receiver(tmp: Path, redis_url: str, n: int, clients: int) -> None:
    print(f"receiver: {n:,} webhook events from {clients} concurrent senders")
    for name, queue in (("redis", redis_url), ("sqlite", None)):
        # a Label Studio that is not there: only the receiver's side is timed (the SQLite
        # service's own worker fails those jobs and backs off for 10 min)
        proc, port = _serve(tmp, f"ack-{name}", "http://127.0.0.1:9", "unused-token", queue)
        try:
            _flood(port, min(200, n), clients)          # warm-up (connections, first writes)
            wall, lat, bad = _flood(port, n, clients)
        finally:
            proc.stop()
        print(f"  {name:6s}: {n / wall:8.0f} events/s acknowledged; answer p50 "
              f"{statistics.median(lat) * 1000:.1f} ms, p99 {_pct(lat, 0.99) * 1000:.1f} ms, max "
              f"{max(lat) * 1000:.0f} ms; non-200: {bad} (target every answer < 1 s: "
              f"{'PASS' if max(lat) < 1 and not bad else 'FAIL'})")


# -- part 2: workers -----------------------------------------------------------------------------
def workers(tmp: Path, redis_url: str, n_projects: int, n_tasks: int, counts: list[int],
            rounds: int) -> None:
    from ls_agreement.demo.data import ANNOTATORS, DEMO_CONFIG, generate
    from ls_agreement.plugin.queue.redis_queue import RedisQueue
    from ls_agreement.plugin.queue.shared_state import SharedProjects
    from ls_agreement.demo.local_server import LocalLabelStudio

    server = LocalLabelStudio(tmp / "ls", port=0, experimental=True)
    server.start(timeout=300)
    procs: list[_Proc] = []
    try:
        client = server.client()
        emails = {a.email: server.create_user(a.email, a.first_name, a.last_name) for a in ANNOTATORS}
        pids = []
        for k in range(n_projects):
            p = client.projects.create(title=f"scale {k}", label_config=DEMO_CONFIG)
            client.projects.import_tasks(id=p.id, request=generate(emails, n_tasks=n_tasks, seed=k + 1).tasks)
            pids.append(int(p.id))
        settings = tmp / "scale.toml"
        settings.write_text("[report]\nbootstrap = 100\n[sync]\nviews = false\n")
        q = RedisQueue(redis_url)
        shared = SharedProjects(q.r)
        common = ["--queue", redis_url, "--url", server.url, "--token", server.token,
                  "--settings", str(settings), "--quiet"]

        def one_round() -> float:
            for pid in pids:            # no state: each job reads its project in full
                shared.forget(pid)
            before = {j.id for j in q.recent(1000)}
            t0 = time.perf_counter()
            for pid in pids:
                q.enqueue(pid, "bench", action="RECONCILE")
            _wait(lambda: (lambda c: not c["pending"] and not c["running"])(q.counts()), 1800,
                  "every project's job", step=0.05)
            t = time.perf_counter() - t0
            failed = [j for j in q.recent(1000) if j.id not in before and j.status == "failed"]
            if failed:
                raise RuntimeError(f"jobs failed: {[j.error for j in failed][:3]}")
            return t

        print(f"workers: {n_projects} projects x {n_tasks} tasks (demo generator, 5 controls), "
              f"full re-read of all at once; {os.cpu_count()} CPU core(s) here, Label Studio on them too")
        # first sync writes every task; later rounds compare and write nothing
        warm = [_Proc(["worker", *common, "--out", str(tmp / "w-warm")], tmp / "w-warm.log")]
        _wait(lambda: q.workers() == 1, 60, "the warm-up worker")
        print(f"  warm-up (first sync of every project, 1 worker): {one_round():.1f} s")
        for p in warm:
            p.stop()
        _wait(lambda: q.workers() == 0, 60, "the warm-up worker to leave")
        base = None
        for w in counts:
            group = [_Proc(["worker", *common, "--out", str(tmp / f"w{w}-{i}"), "--name",
                            f"bench-{w}-{i}"], tmp / f"w{w}-{i}.log") for i in range(w)]
            procs += group
            _wait(lambda: q.workers() == w, 60, f"{w} workers")
            one_round()      # unmeasured: each fresh worker pays its imports on its first job
            times = [one_round() for _ in range(rounds)]
            t = statistics.median(times)
            per_min = len(pids) / t * 60
            base = base or per_min
            print(f"  {w} worker(s): {per_min:6.1f} project syncs/min (median of {rounds} rounds, "
                  f"{t:.1f} s for {len(pids)}); {per_min / base:.2f}x one worker")
            for p in group:
                p.stop()
            _wait(lambda: q.workers() == 0, 60, "the workers to leave")
        q.close()
    finally:
        for p in procs:
            p.stop()
        server.stop()


# -- part 3: faults ------------------------------------------------------------------------------
def _post(port: int, project: int) -> int:
    """One webhook (the captured ANNOTATION_UPDATED body) for ``project``; its status code."""
    body = json.loads(PAYLOAD.read_text())["payload"]
    body["project"]["id"] = project
    try:
        return requests.post(f"http://127.0.0.1:{port}/webhook", json=body, timeout=5,
                             headers={"X-LS-Agreement-Secret": SECRET}).status_code
    except requests.RequestException:
        return 0


def faults(tmp: Path, redis: Any, n_tasks: int) -> None:
    from ls_agreement.demo.data import ANNOTATORS, DEMO_CONFIG, generate
    from ls_agreement.plugin.queue.redis_queue import RedisQueue
    from ls_agreement.demo.local_server import LocalLabelStudio

    server = LocalLabelStudio(tmp / "ls-faults", port=0, experimental=True)
    server.start(timeout=300)
    procs: list[_Proc] = []
    try:
        client = server.client()
        emails = {a.email: server.create_user(a.email, a.first_name, a.last_name) for a in ANNOTATORS}
        p = client.projects.create(title="faults", label_config=DEMO_CONFIG)
        client.projects.import_tasks(id=p.id, request=generate(emails, n_tasks=n_tasks, seed=5).tasks)
        pid = int(p.id)
        settings = tmp / "faults.toml"
        # meta: the detail has no bulk write, so a first sync is one PATCH per task (a long job)
        settings.write_text("[report]\nbootstrap = 100\n[sync]\nviews = false\nmeta = true\n")
        q = RedisQueue(redis.url)
        common = ["--queue", redis.url, "--url", server.url, "--token", server.token,
                  "--settings", str(settings)]
        names = ["f1", "f2"]
        for n in names:
            procs.append(_Proc(["worker", *common, "--out", str(tmp / n), "--name", n], tmp / f"{n}.log"))
        workers = dict(zip(names, procs))
        _wait(lambda: q.workers() == 2, 60, "two workers")
        print(f"faults: one project of {n_tasks} demo tasks, first sync one PATCH per task; "
              "two workers, default lease")
        t0 = time.time()
        job = q.enqueue(pid, "bench", action="RECONCILE")
        _wait(lambda: q.get(job.id).status == "running", 120, "the job to start", step=0.05)
        time.sleep(2.0)
        who = next(n for n, w in workers.items() if f"job {job.id}: syncing" in w.text())
        if q.get(job.id).status != "running":
            raise RuntimeError("the job ended before the kill: use more --fault-tasks")
        workers[who].p.send_signal(signal.SIGKILL)
        workers[who].p.wait(10)
        t_kill = time.time()
        again = _wait(lambda: (lambda j: j if j.started_at and j.started_at > t_kill else None)(
            q.get(job.id)), 900, "another worker to take the job", step=0.1)
        done = _wait(lambda: (lambda j: j if j.status in ("done", "failed") else None)(q.get(job.id)),
                     900, "the job to end", step=0.2)
        print(f"  worker SIGKILLed {t_kill - t0:.1f} s into the job: another worker runs it "
              f"{again.started_at - t_kill:.1f} s after the kill, done {done.finished_at - t_kill:.1f} s "
              f"after it ({done.status}, attempt {done.attempts})")

        serve, port = _serve(tmp, "faults-serve", server.url, server.token, redis.url)
        procs.append(serve)
        assert _post(port, 999_999) == 200
        redis.stop(kill=True)
        down = _post(port, 999_999)
        time.sleep(2.0)
        redis.start()
        t_up = time.time()
        _wait(lambda: _post(port, 999_999) == 200, 120, "serve to acknowledge again", step=0.05)
        t_ack = time.time() - t_up
        job = q.enqueue(pid, "bench", action="RECONCILE")
        _wait(lambda: q.get(job.id).status in ("done", "failed"), 600, "a job after the restart")
        j = q.get(job.id)
        print(f"  Redis SIGKILLed (webhook meanwhile: {down}) and up again 2 s later: serve answers "
              f"200 {t_ack:.2f} s after it is up; a job queued then is started {j.started_at - t_up:.1f} s "
              f"and done {j.finished_at - t_up:.1f} s after ({j.status})")
        serve.p.send_signal(signal.SIGKILL)
        serve.p.wait(10)
        t_kill = time.time()
        serve2, _ = _serve(tmp, "faults-serve", server.url, server.token, redis.url, port=port)
        procs.append(serve2)
        _wait(lambda: _post(port, 999_999) == 200, 120, "the new serve to acknowledge", step=0.05)
        print(f"  serve SIGKILLed and started again: answers 200 {time.time() - t_kill:.1f} s later")
        q.close()
    finally:
        for pr in procs:
            pr.stop()
        server.stop()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks scale")
    ap.add_argument("--events", type=int, default=3000)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--projects", type=int, default=8)
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--skip", choices=["receiver", "workers"], action="append", default=[])
    ap.add_argument("--faults", action="store_true", help="also time a worker's SIGKILL and restarts")
    ap.add_argument("--fault-tasks", type=int, default=150)
    a = ap.parse_args(argv or [])
    from tests.local_redis import LocalRedis
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        with LocalRedis(tmp / "redis") as redis:
            if "receiver" not in a.skip:
                receiver(tmp, redis.url, a.events, a.clients)
            if "workers" not in a.skip:
                workers(tmp, redis.url, a.projects, a.tasks,
                        [int(x) for x in a.workers.split(",")], a.rounds)
            if a.faults:
                faults(tmp, redis, a.fault_tasks)


if __name__ == "__main__":
    main(sys.argv[1:])

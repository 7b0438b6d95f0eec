"""Faults of ``ls-agreement serve`` on the embedded SQLite backend, on real parts only.

A real Label Studio (the session server, or one of the test's own where it is stopped and
started again), the real service as a subprocess (``python -m ls_agreement.plugin.cli
serve``: it is killed, restarted, its log and files are read), webhook payloads built
from the captured formats (``shared/data/label-studio/webhooks``) with the project's real
tasks and annotations, posted to the receiver over HTTP. Checks read the service's HTTP
answers, its state file (SQLite, read beside it as ``connect`` does) and Label Studio.

"Equal to a sync from scratch": every task on the server carries exactly what
``sync_project`` would write after reading the project now (same report settings; the
check only reads, see :func:`from_scratch_mismatches`).
"""
from __future__ import annotations

import ast
import copy
import hmac
import json
import os
import random
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import requests

from ls_agreement.plugin import webhooks
from ls_agreement.plugin.annotator_report import annotator_quality
from ls_agreement.plugin.client import Connection
from ls_agreement.plugin.jobs import JobQueue
from ls_agreement.plugin.pushback import current_of, desired_for, fingerprint, needs_write
from ls_agreement.demo.host import free_port
from ls_agreement.demo.local_server import LocalLabelStudio
from ls_agreement.plugin.settings import load_settings
from ls_agreement.plugin.sync import checked_report, name_annotators
from tests.shared_data import DATA

from .test_serve import CONFIG, SENT, make_tasks, result, wait_for
from .test_sync_faults import FaultProxy

WEBHOOKS = DATA / "label-studio" / "webhooks"
SECRET = "whsec-5b1e0c7a-never-logged"
API_TOKEN = "apitok-93d2f4aa-never-logged"
SETTINGS = "[report]\nbootstrap = 0\n[sync]\nviews = false\nattempts = 2\nbackoff = 0.1\n"


# -- the service as a subprocess ---------------------------------------------------------
class ServeProcess:
    """``ls-agreement serve`` in its own process, on a fixed port (kept across restarts),
    stdout + stderr appended to ``log``."""

    def __init__(self, tmp: Path, url: str, token: str, *extra: str, secret: str | None = SECRET,
                 settings: str = SETTINGS) -> None:
        self.tmp = tmp
        self.port = free_port()
        self.state = tmp / "state" / "state.sqlite"
        self.out = tmp / "out"
        self.log = tmp / "serve.log"
        cfg = tmp / "settings.toml"
        cfg.write_text(settings)
        self.settings_path = cfg
        self.argv = [sys.executable, "-m", "ls_agreement.plugin.cli", "serve", "--url", url,
                     "--token", token, "--port", str(self.port), "--state", str(self.state),
                     "--out", str(self.out), "--settings", str(cfg), "--interval", "0",
                     "--grace", "2", *(["--secret", secret] if secret else []), *extra]
        self.secret = secret
        api = [extra[i + 1] for i, x in enumerate(extra[:-1]) if x == "--api-token"]
        self.auth = {"Authorization": f"Bearer {api[0]}"} if api else {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.address = f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> "ServeProcess":
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        for k in ("LS_AGREEMENT_WEBHOOK_SECRET", "LS_AGREEMENT_API_TOKEN"):
            env.pop(k, None)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        offset = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as fh:
            self.proc = subprocess.Popen(self.argv, stdout=fh, stderr=fh,
                                         stdin=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited with {self.proc.returncode}:\n{self.text()}")
            with open(self.log, "rb") as fh:
                fh.seek(offset)
                if f"serving on {self.address}".encode() in fh.read():
                    return self
            time.sleep(0.1)
        raise AssertionError(f"serve did not start within {timeout} s:\n{self.text()}")

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(10)

    # -- what it answers -------------------------------------------------------------------
    def post(self, payload: dict[str, Any] | bytes, timeout: float = 10,
             session: requests.Session | None = None) -> requests.Response:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        headers = {"Content-Type": "application/json"}
        if self.secret:
            headers[webhooks.SECRET_HEADER] = self.secret
        return (session or requests).post(f"{self.address}/webhook", data=body, headers=headers,
                                          timeout=timeout)

    def get(self, path: str, **kw: Any) -> Any:
        r = requests.get(self.address + path, timeout=30, headers=self.auth, **kw)
        assert r.status_code == 200, (path, r.status_code, r.text[:300])
        return r.json()

    def jobs(self, pid: int) -> list[dict[str, Any]]:
        return self.get("/jobs", params={"project": pid, "limit": 500})["jobs"]


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., ServeProcess]]:
    made: list[ServeProcess] = []

    def make(url: str, token: str, *extra: str, **kw: Any) -> ServeProcess:
        made.append(ServeProcess(tmp_path, url, token, *extra, **kw))
        return made[-1]

    yield make
    for p in made:
        if p.proc is not None and p.proc.poll() is None:
            p.proc.kill()
            p.proc.wait(10)


# -- the state file, read beside the service -----------------------------------------------
def db_rows(state: Path) -> dict[str, Any]:
    """Jobs and stored events as the state file holds them (committed rows only)."""
    con = sqlite3.connect(str(state), timeout=30)
    try:
        con.row_factory = sqlite3.Row
        jobs = [dict(r) for r in con.execute("SELECT * FROM jobs ORDER BY id")]
        events = [dict(r) for r in con.execute("SELECT id, project_id, action, payload "
                                               "FROM events ORDER BY id")]
    finally:
        con.close()
    return {"jobs": jobs, "events": events}


def enqueue_reconcile(state: Path, pid: int) -> int:
    """What ``connect`` and the periodic reconcile do: a RECONCILE event for the project."""
    q = JobQueue(state)
    try:
        return q.enqueue(pid, "reconcile", action="RECONCILE").id
    finally:
        q.close()


def idle(svc: ServeProcess, pid: int) -> bool:
    counts = svc.get("/health")["jobs"]
    if counts["pending"] or counts["running"]:
        return False
    return not [e for e in db_rows(svc.state)["events"] if e["project_id"] == pid]


# -- Label Studio side -------------------------------------------------------------------
def export(url: str, token: str, pid: int) -> dict[int, dict[str, Any]]:
    conn = Connection(url, token, timeout=120)
    try:
        return {int(t["id"]): t for t in conn.export_tasks(pid)}
    finally:
        conn.close()


def from_scratch_mismatches(url: str, token: str, pid: int, settings_path: Path) -> list[str]:
    """Tasks whose values differ from what ``sync_project`` computes from a full read now
    (the same steps as plugin/sync.py, without writing)."""
    ps = load_settings(settings_path)
    conn = Connection(url, token, timeout=120)
    try:
        project = conn.get_project(pid)
        tasks = conn.export_tasks(pid)
        report = checked_report(project, tasks, ps.report, pid)
        names = {str(i): e for i, e in conn.users().items() if e}
    finally:
        conn.close()
    name_annotators(report, names)
    quality = annotator_quality(report)
    include = bool(getattr(ps.report, "include_predictions", False))
    bad = []
    for t in tasks:
        want = desired_for(report, int(t["id"]), fingerprint(t, include), names, quality,
                           meta=ps.sync.meta)
        if needs_write(want, current_of(t)):
            bad.append(f"task {t['id']}: from scratch {want and want.data}, "
                       f"has {current_of(t) and current_of(t).data}")
    return bad


def project_json(url: str, token: str, pid: int) -> dict[str, Any]:
    r = requests.get(f"{url}/api/projects/{pid}", headers={"Authorization": f"Token {token}"},
                     timeout=30)
    r.raise_for_status()
    return r.json()


TEMPLATE = json.loads((WEBHOOKS / "002_ANNOTATION_UPDATED.json").read_text())["payload"]


def annotation_event(project: dict[str, Any], task: dict[str, Any], ann: dict[str, Any],
                     action: str = "ANNOTATION_UPDATED") -> dict[str, Any]:
    """Label Studio's ANNOTATION_* payload (captured shape) for a real task and annotation."""
    p = copy.deepcopy(TEMPLATE)
    p["action"] = action
    p["project"] = {**p["project"], **project}
    t = {k: v for k, v in task.items() if k not in ("annotations", "predictions", "drafts")}
    p["task"] = {**p["task"], **t, "project": project["id"]}
    a = {**p["annotation"], **ann, "task": task["id"], "project": project["id"]}
    a.pop("prediction", None)
    p["annotation"] = a
    return p


def other_result(rng: random.Random, ann: dict[str, Any]) -> list[dict[str, Any]]:
    """A result that differs from ``ann``'s (sentiment and rating both change)."""
    cur = {r["from_name"]: r["value"] for r in ann["result"]}
    sent = rng.choice([s for s in SENT if [s] != cur.get("sentiment", {}).get("choices")])
    rating = rng.choice([x for x in range(1, 6) if x != cur.get("quality", {}).get("rating")])
    return result(sent, rating)


# -- 4. a flood on the SQLite backend ----------------------------------------------------
N_FLOOD = 1000
N_CLIENTS = 8
FLOOD_SECONDS = 8.0          # the events are spread over this (all sent within 10 s)
FLOOD_TASKS = 1000
# data keys only (the bulk action: a first sync is a few requests, not a PATCH per task);
# a new baseline (a full recomputation, in a thread) every 250 events
FLOOD_SETTINGS = ("[report]\nbootstrap = 0\n[sync]\nviews = false\nmeta = false\n"
                  "rebaseline_events = 250\n")


@pytest.mark.slow
def test_flood_is_acknowledged_fast_coalesced_and_complete(
        ls_server: Any, ls_client: Any, annotators: list[dict], make_project: Callable,
        serve: Callable[..., ServeProcess]) -> None:
    users = [a["id"] for a in annotators]
    rng = random.Random(7)
    t_setup = time.monotonic()
    pid = make_project(CONFIG, make_tasks(users, n=FLOOD_TASKS), title="flood")
    svc = serve(ls_server.url, ls_server.token, "--project", str(pid),
                settings=FLOOD_SETTINGS).start()
    # the start-up sync: full read, baseline, every task written
    wait_for(lambda: idle(svc, pid) and any(j["status"] == "done" for j in svc.jobs(pid)), 300,
             "the start-up sync", step=1)
    tasks = export(ls_server.url, ls_server.token, pid)
    proj = project_json(ls_server.url, ls_server.token, pid)
    # 200 annotations get 5 events each: 4 with other values, then the state the server
    # has. Half of them really change on the server first (no webhook is registered: only
    # our events tell the service)
    anns = [(t, a) for t in tasks.values() for a in t["annotations"]]
    chosen = rng.sample(anns, N_FLOOD // 5)
    for t, a in chosen[: len(chosen) // 2]:
        ls_client.annotations.update(id=a["id"], result=other_result(rng, a))
    tasks = export(ls_server.url, ls_server.token, pid)
    final = {a["id"]: (t, a) for t in tasks.values() for a in t["annotations"]}
    per_client: list[list[list[dict[str, Any]]]] = [[] for _ in range(N_CLIENTS)]
    for i, (t, a) in enumerate(chosen):
        task, ann = final[a["id"]]
        seq = []
        for k in range(4):   # intermediate states, then the one the server has
            fake = {**ann, "result": other_result(rng, ann),
                    "updated_at": f"2020-01-01T00:00:0{k}.000000Z"}
            seq.append(annotation_event(proj, task, fake))
        seq.append(annotation_event(proj, task, ann))
        per_client[i % N_CLIENTS].append(seq)
    # each client sends its annotations' events in order (one annotation: one client)
    queues = [[json.dumps(seq[k]).encode() for k in range(5) for seq in seqs]
              for seqs in per_client]
    assert sum(map(len, queues)) == N_FLOOD
    print(f"\nsetup {time.monotonic() - t_setup:.1f}s; payloads ~{len(queues[0][0])} bytes")
    # while the flood comes in, the worker applies it: events rescored and written, and a
    # new baseline every 250 events (a full recomputation in a thread of the same process,
    # then every task it moves republished and recorded in the state file)
    n_jobs_before = len(svc.jobs(pid))

    latencies: list[float] = []
    answers: list[dict[str, Any]] = []
    errors: list[str] = []
    lock = threading.Lock()
    start = time.monotonic() + 0.5
    gap = FLOOD_SECONDS / (N_FLOOD / N_CLIENTS)

    def client(q: list[bytes]) -> None:
        with requests.Session() as s:
            for i, body in enumerate(q):
                delay = start + i * gap - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                t0 = time.perf_counter()
                try:
                    r = svc.post(body, timeout=10, session=s)
                    dt = time.perf_counter() - t0
                    with lock:
                        latencies.append(dt)
                        if r.status_code != 200:
                            errors.append(f"{r.status_code} {r.text[:200]}")
                        else:
                            answers.append(r.json())
                except requests.RequestException as exc:
                    with lock:
                        errors.append(repr(exc))

    threads = [threading.Thread(target=client, args=(q,)) for q in queues]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    elapsed = time.monotonic() - start
    xs = sorted(latencies)
    p50, p99, mx = (xs[len(xs) // 2], xs[int(len(xs) * 0.99)], xs[-1]) if xs else (0, 0, 0)
    health = svc.get("/health")
    print(f"flood: {len(xs)} acks in {elapsed:.1f}s; ack latency p50 {p50 * 1000:.0f} ms, "
          f"p99 {p99 * 1000:.0f} ms, max {mx * 1000:.0f} ms; server side "
          f"{health['webhooks']}; mean {statistics.mean(xs) * 1000:.0f} ms")
    assert not errors, errors[:5]
    assert len(answers) == N_FLOOD and all(a["status"] == "queued" for a in answers)
    assert elapsed < 10.0
    assert mx < 1.0, f"slowest acknowledgement {mx:.2f} s"
    # coalesced: far fewer jobs than events
    n_new_jobs = len({a["job"] for a in answers})
    assert n_new_jobs < N_FLOOD / 10, n_new_jobs

    wait_for(lambda: idle(svc, pid), 300, "the flood's events to be applied", step=1)
    js = svc.jobs(pid)
    assert all(j["status"] == "done" for j in js), [(j["id"], j["reason"], j["status"], j.get("error"))
                                                    for j in js if j["status"] != "done"]
    assert sum(j["events"] for j in js if j["id"] in {a["job"] for a in answers}) >= N_FLOOD
    assert len(js) - n_jobs_before < N_FLOOD / 10, len(js)
    # the events did reach the server: the changed annotations moved agreement
    assert sum((j["result"] or {}).get("n_written", 0) for j in js[: len(js) - n_jobs_before]) > 0
    # a reconcile: full read, compared with what the events built (none lost)
    rid = enqueue_reconcile(svc.state, pid)
    wait_for(lambda: idle(svc, pid) and any(j["id"] > rid and j["status"] == "done"
                                            and j["reason"] == "baseline ready"
                                            for j in svc.jobs(pid)),
             300, "the reconcile and its new baseline", step=1)
    health = svc.get("/health")
    print("\n".join(ln for ln in svc.text().splitlines() if " job " in ln or "full read" in ln))
    assert health["live"][str(pid)]["lost_events"] == 0
    bad = from_scratch_mismatches(ls_server.url, ls_server.token, pid, svc.settings_path)
    assert not bad, (f"{len(bad)} task(s) differ from a sync from scratch after the reconcile "
                     f"and its 'baseline ready' job, e.g. {bad[:2]}; jobs: "
                     + "; ".join(f"{j['id']} {j['reason']} {j['events']} ev "
                                 f"{(j['result'] or {}).get('n_written')} written"
                                 for j in svc.jobs(pid)[:6]))
    assert svc.stop() == 0


# -- 1. Label Studio down for 60 s -------------------------------------------------------
DOWN_SECONDS = 60.0
BACKOFF = 2.0
MAX_ATTEMPTS = 3


def _job_history(svc: ServeProcess, pid: int, until: float,
                 hook: Callable[[float], None]) -> dict[int, list[dict[str, Any]]]:
    """Poll /jobs until ``until`` (time.time()); per job, every distinct state seen.
    ``hook(now)`` runs between polls (sends events at set times)."""
    seen: dict[int, list[dict[str, Any]]] = {}
    keys = ("status", "attempts", "not_before", "started_at", "finished_at", "error", "events")
    while time.time() < until:
        hook(time.time())
        for j in svc.jobs(pid):
            state = {k: j[k] for k in keys}
            hist = seen.setdefault(j["id"], [])
            if not hist or hist[-1] != state:
                hist.append(state)
        time.sleep(0.2)
    return seen


@pytest.mark.server      # its own Label Studio (stopped and started again), not a fixture's
@pytest.mark.slow
@pytest.mark.skipif(bool(os.environ.get("LS_AGREEMENT_NO_SERVER")),
                    reason="LS_AGREEMENT_NO_SERVER is set")
def test_label_studio_down_60s_bounded_retries_then_recovery(
        tmp_path: Path, serve: Callable[..., ServeProcess]) -> None:
    ls = LocalLabelStudio(tmp_path / "ls", port=free_port())   # fixed: a restart keeps the URL
    ls.start(timeout=300)
    try:
        users = [ls.create_user(f"down{i}@example.com") for i in range(3)]
        client = ls.client()
        pid = int(client.projects.create(title="LS down", label_config=CONFIG).id)
        client.projects.import_tasks(id=pid, request=make_tasks(users, n=6))
        svc = serve(ls.url, ls.token, "--project", str(pid), "--max-attempts", str(MAX_ATTEMPTS),
                    "--retry-backoff", str(BACKOFF)).start()
        wait_for(lambda: idle(svc, pid) and any(j["status"] == "done" for j in svc.jobs(pid)),
                 120, "the start-up sync")
        assert from_scratch_mismatches(ls.url, ls.token, pid, svc.settings_path) == []
        n_before = len(svc.jobs(pid))
        rng = random.Random(3)
        proj = project_json(ls.url, ls.token, pid)
        tasks = export(ls.url, ls.token, pid)
        t1, t2 = sorted(tasks)[:2]
        # a change on the server whose event arrives only while the server is down
        a = tasks[t1]["annotations"][0]
        client.annotations.update(id=a["id"], result=other_result(rng, a))
        tasks = export(ls.url, ls.token, pid)
        first = annotation_event(proj, tasks[t1], tasks[t1]["annotations"][0])
        second = annotation_event(proj, tasks[t2], tasks[t2]["annotations"][1])   # as it is

        ls.stop()
        t_down = time.time()
        r = svc.post(first)
        assert r.status_code == 200 and r.json()["status"] == "queued"
        sent = {"second": False}

        def later(now: float) -> None:   # a second event half-way: a new job, same fate
            if not sent["second"] and now > t_down + DOWN_SECONDS / 2:
                sent["second"] = True
                assert svc.post(second).status_code == 200

        hist = _job_history(svc, pid, t_down + DOWN_SECONDS, later)
        new = {jid: h for jid, h in hist.items() if jid > n_before}
        assert len(new) == 2, hist
        for jid, h in new.items():
            last = h[-1]
            # bounded: every job ends failed after exactly max_attempts tries ...
            assert last["status"] == "failed" and last["attempts"] == MAX_ATTEMPTS, h
            # ... with exponential backoff: after try k the job waits BACKOFF * 2**(k-1)
            waits = {s["attempts"]: s["not_before"] - s["finished_at"]
                     for s in h if s["status"] == "pending" and s["finished_at"]}
            assert sorted(waits) == list(range(1, MAX_ATTEMPTS)), h
            for k, w in waits.items():
                assert w == pytest.approx(BACKOFF * 2 ** (k - 1), abs=0.05), (k, w)
            starts = [s for s in h if s["status"] == "running"]
            for prev, nxt in zip(starts, starts[1:]):   # a retry never starts early
                retry_due = next(s["not_before"] for s in h if s["status"] == "pending"
                                 and s["attempts"] == prev["attempts"] and s["finished_at"])
                assert nxt["started_at"] >= retry_due - 0.01
            # ... and not forever: nothing was tried after the last failure
            assert last["finished_at"] < t_down + DOWN_SECONDS - 10
        failed_jobs = svc.jobs(pid)
        assert sum(j["attempts"] for j in failed_jobs if j["id"] > n_before) == 2 * MAX_ATTEMPTS
        assert svc.get("/health")["jobs"]["pending"] == 0
        # the acknowledged events are still stored (a failed job keeps them)
        assert len([e for e in db_rows(svc.state)["events"] if e["project_id"] == pid]) == 2
        assert "Traceback" not in svc.text()

        ls.start(timeout=300)                    # same data dir, same port
        assert svc.get("/health")["status"] == "UP"
        # the next event brings the service back: full read, every task as from scratch
        tasks = export(ls.url, ls.token, pid)
        a = tasks[t2]["annotations"][2]
        client.annotations.update(id=a["id"], result=other_result(rng, a))
        tasks = export(ls.url, ls.token, pid)
        r = svc.post(annotation_event(proj, tasks[t2], tasks[t2]["annotations"][2]))
        assert r.status_code == 200
        wait_for(lambda: idle(svc, pid) and svc.jobs(pid)[0]["status"] == "done", 120,
                 "the event after the restart")
        assert from_scratch_mismatches(ls.url, ls.token, pid, svc.settings_path) == []
        assert svc.stop() == 0
    finally:
        ls.stop()


# -- 2. the service killed with pending jobs ---------------------------------------------
@pytest.mark.slow
def test_killed_service_keeps_pending_jobs_and_acknowledged_events(
        ls_server: Any, ls_client: Any, annotators: list[dict], make_project: Callable,
        serve: Callable[..., ServeProcess]) -> None:
    users = [a["id"] for a in annotators]
    rng = random.Random(5)
    pid = make_project(CONFIG, make_tasks(users, n=8), title="serve killed")
    proxy = FaultProxy(ls_server.url)      # between the service and Label Studio
    try:
        svc = serve(proxy.url, ls_server.token, "--project", str(pid)).start()
        wait_for(lambda: idle(svc, pid) and any(j["status"] == "done" for j in svc.jobs(pid)),
                 120, "the start-up sync")
        proj = project_json(ls_server.url, ls_server.token, pid)
        # the worker is busy: its reads wait 15 s in the proxy (its writes are refused
        # meanwhile, so nothing from before the kill lands after the restart)
        proxy.rule = lambda method, path: 15.0 if method == "GET" else "502"
        tasks = export(ls_server.url, ls_server.token, pid)
        bodies: list[bytes] = []
        answers = []
        for tid in sorted(tasks):
            for a in tasks[tid]["annotations"]:
                ls_client.annotations.update(id=a["id"], result=other_result(rng, a))
        tasks = export(ls_server.url, ls_server.token, pid)
        for n, tid in enumerate(sorted(tasks)):
            for a in tasks[tid]["annotations"]:
                body = json.dumps(annotation_event(proj, tasks[tid], a)).encode()
                r = svc.post(body)
                assert r.status_code == 200, r.text
                bodies.append(body)
                answers.append(r.json())
                if n == 0 and len(answers) == 1:
                    wait_for(lambda: svc.jobs(pid)[0]["status"] == "running", 30,
                             "the worker to take the first event")
        running = answers[0]["job"]
        assert {a["job"] for a in answers[1:]} != {running}
        pending = {a["job"] for a in answers[1:]} - {running}
        assert len(pending) == 1, answers            # coalesced behind the running job
        svc.kill()
        # what the killed service left: one running job, one pending with the events
        rows = db_rows(svc.state)
        st = {j["id"]: j for j in rows["jobs"]}
        (pj,) = pending
        assert st[running]["status"] == "running" and st[pj]["status"] == "pending", st
        assert st[pj]["events"] == len(bodies) - 1
        stored = [e["payload"] for e in rows["events"] if e["project_id"] == pid]
        assert stored == [b.decode() for b in bodies]     # every acknowledged event, in order

        proxy.rule = lambda method, path: None
        svc.start()
        assert "re-queued 1 interrupted job(s)" in svc.text()
        wait_for(lambda: idle(svc, pid) and st_done(svc, pid, pj), 120,
                 "the pending job after the restart")
        after = {j["id"]: j for j in svc.jobs(pid)}
        assert after[pj]["status"] == "done" and after[pj]["events"] >= len(bodies) - 1
        assert after[running]["status"] in ("done", "failed")   # re-run, or covered by pj
        assert not [e for e in db_rows(svc.state)["events"] if e["project_id"] == pid]
        assert from_scratch_mismatches(ls_server.url, ls_server.token, pid,
                                       svc.settings_path) == []
        assert svc.stop() == 0
    finally:
        proxy.close()


def st_done(svc: ServeProcess, pid: int, job_id: int) -> bool:
    return any(j["id"] == job_id and j["status"] == "done" for j in svc.jobs(pid))


# -- 3. security --------------------------------------------------------------------------
def test_secret_is_compared_in_constant_time(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # the code: authenticate() compares with hmac.compare_digest, never with == / !=
    tree = ast.parse(Path(webhooks.__file__).read_text())
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
              and n.name == "authenticate")
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call)
             and ast.unparse(n.func) == "hmac.compare_digest"]
    assert calls, "authenticate() does not call hmac.compare_digest"
    eq = [ast.unparse(n) for n in ast.walk(fn) if isinstance(n, ast.Compare)
          and any(isinstance(op, (ast.Eq, ast.NotEq)) for op in n.ops)]
    assert not eq, eq
    # the path taken: every webhook request goes through hmac.compare_digest
    seen: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def counting(a: Any, b: Any) -> bool:
        seen.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", counting)
    q = JobQueue(tmp_path / "q.sqlite")
    try:
        rec = webhooks.Receiver(q, SECRET)
        body = json.dumps({"action": "PROJECT_UPDATED", "project": {"id": 3}}).encode()
        for got, status in ((SECRET, 200), (SECRET[:-1] + "x", 401), ("", 401)):
            n = len(seen)
            assert rec.handle({webhooks.SECRET_HEADER: got}, body)[0] == status
            assert len(seen) == n + 1 and seen[-1] == (got.encode(), SECRET.encode())
        assert rec.handle({}, body)[0] == 401          # no header: nothing to compare
        assert q.counts()["pending"] == 1 and len(q.events(3)) == 1
    finally:
        q.close()


def _raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


def _state_counts(state: Path) -> tuple[int, int, int]:
    rows = db_rows(state)
    return len(rows["jobs"]), sum(j["events"] for j in rows["jobs"]), len(rows["events"])


def test_refused_requests_do_no_work_and_tokens_stay_secret(
        ls_server: Any, ls_client: Any, annotators: list[dict], make_project: Callable,
        serve: Callable[..., ServeProcess], tmp_path: Path) -> None:
    users = [a["id"] for a in annotators]
    pid = make_project(CONFIG, make_tasks(users, n=4), title="secrets")
    svc = serve(ls_server.url, ls_server.token, "--project", str(pid), "--api-token",
                API_TOKEN).start()          # request log on (no --quiet)
    auth = {"Authorization": f"Bearer {API_TOKEN}"}
    wait_for(lambda: idle(svc, pid) and st_done(svc, pid, 1), 120, "the start-up sync")
    proj = project_json(ls_server.url, ls_server.token, pid)
    tasks = export(ls_server.url, ls_server.token, pid)
    tid = min(tasks)
    event = json.dumps(annotation_event(proj, tasks[tid], tasks[tid]["annotations"][0])).encode()
    url = f"{svc.address}/webhook"
    before = _state_counts(svc.state)
    # no secret, a wrong one of the same length, a prefix, the API token, the LS token
    for headers in ({}, {webhooks.SECRET_HEADER: SECRET[:-1] + "X"},
                    {webhooks.SECRET_HEADER: SECRET[:-3]},
                    {webhooks.SECRET_HEADER: API_TOKEN},
                    {webhooks.SECRET_HEADER: ls_server.token}):
        r = requests.post(url, data=event, headers={"Content-Type": "application/json",
                                                    **headers}, timeout=10)
        assert r.status_code == 401 and r.json()["status"] == "rejected", r.text
        assert SECRET not in r.text
        assert _state_counts(svc.state) == before
    # over the limit: refused from the announced length, or counted while streaming
    limit = webhooks.MAX_BODY
    answer = _raw(svc.port, (f"POST /webhook HTTP/1.1\r\nHost: x\r\n{webhooks.SECRET_HEADER}: "
                             f"{SECRET}\r\nContent-Type: application/json\r\nContent-Length: "
                             f"{limit + 1}\r\n\r\n").encode() + event)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]

    def chunks() -> Iterator[bytes]:
        yield event[:-1] + b', "pad": "'
        block = b"x" * (1 << 20)
        for _ in range(limit // len(block) + 1):
            yield block
        yield b'"}'
    r = requests.post(url, data=chunks(), headers={webhooks.SECRET_HEADER: SECRET,
                                                   "Content-Type": "application/json"},
                      timeout=120)
    assert r.status_code == 413 and "exceeds" in r.json()["error"]
    assert _state_counts(svc.state) == before
    # the right secret: stored (the counts above could change)
    r = svc.post(event)
    assert r.status_code == 200 and r.json()["status"] == "queued"
    assert _state_counts(svc.state) != before

    # the pages and the API with every kind of token, right and wrong, in every place
    for kw in ({"headers": auth}, {"params": {"token": API_TOKEN}},
               {"headers": {"Authorization": f"Token {ls_server.token}"}},
               {"params": {"token": ls_server.token, "limit": 3}}):
        r = requests.get(f"{svc.address}/jobs", timeout=30, **kw)
        assert r.status_code == 200
        assert requests.get(f"{svc.address}/projects/{pid}", timeout=60, **kw).status_code in (200, 404)
    for bad in (SECRET, API_TOKEN + "x", ls_server.token[:-1] + "0"):
        r = requests.get(f"{svc.address}/jobs", params={"token": bad}, timeout=30)
        assert r.status_code == 401 and bad not in r.text
        r = requests.get(f"{svc.address}/", headers={"Authorization": f"Bearer {bad}"},
                         timeout=30)
        assert r.status_code == 401
    assert requests.get(f"{svc.address}/jobs", timeout=10).status_code == 401
    wait_for(lambda: idle(svc, pid), 120, "the accepted event's job")
    assert requests.get(f"{svc.address}/projects/{pid}/report.json", headers=auth,
                        timeout=30).status_code == 200
    assert svc.stop() == 0

    log = svc.text()
    assert '"POST /webhook HTTP/1.1" 401' in log and '"POST /webhook HTTP/1.1" 413' in log
    assert "GET /jobs?token=*** HTTP/1.1" in log          # logged, redacted
    for name, secret in (("webhook secret", SECRET), ("--api-token", API_TOKEN),
                         ("Label Studio token", ls_server.token)):
        assert secret not in log, f"the {name} is in the service's log"
        files = [p for root in (svc.out, svc.state.parent) for p in root.rglob("*") if p.is_file()]
        assert any(p.suffix == ".sqlite" for p in files) and any(p.suffix == ".json" for p in files)
        for p in files:
            data = p.read_bytes()
            assert secret.encode() not in data, f"the {name} is in {p}"
            assert secret.encode("utf-16-le") not in data, f"the {name} is in {p} (UTF-16)"

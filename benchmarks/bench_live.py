"""Benchmark of the live path of ``serve`` (issue: live agreement at scale).

Two parts:

* **mirror** (no server): a synthetic mirror of ``--mirror`` tasks (the demo's five
  controls); its memory, the time of its baseline, and the time of one event rescored
  against it (payload applied, touched task rescored, its push-back values built) —
  target ≤ 0.3 s; then, on a ``--beside``-task mirror, events while a new baseline is made
  in a thread of the service and in a worker process (``[sync] baseline_worker``);
* **server**: a real Label Studio (bulk action on) with a ``--tasks`` project and a
  ``--small`` project made by the demo generator (3–5 annotators, 5 controls), the service
  run in-process on a loopback port and connected by Label Studio's own webhooks. Printed:
  the first sync (start-up full read + baseline + push), then over ``--events`` annotation
  edits made through the API, the time until the edited task's ``agreement_*`` fields
  change (p50 target ≤ 1 s, p95 ≤ 2 s; small project within 1.5×), other tasks written per
  event (target 0; republishes counted apart), and a flood of ``--flood`` edits in
  ``--flood-seconds``: answer times of the receiver (target every one < 1 s), lost events
  found by a reconcile (target 0) and tasks that differ from a sync from scratch (target 0).

Run: ``python -m benchmarks live`` (about 30 min with the defaults) or smaller, e.g.
``python -m benchmarks live -- --tasks 2000 --small 200 --mirror 20000``.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from ls_agreement.demo.data import ANNOTATORS, DEMO_CONFIG, generate


def _rss_mb() -> float:
    """Resident memory of this process (Linux /proc)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096 / 2 ** 20


def _export_shape(tasks: list[dict[str, Any]], first_id: int = 1) -> list[dict[str, Any]]:
    out, aid = [], first_id * 10
    for k, t in enumerate(tasks):
        anns = []
        for a in t["annotations"]:
            aid += 1
            anns.append({**a, "id": aid, "updated_at": f"2026-01-01T00:00:00.{aid:06d}Z"})
        out.append({"id": first_id + k, "data": t["data"], "annotations": anns})
    return out


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


# -- part 1: the mirror ---------------------------------------------------------------------------
def sentiment_edit(mirror: Any, tid: int, k: int, rng: random.Random) -> dict[str, Any]:
    """The ANNOTATION_UPDATED payload of the ``k``-th edit: one annotation of task ``tid``
    in ``mirror`` with another sentiment (the demo's choice control), timestamped after
    the mirror's annotations."""
    task = mirror.tasks[tid].as_task()
    anns = {a["id"]: a for a in task["annotations"]}
    ann = dict(anns[rng.choice(sorted(anns))])
    ann["result"] = [r if r["from_name"] != "sentiment" else
                     {**r, "value": {"choices": [rng.choice(["Positive", "Neutral", "Negative"])]}}
                     for r in ann["result"]]
    ann["updated_at"] = f"2026-02-01T00:00:{k:02d}Z"
    return {"action": "ANNOTATION_UPDATED", "annotation": {**ann, "task": tid}, "task": {"id": tid, "data": task["data"]}}


def bench_mirror(n: int, bootstrap: int) -> None:
    from ls_agreement.plugin.live.baseline import apply_scores, make_baseline, score_tasks
    from ls_agreement.plugin.live.events import apply_event
    from ls_agreement.plugin.live.mirror import ProjectMirror
    from ls_agreement.plugin.pushback import desired_for
    from ls_agreement.plugin.settings import ReportSettings

    users = {a.email: i + 1 for i, a in enumerate(ANNOTATORS)}
    block = generate(users, n_tasks=min(n, 2000), seed=11).tasks
    rss0 = _rss_mb()
    mirror = ProjectMirror()
    tasks = []
    for start in range(0, n, len(block)):    # the block repeated under new ids
        tasks += _export_shape(block[: n - start], first_id=start + 1)
    mirror.fill(tasks)
    del tasks
    rss1 = _rss_mb()
    print(f"mirror of {len(mirror):,} tasks ({sum(len(t.annotations) for t in mirror.tasks.values()):,} "
          f"annotations, 5 controls): {rss1 - rss0:,.0f} MB resident")
    t0 = time.perf_counter()
    base = make_baseline(DEMO_CONFIG, mirror, ReportSettings(bootstrap=bootstrap))
    print(f"baseline of the whole mirror (bootstrap {bootstrap}): {time.perf_counter() - t0:.1f} s; "
          f"process now {_rss_mb():,.0f} MB")
    rng = random.Random(3)
    times = []
    for k in range(30):
        tid = rng.randrange(1, n + 1)
        payload = sentiment_edit(mirror, tid, k, rng)
        t0 = time.perf_counter()
        applied = apply_event(mirror, payload)
        apply_scores(base.report, score_tasks(base, mirror, applied.touched), applied.deleted)
        desired_for(base.report, tid, mirror.tasks[tid].fingerprint(), {}, base.quality)
        times.append(time.perf_counter() - t0)
    p50, worst = statistics.median(times), max(times)
    print(f"one event on the {n:,}-task mirror: median {p50 * 1000:.1f} ms, max {worst * 1000:.1f} ms "
          f"(target ≤ 300 ms: {'PASS' if worst <= 0.3 else 'over'})")


def bench_beside_baseline(n: int, bootstrap: int) -> None:
    """Events while a new baseline is made beside them: in a thread of the service (as
    before) and in a spawned worker process (``[sync] baseline_worker``, the default)."""
    from ls_agreement.plugin.live.baseline import apply_scores, make_baseline, score_tasks
    from ls_agreement.plugin.live.baseline_worker import make_baseline_in_worker
    from ls_agreement.plugin.live.events import apply_event
    from ls_agreement.plugin.live.mirror import ProjectMirror
    from ls_agreement.plugin.settings import ReportSettings

    users = {a.email: i + 1 for i, a in enumerate(ANNOTATORS)}
    mirror = ProjectMirror()
    mirror.fill(_export_shape(generate(users, n_tasks=n, seed=11).tasks))
    settings = ReportSettings(bootstrap=bootstrap)
    base = make_baseline(DEMO_CONFIG, mirror, settings)
    rng = random.Random(5)

    def events(k: int, out: list[float]) -> None:
        for _ in range(k):
            tid = rng.randrange(1, n + 1)
            payload = sentiment_edit(mirror, tid, len(out), rng)
            t0 = time.perf_counter()
            applied = apply_event(mirror, payload)
            apply_scores(base.report, score_tasks(base, mirror, applied.touched), applied.deleted)
            out.append(time.perf_counter() - t0)
            time.sleep(0.05)           # events arrive apart, as webhooks do

    idle: list[float] = []
    events(40, idle)
    print(f"events on a {n:,}-task mirror, one every 50 ms: idle median {statistics.median(idle) * 1000:.1f} ms, "
          f"p90 {_pct(idle, 0.9) * 1000:.1f}, max {max(idle) * 1000:.1f} ms")
    for where, make in (("a thread of the service", make_baseline), ("a worker process", make_baseline_in_worker)):
        snapshot, done, took = mirror.copy(), threading.Event(), []
        rss0, rss_top = _rss_mb(), 0.0

        def build() -> None:
            t0 = time.perf_counter()
            make(DEMO_CONFIG, snapshot, settings)
            took.append(time.perf_counter() - t0)
            done.set()

        worker = threading.Thread(target=build)
        worker.start()
        busy: list[float] = []
        while not done.is_set():
            events(5, busy)
            rss_top = max(rss_top, _rss_mb())
        worker.join()
        print(f"  while a baseline is made in {where} ({took[0]:.1f} s): {len(busy)} events, median "
              f"{statistics.median(busy) * 1000:.1f} ms, p90 {_pct(busy, 0.9) * 1000:.1f}, max {max(busy) * 1000:.1f} ms; "
              f"the service's process grew by up to {rss_top - rss0:,.0f} MB")


# -- part 2: a real server ------------------------------------------------------------------------
class _Project:
    def __init__(self, client: Any, users: dict[str, int], n: int, title: str) -> None:
        self.client = client
        project = client.projects.create(title=title, label_config=DEMO_CONFIG)
        self.id = int(project.id)
        tasks = generate(users, n_tasks=n, seed=n).tasks
        t0 = time.perf_counter()
        for k in range(0, n, 500):
            client.projects.import_tasks(id=self.id, request=tasks[k: k + 500])
        self.import_s = time.perf_counter() - t0

    def export(self) -> list[dict[str, Any]]:
        return json.loads(b"".join(self.client.projects.exports.download_sync(
            self.id, export_type="JSON", download_all_tasks=True)))


def _marks(task: Any) -> tuple[Any, ...]:
    """What shows that the service wrote the task: its agreement_* keys and fingerprint."""
    data = task.data or {}
    meta = (task.meta or {}).get("agreement") or {}
    return (tuple(sorted((k, v) for k, v in data.items() if k.startswith("agreement_"))),
            meta.get("fingerprint"))


def _edit(client: Any, rng: random.Random, task: dict[str, Any], users: list[int]) -> None:
    """Change one annotation's sentiment, or add an annotator's annotation."""
    anns = task["annotations"]
    free = [u for u in users if u not in {a["completed_by"] for a in anns}]
    if free and rng.random() < 0.4:
        result = [dict(r) for r in rng.choice(anns)["result"]]
        client.annotations.create(id=task["id"], result=result, completed_by=rng.choice(free))
        return
    ann = rng.choice(anns)
    mood = [r for r in ann["result"] if r["from_name"] == "sentiment"]
    old = mood[0]["value"]["choices"][0] if mood else None
    new = rng.choice([m for m in ("Positive", "Neutral", "Negative") if m != old])
    result = [r for r in ann["result"] if r["from_name"] != "sentiment"] + [
        {"from_name": "sentiment", "to_name": "text", "type": "choices", "value": {"choices": [new]}}]
    client.annotations.update(id=ann["id"], result=result)


def _wait(cond: Callable[[], bool], timeout: float, step: float = 0.05) -> float | None:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if cond():
            return time.perf_counter() - t0
        time.sleep(step)
    return None


def _latencies(svc: Any, proj: _Project, users: list[int], n_events: int, seed: int) -> dict[str, Any]:
    client, runner = proj.client, svc.worker.runner
    rng = random.Random(seed)
    tasks = proj.export()
    lat, others, parts = [], [], []
    rep0 = svc.queue.live_stats().get(proj.id, {}).get("republished", 0)
    for _ in range(n_events):
        task = rng.choice(tasks)
        before = _marks(client.tasks.get(id=task["id"]))
        t0 = time.perf_counter()
        _edit(client, rng, task, users)
        took = _wait(lambda: _marks(client.tasks.get(id=task["id"])) != before, 30)
        lat.append(time.perf_counter() - t0 if took is not None else float("inf"))
        out = runner.last.get(proj.id)
        if out is not None and out.mode == "events":
            others.append(len(set(out.written) - set(out.touched)))
            parts.append(out.timings)
        task["annotations"] = [a.model_dump() if hasattr(a, "model_dump") else dict(a)
                               for a in client.annotations.list(id=task["id"])]
        time.sleep(0.2)
    rep = svc.queue.live_stats().get(proj.id, {}).get("republished", 0) - rep0
    split = {k: statistics.median(p.get(k, 0.0) for p in parts) for k in ("score", "push")} if parts else {}
    return {"p50": _pct(lat, 0.5), "p95": _pct(lat, 0.95), "max": max(lat),
            "others": max(others) if others else 0, "republished": rep, "split": split}


def _idle(svc: Any, pid: int) -> bool:
    counts = svc.queue.counts()
    return not counts.get("pending") and not counts.get("running") and not svc.queue.events(pid)


def bench_server(n_big: int, n_small: int, n_events: int, n_flood: int, flood_s: float,
                 bootstrap: int, api_flood: bool = True) -> None:
    import argparse as _ap

    from ls_agreement.plugin.cli import main as cli_main
    from ls_agreement.plugin.commands import serve as serve_cmd
    from ls_agreement.demo.local_server import LocalLabelStudio

    with tempfile.TemporaryDirectory() as tmp:
        server = LocalLabelStudio(Path(tmp) / "ls", port=0)
        server.start(timeout=300)
        try:
            client = server.client()
            emails = {a.email: server.create_user(a.email, a.first_name, a.last_name) for a in ANNOTATORS}
            users = list(emails.values())
            big = _Project(client, emails, n_big, f"live bench {n_big}")
            small = _Project(client, emails, n_small, f"live bench {n_small}")
            print(f"imported {n_big:,} tasks in {big.import_s:.0f} s and {n_small:,} in {small.import_s:.0f} s")
            t0 = time.perf_counter()
            bare = big.export()
            print(f"bare JSON export of {len(bare):,} tasks: {time.perf_counter() - t0:.1f} s")
            settings = Path(tmp) / "live.toml"
            settings.write_text(f"[report]\nbootstrap = {bootstrap}\n[sync]\nmeta = true\n")
            p = _ap.ArgumentParser()
            serve_cmd.add_arguments(p)
            args = p.parse_args(["--url", server.url, "--token", server.token, "--port", "0",
                                 "--secret", "bench-secret", "--state", str(Path(tmp) / "state.sqlite"),
                                 "--out", str(Path(tmp) / "out"), "--settings", str(settings),
                                 "--interval", "0", "--quiet"])
            svc = serve_cmd.make_service(args).start()
            try:
                firsts = {}
                for proj in (small, big):
                    t0 = time.perf_counter()
                    code = cli_main(["connect", "--url", server.url, "--token", server.token,
                                     "--project", str(proj.id), "--receiver", f"{svc.address}/webhook",
                                     "--secret", "bench-secret", "--state", str(Path(tmp) / "state.sqlite"),
                                     "--out", str(Path(tmp) / "out"), "--settings", str(settings),
                                     "--quiet", "--no-sync"])
                    assert code == 0, f"connect failed ({code})"
                    took = _wait(lambda: proj.id in svc.worker.runner.projects
                                 and svc.worker.runner.projects[proj.id].base is not None
                                 and _idle(svc, proj.id), 7200, step=0.5)
                    firsts[proj.id] = time.perf_counter() - t0 if took is not None else float("inf")
                print(f"first sync by the service (full read + baseline + push of every task): "
                      f"{firsts[big.id]:.0f} s for {n_big:,} tasks, {firsts[small.id]:.0f} s for {n_small:,}")
                res = {}
                for proj in (big, small):
                    res[proj.id] = _latencies(svc, proj, users, n_events, seed=proj.id)
                    r = res[proj.id]
                    print(f"{len(svc.worker.runner.projects[proj.id].mirror):,}-task project, {n_events} edits: "
                          f"event → task updated p50 {r['p50']:.2f} s, p95 {r['p95']:.2f} s, max {r['max']:.2f} s "
                          f"(targets 1 s / 2 s: {'PASS' if r['p50'] <= 1 and r['p95'] <= 2 else 'over'}); "
                          f"other tasks written per event: {r['others']}; republished apart: {r['republished']}; "
                          f"in the service (median): rescore {r['split'].get('score', 0) * 1000:.0f} ms, "
                          f"push {r['split'].get('push', 0) * 1000:.0f} ms")
                ratio = res[big.id]["p50"] / max(res[small.id]["p50"], 1e-9)
                print(f"p50 {n_big:,} vs {n_small:,} tasks: {ratio:.2f}× (target ≤ 1.5×: "
                      f"{'PASS' if ratio <= 1.5 else 'over'})")
                _replay_flood(svc, big, n_flood, flood_s)
                if api_flood:
                    _flood(svc, big, users, n_flood, flood_s)
            finally:
                svc.stop(grace=30)
        finally:
            server.stop()


def _flood(svc: Any, proj: _Project, users: list[int], n: int, seconds: float) -> None:
    client = proj.client
    tasks = proj.export()
    rng = random.Random(5)
    picks = [rng.choice(tasks) for _ in range(n)]
    lock = threading.Lock()
    busy: set[int] = set()
    errors: list[str] = []
    n0 = svc.receiver.n_requests

    def one(k: int) -> None:
        task = picks[k]
        with lock:          # one edit at a time per task: its annotation list stays current
            if task["id"] in busy:
                return
            busy.add(task["id"])
        try:
            r = random.Random(k)
            anns = client.annotations.list(id=task["id"])
            task["annotations"] = [a.model_dump() if hasattr(a, "model_dump") else dict(a) for a in anns]
            _edit(client, r, task, users)
        except Exception as exc:  # noqa: BLE001 - counted, printed
            errors.append(f"{type(exc).__name__}: {exc}"[:200])
        finally:
            with lock:
                busy.discard(task["id"])

    t0 = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        for k in range(n):
            pool.submit(one, k)
            time.sleep(max(0.0, (k + 1) * seconds / n - (time.perf_counter() - t0)))
    sent = time.perf_counter() - t0
    acks = svc.receiver.ack_stats()
    n_hooks = svc.receiver.n_requests - n0
    _wait(lambda: _idle(svc, proj.id), 3600, step=0.5)
    drained = time.perf_counter() - t0
    runner = svc.worker.runner
    lp = runner.projects[proj.id]
    lost_before = svc.queue.live_stats().get(proj.id, {}).get("lost_events", 0)
    svc.queue.enqueue(proj.id, "reconcile", action="RECONCILE")
    _wait(lambda: _idle(svc, proj.id) and runner.last[proj.id].mode == "rebaseline", 3600, step=0.5)
    lost = svc.queue.live_stats().get(proj.id, {}).get("lost_events", 0) - lost_before
    bad = lp.mismatches(proj.export())
    print(f"flood: {n_hooks} webhook calls from {n} edits sent in {sent:.0f} s ({len(errors)} API errors); "
          f"answered p50 {acks['p50']} s, p99 {acks['p99']} s, max {acks['max']} s "
          f"(target every one < 1 s: {'PASS' if (acks['max'] or 0) < 1 else 'over'}); all applied "
          f"{drained:.0f} s after the first; lost events found by a reconcile: {lost}; tasks that differ "
          f"from a sync from scratch at the same baseline: {len(bad)}")
    for line in bad[:5]:
        print("  ", line)
    for line in errors[:3]:
        print("   API error:", line)


def _replay_flood(svc: Any, proj: _Project, n: int, seconds: float, clients: int = 8) -> None:
    """``n`` ANNOTATION_UPDATED payloads in Label Studio's format posted within ``seconds``
    (Label Studio's own API cannot make 1,000 edits a minute here): random results built
    from the project's annotations, then each touched annotation as it really is, so the
    final state is the server's. Answer times measured by the senders."""
    import requests

    tasks = {int(t["id"]): t for t in proj.export()}
    rng = random.Random(9)
    anns = [(tid, a) for tid, t in tasks.items() for a in t["annotations"]]
    picked = rng.sample(anns, min(len(anns), max(1, n // 5)))

    def body(tid: int, ann: dict[str, Any], res: list[dict[str, Any]]) -> bytes:
        return json.dumps({"action": "ANNOTATION_UPDATED", "project": {"id": proj.id},
                           "annotation": {**ann, "task": tid, "result": res},
                           "task": {"id": tid, "data": tasks[tid]["data"]}}).encode()

    noise = []
    for k in range(n - len(picked)):
        tid, ann = picked[k % len(picked)]
        _other_task, other = rng.choice(anns)   # another annotation's result: same controls
        noise.append(body(tid, ann, other["result"]))
    final = [body(tid, a, a["result"]) for tid, a in picked]
    lat: list[float] = []
    codes: list[int] = []
    lock = threading.Lock()
    url = f"{svc.address}/webhook"

    failures: list[str] = []

    def send(data: bytes) -> None:
        # one connection per payload, as Label Studio sends its webhooks (a new session per
        # call in core/utils/io.py): no kept-alive connection the server may close meanwhile
        t0 = time.perf_counter()
        try:
            r = requests.post(url, data=data, timeout=30, headers={"Content-Type": "application/json",
                                                                   "X-LS-Agreement-Secret": "bench-secret"})
        except requests.RequestException as exc:   # no answer at all: counted, never dropped
            with lock:
                failures.append(f"{type(exc).__name__}: {exc}"[:300])
            return
        with lock:
            lat.append(time.perf_counter() - t0)
            codes.append(r.status_code)

    t0 = time.perf_counter()
    for batch in (noise, final):
        with ThreadPoolExecutor(clients) as pool:
            for k, data in enumerate(batch):
                pool.submit(send, data)
                if batch is noise:
                    time.sleep(max(0.0, (k + 1) * seconds / n - (time.perf_counter() - t0)))
    sent = time.perf_counter() - t0
    _wait(lambda: _idle(svc, proj.id), 3600, step=0.5)
    drained = time.perf_counter() - t0
    runner = svc.worker.runner
    lost_before = svc.queue.live_stats().get(proj.id, {}).get("lost_events", 0)
    svc.queue.enqueue(proj.id, "reconcile", action="RECONCILE")
    _wait(lambda: _idle(svc, proj.id) and runner.last[proj.id].mode == "rebaseline", 3600, step=0.5)
    lost = svc.queue.live_stats().get(proj.id, {}).get("lost_events", 0) - lost_before
    bad = runner.projects[proj.id].mismatches(proj.export())
    ok = max(lat) < 1 and all(c == 200 for c in codes) and not failures
    print(f"replayed flood: {len(noise) + len(final)} payloads from {clients} senders in {sent:.0f} s; "
          f"no answer: {len(failures)}; non-200: "
          f"{sum(c != 200 for c in codes)}; answered p50 {_pct(lat, 0.5) * 1000:.0f} ms, p99 "
          f"{_pct(lat, 0.99) * 1000:.0f} ms, max {max(lat) * 1000:.0f} ms (target every one < 1 s: "
          f"{'PASS' if ok else 'over'}); all applied "
          f"{drained:.0f} s after the first; lost events found by a reconcile: {lost}; tasks that "
          f"differ from a sync from scratch at the same baseline: {len(bad)}")
    for line in failures[:3]:
        print("   no answer:", line)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks live")
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--small", type=int, default=1_000)
    ap.add_argument("--events", type=int, default=50)
    ap.add_argument("--flood", type=int, default=1_000)
    ap.add_argument("--flood-seconds", type=float, default=60.0)
    ap.add_argument("--mirror", type=int, default=100_000)
    ap.add_argument("--bootstrap", type=int, default=200,
                    help="bootstrap resamples of the baselines (the report default is 1000)")
    ap.add_argument("--beside", type=int, default=3_000,
                    help="tasks of the mirror whose events are timed beside a baseline being made")
    ap.add_argument("--only", choices=["mirror", "server"], default=None)
    ap.add_argument("--no-api-flood", action="store_true",
                    help="skip the flood of edits through Label Studio's API (minutes here); "
                         "the replayed-payload flood always runs")
    a = ap.parse_args(argv or [])
    if a.only in (None, "mirror"):
        bench_mirror(a.mirror, bootstrap=0)
        bench_beside_baseline(a.beside, bootstrap=a.bootstrap)
    if a.only in (None, "server"):
        bench_server(a.tasks, a.small, a.events, a.flood, a.flood_seconds, a.bootstrap,
                     api_flood=not a.no_api_flood)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

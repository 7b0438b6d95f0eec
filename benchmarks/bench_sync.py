"""Benchmark of ``ls-agreement sync`` against a real Label Studio: bulk push-back.

Starts its own LocalLabelStudio (with ``ff_back_experimental_features`` on, so the Data
Manager lists ``add_data_field``), imports the same project twice, then times:

* the bare JSON export (SDK ``download_sync`` + json parse) — the yardstick;
* the first sync with the bulk action (``[sync] meta = false``: data keys only, one request
  per distinct key/value) — target at most 3x the export;
* the first sync without it (``bulk = false``, meta detail on: fresh re-read + one PATCH
  per task at the measured concurrency) — target a push rate at least 1.5x the old push
  (fixed 8 workers: 8 tasks/s when it was measured; a project of ``--ref-tasks`` tasks is
  also pushed that way in the same run, since this machine's speed varies with its load);
* a second sync of each with nothing changed (must write nothing), a sync after one
  annotation changed, and the requests per HTTP method of every sync.

Run: ``python -m benchmarks sync -- --tasks 2000`` (or ``bash run.sh bench sync -- --tasks 2000``).

``--demo`` times the bulk first sync on the issue's own setting instead: the demo
generator's project (5 controls: boxes, spans, choices, text, ranking; 3-5 annotators per
task), e.g. ``python -m benchmarks sync -- --demo --tasks 10000``.
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

OLD_PUSH_RATE = 8.0   # tasks/s: first sync of a 2,000-task project before bulk push-back

CONFIG = """<View>
  <Text name="text" value="$text"/>
  <Choices name="sentiment" toName="text" choice="single">
    <Choice value="Positive"/><Choice value="Negative"/><Choice value="Neutral"/>
  </Choices>
  <Rating name="quality" toName="text" maxRating="5"/>
</View>"""


def _tasks(users: list[int], n: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    labels = ["Positive", "Negative", "Neutral"]
    out = []
    for i in range(n):
        truth, rating = rng.randrange(3), rng.randrange(1, 6)
        anns = []
        for uid in users:
            lab = truth if rng.random() < 0.7 else rng.randrange(3)
            rat = min(5, max(1, rating + rng.choice([-1, 0, 0, 0, 1])))
            anns.append({"completed_by": uid, "ground_truth": False, "result": [
                {"from_name": "sentiment", "to_name": "text", "type": "choices",
                 "value": {"choices": [labels[lab]]}},
                {"from_name": "quality", "to_name": "text", "type": "rating",
                 "value": {"rating": rat}}]})
        out.append({"data": {"text": f"document {i}", "ext_id": i}, "annotations": anns})
    return out


def _timed(fn: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _export(client: Any, pid: int) -> list[dict[str, Any]]:
    return json.loads(b"".join(client.projects.exports.download_sync(
        pid, export_type="JSON", download_all_tasks=True)))


def _ours(task: dict[str, Any]) -> dict[str, Any]:
    """A task's agreement data keys, the timestamp left out (it differs per run)."""
    return {k: v for k, v in task["data"].items()
            if k.startswith("agreement_") and k != "agreement_updated"}


def main(argv: list[str] | None = None) -> int:
    from ls_agreement.demo.local_server import LocalLabelStudio
    from ls_agreement.plugin.settings import PluginSettings, ReportSettings, SyncOptions
    from ls_agreement.plugin.sync import sync_project

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=8,
                    help="most concurrent PATCHes of the fallback (the level is measured)")
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--ref-tasks", type=int, default=300,
                    help="tasks of the same-run reference push at a fixed 8 workers (0: skip)")
    ap.add_argument("--demo", action="store_true",
                    help="the demo generator's 5-control project, bulk first sync only")
    ap.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="sqlite",
                    help="--demo: Label Studio's database (PostgreSQL: Debian's, own cluster)")
    args = ap.parse_args(argv or [])
    if args.demo:
        dbs = ["sqlite", "postgresql"] if args.db == "both" else [args.db]
        return max(bench_demo(args.tasks, args.bootstrap, db) for db in dbs)

    rows: list[tuple[str, float, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp:
        server = LocalLabelStudio(Path(tmp) / "ls", port=0)
        print(f"starting Label Studio ({tmp}) ...", flush=True)
        server.start(timeout=400)
        try:
            users = [server.create_user(f"bench{i}@example.com") for i in range(3)]
            client = server.client()
            tasks = _tasks(users, args.tasks)
            pids = []
            t_import = 0.0
            half = (args.ref_tasks + 1) // 2
            for title, n in (("bench sync (bulk)", len(tasks)),
                             ("bench sync (per task)", len(tasks)),
                             ("bench sync (old push, before)", half),
                             ("bench sync (old push, after)", args.ref_tasks - half)):
                proj = client.projects.create(title=title, label_config=CONFIG)
                pids.append(int(proj.id))
                for k in range(0, n, 1000):
                    dt, _ = _timed(lambda: client.projects.import_tasks(
                        id=proj.id, request=tasks[k:min(n, k + 1000)]))
                    t_import += dt
            bulk_pid, patch_pid, *ref_pids = pids
            print(f"imported 2 x {len(tasks)} tasks x 3 annotations in {t_import:.1f} s",
                  flush=True)

            t_export = min(_timed(lambda: _export(client, bulk_pid))[0] for _ in range(2))
            report = ReportSettings(bootstrap=args.bootstrap)
            bulk_settings = PluginSettings(report=report, sync=SyncOptions(
                workers=args.workers, meta=False))
            patch_settings = PluginSettings(report=report, sync=SyncOptions(
                workers=args.workers, bulk=False))

            def sync(pid: int, settings: Any, name: str) -> Any:
                t, r = _timed(lambda: sync_project(server.url, server.token, pid, settings,
                                                   out_dir=Path(tmp) / f"out-{pid}",
                                                   progress=False))
                rows.append((name, t, r))
                print(f"  {name}: {t:.1f} s, {r.n_written} written", flush=True)
                return t, r

            t_bulk, r_bulk = sync(bulk_pid, bulk_settings, "first sync, bulk (meta=false)")
            sync(bulk_pid, bulk_settings, "second sync, bulk (no change)")
            refs: list[Any] = []

            def reference(pid: int, when: str) -> None:
                # The old push: the same per-task path held at 8 workers (no measuring).
                # Half of it runs before, half after the measured push: the machine's
                # load drifts, and this brackets it.
                from ls_agreement.plugin import push as pushback
                levels, pushback.LEVELS = pushback.LEVELS, (8,)
                try:
                    refs.append(sync(pid, PluginSettings(report=report, sync=SyncOptions(
                        workers=8, bulk=False)), f"reference at 8 workers, {when}")[1])
                finally:
                    pushback.LEVELS = levels

            if args.ref_tasks > 1:
                reference(ref_pids[0], "before")
            t_patch, r_patch = sync(patch_pid, patch_settings, "first sync, per task")
            if args.ref_tasks > 1:
                reference(ref_pids[1], "after")
            sync(patch_pid, patch_settings, "second sync, per task (no change)")
            for pid, settings, name in ((bulk_pid, bulk_settings, "bulk"),
                                        (patch_pid, patch_settings, "per task")):
                exported = _export(client, pid)
                ann = exported[len(exported) // 2]["annotations"][0]
                res = ann["result"]
                res[0]["value"]["choices"] = (["Neutral"] if res[0]["value"]["choices"]
                                              != ["Neutral"] else ["Positive"])
                client.annotations.update(id=ann["id"], result=res)
                sync(pid, settings, f"after 1 annotation changed, {name}")
            a = {t["data"]["ext_id"]: _ours(t) for t in _export(client, bulk_pid)}
            b = {t["data"]["ext_id"]: _ours(t) for t in _export(client, patch_pid)}
            same_values = json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
        finally:
            server.stop()

    print(f"\nsync benchmark: {args.tasks} tasks x 3 annotators, 2 controls, "
          f"bootstrap {args.bootstrap}, PATCH workers measured up to {args.workers}")
    _table(t_export, rows)
    ratio = t_bulk / t_export
    push_ratio = r_bulk.timings.get("push", 0.0) / t_export

    def rate_of(r: Any) -> float:
        return r.n_written / max(r.timings.get("push", 1e-9), 1e-9)

    rate = rate_of(r_patch)
    gain = rate / OLD_PUSH_RATE
    ref_rate = (sum(r.n_written for r in refs) / max(sum(r.timings.get("push", 0.0)
                                                         for r in refs), 1e-9)
                if refs else None)
    second_clean = all(r.n_written == 0 and not r.calls.get("PATCH") and not r.calls.get("POST")
                       for name, _, r in rows if name.startswith("second"))
    ok1 = ratio <= 3.0
    same_run = rate / ref_rate if ref_rate else None
    ok2 = (same_run if same_run is not None else gain) >= 1.5
    print(f"\nfirst sync with bulk action / bare export = {ratio:6.2f}  (target <= 3.00)  "
          f"{'PASS' if ok1 else 'FAIL'}   [its push alone: {push_ratio:.2f} x the export]")
    print(f"per-task push rate = {rate:.1f} tasks/s at "
          f"{r_patch.push.workers if r_patch.push else '?'} workers (measured) = {gain:.2f} x "
          f"the nominal old {OLD_PUSH_RATE:g} tasks/s")
    if same_run is not None:
        print(f"  same run, fixed 8 workers: {ref_rate:.1f} tasks/s -> {same_run:.2f} x "
              f"(target >= 1.50)  {'PASS' if ok2 else 'FAIL'}")
    else:
        print(f"  (target >= 1.50 x the nominal)  {'PASS' if ok2 else 'FAIL'}")
    print(f"second syncs wrote nothing: {'PASS' if second_clean else 'FAIL'}; "
          f"bulk and per-task data keys identical: {'PASS' if same_values else 'FAIL'}")
    return 0 if ok1 and ok2 and second_clean and same_values else 1


def bench_demo(n: int, bootstrap: int, db: str = "sqlite") -> int:
    """Bulk first sync / bare export on the demo generator's project of ``n`` tasks, Label
    Studio on SQLite or on PostgreSQL (where the bulk action is one ``jsonb_set`` update)."""
    from ls_agreement.demo.data import ANNOTATORS, DEMO_CONFIG, generate
    from ls_agreement.demo.local_server import LocalLabelStudio
    from ls_agreement.plugin.settings import PluginSettings, ReportSettings, SyncOptions
    from ls_agreement.plugin.sync import sync_project

    with tempfile.TemporaryDirectory(prefix="bench-sync-demo-") as tmp:
        pg = None
        if db == "postgresql":
            from tests.local_postgres import LocalPostgres, PostgresLabelStudio
            pg = LocalPostgres(Path(tmp) / "pg", port=0)
            pg.start()
            server = PostgresLabelStudio(Path(tmp) / "ls", port=0, experimental=True, postgres=pg)
        else:
            server = LocalLabelStudio(Path(tmp) / "ls", port=0, experimental=True)
        try:
            server.start(timeout=900)
            users = {a.email: server.create_user(a.email, a.first_name, a.last_name)
                     for a in ANNOTATORS}
            client = server.client()
            pid = int(client.projects.create(title=f"demo {n}", label_config=DEMO_CONFIG).id)
            tasks = generate(users, n_tasks=n, seed=n).tasks
            t_import = sum(_timed(lambda: client.projects.import_tasks(
                id=pid, request=tasks[k:k + 500]))[0] for k in range(0, n, 500))
            t_export = min(_timed(lambda: _export(client, pid))[0] for _ in range(2))
            settings = PluginSettings(report=ReportSettings(bootstrap=bootstrap),
                                      sync=SyncOptions(meta=False))
            rows = []
            for name in ("first sync, bulk (meta=false)", "second sync (no change)"):
                t, r = _timed(lambda: sync_project(server.url, server.token, pid, settings,
                                                   out_dir=Path(tmp) / "out", progress=False))
                rows.append((name, t, r))
            memory = _memory(server, pid, Path(tmp), bootstrap)
        finally:
            server.stop()
            if pg is not None:
                pg.remove()
    print(f"\nsync benchmark, demo project: {n} tasks, 5 controls, 3-5 annotators per task, "
          f"bootstrap {bootstrap}, Label Studio on {db} (import {t_import:.0f} s)")
    _table(t_export, rows)
    print(f"peak memory (issue 24; each in its own process, its peak resident set): "
          f"a sync (`ls-agreement sync`, no change) {memory['sync']:.0f} MB; "
          f"`json.load` of the same export {memory['json.load']:.0f} MB "
          f"(the export {memory['export']:.0f} MB)")
    ratio = rows[0][1] / t_export
    print(f"\nfirst sync with bulk action / bare export = {ratio:6.2f}  (target <= 3.00)  "
          f"{'PASS' if ratio <= 3 else 'FAIL'}")
    return 0 if ratio <= 3 else 1


def _peak_mb(cmd: list[str]) -> float:
    """A command's own peak resident set in MB: its ``VmHWM``, read while it runs (the
    kernel's ``ru_maxrss`` of a child starts from its parent's size at the fork). Its
    standard error goes to a file: a pipe nobody reads would stop a chatty child."""
    from benchmarks.bench_memory import _proc_bytes

    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        peak = 0
        while True:
            peak = max(peak, _proc_bytes(f"/proc/{proc.pid}/status", "VmHWM"))
            if proc.poll() is not None:
                break
            time.sleep(0.02)
        if proc.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{cmd[:4]} failed: {err.read().decode(errors='replace')[-2000:]}")
    return peak / 2**20


def _memory(server: Any, pid: int, tmp: Path, bootstrap: int) -> dict[str, float]:
    """Peak memory of a sync as the command, and of ``json.load`` of the export it reads."""
    path = tmp / "export.json"
    with path.open("wb") as fh:
        for chunk in server.client().projects.exports.download_sync(pid, export_type="JSON",
                                                                     download_all_tasks=True):
            fh.write(chunk)
    conf = tmp / "sync.toml"
    conf.write_text(f"[report]\nbootstrap = {bootstrap}\n[sync]\nmeta = false\n")
    sync = _peak_mb([sys.executable, "-m", "ls_agreement.plugin.cli", "sync", "--url", server.url,
                     "--token", server.token, "--project", str(pid), "--settings", str(conf),
                     "--out", str(tmp / "out"), "--quiet"])
    load = _peak_mb([sys.executable, "-c", f"import json; json.load(open({str(path)!r}, 'rb'))"])
    return {"sync": sync, "json.load": load, "export": path.stat().st_size / 2**20}


def _table(t_export: float, rows: list[tuple[str, float, Any]]) -> None:
    """The steps: seconds, tasks written, how they went out, requests per method, split."""
    print(f"{'step':<38}{'seconds':>8}  {'written':>7}  {'mode':<10} requests       split")
    print(f"{'bare JSON export':<38}{t_export:>8.2f}")
    for name, t, r in rows:
        calls = " ".join(f"{m}={n}" for m, n in sorted(r.calls.items()))
        mode = "-" if r.push is None or not r.n_written else (
            r.push.mode + (f"/w{r.push.workers}" if r.push.patches else ""))
        print(f"{name:<38}{t:>8.2f}  {r.n_written:>7}  {mode:<10} {calls:<14} "
              f"{_split(r.timings)}")


def _split(t: dict[str, float]) -> str:
    return " ".join(f"{k}={v:.1f}" for k, v in t.items() if k != "total")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

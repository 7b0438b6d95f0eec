"""Benchmark of ``ls-agreement sync`` against a real Label Studio.

Targets: a first sync of a 10,000-task, 3-annotator project in at most 2x the
time of a bare JSON export of that project, and a second sync with nothing changed in at
most 10 % of the first. Starts its own LocalLabelStudio (template cached by plugin.server),
imports the project, then times: the bare export (SDK ``download_sync`` + json parse), the
first sync, a no-change sync, and a sync after one annotation changed.

Run: ``python -m benchmarks.bench_sync [--tasks N] [--workers W]``.
"""
from __future__ import annotations

import argparse
import sys
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

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


def main(argv: list[str] | None = None) -> int:
    from ls_agreement.plugin.settings import ReportSettings
    from ls_agreement.plugin.server import LocalLabelStudio
    from ls_agreement.plugin.settings import PluginSettings, SyncOptions
    from ls_agreement.plugin.sync import sync_project

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--bootstrap", type=int, default=1000)
    args = ap.parse_args(argv or [])

    with tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp:
        server = LocalLabelStudio(Path(tmp) / "ls", port=0)
        print(f"starting Label Studio ({tmp}) ...", flush=True)
        server.start(timeout=400)
        try:
            users = [server.create_user(f"bench{i}@example.com") for i in range(3)]
            client = server.client()
            proj = client.projects.create(title="bench sync", label_config=CONFIG)
            tasks = _tasks(users, args.tasks)
            t_import = 0.0
            for k in range(0, len(tasks), 1000):
                dt, _ = _timed(lambda: client.projects.import_tasks(
                    id=proj.id, request=tasks[k:k + 1000]))
                t_import += dt
            print(f"imported {len(tasks)} tasks x 3 annotations in {t_import:.1f} s", flush=True)

            def bare_export() -> list[Any]:
                return json.loads(b"".join(client.projects.exports.download_sync(
                    proj.id, export_type="JSON", download_all_tasks=True)))

            t_export, exported = _timed(bare_export)
            t_export2, _ = _timed(bare_export)
            t_export = min(t_export, t_export2)
            settings = PluginSettings(report=ReportSettings(bootstrap=args.bootstrap),
                                      sync=SyncOptions(workers=args.workers))
            out = Path(tmp) / "out"

            def sync() -> Any:
                return sync_project(server.url, server.token, proj.id, settings,
                                    out_dir=out, progress=False)

            t1, r1 = _timed(sync)
            t2, r2 = _timed(sync)
            ann = exported[len(exported) // 2]["annotations"][0]
            res = ann["result"]
            res[0]["value"]["choices"] = ["Neutral" if res[0]["value"]["choices"] != ["Neutral"]
                                          else "Positive"]
            client.annotations.update(id=ann["id"], result=res)
            t3, r3 = _timed(sync)
        finally:
            server.stop()

    rows = [
        ("bare JSON export", t_export, "", ""),
        ("first sync", t1, f"{r1.n_written}", _split(r1.timings)),
        ("second sync (no change)", t2, f"{r2.n_written}", _split(r2.timings)),
        ("sync after 1 annotation changed", t3, f"{r3.n_written}", _split(r3.timings)),
    ]
    print(f"\nsync benchmark: {args.tasks} tasks x 3 annotators, 2 controls, "
          f"{args.workers} concurrent PATCHes, bootstrap {args.bootstrap}")
    print(f"{'step':<34}{'seconds':>9}  {'written':>8}  split")
    for name, t, w, split in rows:
        print(f"{name:<34}{t:>9.2f}  {w:>8}  {split}")
    ratio1, ratio2 = t1 / t_export, t2 / t1
    ok1, ok2 = ratio1 <= 2.0, ratio2 <= 0.10
    print(f"\nfirst sync / bare export  = {ratio1:6.2f}  (target <= 2.00)  "
          f"{'PASS' if ok1 else 'FAIL'}")
    print(f"second sync / first sync  = {ratio2:6.3f}  (target <= 0.10)  "
          f"{'PASS' if ok2 else 'FAIL'}")
    n_patch = max(1, r1.n_written)
    print(f"push rate: {n_patch / max(r1.timings.get('push', 1e-9), 1e-9):.0f} tasks/s "
          f"(fresh re-read + PATCH per task)")
    return 0 if ok1 and ok2 else 1


def _split(t: dict[str, float]) -> str:
    return " ".join(f"{k}={v:.1f}" for k, v in t.items() if k != "total")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

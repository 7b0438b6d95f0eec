"""Task flags against planted problems: precision and recall of the report's flags.

Projects come from the demo generator (``demo/data.py``), which knows its planted
problems: tasks where the careless annotator's answer departs from the truth in some
control, and ambiguous tasks whose careful annotators split between the two readings
(``DemoProject.planted``; ambiguous tasks where everyone picked one reading show nothing
and are counted apart as ``hidden``). Each project is built with several seeds; for each,
the report's default flags (``plugin/report/flags.py``) and the old rule (a task is
flagged when any control's σ on it is below 0.5) are scored against the planted set.
Target: precision ≥ 0.8 and recall ≥ 0.8 with the default flags, averaged over seeds.

Run: ``python -m benchmarks flags [-- --seeds 1 2 3 4 5]``.
"""
from __future__ import annotations

import argparse
import time
from typing import Any

from ls_agreement.demo import data as demo_data
from ls_agreement.plugin.report.build import build_report
from ls_agreement.plugin.settings import ReportSettings

TARGET = 0.8
OLD_FLAG_BELOW = 0.5
USER_IDS = {a.email: 10 + k for k, a in enumerate(demo_data.ANNOTATORS)}
# name -> generate() arguments: different control mixes, sizes and annotators per task
PROJECTS: dict[str, dict[str, Any]] = {
    "demo, 5 controls, 60 tasks": dict(n_tasks=60),
    "demo, 5 controls, 300 tasks": dict(n_tasks=300),
    "boxes + spans, 200 tasks": dict(n_tasks=200, controls=("objects", "entities")),
    "choice + text + ranking, 3/task": dict(n_tasks=150, controls=("sentiment", "summary", "ranking"),
                                            per_task=(3, 3)),
    "choice (80%) + rating, 3/task": dict(n_tasks=300, controls=("sentiment", "rating"), accuracy=0.8,
                                          per_task=(3, 3)),
    # ratings read by their distances: careful annotators within a point of the truth
    "choice (90%) + rating, 3-5/task": dict(n_tasks=200, controls=("sentiment", "rating"), accuracy=0.9),
    "rating + ranking, 3/task": dict(n_tasks=150, controls=("rating", "ranking"), per_task=(3, 3)),
}


def _score(flagged: set[str], planted: set[str]) -> tuple[float, float]:
    hit = len(flagged & planted)
    return (hit / len(flagged) if flagged else 1.0, hit / len(planted) if planted else 1.0)


def run(name: str, kw: dict[str, Any], seed: int) -> dict[str, Any]:
    """One project and seed: the planted set, the new and the old flags, their scores."""
    sample = demo_data.generate(USER_IDS, seed=seed, **kw)
    tasks = [{"id": i + 1, **t} for i, t in enumerate(sample.tasks)]
    sid = {str(i + 1): t["data"]["sample_id"] for i, t in enumerate(sample.tasks)}
    t0 = time.perf_counter()
    report = build_report(sample.config, tasks, ReportSettings(bootstrap=0))
    seconds = time.perf_counter() - t0
    planted = {k for k, v in sid.items() if v in sample.planted}
    new = {k for k, t in report.tasks.items() if t.flag}
    old = {k for c in report.controls.values() if c.measured
           for k, rec in c.items.items() if rec.sigma is not None and rec.sigma < OLD_FLAG_BELOW}
    return {"project": name, "seed": seed, "n": len(tasks), "planted": len(planted),
            "hidden": len(sample.hidden), "flagged": len(new), "score": _score(new, planted),
            "old_flagged": len(old), "old_score": _score(old, planted), "seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks flags")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    args = parser.parse_args(argv or [])
    print("task flags vs planted problems (careless departures, split ambiguous tasks); "
          f"target: precision and recall >= {TARGET} (mean over seeds)")
    head = (f"{'project':32} {'seed':>4} {'tasks':>5} {'planted':>7} {'hidden':>6} | {'flagged':>7} "
            f"{'prec':>5} {'recall':>6} | {'old flagged':>11} {'prec':>5} {'recall':>6}")
    print(head)
    print("-" * len(head))
    met_all = []
    for name, kw in PROJECTS.items():
        rows = [run(name, kw, seed) for seed in args.seeds]
        for r in rows:
            print(f"{name:32} {r['seed']:>4} {r['n']:>5} {r['planted']:>7} {r['hidden']:>6} | "
                  f"{r['flagged']:>7} {r['score'][0]:>5.2f} {r['score'][1]:>6.2f} | "
                  f"{r['old_flagged']:>11} {r['old_score'][0]:>5.2f} {r['old_score'][1]:>6.2f}", flush=True)
        k = len(rows)
        mean = [sum(r[key][i] for r in rows) / k for key in ("score", "old_score") for i in (0, 1)]
        low = [min(r["score"][i] for r in rows) for i in (0, 1)]
        met = mean[0] >= TARGET and mean[1] >= TARGET
        met_all.append(met)
        print(f"{name:32} {'mean':>4} {sum(r['n'] for r in rows) / k:>5.0f} "
              f"{sum(r['planted'] for r in rows) / k:>7.1f} {sum(r['hidden'] for r in rows) / k:>6.1f} | "
              f"{sum(r['flagged'] for r in rows) / k:>7.1f} {mean[0]:>5.2f} {mean[1]:>6.2f} | "
              f"{sum(r['old_flagged'] for r in rows) / k:>11.1f} {mean[2]:>5.2f} {mean[3]:>6.2f}   "
              f"(lowest seed: {low[0]:.2f} / {low[1]:.2f}; report {sum(r['seconds'] for r in rows) / k:.1f} s) "
              f"{'PASS' if met else 'below target'}")
        print("-" * len(head), flush=True)
    print(f"{sum(met_all)} of {len(met_all)} projects meet the target")
    return 0

"""Task flags, annotator reliability and consensus answers against planted problems (issue 22).

Three parts:

* **seven shapes** (``benchmarks/flag_shapes.py``: a spammer, an annotator random on 30 %
  of their tasks, 15 % ambiguous tasks, boxes shifted by half a width, missed entities, a
  null project, a hard project plus a random annotator), each with several seeds: the
  report's flags (``build_report``, default settings) scored against the planted tasks —
  precision, recall, and the false-flag share (flagged tasks among those without a planted
  problem) —, whether the planted bad annotator has the lowest reliability, and on the
  categorical shapes the accuracy of the consensus answers against the truth beside
  crowd-kit's Dawid–Skene, GLAD and MACE on the same answers (an ambiguous task's two labels
  both count as right). Targets: precision and recall ≥ 0.8 on average and ≥ 0.7 at every
  seed on every planted shape; the null project ≤ 3 % flagged; the hard project ≤ 5 % of its
  ordinary tasks flagged; the bad annotator lowest at every seed; consensus accuracy at
  least the best of the three (mean over seeds). Beside ours, on the Choices shapes, the
  flags of the model that generated the project (``benchmarks/flag_oracle.py``: its exact
  posterior, flagged at ½): what is reachable. ``--careful ACC`` makes the Choices shapes
  with careful annotators right ``ACC`` of the time instead (projects the targets were not
  tuned on); ``--split coins``, with each careful annotator of an ambiguous task reading one
  of its two labels by a coin instead of the two split evenly; ``--misses SHARE``, with the
  careful annotators of the box and entity shapes missing that share of them; ``--jitter
  SD``, with careful boxes jittering by that standard deviation (x, y, width and height, in
  percent of the image; the shape's own is 0.8). ``--shapes apart`` scores the same flags on
  the seven shapes of a second generator written apart from the first, from the issue's
  text alone (``benchmarks/flag_shapes_apart.py``: skewed priors over 3–6 classes, careful
  accuracies varying from one annotator to another, an ambiguous shape split by coins):
  shapes nobody tuned the flags on; it has no generating-model column ("–").
  ``--shapes third`` does the same on a third generator, written independently of both from
  the issue's text (``benchmarks/flag_shapes_third.py``: uneven log-normal workloads, 2–5
  annotators per task drawn task by task, Zipf-like priors over ordered classes, careful
  accuracies from a Beta per annotator erring mostly to neighbouring classes, an ambiguous
  shape split as evenly as its annotators allow, boxes on images of several sizes whose
  careful annotators miss small ones now and then, entities a token off now and then); its
  generating-model column on the Choices shapes comes from the generator's own parameters
  (``ShapeProject.generating_flags``), and like ``apart`` it takes no variations options.
* **the demo's projects** (``ls_agreement.demo.data``: a careless annotator, ambiguous
  tasks whose careful annotators split): precision and recall of the flags as before,
  target ≥ 0.8 on average; beside them, on the two Choices + Rating projects made with a
  fixed careful accuracy, the demo generator's own posterior flagged at ½
  (``flag_oracle.demo_oracle_flags``): what is reachable there.
* **speed**: a fit of 100,000 tasks × 3 annotators, for labels and for boxes (target
  ≤ 10 s), and one live event rescoring its task against the stored model without a refit,
  on a 1,000-task demo mirror (target ≤ 50 ms): wall time and the process's CPU time (the
  machine may be shared).

Run: ``python -m benchmarks flags [-- --seeds 1 2 3 --skip-speed --skip-demo --careful 0.95 --split coins --misses 0.02 --jitter 1.5]``,
or ``python -m benchmarks flags -- --shapes apart [--seeds ...]`` (``--shapes third`` alike).
"""
from __future__ import annotations

import argparse
import inspect
import math
import random
import statistics
import sys
import time
import warnings
from typing import Any, Callable, Literal

import numpy as np

from ls_agreement.adapters.adapt import adapt
from ls_agreement.demo import data as demo_data
from ls_agreement.plugin.report.build import build_report
from ls_agreement.plugin.settings import ReportSettings

from . import flag_shapes_apart, flag_shapes_third
from .flag_oracle import demo_oracle_flags, oracle_flags
from .flag_shapes import SHAPES, RegionNoise, ShapeProject, make_project

TARGET, SEED_FLOOR, NULL_AT_MOST, HARD_AT_MOST = 0.8, 0.7, 0.03, 0.05
FIT_SECONDS, EVENT_SECONDS = 10.0, 0.05
USER_IDS = {a.email: 10 + k for k, a in enumerate(demo_data.ANNOTATORS)}
DEMO_AMBIGUOUS: float = inspect.signature(demo_data.generate).parameters["ambiguous_rate"].default
# the demo generator's projects, as bench_flags had them before issue 22
DEMO_PROJECTS: dict[str, dict[str, Any]] = {
    "demo, 5 controls, 60 tasks": dict(n_tasks=60),
    "demo, 5 controls, 300 tasks": dict(n_tasks=300),
    "boxes + spans, 200 tasks": dict(n_tasks=200, controls=("objects", "entities")),
    "choice + text + ranking, 3/task": dict(n_tasks=150, controls=("sentiment", "summary", "ranking"),
                                            per_task=(3, 3)),
    "choice (80%) + rating, 3/task": dict(n_tasks=300, controls=("sentiment", "rating"), accuracy=0.8,
                                          per_task=(3, 3)),
    "choice (90%) + rating, 3-5/task": dict(n_tasks=200, controls=("sentiment", "rating"), accuracy=0.9),
    "rating + ranking, 3/task": dict(n_tasks=150, controls=("rating", "ranking"), per_task=(3, 3)),
}


def _score(flagged: set[str], planted: set[str], tasks: set[str]) -> tuple[float, float, float]:
    """Precision, recall, false-flag share (flagged among the tasks without a planted problem)."""
    hit = len(flagged & planted)
    ordinary = tasks - planted
    return (hit / len(flagged) if flagged else 1.0, hit / len(planted) if planted else 1.0,
            len(flagged - planted) / len(ordinary) if ordinary else 0.0)


def _right(label: Any, truth: Any) -> bool:
    return label in truth if isinstance(truth, set) else label == truth


def _crowdkit(proj: ShapeProject) -> dict[str, float] | None:
    """Consensus accuracy of crowd-kit's Dawid–Skene, GLAD and MACE on the categorical control."""
    try:
        import crowdkit.aggregation as ca
    except ImportError:
        return None
    table = adapt(proj.config, proj.tasks).controls[proj.categorical].table
    df = table.rename(columns={"item": "task", "annotator": "worker", "value": "label"})[["task", "worker", "label"]]
    df = df.astype({"task": str, "worker": str})
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")    # crowd-kit's pandas deprecation notices
        for name, agg in (("DS", ca.DawidSkene(n_iter=100)), ("GLAD", ca.GLAD()), ("MACE", ca.MACE(random_state=0))):
            labels = agg.fit_predict(df)
            right = {str(t): _right(labels[t], proj.truth[t][proj.categorical]) for t in labels.index}
            out[name] = float(np.mean(list(right.values())))
            out[name + " right"] = right
    return out


def run_shape(proj: ShapeProject, with_crowdkit: bool) -> dict[str, Any]:
    """One shape and seed: the report's flags, reliabilities and consensus, scored."""
    t0 = time.perf_counter()
    report = build_report(proj.config, proj.tasks, ReportSettings(bootstrap=0))
    seconds = time.perf_counter() - t0
    flagged = {k for k, t in report.tasks.items() if t.flag}
    p, r, ff = _score(flagged, proj.planted, set(report.tasks))
    rel = {a: e.reliability for a, e in report.annotators.items() if e.reliability is not None}
    lowest = min(rel, key=lambda a: (rel[a], a)) if rel else None
    out = {"n": len(proj.tasks), "planted": len(proj.planted), "flagged": len(flagged), "precision": p,
           "recall": r, "false": ff, "lowest": lowest, "bad_lowest": proj.bad is None or lowest == proj.bad,
           "bad_reliability": rel.get(proj.bad) if proj.bad else None, "seconds": seconds}
    truth_model = oracle_flags(proj)
    if truth_model is None:
        truth_model = proj.generating_flags
    if truth_model is not None:
        out["oracle"] = _score(truth_model, proj.planted, set(report.tasks))
    if proj.categorical:
        items = report.controls[proj.categorical].items
        out["right"] = {str(t): _right(items[t].consensus, proj.truth[t][proj.categorical]) for t in items}
        out["accuracy"] = float(np.mean(list(out["right"].values())))
        out["crowdkit"] = _crowdkit(proj) if with_crowdkit else None
    return out


def _shape_makers(generator: Literal["own", "apart", "third"], careful: float | None,
                  split: Literal["even", "coins"] | None,
                  noise: RegionNoise) -> list[tuple[str, Callable[[int], ShapeProject]]]:
    """Each shape's printed name and its project for a seed, from ``benchmarks/flag_shapes.py``
    (``own``), ``benchmarks/flag_shapes_apart.py`` (``apart``) or ``benchmarks/flag_shapes_third.py``
    (``third``); the last two take no variations."""
    if generator == "apart":
        return [(shape.name, lambda seed, shape=shape: flag_shapes_apart.make_project(shape, seed))
                for shape in flag_shapes_apart.SHAPES]
    if generator == "third":
        return [(shape.name, lambda seed, shape=shape: flag_shapes_third.make_project(shape, seed))
                for shape in flag_shapes_third.SHAPES]
    return [(shape.name, lambda seed, shape=shape: make_project(shape, seed, careful, split, noise))
            for shape in SHAPES]


def _shapes(seeds: list[int], with_crowdkit: bool, careful: float | None = None,
            split: Literal["even", "coins"] | None = None, noise: RegionNoise = RegionNoise(),
            generator: Literal["own", "apart", "third"] = "own") -> bool:
    source = {"apart": "benchmarks/flag_shapes_apart.py, a second generator written apart from the issue's text; "
                       "the generating model's flags ('truth P/R') are not computed for it: '–'",
              "third": "benchmarks/flag_shapes_third.py, a third generator written independently of both from "
                       "the issue's text; 'truth P/R' from the generator's own parameters",
              }.get(generator, "benchmarks/flag_shapes.py")
    print(f"seven shapes ({source}): precision / recall / false-flag share of the task "
          f"flags; targets: P, R >= {TARGET} mean and >= {SEED_FLOOR} each seed; null <= {NULL_AT_MOST:.0%} "
          f"flagged; hard <= {HARD_AT_MOST:.0%} of ordinary tasks flagged; bad annotator lowest reliability; "
          "'truth P/R': the generating model's own posterior flagged at 1/2 (benchmarks/flag_oracle.py), "
          "what is reachable"
          + (f"; careful annotators of the Choices shapes right {careful:.0%} of the time (--careful)" if careful else "")
          + ("; each careful annotator of an ambiguous task reads one of its labels by a coin (--split coins)"
             if split == "coins" else "")
          + (f"; careful annotators of the box and entity shapes miss {noise.misses:.0%} of them (--misses)"
             if noise.misses else "")
          + (f"; careful boxes jitter by {noise.jitter:g} % of the image (--jitter)"
             if noise.jitter != RegionNoise().jitter else ""))
    makers = _shape_makers(generator, careful, split, noise)
    wide = max(20, *(len(name) for name, _ in makers))      # the shape column
    head = (f"{'shape':{wide}} {'seed':>4} {'tasks':>5} {'planted':>7} {'flagged':>7} {'prec':>5} {'recall':>6} "
            f"{'false':>6} {'truth P/R':>9} {'bad lowest':>10} {'consensus':>9} {'DS':>6} {'GLAD':>6} {'MACE':>6}")
    print(head)
    print("-" * len(head))
    all_met = True
    for name, make in makers:
        rows = [run_shape(make(s), with_crowdkit) for s in seeds]
        for s, r in zip(seeds, rows):
            ck = r.get("crowdkit") or {}
            acc = f"{r['accuracy']:.3f}" if "accuracy" in r else "–"
            truth = f"{r['oracle'][0]:.2f}/{r['oracle'][1]:.2f}" if "oracle" in r else "–"
            print(f"{name:{wide}} {s:>4} {r['n']:>5} {r['planted']:>7} {r['flagged']:>7} {r['precision']:>5.2f} "
                  f"{r['recall']:>6.2f} {r['false']:>6.3f} {truth:>9} {'yes' if r['bad_lowest'] else 'NO':>10} {acc:>9} "
                  + " ".join(f"{ck[k]:>6.3f}" if k in ck else f"{'–':>6}" for k in ("DS", "GLAD", "MACE")), flush=True)
        mean = {k: statistics.mean(r[k] for r in rows) for k in ("precision", "recall", "false")}
        checks = []
        if name.startswith("null"):
            share = statistics.mean(r["flagged"] / r["n"] for r in rows)
            checks.append((f"{share:.1%} of tasks flagged (<= {NULL_AT_MOST:.0%})", max(r["flagged"] / r["n"] for r in rows) <= NULL_AT_MOST))
        else:
            low = (min(r["precision"] for r in rows), min(r["recall"] for r in rows))
            truth = (f"; the generating model P {statistics.mean(r['oracle'][0] for r in rows):.2f} "
                     f"R {statistics.mean(r['oracle'][1] for r in rows):.2f}") if "oracle" in rows[0] else ""
            checks.append((f"P {mean['precision']:.2f} R {mean['recall']:.2f} (lowest seed {low[0]:.2f} / {low[1]:.2f})"
                           + truth,
                           mean["precision"] >= TARGET and mean["recall"] >= TARGET and min(low) >= SEED_FLOOR))
            checks.append(("bad annotator lowest at every seed", all(r["bad_lowest"] for r in rows)))
        if name.startswith("hard"):
            checks.append((f"{mean['false']:.1%} of ordinary tasks flagged (<= {HARD_AT_MOST:.0%})",
                           max(r["false"] for r in rows) <= HARD_AT_MOST))
        if rows[0].get("accuracy") is not None and all(r.get("crowdkit") for r in rows):
            ours = statistics.mean(r["accuracy"] for r in rows)
            best_name, best = max(((k, statistics.mean(r["crowdkit"][k] for r in rows)) for k in ("DS", "GLAD", "MACE")),
                                  key=lambda kv: kv[1])
            # the paired difference over the tasks of every seed and its standard error: on
            # a null project most differences are coin flips on tied tasks
            diff = np.array([float(r["right"][t]) - float(r["crowdkit"][best_name + " right"].get(t, False))
                             for r in rows for t in r["right"]])
            se = float(diff.std(ddof=1) / math.sqrt(diff.size)) if diff.size > 1 else float("nan")
            checks.append((f"consensus accuracy {ours:.4f} vs best crowd-kit {best_name} {best:.4f} (paired "
                           f"difference {diff.mean():+.4f} ± {se:.4f} s.e., {int((diff != 0).sum())} tasks differ)",
                           ours >= best))
        met = all(ok for _, ok in checks)
        all_met &= met
        print(f"{name:{wide}} mean: " + "; ".join(f"{text}{'' if ok else ' [below target]'}" for text, ok in checks)
              + f"; report {statistics.mean(r['seconds'] for r in rows):.1f} s  {'PASS' if met else 'below target'}")
        print("-" * len(head), flush=True)
    return all_met


def _demo(seeds: list[int]) -> bool:
    print("\nthe demo generator's projects (careless annotator, split ambiguous tasks): precision / recall "
          f"of the flags, target >= {TARGET} mean over seeds")
    head = (f"{'project':32} {'seed':>4} {'tasks':>5} {'planted':>7} {'hidden':>6} | {'flagged':>7} {'prec':>5} "
            f"{'recall':>6} {'truth P/R':>9}")
    print(head)
    print("-" * len(head))
    met_all = True
    for name, kw in DEMO_PROJECTS.items():
        rows = []
        for seed in seeds:
            sample = demo_data.generate(USER_IDS, seed=seed, **kw)
            tasks = [{"id": i + 1, **t} for i, t in enumerate(sample.tasks)]
            sid = {str(i + 1): t["data"]["sample_id"] for i, t in enumerate(sample.tasks)}
            report = build_report(sample.config, tasks, ReportSettings(bootstrap=0))
            planted = {k for k, v in sid.items() if v in sample.planted}
            flagged = {k for k, t in report.tasks.items() if t.flag}
            p, r, _ = _score(flagged, planted, set(report.tasks))
            truth = None
            if kw.get("accuracy") is not None and set(kw.get("controls", ())) == {"sentiment", "rating"}:
                truth = _score(demo_oracle_flags(sample, kw["accuracy"], DEMO_AMBIGUOUS,
                                                 USER_IDS[sample.careless_email]), planted, set(report.tasks))[:2]
            rows.append((p, r, truth))
            print(f"{name:32} {seed:>4} {len(tasks):>5} {len(planted):>7} {len(sample.hidden):>6} | "
                  f"{len(flagged):>7} {p:>5.2f} {r:>6.2f} "
                  f"{f'{truth[0]:.2f}/{truth[1]:.2f}' if truth else '–':>9}", flush=True)
        mp, mr = statistics.mean(row[0] for row in rows), statistics.mean(row[1] for row in rows)
        met = mp >= TARGET and mr >= TARGET
        met_all &= met
        truth = (f"; the generating model P {statistics.mean(row[2][0] for row in rows):.2f} "
                 f"R {statistics.mean(row[2][1] for row in rows):.2f}") if rows[0][2] else ""
        print(f"{name:32} mean: P {mp:.2f} R {mr:.2f}{truth}  {'PASS' if met else 'below target'}")
        print("-" * len(head), flush=True)
    return met_all


def _timed(fn: Any) -> tuple[float, float, Any]:
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w0, time.process_time() - c0, out


def _speed() -> bool:
    from ls_agreement.metrics.annotator_model import fit_label_model, read_labels
    from ls_agreement.metrics.consensus import consensus_model
    from ls_agreement.metrics.model import Box

    print("\nspeed: a fit of 100,000 tasks x 3 annotators (50 annotators, one random), target <= "
          f"{FIT_SECONDS:.0f} s; one live event, target <= {EVENT_SECONDS * 1000:.0f} ms")
    rng = np.random.default_rng(0)
    n, k = 100_000, 3
    item = np.repeat(np.arange(n), 3)
    ann = np.repeat(rng.integers(0, 48, n), 3) + np.tile([0, 1, 2], n)
    truth = np.repeat(rng.integers(0, k, n), 3)
    label = np.where(rng.random(3 * n) < 0.9, truth, (truth + rng.integers(1, k, 3 * n)) % k)
    label = np.where(ann == 0, rng.integers(0, k, 3 * n), label)
    who = np.array([f"a{a}" for a in range(50)])[ann]
    wall, cpu, model = _timed(lambda: fit_label_model(item, who, label))
    rwall, rcpu, _ = _timed(lambda: read_labels(model, item, who, label))
    met = wall <= FIT_SECONDS
    print(f"labels (3 classes): fit {wall:.2f} s wall, {cpu:.2f} s CPU; reading every task {rwall:.2f} s "
          f"({'PASS' if met else 'over'})")
    x = rng.uniform(5, 60, n)
    boxes = [[Box(float(x[t]) + rng.normal(0, 0.8), 20.0, 15.0, 15.0, label="car")] for t in item]
    wall, cpu, _ = _timed(lambda: consensus_model(item, who, boxes, "boxes.iou", regions="boxes"))
    met &= wall <= FIT_SECONDS
    print(f"boxes (medoid consensus; distance model and region rates): fit and read {wall:.2f} s wall, {cpu:.2f} s CPU "
          f"({'PASS' if wall <= FIT_SECONDS else 'over'})")
    return _event() and met


def _event() -> bool:
    from ls_agreement.plugin.live.baseline import apply_scores, make_baseline, score_tasks
    from ls_agreement.plugin.live.events import apply_event
    from ls_agreement.plugin.live.mirror import ProjectMirror
    from ls_agreement.plugin.pushback import desired_for

    from .bench_live import sentiment_edit

    n = 1000
    sample = demo_data.generate(USER_IDS, n_tasks=n, seed=11)
    aid = 0
    tasks = []
    for k, t in enumerate(sample.tasks):
        anns = []
        for a in t["annotations"]:
            aid += 1
            anns.append({**a, "id": aid, "updated_at": f"2026-01-01T00:00:00.{aid:06d}Z"})
        tasks.append({"id": k + 1, "data": t["data"], "annotations": anns})
    mirror = ProjectMirror()
    mirror.fill(tasks)
    base = make_baseline(demo_data.DEMO_CONFIG, mirror, ReportSettings(bootstrap=0))
    rng = random.Random(3)
    times, cpus = [], []
    for k in range(40):
        tid = rng.randrange(1, n + 1)
        payload = sentiment_edit(mirror, tid, k, rng)

        def one() -> None:
            applied = apply_event(mirror, payload)
            apply_scores(base.report, score_tasks(base, mirror, applied.touched), applied.deleted)
            desired_for(base.report, tid, mirror.tasks[tid].fingerprint(), {}, base.quality)
        wall, cpu, _ = _timed(one)
        times.append(wall)
        cpus.append(cpu)
    p50, worst = statistics.median(times), max(times)
    met = p50 <= EVENT_SECONDS
    print(f"one event on a {n:,}-task demo mirror (5 controls; its task's consensus, departures and flag "
          f"read against the stored models): median {p50 * 1000:.1f} ms wall ({statistics.median(cpus) * 1000:.1f} "
          f"ms CPU), max {worst * 1000:.1f} ms ({'PASS' if met else 'over'})")
    return met


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks flags")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--skip-crowdkit", action="store_true", help="no crowd-kit comparison")
    parser.add_argument("--skip-demo", action="store_true", help="no demo-generator projects")
    parser.add_argument("--skip-speed", action="store_true", help="no speed figures")
    parser.add_argument("--careful", type=float, default=None,
                        help="another accuracy of the careful annotators of the Choices shapes (held-out projects)")
    parser.add_argument("--split", choices=["even", "coins"], default=None,
                        help="how careful annotators read an ambiguous task's two labels: split evenly "
                             "(the shapes' own) or each by a coin")
    parser.add_argument("--misses", type=float, default=0.0,
                        help="share of boxes / entities the careful annotators of the region shapes miss")
    parser.add_argument("--jitter", type=float, default=RegionNoise().jitter,
                        help="standard deviation of careful boxes' x, y, width and height (%% of the image)")
    parser.add_argument("--shapes", choices=["own", "apart", "third"], default="own",
                        help="which generator makes the seven shapes: benchmarks/flag_shapes.py (own), "
                             "benchmarks/flag_shapes_apart.py, written apart from the issue's text (apart), or "
                             "benchmarks/flag_shapes_third.py, a third written independently of both (third)")
    args = parser.parse_args(argv or [])
    if args.shapes in ("apart", "third") and (args.careful is not None or args.split is not None
                                              or args.misses or args.jitter != RegionNoise().jitter):
        parser.error("--careful, --split, --misses and --jitter vary benchmarks/flag_shapes.py's shapes; "
                     f"--shapes {args.shapes} takes none of them")
    met = _shapes(args.seeds, not args.skip_crowdkit, args.careful, args.split,
                  RegionNoise(misses=args.misses, jitter=args.jitter), args.shapes)
    if not args.skip_demo:
        met &= _demo(args.seeds)
    if not args.skip_speed:
        met &= _speed()
    print(f"\n{'all targets met' if met else 'some targets not met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Video tracks: 1,000 tasks x 3 annotators of 300-frame tracks (2-4 tracks per annotation,
keyframes every 10-30 frames) through ``adapt`` and the report's path for the control
(``control_report``: auto distance, α, KS, σ, the default 1,000 bootstrap resamples,
per-label and pair sections) must take no more than 30 s.

The export has Label Studio 1.23's VideoRectangle result shape (adapters/tracks.py): one
result per track with ``framesCount``, ``duration``, the keyframe ``sequence`` and the
labels of the Video's ``Labels`` tag. Annotators follow a per-task truth with jitter.
Figures: parse (adapt), interpolate (packing every track's keyframes, once), compare
(the distance of every observed pair plus the 10,000 sampled chance pairs), total, and
value pairs compared per second; wall-clock seconds (the target) with this process's CPU
seconds beside them (the two differ when other work shares the machine).
Run: ``python -m benchmarks tracks`` (``-- --tasks N`` for another size).
"""
from __future__ import annotations

import argparse
import gc
import random
import time

import numpy as np

from ls_agreement.adapters.adapt import adapt
from ls_agreement.metrics.distances import get_distance
from ls_agreement.metrics.table import code_table, observed_pairs, sample_between_pairs
from ls_agreement.plugin.report.build import control_report
from ls_agreement.plugin.settings import ReportSettings

CONFIG = """<View>
  <Labels name="videoLabels" toName="video"><Label value="Man"/><Label value="Woman"/><Label value="Other"/></Labels>
  <Video name="video" value="$video" framerate="25.0"/>
  <VideoRectangle name="box" toName="video"/>
</View>"""
FRAMES = 300
TARGET_S = 30.0


def _track(rng: random.Random, label: str, start: tuple[float, float], speed: tuple[float, float],
           jitter: float) -> dict:
    """One VideoRectangle result: keyframes every 10-30 frames along a straight path."""
    seq = []
    f = 1 + rng.randint(0, 5)
    while f <= FRAMES:
        seq.append({"frame": f, "enabled": True, "rotation": 0,
                    "x": start[0] + speed[0] * f + rng.gauss(0, jitter),
                    "y": start[1] + speed[1] * f + rng.gauss(0, jitter),
                    "width": 15 + rng.gauss(0, jitter), "height": 20 + rng.gauss(0, jitter), "time": f / 25})
        f += rng.randint(10, 30)
    seq[-1]["enabled"] = rng.random() < 0.5   # some tracks run to the end of the video
    return {"id": f"{rng.getrandbits(40):010x}", "from_name": "box", "to_name": "video", "type": "videorectangle",
            "origin": "manual", "value": {"framesCount": FRAMES, "duration": FRAMES / 25, "sequence": seq,
                                          "labels": [label]}}


def make_tasks(n_tasks: int, n_annotators: int = 3, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    tasks = []
    for t in range(n_tasks):
        truth = [(rng.choice(("Man", "Woman", "Other")), (rng.uniform(0, 50), rng.uniform(0, 50)),
                  (rng.uniform(-0.1, 0.1), rng.uniform(-0.1, 0.1))) for _ in range(rng.randint(2, 4))]
        anns = [{"id": t * 10 + a, "completed_by": a + 1, "result": [_track(rng, lab, st, sp, 1.5) for lab, st, sp in truth]}
                for a in range(n_annotators)]
        tasks.append({"id": t + 1, "data": {"video": f"/data/{t}.mp4"}, "annotations": anns})
    return tasks


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="bench_tracks")
    ap.add_argument("--tasks", type=int, default=1000)
    args = ap.parse_args(argv or [])
    tasks = make_tasks(args.tasks)
    n_tracks = sum(len(a["result"]) for t in tasks for a in t["annotations"])
    n_keyframes = sum(len(r["value"]["sequence"]) for t in tasks for a in t["annotations"] for r in a["result"])
    print(f"{args.tasks:,} tasks x 3 annotators: {n_tracks:,} tracks, {n_keyframes:,} keyframes, "
          f"{FRAMES} frames per video")
    gc.collect()

    with _Timer() as t_parse:
        ad = adapt(CONFIG, tasks)
    ctl = ad.controls["box"]

    # the distance's own parts, timed apart (the report below does the same work again)
    dist = get_distance(ctl.default_distance)
    ct = code_table(ctl.table)
    with _Timer() as t_interp:
        packed = dist.prepare(ct.values)
    oi, oj = observed_pairs(ct)
    ei, ej = sample_between_pairs(ct, 10_000, np.random.default_rng(0))
    i, j = np.concatenate([oi, ei]), np.concatenate([oj, ej])
    with _Timer() as t_compare:
        dist.compute(packed, i, j)

    settings = ReportSettings()
    with _Timer() as t_report:
        entry = control_report(ctl, settings)
    total = t_parse.wall + t_report.wall

    print(f"parse (adapt):          {t_parse}")
    print(f"interpolate (prepare):  {t_interp}")
    print(f"compare:                {t_compare} for {i.size:,} value pairs ({oi.size:,} observed + "
          f"{ei.size:,} chance): {i.size / t_compare.wall:,.0f} pairs/s")
    print(f"report path:            {t_report} (distance {entry.distance}, bootstrap {settings.bootstrap}, "
          f"alpha {entry.alpha:.3f}, sigma {entry.sigma:.3f})")
    print(f"total (adapt + report): {total:7.2f} s wall, {t_parse.cpu + t_report.cpu:.2f} s CPU; "
          f"target <= {TARGET_S:.0f} s: {'met' if total <= TARGET_S else 'MISSED'}")


class _Timer:
    """Wall-clock and this process's CPU seconds of a ``with`` block."""

    def __enter__(self) -> "_Timer":
        self._w, self._c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._w
        self.cpu = time.process_time() - self._c

    def __str__(self) -> str:
        return f"{self.wall:7.2f} s ({self.cpu:.2f} s CPU)"

if __name__ == "__main__":
    import sys

    main(sys.argv[1:])

"""Controls that hang on regions: per-region answers (OCR boxes with a transcription, time-series
regions with a class) and relations between text spans, α/KS/σ at 10,000 tasks × 3
annotators with the default distances, against a per-pair Python loop (shapely IoU per region
pair, scipy's Hungarian per value pair); and adapting the Label Studio export of the OCR
project, regions resolved by id.

The peer is measured in the same run on a subset and extrapolated by pair count (said so in
the output), as bench_distances does for boxes.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

N_TASKS = 10_000
N_ANN = 3
PEER_TASKS = 300
TARGET_S = 60.0


def _row(name: str, ours: float, peer: float | None, target: str, ok: bool, note: str = "") -> None:
    ratio = f"{peer / ours:8.1f}x" if peer else "      - "
    peer_s = f"{peer:9.2f}" if peer else "        -"
    print(f"{name:<52} ours {ours:8.3f} s   peer {peer_s} s   speed-up {ratio}   target {target}: "
          f"{'PASS' if ok else 'FAIL'}{('   ' + note) if note else ''}", flush=True)


def _peer_attributes():
    """A plain per-pair loop: shapely IoU of every region pair, Hungarian, nominal or edit
    distance of the answers (rapidfuzz), ``1 − Σ s·(1 − d) / max(|A|, |B|)``."""
    import shapely
    from rapidfuzz.distance import Levenshtein
    from scipy.optimize import linear_sum_assignment

    def shape(r):
        return shapely.box(r.x, r.y, r.x + r.width, r.y + r.height)

    def answer(x, y) -> float:
        if isinstance(x, str) and isinstance(y, str):
            a, b = x.split(), y.split()
            n = max(len(a), len(b))
            return Levenshtein.distance(a, b) / n if n else 0.0
        return float(x != y)

    def dist(a, b) -> float:
        if not a and not b:
            return 0.0
        if not a or not b:
            return 1.0
        sim = np.array([[shape(p.region).intersection(shape(q.region)).area
                         / shape(p.region).union(shape(q.region)).area for q in b] for p in a])
        r, c = linear_sum_assignment(sim, maximize=True)
        credit = sum(sim[i, j] * (1 - answer(a[i].value, b[j].value)) for i, j in zip(r, c))
        return 1.0 - credit / max(len(a), len(b))
    return dist


def _measure(table, name: str, peer_fn=None) -> None:
    from ls_agreement.metrics import agreement
    from ls_agreement.metrics.distances import CallableDistance

    t0 = time.perf_counter()
    res = agreement(table, name, bootstrap=0)
    ours = time.perf_counter() - t0
    peer, note = None, ""
    if peer_fn is not None:
        sub = table[table["item"].isin(table["item"].unique()[:PEER_TASKS])]
        t0 = time.perf_counter()
        ref = agreement(sub, CallableDistance(peer_fn, name="peer"), bootstrap=0, expected_pairs=res.n_expected_pairs)
        took = time.perf_counter() - t0
        mine = agreement(sub, name, bootstrap=0, expected_pairs=res.n_expected_pairs)
        peer = took * (res.n_pairs + res.n_expected_pairs) / (mine.n_pairs + mine.n_expected_pairs)
        note = (f"alpha {res.alpha:.3f}; peer on {PEER_TASKS} tasks, extrapolated by pairs "
                f"(alpha there: peer {ref.alpha:.4f}, ours {mine.alpha:.4f})")
    else:
        note = f"alpha {res.alpha:.3f}"
    _row(f"{name} {N_TASKS:,} x {N_ANN}", ours, peer, f"< {TARGET_S:.0f} s", ours < TARGET_S, note)


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.adapters.region_answers_gen import config_of, tasks_of

    from ls_agreement.adapters.adapt import adapt

    for template, controls in (("ocr", ("transcription", "legibility")), ("timeseries", ("region_type",)),
                               ("relations", ("relations",))):
        t0 = time.perf_counter()
        tasks = tasks_of(template, "careless", n_tasks=N_TASKS, n_annotators=N_ANN)
        made = time.perf_counter() - t0
        t0 = time.perf_counter()
        adapted = adapt(config_of(template), tasks)
        took = time.perf_counter() - t0
        n_results = sum(len(a["result"]) for t in tasks for a in t["annotations"])
        _row(f"adapt {template} ({n_results:,} results)", took, None, f"< {TARGET_S:.0f} s", took < TARGET_S,
             f"export generated in {made:.1f} s")
        for name in controls:
            ctl = adapted.controls[name]
            peer = _peer_attributes() if template == "ocr" and name == "transcription" else None
            _measure(ctl.table, ctl.default_distance, peer)


if __name__ == "__main__":
    main()

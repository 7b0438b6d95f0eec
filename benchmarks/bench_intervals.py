"""1-d regions (audio, video timeline, time series, paragraphs): α/KS/σ with ``intervals.overlap``
and ``intervals.dice`` at 100k tasks against a per-pair Python loop, and adapting a Label
Studio export of audio regions.

The peer is measured in the same run on a subset and extrapolated by pair count (said so
in the output), as bench_distances does for boxes.
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd


def _row(name: str, ours: float, peer: float | None, target: str, ok: bool, note: str = "") -> None:
    ratio = f"{peer / ours:8.1f}x" if peer else "      - "
    peer_s = f"{peer:9.2f}" if peer else "        -"
    print(f"{name:<52} ours {ours:8.3f} s   peer {peer_s} s   speed-up {ratio}   target {target}: "
          f"{'PASS' if ok else 'FAIL'}{('   ' + note) if note else ''}", flush=True)


def _table(n_tasks: int, n_ann: int, n_regions: int, seed: int = 0, instants: float = 0.2) -> pd.DataFrame:
    """Per task ``n_regions`` true regions in disjoint slots of a 60 s clip (a share of them
    instants), each annotator's ends moved by ~3 % of the length."""
    from ls_agreement.metrics.model import Interval

    rng = np.random.default_rng(seed)
    slot = 60.0 / n_regions
    start = np.arange(n_regions) * slot + rng.uniform(0, 0.3 * slot, (n_tasks, n_regions))
    length = rng.uniform(0.3, 0.6, (n_tasks, n_regions)) * slot
    point = rng.random((n_tasks, n_regions)) < instants
    labels = rng.choice(np.array(["speech", "music", "noise"], dtype=object), (n_tasks, n_regions))
    noise = rng.normal(0, 0.03, (n_tasks, n_ann, n_regions, 2)) * length[:, None, :, None]
    values = []
    for t in range(n_tasks):
        for a in range(n_ann):
            s = start[t] + noise[t, a, :, 0]
            e = np.where(point[t], s, np.maximum(start[t] + length[t] + noise[t, a, :, 1], s))
            values.append(tuple(Interval(float(s[k]), float(e[k]), labels[t, k]) for k in range(n_regions)))
    return pd.DataFrame({"item": np.repeat(np.arange(n_tasks), n_ann),
                         "annotator": np.tile([str(a) for a in range(n_ann)], n_tasks), "value": values})


def _python_overlap(tau: float):
    """A plain per-pair loop: pooled best-match 1-d IoU per label, instants within τ."""
    def dist(a, b) -> float:
        if not a and not b:
            return 0.0
        if not a or not b:
            return 1.0

        def sim(p, q):
            if p.label != q.label:
                return 0.0
            inter = min(p.end, q.end) - max(p.start, q.start)
            if p.end == p.start or q.end == q.start:
                return max(0.0, 1.0 + min(inter, 0.0) / tau)
            ov = max(inter, 0.0)
            return ov / ((p.end - p.start) + (q.end - q.start) - ov)
        best = [max(sim(p, q) for q in b) for p in a] + [max(sim(q, p) for p in a) for q in b]
        return 1.0 - sum(best) / len(best)
    return dist


def intervals_100k() -> None:
    from ls_agreement.metrics import agreement
    from ls_agreement.metrics.distances import CallableDistance
    from ls_agreement.metrics.distances.intervals import interval_tolerance

    n_tasks = 100_000
    t0 = time.perf_counter()
    table = _table(n_tasks, 3, 5)
    build = time.perf_counter() - t0
    for name in ("intervals.overlap", "intervals.dice"):
        t0 = time.perf_counter()
        res = agreement(table, name, bootstrap=0)
        ours = time.perf_counter() - t0
        peer = None
        note = ""
        if name == "intervals.overlap":
            sub = table[table["item"] < 2000]
            objs = [x for v in table["value"] for x in v]
            tau = interval_tolerance(np.array([x.start for x in objs]), np.array([x.end for x in objs]))
            t0 = time.perf_counter()
            agreement(sub, CallableDistance(_python_overlap(tau), name="python-overlap"), bootstrap=0)
            peer_sub = time.perf_counter() - t0
            peer = peer_sub * (res.n_pairs + res.n_expected_pairs) / (3 * 2000 + max(3 * 2000, 10_000))
            note = f"; peer = Python loop on 2k tasks, {peer_sub:.2f} s, extrapolated by pair count"
        _row(f"{name} α/KS/σ, 100k tasks x 3 ann x 5 regions", ours, peer, "< 20 s", ours < 20,
             f"(α={res.alpha:.3f} KS={res.ks:.3f} σ={res.sigma:.3f}; {res.n_pairs:,} + "
             f"{res.n_expected_pairs:,} pairs; building the table {build:.1f} s not counted{note})")


def adapt_audio_export() -> None:
    from ls_agreement.adapters.adapt import adapt

    cfg = """<View><Labels name="label" toName="audio"><Label value="speech"/><Label value="music"/>
    </Labels><Audio name="audio" value="$audio"/></View>"""
    rng = np.random.default_rng(0)
    n_tasks, n_ann, n_regions = 10_000, 3, 5
    tasks = []
    for t in range(n_tasks):
        anns = []
        for a in range(n_ann):
            s = np.sort(rng.uniform(0, 55, n_regions))
            anns.append({"id": t * 10 + a, "completed_by": a + 1, "result": [
                {"id": f"{t}_{a}_{k}", "from_name": "label", "to_name": "audio", "type": "labels",
                 "original_length": 60.0, "value": {"start": float(s[k]), "end": float(s[k] + 4.0), "channel": 0,
                                                    "labels": ["speech" if k % 2 else "music"]}}
                for k in range(n_regions)]})
        tasks.append({"id": t + 1, "data": {"audio": f"{t}.wav"}, "annotations": anns})
    t0 = time.perf_counter()
    ad = adapt(cfg, tasks)
    ours = time.perf_counter() - t0
    n = n_tasks * n_ann * n_regions
    _row(f"adapt Labels on Audio, {n_tasks // 1000}k tasks x {n_ann} ann x {n_regions}", ours, None,
         "< 5 s", ours < 5, f"({n:,} results, {n / ours:,.0f} results/s; {len(ad.controls['label'].table):,} values)")


def main() -> None:
    print("Synthetic data; timings include α, KS, σ and per-item/annotator tables (bootstrap=0).")
    adapt_audio_export()
    intervals_100k()


if __name__ == "__main__":
    main()

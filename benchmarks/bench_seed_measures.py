"""Seed measures speed.

* κx: 4,000,000 synthetic nominal judgements (paper 001's dataset size: 3 pools x 2
  ratings per item, 31 labels) — one binary κx per label for the 3 pool pairs, < 10 s;
  peer: scikit-learn's Cohen κ on one rating per pool for the same 93 comparisons.
* Span F1: a CoNLL-2003-test-sized synthetic corpus (3,453 sentences, 4 labels) scored for
  11 systems against a reference, < 10 s; one text of 10,000 tokens with 200 segments
  per annotator, < 1 s; peer: a Monte-Carlo estimate of the chance F1 (2,000 random
  placements per annotator).
* CrowdTruth: 10,000 units x 5 workers x 10 options, < 5 s (CrowdTruth-core, pure Python
  loops per worker pair, is not installed here: no peer timing).
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd


def _row(name: str, ours: float, peer: float | None, target: float) -> None:
    ratio = f"{peer / ours:7.1f}x" if peer else "      -"
    peer_s = f"{peer:8.3f}" if peer else "       -"
    ok = "PASS" if ours < target else "FAIL"
    print(f"{name:<58} {ours:8.3f} {peer_s} {ratio}  < {target:>4.1f} s  {ok}", flush=True)


def bench_kappa_x() -> None:
    from sklearn.metrics import cohen_kappa_score

    from ls_agreement.metrics.cross_kappa import cross_kappa

    rng = np.random.default_rng(0)
    n_labels, pools, per_pool = 31, 3, 2
    n_items = 4_000_000 // (n_labels * pools * per_pool)
    items = np.arange(n_items)
    tables: dict[tuple[int, int], pd.DataFrame] = {}
    first: dict[tuple[int, int], np.ndarray] = {}
    for lab in range(n_labels):
        prev = rng.uniform(0.05, 0.4)
        truth = rng.random(n_items) < prev
        for p in range(pools):
            acc = rng.uniform(0.6, 0.9)
            votes = np.where(rng.random((n_items, per_pool)) < acc, truth[:, None],
                             rng.random((n_items, per_pool)) < prev).astype(np.int8)
            tables[lab, p] = pd.DataFrame({"item": np.repeat(items, per_pool),
                                           "annotator": np.tile([f"p{p}r{r}" for r in range(per_pool)], n_items),
                                           "value": votes.ravel()})
            first[lab, p] = votes[:, 0]
    pairs = [(0, 1), (0, 2), (1, 2)]
    t0 = time.perf_counter()
    for lab in range(n_labels):
        for a, b in pairs:
            cross_kappa(tables[lab, a], tables[lab, b], "nominal", bootstrap=0)
    ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    for lab in range(n_labels):
        for a, b in pairs:
            cohen_kappa_score(first[lab, a], first[lab, b])
    peer = time.perf_counter() - t0
    _row(f"kx: 31 labels x 3 pool pairs, {n_items * 6 * 31:,} judgements", ours, peer, 10.0)
    t0 = time.perf_counter()
    r = cross_kappa(tables[0, 0], tables[0, 1], "nominal", bootstrap=1000)
    _row("kx: one label with a 1,000-replicate item bootstrap", time.perf_counter() - t0, None, 10.0)
    print(f"    (label 0, pools 0-1: kx={r.kappa_x:.3f}, normalized={r.normalized:.3f}, "
          f"95% CI {r.ci['kappa_x'][0]:.3f}..{r.ci['kappa_x'][1]:.3f})")


def _conll_like(rng: np.random.Generator):
    from ls_agreement.metrics.model import Span

    labels = ["PER", "ORG", "LOC", "MISC"]
    n_sent = 3453
    lengths = np.clip(rng.poisson(13.4, n_sent), 2, 120)
    gold: list[tuple[Span, ...]] = []
    for n in lengths.tolist():
        spans, pos = [], 0
        for _ in range(int(rng.poisson(1.6))):
            pos += int(rng.integers(0, 4))
            ln = int(rng.choice([1, 1, 2, 2, 3, 4]))
            if pos + ln > n:
                break
            spans.append(Span(pos, pos + ln, labels[int(rng.integers(0, 4))]))
            pos += ln
        gold.append(tuple(spans))
    rows = [(i, "gold", g) for i, g in enumerate(gold)]
    for s in range(11):
        err = 0.05 + 0.02 * s
        for i, g in enumerate(gold):
            out = []
            for sp in g:
                u = rng.random()
                if u < err:
                    continue  # missed entity
                if u < 2 * err:
                    sp = Span(sp.start, sp.end, labels[int(rng.integers(0, 4))])  # wrong type
                elif u < 3 * err and sp.end - sp.start > 1:
                    sp = Span(sp.start, sp.end - 1, sp.label)  # boundary error
                out.append(sp)
            rows.append((i, f"system{s + 1}", tuple(out)))
    table = pd.DataFrame(rows, columns=["item", "annotator", "value"])
    return table, dict(enumerate(lengths.tolist()))


def _mc_chance(n: int, lengths: list[int], other: list[int], rng: np.random.Generator, draws: int) -> float:
    """Monte-Carlo E[TP] in the non-overlapping model (the peer: simulate placements)."""
    def cover(ls: list[int]) -> np.ndarray:
        k, free = len(ls), n - sum(ls)
        out = np.zeros((draws, n))
        for d in range(draws):
            order = rng.permutation(k)
            slots = np.sort(rng.choice(free + k, k, replace=False))  # stars and bars
            gaps = np.diff(np.concatenate(([-1], slots))) - 1
            pos = 0
            for g, m in zip(gaps, order):
                pos += int(g)
                out[d, pos:pos + ls[m]] = 1
                pos += ls[m]
        return out.mean(axis=0)
    return float(cover(lengths) @ cover(other))


def bench_span_f1() -> None:
    from ls_agreement.metrics import span_chance
    from ls_agreement.metrics.model import Span
    from ls_agreement.metrics.span_f1 import span_f1, span_f1_table

    rng = np.random.default_rng(1)
    table, n_tokens = _conll_like(rng)
    span_chance._coverage_nonoverlapping_cached.cache_clear()
    t0 = time.perf_counter()
    res = span_f1_table(table, n_tokens, reference="gold")
    ours = time.perf_counter() - t0
    _row("span F1: CoNLL-03 test size, 11 systems vs reference", ours, None, 10.0)
    best = res.pairs.sort_values("corrected", ascending=False).iloc[0]
    print(f"    (micro F1 {res.observed:.4f}, chance {res.chance:.4f}, corrected {res.corrected:.4f}; "
          f"best {best['annotator_b']}: {best['observed']:.4f} -> {best['corrected']:.4f})")

    def segments(k: int, n: int) -> list[Span]:
        ls = rng.integers(1, 6, k)
        gaps = rng.multinomial(n - int(ls.sum()), np.ones(k + 1) / (k + 1))
        out, pos = [], 0
        for g, ln in zip(gaps[:-1].tolist(), ls.tolist()):
            pos += g
            out.append(Span(pos, pos + ln))
            pos += ln
        return out

    a, b = segments(200, 10_000), segments(200, 10_000)
    span_chance._coverage_nonoverlapping_cached.cache_clear()
    t0 = time.perf_counter()
    r = span_f1(a, b, 10_000)
    ours = time.perf_counter() - t0
    la, lb = [s.end - s.start for s in a], [s.end - s.start for s in b]
    t0 = time.perf_counter()
    mc = _mc_chance(10_000, la, lb, rng, 2000)
    peer = time.perf_counter() - t0
    _row("span F1: 10,000 tokens x 200 segments per annotator (exact)", ours, peer, 1.0)
    print(f"    (E[TP] exact {r.expected_tp:.4f}, Monte-Carlo 2,000 draws {mc:.4f})")


def bench_crowdtruth() -> None:
    from ls_agreement.metrics.crowdtruth import crowdtruth

    rng = np.random.default_rng(2)
    n_units, per_unit, n_opt, pool = 10_000, 5, 10, 500
    opts = [f"o{k}" for k in range(n_opt)]
    truth = rng.integers(0, n_opt, n_units)
    quality = rng.uniform(0.3, 0.95, pool)
    items, anns, vals = [], [], []
    for u in range(n_units):
        for w in rng.choice(pool, per_unit, replace=False).tolist():
            pick = {opts[truth[u]]} if rng.random() < quality[w] else set()
            pick |= {opts[k] for k in rng.integers(0, n_opt, int(rng.integers(0, 3))).tolist()}
            items.append(u)
            anns.append(f"w{w}")
            vals.append(frozenset(pick or {opts[int(rng.integers(0, n_opt))]}))
    table = pd.DataFrame({"item": items, "annotator": anns, "value": vals})
    t0 = time.perf_counter()
    res = crowdtruth(table, opts)
    ours = time.perf_counter() - t0
    _row("CrowdTruth: 10,000 units x 5 workers x 10 options (closed)", ours, None, 5.0)
    corr = np.corrcoef(res.workers["wqs"], quality[[int(w[1:]) for w in res.workers.index]])[0, 1]
    print(f"    ({res.n_iter} iterations, converged={res.converged}; corr(WQS, simulated quality)={corr:.2f})")


def main() -> None:
    print(f"{'measure':<58} {'ours s':>8} {'peer s':>8} {'ratio':>8}  target")
    bench_kappa_x()
    bench_span_f1()
    bench_crowdtruth()


if __name__ == "__main__":
    main()

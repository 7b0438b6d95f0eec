"""Coverage of the item-bootstrap intervals, by simulation with known population values.

For each kind (nominal, interval, boxes, spans) datasets of 100 tasks × 3 annotators are
drawn from a population whose α, KS and σ are known, and the nominal 95% intervals of
``agreement()`` must cover the population value in at least 93% of them. A null interval
counts as a miss. On every dataset, every interval shown (project and per annotator)
contains its estimate, or it is null and the diagnostics say why.

Population values — the limits the estimators converge to (measures.md §2–3):

* α = 1 − E[Do]/E[De], KS = P(De > Do), σ = P(F(Do) < p), with Do a within-task and De a
  between-task distance, and F the KDE mass of the chance distances on [0, d].
* σ's F is the chance distribution smoothed with the bandwidth Scott's rule gives the
  estimator on these designs: the engine uses a seeded sample of 10,000 chance pairs for
  100 tasks, so h = std(De) · 10,000^(−1/5).
* nominal and interval ratings: exact, by enumerating the (truth, answer) model;
* boxes and spans: by Monte Carlo on 200,000 tasks (Monte Carlo error ≈ 0.001, a 40th
  of an interval's half-width), with distances computed here in numpy (1 − IoU of two
  boxes; 1 − 2·overlap/(|a| + |b|) for two spans — checked against the engine's
  distances).

The designs put point masses and ties in the distances on purpose (exact agreement on
nominal and rating scales; disjoint boxes and spans at distance exactly 1).
"""
from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import ndtr

from ls_agreement.metrics import Box, Span, agreement, get_distance

N_ITEMS = 100
N_ANN = 3
P = 0.05
TARGET = 0.93
# kind: (datasets, bootstrap resamples). Coverage is estimated to ±0.7% (one standard error).
PLAN = {"nominal": (1000, 500), "interval": (1000, 500), "boxes": (1000, 500), "spans": (1000, 500)}


def _long(values) -> pd.DataFrame:
    n = len(values)
    return pd.DataFrame({"item": np.repeat(np.arange(n), N_ANN), "annotator": np.tile(np.arange(N_ANN), n),
                         "value": [v for row in values for v in row]})


# ---- nominal: 3 categories, each annotator right with probability q -----------------
K, Q = 3, 0.75


def _nominal(rng: np.random.Generator, n: int) -> pd.DataFrame:
    truth = rng.integers(0, K, n)
    right = rng.random((n, N_ANN)) < Q
    wrong = (truth[:, None] + rng.integers(1, K, (n, N_ANN))) % K   # uniform over the others
    return _long(np.where(right, truth[:, None], wrong).astype(str))


def _nominal_population() -> dict[str, float]:
    agree = Q * Q + (1 - Q) ** 2 / (K - 1)          # two answers on one task equal
    chance_diff = 1 - 1 / K                         # marginals are uniform by symmetry
    # every exact agreement is significant (F jumps only at 0 and 1), no disagreement is
    return {"sigma": agree, "ks": agree * chance_diff, "alpha": 1 - (1 - agree) / chance_diff}


# ---- interval distance on a 1..5 rating scale ---------------------------------------
LEVELS = np.arange(1, 6)


def _rating_answer_matrix() -> np.ndarray:
    """P(answer | truth): right 0.6, one step off 0.3, anywhere 0.1."""
    m = np.zeros((5, 5))
    for t in range(5):
        m[t, t] += 0.6
        near = [u for u in (t - 1, t + 1) if 0 <= u < 5]
        for u in near:
            m[t, u] += 0.3 / len(near)
        m[t] += 0.1 / 5
    return m


def _interval(rng: np.random.Generator, n: int) -> pd.DataFrame:
    cdf = np.cumsum(_rating_answer_matrix(), axis=1)
    truth = rng.integers(0, 5, n)
    u = rng.random((n, N_ANN))
    vals = (u[:, :, None] > cdf[truth][:, None, :]).sum(axis=2)
    return _long((vals + 1).astype(float))


def _interval_population() -> dict[str, float]:
    m = _rating_answer_matrix()
    within = sum(np.outer(m[t], m[t]) / 5 for t in range(5))        # P(a, b) on one task
    marg = m.mean(axis=0)
    between = np.outer(marg, marg)
    d = (LEVELS[:, None] - LEVELS[None, :]).astype(float) ** 2
    e_vals, e_w = d.ravel(), between.ravel()
    above = np.array([e_w[e_vals > x].sum() for x in d.ravel()]).reshape(d.shape)
    # F reaches p within a bandwidth of 0 (a third of the chance pairs agree exactly) and
    # the next distance is 1: only exact agreement is significant
    return {"sigma": float(np.trace(within)), "ks": float((within * above).sum()),
            "alpha": float(1 - (within * d).sum() / (between * d).sum())}


# ---- boxes and spans: drawn in numpy, population by Monte Carlo -----------------------
def _box_params(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, N_ANN, 4) boxes x, y, w, h: 80% jittered around the task's box, 20% anywhere."""
    truth = np.concatenate((rng.uniform(0, 80, (n, 1, 2)), rng.uniform(10, 20, (n, 1, 2))), axis=2)
    jitter = truth + rng.normal(0, 0.8, (n, N_ANN, 4))
    jitter[..., 2:] = np.maximum(jitter[..., 2:], 1.0)
    anywhere = np.concatenate((rng.uniform(0, 80, (n, N_ANN, 2)), rng.uniform(10, 20, (n, N_ANN, 2))), axis=2)
    return np.where((rng.random((n, N_ANN)) < 0.8)[..., None], jitter, anywhere)


def _span_params(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, N_ANN, 2) spans [start, end) in tokens: 80% the task's span (30% of them shifted
    by a token), 20% anywhere."""
    length = rng.integers(2, 6, n)
    start = (rng.random(n) * (80 - length)).astype(np.int64)
    shift = rng.integers(-1, 2, (n, N_ANN)) * (rng.random((n, N_ANN)) < 0.3)
    s = np.maximum(start[:, None] + shift, 0)
    own = np.stack((s, s + length[:, None]), axis=2)
    ln = rng.integers(2, 6, (n, N_ANN))
    s2 = (rng.random((n, N_ANN)) * (80 - ln)).astype(np.int64)
    anywhere = np.stack((s2, s2 + ln), axis=2)
    return np.where((rng.random((n, N_ANN)) < 0.8)[..., None], own, anywhere)


def _boxes(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return _long([[(Box(*map(float, b)),) for b in row] for row in _box_params(rng, n)])


def _spans(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return _long([[(Span(int(a), int(b)),) for a, b in row] for row in _span_params(rng, n)])


def _box_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """1 − IoU of boxes (…, 4)."""
    ix = np.clip(np.minimum(a[..., 0] + a[..., 2], b[..., 0] + b[..., 2]) - np.maximum(a[..., 0], b[..., 0]), 0, None)
    iy = np.clip(np.minimum(a[..., 1] + a[..., 3], b[..., 1] + b[..., 3]) - np.maximum(a[..., 1], b[..., 1]), 0, None)
    inter = ix * iy
    return 1.0 - inter / (a[..., 2] * a[..., 3] + b[..., 2] * b[..., 3] - inter)


def _span_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """1 − F1 of lenient precision/recall of two single spans = 1 − 2·overlap/(|a| + |b|)."""
    overlap = np.clip(np.minimum(a[..., 1], b[..., 1]) - np.maximum(a[..., 0], b[..., 0]), 0, None)
    return 1.0 - 2.0 * overlap / ((a[..., 1] - a[..., 0]) + (b[..., 1] - b[..., 0]))


def _monte_carlo_population(params, distance, n_items: int = 200_000, n_chance: int = 1_000_000
                            ) -> dict[str, float]:
    rng = np.random.default_rng(999)
    x = params(rng, n_items)
    i, j = np.triu_indices(N_ANN, k=1)
    do = distance(x[:, i], x[:, j]).ravel()
    t1, t2 = rng.integers(0, n_items, (2, n_chance))
    keep = t1 != t2
    a1, a2 = rng.integers(0, N_ANN, (2, n_chance))
    de = np.sort(distance(x[t1[keep], a1[keep]], x[t2[keep], a2[keep]]))
    h = de.std(ddof=1) * 10_000 ** -0.2
    levels, counts = np.unique(de, return_counts=True)
    w = counts / de.size

    def mass(d: float) -> float:
        return float(np.sum(w * (ndtr((d - levels) / h) - ndtr(-levels / h))))

    lo, hi = 0.0, float(de[-1]) + 9 * h      # d*: the KDE mass reaches p (bisection to float)
    while hi - lo > 1e-15:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if mass(mid) >= P else (mid, hi)
    above = de.size - np.searchsorted(de, do, side="right")
    return {"sigma": float(np.mean(do < hi)), "ks": float(np.mean(above) / de.size),
            "alpha": float(1 - do.mean() / de.mean())}


KINDS = {
    "nominal": (_nominal, "nominal", _nominal_population),
    "interval": (_interval, "interval", _interval_population),
    "boxes": (_boxes, "boxes.iou", lambda: _monte_carlo_population(_box_params, _box_distance)),
    "spans": (_spans, "spans.lenient", lambda: _monte_carlo_population(_span_params, _span_distance)),
}


def _explained(res) -> list[str]:
    """What is wrong with the intervals of one report (empty: every interval is shown around
    its estimate, or null with a diagnostic saying why)."""
    bad = []
    for k, (lo, hi) in res.ci.items():
        est = getattr(res, k)
        if math.isfinite(lo) or math.isfinite(hi):
            if not lo <= est <= hi:
                bad.append(f"{k}: {est} outside [{lo}, {hi}]")
        elif not any(d.startswith(f"no interval for {k}:") for d in res.diagnostics):
            bad.append(f"{k}: null without a reason")
    pa = res.per_annotator
    for name in ("sigma", "alpha"):
        lo, hi, est = pa[f"{name}_ci_low"], pa[f"{name}_ci_high"], pa[name]
        shown = lo.notna()
        if not ((lo[shown] <= est[shown]) & (est[shown] <= hi[shown])).all():
            bad.append(f"per-annotator {name} interval misses its estimate")
        hidden = int((~shown & est.notna()).sum())
        said = sum(int(d.split()[0]) for d in res.diagnostics if f"per-annotator {name} interval" in d)
        if hidden != said:
            bad.append(f"{hidden} per-annotator {name} interval(s) null, {said} explained")
    return bad


@functools.lru_cache(maxsize=None)
def _measured(kind: str) -> tuple[dict[str, float], dict[str, float], list[str]]:
    draw, distance, population = KINDS[kind]
    truth = population()
    n_sets, n_boot = PLAN[kind]
    hits = {k: 0 for k in truth}
    problems = []
    rng = np.random.default_rng(12345)
    for r in range(n_sets):
        res = agreement(draw(rng, N_ITEMS), distance, bootstrap=n_boot, seed=r, p=P)
        problems += [f"dataset {r}: {b}" for b in _explained(res)]
        for k, value in truth.items():
            lo, hi = res.ci[k]
            hits[k] += bool(lo <= value <= hi)   # a null interval covers nothing
    cover = {k: v / n_sets for k, v in hits.items()}
    print(f"{kind}: population {({k: round(v, 4) for k, v in truth.items()})}, coverage {cover} "
          f"({n_sets} datasets, {n_boot} resamples)")
    return truth, cover, problems


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_nominal_95_percent_intervals_cover_the_population_value(kind):
    truth, cover, _ = _measured(kind)
    for k, c in cover.items():
        assert c >= TARGET, f"{kind}: the {k} interval covers its population value {truth[k]:.4f} in {c:.1%}"


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_simulated_report_shows_intervals_around_their_estimates(kind):
    _, _, problems = _measured(kind)
    assert not problems, problems[:10]


def test_population_values_are_what_large_samples_estimate():
    """The exact population values are the estimands: a 20,000-task sample lands on them."""
    rng = np.random.default_rng(7)
    for kind in ("nominal", "interval"):
        draw, distance, population = KINDS[kind]
        truth = population()
        res = agreement(draw(rng, 20_000), distance, bootstrap=0, p=P)
        for k in truth:
            assert getattr(res, k) == pytest.approx(truth[k], abs=0.01), (kind, k)


@pytest.mark.parametrize("kind,params,distance", [("boxes.iou", _box_params, _box_distance),
                                                  ("spans.lenient", _span_params, _span_distance)])
def test_simulation_distances_are_the_engine_distances(kind, params, distance):
    """The Monte Carlo population uses distances computed here; they are the engine's."""
    rng = np.random.default_rng(3)
    x = params(rng, 400).reshape(-1, params(rng, 1).shape[-1])
    values = [(Box(*map(float, b)),) for b in x] if kind.startswith("boxes") else \
        [(Span(int(a), int(b)),) for a, b in x]
    dist = get_distance(kind)
    prepared = dist.prepare(values)
    i, j = rng.integers(0, len(values), (2, 5000))
    np.testing.assert_allclose(distance(x[i], x[j]), dist.compute(prepared, i, j), atol=1e-12)

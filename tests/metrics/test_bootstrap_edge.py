"""Bootstrap intervals of KS and σ on hostile distance distributions, against a brute force.

The reference is a plain item bootstrap written here with numpy/scipy from the
definitions (measures.md §3, §9): a replicate draws items with multiplicities ``w``;
an observed pair weighs its item's ``w``; a chance pair (two values of different items)
weighs ``w_a · w_b``; the KDE bandwidth is the full sample's (Scott's rule) held fixed;
``F_w(d)`` is the kernel mass on ``[0, d]`` summed with ``scipy.stats.norm.cdf`` at every
observed distance, and σ is the weighted share of observed distances with ``F_w(d) < p``.
Replicates of the engine (:class:`Replicates`, fed the same multiplicities) must equal it
exactly, whatever the distances: ties, point masses, a bandwidth of 1e-7 or 0, 8 items.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import ndtr
from scipy.stats import norm

import ls_agreement.metrics.bootstrap_measures as bm
from ls_agreement.metrics.bootstrap_cutoffs import Cutoffs
import ls_agreement.metrics.engine as engine
from ls_agreement.metrics import Keypoint, agreement
from ls_agreement.metrics.bootstrap_measures import Replicates

P = 0.05


# ---- data ----------------------------------------------------------------------------
def keypoint_table(n: int, rng: np.random.Generator, m: int = 3) -> pd.DataFrame:
    """One keypoint per annotation, OKS scale s² = 100 (the floor), k = 0.2: OKS = exp(−d²/8).

    Tasks sit on a line 10.5 px apart, so chance pairs of neighbouring tasks have OKS
    between 1e-8 and 1e-5 — distances within 1e-5 of 1 — and every other chance pair is
    exactly 1.0 (OKS < 1e-16): a Scott bandwidth around 1e-7 beside a point mass, and
    ``d*`` a few bandwidths below 1. Annotators mark the task (σ 0.5 px), copy a colleague
    exactly (distance exactly 0), mark 10–13 px off the line (observed distances between
    1 − 4e-6 and 1 − 1e-9, around ``d*``), or mark far away (distance exactly 1).
    """
    cx = 10.5 * np.arange(n)
    rows = []
    for i in range(n):
        prev = None
        for a in range(m):
            u = rng.random()
            if u < 0.1 and prev is not None:
                x, y = prev
            elif u < 0.8:
                x, y = cx[i] + rng.normal(0, 0.5), rng.normal(0, 0.5)
            elif u < 0.9:
                x, y = cx[i] + rng.normal(0, 0.5), rng.uniform(10.0, 13.0)
            else:
                x, y = rng.uniform(1e6, 1e7, 2)
            prev = (float(x), float(y))
            rows.append((f"t{i}", f"a{a}", (Keypoint(prev[0], prev[1], "nose"),)))
    return pd.DataFrame(rows, columns=["item", "annotator", "value"])


def oks_distance(a, b) -> float:
    (p,), (q,) = a, b
    return 1.0 - math.exp(-((p.x - q.x) ** 2 + (p.y - q.y) ** 2) / 8.0)


def scalar_table(n: int, rng: np.random.Generator, values: np.ndarray, m: int = 3) -> pd.DataFrame:
    truth = rng.choice(values, n)
    vals = np.where(rng.random((n, m)) < 0.6, truth[:, None], rng.choice(values, (n, m)))
    return pd.DataFrame({"item": np.repeat([f"t{i}" for i in range(n)], m),
                         "annotator": np.tile([f"a{a}" for a in range(m)], n), "value": vals.ravel()})


def continuous_table(n: int, rng: np.random.Generator, m: int = 3) -> pd.DataFrame:
    """Ratings on a continuous scale: all values distinct, so the chance distribution of a
    scalar distance is not tabulated by value in replicates but read from chance pairs."""
    truth = rng.uniform(0, 10, n)
    vals = np.where(rng.random((n, m)) < 0.8, truth[:, None] + rng.normal(0, 0.5, (n, m)), rng.uniform(0, 10, (n, m)))
    return pd.DataFrame({"item": np.repeat([f"t{i}" for i in range(n)], m),
                         "annotator": np.tile([f"a{a}" for a in range(m)], n), "value": np.round(vals, 6).ravel()})


def same_task_distance(a, b) -> float:
    """Values ``(task, x)``: |x_a − x_b| within a task, exactly 1 across tasks (zero bandwidth)."""
    return abs(a[1] - b[1]) if a[0] == b[0] else 1.0


def zero_bandwidth_table(n: int, rng: np.random.Generator) -> pd.DataFrame:
    rows = []
    for i in range(n):
        for a in range(3):
            x = float(rng.choice([0.0, 0.25, 0.5, 1.0, 1.5]))  # within-task distances tie with 1
            rows.append((i, a, (i, x)))
    return pd.DataFrame(rows, columns=["item", "annotator", "value"])


# ---- the brute force -------------------------------------------------------------------
class BruteForce:
    """Every observed and every between-item pair of a table, with distances from ``dist``."""

    def __init__(self, table: pd.DataFrame, dist, items: list) -> None:
        pos = {it: k for k, it in enumerate(items)}
        groups = [(pos[it], list(g["value"])) for it, g in table.groupby("item", sort=False)]
        od, oi = [], []
        for i, vals in groups:
            for s in range(len(vals)):
                for t in range(s + 1, len(vals)):
                    od.append(dist(vals[s], vals[t]))
                    oi.append(i)
        flat = [(i, v) for i, vals in groups for v in vals]
        ed, ea, eb = [], [], []
        for s in range(len(flat)):
            for t in range(s + 1, len(flat)):
                if flat[s][0] != flat[t][0]:
                    ed.append(dist(flat[s][1], flat[t][1]))
                    ea.append(flat[s][0])
                    eb.append(flat[t][0])
        self.od, self.oi = np.array(od, dtype=float), np.array(oi)
        self.ed, self.ea, self.eb = np.array(ed, dtype=float), np.array(ea), np.array(eb)
        self.h = float(np.std(self.ed, ddof=1) * self.ed.size ** -0.2)

    def replicates(self, weights: np.ndarray, p: float = P) -> dict[str, np.ndarray]:
        """α (pairwise), KS and σ of each row of item multiplicities ``weights`` (B, n_items).

        The kernel mass of every chance distance on ``[0, d]`` is tabulated once for every
        distinct observed ``d`` (``norm.cdf``; an indicator when the bandwidth is 0); a
        replicate re-weights it.
        """
        levels, at = np.unique(self.od, return_inverse=True)
        if self.h > 0:
            kern = norm.cdf((levels[:, None] - self.ed[None, :]) / self.h) - norm.cdf(-self.ed / self.h)[None, :]
        else:
            kern = (self.ed[None, :] <= levels[:, None]).astype(float)
        greater = (self.ed[None, :] > levels[:, None]).astype(float)
        wo = weights[:, self.oi]
        we = weights[:, self.ea] * weights[:, self.eb]
        tot = we.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            mass = (we @ kern.T / tot[:, None])[:, at]                      # F_w at every observed d
            above = (we @ greater.T)[:, at]
            ks = np.sum(wo * above / (tot[:, None] + 1.0), axis=1) / wo.sum(axis=1)
            sigma = np.sum(wo * (mass < p), axis=1) / wo.sum(axis=1)
            alpha = 1.0 - (wo @ self.od / wo.sum(axis=1)) / (we @ self.ed / tot)
        undefined = tot == 0
        return {k: np.where(undefined, np.nan, v) for k, v in (("alpha", alpha), ("ks", ks), ("sigma", sigma))}


CASES = {
    # name: (table builder, engine distance, brute-force distance, replicate chance representation)
    "keypoints, bandwidth ~1e-7, ties at 0 and 1": (lambda rng: keypoint_table(60, rng), "keypoints.oks",
                                                     oks_distance, "_PairChance"),
    "nominal, two point masses": (lambda rng: scalar_table(40, rng, np.arange(4)), "nominal",
                                  lambda a, b: float(a != b), "_CellChance"),
    "interval, 5 levels (exact chance table)": (lambda rng: scalar_table(40, rng, np.arange(1, 6)), "interval",
                                                lambda a, b: float((a - b) ** 2), "_CellChance"),
    "interval, continuous values (chance pairs)": (lambda rng: continuous_table(70, rng), "interval",
                                                   lambda a, b: float((a - b) ** 2), "_PairChance"),
    "zero bandwidth": (lambda rng: zero_bandwidth_table(30, rng), same_task_distance, same_task_distance,
                       "_PairChance"),
    "8 tasks": (lambda rng: scalar_table(8, rng, np.arange(1, 6)), "ordinal", None, "_CellChance"),
}


def _case(name: str, seed: int = 0):
    build, distance, brute_dist, _ = CASES[name]
    table = build(np.random.default_rng(seed))
    return table, distance, brute_dist


# how each replicate's cut is found: exhaustive probes of the open brackets (the default for
# few levels), Taylor solves around anchors (many levels, smooth F_w), finer and finer grids
# (and Taylor solves leaving every cut within half a bandwidth of a level to exact probes)
STRATEGIES = {"probes": {}, "taylor": {"_ALL_LEVELS": 1}, "grids": {"_ALL_LEVELS": 1, "_MAX_ANCHORS": 0},
              "taylor, then probes": {"_ALL_LEVELS": 1, "_AMBIGUOUS": 0.5}}


def _count_taylor_solves(monkeypatch) -> list:
    """Record each cut the Taylor step solves (one entry per solved call)."""
    calls: list = []
    taylor = Cutoffs._taylor

    def counted(self, *args):
        solved = taylor(self, *args)
        calls.extend([1] if solved else [])
        return solved

    monkeypatch.setattr(Cutoffs, "_taylor", counted)
    return calls


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
@pytest.mark.parametrize("name", [n for n in CASES if CASES[n][2] is not None])
def test_replicates_equal_the_brute_force_item_bootstrap(name, strategy, monkeypatch):
    for attr, value in STRATEGIES[strategy].items():
        monkeypatch.setattr(Cutoffs, attr, value)
    calls = _count_taylor_solves(monkeypatch)
    table, distance, brute_dist = _case(name)
    rep = Replicates.from_table(table, distance, form="pairwise", expected_pairs="all", p=P)
    assert type(rep.chance).__name__ == CASES[name][3]
    if strategy != "probes":
        rep.cutoffs.first = rep.cutoffs.first[:1]    # wide brackets: the strategy does the work
    items = list(rep.item_labels)
    ref = BruteForce(table, brute_dist, items)
    rng = np.random.default_rng(1)
    w = rng.multinomial(len(items), np.full(len(items), 1.0 / len(items)), size=40).astype(float)
    w = np.vstack([np.ones(len(items)), w])          # the full sample first
    ours, theirs = rep(w), ref.replicates(w)
    if strategy.startswith("taylor") and ref.h > 0 and np.unique(ref.od).size > 2:
        assert calls                                  # the Taylor solve did run
    if not strategy.startswith("taylor"):
        assert not calls
    np.testing.assert_array_equal(ours["sigma"], theirs["sigma"])
    np.testing.assert_allclose(ours["ks"], theirs["ks"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours["alpha"], theirs["alpha"], rtol=0, atol=1e-12)
    assert np.unique(theirs["sigma"]).size > 3      # the replicates do differ
    if "1e-7" in name:   # the case the issue reported: a bandwidth no grid resolves, and ties
        assert 1e-9 < ref.h < 1e-5
        assert np.mean(ref.ed == 1.0) > 0.9 and np.mean(ref.od == 1.0) > 0.1 and np.any(ref.od == 0.0)
    if name == "zero bandwidth":
        assert ref.h == 0.0 and np.any(ref.od == 1.0)


def test_full_sample_replicate_is_the_point_estimate():
    """At all-ones weights the replicate code reproduces α, KS, σ and the per-annotator σ, α."""
    rng = np.random.default_rng(5)
    for name in CASES:
        table, distance, _ = _case(name, seed=int(rng.integers(1000)))
        for form in ("canonical", "pairwise"):
            res = agreement(table, distance, form=form, bootstrap=0, seed=3)
            rep = Replicates.from_table(table, distance, form=form, seed=3)
            full = rep(np.ones((1, rep.n_items)))
            for k in ("alpha", "ks", "sigma"):
                assert full[k][0] == pytest.approx(getattr(res, k), abs=1e-12), (name, form, k)
            pa = res.per_annotator.loc[list(rep.annotator_labels)]
            np.testing.assert_allclose(full["annotator_sigma"][0], pa["sigma"], atol=1e-12)
            np.testing.assert_allclose(full["annotator_alpha"][0], pa["alpha"], atol=1e-12)


def _shown_or_explained(res) -> None:
    """Every interval contains its estimate, or is null and the diagnostics say why."""
    for k, (lo, hi) in res.ci.items():
        est = getattr(res, k)
        if math.isfinite(lo) or math.isfinite(hi):
            assert lo <= est <= hi and lo < hi, (k, lo, est, hi)
        elif math.isfinite(est):
            assert any(d.startswith(f"no interval for {k}:") for d in res.diagnostics), (k, res.diagnostics)
    pa = res.per_annotator
    for name in ("sigma", "alpha"):
        lo, hi, est = pa[f"{name}_ci_low"], pa[f"{name}_ci_high"], pa[name]
        shown = lo.notna()
        assert ((lo[shown] <= est[shown]) & (est[shown] <= hi[shown]) & (lo[shown] < hi[shown])).all()
        hidden = int((~shown & est.notna()).sum())
        if hidden:
            said = sum(int(d.split()[0]) for d in res.diagnostics if f"per-annotator {name} interval" in d)
            assert said == hidden, res.diagnostics


def _percentile(x: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    x = x[np.isfinite(x)]
    return tuple(np.quantile(x, [(1 - level) / 2, (1 + level) / 2]))


def test_tiny_bandwidth_interval_contains_sigma_and_matches_brute_force():
    """The issue's keypoints case on 60 tasks: every chance pair, bandwidth ~1e-7."""
    table = keypoint_table(60, np.random.default_rng(11))
    res = agreement(table, "keypoints.oks", bootstrap=1000, seed=2, expected_pairs="all")
    ref = BruteForce(table, oks_distance, list(pd.unique(table["item"])))
    assert 1e-9 < ref.h < 1e-5
    rng = np.random.default_rng(3)
    n = len(pd.unique(table["item"]))
    w = rng.multinomial(n, np.full(n, 1.0 / n), size=2000).astype(float)
    brute = ref.replicates(w)
    _shown_or_explained(res)
    for k in ("sigma", "ks", "alpha"):
        lo, hi = res.ci[k]
        assert lo <= getattr(res, k) <= hi
        b_lo, b_hi = _percentile(brute[k])
        # the same bootstrap distribution: endpoints agree to Monte Carlo error and the BCa
        # correction, far closer than the issue's miss (σ 0.848 vs [0.529, 0.563])
        assert abs(lo - b_lo) < 0.25 * (b_hi - b_lo) and abs(hi - b_hi) < 0.25 * (b_hi - b_lo), (k, lo, hi, b_lo, b_hi)


@pytest.mark.slow
def test_issue_sized_keypoints_export():
    """1,400 tasks, a seeded sample of chance pairs, grouped jackknife: σ inside a narrow
    interval that agrees with a plain item bootstrap over the same chance pairs."""
    from ls_agreement.metrics import get_distance
    from ls_agreement.metrics.engine import alpha_core
    from ls_agreement.metrics.table import code_table

    table = keypoint_table(1400, np.random.default_rng(21))
    res = agreement(table, "keypoints.oks", bootstrap=1000, seed=0)
    _shown_or_explained(res)
    lo, hi = res.ci["sigma"]
    assert lo <= res.sigma <= hi and hi - lo < 0.08

    # which value rows the engine paired (its seeded chance sample); distances recomputed here
    ct = code_table(table, "error")
    core = alpha_core(ct, get_distance("keypoints.oks"), "canonical", None, np.random.default_rng(0))
    xy = np.array([[v[0].x, v[0].y] for v in ct.values])

    def oks(i, j):
        return 1.0 - np.exp(-np.sum((xy[i] - xy[j]) ** 2, axis=1) / 8.0)

    od, ed = oks(core.i, core.j), oks(core.expected.i, core.expected.j)
    np.testing.assert_allclose(od, core.observed, atol=1e-12)
    oi, ea, eb = ct.item[core.i], ct.item[core.expected.i], ct.item[core.expected.j]
    h = np.std(ed, ddof=1) * ed.size ** -0.2
    assert 1e-12 < h < 1e-5 and np.mean(ed == 1.0) > 0.99
    levels = np.unique(od)
    rng = np.random.default_rng(9)
    sig = []
    for w in rng.multinomial(ct.n_items, np.full(ct.n_items, 1.0 / ct.n_items), size=400).astype(float):
        we = w[ea] * w[eb]
        tot = we.sum()

        def mass(d):
            return np.sum(we * (ndtr((d - ed) / h) - ndtr(-ed / h))) / tot

        lo_i, hi_i = 0, levels.size          # significant levels: a prefix (the mass grows with d)
        while lo_i < hi_i:
            mid = (lo_i + hi_i) // 2
            lo_i, hi_i = (lo_i, mid) if mass(levels[mid]) >= P else (mid + 1, hi_i)
        wo = w[oi]
        sig.append(np.sum(wo * (od < (levels[lo_i] if lo_i < levels.size else np.inf))) / wo.sum())
    b_lo, b_hi = _percentile(np.array(sig))
    assert abs(lo - b_lo) < 0.25 * (b_hi - b_lo) and abs(hi - b_hi) < 0.25 * (b_hi - b_lo), (lo, hi, b_lo, b_hi)


def test_subsampled_chance_pairs_do_not_pull_the_interval(monkeypatch):
    """With fewer chance pairs behind the replicates than behind the estimate (a subsample,
    as above ``MAX_EXPECTED``), the replicates' own full-sample value is off the estimate;
    they are recentred on it, so the interval stays around the estimate and close to the
    one without subsampling (not pulled toward the subsample's value)."""
    table = continuous_table(100, np.random.default_rng(0))
    full = agreement(table, "interval", bootstrap=1000, seed=4)
    monkeypatch.setattr(bm, "MAX_EXPECTED", 400)
    rep = Replicates.from_table(table, "interval", seed=4)
    assert type(rep.chance).__name__ == "_PairChance" and rep.chance.n_pairs == 400
    own = rep(np.ones((1, rep.n_items)))
    sub = agreement(table, "interval", bootstrap=1000, seed=4)
    offsets = []
    for k in ("alpha", "ks", "sigma"):
        assert getattr(sub, k) == getattr(full, k)
        (lo, hi), (f_lo, f_hi) = sub.ci[k], full.ci[k]
        width = f_hi - f_lo
        offsets.append(abs(own[k][0] - getattr(full, k)) / width)
        assert lo <= getattr(sub, k) <= hi
        assert abs(lo - f_lo) < 0.35 * width and abs(hi - f_hi) < 0.35 * width, (k, sub.ci[k], full.ci[k])
    # the scenario is not trivial: the subsample alone is off the estimate by a tenth of the
    # interval or more (0.147 widths here; its size depends on which pairs the seed draws)
    assert max(offsets) > 0.1


@pytest.mark.parametrize("distance", ["nominal", "ordinal", "interval", "ratio"])
@pytest.mark.parametrize("seed", range(6))
def test_eight_tasks_show_intervals_only_around_their_estimates(distance, seed):
    rng = np.random.default_rng(seed)
    table = scalar_table(8, rng, np.arange(1, 6))
    res = agreement(table, distance, bootstrap=1000, seed=seed)
    _shown_or_explained(res)


def test_degenerate_and_missing_intervals_become_null_with_a_reason(monkeypatch):
    table = scalar_table(30, np.random.default_rng(2), np.arange(1, 6))
    real = engine.bootstrap_intervals

    def broken(*args, **kwargs):
        real(*args, **kwargs)   # fills per_annotator, which is then broken
        pa = kwargs["per_annotator"]
        pa["sigma_ci_low"] = pa["sigma"] + 0.5          # misses
        pa["alpha_ci_low"] = pa["alpha_ci_high"] = 0.3  # no width
        return {"alpha": (math.nan, math.nan), "ks": (0.2, 0.2), "sigma": (5.0, 6.0)}

    monkeypatch.setattr(engine, "bootstrap_intervals", broken)
    res = agreement(table, "interval", bootstrap=100)
    assert all(math.isnan(v) for pair in res.ci.values() for v in pair)
    assert res.per_annotator[["sigma_ci_low", "sigma_ci_high", "alpha_ci_low", "alpha_ci_high"]].isna().all().all()
    text = " | ".join(res.diagnostics)
    assert "no interval for alpha: no bootstrap replicate defined it" in text
    assert "no interval for ks: every bootstrap replicate gave 0.2" in text
    assert "no interval for sigma: the bootstrap interval [5, 6] does not contain the estimate" in text
    assert "3 per-annotator sigma interval(s) not shown: they did not contain their estimate" in text
    assert "3 per-annotator alpha interval(s) not shown: every bootstrap replicate gave one value" in text


# ---- an extreme significance level ---------------------------------------------------------

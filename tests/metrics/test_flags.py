"""The flag rule (metrics/flags.py): its probabilities against brute force, its false-flag
rate on simulated ordinary projects, and what it catches on simulated problems.

References are independent of the module: the tail probability is checked against an
enumeration of every sound/unsound assignment and every pair outcome; the false-flag rate
is measured on answers simulated value by value (3-choice labels compared exactly), not
on the module's own model.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ls_agreement.metrics.flags import (FlagModel, agreeing_pairs, combine_flags, combined_p_value,
                                        fit_flag_model, item_evidence)


def _brute(k: int, qs: list[float], s: float, c: float) -> tuple[float, float]:
    """P(K = k), P(K ≤ k): every sound/unsound assignment, every pair agreeing or not."""
    m = len(qs)
    pairs = list(itertools.combinations(range(m), 2))
    eq = le = 0.0
    for sound in itertools.product((0, 1), repeat=m):
        p_s = math.prod(q if x else 1 - q for q, x in zip(qs, sound))
        for agree in itertools.product((0, 1), repeat=len(pairs)):
            p = p_s
            for (a, b), y in zip(pairs, agree):
                r = s if sound[a] and sound[b] else c
                p *= r if y else 1 - r
            eq += p * (sum(agree) == k)
            le += p * (sum(agree) <= k)
    return eq, le


@pytest.mark.parametrize("qs", [[0.9, 0.8, 0.7], [0.95, 0.9, 0.6, 0.1]])
def test_tail_and_posterior_match_brute_force(qs: list[float]) -> None:
    s, c = 0.92, 0.15
    ids = [str(i) for i in range(len(qs))]
    model = FlagModel(chance=c, same=s, reliability=dict(zip(ids, qs)), unreliable_below=0.3)
    n = len(qs) * (len(qs) - 1) // 2
    for k in range(n + 1):
        ev = item_evidence(model, k, n, ids)
        eq, le = _brute(k, qs, s, c)
        assert ev.p_value == pytest.approx(le, rel=1e-9, abs=1e-12)
        if qs[-1] < 0.3 and k == n:  # every pair agrees: nobody departs
            assert ev.p_departure == 0.0 and ev.unreliable == (ids[-1],)
        elif qs[-1] < 0.3:  # posterior of the unreliable one's departure, by brute force too
            forced = qs[:-1] + [1.0]
            p_sound = qs[-1] * _brute(k, forced, s, c)[0]
            assert ev.p_departure == pytest.approx(1 - p_sound / eq, rel=1e-9)
            assert ev.unreliable == (ids[-1],)
        else:
            assert ev.p_departure == 0.0


def _simulate(rng: np.random.Generator, n_tasks: int, n_controls: int, accuracy: dict[str, float],
              per_task: int = 3, classes: int = 3):
    """Value-level answers: annotator right with their accuracy, else another class."""
    names = list(accuracy)
    truth = rng.integers(classes, size=(n_tasks, n_controls))
    who = np.array([rng.choice(len(names), per_task, replace=False) for _ in range(n_tasks)])
    acc = np.array([accuracy[names[a]] for a in who.ravel()]).reshape(who.shape)
    right = rng.random((n_tasks, n_controls, per_task)) < acc[:, None, :]
    other = (truth[..., None] + rng.integers(1, classes, size=right.shape)) % classes
    values = np.where(right, truth[..., None], other)
    return names, who, values


def _fit_and_evidence(names, who, values, classes: int = 3):
    """Per control: annotator σ (exact-match pairs), chance rate 1/classes, the fit, and
    every task's evidence."""
    n_tasks, n_controls, m = values.shape
    pair_idx = list(itertools.combinations(range(m), 2))
    out = []
    for c in range(n_controls):
        agree = np.array([[values[t, c, i] == values[t, c, j] for i, j in pair_idx] for t in range(n_tasks)])
        stats = {}
        for a in range(len(names)):
            hits = [agree[t, p] for t in range(n_tasks) for p, (i, j) in enumerate(pair_idx)
                    if a in (who[t, i], who[t, j])]
            stats[names[a]] = (float(np.mean(hits)), len(hits))
        items = [(int(agree[t].sum()), len(pair_idx), [names[a] for a in who[t]]) for t in range(n_tasks)]
        model = fit_flag_model(stats, 1.0 / classes, items)
        out.append([item_evidence(model, k, n, ann) for k, n, ann in items])
    return out


@pytest.mark.parametrize("n_controls", [1, 2, 6])
def test_false_flag_rate_of_ordinary_tasks_stays_below_level(n_controls: int) -> None:
    # Six careful annotators (right 80-95% of the time), three per task, no problem task:
    # whatever the number of controls, few tasks may be flagged (the level is 1%).
    rng = np.random.default_rng(5)
    accuracy = {"a": 0.95, "b": 0.9, "c": 0.85, "d": 0.8, "e": 0.9, "f": 0.85}
    names, who, values = _simulate(rng, 1500, n_controls, accuracy)
    evidence = _fit_and_evidence(names, who, values)
    flagged = sum(bool(combine_flags({f"c{c}": evidence[c][t] for c in range(n_controls)}))
                  for t in range(len(who)))
    assert flagged / len(who) <= 0.02          # level 0.01 plus Monte-Carlo and fit noise
    # the old cut flags every task with one slip, more with every control
    old = np.mean([any(values[t, c, 0] != values[t, c, 1] or values[t, c, 1] != values[t, c, 2]
                       for c in range(n_controls)) for t in range(len(who))])
    assert old > 0.25


def test_careless_departures_caught_good_slips_not() -> None:
    rng = np.random.default_rng(11)
    accuracy = {"a": 0.95, "b": 0.9, "c": 0.92, "d": 0.9, "e": 0.93, "zed": 0.34}
    names, who, values = _simulate(rng, 1200, 2, accuracy)
    evidence = _fit_and_evidence(names, who, values)
    zed = names.index("zed")
    caught = missed = false = slips = 0
    for t in range(len(who)):
        flag = bool(combine_flags({f"c{c}": evidence[c][t] for c in range(2)}))
        ranks = list(who[t])
        truth_rows = [np.bincount(values[t, c]).argmax() for c in range(2)]
        zed_off = zed in ranks and any(values[t, c, ranks.index(zed)] != truth_rows[c] for c in range(2))
        if zed_off:
            caught += flag
            missed += not flag
        elif zed not in ranks:
            slips += any(len(set(values[t, c])) > 1 for c in range(2))
            false += flag
    assert caught / (caught + missed) > 0.9
    assert slips > 50 and false / slips < 0.05   # good annotators' slips are not flagged


def test_unreliable_annotator_who_agrees_is_not_flagged() -> None:
    model = FlagModel(chance=0.05, same=0.98, reliability={"a": 0.9, "b": 0.9, "z": 0.1},
                      unreliable_below=0.45)
    agree = item_evidence(model, 3, 3, ["a", "b", "z"])
    depart = item_evidence(model, 1, 3, ["a", "b", "z"])
    assert agree.p_departure < 0.1 and depart.p_departure > 0.9
    assert combine_flags({"x": agree}) == {}
    assert "likely departs" in combine_flags({"x": depart})["x"]


def test_fisher_combination_and_helpers() -> None:
    assert combined_p_value([]) == 1.0
    assert combined_p_value([1.0, 1.0]) == pytest.approx(1.0)
    assert combined_p_value([0.01]) == pytest.approx(0.01)
    assert combined_p_value([0.05, 0.05, 0.05]) < 0.05
    assert agreeing_pairs(1 / 3, 3) == 1 and agreeing_pairs(None, 3) is None and agreeing_pairs(0.5, 0) is None
    assert fit_flag_model({}, 0.1) is None and fit_flag_model({"a": (0.5, 10)}, None) is None


def test_many_pairs_use_the_normal_reading_quickly() -> None:
    model = FlagModel(chance=0.2, same=0.9, default_reliability=0.8)
    m = 400
    ids = [str(i) for i in range(m)]
    n = m * (m - 1) // 2
    typical = item_evidence(model, int(0.2 * n + 0.7 * 0.64 * n), n, ids)
    low = item_evidence(model, int(0.3 * n), n, ids)
    assert typical.p_value > 0.05 and low.p_value < 1e-6


# --- the distance model: the task's mean distance against the control's own distances ---

from ls_agreement.metrics.flags import (DistanceModel, distance_components, distance_evidence,  # noqa: E402
                                        fit_distance_model, unreliable_annotators)


def _brute_distance(model: DistanceModel, ids: list[str], lo: int, hi: int,
                    forced: frozenset[str] = frozenset()) -> tuple[float, float]:
    """P(lo ≤ S ≤ hi), P(S ≥ lo): every answer departing or not, every pair in every bin."""
    m = len(ids)
    pairs = list(itertools.combinations(range(m), 2))
    bins = range(len(model.sound_pmf))
    eq = ge = 0.0
    for state in itertools.product((0, 1), repeat=m):   # 1: does not depart
        ps = [1.0 if a in forced else model.p(a) for a in ids]
        w = math.prod(p if x else 1 - p for p, x in zip(ps, state))
        if w == 0:
            continue
        laws = [model.sound_pmf if state[a] and state[b] else
                model.depart_pmf if state[a] or state[b] else model.chance_pmf for a, b in pairs]
        for combo in itertools.product(bins, repeat=len(pairs)):
            p = w * math.prod(law[i] for law, i in zip(laws, combo))
            s = sum(combo)
            eq += p * (lo <= s <= hi)
            ge += p * (s >= lo)
    return eq, ge


def test_distance_tail_and_posterior_match_brute_force() -> None:
    # four bins of width 1: a distance d lies in bin ⌊d⌋; three annotators, one unreliable
    model = DistanceModel(width=1.0, sound_pmf=(0.5, 0.35, 0.15, 0.0), depart_pmf=(0.0, 0.2, 0.4, 0.4),
                          chance_pmf=(0.2, 0.25, 0.3, 0.25), kappa=0.4,
                          reliability={"a": 0.95, "b": 0.8, "z": 0.1}, unreliable_below=0.3)
    ids = ["a", "b", "z"]
    for mean in (0.0, 0.5, 1.0, 4 / 3, 2.0, 2.5, 3.0):
        ev = distance_evidence(model, mean, 3, ids)
        # the bins' sums consistent with the mean: S ≤ 3 d̄ ≤ S + 3
        lo, hi = math.ceil(3 * mean - 3 - 1e-9), math.floor(3 * mean + 1e-9)
        eq, ge = _brute_distance(model, ids, lo, hi)
        assert ev.p_value == pytest.approx(ge, rel=1e-9, abs=1e-12)
        kept = model.p("z") * _brute_distance(model, ids, lo, hi, frozenset({"z"}))[0]
        assert ev.p_departure == pytest.approx(1 - kept / eq, rel=1e-9, abs=1e-12)
        assert ev.unreliable == ("z",)
        # the null law's cumulative sums are the attainable p-values, the observed among them
        tails = np.cumsum(ev.null)
        assert np.min(np.abs(tails - ev.p_value)) < 1e-12


def test_distance_components_recover_a_planted_split() -> None:
    # irreducible parts: sound pairs never reach the last bin, departing ones never the first
    f_s = np.array([0.5, 0.3, 0.15, 0.05, 0.0])
    f_d = np.array([0.0, 0.1, 0.3, 0.3, 0.3])
    kappa, lam = 0.35, 0.3
    f_c = kappa * f_s + (1 - kappa) * f_d
    f_o = (1 - lam) * f_s + lam * f_c
    comp = distance_components(np.linspace(0, 5, 6), f_o * 1000, f_c * 1e6)
    assert comp is not None
    assert comp.kappa == pytest.approx(kappa, abs=1e-9) and comp.chance_share == pytest.approx(lam, abs=1e-9)
    assert np.allclose(comp.sound_pmf, f_s) and np.allclose(comp.depart_pmf, f_d)
    # observed pairs no different from chance: nothing is sound
    assert distance_components(np.linspace(0, 5, 6), f_c, f_c) is None


def _ratings(rng: np.random.Generator, n_tasks: int, n_controls: int, careful: list[str],
             careless: list[str] = (), per_task: int = 3):
    """Value-level 5-point ratings: a careful annotator within a point of the truth (uniform
    −1, 0, +1), a careless one uniform over 1..5 most of the time."""
    names = list(careful) + list(careless)
    truth = rng.integers(1, 6, size=(n_tasks, n_controls))
    who = np.array([rng.choice(len(names), per_task, replace=False) for _ in range(n_tasks)])
    values = np.clip(truth[..., None] + rng.integers(-1, 2, size=(n_tasks, n_controls, per_task)), 1, 5)
    for t in range(n_tasks):
        for i, a in enumerate(who[t]):
            if names[a] in careless:
                hit = rng.random(n_controls) < 0.8
                values[t, hit, i] = rng.integers(1, 6, size=int(hit.sum()))
    return names, who, truth, values


def _distance_fit(names, who, values, bins: int = 30):
    """Per control, as a report does it: the histogram of the observed pair distances |u − v|
    and of the chance ones (every value against every value of the project), each
    annotator's mean distance, the fit; then every task's evidence."""
    n_tasks, n_controls, m = values.shape
    pair_idx = list(itertools.combinations(range(m), 2))
    out = []
    for c in range(n_controls):
        d = np.abs(values[:, c, :, None] - values[:, c, None, :])
        obs = np.array([[d[t, i, j] for i, j in pair_idx] for t in range(n_tasks)], dtype=float)
        counts = np.bincount(values[:, c].ravel(), minlength=6)[1:].astype(float)
        chance = {abs(u - v): 0.0 for u in range(5) for v in range(5)}
        for u in range(5):
            for v in range(5):
                chance[abs(u - v)] += counts[u] * counts[v]
        edges = np.linspace(0, 4, bins + 1)
        observed, _ = np.histogram(obs.ravel(), bins=edges)
        expected, _ = np.histogram(list(chance), bins=edges, weights=list(chance.values()))
        per = {}
        for a in range(len(names)):
            ds = [obs[t, p] for t in range(n_tasks) for p, (i, j) in enumerate(pair_idx) if a in (who[t, i], who[t, j])]
            per[names[a]] = (float(np.mean(ds)), len(ds))
        comp = distance_components(edges, observed, expected)
        model = fit_distance_model(comp, per)
        out.append((model, [distance_evidence(model, float(obs[t].mean()), len(pair_idx),
                                              [names[a] for a in who[t]]) for t in range(n_tasks)]))
    return out


@pytest.mark.parametrize("n_controls", [1, 3, 6])
def test_distance_null_flags_ordinary_tasks_at_most_at_the_level(n_controls: int) -> None:
    # careful annotators only, three per task, ratings within a point of the truth: honest
    # spread, no problem. In the tail where flags are, the p-values may not fall below α
    # more often than α, neither per control nor combined over the task's controls, and the
    # share of flagged tasks stays at the 1% level whatever the number of controls; the old
    # σ < 0.5 cut (pairs equal) flags most of the project. (The middle of the law is not
    # held to this: a task's pairs are read as independent given its answers, while three
    # ratings on a line are not — spread 2 always gives distances 1, 1, 2 — which puts the
    # model's far tail above the truth, the conservative side, but not every middle level.)
    rng = np.random.default_rng(3)
    names, who, truth, values = _ratings(rng, 1500, n_controls, ["a", "b", "c", "d", "e", "f"])
    fitted = _distance_fit(names, who, values)
    slack = lambda alpha: 3 * math.sqrt(alpha * (1 - alpha) / len(who)) + 0.002  # noqa: E731
    for model, evs in fitted:
        p = np.array([ev.p_value for ev in evs])
        for alpha in (0.01, 0.05):
            assert np.mean(p <= alpha) <= alpha + slack(alpha)
        assert all(ev.unreliable == () for ev in evs)
    p_all = np.array([combined_p_value([fitted[c][1][t].p_value for c in range(n_controls)],
                                       [fitted[c][1][t].null for c in range(n_controls)])
                      for t in range(len(who))])
    for alpha in (0.01, 0.05):
        assert np.mean(p_all <= alpha) <= alpha + slack(alpha)
    flagged = np.mean([bool(combine_flags({f"c{c}": fitted[c][1][t] for c in range(n_controls)}))
                       for t in range(len(who))])
    assert flagged <= 0.01 + slack(0.01)
    old = np.mean([any(len(set(values[t, c])) > 1 and
                       sum(values[t, c, i] == values[t, c, j] for i, j in itertools.combinations(range(3), 2)) < 2
                       for c in range(n_controls)) for t in range(len(who))])
    assert old > 0.5


def test_random_rating_within_a_point_is_not_a_departure() -> None:
    # a careless annotator's rating departs when it is two points or more off the truth; a
    # random rating that lands within a point looks like a careful one and is not flagged
    rng = np.random.default_rng(8)
    names, who, truth, values = _ratings(rng, 2000, 1, ["a", "b", "c", "d", "e"], ["zed"])
    (model, evs), = _distance_fit(names, who, values)
    zed = names.index("zed")
    assert model.q("zed") < model.unreliable_below <= min(model.q(a) for a in "abcde")
    caught = departed = false = near = 0
    for t, ev in enumerate(evs):
        if zed not in who[t] or len(set(values[t, 0])) == 1:   # everyone agreed: nothing to read
            continue
        flag = bool(combine_flags({"r": ev}))
        off = abs(int(values[t, 0, list(who[t]).index(zed)]) - int(truth[t, 0])) >= 2
        departed += off
        caught += flag and off
        near += not off
        false += flag and not off
    assert caught / departed > 0.85           # departures are caught from one rating alone
    # A count of equal pairs flags every such disagreement: its precision is the share of
    # departures among them. One rating cannot tell a random rating a point off from a
    # careful one, but the distances leave most of those unflagged and the precision well up.
    every = departed / (departed + near)
    assert caught / (caught + false) > max(0.55, every + 0.15)
    assert false / near < 0.5


def test_project_level_unreliability_pools_the_controls() -> None:
    # borderline on one control (ratio 0.55), clear on the other (0.2): unreliable overall;
    # a careful annotator a little below the median on one control is not
    controls = [({"z": 0.33, "a": 0.6, "b": 0.62}, 0.6, {"z": 100, "a": 100, "b": 100}),
                ({"z": 0.2, "a": 1.0, "b": 0.9}, 1.0, {"z": 100, "a": 100, "b": 100})]
    assert unreliable_annotators(["z", "a", "b"], controls) == {"z"}
    assert unreliable_annotators(["a"], controls) == set()
    assert unreliable_annotators(["z"], []) == set()


def test_exact_combination_is_conservative_and_close() -> None:
    # two discrete nulls: the exact P(P1 P2 ≤ p1 p2) by enumeration, against the grid reading
    nulls = [(0.05, 0.1, 0.25, 0.6), (0.02, 0.08, 0.3, 0.2, 0.4)]
    levels = [np.cumsum(n) for n in nulls]
    for i, j in itertools.product(range(4), range(5)):
        p1, p2 = levels[0][i], levels[1][j]
        exact = sum(nulls[0][a] * nulls[1][b] for a in range(4) for b in range(5)
                    if levels[0][a] * levels[1][b] <= p1 * p2 * (1 + 1e-12))
        got = combined_p_value([p1, p2], nulls)
        assert exact - 1e-12 <= got <= exact * 1.06 + 1e-12 or got <= exact + 0.03

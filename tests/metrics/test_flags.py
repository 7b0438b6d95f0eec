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

"""1-d labelled regions (metrics/distances/intervals.py): against hand computation, shapely's
1-d geometry and brute-force loops."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import shapely
from shapely.geometry import LineString, Point

from ls_agreement.metrics import error_types
from ls_agreement.metrics.choose import infer_kind
from ls_agreement.metrics.distances import get_distance
from ls_agreement.metrics.distances.intervals import (INSTANT_SHARE, IntervalDice, IntervalDistance,
                                                      interval_similarity_matrix, interval_tolerance)
from ls_agreement.metrics.model import Interval as I


def _geom(iv: I):
    return Point(iv.start, 0) if iv.instant else LineString([(iv.start, 0), (iv.end, 0)])


def _reference_similarity(a: I, b: I, tau: float) -> float:
    """1-d IoU from shapely's lengths; an instant by its shapely distance to the other region."""
    ga, gb = _geom(a), _geom(b)
    if a.instant or b.instant:
        return max(0.0, 1.0 - ga.distance(gb) / tau)
    inter = ga.intersection(gb).length
    return inter / (a.length + b.length - inter)


def _reference_pooled(a, b, tau: float, labels: bool = True) -> float:
    if not a and not b:
        return 0.0
    if not a or not b:
        return 1.0

    def s(x, y):
        return _reference_similarity(x, y, tau) if (not labels or x.label == y.label) else 0.0
    best = [max(s(x, y) for y in b) for x in a] + [max(s(x, y) for x in a) for y in b]
    return 1.0 - sum(best) / len(best)


def _reference_dice(a, b, tau: float) -> float:
    """Dice of the labelled durations, the unions built by shapely (instants as τ windows)."""
    if not a and not b:
        return 0.0
    if not a or not b:
        return 1.0

    def union(v, lab):
        segs = [LineString([(x.start - tau / 2, 0), (x.end + tau / 2, 0)]) if x.instant
                else LineString([(x.start, 0), (x.end, 0)]) for x in v if x.label == lab]
        return shapely.union_all(segs) if segs else LineString()
    labels = {x.label for x in (*a, *b)}
    inter = sum(union(a, lab).intersection(union(b, lab)).length for lab in labels)
    total = sum(union(a, lab).length + union(b, lab).length for lab in labels)
    return 1.0 - 2.0 * inter / total


def _random_value(rng, n_max=4, instants=0.3, labels="AB"):
    out = []
    for _ in range(int(rng.integers(0, n_max + 1))):
        s = float(np.round(rng.uniform(0, 100), 1))
        e = s if rng.random() < instants else float(np.round(s + rng.uniform(0.5, 30), 1))
        out.append(I(s, e, str(rng.choice(list(labels)))))
    return tuple(out)


def test_by_hand():
    a = (I(0, 10, "x"), I(20, 30, "y"))
    b = (I(5, 15, "x"), I(25, 25, "y"))
    # τ = median length 10; x: IoU 5/15; the instant 25 lies inside [20, 30]: 1
    assert get_distance("intervals.overlap")(a, b) == pytest.approx(1 - (1 / 3 + 1 + 1 / 3 + 1) / 4)
    # dice: the instant is the window [20, 30]; x shares 5 of 10 + 10, y 10 of 10 + 10
    assert get_distance("intervals.dice")(a, b) == pytest.approx(1 - 2 * 15 / 40)
    # labels differ: nothing matches
    c = (I(0, 10, "y"),)
    assert get_distance("intervals.overlap")(a[:1], c) == 1.0
    assert get_distance("intervals.overlap_any")(a[:1], c) == 0.0
    assert get_distance("intervals.count")(a, c) == 1.0


def test_instants_decay_with_distance_over_tolerance():
    d = IntervalDistance(tolerance=4.0)
    assert d((I(10, 10),), (I(11, 11),)) == pytest.approx(0.25)      # 1 − (1 − 1/4)
    assert d((I(10, 10),), (I(14, 14),)) == pytest.approx(1.0)       # gap = τ: no match
    assert d((I(10, 10),), (I(0, 20),)) == pytest.approx(0.0)        # inside the interval
    assert d((I(10, 10),), (I(12, 20),)) == pytest.approx(0.5)       # 2 before its start
    assert d((I(10, 10),), (I(10, 10),)) == 0.0


def test_tolerance_from_the_data():
    s, e = np.array([0.0, 10.0, 50.0, 60.0]), np.array([4.0, 10.0, 58.0, 60.0])
    assert interval_tolerance(s, e) == pytest.approx(6.0)            # median of 4 and 8
    s = e = np.array([5.0, 25.0, 105.0])
    assert interval_tolerance(s, e) == pytest.approx(INSTANT_SHARE * 100.0)
    assert interval_tolerance(np.array([3.0]), np.array([3.0])) == 1.0
    # the matrix derives τ from both sides together: two instants 2.5 apart on an extent of 100
    m = interval_similarity_matrix([I(0, 0), I(100, 100)], [I(2.5, 2.5)])
    assert m.shape == (2, 1)
    assert m[:, 0] == pytest.approx([1 - 2.5 / 5.0, 0.0])


@pytest.mark.parametrize("seed", range(3))
def test_similarity_matrix_against_shapely(seed):
    rng = np.random.default_rng(seed)
    a = _random_value(rng, 8) or (I(1, 2),)
    b = _random_value(rng, 8) or (I(3, 3),)
    tau = 7.5
    m = interval_similarity_matrix(a, b, tolerance=tau)
    ref = np.array([[_reference_similarity(x, y, tau) for y in b] for x in a])
    np.testing.assert_allclose(m, ref, atol=1e-12)
    assert m.shape == (len(a), len(b))
    assert ((m >= 0) & (m <= 1)).all()


@pytest.mark.parametrize("labels", ["strict", "ignore"])
def test_pooled_overlap_against_brute_force(labels):
    rng = np.random.default_rng(7)
    values = [_random_value(rng) for _ in range(60)]
    dist = IntervalDistance(labels=labels)
    i, j = np.triu_indices(len(values), 1)
    got = dist.pairs(values, i, j)
    objs = [x for v in values for x in v]
    tau = interval_tolerance(np.array([x.start for x in objs]), np.array([x.end for x in objs]))
    ref = [_reference_pooled(values[p], values[q], tau, labels == "strict") for p, q in zip(i, j)]
    np.testing.assert_allclose(got, ref, atol=1e-12)


def test_hungarian_against_every_assignment():
    rng = np.random.default_rng(3)
    dist = IntervalDistance(combine="hungarian", labels="ignore", tolerance=5.0)
    for _ in range(40):
        a, b = _random_value(rng, 4, labels="A"), _random_value(rng, 4, labels="A")
        if not a or not b:
            continue
        s = np.array([[_reference_similarity(x, y, 5.0) for y in b] for x in a])
        if s.shape[0] > s.shape[1]:
            s = s.T
        # every one-to-one assignment of the shorter side's regions
        best = max(sum(s[r, c] for r, c in enumerate(cols))
                   for cols in itertools.permutations(range(s.shape[1]), s.shape[0]))
        assert dist(a, b) == pytest.approx(1 - 2 * best / (len(a) + len(b)), abs=1e-12)


def test_dice_against_shapely_unions():
    rng = np.random.default_rng(11)
    values = [_random_value(rng, 5) for _ in range(50)]
    dist = IntervalDice(tolerance=3.0)
    i, j = np.triu_indices(len(values), 1)
    got = dist.pairs(values, i, j)
    ref = [_reference_dice(values[p], values[q], 3.0) for p, q in zip(i, j)]
    np.testing.assert_allclose(got, ref, atol=1e-9)


def test_dice_counts_overlapping_regions_of_one_annotator_once():
    a = (I(0, 10, "x"),)
    b = (I(0, 6, "x"), I(4, 8, "x"))     # union [0, 8]
    assert get_distance("intervals.dice")(a, b) == pytest.approx(1 - 2 * 8 / (10 + 8))


def test_empty_values_and_bad_input():
    for name in ("intervals.overlap", "intervals.dice", "intervals.overlap_any"):
        d = get_distance(name)
        assert d((), ()) == 0.0 and d((I(0, 1),), ()) == 1.0
    with pytest.raises(ValueError, match="before start"):
        I(2, 1)
    with pytest.raises(ValueError, match="finite"):
        I(float("nan"), 1)
    with pytest.raises(ValueError, match="tolerance"):
        IntervalDistance(tolerance=0)
    with pytest.raises(ValueError, match="expected Interval"):
        get_distance("intervals.overlap").pairs([(I(0, 1),), ("x",)], [0], [1])


def test_kind_inference_and_error_types():
    assert infer_kind([(I(0, 1, "a"),), ()]) == "intervals"
    # annotator a vs b on one item: x matched well, y matched with a shift (IoU 1/3), z missed by b
    t = pd.DataFrame({"item": [1, 1], "annotator": ["a", "b"],
                      "value": [(I(0, 10, "x"), I(20, 30, "y"), I(50, 60, "z")),
                                (I(0, 9, "x"), I(25, 35, "y"))]})
    res = error_types(t)
    assert res.kind == "intervals" and res.threshold == 0.5
    o = res.overall
    assert (o["agreed"], o["localization"], o["label"], o["both"], o["unmatched"]) == (1, 1, 0, 0, 1)
    assert res.annotators.loc["b", "missed"] == 1 and res.annotators.loc["a", "extra"] == 1

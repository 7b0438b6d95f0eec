"""Boxes: IoU / GIoU worked by hand, rotated boxes against shapely, the combinators."""
from __future__ import annotations

import math

import numpy as np
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st
from shapely import affinity

from ls_agreement.metrics.distances import get_distance
from ls_agreement.metrics.distances.boxes import BoxDistance
from ls_agreement.metrics.model import Box

IOU, GIOU = get_distance("boxes.iou"), get_distance("boxes.giou")
GRADED = get_distance("boxes.giou_graded")


def shapely_box(b: Box) -> shapely.Polygon:
    # Independent of Box.corners(): rotate about the top-left corner with shapely.
    return affinity.rotate(shapely.box(b.x, b.y, b.x + b.width, b.y + b.height), b.rotation, origin=(b.x, b.y))


def test_overlapping_pair_by_hand():
    a, b = (Box(0, 0, 2, 2),), (Box(1, 1, 2, 2),)
    # intersection 1, union 4 + 4 - 1 = 7, enclosing box 3 x 3 = 9
    assert IOU(a, b) == pytest.approx(1 - 1 / 7, abs=1e-12)
    giou = 1 / 7 - (9 - 7) / 9
    assert GRADED(a, b) == pytest.approx((1 - giou) / 2, abs=1e-12)
    assert GIOU(a, b) == pytest.approx(1 - max(giou, 0.0), abs=1e-12)   # paper 000: floored at 0


def test_disjoint_pair_giou_is_negative():
    a, b = (Box(0, 0, 1, 1),), (Box(2, 0, 1, 1),)
    assert IOU(a, b) == 1.0
    # union 2, enclosing 3 x 1: GIoU = 0 - 1/3
    assert GRADED(a, b) == pytest.approx((1 + 1 / 3) / 2, abs=1e-12)
    # paper 000's code floors each best match at 0: every disjoint pair is at distance 1
    assert GIOU(a, b) == 1.0


def test_rotated_pair_against_shapely():
    a, b = Box(10, 5, 40, 20, rotation=30), Box(15, 2, 35, 25, rotation=-15)
    pa, pb = shapely_box(a), shapely_box(b)
    iou = pa.intersection(pb).area / pa.union(pb).area
    hull = shapely.MultiPolygon([pa, pb]).convex_hull.area
    giou = iou - (hull - pa.union(pb).area) / hull
    assert 0 < iou < 1
    assert IOU((a,), (b,)) == pytest.approx(1 - iou, abs=1e-12)
    assert GRADED((a,), (b,)) == pytest.approx((1 - giou) / 2, abs=1e-12)
    assert GIOU((a,), (b,)) == pytest.approx(1 - max(giou, 0.0), abs=1e-12)


def test_rotation_90_equals_axis_aligned_box():
    # (0,0) w=2 h=1 turned 90° clockwise on screen covers x in [-1, 0], y in [0, 2]
    assert IOU((Box(0, 0, 2, 1, rotation=90),), (Box(-1, 0, 1, 2),)) == pytest.approx(0, abs=1e-12)
    assert IOU((Box(0, 0, 2, 1, rotation=360),), (Box(0, 0, 2, 1),)) == pytest.approx(0, abs=1e-12)


def test_empty_values():
    a = (Box(0, 0, 1, 1),)
    for d in (IOU, GIOU, get_distance("boxes.l2")):
        assert d((), ()) == 0.0
        assert d(a, ()) == 1.0 and d((), a) == 1.0
    assert get_distance("boxes.count")((), a + a) == 2.0


def test_combinators_by_hand():
    a = (Box(0, 0, 2, 2, label="car"), Box(10, 10, 1, 1, label="car"))
    b = (Box(0, 0, 2, 2, label="car"),)
    # best scores: A -> [1, 0], B -> [1]
    assert IOU(a, b) == pytest.approx(1 - 2 / 3)  # pooled
    assert BoxDistance("iou", combine="directional")(a, b) == pytest.approx(1 - (0.5 + 1) / 2)
    assert BoxDistance("iou", combine="hungarian")(a, b) == pytest.approx(1 - 2 * 1 / 3)
    # Hungarian differs from best-match when two boxes want the same partner
    c = (Box(0, 0, 2, 2, label="car"), Box(0, 0, 2, 2, label="car"))
    assert IOU(c, b) == pytest.approx(0.0)
    assert BoxDistance("iou", combine="hungarian")(c, b) == pytest.approx(1 - 2 / 3)


def test_labels_strict_or_ignored():
    a, b = (Box(0, 0, 2, 2, label="car"),), (Box(0, 0, 2, 2, label="bus"),)
    assert IOU(a, b) == 1.0
    assert BoxDistance("iou", labels="ignore")(a, b) == pytest.approx(0.0)


def test_l2_as_in_paper_appendix():
    a, b = (Box(0, 0, 10, 10),), (Box(3, 4, 10, 10),)
    # both corners moved by (3, 4): RMSE = sqrt((9 + 16) / 2) each
    rmse = math.sqrt(12.5)
    assert get_distance("boxes.l2")(a, b) == pytest.approx((2 * rmse) / 20)


def test_bad_value_names_value_and_object():
    with pytest.raises(ValueError, match=r"value #1, object #0 is dict"):
        IOU.pairs([(Box(0, 0, 1, 1),), ({"x": 1},)], [0], [1])


def test_batch_equals_one_by_one():
    rng = np.random.default_rng(0)
    values = [tuple(Box(*rng.uniform(0, 50, 2), *rng.uniform(1, 30, 2), rotation=rng.choice([0, 0, 20]),
                        label=rng.choice(["a", "b"])) for _ in range(rng.integers(0, 5))) for _ in range(40)]
    i, j = rng.integers(0, 40, 300), rng.integers(0, 40, 300)
    for d in (IOU, GIOU, BoxDistance("iou", combine="hungarian"), BoxDistance("giou", combine="directional")):
        batch = d.pairs(values, i, j)
        single = [d(values[x], values[y]) for x, y in zip(i, j)]
        np.testing.assert_allclose(batch, single, atol=1e-12)


# sizes are 0 or at least 1e-6: below that shapely's rotated areas are float noise and the
# reference below stops being symmetric (a vs b and b vs a disagree), not the code under test
size = st.one_of(st.just(0.0), st.floats(1e-6, 40))
boxes = st.builds(Box, st.floats(-50, 50), st.floats(-50, 50), size, size,
                  st.sampled_from([0.0, 0.0, 15.0, 45.0, 90.0, -30.0]), st.sampled_from(["a", "b"]))
box_sets = st.lists(boxes, max_size=4).map(tuple)


@settings(max_examples=60, deadline=None)
@given(box_sets, box_sets)
def test_bounds_symmetry_identity(a, b):
    for d in (IOU, GIOU, get_distance("boxes.l2"), BoxDistance("giou", combine="hungarian")):
        x, y = d(a, b), d(b, a)
        assert 0.0 <= x <= 1.0
        assert x == pytest.approx(y, abs=1e-9)
        assert d(a, a) == pytest.approx(0.0, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.lists(boxes, min_size=1, max_size=3).map(tuple), st.lists(boxes, min_size=1, max_size=3).map(tuple))
def test_pooled_iou_against_shapely_brute_force(a, b):
    def iou(p, q):
        if p.label != q.label:
            return 0.0
        pp, qq = shapely_box(p), shapely_box(q)
        u = pp.union(qq).area
        if u == 0:
            return float(np.allclose(p.corners(), q.corners()))
        return pp.intersection(qq).area / u
    best = [max(iou(p, q) for q in b) for p in a] + [max(iou(q, p) for p in a) for q in b]
    assert IOU(a, b) == pytest.approx(1 - np.mean(best), abs=1e-7)


def test_paper_giou_pools_best_matches_floored_at_zero():
    """Paper 000's multi-box GIoU: every box's best GIoU in the other set, floored at 0, pooled."""
    a = (Box(0, 0, 2, 2), Box(10, 0, 2, 2))
    b = (Box(1, 1, 2, 2),)
    g_near = 1 / 7 - (9 - 7) / 9            # (0,0,2,2) vs (1,1,2,2): negative GIoU
    hull_far = 11 * 3                        # (10,0,2,2) vs (1,1,2,2): enclosing box x 1..12, y 0..3
    g_far = 0 - (hull_far - 8) / hull_far
    best_a = [max(g_near, 0.0), max(g_far, 0.0)]
    best_b = [max(max(g_near, g_far), 0.0)]
    assert GIOU(a, b) == pytest.approx(1 - np.mean(best_a + best_b), abs=1e-12)
    graded = [(1 + g_near) / 2, (1 + g_far) / 2, (1 + max(g_near, g_far)) / 2]
    assert GRADED(a, b) == pytest.approx(1 - np.mean(graded), abs=1e-12)


def test_both_giou_forms_are_auto_candidates():
    from ls_agreement.metrics import candidates
    assert {"boxes.giou", "boxes.giou_graded"} <= set(candidates("boxes"))

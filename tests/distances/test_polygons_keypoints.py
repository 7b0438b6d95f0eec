"""Polygons (shapely IoU, repairs) and keypoints (COCO OKS by hand, box IoU, count)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ls_agreement.metrics.distances import get_distance
from ls_agreement.metrics.distances.keypoints import KeypointDistance
from ls_agreement.metrics.model import Box, Keypoint, Polygon

PIOU = get_distance("polygons.iou")


def test_polygon_iou_by_hand():
    sq = Polygon(((0, 0), (2, 0), (2, 2), (0, 2)))
    tri = Polygon(((0, 0), (2, 0), (0, 2)))  # half the square
    assert PIOU((sq,), (tri,)) == pytest.approx(0.5)
    assert PIOU((sq,), (sq,)) == 0.0
    assert PIOU((), ()) == 0.0 and PIOU((sq,), ()) == 1.0


def test_polygon_equals_box_iou_for_rectangles():
    a, b = Box(0, 0, 4, 3), Box(1, 1, 4, 3)
    pa, pb = Polygon(a.corners()), Polygon(b.corners())
    assert PIOU((pa,), (pb,)) == pytest.approx(get_distance("boxes.iou")((a,), (b,)), abs=1e-12)


def test_invalid_polygons_are_repaired_with_a_warning_not_a_crash():
    bowtie = Polygon(((0, 0), (2, 2), (2, 0), (0, 2)))  # self-intersecting: two triangles of area 1
    sq = Polygon(((0, 0), (2, 0), (2, 2), (0, 2)))
    line = Polygon(((0, 0), (1, 1)))
    with pytest.warns(RuntimeWarning, match="value #0 object #0 was invalid"):
        d = PIOU((bowtie,), (sq,))
    assert d == pytest.approx(1 - 2 / 4)
    with pytest.warns(RuntimeWarning, match="distinct point"):
        assert PIOU((line,), (sq,)) == 1.0


def test_keypoint_oks_as_coco_by_hand():
    # COCO: ks_i = exp(-d_i^2 / (2 s^2 k_i^2)), k_i = 2 sigma_i, OKS = mean ks over keypoints
    sig = {"nose": 0.026, "left_eye": 0.025, "left_hip": 0.107}
    area = 900.0
    a = (Keypoint(10, 10, "nose"), Keypoint(12, 9, "left_eye"), Keypoint(11, 30, "left_hip"))
    b = (Keypoint(11, 10, "nose"), Keypoint(12, 11, "left_eye"), Keypoint(14, 34, "left_hip"))
    d2 = {"nose": 1.0, "left_eye": 4.0, "left_hip": 25.0}
    oks = np.mean([math.exp(-d2[k] / (2 * area * (2 * sig[k]) ** 2)) for k in sig])
    dist = KeypointDistance(sigmas=sig, area=area)
    assert dist(a, b) == pytest.approx(1 - oks, abs=1e-12)
    # derived scale: mean area of the two keypoint bounding boxes
    box_a, box_b = (12 - 10) * (30 - 9), (14 - 11) * (34 - 10)
    s2 = (box_a + box_b) / 2
    oks2 = np.mean([math.exp(-d2[k] / (2 * s2 * (2 * sig[k]) ** 2)) for k in sig])
    assert KeypointDistance(sigmas=sig, min_area=1.0)(a, b) == pytest.approx(1 - oks2, abs=1e-12)
    # a keypoint only one annotator placed scores 0 on both sides of the pooled mean
    assert dist(a, b[:2]) == pytest.approx(1 - (2 * oks * 3 - 2 * math.exp(-25 / (2 * area * 0.214 ** 2))) / 5
                                          , abs=1e-12)


def test_keypoint_box_iou_and_count():
    a = (Keypoint(0, 0), Keypoint(2, 2))
    b = (Keypoint(1, 1), Keypoint(3, 3))
    assert get_distance("keypoints.iou")(a, b) == pytest.approx(1 - 1 / 7)
    assert get_distance("keypoints.iou")((Keypoint(1, 1),), (Keypoint(1, 1),)) == 0.0
    assert get_distance("keypoints.iou")((Keypoint(1, 1),), ()) == 1.0
    assert get_distance("keypoints.count")(a, b[:1]) == 1.0


points = st.lists(st.builds(Keypoint, st.floats(0, 100), st.floats(0, 100), st.sampled_from(["a", "b", "c"])),
                  max_size=4).map(tuple)


@settings(max_examples=50, deadline=None)
@given(points, points)
def test_keypoint_bounds_and_symmetry(a, b):
    for d in (get_distance("keypoints.oks"), get_distance("keypoints.iou")):
        assert 0.0 <= d(a, b) <= 1.0
        assert d(a, b) == pytest.approx(d(b, a), abs=1e-12)
        assert d(a, a) == pytest.approx(0.0, abs=1e-12)


polys = st.lists(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=3, max_size=6)
                 .map(lambda p: Polygon(tuple(p))), max_size=3).map(tuple)


@settings(max_examples=50, deadline=None)
@given(polys, polys)
def test_polygon_bounds_and_symmetry_even_for_invalid_shapes(a, b):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        x, y = PIOU(a, b), PIOU(b, a)
    assert 0.0 <= x <= 1.0 and x == pytest.approx(y, abs=1e-9)

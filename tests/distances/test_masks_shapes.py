"""Masks (pixel IoU per label), ellipses (shapely IoU) and curves (chamfer), against brute force.

References: full boolean pixel arrays in numpy for masks; ellipses rasterised on a fine grid
(their defining inequality, independent of the polygon construction); curves sampled
densely and measured by numpy point-to-segment distances.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ls_agreement.metrics.distances import get_distance
from ls_agreement.metrics.distances.curves import curve_similarity_matrix
from ls_agreement.metrics.distances.ellipses import ellipse_similarity_matrix
from ls_agreement.metrics.distances.masks import MaskDistance, mask_similarity_matrix
from ls_agreement.metrics.mask_runs import array_from_runs, canonical_runs, runs_from_array, unpack_runs
from ls_agreement.metrics.model import Curve, Ellipse, Mask

MIOU = get_distance("masks.iou")
EIOU = get_distance("ellipses.iou")
CHAMFER = get_distance("curves.chamfer")


# -- masks ------------------------------------------------------------------------------

def _random_array(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    kind = rng.integers(3)
    if kind == 0:
        return rng.random((h, w)) < rng.uniform(0.05, 0.9)
    a = np.zeros((h, w), dtype=bool)
    for _ in range(int(rng.integers(0, 4))):
        y, x = rng.integers(0, h), rng.integers(0, w)
        a[y: y + rng.integers(1, h + 1), x: x + rng.integers(1, w + 1)] = True
    return a


def test_runs_round_trip_and_canonical_form():
    rng = np.random.default_rng(0)
    for _ in range(200):
        h, w = (int(v) for v in rng.integers(1, 30, 2))
        a = _random_array(rng, h, w)
        runs = runs_from_array(a)
        assert np.array_equal(array_from_runs(runs, h, w), a)
        m = Mask.from_array(a, "x")
        assert m.area == int(a.sum()) and np.array_equal(m.to_array(), a)
        # the same pixels as single-pixel pieces, some twice, in reverse order: same runs
        on = np.flatnonzero(a.ravel())
        s = np.concatenate([on, on[: on.size // 2]])
        e = s + 1
        starts, lengths = canonical_runs(s[::-1], e[::-1], w)
        assert np.array_equal(np.frombuffer(runs, "<u4").reshape(-1, 2)[:, 0], starts)
        assert np.array_equal(np.frombuffer(runs, "<u4").reshape(-1, 2)[:, 1], lengths)


def test_runs_never_cross_a_row_and_equal_masks_hash_equal():
    a = np.ones((3, 4), dtype=bool)
    s, n = unpack_runs(runs_from_array(a))
    assert s.tolist() == [0, 4, 8] and n.tolist() == [4, 4, 4]
    assert Mask.from_array(a, "x") == Mask(3, 4, runs_from_array(a), "x")
    assert len({Mask.from_array(a, "x"), Mask.from_array(a.copy(), "x")}) == 1


@pytest.mark.parametrize("runs, why", [
    (np.array([[0, 5]], "<u4").tobytes(), "crosses the end of its row"),
    (np.array([[0, 2], [1, 2]], "<u4").tobytes(), "sorted, disjoint"),
    (np.array([[0, 1], [1, 1]], "<u4").tobytes(), "merged within a row"),
    (np.array([[0, 0]], "<u4").tobytes(), "positive lengths"),
    (np.array([[12, 1]], "<u4").tobytes(), "past the"),
    (b"\x00" * 5, "pairs"),
])
def test_mask_refuses_non_canonical_runs(runs, why):
    with pytest.raises(ValueError, match=why):
        Mask(3, 4, runs)


def _brute_mask_distance(a: tuple, b: tuple, pooling: str) -> float:
    masks = a + b
    h = max([m.height for m in masks] + [1])
    w = max([m.width for m in masks] + [1])

    def pixels(value: tuple, label) -> np.ndarray:
        out = np.zeros((h, w), dtype=bool)
        for m in value:
            if m.label == label:
                out[: m.height, : m.width] |= m.to_array()
        return out

    inter, union = [], []
    for label in {m.label for m in masks}:
        pa, pb = pixels(a, label), pixels(b, label)
        inter.append((pa & pb).sum())
        union.append((pa | pb).sum())
    inter_a, union_a = np.array(inter, float), np.array(union, float)
    if pooling == "pooled":
        return 0.0 if union_a.sum() == 0 else 1.0 - inter_a.sum() / union_a.sum()
    on = union_a > 0
    return 0.0 if not on.any() else 1.0 - float(np.mean(inter_a[on] / union_a[on]))


@pytest.mark.parametrize("pooling", ["pooled", "mean"])
def test_mask_iou_per_label_equals_brute_force_on_full_bitmaps(pooling):
    rng = np.random.default_rng(1 if pooling == "pooled" else 2)
    values = []
    for _ in range(45):
        h, w = (int(v) for v in rng.integers(2, 16, 2))
        n = int(rng.integers(0, 4))
        # several masks of one label in a value are one pixel set; sizes differ across values
        values.append(tuple(Mask.from_array(_random_array(rng, h, w), ["car", "sky", None][rng.integers(3)])
                            for _ in range(n)))
    i, j = np.triu_indices(len(values), 1)
    got = MaskDistance(pooling).pairs(values, i, j)
    want = np.array([_brute_mask_distance(values[a], values[b], pooling) for a, b in zip(i, j)])
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_mask_iou_by_hand():
    a = np.zeros((4, 4), dtype=bool)
    a[:2, :2] = True                                     # 4 pixels
    b = np.zeros((4, 4), dtype=bool)
    b[1:3, 1:3] = True                                   # 4 pixels, 1 shared
    ma, mb = Mask.from_array(a, "x"), Mask.from_array(b, "x")
    assert MIOU((ma,), (mb,)) == pytest.approx(1 - 1 / 7)
    assert MIOU((ma,), (Mask.from_array(b, "y"),)) == 1.0          # other label: nothing shared
    assert MIOU((), ()) == 0.0 and MIOU((ma,), ()) == 1.0
    empty = Mask(4, 4, b"", "x")
    assert MIOU((empty,), (empty,)) == 0.0                         # nothing marked by either
    # pooled: (1 + 4) / (7 + 4); mean: (1/7 + 1) / 2
    two_a = (ma, Mask.from_array(a, "y"))
    two_b = (mb, Mask.from_array(a, "y"))
    assert MIOU(two_a, two_b) == pytest.approx(1 - 5 / 11)
    assert get_distance("masks.miou")(two_a, two_b) == pytest.approx(1 - (1 / 7 + 1) / 2)
    assert get_distance("masks.count")(two_a, (mb,)) == 1.0


def test_mask_similarity_matrix_is_label_agnostic_pixel_iou():
    rng = np.random.default_rng(3)
    a = [Mask.from_array(_random_array(rng, 9, 7), "p") for _ in range(4)]
    b = [Mask.from_array(_random_array(rng, 6, 11), "q") for _ in range(3)] + [Mask(5, 5, b"", "q")]
    got = mask_similarity_matrix(a, b)
    assert got.shape == (4, 4)
    for r, ma in enumerate(a):
        for c, mb in enumerate(b):
            pa, pb = np.zeros((9, 11), bool), np.zeros((9, 11), bool)
            pa[: ma.height, : ma.width] = ma.to_array()
            pb[: mb.height, : mb.width] = mb.to_array()
            union = (pa | pb).sum()
            assert got[r, c] == pytest.approx((pa & pb).sum() / union if union else 0.0, abs=1e-12)
    assert mask_similarity_matrix([], b).shape == (0, 4)
    with pytest.raises(ValueError, match="is not a Mask"):
        mask_similarity_matrix(a, [Ellipse(1, 1, 1, 1)])


def test_masks_of_many_values_in_chunks():
    # more run queries than one chunk holds: the chunked loop must give the same sums
    from ls_agreement.metrics.distances import masks as masks_mod

    rng = np.random.default_rng(4)
    values = [(Mask.from_array(rng.random((40, 40)) < 0.5, "x"),) for _ in range(12)]
    i, j = np.triu_indices(12, 1)
    want = MaskDistance().pairs(values, i, j)
    old = masks_mod._CHUNK
    masks_mod._CHUNK = 500
    try:
        got = MaskDistance().pairs(values, i, j)
    finally:
        masks_mod._CHUNK = old
    np.testing.assert_array_equal(got, want)


# -- ellipses ---------------------------------------------------------------------------

def _raster(e: Ellipse, grid: np.ndarray) -> np.ndarray:
    """Pixels (cell centres of ``grid``) inside ``e``: its defining inequality, rotation
    clockwise on screen with y down."""
    xx, yy = np.meshgrid(grid, grid)
    t = math.radians(e.rotation)
    dx, dy = xx - e.x, yy - e.y
    u = dx * math.cos(t) + dy * math.sin(t)        # back into the ellipse's own axes
    v = -dx * math.sin(t) + dy * math.cos(t)
    return (u / e.radius_x) ** 2 + (v / e.radius_y) ** 2 <= 1.0


def test_ellipse_iou_equals_rasterised_brute_force():
    rng = np.random.default_rng(5)
    grid = (np.arange(1600) + 0.5) / 1600 * 100
    for _ in range(12):
        a = Ellipse(*rng.uniform(30, 70, 2), *rng.uniform(5, 20, 2), rng.uniform(0, 360), "e")
        b = Ellipse(a.x + rng.normal(0, 4), a.y + rng.normal(0, 4), *rng.uniform(5, 20, 2), rng.uniform(0, 360), "e")
        ra, rb = _raster(a, grid), _raster(b, grid)
        want = (ra & rb).sum() / (ra | rb).sum()
        assert 1 - EIOU((a,), (b,)) == pytest.approx(want, abs=4e-3)
        assert ellipse_similarity_matrix([a], [b])[0, 0] == pytest.approx(want, abs=4e-3)


def test_ellipse_rotation_is_about_the_centre_and_clockwise():
    a = Ellipse(50, 50, 30, 10, 90, "e")
    assert EIOU((a,), (Ellipse(50, 50, 10, 30, 0, "e"),)) == pytest.approx(0.0, abs=1e-9)
    # 30 degrees clockwise on screen (y down) tilts the long axis towards +y at +x
    tilted = Ellipse(50, 50, 30, 2, 30, "e")
    grid = (np.arange(400) + 0.5) / 400 * 100
    r = _raster(tilted, grid)
    assert r[np.searchsorted(grid, 50 + 20 * math.sin(math.radians(30))),
             np.searchsorted(grid, 50 + 20 * math.cos(math.radians(30)))]
    assert EIOU((tilted,), (Ellipse(50, 50, 30, 2, -30, "e"),)) > 0.5    # not the mirror image
    assert EIOU((a,), (a,)) == 0.0 and EIOU((), ()) == 0.0 and EIOU((a,), ()) == 1.0
    assert EIOU((a,), (Ellipse(50, 50, 30, 10, 90, "f"),)) == 1.0        # labels strict
    assert get_distance("ellipses.count")((a, a), (a,)) == 1.0


def test_zero_radius_ellipse_is_empty_not_an_error():
    flat = Ellipse(10, 10, 0, 5)
    assert EIOU((flat,), (Ellipse(10, 10, 3, 5),)) == 1.0


# -- curves -----------------------------------------------------------------------------

def _seg_dist(p: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """Distance from points p (n, 2) to the nearest of segments seg (m, 2, 2), shape (n,)."""
    a, b = seg[:, 0][None], seg[:, 1][None]
    ab = b - a
    den = (ab ** 2).sum(-1)
    t = np.clip(np.where(den > 0, ((p[:, None] - a) * ab).sum(-1) / np.where(den > 0, den, 1), 0), 0, 1)
    return np.hypot(*(p[:, None] - (a + t[..., None] * ab)).transpose(2, 0, 1)).min(1)


def _dense(c: Curve, n: int = 4000) -> np.ndarray:
    seg = np.array([(c.points[i], c.points[j]) for i, j in c.segments()], dtype=float)
    length = np.hypot(*(seg[:, 1] - seg[:, 0]).T)
    t = (np.arange(n) + 0.5) / n * length.sum()
    k = np.minimum(np.searchsorted(np.cumsum(length), t, side="right"), len(seg) - 1)
    f = (t - (np.cumsum(length)[k] - length[k])) / length[k]
    return seg[k, 0] + f[:, None] * (seg[k, 1] - seg[k, 0])


def _brute_chamfer_similarity(a: Curve, b: Curve) -> float:
    sa = np.array([(a.points[i], a.points[j]) for i, j in a.segments()], dtype=float)
    sb = np.array([(b.points[i], b.points[j]) for i, j in b.segments()], dtype=float)
    c = (_seg_dist(_dense(a), sb).mean() + _seg_dist(_dense(b), sa).mean()) / 2
    diag = [np.hypot(*np.ptp(np.array(x.points, float), axis=0)) for x in (a, b)]
    return max(0.0, 1.0 - 2 * c / np.mean(diag))


def test_curve_chamfer_equals_dense_brute_force():
    rng = np.random.default_rng(6)
    for k in range(15):
        n = int(rng.integers(2, 7))
        pa = rng.uniform(0, 100, (n, 2))
        pb = pa + rng.normal(0, 6, (n, 2))
        a = Curve(tuple(map(tuple, pa)), closed=bool(k % 2), label="l")
        b = Curve(tuple(map(tuple, pb)), closed=bool(k % 3 == 0), label="l")
        want = _brute_chamfer_similarity(a, b)
        assert 1 - CHAMFER((a,), (b,)) == pytest.approx(want, abs=0.01)
        assert curve_similarity_matrix([a], [b])[0, 0] == pytest.approx(want, abs=0.01)


def test_curve_chamfer_by_hand_and_invariances():
    line = Curve(((0, 0), (100, 0)), label="l")
    shifted = Curve(((0, 10), (100, 10)), label="l")
    # every point 10 away, size = mean diagonal 100: similarity 1 - 2 * 10 / 100
    assert CHAMFER((line,), (shifted,)) == pytest.approx(0.2, abs=1e-12)
    big = Curve(((0, 0), (1000, 0)), label="l")
    big_shifted = Curve(((7, 100), (1007, 100)), label="l")
    small_shifted = Curve(((0.7, 10), (100.7, 10)), label="l")
    assert CHAMFER((big,), (big_shifted,)) == pytest.approx(CHAMFER((line,), (small_shifted,)), abs=1e-9)
    far = Curve(((0, 51), (100, 51)), label="l")
    assert CHAMFER((line,), (far,)) == 1.0
    assert CHAMFER((line,), (Curve(((100, 0), (0, 0)), label="l"),)) == pytest.approx(0.0, abs=1e-12)
    assert CHAMFER((line,), (Curve(((0, 0), (100, 0)), label="m"),)) == 1.0
    point = Curve(((5, 5),), label="l")
    assert CHAMFER((point,), (point,)) == 0.0
    assert CHAMFER((point,), (Curve(((6, 5),), label="l"),)) == 1.0
    assert get_distance("curves.count")((line, far), (line,)) == 1.0


def test_skeleton_branches_count_as_curve_length():
    # a T: the stem must be matched too, not only the bar
    t_shape = Curve(((0, 0), (50, 0), (100, 0), (50, 50)), edges=((0, 1), (1, 2), (1, 3)), label="s")
    bar = Curve(((0, 0), (100, 0)), label="s")
    want = _brute_chamfer_similarity(t_shape, bar)
    assert 1 - CHAMFER((t_shape,), (bar,)) == pytest.approx(want, abs=0.01)
    # the stem (a third of the length) is on average 25 from the bar: C = 25 / 3 / 2
    assert want == pytest.approx(1 - 2 * (25 / 3 / 2) / ((100 + math.hypot(100, 50)) / 2), abs=2e-3)
    assert CHAMFER((t_shape,), (t_shape,)) == 0.0


def test_curve_model_checks_edges():
    with pytest.raises(ValueError, match="outside"):
        Curve(((0, 0), (1, 1)), edges=((0, 2),))
    with pytest.raises(ValueError, match="at least one point"):
        Curve(())
    assert Curve(((0, 0), (1, 0), (1, 1)), closed=True).segments() == ((0, 1), (1, 2), (2, 0))
    assert Curve(((0, 0), (1, 0)), closed=True).segments() == ((0, 1),)


# -- shared properties ------------------------------------------------------------------

_mask_values = st.lists(
    st.builds(lambda bits, lab: Mask.from_array(np.array(bits, dtype=bool).reshape(3, 4), lab),
              st.lists(st.booleans(), min_size=12, max_size=12), st.sampled_from(["a", "b"])),
    max_size=3).map(tuple)
_ellipses = st.lists(st.builds(Ellipse, st.floats(0, 50), st.floats(0, 50), st.floats(0.5, 20), st.floats(0.5, 20),
                               st.floats(0, 360), st.sampled_from(["a", "b"])), max_size=3).map(tuple)
_curves = st.lists(st.builds(lambda pts, lab: Curve(tuple(pts), label=lab),
                             st.lists(st.tuples(st.floats(0, 50), st.floats(0, 50)), min_size=1, max_size=5),
                             st.sampled_from(["a", "b"])), max_size=3).map(tuple)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([("masks.iou", _mask_values), ("masks.miou", _mask_values), ("ellipses.iou", _ellipses),
                        ("curves.chamfer", _curves)]).flatmap(
    lambda ns: st.tuples(st.just(ns[0]), ns[1], ns[1])))
def test_bounds_symmetry_identity(case):
    name, a, b = case
    d = get_distance(name)
    x, y = d(a, b), d(b, a)
    assert 0.0 <= x <= 1.0 and x == pytest.approx(y, abs=1e-9)
    assert d(a, a) == pytest.approx(0.0, abs=1e-9)

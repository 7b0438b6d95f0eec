"""Region matching, relation distances and per-region answer distances against brute force.

References are computed here independently: IoU with shapely's own geometry, span IoU and
COCO's ks from their definitions, and the best one-to-one matching by trying every
matching (itertools.permutations) instead of the Hungarian algorithm.
"""
from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
import shapely

from ls_agreement.metrics.distances.attributes import AttributeDistance
from ls_agreement.metrics.distances.region_match import similarity_matrix
from ls_agreement.metrics.distances.registry import KINDS, candidates, get_distance
from ls_agreement.metrics.distances.relations import RelationDistance
from ls_agreement.metrics.model import Attributed, Box, Keypoint, Polygon, Relation, Span


# -- independent references ------------------------------------------------------------------

def _shape(r):
    if isinstance(r, Box):
        return shapely.Polygon(r.corners())
    return shapely.Polygon(r.points)


def ref_similarity(a, b) -> float:
    """Region similarity from the definitions (docs/formulas.md)."""
    if isinstance(a, (Box, Polygon)) and isinstance(b, (Box, Polygon)):
        sa, sb = _shape(a), _shape(b)
        union = sa.union(sb).area
        return sa.intersection(sb).area / union if union > 0 else 0.0
    if isinstance(a, Span) and isinstance(b, Span):
        inter = max(0, min(a.end, b.end) - max(a.start, b.start))
        union = (a.end - a.start) + (b.end - b.start) - inter
        return inter / union if union > 0 else float((a.start, a.end) == (b.start, b.end))
    return 0.0


def best_matching(sim: np.ndarray) -> list[tuple[int, int]]:
    """The one-to-one matching with the largest total similarity, by trying them all."""
    na, nb = sim.shape
    best, best_total = [], -1.0
    if na <= nb:
        for cols in itertools.permutations(range(nb), na):
            total = sum(sim[r, c] for r, c in enumerate(cols))
            if total > best_total + 1e-12:
                best, best_total = list(enumerate(cols)), total
    else:
        for rows in itertools.permutations(range(na), nb):
            total = sum(sim[r, c] for c, r in enumerate(rows))
            if total > best_total + 1e-12:
                best, best_total = [(r, c) for c, r in enumerate(rows)], total
    return best


def token_levenshtein(a: str, b: str) -> float:
    x, y = a.split(), b.split()
    d = list(range(len(y) + 1))
    for i, tx in enumerate(x, 1):
        prev, d[0] = d[0], i
        for j, ty in enumerate(y, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (tx != ty))
    longest = max(len(x), len(y))
    return d[-1] / longest if longest else 0.0


def ref_attributes(A, B, answer: str) -> float:
    if not A and not B:
        return 0.0
    if not A or not B:
        return 1.0
    sim = np.array([[ref_similarity(a.region, b.region) for b in B] for a in A])
    if answer == "nominal":
        dist = lambda x, y: float(x != y)
    elif answer == "levenshtein":
        dist = token_levenshtein
    elif answer == "jaccard":
        dist = lambda x, y: 1 - len(x & y) / len(x | y) if x | y else 0.0
    else:   # interval: scaled by the range of the answers compared
        vals = [a.value for a in A] + [b.value for b in B]
        span = max(vals) - min(vals)
        dist = lambda x, y: abs(x - y) / span if span else 0.0
    credit = sum(sim[r, c] * (1 - dist(A[r].value, B[c].value)) for r, c in best_matching(sim))
    return 1 - credit / max(len(A), len(B))


def ref_relations(A, B, variant: str, threshold: float = 0.5) -> float:
    ta = {(r.source, r.target, r.label, r.directed) for r in A}
    tb = {(r.source, r.target, r.label, r.directed) for r in B}
    if not ta and not tb:
        return 0.0
    if not ta or not tb:
        return 1.0
    ra = list(dict.fromkeys(x for t in ta for x in t[:2]))
    rb = list(dict.fromkeys(x for t in tb for x in t[:2]))
    sim = np.array([[ref_similarity(a, b) for b in rb] for a in ra])
    pairs = best_matching(sim)
    keep = {ra[r]: (rb[c], sim[r, c]) for r, c in pairs
            if (sim[r, c] > 0 if variant == "soft" else sim[r, c] >= threshold)}

    def same(t, u):
        if t[2] != u[2] or t[3] != u[3] or t[0] not in keep or t[1] not in keep:
            return False
        f, g = keep[t[0]][0], keep[t[1]][0]
        return (f, g) == u[:2] or (not t[3] and (g, f) == u[:2])

    shared = 0.0
    for t in ta:
        if any(same(t, u) for u in tb):
            shared += keep[t[0]][1] * keep[t[1]][1] if variant == "soft" else 1.0
    jac = shared / (len(ta) + len(tb) - shared)
    if variant != "masi" or jac in (0.0, 1.0):
        return 1 - jac
    return 1 - jac * (2 / 3 if shared >= min(len(ta), len(tb)) else 1 / 3)


# -- random small cases ----------------------------------------------------------------------

def rand_box(rng: random.Random) -> Box:
    return Box(rng.uniform(0, 20), rng.uniform(0, 20), rng.uniform(2, 12), rng.uniform(2, 12),
               rotation=rng.choice([0.0, 0.0, rng.uniform(0, 90)]))


def rand_region(rng: random.Random):
    k = rng.random()
    if k < 0.45:
        return rand_box(rng)
    if k < 0.65:
        b = rand_box(rng)
        return Polygon(tuple((x + rng.uniform(-0.5, 0.5), y) for x, y in Box(b.x, b.y, b.width, b.height).corners()))
    s = rng.randint(0, 30)
    return Span(s, s + rng.randint(0, 10))


def near(r, rng: random.Random):
    if isinstance(r, Box):
        return Box(r.x + rng.uniform(-1, 1), r.y + rng.uniform(-1, 1), r.width, r.height, r.rotation)
    if isinstance(r, Span):
        return Span(max(0, r.start + rng.randint(-1, 1)), r.end + 1)
    return r


# -- region matching ---------------------------------------------------------------------------

def test_similarity_matrix_against_shapely_and_definitions():
    rng = random.Random(3)
    for _ in range(40):
        a = [rand_region(rng) for _ in range(rng.randint(1, 4))]
        b = [near(x, rng) for x in a[: rng.randint(0, len(a))]] + [rand_region(rng) for _ in range(rng.randint(1, 3))]
        got = similarity_matrix(a, b)
        want = np.array([[ref_similarity(x, y) for y in b] for x in a])
        assert got.shape == (len(a), len(b))
        np.testing.assert_allclose(got, want, atol=1e-9)


def test_similarity_is_label_agnostic_and_keypoints_follow_coco_ks():
    a, b = Box(0, 0, 10, 10, label="cat"), Box(5, 0, 10, 10, label="dog")
    assert similarity_matrix([a], [b])[0, 0] == pytest.approx(50 / 150)
    p, q = Keypoint(0, 0, "eye"), Keypoint(3, 4, "eye")
    # one keypoint per value: zero-area extent, floored at 100; sigma 0.1 -> k = 0.2
    assert similarity_matrix([p], [q])[0, 0] == pytest.approx(math.exp(-25 / (2 * 100 * 0.04)))
    assert similarity_matrix([Span(0, 4)], [Box(0, 0, 4, 4)])[0, 0] == 0.0
    assert similarity_matrix([], [a]).shape == (0, 1)


def test_interval_regions_use_the_interval_module():
    intervals = pytest.importorskip("ls_agreement.metrics.distances.intervals")
    from ls_agreement.metrics.model import Interval

    a = [Interval(0.0, 2.0), Interval(5.0, 5.0)]
    b = [Interval(1.0, 3.0), Interval(5.5, 5.5), Interval(9.0, 10.0)]
    np.testing.assert_allclose(similarity_matrix(a, b), intervals.interval_similarity_matrix(a, b))
    assert similarity_matrix(a, b)[0, 0] == pytest.approx(1 / 3)


# -- per-region answers ------------------------------------------------------------------------

def _attributed(rng: random.Random, regions, answer: str):
    out = []
    for r in regions:
        if answer == "nominal":
            v = rng.choice("xyz")
        elif answer == "levenshtein":
            v = " ".join(rng.choice(["a", "b", "c", "d"]) for _ in range(rng.randint(1, 4)))
        elif answer == "jaccard":
            v = frozenset(rng.sample("xyz", rng.randint(1, 2)))
        else:
            v = rng.randint(1, 5)
        out.append(Attributed(r, v))
    return tuple(out)


@pytest.mark.parametrize("answer", ["nominal", "levenshtein", "jaccard", "interval"])
def test_attribute_distance_equals_brute_force(answer):
    rng = random.Random(11)
    dist = get_distance(f"attributes.{answer}")
    for _ in range(60):
        regions = [rand_region(rng) for _ in range(rng.randint(0, 4))]
        A = _attributed(rng, regions, answer)
        B = _attributed(rng, [near(r, rng) for r in regions[: rng.randint(0, len(regions))]]
                        + [rand_region(rng) for _ in range(rng.randint(0, 2))], answer)
        assert dist(A, B) == pytest.approx(ref_attributes(A, B, answer), abs=1e-9)
        assert dist(A, B) == pytest.approx(dist(B, A), abs=1e-12)
        assert dist(A, A) == pytest.approx(0.0, abs=1e-12)


def test_attribute_distance_is_blind_to_drawing_order():
    rng = random.Random(5)
    dist = AttributeDistance("nominal")
    for _ in range(30):
        A = _attributed(rng, [rand_region(rng) for _ in range(4)], "nominal")
        B = tuple(Attributed(near(x.region, rng), x.value if rng.random() < 0.7 else "w") for x in A)
        shuffled = list(B)
        rng.shuffle(shuffled)
        assert dist(A, tuple(shuffled)) == pytest.approx(dist(A, B), abs=1e-12)


def test_attribute_distance_hand_example():
    b1, b2, b3 = Box(0, 0, 10, 10), Box(20, 20, 10, 10), Box(50, 50, 5, 5)
    A = (Attributed(b1, "x"), Attributed(b2, "y"))
    C = (Attributed(b2, "x"), Attributed(b1, "x"), Attributed(b3, "z"))
    # b1-b1 agree (1), b2-b2 disagree (0), b3 unmatched: 1 - 1/3
    assert get_distance("attributes.nominal")(A, C) == pytest.approx(2 / 3)
    assert get_distance("attributes.nominal")((), ()) == 0.0
    assert get_distance("attributes.nominal")(A, ()) == 1.0


def test_attribute_distance_batch_equals_pairwise_calls():
    rng = random.Random(8)
    values = [_attributed(rng, [rand_region(rng) for _ in range(rng.randint(0, 3))], "nominal") for _ in range(25)]
    dist = get_distance("attributes.nominal")
    i, j = np.triu_indices(len(values), 1)
    batch = dist.pairs(values, i, j)
    one_by_one = [ref_attributes(values[a], values[b], "nominal") for a, b in zip(i, j)]
    np.testing.assert_allclose(batch, one_by_one, atol=1e-9)


def test_attribute_distance_refuses_other_values():
    with pytest.raises(ValueError, match="expected Attributed"):
        get_distance("attributes.nominal")((Box(0, 0, 1, 1),), ())
    with pytest.raises(ValueError, match="numeric"):
        get_distance("attributes.interval")((Attributed(Span(0, 1), "a"),), (Attributed(Span(0, 1), "b"),))


# -- relations -----------------------------------------------------------------------------------

def _relations(rng: random.Random, regions, n: int):
    out = []
    for _ in range(n):
        a, b = rng.sample(regions, 2)
        out.append(Relation(a, b, rng.choice(["r", "s", None]), rng.random() < 0.8))
    return tuple(out)


@pytest.mark.parametrize("variant", ["jaccard", "masi", "soft"])
def test_relation_distance_equals_brute_force(variant):
    rng = random.Random(21)
    dist = RelationDistance(variant)
    for _ in range(60):
        regions = [rand_region(rng) for _ in range(rng.randint(2, 4))]
        A = _relations(rng, regions, rng.randint(0, 4))
        moved = {r: near(r, rng) for r in regions}
        others = [moved[r] for r in regions] + [rand_region(rng)]
        B = tuple(Relation(moved[x.source], moved[x.target], x.label, x.directed)
                  for x in A if rng.random() < 0.7) + _relations(rng, others, rng.randint(0, 2))
        assert dist(A, B) == pytest.approx(ref_relations(A, B, variant), abs=1e-9)
        assert dist(A, B) == pytest.approx(dist(B, A), abs=1e-12)
        assert dist(A, A) == 0.0


def test_relation_direction_and_hand_examples():
    b1, b2, b3 = Box(0, 0, 10, 10), Box(20, 20, 10, 10), Box(50, 50, 5, 5)
    d = get_distance("relations.jaccard")
    # an undirected relation is the same both ways round; a directed one is not
    assert d((Relation(b1, b2, "r", False),), (Relation(b2, b1, "r", False),)) == 0.0
    assert d((Relation(b1, b2, "r"),), (Relation(b2, b1, "r"),)) == 1.0
    assert d((Relation(b1, b2, "r"),), (Relation(b1, b2, "r", False),)) == 1.0
    # one of two shared: J = 1/2; MASI: one inside the other, 1 - 1/2 * 2/3
    A = (Relation(b1, b2, "r"), Relation(b2, b3, "q"))
    assert d(A, A[:1]) == pytest.approx(0.5)
    assert get_distance("relations.masi")(A, A[:1]) == pytest.approx(1 - 1 / 3)
    # regions moved so that IoU < 0.5: no longer the same regions
    far = Box(6, 0, 10, 10)   # IoU with b1 = 40/160
    assert d((Relation(b1, b2, "r"),), (Relation(far, b2, "r"),)) == 1.0
    assert get_distance("relations.soft")((Relation(b1, b2, "r"),), (Relation(far, b2, "r"),)) == \
        pytest.approx(1 - 0.25 / (2 - 0.25))


def test_registered_as_their_own_kinds():
    assert {"relations", "attributes"} <= set(KINDS)
    assert candidates("relations") == ["relations.jaccard", "relations.masi", "relations.soft"]
    assert "attributes.nominal" in candidates("attributes")
    assert get_distance("relations.jaccard").kind == "relations"
    assert get_distance("attributes.levenshtein").kind == "attributes"


def _external_examples():
    """Two lists of each region type the other distance modules define."""
    from ls_agreement.metrics import model

    out = []
    if hasattr(model, "Ellipse"):
        E = model.Ellipse
        out.append(("ellipses", "ellipse_similarity_matrix", [E(10, 10, 5, 3), E(40, 40, 4, 4)],
                    [E(11, 10, 5, 3, 10.0), E(80, 80, 2, 2)]))
    if hasattr(model, "Mask"):
        M = model.Mask
        a = np.zeros((8, 8), bool)
        a[1:4, 1:5] = True
        b = np.zeros((8, 8), bool)
        b[2:5, 1:5] = True
        out.append(("masks", "mask_similarity_matrix", [M.from_array(a)], [M.from_array(b), M.from_array(~b)]))
    if hasattr(model, "Curve"):
        C = model.Curve
        out.append(("curves", "curve_similarity_matrix", [C(((0, 0), (10, 0)))], [C(((0, 1), (10, 1))), C(((50, 50), (60, 60)))]))
    if hasattr(model, "Track"):
        T, K = model.Track, model.Keyframe
        out.append(("tracks", "track_similarity_matrix", [T((K(1, True, 0, 0, 10, 10), K(5, False, 4, 0, 10, 10)))],
                    [T((K(1, True, 1, 0, 10, 10), K(5, False, 5, 0, 10, 10))), T((K(3, True, 50, 50, 5, 5),))]))
    return out


@pytest.mark.parametrize("module, func, a, b", _external_examples())
def test_other_region_types_use_their_own_modules(module, func, a, b):
    """Each region type is matched by the similarity its own module defines."""
    mod = pytest.importorskip(f"ls_agreement.metrics.distances.{module}")
    want = np.asarray(getattr(mod, func)(a, b))
    np.testing.assert_allclose(similarity_matrix(a, b), want, atol=1e-9)
    # and a per-region answer on them: the best-matched pair carries the agreement
    A = tuple(Attributed(r, "x") for r in a)
    B = tuple(Attributed(r, "x") for r in b)
    best = best_matching(want)
    expected = 1 - sum(want[r, c] for r, c in best) / max(len(a), len(b))
    assert get_distance("attributes.nominal")(A, B) == pytest.approx(expected, abs=1e-9)

"""Video tracks: Label Studio's interpolation, the track similarity and the track-set distance.

References: frames computed by hand and Label Studio's own documented examples
(``utils/props.ts`` ``interpolateProp``); a loop-for-loop transcription of the editor's
``getShape`` / ``isInLifespan`` (Label Studio 1.23) evaluated frame by frame; shapely
boxes per frame and matching by trying every permutation (itertools) as the brute force
of the distance.
"""
from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
import shapely
from shapely import affinity

from ls_agreement.metrics.distances import get_distance
from ls_agreement.metrics.distances import tracks as tracks_mod
from ls_agreement.metrics.distances.registry import KINDS, candidates
from ls_agreement.metrics.distances.tracks import TrackDistance, track_similarity_matrix, visible_boxes
from ls_agreement.metrics.model import REGION_TYPES, Box, Keyframe, Track


def kf(frame, enabled, x, y, w, h, rot=0.0):
    return Keyframe(frame, enabled, x, y, w, h, rot)


# -- Label Studio's editor, transcribed (regions/VideoRectangleRegion.js, VideoRegion.js, utils/props.ts) --

def js_normalize_angle(angle: float) -> float:
    a = angle
    while a > 0:
        a -= 360
    return math.fmod(a - 180, 360) + 180   # JavaScript's % keeps the dividend's sign


def js_interpolate(start: Keyframe, end: Keyframe, frame: int, prop: str) -> float:
    r = (frame - start.frame) / (end.frame - start.frame)
    if prop == "rotation":
        d = js_normalize_angle(end.rotation - start.rotation)
        return js_normalize_angle(start.rotation + d * r)
    return getattr(start, prop) + (getattr(end, prop) - getattr(start, prop)) * r


PROPS = ("x", "y", "width", "height", "rotation")


def ls_get_shape(seq, frame):
    prev = nxt = None
    for item in seq:
        if item.frame == frame:
            return tuple(getattr(item, p) for p in PROPS)
        if item.frame > frame:
            nxt = item
            break
        prev = item
    if prev is None:
        return None
    if nxt is None:
        return tuple(getattr(prev, p) for p in PROPS)
    return tuple(js_interpolate(prev, nxt, frame, p) for p in PROPS)


def ls_in_lifespan(seq, frame):
    before = [k for k in seq if k.frame <= frame]
    kp = before[-1] if before else next((k for k in seq if k.frame >= frame), None)
    if kp is None:
        return False
    if kp.frame == frame and not kp.enabled:
        return True
    return kp.enabled


def ls_frames(track: Track, video_frames: int) -> dict[int, tuple]:
    """Frame -> box (x, y, w, h, rotation) the editor draws, over the video's frames 0..n."""
    out = {}
    for f in range(video_frames + 1):
        shape = ls_get_shape(track.keyframes, f)
        if shape is not None and ls_in_lifespan(track.keyframes, f):
            out[f] = shape
    return out


# -- interpolation -------------------------------------------------------------------------

def test_linear_interpolation_by_hand():
    t = Track((kf(1, True, 0, 0, 10, 10), kf(11, True, 10, 20, 20, 10)), end=15)
    frames, boxes = visible_boxes(t)
    assert frames.tolist() == list(range(1, 16))
    # frame 6 is halfway: x 5, y 10, width 15, height 10
    np.testing.assert_allclose(boxes[frames == 6][0], [5, 10, 15, 10, 0])
    np.testing.assert_allclose(boxes[frames == 3][0], [2, 4, 12, 10, 0])
    # after the last (enabled) keyframe its box holds up to the end of the video
    for f in (11, 13, 15):
        np.testing.assert_allclose(boxes[frames == f][0], [10, 20, 20, 10, 0])


def test_disabled_keyframe_ends_the_track_until_the_next():
    t = Track((kf(3, True, 0, 0, 4, 4), kf(6, False, 3, 0, 4, 4), kf(9, True, 8, 8, 2, 2)), end=12)
    frames, boxes = visible_boxes(t)
    # nothing before frame 3; frames 3..6 (6: the disabled keyframe's own box); none 7, 8; 9..12
    assert frames.tolist() == [3, 4, 5, 6, 9, 10, 11, 12]
    np.testing.assert_allclose(boxes[:4, 0], [0, 1, 2, 3])
    np.testing.assert_allclose(boxes[4:], [[8, 8, 2, 2, 0]] * 4)


def test_last_keyframe_disabled_or_no_frame_count_ends_at_it():
    t = Track((kf(1, True, 0, 0, 1, 1), kf(4, False, 3, 0, 1, 1)), end=100)
    assert visible_boxes(t)[0].tolist() == [1, 2, 3, 4]
    u = Track((kf(1, True, 0, 0, 1, 1), kf(4, True, 3, 0, 1, 1)), end=None)
    assert visible_boxes(u)[0].tolist() == [1, 2, 3, 4]
    v = Track((kf(5, True, 0, 0, 1, 1),), end=7)
    assert visible_boxes(v)[0].tolist() == [5, 6, 7]


def test_label_studio_documented_examples():
    # utils/props.ts: interpolateProp({frame: 0, x: -10}, {frame: 100, x: 10}, 25, 'x') === -5
    t = Track((kf(0, True, -10, 0, 1, 1), kf(100, True, 10, 0, 1, 1)), end=100)
    frames, boxes = visible_boxes(t)
    assert boxes[frames == 25][0][0] == pytest.approx(-5)
    # rotation -170 -> 170 over 20 frames goes the short way: -175 at frame 5
    t = Track((kf(0, True, 0, 0, 1, 1, -170), kf(20, True, 0, 0, 1, 1, 170)), end=20)
    frames, boxes = visible_boxes(t)
    assert js_normalize_angle(boxes[frames == 5][0][4]) == pytest.approx(-175)
    assert js_normalize_angle(boxes[frames == 15][0][4]) == pytest.approx(175)


def test_two_keyframes_on_one_frame():
    # the first one's box shows on that frame and is what the frames before move toward;
    # the last one's enabled flag decides the frames after
    t = Track((kf(1, True, 0, 0, 2, 2), kf(5, True, 9, 9, 2, 2), kf(5, False, 4, 0, 2, 2),
               kf(8, True, 1, 1, 1, 1)), end=9)
    frames, boxes = visible_boxes(t)
    assert frames.tolist() == [1, 2, 3, 4, 5, 8, 9]
    np.testing.assert_allclose(boxes[frames == 5][0], [9, 9, 2, 2, 0])
    np.testing.assert_allclose(boxes[frames == 4][0], [6.75, 6.75, 2, 2, 0])   # 3/4 of the way to (9, 9)


def random_track(rng: random.Random, video: int, rotate: bool, label=None) -> Track:
    n = rng.randint(1, 5)
    frames = sorted(rng.randint(0, video) for _ in range(n))
    if rng.random() < 0.3 and n > 1:
        frames[rng.randrange(1, n)] = frames[0]   # a frame with two keyframes
        frames.sort()
    cx, cy = rng.uniform(0, 20), rng.uniform(0, 20)
    kfs = []
    for f in frames:
        w = 0.0 if rng.random() < 0.05 else rng.uniform(1, 12)
        h = 0.0 if w == 0.0 else rng.uniform(1, 12)
        rot = rng.choice([0.0, rng.uniform(-400, 400)]) if rotate else 0.0
        kfs.append(kf(f, rng.random() < 0.7, cx + rng.uniform(-3, 3), cy + rng.uniform(-3, 3), w, h, rot))
    return Track(tuple(kfs), end=video, label=label)


@pytest.mark.parametrize("seed", range(4))
def test_interpolation_matches_the_editor_frame_by_frame(seed):
    rng = random.Random(seed)
    for _ in range(60):
        video = rng.randint(5, 40)
        t = random_track(rng, video, rotate=True)
        ref = ls_frames(t, video)
        frames, boxes = visible_boxes(t)
        assert frames.tolist() == sorted(ref), t
        for f, b in zip(frames.tolist(), boxes):
            np.testing.assert_allclose(b[:4], ref[f][:4], rtol=1e-12, atol=1e-12)
            assert js_normalize_angle(b[4]) == pytest.approx(js_normalize_angle(ref[f][4]), abs=1e-9)


# -- the track similarity and the distance, against brute force ---------------------------

def shapely_box(b):
    x, y, w, h, rot = b
    return affinity.rotate(shapely.box(x, y, x + w, y + h), rot, origin=(x, y))


def frame_iou(a, b) -> float:
    pa, pb = shapely_box(a), shapely_box(b)
    union = pa.area + pb.area - pa.intersection(pb).area
    if union <= 0:   # two zero-area boxes: the same box or not
        return float(np.allclose(a, b))
    if np.allclose(a, b, rtol=0, atol=1e-12):
        return 1.0
    return pa.intersection(pb).area / union


def brute_similarity(a: Track, b: Track, video: int, exact: bool = False) -> float:
    fa, fb = ls_frames(a, video), ls_frames(b, video)
    union = set(fa) | set(fb)
    if exact:
        score = sum(float(np.allclose(fa[f][:4], fb[f][:4], rtol=0, atol=1e-9)
                          and abs(js_normalize_angle(fa[f][4] - fb[f][4])) < 1e-6) for f in set(fa) & set(fb))
    else:
        score = sum(frame_iou(fa[f], fb[f]) for f in set(fa) & set(fb))
    return score / len(union)


def brute_distance(A, B, video: int, labels: str = "strict", exact: bool = False) -> float:
    if not A and not B:
        return 0.0
    if not A or not B:
        return 1.0
    s = np.array([[0.0 if labels == "strict" and a.label != b.label else brute_similarity(a, b, video, exact)
                   for b in B] for a in A])
    if len(A) > len(B):
        s = s.T
    best = max(sum(s[r, c] for r, c in enumerate(perm))
               for perm in itertools.permutations(range(s.shape[1]), s.shape[0]))
    return 1.0 - best / max(len(A), len(B))


def random_values(rng: random.Random, video: int, n: int, rotate: bool) -> list[tuple]:
    return [tuple(random_track(rng, video, rotate, label=rng.choice("ab")) for _ in range(rng.randint(0, 3)))
            for _ in range(n)]


@pytest.mark.parametrize("rotate", [False, True])
@pytest.mark.parametrize("labels", ["strict", "ignore"])
def test_distance_matches_brute_force(rotate, labels):
    rng = random.Random(7 + rotate)
    video = 30
    values = random_values(rng, video, 14, rotate)
    i, j = np.triu_indices(len(values), 1)
    d = TrackDistance("iou", labels=labels)
    got = d.pairs(values, i, j)
    want = [brute_distance(values[a], values[b], video, labels) for a, b in zip(i, j)]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


def test_exact_variant_matches_brute_force():
    rng = random.Random(3)
    video = 25
    base = random_values(rng, video, 6, rotate=False)
    # copies and small edits so that some frames match exactly
    values = base + [tuple(Track(t.keyframes[:1] + t.keyframes[1:], t.end, t.label) for t in v) for v in base[:3]]
    values.append(tuple(Track(tuple(k._replace(x=k.x + 0.5) if n else k for n, k in enumerate(t.keyframes)),
                              t.end, t.label) for t in base[0]))
    i, j = np.triu_indices(len(values), 1)
    got = get_distance("tracks.exact").pairs(values, i, j)
    want = [brute_distance(values[a], values[b], video, exact=True) for a, b in zip(i, j)]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


def test_similarity_matrix_is_label_agnostic_and_matches_brute_force():
    rng = random.Random(11)
    video = 30
    a = [random_track(rng, video, True, label="x") for _ in range(3)]
    b = [random_track(rng, video, True, label="y") for _ in range(2)] + [a[1]]
    m = track_similarity_matrix(a, b)
    assert m.shape == (3, 3)
    want = np.array([[brute_similarity(x, y, video) for y in b] for x in a])
    np.testing.assert_allclose(m, want, rtol=1e-9, atol=1e-12)
    assert m[1, 2] == 1.0
    assert track_similarity_matrix([], b).shape == (0, 3)
    # 1 - the distance of the two one-track values when labels are ignored
    d = TrackDistance(labels="ignore")
    assert d((a[0],), (b[0],)) == pytest.approx(1 - m[0, 0])


def test_small_chunks_give_the_same_distances(monkeypatch):
    rng = random.Random(5)
    values = random_values(rng, 40, 12, rotate=True)
    i, j = np.triu_indices(len(values), 1)
    whole = TrackDistance().pairs(values, i, j)
    monkeypatch.setattr(tracks_mod, "CHUNK_FRAMES", 7)
    np.testing.assert_allclose(TrackDistance().pairs(values, i, j), whole, rtol=1e-12, atol=1e-15)


def test_hand_computed_pair():
    # a: frames 1..10 box [0,10]x[0,10]; b: frames 6..15 box shifted by 5 in x (IoU 1/3)
    a = Track((kf(1, True, 0, 0, 10, 10), kf(10, False, 0, 0, 10, 10)), end=20)
    b = Track((kf(6, True, 5, 0, 10, 10), kf(15, False, 5, 0, 10, 10)), end=20)
    # shared frames 6..10 (5 frames of IoU 50/150), union of frames 1..15 (15 frames)
    s = 5 * (50 / 150) / 15
    assert track_similarity_matrix([a], [b])[0, 0] == pytest.approx(s)
    d = get_distance("tracks.iou")
    assert d((a,), (b,)) == pytest.approx(1 - s)
    # one matched pair and one unmatched track: (1 - 1 + 1) / 2
    assert d((a, b), (a,)) == pytest.approx(0.5)
    assert d((), ()) == 0.0 and d((a,), ()) == 1.0
    # labels strict: a differently labelled copy matches nothing
    assert d((a,), (Track(a.keyframes, a.end, "other"),)) == 1.0


def test_identical_values_are_at_distance_zero():
    rng = random.Random(2)
    values = random_values(rng, 50, 8, rotate=True)
    same = [tuple(Track(t.keyframes, t.end, t.label) for t in v) for v in values]
    got = TrackDistance().pairs(values + same, np.arange(8), np.arange(8) + 8)
    assert np.all(got == 0.0)


# -- the model and the registry -----------------------------------------------------------

def test_track_model():
    t = Track(((5, True, 1, 2, 3, 4), (1.0, False, 0, 0, 1, 1, 30)), end=10, label="a")
    assert [k.frame for k in t.keyframes] == [1, 5] and isinstance(t.keyframes[0], Keyframe)
    assert hash(t) == hash(Track(t.keyframes, 10, "a"))
    for bad in [(), ((-1, True, 1, 1, 1, 1),), ((1.5, True, 1, 1, 1, 1),), ((True, True, 1, 1, 1, 1),),
                ((1, True, 1, 1, -1, 1),), ((1, True, float("nan"), 1, 1, 1),)]:
        with pytest.raises(ValueError):
            Track(bad)
    with pytest.raises(ValueError):
        Track(((1, True, 0, 0, 1, 1),), end=-3)
    assert Track in REGION_TYPES


def test_registry():
    assert "tracks" in KINDS
    assert candidates("tracks") == ["tracks.iou"]
    assert get_distance("tracks.iou").kind == "tracks" and get_distance("tracks.exact").kind == "tracks"
    with pytest.raises(ValueError, match="Track"):
        TrackDistance().pairs([(Box(0, 0, 1, 1),), ()], [0], [1])

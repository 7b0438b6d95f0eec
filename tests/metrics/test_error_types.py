"""Error types of region annotations: hand-counted tables and a brute-force matcher."""
from __future__ import annotations

import importlib
import json
from itertools import permutations

import numpy as np
import pandas as pd
import pytest

from ls_agreement.metrics.error_types import error_types
from ls_agreement.metrics.model import Box, Span


def B(x: float, y: float, w: float, h: float, label: str) -> Box:
    return Box(x, y, w, h, label=label)


def test_boxes_counted_by_hand() -> None:
    t = pd.DataFrame([
        # agreed; label (IoU 80/120); localization (IoU 60/140); b's fourth box unmatched
        (1, "a", (B(0, 0, 10, 10, "car"), B(50, 50, 10, 10, "car"), B(100, 100, 10, 10, "dog"))),
        (1, "b", (B(0, 0, 10, 10, "car"), B(52, 50, 10, 10, "person"), B(104, 100, 10, 10, "dog"),
                  B(200, 200, 5, 5, "car"))),
        (2, "a", ()), (2, "b", (B(0, 0, 1, 1, "x"),)),                        # missed by a
        (3, "a", (B(0, 0, 10, 10, "car"),)), (3, "b", (B(5, 0, 10, 10, "dog"),)),  # both: IoU 1/3
    ], columns=["item", "annotator", "value"])
    r = error_types(t)
    a, b = r.annotators.loc["a"], r.annotators.loc["b"]
    assert (a.agreed, a.localization, a.label, a.both, a.missed, a.extra) == (1, 1, 1, 1, 2, 0)
    assert (b.agreed, b.localization, b.label, b.both, b.missed, b.extra) == (1, 1, 1, 1, 0, 2)
    assert a.disagreement == 5 and a.share_missed == pytest.approx(2 / 5)
    o = r.overall
    assert (o["agreed"], o["localization"], o["label"], o["both"], o["unmatched"]) == (1, 1, 1, 1, 2)
    assert o["share_unmatched"] == pytest.approx(2 / 5)
    p = r.pairs.set_index("item")
    assert p.loc[1, "unmatched_b"] == 1 and p.loc[2, "unmatched_a"] == 0 and p.loc[2, "unmatched_b"] == 1
    json.dumps(r.to_dict(), allow_nan=False)


def test_threshold_moves_localization_to_agreed() -> None:
    t = pd.DataFrame([(1, "a", (B(0, 0, 10, 10, "c"),)), (1, "b", (B(2, 0, 10, 10, "c"),))],
                     columns=["item", "annotator", "value"])     # IoU 80/120
    assert error_types(t).overall["agreed"] == 1
    assert error_types(t, threshold=0.7).overall["localization"] == 1


def test_spans_counted_by_hand() -> None:
    t = pd.DataFrame([
        (1, "a", (Span(0, 3, "P"), Span(5, 8, "O"), Span(10, 12, "P"), Span(30, 34, "P"), Span(40, 40, "P"))),
        (1, "b", (Span(0, 3, "O"), Span(5, 9, "O"), Span(20, 22, "P"), Span(31, 34, "O"))),
        (1, "c", (Span(0, 3, "P"),)),
    ], columns=["item", "annotator", "value"])
    r = error_types(t)
    assert r.kind == "spans" and r.threshold == 1.0
    p = r.pairs.set_index(["annotator_a", "annotator_b"])
    # a-b: label (0-3), boundary (5-8 / 5-9), both (30-34 P / 31-34 O), a's 10-12 and b's 20-22
    # unmatched; a's zero-length span is ignored
    ab = p.loc[("a", "b")]
    assert (ab.agreed, ab.localization, ab.label, ab.both, ab.unmatched_a, ab.unmatched_b) == (0, 1, 1, 1, 1, 1)
    ac = p.loc[("a", "c")]
    assert (ac.agreed, ac.unmatched_a, ac.unmatched_b) == (1, 3, 0)
    a = r.annotators.loc["a"]
    assert (a.agreed, a.localization, a.label, a.both, a.missed, a.extra) == (1, 1, 1, 1, 1, 4)


def _brute(va: tuple, vb: tuple, t: float) -> tuple[int, ...]:
    """Exhaustive best matching of axis-aligned boxes (pure Python IoU)."""
    def iou(p: Box, q: Box) -> float:
        iw = max(0.0, min(p.x + p.width, q.x + q.width) - max(p.x, q.x))
        ih = max(0.0, min(p.y + p.height, q.y + q.height) - max(p.y, q.y))
        inter = iw * ih
        return inter / (p.width * p.height + q.width * q.height - inter)
    small, big, flip = (va, vb, False) if len(va) <= len(vb) else (vb, va, True)
    best, best_m = -1.0, []
    for perm in permutations(range(len(big)), len(small)):
        m = [(k, perm[k]) for k in range(len(small)) if iou(small[k], big[perm[k]]) > 0]
        s = sum(iou(small[k], big[q]) for k, q in m)
        if s > best + 1e-12:
            best, best_m = s, m
    c = [0, 0, 0, 0]
    for k, q in best_m:
        good, same = iou(small[k], big[q]) >= t, small[k].label == big[q].label
        c[0 if good and same else 2 if good else 1 if same else 3] += 1
    un_small, un_big = len(small) - len(best_m), len(big) - len(best_m)
    return (*c, un_big, un_small) if flip else (*c, un_small, un_big)


@pytest.mark.parametrize("block", [None, 5])
def test_random_boxes_match_a_brute_force_matcher(block: int | None, monkeypatch) -> None:
    if block is not None:   # value pairs matched a few object pairs at a time (issue 24): the same counts
        module = importlib.import_module("ls_agreement.metrics.error_types")
        from ls_agreement.metrics.distances._ragged import pair_chunks
        monkeypatch.setattr(module, "pair_chunks", lambda sizes: pair_chunks(sizes, block))
    rng = np.random.default_rng(4)
    rows = []
    for item in range(30):
        for ann in "abc":
            n = int(rng.integers(0, 4))
            rows.append((item, ann, tuple(B(*rng.uniform(0, 20, 2), *rng.uniform(3, 12, 2), str(rng.integers(0, 2)))
                                          for _ in range(n))))
    t = pd.DataFrame(rows, columns=["item", "annotator", "value"])
    r = error_types(t)
    val = {(i, a): v for i, a, v in rows}
    cols = ["agreed", "localization", "label", "both", "unmatched_a", "unmatched_b"]
    for rec in r.pairs.itertuples(index=False):
        got = tuple(getattr(rec, c) for c in cols)
        assert got == _brute(val[(rec.item, rec.annotator_a)], val[(rec.item, rec.annotator_b)], 0.5), rec


def test_polygons_and_frozen_result() -> None:
    import dataclasses

    from ls_agreement.metrics.model import Polygon

    sq = lambda x, lab: Polygon(((x, 0), (x + 10, 0), (x + 10, 10), (x, 10)), label=lab)
    t = pd.DataFrame([(1, "a", (sq(0, "p"), sq(100, "p"))), (1, "b", (sq(4, "p"), sq(101, "q")))],
                     columns=["item", "annotator", "value"])
    r = error_types(t)
    # IoU 60/140 (localization) and 90/110 with another label (label)
    assert r.kind == "polygons" and (r.overall["localization"], r.overall["label"]) == (1, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.kind = "boxes"  # type: ignore[misc]

"""infer_kind and choosing the distance by KS (paper 000 §6.2)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ls_agreement.metrics import agreement, choose_distance, infer_kind
from ls_agreement.metrics.distances import candidates
from ls_agreement.metrics.model import Box, Keypoint, Polygon, Span

from .conftest import load_table


@pytest.mark.parametrize("values,kind", [
    ([(Box(0, 0, 1, 1),), ()], "boxes"),
    ([(), (Polygon(((0, 0), (1, 0), (0, 1))),)], "polygons"),
    ([(Keypoint(1, 2),)], "keypoints"),
    ([(Span(0, 3, "PER"),), None], "spans"),
    (["the cat sat", "a dog barked loudly", "nothing"], "text"),
    (["pos", "neg", "pos", "neg"], "scalars"),
    ([1, 2.5, 3], "scalars"),
    ([frozenset({"a"}), frozenset()], "sets"),
    ([["d1", "d2", "d3"], ["d2", "d1"]], "rankings"),
    ([[0, 0, 10], [5, 5, 5]], "vectors"),
    ([[0.5, 1.25], [2.0, 1.0]], "vectors"),
])
def test_infer_kind(values, kind):
    assert infer_kind(values) == kind


def test_infer_kind_errors():
    with pytest.raises(ValueError, match="no values"):
        infer_kind([None])
    with pytest.raises(ValueError, match="every value is an empty sequence"):
        infer_kind([(), ()])
    with pytest.raises(ValueError, match="mix"):
        infer_kind([(Box(0, 0, 1, 1),), frozenset({"a"})])
    with pytest.raises(ValueError, match="dict"):
        infer_kind([{"x": 1}])


def test_every_kind_has_candidates():
    for kind in ("boxes", "polygons", "keypoints", "spans", "text", "rankings", "sets", "vectors", "scalars"):
        assert candidates(kind), kind


def test_kinds_are_the_registry_prefixes_and_old_singular_names_still_work():
    from ls_agreement.metrics.distances import KINDS, canonical_kind, get_distance
    from ls_agreement.metrics.distances.registry import fitting

    for kind in KINDS:
        for name in candidates(kind):
            assert get_distance(name).kind == kind
            assert "." not in name or name.split(".")[0] == kind, name
    for old, new in (("set", "sets"), ("scalar", "scalars"), ("ranking", "rankings"), ("vector", "vectors")):
        assert canonical_kind(old) == new
        assert candidates(old) == candidates(new) and fitting(old) == fitting(new)


def test_choose_distance_on_paper_rankings():
    table = load_table("ranked_lists")
    choice = choose_distance(table, ["rankings.kendall_top5", "rankings.kendall", "rankings.spearman"],
                             form="pairwise", duplicates="keep", bootstrap=0)
    assert list(choice.table.columns) == ["distance", "alpha", "ks", "sigma", "ks_statistic", "n_pairs", "status"]
    assert choice.table["ks"].is_monotonic_decreasing
    # paper 000: τ over the top 5 is the worst of the three
    assert choice.table["distance"].iloc[-1] == "rankings.kendall_top5"
    assert choice.winner == choice.table["distance"].iloc[0]
    assert choice.result.ks == choice.table["ks"].max() == choice.scores[choice.winner].ks


def _noisy_boxes(n_items: int = 60, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for item in range(n_items):
        truth = [(rng.uniform(0, 80), rng.uniform(0, 80), rng.uniform(5, 20), rng.uniform(5, 20))
                 for _ in range(rng.integers(1, 4))]
        for ann in range(3):
            boxes = tuple(Box(x + rng.normal(0, 1), y + rng.normal(0, 1), w, h) for x, y, w, h in truth)
            rows.append({"item": item, "annotator": str(ann), "value": boxes})
    return pd.DataFrame(rows)


def test_auto_picks_the_highest_ks_and_matches_agreement():
    table = _noisy_boxes()
    choice = choose_distance(table, bootstrap=0)
    assert set(choice.table["distance"]) == set(candidates("boxes"))
    assert choice.winner in ("boxes.iou", "boxes.giou", "boxes.l2")
    auto = choose_distance(table, bootstrap=0).result
    with pytest.raises(ValueError, match="choose_distance"):
        agreement(table, "auto", bootstrap=0)
    assert auto.distance == choice.winner
    assert auto.ks == pytest.approx(choice.table["ks"].iloc[0])


def test_failing_candidate_is_reported_not_fatal():
    table = load_table("vectors").head(200)
    choice = choose_distance(table, ["vectors.rmse", "text.bleu"], bootstrap=0)
    assert choice.winner == "vectors.rmse"
    assert "text.bleu" in choice.errors
    with pytest.raises(ValueError, match="no candidate distance could be computed"):
        choose_distance(table, ["text.bleu"], bootstrap=0)


def test_only_the_winner_holds_its_arrays_while_its_agreement_runs(monkeypatch):
    # issue 24: ranking candidates on a large table must hold one candidate's pairs, chance
    # sample and prepared values at a time; the last candidate scored, when it loses, goes
    # before the winner's agreement and bootstrap start (it held 0.17 GB of a 100,000-task
    # box control's worker at its peak)
    import gc

    from ls_agreement.metrics import choose as choose_module
    from ls_agreement.metrics.engine import Scored

    table = _noisy_boxes()
    real = choose_module.agreement
    held: list[list[str]] = []

    def watching(tbl, scored, **kw):
        gc.collect()
        full = [o for o in gc.get_objects() if isinstance(o, Scored) and o.core.cells is not None]
        held.append(sorted(o.distance for o in full))
        return real(tbl, scored, **kw)

    monkeypatch.setattr(choose_module, "agreement", watching)
    names = list(candidates("boxes"))
    # the winner first and the losers after it: the last one scored is a loser
    first = choose_distance(table, names, bootstrap=0).winner
    order = [first] + [n for n in names if n != first]
    choice = choose_distance(table, order, bootstrap=0)
    assert choice.winner == first
    assert held[-1] == [first]

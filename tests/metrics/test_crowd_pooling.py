"""Many annotators per item (issue 9 item 8): the engine pools the observed pairs by (item,
value pair) with counts (metrics/cells.py). Its results must equal a brute-force
computation over every pair, and the engine's own results with pooling turned off."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ls_agreement.metrics import agreement, get_distance, ks_score, sigma_score
from ls_agreement.metrics import cells as cells_module
from ls_agreement.metrics.engine import score
from ls_agreement.metrics.table import code_table

N_ANN, N_ITEMS = 40, 12
SETS = [frozenset("A"), frozenset("B"), frozenset("AB"), frozenset("C"), frozenset("BC")]


def crowd_table(kind: str, seed: int = 0) -> pd.DataFrame:
    """40 annotators on 12 items (a few missing), few distinct values: pairs far outnumber values."""
    rng = np.random.default_rng(seed)
    rows = []
    for item in range(N_ITEMS):
        truth = rng.integers(0, 4)
        for ann in range(N_ANN):
            if rng.random() < 0.1:
                continue
            good = rng.random() < 0.7
            if kind == "nominal":
                rows.append((f"t{item}", f"a{ann}", int(truth if good else rng.integers(0, 4))))
            else:
                rows.append((f"t{item}", f"a{ann}", SETS[truth if good else rng.integers(0, len(SETS))]))
    return pd.DataFrame(rows, columns=["item", "annotator", "value"])


def brute_pairs(table: pd.DataFrame, distance: str) -> pd.DataFrame:
    """Every within-item pair of rows and its distance, listed item by item."""
    dist = get_distance(distance)
    parts = []
    for item, g in table.groupby("item", sort=False):
        i, j = np.triu_indices(len(g), k=1)
        d = dist.pairs(list(g["value"]), i, j)
        parts.append(pd.DataFrame({"item": item, "a": g["annotator"].to_numpy()[i],
                                   "b": g["annotator"].to_numpy()[j], "d": d}))
    return pd.concat(parts, ignore_index=True)


@pytest.mark.parametrize("kind,distance", [("nominal", "nominal"), ("sets", "sets.jaccard")])
def test_pooled_results_equal_every_pair(kind, distance):
    table = crowd_table(kind)
    ct = code_table(table)
    sc = score(ct, distance)
    assert sc.core.cells.pooled and sc.core.cells.item.size < sc.core.n_pairs / 20   # pooling is used
    res = agreement(table, distance, bootstrap=0)
    pairs = brute_pairs(table, distance)

    assert res.n_pairs == len(pairs)
    np.testing.assert_allclose(np.sort(res.observed), np.sort(pairs["d"].to_numpy()), atol=1e-12)
    listed = res.pairs
    assert len(listed) == len(pairs)
    # KS and σ against the same chance distribution, over the expanded observed distances
    chance_e, chance_w = sc.core.expected.distances, sc.core.expected.weights
    obs = pairs["d"].to_numpy()
    assert res.ks == pytest.approx(ks_score(obs, chance_e, chance_w), abs=1e-12)
    assert res.sigma == pytest.approx(sigma_score(obs, res.threshold), abs=1e-12)
    # canonical D̂o: Σ over pairs of d / (m_item − 1), times 2/n
    m = table.groupby("item")["annotator"].size()
    d_o = 2.0 * float(np.sum(obs / (m.loc[pairs["item"]].to_numpy() - 1.0))) / len(table)
    assert res.d_o == pytest.approx(d_o, rel=1e-12)

    below = (obs < res.threshold).astype(float)
    by_item = pd.DataFrame({"item": pairs["item"], "d": obs, "below": below}).groupby("item")
    per_item = res.per_item.loc[by_item.size().index]
    np.testing.assert_array_equal(per_item["n_pairs"].to_numpy(), by_item.size().to_numpy())
    np.testing.assert_allclose(per_item["mean_distance"].to_numpy(), by_item["d"].mean().to_numpy(), atol=1e-12)
    np.testing.assert_allclose(per_item["sigma"].to_numpy(), by_item["below"].mean().to_numpy(), atol=1e-12)

    sides = pd.DataFrame({"annotator": np.concatenate((pairs["a"], pairs["b"])),
                          "d": np.tile(obs, 2), "below": np.tile(below, 2)}).groupby("annotator")
    per_ann = res.per_annotator.loc[sides.size().index]
    np.testing.assert_array_equal(per_ann["n_pairs"].to_numpy(), sides.size().to_numpy())
    np.testing.assert_allclose(per_ann["mean_distance"].to_numpy(), sides["d"].mean().to_numpy(), atol=1e-12)
    np.testing.assert_allclose(per_ann["sigma"].to_numpy(), sides["below"].mean().to_numpy(), atol=1e-12)
    np.testing.assert_allclose(per_ann["alpha"].to_numpy(), 1.0 - sides["d"].mean().to_numpy() / res.d_e,
                               atol=1e-12)


@pytest.mark.parametrize("kind,distance", [("nominal", "nominal"), ("nominal", "ordinal"),
                                           ("sets", "sets.jaccard")])
def test_pooled_equals_unpooled_with_intervals(kind, distance, monkeypatch):
    # 12 items: a replicate drawing every item once (equal to the estimate up to rounding,
    # where BCa's tie count would flip on the last bit) is then too rare to be drawn
    table = crowd_table(kind, seed=1)
    pooled = agreement(table, distance, bootstrap=100, seed=3)
    monkeypatch.setattr(cells_module, "POOL_MIN_PAIRS_PER_VALUE", 10 ** 9)   # one cell per pair
    plain = agreement(table, distance, bootstrap=100, seed=3)
    for name in ("alpha", "ks", "ks_statistic", "sigma", "threshold", "d_o", "d_e"):
        assert getattr(pooled, name) == pytest.approx(getattr(plain, name), rel=1e-12, abs=1e-12), name
    for name in ("alpha", "ks", "sigma"):
        np.testing.assert_allclose(pooled.ci[name], plain.ci[name], atol=1e-9)
    pd.testing.assert_frame_equal(pooled.per_item, plain.per_item, rtol=1e-12, atol=1e-12)
    pd.testing.assert_frame_equal(pooled.per_annotator, plain.per_annotator, rtol=1e-9, atol=1e-9)
    assert list(pooled.diagnostics) == list(plain.diagnostics)

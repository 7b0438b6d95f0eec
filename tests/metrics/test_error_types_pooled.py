"""Error types of crowd items (many annotators, few distinct values): the pooled form, linear
in an item's annotators, against the pairwise form it replaces (every pair matched)."""
from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
import pytest

from ls_agreement.metrics.model import Box, Span

# the module (the package exports its function under the same name)
et = importlib.import_module("ls_agreement.metrics.error_types")


def _pairwise(table: pd.DataFrame, kind: str) -> et.ErrorTypesResult:
    """The reference: pooling switched off, every pair of value rows matched."""
    old = et._POOL_MIN_PAIRS_PER_VALUE
    et._POOL_MIN_PAIRS_PER_VALUE = 10 ** 12
    try:
        return et.error_types(table, kind=kind)
    finally:
        et._POOL_MIN_PAIRS_PER_VALUE = old


def _span_value(rng: np.random.Generator) -> tuple:
    # few distinct values: overlapping spans, two labels, sometimes empty or two spans
    n = int(rng.choice([0, 1, 1, 1, 2]))
    out = []
    for _ in range(n):
        start = int(rng.integers(0, 4))
        out.append(Span(start, start + int(rng.integers(1, 4)), str(rng.choice(["P", "O"]))))
    return tuple(sorted(out, key=lambda s: (s.start, s.end)))


def _box_value(rng: np.random.Generator) -> tuple:
    n = int(rng.choice([0, 1, 2, 2, 3]))
    # equal IoU ties on purpose: shifts by whole units of a 10-wide box
    return tuple(Box(float(rng.integers(0, 3)) * 5, 0.0, 10.0, 10.0, label=str(rng.choice(["a", "b"])))
                 for _ in range(n))


@pytest.mark.parametrize("kind,make", [("spans", _span_value), ("boxes", _box_value)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pooled_equals_pairwise(kind: str, make, seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows = []
    # crowd items and small ones (their pairs are few: pooled or not, the same numbers)
    sizes = [150, 60] + [int(rng.choice([2, 3, 60])) for _ in range(int(rng.integers(1, 4)))]
    for item, m in enumerate(sizes):
        palette = [make(rng) for _ in range(6)]        # a crowd item: few distinct answers
        for a in rng.permutation(200)[:m]:
            rows.append((item, f"w{a}", palette[int(rng.integers(0, len(palette)))]))
    table = pd.DataFrame(rows, columns=["item", "annotator", "value"])
    ct = et.code_table(table)
    assert et._value_groups(ct, list(ct.values)) is not None  # the pooled form runs
    got, ref = et.error_types(table, kind=kind), _pairwise(table, kind)
    pd.testing.assert_frame_equal(got.annotators, ref.annotators)
    assert got.overall.keys() == ref.overall.keys()
    for k, v in ref.overall.items():
        assert got.overall[k] == pytest.approx(v, nan_ok=True), k
    pd.testing.assert_frame_equal(got.pairs, ref.pairs)
    assert got.to_dict() == ref.to_dict()


def test_pairs_table_is_built_on_demand() -> None:
    # 400 annotators on one item: 79,800 pairs, two distinct values
    table = pd.DataFrame([(1, a, (Span(0, 5, "P"),) if a % 3 else (Span(1, 5, "P"),)) for a in range(400)],
                         columns=["item", "annotator", "value"])
    r = et.error_types(table)
    assert r.overall["agreed"] + r.overall["localization"] == 400 * 399 // 2
    assert len(r.pairs) == 400 * 399 // 2
    # a's boundary errors: one against every annotator of the other value
    n_other = sum(1 for a in range(400) if a % 3 == 0)
    assert r.annotators.loc[1, "localization"] == n_other
    assert r.annotators.loc[0, "localization"] == 400 - n_other

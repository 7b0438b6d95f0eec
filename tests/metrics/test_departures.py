"""How an answer departs from the consensus, pair by pair, against the error types of a table."""
from __future__ import annotations

import random

import pandas as pd
import pytest

from ls_agreement.metrics import error_types
from ls_agreement.metrics.departures import how_departs
from ls_agreement.metrics.error_types import pair_error_counts
from ls_agreement.metrics.model import Box


def _boxes(rng: random.Random) -> tuple[Box, ...]:
    return tuple(Box(rng.uniform(0, 60), rng.uniform(0, 60), rng.uniform(5, 30), rng.uniform(5, 30),
                     label=rng.choice("AB")) for _ in range(rng.randint(0, 4)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pair_counts_equal_those_of_a_two_annotator_table(seed: int) -> None:
    rng = random.Random(seed)
    a = [_boxes(rng) for _ in range(40)]
    b = [v if rng.random() < 0.3 else _boxes(rng) for v in a]
    counts, missed, extra = pair_error_counts(a, b, kind="box")
    table = pd.DataFrame({"item": [k for k in range(40) for _ in (0, 1)],
                          "annotator": ["a", "b"] * 40, "value": [v for pair in zip(a, b) for v in pair]})
    pairs = error_types(table, kind="boxes").pairs.set_index("item").reindex(range(40)).fillna(0)
    assert counts[:, 1:].tolist() == pairs[["localization", "label", "both"]].astype(int).to_numpy().tolist()
    assert missed.tolist() == pairs["unmatched_a"].astype(int).tolist()
    assert extra.tolist() == pairs["unmatched_b"].astype(int).tolist()


def test_how_departs_words() -> None:
    one = Box(10, 10, 20, 20, label="A")
    said = how_departs("boxes", [(one,), (one,), (one,), ()], [(), (one, Box(60, 60, 10, 10, label="A")),
                                                                 (Box(10, 10, 20, 20, label="B"),), (one,)])
    assert said == ["missed 1 box", "1 extra box", "another label on 1 box", "1 extra box"]

"""Shared fixtures: paper 000's reference data (read-only, ../shared/data/braylan)."""
from __future__ import annotations

import json

import pandas as pd
import pytest
from tests.shared_data import DATA

BRAYLAN = DATA / "braylan"


def _need_data() -> None:
    if not (BRAYLAN / "reference.json").exists():
        pytest.skip("paper 000 reference data not available")


@pytest.fixture(scope="session")
def braylan_reference() -> dict:
    _need_data()
    return json.loads((BRAYLAN / "reference.json").read_text())


def load_rows(dataset: str) -> list[dict]:
    _need_data()
    with open(BRAYLAN / f"{dataset}.jsonl") as fh:
        return [json.loads(line) for line in fh]


def load_table(dataset: str) -> pd.DataFrame:
    rows = load_rows(dataset)
    return pd.DataFrame({"item": [r["item"] for r in rows],
                         "annotator": [str(r["annotator"]) for r in rows],
                         "value": [r["annotation"] for r in rows]})


def load_pairs(dataset: str, distance: str) -> dict:
    _need_data()
    return json.loads((BRAYLAN / "distances" / f"{dataset}__{distance}.json").read_text())

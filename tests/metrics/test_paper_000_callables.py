"""agreement(form="pairwise") with paper 000's own distance definitions as plain callables.

reference.json defines each distance exactly as the authors' code computes it; here the
translations' Levenshtein (a raw difflib token count, not a normalised edit distance) is
written from that definition and handed to the engine as a callable, so the test checks
the engine, not our registered distances (those are tested in tests/distances).
"""
from __future__ import annotations

import difflib
import json

import pandas as pd
import pytest

from ls_agreement.metrics import agreement

from .conftest import DATA

BRAYLAN = DATA / "braylan"


def authors_levenshtein(a: str, b: str) -> float:
    """reference.json: walk difflib.ndiff over the ' '-split tokens; each maximal run of
    '-'/'+' lines costs max(#'-', #'+'); '?' lines are ignored."""
    cost, minus, plus = 0, 0, 0
    for line in difflib.ndiff(a.split(" "), b.split(" ")):
        tag = line[0]
        if tag == "-":
            minus += 1
        elif tag == "+":
            plus += 1
        elif tag == " ":
            cost += max(minus, plus)
            minus = plus = 0
    return float(cost + max(minus, plus))


@pytest.fixture(scope="module")
def translations() -> pd.DataFrame:
    rows = [json.loads(line) for line in (BRAYLAN / "translations.jsonl").read_text().splitlines()]
    return pd.DataFrame({"item": [r["item"] for r in rows], "annotator": [r["annotator"] for r in rows],
                         "value": [r["annotation"] for r in rows]})


def test_definition_matches_authors_pairs(translations):
    ref = json.loads((BRAYLAN / "distances" / "translations__Levenshtein.json").read_text())
    vals = translations["value"].tolist()
    for (i, j), d in list(zip(ref["observed_pairs"], ref["observed"]))[:400]:
        assert authors_levenshtein(vals[i], vals[j]) == pytest.approx(d, abs=1e-9)


@pytest.mark.slow
def test_levenshtein_row_reproduces_reference(translations):
    ref = json.loads((BRAYLAN / "reference.json").read_text())
    metrics = ref["datasets"]["translations"]["distances"]["Levenshtein"]["metrics"]
    n_obs = int(sum(m * (m - 1) // 2 for m in translations.groupby("item").size()))
    res = agreement(translations, authors_levenshtein, form="pairwise", duplicates="keep",
                    ks_method="scipy", expected_pairs=n_obs, bootstrap=0, seed=0)
    assert res.n_pairs == n_obs
    for key in ("alpha", "ks", "sigma"):
        m = metrics[key]
        assert abs(getattr(res, key) - m["mean"]) <= m["tolerance"], (key, getattr(res, key), m)

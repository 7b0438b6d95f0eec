"""Per-label α (one-vs-rest) against the krippendorff package, confusion counts against a loop."""
from __future__ import annotations

import itertools

import krippendorff
import numpy as np
import pandas as pd
import pytest

from ls_agreement.metrics import Box, Span, krippendorff_alpha
from ls_agreement.metrics.per_label import label_confusion, per_label_agreement

LABELS = list("abcd")


def _sets(seed: int = 2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for it in range(80):
        base = set(rng.choice(LABELS, size=rng.integers(1, 3), replace=False))
        for a in rng.choice(7, size=rng.integers(1, 6), replace=False):
            v = set(base)
            if rng.random() < 0.4:
                v ^= {str(rng.choice(LABELS))}
            rows.append((it, f"u{a}", frozenset(v)))
    return pd.DataFrame(rows, columns=["item", "annotator", "value"])


def _single(seed: int = 5) -> pd.DataFrame:
    t = _sets(seed)
    return t.assign(value=t["value"].map(lambda s: min(s) if s else "d"))


def _has(t: pd.DataFrame, label: str) -> pd.DataFrame:
    return t.assign(value=t["value"].map(lambda s: float(label in (s if isinstance(s, frozenset) else {s}))))


@pytest.mark.parametrize("make", [_sets, _single])
def test_one_vs_rest_alpha_equals_krippendorff(make) -> None:
    t = make()
    r = per_label_agreement(t, bootstrap=0)
    assert set(r.table["label"]) == {x for v in t["value"] for x in (v if isinstance(v, frozenset) else {v})}
    for row in r.table.itertuples():
        yes = _has(t, row.label)
        wide = yes.pivot(index="annotator", columns="item", values="value").to_numpy(float)
        assert row.alpha == pytest.approx(krippendorff.alpha(reliability_data=wide, level_of_measurement="nominal"),
                                          abs=1e-12)
        assert row.support == int(yes["value"].sum())
        assert row.n_items == yes.loc[yes["value"] > 0, "item"].nunique()
        # the pairwise form against the engine's own α on the same yes/no table
        pw = per_label_agreement(t, bootstrap=0, form="pairwise").table.set_index("label").loc[row.label, "alpha"]
        assert pw == pytest.approx(float(krippendorff_alpha(yes, "nominal", form="pairwise")), abs=1e-12)


def _brute_confusion(t: pd.DataFrame, labels: list[str]) -> np.ndarray:
    c = np.zeros((len(labels), len(labels)), dtype=int)
    for _, g in t.groupby("item"):
        for x, y in itertools.combinations(g["value"].tolist(), 2):
            x = x if isinstance(x, frozenset) else {x}
            y = y if isinstance(y, frozenset) else {y}
            for i, p in enumerate(labels):
                for j, q in enumerate(labels):
                    if i == j:
                        c[i, i] += p in x and p in y
                    else:
                        c[i, j] += (p in x and q not in x and q in y and p not in y) or \
                                   (q in x and p not in x and p in y and q not in y)
    return c


@pytest.mark.parametrize("make", [_sets, _single])
def test_confusion_counts_equal_a_loop_over_pairs(make) -> None:
    t = make()
    conf = label_confusion(t)
    labels = list(conf.index)
    assert np.array_equal(conf.to_numpy(), _brute_confusion(t, labels))
    r = per_label_agreement(t, bootstrap=0, top=3)
    assert r.single == (make is _single)
    assert r.confusions["count"].tolist() == sorted(r.confusions["count"].tolist(), reverse=True)[:3]
    top = r.confusions.iloc[0]
    assert top["count"] == max(conf.to_numpy()[i, j] for i in range(len(labels)) for j in range(len(labels)) if i != j)


def test_single_choice_confusion_is_the_coincidence_of_labels() -> None:
    t = pd.DataFrame({"item": [1, 1, 1, 2, 2], "annotator": list("abcab"), "value": ["x", "x", "y", "y", "z"]})
    conf = label_confusion(t)
    assert conf.loc["x", "x"] == 1 and conf.loc["x", "y"] == conf.loc["y", "x"] == 2
    assert conf.loc["y", "z"] == 1 and conf.loc["x", "z"] == 0 and conf.loc["y", "y"] == 0


def test_regions_are_read_as_the_labels_drawn() -> None:
    b = lambda label: Box(0, 0, 1, 1, label=label)  # noqa: E731
    t = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3], "annotator": list("ababab"),
                      "value": [(b("car"), b("person")), (b("car"),), (b("person|car"),), (b("car"), b("person")),
                                (), (Span(0, 2, "car"),)]})
    r = per_label_agreement(t, bootstrap=0, split="|")
    assert dict(zip(r.table["label"], r.table["support"])) == {"car": 5, "person": 3}
    t2 = t.assign(value=t["value"].map(lambda v: frozenset(x for r_ in v for x in r_.label.split("|"))))
    pd.testing.assert_frame_equal(r.table, per_label_agreement(t2, bootstrap=0).table)


def test_intervals_contain_estimates_and_are_seeded() -> None:
    t = _sets()
    a = per_label_agreement(t, bootstrap=300, seed=3)
    b = per_label_agreement(t, bootstrap=300, seed=3)
    pd.testing.assert_frame_equal(a.table, b.table)
    ok = a.table.dropna(subset=["ci_low"])
    assert len(ok) == len(a.table)
    assert ((ok.ci_low <= ok.alpha) & (ok.alpha <= ok.ci_high)).all()
    assert a.to_dict()["labels"][0]["label"] == a.table["label"].iloc[0]


def test_no_label_or_no_pair_is_refused() -> None:
    with pytest.raises(ValueError, match="label"):
        per_label_agreement(pd.DataFrame({"item": [1, 1], "annotator": ["a", "b"], "value": [(), ()]}))
    with pytest.raises(ValueError, match="pairable"):
        per_label_agreement(pd.DataFrame({"item": [1, 2], "annotator": ["a", "b"], "value": ["x", "y"]}))


def test_result_convention() -> None:
    import dataclasses
    import json

    from ls_agreement.metrics import Result

    r = per_label_agreement(_sets(), bootstrap=20)
    assert isinstance(r, Result)
    json.dumps(r.to_dict(), allow_nan=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.single = False


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_region_values_give_the_labels_a_value_by_value_reading_gives(seed: int) -> None:
    """Values that are tuples of regions are read at C speed: the same (row, label) entries
    in the same order as a reading value by value (each value's labels once, in their
    first order; unlabelled regions and empty values carry none), with and without a
    separator to split on, and a label holding the separator split as before."""
    from ls_agreement.metrics.per_label import _labels_of, _region_labels, label_sets

    rng = np.random.default_rng(seed)
    names = ["PER", "ORG", "LOC", None, "a|b"]
    values = []
    for _ in range(400):
        k = int(rng.integers(0, 5))
        make = Span if rng.random() < 0.5 else (lambda s, e, label: Box(s, e, 5, 5, label=label))
        values.append(tuple(make(int(s), int(s) + 3, label=names[int(rng.integers(0, 4))])
                            for s in rng.integers(0, 50, k)))
    for split in (None, "|"):
        rows, labs = [], []
        for r, v in enumerate(values):
            for x in dict.fromkeys(_labels_of(v, split)):
                rows.append(r)
                labs.append(x)
        got = _region_labels(np.asarray(values + [()], dtype=object)[:-1], split)
        assert got is not None
        assert got[0].tolist() == rows and got[1].tolist() == labs
    split_me = values + [(Span(0, 3, label="a|b"),)]
    assert _region_labels(split_me, "|") is None
    row, code, labels = label_sets(split_me, "|")
    assert {"a", "b"} <= set(labels[code[row == len(values)]])

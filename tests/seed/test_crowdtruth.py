"""CrowdTruth 2.0 against CrowdTruth-core's own outputs on its test data."""
import json

import numpy as np
import pandas as pd
import pytest

from ls_agreement.metrics.crowdtruth import crowdtruth
from tests.shared_data import DATA as SHARED_DATA

DATA = SHARED_DATA / "crowdtruth"
CASES = sorted(p.stem for p in DATA.glob("*.json"))


def _load(stem):
    ref = json.loads((DATA / f"{stem}.json").read_text())
    rows = [json.loads(line) for line in (DATA / f"{stem}.jsonl").read_text().splitlines() if line.strip()]
    table = pd.DataFrame({"item": [r["unit"] for r in rows], "annotator": [r["worker"] for r in rows],
                          "value": [r["annotations"] for r in rows]})
    return ref, table, rows[0].get("options")


def test_all_reference_files_present():
    assert len(CASES) == 66  # 33 CrowdTruth-core test files x (closed, open)


@pytest.mark.parametrize("stem", CASES)
def test_matches_crowdtruth_core(stem):
    ref, table, options = _load(stem)
    assert (options is None) == stem.endswith("__open")
    # CrowdTruth-core stops when the largest change is below 0.001; max_iter=1 = its *_initial scores
    for max_iter, suffix in ((1000, ""), (1, "_initial")):
        res = crowdtruth(table, options, max_iter=max_iter)  # default tol = CrowdTruth-core's 0.001
        for unit, d in ref["units"].items():
            assert res.units.loc[int(unit), "uqs"] == pytest.approx(d["UQS" + suffix], abs=1e-6)
            if suffix == "":
                uas = res.units.loc[int(unit), "uas"]
                for ans, score in d["UAS"].items():
                    assert uas.get(ans, 0.0) == pytest.approx(score, abs=1e-6)
        for worker, d in ref["workers"].items():
            got = res.workers.loc[worker]
            assert (got.wqs, got.wwa, got.wua) == pytest.approx(
                (d["WQS" + suffix], d["WWA" + suffix], d["WUA" + suffix]), abs=1e-6)
        for ans, d in ref.get("annotations", {}).items():
            assert res.annotations.loc[ans, "aqs"] == pytest.approx(d["AQS" + suffix], abs=1e-6)


def test_tight_tolerance_reaches_fixed_point():
    ref, table, options = _load("5vs6work_agr__closed")
    loose = crowdtruth(table, options)
    tight = crowdtruth(table, options, tol=1e-10)
    assert tight.converged and tight.n_iter >= loose.n_iter
    np.testing.assert_allclose(tight.workers["wqs"], loose.workers["wqs"], atol=2e-3)


def test_bad_input():
    t = pd.DataFrame({"item": [1, 1], "annotator": ["a", "b"], "value": [["A"], ["Z"]]})
    with pytest.raises(ValueError, match="answer 'Z' is not among the options"):
        crowdtruth(t, ["A", "B"])
    with pytest.raises(ValueError, match="two annotators"):
        crowdtruth(t.iloc[:1], ["A", "B"])
    empty = pd.DataFrame({"item": [1, 1, 1], "annotator": ["a", "b", "c"], "value": [["A"], [], ["A"]]})
    r = crowdtruth(empty, ["A", "B"])
    assert r.dropped_rows == 1 and list(r.workers.index) == ["a", "c"]
    r = crowdtruth(empty, None, none_token="NONE")
    assert r.workers.loc["b", "wqs"] < r.workers.loc["a", "wqs"]
    json.dumps(r.to_dict(), allow_nan=False)


# --- brute force as the reference where CrowdTruth-core's files stop -------------------------
from tests.seed.crowdtruth_brute import brute_crowdtruth  # noqa: E402


def _check_against_brute(rows, options, atol=1e-6):
    table = pd.DataFrame({"item": [r[0] for r in rows], "annotator": [r[1] for r in rows],
                          "value": [r[2] for r in rows]})
    res = crowdtruth(table, options)
    uqs, wqs, wua, wwa, aqs = brute_crowdtruth(rows, options)
    for u, v in uqs.items():
        assert res.units.loc[u, "uqs"] == pytest.approx(v, abs=atol)
    for w in wqs:
        got = res.workers.loc[w]
        assert (got.wqs, got.wua, got.wwa) == pytest.approx((wqs[w], wua[w], wwa[w]), abs=atol)
    for a, v in aqs.items():
        assert res.annotations.loc[a, "aqs"] == pytest.approx(v, abs=atol)
    return res


@pytest.mark.parametrize("stem", CASES[::5])
def test_brute_force_reproduces_crowdtruth_core(stem):
    """The brute force is itself right: it gives CrowdTruth-core's numbers on its files."""
    ref, table, options = _load(stem)
    rows = list(zip(table["item"], table["annotator"], table["value"]))
    uqs, wqs, wua, wwa, aqs = brute_crowdtruth(rows, options)
    for unit, d in ref["units"].items():
        assert uqs[int(unit)] == pytest.approx(d["UQS"], abs=1e-6)
    for worker, d in ref["workers"].items():
        assert (wqs[worker], wua[worker], wwa[worker]) == pytest.approx((d["WQS"], d["WUA"], d["WWA"]), abs=1e-6)
    for ans, d in ref.get("annotations", {}).items():
        assert aqs[ans] == pytest.approx(d["AQS"], abs=1e-6)


def _repeated_rows(seed, n_units, n_workers, per_unit, answers, max_repeat):
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(n_units):
        for w in rng.choice(n_workers, size=per_unit, replace=False):
            k = int(rng.integers(1, 4))
            chosen = list(rng.choice(answers, size=k, replace=True))  # may repeat an answer
            chosen += [chosen[0]] * int(rng.integers(0, max_repeat))  # and hold it again
            rows.append((u, f"W{w}", chosen))
    return rows


@pytest.mark.parametrize("seed", range(6))
def test_repeated_answers_counted_closed(seed):
    rows = _repeated_rows(seed, n_units=6, n_workers=7, per_unit=4, answers=list("ABCDE"), max_repeat=3)
    _check_against_brute(rows, list("ABCDEF"))
    assert any(len(r[2]) != len(set(r[2])) for r in rows)  # the data really repeats answers


@pytest.mark.parametrize("seed", range(6))
def test_repeated_answers_counted_open(seed):
    rows = _repeated_rows(seed + 10, n_units=5, n_workers=6, per_unit=4,
                          answers=["e1", "e2", "e3", "e4"], max_repeat=3)
    _check_against_brute(rows, None)


def test_repeats_change_the_scores():
    """A judgement holding 'A' twice is not the same as holding it once."""
    once = [(1, "a", ["A", "B"]), (1, "b", ["A"]), (1, "c", ["B"]), (2, "a", ["A"]), (2, "b", ["A"]),
            (2, "c", ["B"])]
    twice = [(u, w, v + ["A"] if w == "a" and u == 1 else v) for u, w, v in once]
    r1, r2 = _check_against_brute(once, ["A", "B"]), _check_against_brute(twice, ["A", "B"])
    diff = max(np.abs(r1.units["uqs"] - r2.units["uqs"]).max(), np.abs(r1.workers["wqs"] - r2.workers["wqs"]).max(),
               np.abs(r1.annotations["aqs"] - r2.annotations["aqs"]).max())
    assert diff > 1e-3


@pytest.mark.parametrize("layout", [(1, 60), (2, 45), (5, 25)])
def test_many_workers_per_unit(layout):
    """The per-unit sums and grouped AQS pairs equal the pairwise definitions with many workers."""
    n_units, n_workers = layout
    rng = np.random.default_rng(n_workers)
    rows = []
    for u in range(n_units):
        for w in range(n_workers):
            if rng.random() < 0.9:
                rows.append((u, f"W{w}", list(rng.choice(list("ABC"), size=int(rng.integers(1, 3))))))
    _check_against_brute(rows, list("ABCD"))
    _check_against_brute(rows, None)


def test_counts_given_as_mapping_and_bad_counts():
    t = pd.DataFrame({"item": [1, 1, 1], "annotator": ["a", "b", "c"],
                      "value": [{"A": 2}, ["A", "A"], {"A": 1, "B": 0}]})
    r = crowdtruth(t, ["A", "B"])
    assert r.workers.loc["a", "wqs"] == pytest.approx(r.workers.loc["b", "wqs"])
    bad = t.assign(value=[{"A": -1}, ["A"], ["A"]])
    with pytest.raises(ValueError, match="item 1, annotator 'a': count -1"):
        crowdtruth(bad, ["A", "B"])


@pytest.mark.parametrize("seed", range(4))
def test_equal_tuple_judgements_read_once_same_scores(seed):
    """Judgements given as tuples (the span answers' form) are read once per distinct tuple
    and shared between rows: the scores are still the brute force's."""
    rows = _repeated_rows(seed + 20, n_units=6, n_workers=6, per_unit=4, answers=["e1", "e2"], max_repeat=2)
    rows = [(u, w, tuple(sorted(v))) for u, w, v in rows]
    assert len({r[2] for r in rows}) < len(rows)        # equal judgements do occur
    _check_against_brute(rows, None)

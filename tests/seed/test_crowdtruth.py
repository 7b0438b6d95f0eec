"""CrowdTruth 2.0 against CrowdTruth-core's own outputs on its test data."""
import json
from pathlib import Path

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

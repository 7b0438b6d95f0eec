"""One result convention (docs/design.md "Results"): frozen dataclasses with the point
estimate as ``estimate``, intervals as ``ci`` {name: (low, high)}, strict-JSON ``to_dict()``."""
import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from ls_agreement.metrics import (Result, agreement, choose_distance, cross_kappa, crowdtruth, gwet_ac1, icc,
                                  krippendorff_alpha, span_f1, span_f1_table)
from ls_agreement.metrics.model import Span


def _table(n=12, seed=0):
    rng = np.random.default_rng(seed)
    rows = [(i, a, int(rng.integers(1, 4))) for i in range(n) for a in "abc"]
    return pd.DataFrame(rows, columns=["item", "annotator", "value"])


def _results():
    t = _table()
    spans = pd.DataFrame([(1, "a", (Span(0, 2, "X"),)), (1, "b", (Span(1, 3, "X"),))],
                         columns=["item", "annotator", "value"])
    return {
        "alpha": agreement(t, "nominal", bootstrap=20),
        "kappa_x": cross_kappa(t[t.annotator != "c"], t[t.annotator == "c"], bootstrap=20),
        "coefficient": gwet_ac1(t),
        "corrected": span_f1([Span(0, 2, "X")], [Span(1, 3, "X")], 5),
        "table_corrected": span_f1_table(spans, {1: 5}),
        None: crowdtruth(t.assign(value=t["value"].astype(str))),
        "icc": icc(t),
        "choice": choose_distance(t, ["nominal", "interval"], bootstrap=0),
    }


def test_every_result_is_a_frozen_result_with_strict_json():
    for key, res in _results().items():
        assert isinstance(res, Result) and dataclasses.is_dataclass(res), key
        json.dumps(res.to_dict(), allow_nan=False)
        field = dataclasses.fields(res)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(res, field, None)


def test_point_estimate_and_intervals():
    r = _results()
    assert r["alpha"].estimate == r["alpha"].alpha and set(r["alpha"].ci) == {"alpha", "ks", "sigma"}
    assert r["kappa_x"].estimate == r["kappa_x"].kappa_x and set(r["kappa_x"].ci) == {"kappa_x", "normalized"}
    g = r["coefficient"]
    assert g.estimate == g.coefficient and (g.ci_low, g.ci_high) == g.ci["coefficient"]
    assert g.to_dict()["ci"]["coefficient"] == [g.ci_low, g.ci_high]
    assert r["corrected"].estimate == r["corrected"].corrected
    assert r["table_corrected"].estimate == r["table_corrected"].corrected
    ic = r["icc"]
    lo, hi = ic.ci["ICC2"]
    row = ic.table.set_index("type").loc["ICC2"]
    assert (lo, hi) == (row["ci_low"], row["ci_high"])
    # ICC2 and the winner's α are the headline numbers (issue 23.11); CrowdTruth has none
    assert ic.estimate == ic["ICC2"] == row["icc"]
    assert r["choice"].estimate == r["choice"].result.alpha and r["choice"].ci == r["choice"].result.ci
    with pytest.raises(AttributeError, match="no single point estimate"):
        r[None].estimate
    a = krippendorff_alpha(_table())
    assert a.estimate == float(a)
    json.dumps(a.to_dict(), allow_nan=False)
    same = pd.DataFrame({"item": [1, 1, 2, 2], "annotator": list("abab"), "value": ["x"] * 4})
    assert json.loads(json.dumps(krippendorff_alpha(same).to_dict(), allow_nan=False))["value"] is None

"""One serializer and one NaN rule (metrics/result.py): the report's JSON text, its plain
form and a metric result's ``to_dict`` agree with the standard library's parser, NaN and
±inf become null everywhere, and a stored report reads back into the same types."""
from __future__ import annotations

import io
import json
import math
import random

import numpy as np
import pandas as pd
import pytest

from ls_agreement.metrics import agreement, gwet_ac1, icc
from ls_agreement.metrics import result as result_module
from ls_agreement.metrics.result import finite_or_none, json_text, strict_json, write_json
from ls_agreement.demo.data import ANNOTATORS, DEMO_CONFIG, generate
from ls_agreement.plugin.report.build import build_report
from ls_agreement.plugin.report.model import Report
from ls_agreement.plugin.settings import ReportSettings

# strings that look like JSON structure, escapes before quotes, non-ASCII
_TRICKY = ["", "a\"b", "\\", "\\\"", "[{,}]", "é\u2028", "x\\\\\"y", "\n\t", "\\\\", "\"", "[]", "{}", ": ,"]


def _random_value(depth: int, rng: random.Random):
    k = rng.random()
    if depth > 4 or k < 0.3:
        return rng.choice([None, True, False, 0, -3, 1.5, 1e-300, 2 ** 70, math.nan, -math.inf,
                           np.float64(0.25), np.int64(7), np.float32(math.nan), *_TRICKY])
    if k < 0.65:
        return [_random_value(depth + 1, rng) for _ in range(rng.randint(0, 4))]
    return {rng.choice(["k", *_TRICKY]) + str(n): _random_value(depth + 1, rng) for n in range(rng.randint(0, 4))}


def _reference(value):
    """The same value with the rule written out by hand: non-finite numbers -> None."""
    if isinstance(value, dict):
        return {k: _reference(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_reference(v) for v in value]
    if isinstance(value, (bool, str)) or value is None:
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    return finite_or_none(value)


@pytest.mark.parametrize("indent", [None, 0, 1, 3])
def test_json_text_parses_to_the_plain_form(indent: int | None) -> None:
    rng = random.Random(indent or 5)
    for _ in range(1500):
        value = _random_value(0, rng)
        want = _reference(value)
        assert strict_json(value) == want
        text = json_text(value, indent)
        assert json.loads(text) == want, value
        if indent and isinstance(want, (dict, list)) and want:
            assert "\n" + " " * indent in text


def test_metric_results_follow_the_same_rule() -> None:
    t = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3], "annotator": ["a", "b"] * 3, "value": [1, 1, 1, 1, 1, 1]})
    res = agreement(t, "nominal", bootstrap=0)     # no variation: α and σ undefined
    d = res.to_dict(items=True)
    assert math.isnan(res.alpha) and d["alpha"] is None
    assert json.loads(json.dumps(d, allow_nan=False)) == d
    assert set(d["items"]) == {"1", "2", "3"}
    ac1 = gwet_ac1(t)                                  # pe = 1: AC1 undefined
    assert math.isnan(ac1.coefficient) and ac1.to_dict()["coefficient"] is None
    forms = icc(t.assign(value=[1.0, 2.0, 2.0, 3.0, 3.0, 5.0])).to_dict()
    for r in (ac1.to_dict(), forms):
        assert json.loads(json.dumps(r, allow_nan=False)) == r   # strict JSON: no NaN left
    assert [f["type"] for f in forms["forms"]] == ["ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k"]


def test_a_report_reads_back_into_the_same_types() -> None:
    users = {a.email: i + 1 for i, a in enumerate(ANNOTATORS)}
    tasks = [{**t, "id": k} for k, t in enumerate(generate(users, n_tasks=40, seed=3).tasks, start=1)]
    for k, t in enumerate(tasks):
        t["annotations"] = [{**a, "id": 100 * k + n} for n, a in enumerate(t["annotations"])]
    report = build_report(DEMO_CONFIG, tasks, ReportSettings(bootstrap=20))
    text = report.to_json(indent=1)
    data = json.loads(text)
    assert data == report.to_dict() and data["version"] == report.version
    back = Report.from_dict(data)
    assert back == report
    assert Report.from_dict(json.loads(back.to_json())) == report
    with pytest.raises(ValueError, match="controls"):
        Report.from_dict({**data, "controls": {"x": {"n_items": "many"}}})


@pytest.mark.parametrize("indent", [None, 0, 1, 3])
def test_written_json_is_the_one_pass_text_byte_for_byte(indent: int | None, monkeypatch) -> None:
    """The streamed writer (issue 24) opens containers and serializes their entries in
    blocks; pydantic's one-pass text is the reference, blocks of 2 make every container
    split."""
    monkeypatch.setattr(result_module, "WRITE_BLOCK", 2)
    rng = random.Random(11 + (indent or 0))
    for _ in range(800):
        value = _random_value(0, rng)
        out = io.BytesIO()
        write_json(value, out, indent)
        assert out.getvalue() == json_text(value, indent).encode("utf-8"), value


def test_a_written_report_is_its_json_text(monkeypatch) -> None:
    users = {a.email: i + 1 for i, a in enumerate(ANNOTATORS)}
    tasks = [{**t, "id": k} for k, t in enumerate(generate(users, n_tasks=30, seed=4).tasks, start=1)]
    report = build_report(DEMO_CONFIG, tasks, ReportSettings(bootstrap=20))
    for block in (3, 10_000):
        monkeypatch.setattr(result_module, "WRITE_BLOCK", block)
        for indent in (None, 1):
            out = io.BytesIO()
            report.write_json(out, indent)
            assert out.getvalue() == report.to_json(indent).encode("utf-8")

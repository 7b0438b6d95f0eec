"""Hypothesis: random mutations of the real exports. Lenient mode never raises; strict
mode raises nothing but AdapterError (a ValueError naming task/annotation/field)."""
from __future__ import annotations

import copy
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ls_agreement.adapters.adapt import adapt
from ls_agreement.adapters.config import parse_config
from ls_agreement.adapters.errors import AdapterError

from .conftest import DATA, load

from ls_agreement.plugin.report.build import build_report as _build_report  # noqa: E402


def build_report(*args, **kwargs):
    """The report as its JSON contract (the typed ``Report`` serialised), as these tests read it."""
    return _build_report(*args, **kwargs).to_dict()


CONFIG = parse_config((DATA / "label_config.xml").read_text())
BASES = [load("project_export_snapshot_expanded.json"), load("by_tag_labels.json"),
         load("by_tag_ranker__rank_buckets.json"), load("by_tag_taxonomy.json"), load("by_tag_pairwise.json")]

JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-10**6, 10**6), st.sampled_from([math.nan, math.inf, -math.inf, -1.0, 1e308]),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=5),
    # fresh containers each draw: a shared st.just([]) would be mutated by later steps
    st.builds(list), st.builds(dict),
    st.lists(st.integers(-3, 3), max_size=3), st.builds(lambda: [[1, 2]]), st.builds(lambda: {"x": None}),
    st.sampled_from(["left", "Positive", "2024-05-01", "rectanglelabels", "bbox", "choices", "_"]),
    # issue 9: numbers no float holds, ids past 64 bits, numbers and dates as text
    st.sampled_from([10 ** 400, -10 ** 400, 2 ** 63, 1e300, "NaN", "1e999", "\ufeff", "9999-12-31T23:59:59-23:59"]),
)


def _mutate(data, obj, depth=0):
    """Walk to a random node and replace/delete/duplicate something there."""
    if isinstance(obj, dict) and obj:
        key = data.draw(st.sampled_from(sorted(obj, key=str)))
        child = obj[key]
        if depth < 9 and isinstance(child, (dict, list)) and child and data.draw(st.booleans()):
            _mutate(data, child, depth + 1)
            return
        action = data.draw(st.sampled_from(["replace", "delete"]))
        if action == "delete":
            del obj[key]
        else:
            obj[key] = data.draw(JUNK)
    elif isinstance(obj, list) and obj:
        k = data.draw(st.integers(0, len(obj) - 1))
        child = obj[k]
        if depth < 9 and isinstance(child, (dict, list)) and child and data.draw(st.booleans()):
            _mutate(data, child, depth + 1)
            return
        action = data.draw(st.sampled_from(["replace", "delete", "duplicate"]))
        if action == "delete":
            obj.pop(k)
        elif action == "duplicate":
            obj.append(copy.deepcopy(child))
        else:
            obj[k] = data.draw(JUNK)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_lenient_never_raises_strict_raises_only_adapter_error(data):
    tasks = copy.deepcopy(data.draw(st.sampled_from(BASES)))
    for _ in range(data.draw(st.integers(1, 4))):
        _mutate(data, tasks)
    snapshot = json.dumps(tasks, default=str)
    out = adapt(CONFIG, tasks)                      # lenient: must not raise
    for ctl in out.controls.values():
        # "options": the answers each task offers (a Ranker's List, options from task data)
        assert list(ctl.table.columns) in (["item", "annotator", "value"], ["item", "annotator", "value", "options"])
        assert not ctl.table.duplicated(["item", "annotator"]).any()
        assert all(isinstance(a, str) for a in ctl.table["annotator"])
    try:
        adapt(CONFIG, tasks, strict=True)
    except AdapterError as exc:
        assert str(exc)
    assert json.dumps(tasks, default=str) == snapshot   # input never modified


@pytest.mark.slow
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_report_survives_mutations(data):
    from ls_agreement.plugin.settings import ReportSettings

    tasks = copy.deepcopy(data.draw(st.sampled_from(BASES[:1])))
    for _ in range(data.draw(st.integers(1, 3))):
        _mutate(data, tasks)
    rep = build_report(CONFIG, tasks, ReportSettings(bootstrap=0))
    json.dumps(rep, allow_nan=False)

"""Per-task entries of a report: each task's annotators (one list per distinct run of
annotators, one string per annotator) and the tasks' pooled ratios of ambiguity, read once
for ρ_T and every task's posterior (issue 24: what a report of 100,000 tasks holds)."""
from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pandas as pd
import pytest

from ls_agreement.demo import data as demo_data
from ls_agreement.metrics.task_ambiguity import fit_task_ambiguity
from ls_agreement.adapters.control import ControlData
from ls_agreement.plugin.report.build import _annotators_by_item, build_report, tasks_per_annotator
from ls_agreement.plugin.report.flags import fit_ambiguity, pooled_ratios
from ls_agreement.plugin.report.rollup import project_tasks
from ls_agreement.plugin.settings import ReportSettings

USERS = {a.email: 10 + k for k, a in enumerate(demo_data.ANNOTATORS)}


@pytest.fixture(scope="module")
def report():
    sample = demo_data.generate(USERS, n_tasks=80, seed=5)
    tasks = [{"id": k + 1, **t} for k, t in enumerate(sample.tasks)]
    return build_report(sample.config, tasks, ReportSettings(bootstrap=0))


def _table(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for item in rng.permutation(60).tolist():
        for who in rng.choice(6, size=int(rng.integers(1, 5)), replace=False).tolist():
            # numbers and strings alike: the entries name annotators as strings
            rows.append({"item": item, "annotator": who if who % 2 else f"{who}", "value": 1})
    return pd.DataFrame(rows).sample(frac=1.0, random_state=seed).reset_index(drop=True)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_each_items_annotators_are_its_rows_in_table_order(seed):
    table = _table(seed)
    got = _annotators_by_item(table)
    want = {item: [str(a) for a in table.loc[table["item"] == item, "annotator"]] for item in table["item"].unique()}
    assert got == want
    assert list(got) == list(table["item"].unique())        # first-seen order of the items


def test_equal_runs_share_one_list_and_each_name_one_string():
    table = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3, 4],
                          "annotator": ["a", "b", "a", "b", "b", "a", "a"], "value": 0})
    got = _annotators_by_item(table)
    assert got[1] is got[2]                  # the same annotators in the same order
    assert got[3] == ["b", "a"] and got[3] is not got[1]
    assert got[1][0] is got[3][1] is got[4][0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tasks_per_annotator_counts_each_task_once_over_all_controls(seed):
    # one control with integer task ids, one with the same ids as strings (and some more):
    # a task is the same task whichever way its id was written
    first, second = _table(seed), _table(seed + 10)
    second["item"] = second["item"].astype(str)
    second.loc[second.index[:5], "item"] = "extra"
    ctls = [ControlData(name=n, tag="Choices", object_name="t", kind="categorical", table=t, options=None,
                        candidates=["nominal"], default_distance="nominal")
            for n, t in (("a", first), ("b", second), ("empty", first.iloc[:0]))]
    want: dict[str, set[str]] = {}
    for t in (first, second):
        for item, who in zip(t["item"], t["annotator"]):
            want.setdefault(str(who), set()).add(str(item))
    assert tasks_per_annotator(ctls) == {a: len(v) for a, v in want.items()}
    assert tasks_per_annotator(ctls[2:]) == {}


def test_shared_lists_survive_the_pipe_as_equal_values(report):
    back = pickle.loads(pickle.dumps(report, protocol=5))
    for name, ctl in report.controls.items():
        assert {t: e.annotators for t, e in back.controls[name].items.items()} == \
               {t: e.annotators for t, e in ctl.items.items()}


def _brute_ratio(report, item):
    xs = [c.items[item].ambiguity_lr for c in report.controls.values()
          if item in c.items and c.measured and c.items[item].ambiguity_lr is not None]
    return sum(xs) if xs else None


def test_pooled_ratios_are_each_tasks_sum_over_its_measured_controls(report):
    ratios = pooled_ratios(report.controls)
    every = dict.fromkeys(t for c in report.controls.values() for t in c.items)
    want = {t: x for t in every if (x := _brute_ratio(report, t)) is not None}
    assert list(ratios) == list(want)
    assert ratios == pytest.approx(want, abs=1e-12)
    assert len(ratios) > 40
    assert fit_ambiguity(ratios) == fit_task_ambiguity(np.array(list(want.values())))
    assert report.ambiguity == fit_ambiguity(ratios)


def test_tasks_read_from_given_ratios_equal_tasks_read_alone(report):
    fresh = {n: dataclasses.replace(c, items={t: dataclasses.replace(e) for t, e in c.items.items()})
             for n, c in report.controls.items()}
    given = project_tasks(fresh, report.settings, report.ambiguity, pooled_ratios(fresh))
    alone = project_tasks(report.controls, report.settings, report.ambiguity)
    assert given == alone == report.tasks
    assert any(t.flag for t in alone.values()) and not all(t.flag for t in alone.values())


def test_equal_reasons_and_numbers_are_one_object_and_nothing_else_changes():
    from ls_agreement.plugin.report.build import _share_equal_values
    from ls_agreement.plugin.report.model import ItemEntry

    def built(k: int) -> ItemEntry:
        # every value made afresh, as a control's reading makes them task by task
        return ItemEntry(sigma=float(f"{1 / 3}"), alpha=-0.0 if k == 2 else float("0.25"), mean_distance=k % 2,
                         reason="".join(["15: missed ", "1 box"]), how={"15": "".join(["missed ", "1 box"])},
                         departs={"15": float(f"{0.9964}")}, annotators=["15", "12"])

    items = {str(k): built(k) for k in range(4)}
    before = [dataclasses.asdict(rec) for rec in items.values()]
    assert items["0"].reason is not items["1"].reason
    _share_equal_values(items)
    after = [dataclasses.asdict(rec) for rec in items.values()]
    assert after == before
    # the same values, of the same types and signs: an int stays an int, -0.0 keeps its sign
    assert [type(rec.mean_distance) for rec in items.values()] == [int, int, int, int]
    assert str(items["2"].alpha) == "-0.0" and items["3"].alpha == 0.25
    a, b = items["0"], items["3"]
    assert a.reason is b.reason and a.how["15"] is b.how["15"] and a.how["15"] is not a.reason
    assert a.sigma is b.sigma and a.departs["15"] is b.departs["15"] and a.alpha is b.alpha
    # containers stay each entry's own: changing one changes no other
    assert a.how is not b.how and a.departs is not b.departs
    a.departs["12"] = 0.5
    assert "12" not in b.departs
    # and the entries pickle to fewer bytes
    fresh = {str(k): built(k) for k in range(200)}
    shared = {str(k): built(k) for k in range(200)}
    _share_equal_values(shared)
    assert len(pickle.dumps(shared)) < 0.8 * len(pickle.dumps(fresh))

"""κx of annotator pools in a report (``[report.groups]``, paper 001; issue 9 item 6).

Pools must be two independent replications: an annotator in two pools is refused (exit 2
naming the annotator and both pools). Disjoint pools give the κx of the two sub-tables,
which with one judge per pool and nominal values is Cohen's κ (sklearn). A normalized κx
that is undefined shows no interval.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score

from ls_agreement.plugin.report.build import build_report as _build_report
from ls_agreement.plugin.report.seed import kappa_x_section
from ls_agreement.plugin.settings import ReportSettings
from ls_agreement.plugin.cli import main

def build_report(*args, **kwargs):
    """The report as its JSON contract (the typed ``Report`` serialised), as these tests read it."""
    return _build_report(*args, **kwargs).to_dict()


CONFIG = ('<View><Text name="t" value="$text"/><Choices name="c" toName="t"><Choice value="A"/>'
          '<Choice value="B"/><Choice value="C"/></Choices></View>')


def _tasks(n: int = 40, annotators=(1, 2, 3, 4), seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    tasks = []
    for i in range(1, n + 1):
        truth = rng.choice("ABC")
        anns = [{"id": i * 10 + a, "completed_by": a, "result": [
            {"from_name": "c", "to_name": "t", "type": "choices",
             "value": {"choices": [truth if rng.random() < 0.7 else rng.choice("ABC")]}}]} for a in annotators]
        tasks.append({"id": i, "data": {"text": "x"}, "annotations": anns})
    return tasks


def _answers(tasks: list[dict], annotator: int) -> list[str]:
    return [r["value"]["choices"][0] for t in tasks for ann in t["annotations"]
            if ann["completed_by"] == annotator for r in ann["result"]]


@pytest.fixture
def cli(tmp_path: Path, capsys):
    def go(tasks: list, groups_toml: str, *args: str):
        exp, cfg, st = tmp_path / "e.json", tmp_path / "c.xml", tmp_path / "s.toml"
        exp.write_text(json.dumps(tasks))
        cfg.write_text(CONFIG)
        st.write_text("[report.groups]\n" + groups_toml)
        code = main(["report", str(exp), "--config", str(cfg), "--settings", str(st), *args])
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        return code, out, err
    return go


@pytest.mark.parametrize("groups", [
    'crowd = ["1", "2"]\nexperts = ["2", "3"]\n',
    'crowd = [1, 2]\nexperts = ["2", 3]\n',          # the same user id written as a number and a string
])
def test_overlapping_pools_are_refused_naming_annotator_and_pools(cli, groups):
    code, out, err = cli(_tasks(), groups, "--bootstrap", "0")
    assert code == 2 and out == ""
    assert "annotator '2' is in both 'crowd' and 'experts'" in err


def test_overlapping_pools_are_refused_in_code_too():
    groups = {"crowd": ["1", "2"], "experts": ["2", "3"]}
    with pytest.raises(ValueError, match="annotator '2' is in both 'crowd' and 'experts'"):
        build_report(CONFIG, _tasks(), ReportSettings(bootstrap=0, groups=groups))
    with pytest.raises(ValueError, match="in both"):
        ReportSettings.from_mapping({"groups": groups})

    class Control:  # what kappa_x_section reads of a ControlData
        import pandas as pd
        table = pd.DataFrame({"item": [1, 1], "annotator": ["1", "2"], "value": ["A", "B"]})
        default_distance = "nominal"
    with pytest.raises(ValueError, match="in both"):
        kappa_x_section(Control, ReportSettings(groups=groups))


def test_disjoint_pools_of_one_judge_give_cohen_kappa(cli):
    tasks = _tasks()
    code, out, err = cli(tasks, 'first = ["1"]\nsecond = ["3"]\n', "--bootstrap", "200", "--seed", "4")
    assert code == 0, err
    kx = json.loads(out)["controls"]["c"]["kappa_x"]["first vs second"]
    assert kx["kappa_x"] == pytest.approx(cohen_kappa_score(_answers(tasks, 1), _answers(tasks, 3)), abs=1e-12)
    lo, hi = kx["ci"]["kappa_x"]
    assert lo <= kx["kappa_x"] <= hi and lo < hi
    # one judge per pool: each pool's own α (IRR) is undefined, so normalized κx is null
    # and so is its interval (an overlapping pool used to show [3.93, 3.93] here)
    assert kx["irr_x"] is None and kx["normalized"] is None
    assert kx["ci"]["normalized"] == [None, None]


def test_disjoint_pools_of_two_judges_normalized_with_interval(cli):
    code, out, err = cli(_tasks(), 'crowd = ["1", "2"]\nexperts = ["3", "4"]\n', "--bootstrap", "200")
    assert code == 0, err
    kx = json.loads(out)["controls"]["c"]["kappa_x"]["crowd vs experts"]
    assert kx["normalized"] == pytest.approx(kx["kappa_x"] / (kx["irr_x"] * kx["irr_y"]) ** 0.5, rel=1e-9)
    lo, hi = kx["ci"]["normalized"]
    assert lo <= kx["normalized"] <= hi and lo < hi


def test_pools_that_cannot_be_compared_as_written_are_warned_about():
    rep = build_report(CONFIG, _tasks(), ReportSettings(bootstrap=0, groups={"crowd": ["1", "2"]}))
    assert any("one annotator pool ('crowd')" in w for w in rep["warnings"])
    assert not rep["controls"]["c"]["kappa_x"]  # v2: the section is always there, empty
    rep = build_report(CONFIG, _tasks(), ReportSettings(bootstrap=0, groups={"crowd": ["1", "alice"],
                                                                             "experts": ["3"]}))
    assert any("'groups.crowd'" in w and "['alice']" in w for w in rep["warnings"])
    assert not any("'groups.experts'" in w for w in rep["warnings"])

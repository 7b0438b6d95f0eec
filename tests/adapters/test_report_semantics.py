"""What the report's numbers mean at the edges (issue 9, items 2, 7 and 9).

* A control without variation, or with fewer than two pairable tasks, has no agreement:
  null α/KS/σ with a status and a reason, and it changes nothing else in the report
  (flags, task σ, annotator means) -- checked against the same project without it.
* A distance named for a control must fit its values (exit 2 listing the ones that fit);
  callables registered without a kind stay allowed.
* ``--seed -1`` is refused like ``--bootstrap -1``; Python warnings raised while building
  or rendering a report become report warnings naming the control, never stderr lines.

Commands run in-process through ``main`` (fast) except where stderr of a real process is
the point.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import warnings
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import pytest

from ls_agreement.plugin.report.build import build_report as _build_report
from ls_agreement.plugin.settings import ReportSettings
from ls_agreement.metrics import agreement, register
from ls_agreement.metrics.choose import choose_distance
from ls_agreement.metrics.distances import registry
from ls_agreement.metrics.model import Box
from ls_agreement.plugin.cli import main

def build_report(*args, **kwargs):
    """The report as its JSON contract (the typed ``Report`` serialised), as these tests read it."""
    return _build_report(*args, **kwargs).to_dict()


GOOD = '<Choices name="good" toName="t"><Choice value="A"/><Choice value="B"/><Choice value="C"/></Choices>'
UNUSED = ('<Choices name="unused" toName="t" choice="multiple"><Choice value="x"/><Choice value="y"/>'
          '</Choices>')
SAME = '<Choices name="same" toName="t"><Choice value="A"/><Choice value="B"/></Choices>'
NUMBER = '<Number name="n" toName="t"/>'


def _config(*controls: str) -> str:
    return '<View><Text name="t" value="$text"/>' + "".join(controls) + "</View>"


def _project(n_tasks: int = 30, seed: int = 3, number_on: tuple[int, ...] = ()) -> list[dict]:
    """Three annotators per task: ``good`` varies (80% agree with a hidden truth), ``same``
    is "A" for everybody, ``unused`` is never answered, ``n`` only on ``number_on`` tasks
    (two annotators there)."""
    rng = random.Random(seed)
    tasks = []
    for i in range(1, n_tasks + 1):
        truth = rng.choice("ABC")
        anns = []
        for a in (1, 2, 3):
            guess = truth if rng.random() < 0.8 else rng.choice("ABC")
            res = [{"from_name": "same", "to_name": "t", "type": "choices", "value": {"choices": ["A"]}},
                   {"from_name": "good", "to_name": "t", "type": "choices", "value": {"choices": [guess]}}]
            if i in number_on and a < 3:
                res.append({"from_name": "n", "to_name": "t", "type": "number",
                            "value": {"number": rng.randint(0, 9)}})
            anns.append({"id": i * 10 + a, "completed_by": a, "result": res})
        tasks.append({"id": i, "data": {"text": "some text"}, "annotations": anns})
    return tasks


@pytest.fixture
def run(tmp_path: Path, capsys):
    """``run(tasks, config, *args) -> (exit code, report or stdout, stderr)``."""
    def go(tasks: list, config: str, *args: str, parse: bool = True):
        exp, cfg = tmp_path / "export.json", tmp_path / "config.xml"
        exp.write_text(json.dumps(tasks))
        cfg.write_text(config)
        code = main(["report", str(exp), "--config", str(cfg), *args])
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        return code, (json.loads(out) if parse and code == 0 and out.strip().startswith("{") else out), err
    return go


@pytest.fixture
def registered():
    """Register test distances; removed afterwards so other tests see the stock registry."""
    names = []

    def add(name: str, func, **kw):
        register(name, func, replace=True, **kw)
        names.append(name)
        return name
    yield add
    for n in names:
        registry._REGISTRY.pop(n, None)


def _nominal_alpha(tasks: list, control: str) -> float:
    """Krippendorff's α of one single-choice control by the ``krippendorff`` package."""
    codes: dict[str, int] = {}
    rows = {a: [np.nan] * len(tasks) for a in (1, 2, 3)}
    for k, t in enumerate(tasks):
        for ann in t["annotations"]:
            for r in ann["result"]:
                if r["from_name"] == control:
                    rows[ann["completed_by"]][k] = codes.setdefault(r["value"]["choices"][0], len(codes))
    return krippendorff.alpha(reliability_data=np.array(list(rows.values()), dtype=float),
                              level_of_measurement="nominal")


# --- item 2: no variation, too few pairable tasks --------------------------------------

def test_controls_without_variation_are_null_with_a_reason(run):
    tasks = _project()
    code, rep, err = run(tasks, _config(UNUSED, SAME, GOOD), "--bootstrap", "30")
    assert code == 0, err
    for name, dist in (("unused", "sets."), ("same", "nominal")):
        c = rep["controls"][name]
        assert c["status"] == "no_variation", name
        assert c["reason"].startswith("no variation") and dist in c["reason"]
        for k in ("alpha", "ks", "ks_statistic", "sigma", "threshold", "histogram"):
            assert c[k] is None, (name, k)
        assert all(c["ci"][k] == [None, None] for k in ("alpha", "ks", "sigma"))
        assert not any(i["flag"] or i["sigma"] is not None for i in c["items"].values())
        assert all(a["sigma"] is None and a["alpha"] is None and a["ci"] is None for a in c["annotators"].values())
        # facts that do not depend on chance stay: every pair agrees
        assert c["n_pairs"] == 90 and all(i["mean_distance"] == 0 for i in c["items"].values())
        # no §6.1 pathology and no interval notes about numbers that are not shown
        assert not any("piled" in d["message"] or "interval" in d["message"] for d in c["diagnostics"])
        assert any(d["code"] == "no_variation" for d in c["diagnostics"])
        assert any(w.startswith(f"{name}: no variation") for w in rep["warnings"])
    for cand in rep["controls"]["unused"]["candidates"]:  # auto: no candidate has a KS either
        assert cand["ks"] is None and cand["sigma"] is None and cand["status"] == "no_variation"
    good = rep["controls"]["good"]
    assert good["status"] == "ok" and good["reason"] is None
    assert good["alpha"] == pytest.approx(_nominal_alpha(tasks, "good"), abs=1e-9)


def test_unmeasured_controls_change_nothing_else_in_the_report(run, tmp_path):
    # the same project with and without the unmeasurable controls: flags, task σ and the
    # annotators' means must be identical (they come from `good` alone). Three equally
    # careful annotators raise no flag (issues 13, 22: their slips are ordinary); the
    # tasks' flag posteriors are compared instead.
    tasks = _project(number_on=(4,))
    settings = tmp_path / "default.toml"
    settings.write_text("flag_posterior = 0.5\n")
    code, with_them, err = run(tasks, _config(UNUSED, SAME, NUMBER, GOOD), "--bootstrap", "30", "--seed", "5",
                               "--settings", str(settings))
    assert code == 0, err
    code, without, err = run(tasks, _config(GOOD), "--bootstrap", "30", "--seed", "5", "--settings", str(settings))
    assert code == 0, err
    assert with_them["controls"]["n"]["status"] == "unpairable"
    assert any(t["p_flag"] for t in without["tasks"].values())  # the comparison is not vacuous
    assert with_them["tasks"] == without["tasks"]
    assert with_them["annotators"] == without["annotators"]
    for k in ("alpha", "ks", "sigma", "ci", "items", "annotators"):
        assert with_them["controls"]["good"][k] == without["controls"]["good"][k], k


@pytest.mark.parametrize("number_on, but", [((), ""), ((4,), " but 1")])
def test_control_with_fewer_than_two_pairable_tasks(run, number_on, but):
    code, rep, err = run(_project(number_on=number_on), _config(NUMBER, GOOD), "--bootstrap", "0")
    assert code == 0, err
    c = rep["controls"]["n"]
    assert c["status"] == "unpairable" and f"fewer than two annotators on every task{but}:" in c["reason"]
    assert c["alpha"] is None and c["sigma"] is None and c["ks"] is None
    assert all(set(t["controls"]) == {"good"} for t in rep["tasks"].values())


def test_quality_page_says_which_controls_are_left_out(run, tmp_path):
    page = tmp_path / "q.html"
    code, _, err = run(_project(), _config(UNUSED, SAME, GOOD), "--bootstrap", "0", "--format", "html",
                       "--out", str(page), parse=False)
    assert code == 0, err
    text = page.read_text()
    assert text.count("not measured: no variation") == 2  # summary rows of unused and same
    assert "left out of the flags, of each task's σ and of the annotators' means" in text
    assert "<a href='#c-unused'>unused</a> (no variation)" in text and "means over the measured controls" in text
    code, _, err = run(_project(), _config(GOOD), "--bootstrap", "0", "--format", "html", "--out", str(page),
                       parse=False)
    assert "not measured" not in page.read_text().lower()


def _table(values_by_item: list[list]) -> pd.DataFrame:
    return pd.DataFrame([{"item": i, "annotator": f"a{k}", "value": v}
                         for i, vals in enumerate(values_by_item) for k, v in enumerate(vals)])


def test_engine_diagnostics_at_zero_distances():
    const = agreement(_table([["A", "A", "A"]] * 8), "nominal", bootstrap=0)
    assert any(d.startswith("no variation") for d in const.diagnostics)
    assert not any("piled" in d for d in const.diagnostics)
    # perfect agreement on varied answers: observed all 0, chance not -- no pathology note
    perfect = agreement(_table([[v] * 3 for v in "ABCDABCD"]), "nominal", bootstrap=0)
    assert not any("piled" in d or d.startswith("no variation") for d in perfect.diagnostics)
    # the high-end note still fires where it applies (annotators never agree, exact match)
    never = agreement(_table([["A", "B", "C"], ["B", "C", "A"]] * 4), "nominal", bootstrap=0)
    assert any("piled at the high end" in d for d in never.diagnostics)


def test_auto_never_prefers_a_distance_without_variation():
    # one box each: boxes.count sees no variation (every distance 0); boxes.iou sees boxes
    # that never overlap within a task, so its KS is 0 as well -- a tie the listed order
    # used to break in favour of boxes.count
    rows = [[[Box(x=100 * i + 30 * k, y=0, width=10, height=10, label="a")] for k in range(3)] for i in range(6)]
    choice = choose_distance(_table(rows), ["boxes.count", "boxes.iou"], bootstrap=0)
    assert choice.scores["boxes.count"].d_e == 0 and choice.scores["boxes.iou"].ks == 0
    assert list(choice.table["status"]) == ["ok", "no_variation"]
    assert choice.winner == "boxes.iou"


# --- item 7: forced distances must fit the control ---------------------------------------

BOXES = """<View><Image name="img" value="$image"/>
<RectangleLabels name="bbox" toName="img"><Label value="Car"/></RectangleLabels>
<Text name="t" value="$text"/>""" + GOOD + '<TextArea name="note" toName="t"/></View>'


def _mixed(n: int = 10) -> list[dict]:
    rng = random.Random(7)
    tasks = []
    for i in range(1, n + 1):
        anns = []
        for a in (1, 2, 3):
            anns.append({"id": i * 10 + a, "completed_by": a, "result": [
                {"from_name": "good", "to_name": "t", "type": "choices", "value": {"choices": [rng.choice("AB")]}},
                {"from_name": "note", "to_name": "t", "type": "textarea", "value": {"text": [rng.choice("xyz")]}},
                {"from_name": "bbox", "to_name": "img", "type": "rectanglelabels", "original_width": 100,
                 "original_height": 100, "value": {"x": 10 + rng.random() * 20, "y": 10, "width": 20,
                                                    "height": 20, "rectanglelabels": ["Car"]}}]})
        tasks.append({"id": i, "data": {"image": "x.png", "text": "t"}, "annotations": anns})
    return tasks


@pytest.mark.parametrize("spec, fits, unfit", [
    ("bbox=nominal", ["boxes.iou", "boxes.giou", "boxes.l2"], "nominal"),
    ("good=rankings.kendall", ["nominal"], "rankings"),
    ("good=interval", ["nominal"], "interval"),
    ("note=boxes.iou", ["text.levenshtein", "nominal"], "boxes"),
])
def test_distance_that_does_not_fit_is_refused_listing_those_that_fit(run, spec, fits, unfit):
    control = spec.split("=")[0]
    code, out, err = run(_mixed(), BOXES, "--bootstrap", "0", "--distance", spec)
    assert code == 2 and out == ""
    assert f"does not fit control {control!r}" in err
    listed = err.split("distances that fit:")[1]
    assert all(f in listed for f in fits) and unfit not in listed


def test_distance_that_does_not_fit_is_refused_from_the_settings_file(run, tmp_path):
    settings = tmp_path / "s.toml"
    settings.write_text('[report.distances]\nbbox = "rankings.kendall"\n')
    code, _, err = run(_mixed(), BOXES, "--bootstrap", "0", "--settings", str(settings))
    assert code == 2 and "'bbox'" in err and "boxes.iou" in err


def test_fitting_distances_are_accepted_and_match_references(run, registered):
    tasks = _mixed()
    same = registered("test.same_label", lambda a, b: float(a != b))  # a callable with no kind fits all
    code, rep, err = run(tasks, BOXES, "--bootstrap", "0", "--distance", f"good={same}",
                         "--distance", "note=nominal", "--distance", "bbox=boxes.giou")
    assert code == 0, err
    ref = _nominal_alpha(tasks, "good")
    assert rep["controls"]["good"]["distance"] == same
    assert rep["controls"]["good"]["alpha"] == pytest.approx(ref, abs=1e-9)
    # free text by exact match: nominal α of the texts
    note = [[r["value"]["text"][0] for ann in t["annotations"] for r in ann["result"] if r["from_name"] == "note"]
            for t in tasks]
    codes = {s: k for k, s in enumerate(sorted({s for row in note for s in row}))}
    data = np.array([[codes[row[a]] for row in note] for a in range(3)], dtype=float)
    assert rep["controls"]["note"]["alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"), abs=1e-9)


def test_registered_distance_of_another_kind_is_refused(run, registered):
    name = registered("test.box_only", lambda a, b: 0.0, kind="boxes")
    code, _, err = run(_mixed(), BOXES, "--bootstrap", "0", "--distance", f"good={name}")
    assert code == 2 and "does not fit control 'good'" in err
    code, rep, err = run(_mixed(), BOXES, "--bootstrap", "0", "--distance", f"bbox={name}")
    assert code == 0, err


# --- item 9: negative seed; Python warnings become report warnings ----------------------

@pytest.mark.parametrize("args, named", [(["--seed", "-1"], "--seed"), (["--bootstrap", "-1"], "--bootstrap")])
def test_negative_seed_or_bootstrap_on_the_command_line(run, args, named):
    code, out, err = run(_project(6), _config(GOOD), *args)
    assert code == 2 and out == "" and named in err and "-1" in err


def test_negative_seed_in_settings_file_or_in_code(run, tmp_path):
    settings = tmp_path / "s.toml"
    settings.write_text("[report]\nseed = -1\n")
    code, _, err = run(_project(6), _config(GOOD), "--settings", str(settings))
    assert code == 2 and "'seed'" in err
    # in code the settings model refuses it (pydantic's ValidationError, a ValueError) by name
    with pytest.raises(ValueError, match=r"\bseed\b"):
        build_report(_config(GOOD), _project(6), ReportSettings(seed=-1, bootstrap=0))
    rep = build_report(_config(GOOD), _project(6), ReportSettings(seed=2**40, bootstrap=20))
    assert rep["controls"]["good"]["alpha"] is not None and rep["controls"]["good"]["ci"]["seed"] == 2**40


def _overflowing(a, b) -> float:
    """Nominal distance that overflows a float on the way (numbers near 1e308)."""
    big = np.float64(1e308) * np.float64(10.0)  # RuntimeWarning: overflow
    return float(a != b) if np.isinf(big) else 0.0


def _deprecated(a, b) -> float:
    warnings.warn("old API", DeprecationWarning, stacklevel=1)
    return float(a != b)


def test_runtime_warnings_become_warnings_of_the_control(registered):
    over = registered("test.overflowing", _overflowing)
    old = registered("test.deprecated", _deprecated)
    with warnings.catch_warnings(record=True) as escaped:
        warnings.simplefilter("always")
        rep = build_report(BOXES, _mixed(), ReportSettings(bootstrap=0, distances={"good": over, "note": old}))
    assert not escaped, [str(w.message) for w in escaped]
    good = rep["controls"]["good"]
    assert any(w.startswith("numerical warning while computing: RuntimeWarning: overflow")
               for w in good["warnings"])
    assert sum("overflow" in w for w in good["warnings"]) == 1  # said once, not once per pair
    assert any(w.startswith("good: numerical warning") for w in rep["warnings"])
    assert good["alpha"] is not None
    # warnings about our code, not the data, are not report warnings
    assert not any("old API" in w for w in rep["warnings"])


def test_no_raw_warning_reaches_stderr_of_the_command(tmp_path):
    export, config = tmp_path / "e.json", tmp_path / "c.xml"
    export.write_text(json.dumps(_project(8)))
    config.write_text(_config(GOOD))
    script = ("import sys, numpy as np\n"
              "from ls_agreement.metrics import register\n"
              "def d(a, b):\n"
              "    big = np.float64(1e308) * np.float64(10.0)\n"
              "    return float(a != b)\n"
              "register('test.overflowing', d)\n"
              "from ls_agreement.plugin.cli import main\n"
              "sys.exit(main(sys.argv[1:]))\n")
    for fmt in ("json", "html"):
        out = tmp_path / f"r.{fmt}"
        proc = subprocess.run([sys.executable, "-W", "default", "-c", script, "report", str(export), "--config",
                               str(config), "--bootstrap", "20", "--distance", "good=test.overflowing",
                               "--format", fmt, "--out", str(out)], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert "RuntimeWarning" not in proc.stderr and "np.float64" not in proc.stderr, proc.stderr
        assert "numerical warning while computing: RuntimeWarning: overflow" in out.read_text()


def test_warnings_while_rendering_go_into_the_page(run, tmp_path, monkeypatch):
    import ls_agreement.plugin.report.render as render

    real = render.render_html

    def noisy(report):
        warnings.warn("Attempting to set identical low and high xlims", UserWarning, stacklevel=1)
        return real(report)
    monkeypatch.setattr(render, "render_html", noisy)
    page = tmp_path / "q.html"
    with warnings.catch_warnings(record=True) as escaped:
        warnings.simplefilter("always")
        code, _, err = run(_project(6), _config(GOOD), "--bootstrap", "0", "--format", "html",
                           "--out", str(page), parse=False)
    assert code == 0, err
    assert not escaped
    assert "warning while rendering the report: UserWarning: Attempting to set identical" in page.read_text()


# --- item 7, second half: the report path is reproducible from --seed --------------------

TAXONOMY = ('<View><Text name="t" value="$text"/>'
            '<Taxonomy name="tax" toName="t"><Choice value="a"><Choice value="a1"/><Choice value="a2"/></Choice>'
            '<Choice value="b"/></Taxonomy>'
            '<Choices name="multi" toName="t" choice="multiple"><Choice value="x"/><Choice value="y"/>'
            '<Choice value="z"/></Choices>'
            '<Labels name="ner" toName="t"><Label value="P"/><Label value="O"/></Labels></View>')


def _taxonomy_project() -> list[dict]:
    rng = random.Random(11)
    text = "Alice met Bob in Paris and then went to London with Carol"
    tasks = []
    for i in range(1, 13):
        anns = []
        for a in (1, 2, 3, 4):
            start = rng.choice([0, 10, 17])
            anns.append({"id": i * 10 + a, "completed_by": a, "result": [
                {"from_name": "tax", "to_name": "t", "type": "taxonomy",
                 "value": {"taxonomy": rng.sample([["a", "a1"], ["a", "a2"], ["b"], ["a"]], rng.randint(1, 2))}},
                {"from_name": "multi", "to_name": "t", "type": "choices",
                 "value": {"choices": rng.sample(["x", "y", "z"], rng.randint(0, 3))}},
                {"from_name": "ner", "to_name": "t", "type": "labels",
                 "value": {"start": start, "end": start + 5, "labels": [rng.choice("PO")]}}]})
        tasks.append({"id": i, "data": {"text": text}, "annotations": anns})
    return tasks


def test_report_is_the_same_under_any_hash_seed(tmp_path):
    export, config, settings = tmp_path / "e.json", tmp_path / "c.xml", tmp_path / "s.toml"
    export.write_text(json.dumps(_taxonomy_project()))
    config.write_text(TAXONOMY)
    settings.write_text('[report.groups]\ncrowd = ["1", "2"]\nexperts = ["3", "4"]\n')
    outs = set()
    for hash_seed in ("0", "1", "2"):
        proc = subprocess.run([sys.executable, "-m", "ls_agreement.plugin.cli", "report", str(export), "--config",
                               str(config), "--settings", str(settings), "--bootstrap", "40", "--seed", "9"],
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, "PYTHONHASHSEED": hash_seed})
        assert proc.returncode == 0, proc.stderr
        outs.add(proc.stdout)
    assert len(outs) == 1
    rep = json.loads(outs.pop())
    # every section whose order could follow set iteration is there and computed
    for name in ("tax", "multi", "ner"):
        assert rep["controls"][name]["alpha"] is not None, name
        assert rep["controls"][name]["kappa_x"]["crowd vs experts"]["kappa_x"] is not None, name
        assert "crowdtruth" in rep["controls"][name], name

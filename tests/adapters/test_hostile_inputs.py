"""Hostile exports and configs found by a new user: exit 2 naming the place, or a warning.

Each case is one regression of issue 9 (items 2-7 and 9), run through the command line
as a user would, in-process (``main``) so the suite stays fast.
"""
from __future__ import annotations

import copy
import json
import random
import time
from pathlib import Path

import pytest

from ls_agreement.plugin.cli import main

CONFIG = """<View><Image name="img" value="$image"/>
<RectangleLabels name="bbox" toName="img"><Label value="Car"/><Label value="Person"/></RectangleLabels>
<Text name="text" value="$text"/>
<Labels name="ner" toName="text"><Label value="PER"/><Label value="ORG"/></Labels>
<Choices name="topics" toName="text"><Choice value="A"/><Choice value="B"/></Choices>
<Number name="n" toName="text"/></View>"""


def _tasks(n: int = 8, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    tasks = []
    for t in range(1, n + 1):
        anns = []
        for a in range(1, 4):
            res = [
                {"from_name": "topics", "to_name": "text", "type": "choices",
                 "value": {"choices": [rng.choice("AB")]}},
                {"from_name": "n", "to_name": "text", "type": "number", "value": {"number": rng.random()}},
                {"from_name": "ner", "to_name": "text", "type": "labels",
                 "value": {"start": 0, "end": 5, "labels": ["PER"]}},
                {"from_name": "bbox", "to_name": "img", "type": "rectanglelabels", "original_width": 100,
                 "original_height": 100, "value": {"x": 10 + rng.random() * 5, "y": 10, "width": 20,
                                                    "height": 20, "rectanglelabels": ["Car"]}},
            ]
            anns.append({"id": t * 10 + a, "completed_by": a, "result": res,
                         "updated_at": "2024-01-01T00:00:00Z"})
        tasks.append({"id": t, "data": {"image": "x.png", "text": "hello world"}, "annotations": anns})
    return tasks


@pytest.fixture
def files(tmp_path: Path):
    def write(tasks: list | bytes, config: str = CONFIG) -> tuple[str, str]:
        exp, cfg = tmp_path / "export.json", tmp_path / "config.xml"
        exp.write_bytes(tasks if isinstance(tasks, bytes) else json.dumps(tasks).encode())
        cfg.write_text(config)
        return str(exp), str(cfg)
    return write


def run(capsys, export: str, config: str, *extra: str) -> tuple[int, str, str]:
    code = main(["report", export, "--config", config, "--bootstrap", "0", *extra])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def _mutate(path: tuple, value) -> list[dict]:
    tasks = _tasks()
    node = tasks
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return tasks


RESULT = (0, "annotations", 0, "result")

CASES = {
    # name: (tasks, fragment of the strict error, field)
    "from_name_list": (_mutate(RESULT + (0, "from_name"), ["topics"]), "from_name", "result[0].from_name"),
    "from_name_dict": (_mutate(RESULT + (0, "from_name"), {"a": 1}), "from_name", "result[0].from_name"),
    "number_400_digits": (_mutate(RESULT + (1, "value", "number"), 10 ** 400), "too large",
                          "result[1].value.number"),
    "updated_at_400_digits": (_mutate((0, "annotations", 0, "updated_at"), 10 ** 400),
                              "unusable timestamp", "updated_at"),
    "rectangle_label_undeclared": (_mutate(RESULT + (3, "value", "rectanglelabels"), ["Truck"]),
                                   "not in the config", "result[3].value.rectanglelabels"),
    "span_label_undeclared": (_mutate(RESULT + (2, "value", "labels"), ["MISC"]), "not in the config",
                              "result[2].value.labels"),
    "box_x_400_digits": (_mutate(RESULT + (3, "value", "x"), -10 ** 400), "out of range",
                         "result[3].value.x"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_strict_exit_2_names_the_place_lenient_warns(name, files, capsys):
    tasks, fragment, field = CASES[name]
    export, config = files(tasks)
    code, _, err = run(capsys, export, config, "--strict")
    assert code == 2, err
    assert fragment in err and f"'{field}'" in err and "task 1" in err and "annotation 11" in err
    code, out, err = run(capsys, export, config)
    assert code == 0, err
    assert any(fragment in w for w in json.loads(out)["warnings"])


def test_task_ids_differing_only_in_type_are_refused(files, capsys):
    tasks = _tasks()
    tasks[1]["id"] = "1"
    code, _, err = run(capsys, *files(tasks))
    assert code == 2 and "differ only in type" in err and "tasks[1].id" in err


def test_utf8_bom_before_one_line_json(files, capsys):
    code, out, err = run(capsys, *files(b"\xef\xbb\xbf" + json.dumps(_tasks()).encode()))
    assert code == 0, err
    assert json.loads(out)["n_tasks"] == 8


def test_taxonomy_3000_levels_deep(files, capsys):
    config = ("<View><Text name='t' value='$text'/><Taxonomy name='tax' toName='t'>"
              + "<Choice value='a'>" * 3000 + "</Choice>" * 3000 + "</Taxonomy></View>")
    tasks = [{"id": i, "data": {"text": "x"}, "annotations": [
        {"id": i * 10 + a, "completed_by": a, "result": [
            {"from_name": "tax", "to_name": "t", "type": "taxonomy", "value": {"taxonomy": [["a", "a"]]}}]}
        for a in (1, 2)]} for i in range(1, 4)]
    code, out, err = run(capsys, *files(tasks, config), "--strict")
    assert code == 0, err
    assert json.loads(out)["controls"]["tax"]["n_items"] == 3


def test_huge_max_rating_allocates_nothing(files, capsys):
    config = "<View><Text name='t' value='$text'/><Rating name='r' toName='t' maxRating='100000000'/></View>"
    tasks = [{"id": i, "data": {"text": "x"}, "annotations": [
        {"id": i * 10 + a, "completed_by": a, "result": [
            {"from_name": "r", "to_name": "t", "type": "rating", "value": {"rating": 99_999_000 + a * i}}]}
        for a in (1, 2, 3)]} for i in range(1, 6)]
    t0 = time.perf_counter()
    code, out, err = run(capsys, *files(tasks, config), "--strict")
    assert code == 0, err
    assert time.perf_counter() - t0 < 30  # the bug took 65 s and then ran out of memory
    code, _, err = run(capsys, *files(tasks, config.replace("100000000", "1" * 400)))
    assert code == 2 and "maxRating" in err


def test_config_attribute_cannot_overwrite_internal_names(files, capsys):
    config = ("<View><Text name='t' value='$text'/><Taxonomy name='tax' toName='t' __prefixes__='x' "
              "_known='y'><Choice value='a'><Choice value='b'/></Choice></Taxonomy></View>")
    tasks = [{"id": i, "data": {"text": "x"}, "annotations": [
        {"id": i * 10 + a, "completed_by": a, "result": [
            {"from_name": "tax", "to_name": "t", "type": "taxonomy", "value": {"taxonomy": [["zzz"]]}}]}
        for a in (1, 2)]} for i in range(1, 4)]
    code, _, err = run(capsys, *files(tasks, config), "--strict")
    assert code == 2 and "'zzz'" in err and "not in the config" in err


def test_config_attributes_never_reach_spec_fields():
    from ls_agreement.adapters.config import parse_config

    hostile = " ".join(f'{a}="X"' for a in ("known", "taxonomy_tree", "labels", "scale", "multiple",
                                            "dynamic", "closed", "number_range", "__dict__", "__class__"))
    cfg = parse_config(f"<View><Text name='t' value='$text'/><Choices name='c' toName='t' {hostile}>"
                       "<Choice value='A'/></Choices><Taxonomy name='x' toName='t' {hostile}>"
                       "<Choice value='a'/></Taxonomy></View>".replace("{hostile}", hostile), strict=True)
    c, x = cfg.controls["c"], cfg.controls["x"]
    assert c.known == frozenset({"A"}) and c.labels == ["A"] and c.closed and not c.dynamic
    assert not c.multiple and c.scale is None and c.number_range == (None, None)
    assert x.taxonomy_tree == {"a": {}} and x.unknown_path(["b"]) and not x.unknown_path(["a"])
    assert c.attrs["known"] == "X"   # kept as data, nothing more


def _single_control_tasks(control: str, results: list[dict]) -> list[dict]:
    return [{"id": i, "data": {"text": "Alice met Bob", "opts": [{"value": "Z"}], "labs": [{"value": "Q"}]},
             "annotations": [{"id": i * 10 + a, "completed_by": a, "result": [dict(r, from_name=control, to_name="t")
                                                                              for r in results]}
                             for a in (1, 2)]} for i in (1, 2, 3)]


@pytest.mark.parametrize("tag, result", [
    ("<Choices name='c' toName='t' value='$opts'><Choice value='A'/></Choices>",
     {"type": "choices", "value": {"choices": ["Z"]}}),
    ("<Choices name='c' toName='t' value='$opts' choice='multiple'/>",
     {"type": "choices", "value": {"choices": ["Z", "Y"]}}),
    ("<Labels name='c' toName='t' value='$labs'><Label value='PER'/></Labels>",
     {"type": "labels", "value": {"start": 0, "end": 5, "labels": ["Q"]}}),
    ("<Taxonomy name='c' toName='t' apiUrl='https://example.org/tax'/>",
     {"type": "taxonomy", "value": {"taxonomy": [["Anything", "Deep"]]}}),
])
def test_dynamic_answers_stay_allowed_in_strict(tag, result, files, capsys):
    """Label Studio loads Labels/Choices from task data with value="$..." (labelstud.io/tags/
    labels, /tags/choices): such answers are not "undeclared"."""
    config = f"<View><Text name='t' value='$text'/>{tag}</View>"
    code, out, err = run(capsys, *files(_single_control_tasks("c", [result]), config), "--strict")
    assert code == 0, err
    assert json.loads(out)["controls"]["c"]["n_items"] == 3


def test_choice_and_label_aliases_are_declared_answers(files, capsys):
    """A Choice's alias replaces its value in results (labelstud.io/tags/choice)."""
    config = ("<View><Text name='t' value='$text'/><Choices name='c' toName='t'>"
              "<Choice value='Positive' alias='pos'/><Choice value='Negative'/></Choices></View>")
    results = [{"type": "choices", "value": {"choices": ["pos"]}}]
    code, _, err = run(capsys, *files(_single_control_tasks("c", results), config), "--strict")
    assert code == 0, err
    results = [{"type": "choices", "value": {"choices": ["neg"]}}]
    code, _, err = run(capsys, *files(_single_control_tasks("c", results), config), "--strict")
    assert code == 2 and "['neg'] not in the config" in err


@pytest.mark.parametrize("body", [
    "<Rating name='r' toName='t' maxRating='999999999999999999'/>",          # 10^18 declared answers
    "<Taxonomy name='r' toName='t'>" + "<Choice value='deep'>" * 2000
    + "".join(f"<Choice value='leaf{k}'/>" for k in range(2000)) + "</Choice>" * 2000 + "</Taxonomy>",
])
def test_declared_sizes_allocate_nothing(body):
    """Parsing a config whose declared answers are astronomically many (a 10^18-point rating
    scale; a 2,000-deep taxonomy with 2,000 leaves, 8 * 10^6 path characters) stays small."""
    import tracemalloc

    from ls_agreement.adapters.config import parse_config

    xml = f"<View><Text name='t' value='$text'/><TextArea name='n' toName='t'/>{body}</View>"
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        cfg = parse_config(xml)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - t0 < 10
    assert peak < 64 * 2 ** 20, peak
    assert "r" in cfg.controls or any("too large" in w for w in cfg.warnings)


def test_utf16_export_is_not_taken_for_csv(files, capsys):
    code, out, err = run(capsys, *files(json.dumps(_tasks()).encode("utf-16-be")))
    assert code == 0, err
    assert json.loads(out)["n_tasks"] == 8


def test_unhashable_result_type_is_bad_input(files, capsys):
    code, _, err = run(capsys, *files(_mutate(RESULT + (0, "type"), {"a": 1})), "--strict")
    assert code == 2 and "field 'result[0].type'" in err and "task 1" in err and "annotation 11" in err


@pytest.mark.parametrize("spec, fits", [("bbox=nominal", "boxes.iou"), ("topics=rankings.kendall", "nominal"),
                                        ("topics=ordinal", "nominal"), ("ner=boxes.iou", "spans.lenient")])
def test_distance_that_does_not_fit_the_control_is_refused(spec, fits, files, capsys):
    code, _, err = run(capsys, *files(_tasks()), "--distance", spec)
    assert code == 2 and "does not fit" in err and fits in err


def test_negative_seed_is_refused(files, capsys):
    code, _, err = run(capsys, *files(_tasks()), "--seed", "-1")
    assert code == 2 and "--seed" in err


def test_overlapping_annotator_pools_are_refused(files, capsys, tmp_path):
    settings = tmp_path / "s.toml"
    settings.write_text('[report.groups]\ncrowd = ["1", "2"]\nexperts = ["2", 3]\n')
    code, _, err = run(capsys, *files(_tasks()), "--settings", str(settings))
    assert code == 2 and "'2'" in err and "crowd" in err and "experts" in err


def _no_variation_project() -> tuple[list[dict], str]:
    config = """<View><Text name="t" value="$text"/>
<Choices name="unused" toName="t" choice="multiple"><Choice value="x"/><Choice value="y"/></Choices>
<Choices name="same" toName="t"><Choice value="A"/><Choice value="B"/></Choices>
<Choices name="good" toName="t"><Choice value="A"/><Choice value="B"/><Choice value="C"/></Choices></View>"""
    rng = random.Random(3)
    tasks = []
    for i in range(1, 31):
        truth = rng.choice("ABC")
        anns = []
        for a in (1, 2, 3):
            guess = truth if rng.random() < 0.8 else rng.choice("ABC")
            anns.append({"id": i * 10 + a, "completed_by": a, "result": [
                {"from_name": "same", "to_name": "t", "type": "choices", "value": {"choices": ["A"]}},
                {"from_name": "good", "to_name": "t", "type": "choices", "value": {"choices": [guess]}}]})
        tasks.append({"id": i, "data": {"text": "x"}, "annotations": anns})
    return tasks, config


def test_control_without_variation_is_not_measured_and_flags_nothing(files, capsys):
    tasks, config = _no_variation_project()
    code, out, err = run(capsys, *files(tasks, config))
    assert code == 0, err
    rep = json.loads(out)
    good = rep["controls"]["good"]
    assert good["status"] == "ok" and good["alpha"] is not None
    for name in ("unused", "same"):
        c = rep["controls"][name]
        assert c["status"] == "no_variation" and "no variation" in c["reason"]
        assert c["alpha"] is None and c["ks"] is None and c["sigma"] is None
        assert not any(i["flag"] for i in c["items"].values())
        assert not any("piled at the high end" in d for d in c["diagnostics"])
    # flags and task σ come from the measured control alone
    flagged_good = {k for k, i in good["items"].items() if i["flag"]}
    assert {k for k, t in rep["tasks"].items() if t["flag"]} == flagged_good
    assert all(t["sigma"] == good["items"][k]["sigma"] for k, t in rep["tasks"].items())
    for a, rec in rep["annotators"].items():
        assert set(rec["controls"]) == {"good"}
        assert rec["sigma"] == pytest.approx(good["annotators"][a]["sigma"])


def test_quality_page_says_why_a_control_is_not_measured(files, capsys, tmp_path):
    tasks, config = _no_variation_project()
    page = tmp_path / "q.html"
    code, _, err = run(capsys, *files(tasks, config), "--format", "html", "--out", str(page))
    assert code == 0, err
    text = page.read_text()
    assert "Not measured" in text and "no variation" in text


def test_control_with_one_pairable_task_is_not_measured(files, capsys):
    tasks = _tasks()
    for t in tasks[1:]:
        t["annotations"] = t["annotations"][:1]
    code, out, err = run(capsys, *files(tasks))
    assert code == 0, err
    rep = json.loads(out)
    for c in rep["controls"].values():
        assert c["status"] == "unpairable" and c["sigma"] is None
    assert not any(t["flag"] for t in rep["tasks"].values())


def test_lenient_mode_never_loses_the_good_tasks(files, capsys):
    tasks = copy.deepcopy(_tasks())
    tasks[0]["annotations"][0]["result"][0]["from_name"] = ["topics"]
    code, out, _ = run(capsys, *files(tasks))
    rep = json.loads(out)
    assert code == 0 and rep["controls"]["topics"]["n_items"] == 8

"""The hostile-input corpus (broken/, made by broken/make_corpus.py; see its docstring).

Every case runs through ``ls-agreement report`` in-process (``main``), in both modes:

- strict: exit 2 with a message naming the task, annotation and field (as they apply);
- lenient (the default): exit 0 with a warning naming the same place, or, for an
  unreadable file or config, the same clear exit-2 error;
- odd but readable inputs (``tolerated``): exit 0 in both modes, every task read;
- never exit 1, never a traceback.

The adapter-level tests check the same cases on ``adapt``/``parse_config`` (the error's
attributes), and a few cases run as real subprocesses, end to end.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest

from ls_agreement.adapters.adapt import adapt
from ls_agreement.adapters.config import parse_config
from ls_agreement.adapters.errors import AdapterError
from ls_agreement.adapters.export_stream import load_export
from ls_agreement.plugin.cli import main

from .conftest import BROKEN, DATA

MANIFEST = json.loads((BROKEN / "manifest.json").read_text())
IDS = [e["file"] for e in MANIFEST]
DEFAULT_CONFIG = DATA / "label_config.xml"
CONFIG_EXPORT = BROKEN / "_config_export.json"


def _paths(case: dict) -> tuple[str, str]:
    """(export, config) a case runs on."""
    own = BROKEN / case["file"]
    is_config = own.suffix == ".xml"
    export = BROKEN / case["export"] if "export" in case else (CONFIG_EXPORT if is_config else own)
    config = BROKEN / case["config"] if "config" in case else (own if is_config else DEFAULT_CONFIG)
    return str(export), str(config)


def _cli(capsys, case: dict, *mode: str) -> tuple[int, str, str]:
    export, config = _paths(case)
    code = main(["report", export, "--config", config, "--bootstrap", "0", *case.get("args", []), *mode])
    out, err = capsys.readouterr()
    assert code != 1, err               # never an internal error
    assert "Traceback" not in err, err
    return code, out, err


def _place(case: dict) -> list[str]:
    """What a message about this case must name."""
    out = []
    if "task_id" in case:
        out.append(f"task {case['task_id']}")
    if "annotation_id" in case:
        out.append(f"annotation {case['annotation_id']}")
    if "field" in case:
        out.append(f"{case['field']}")
    return out


def test_corpus_is_large_and_distinct():
    assert len(MANIFEST) >= 150
    assert len(set(IDS)) == len(IDS)
    assert all((BROKEN / e["file"]).exists() for e in MANIFEST)
    # distinct inputs: no two cases are the same file on the same config and options
    keys = {(hashlib.sha256((BROKEN / e["file"]).read_bytes()).hexdigest(), _paths(e)[1],
             tuple(e.get("args", []))) for e in MANIFEST}
    assert len(keys) == len(MANIFEST)
    levels = {e["level"] for e in MANIFEST}
    assert levels == {"file", "task", "config", "tolerated"}
    # every kind of control is covered
    text = " ".join(IDS)
    for kind in ("rect", "polygon", "keypoint", "span", "hypertext", "textarea", "ranker", "bucket",
                 "choice", "rating", "number", "datetime", "taxonomy", "pairwise", "utf16", "bom"):
        assert kind in text, kind


@pytest.mark.parametrize("case", MANIFEST, ids=IDS)
def test_cli_strict(case, capsys):
    code, out, err = _cli(capsys, case, "--strict")
    if case["level"] == "tolerated":
        assert code == 0, err
        assert json.loads(out)["n_tasks"] == case["n_tasks"]
        return
    assert code == 2, err
    assert out == ""
    assert case["fragment"] in err, err
    for place in _place(case):
        assert place in err, (place, err)
    if "field" in case:
        assert f"field '{case['field']}'" in err, err


@pytest.mark.parametrize("case", MANIFEST, ids=IDS)
def test_cli_lenient(case, capsys):
    code, out, err = _cli(capsys, case)
    if case["level"] == "file" or case.get("lenient") == "raise":
        # unreadable as a whole (a file that is no export, a config that is no config, an
        # ambiguous export): the same clear error as in strict mode
        assert code == 2 and out == "", err
        assert case["fragment"] in err, err
        return
    assert code == 0, err
    report = json.loads(out)
    warnings = report["warnings"]
    if case["level"] == "tolerated":
        assert report["n_tasks"] == case["n_tasks"]
        if "warning" in case:
            assert any(case["warning"] in w for w in warnings), warnings
        return
    hits = [w for w in warnings if case["fragment"] in w]
    assert hits, warnings
    place = _place(case)
    assert any(all(p in w for p in place) for w in hits), (place, hits)
    if case.get("lenient") not in (None, "warn"):
        assert any(case["lenient"] in w for w in hits), hits   # value kept / resolved, with a warning
    elif case["level"] == "task" and "field" in case:
        assert any("(skipped)" in w for w in hits), hits


@pytest.mark.parametrize("case", [e for e in MANIFEST if e["level"] != "tolerated"],
                         ids=[e["file"] for e in MANIFEST if e["level"] != "tolerated"])
def test_strict_raises_adapter_error_naming_the_place(case):
    export, config = _paths(case)
    with pytest.raises(AdapterError) as info:
        if case["level"] == "config":
            parse_config((BROKEN / case["file"]).read_text(), strict=True)
        else:
            adapt(open(config).read(), load_export(export), strict=True,
                  include_predictions="--include-predictions" in case.get("args", []))
    err = info.value
    assert case["fragment"] in str(err)
    assert isinstance(err, ValueError)
    if "task_id" in case:
        assert err.task_id == case["task_id"] and f"task {case['task_id']}" in str(err)
    if "annotation_id" in case:
        assert err.annotation_id == case["annotation_id"]
    if "field" in case:
        assert err.field == case["field"], str(err)


def test_lenient_skips_only_the_bad_result():
    config_xml = DEFAULT_CONFIG.read_text()
    tasks = load_export(BROKEN / "rect_x_nan.json")
    good = dict(tasks[0]["annotations"][0]["result"][0])
    good["value"] = dict(good["value"], x=1.0)
    tasks[0]["annotations"][0]["result"].append(good)
    out = adapt(config_xml, tasks)
    boxes = out.controls["bbox"].table["value"].tolist()
    assert len(boxes) == 1 and len(boxes[0]) == 1
    assert boxes[0][0].x == pytest.approx(6.4)   # 1 % of 640 px


def test_corpus_is_up_to_date(tmp_path):
    """make_corpus.py regenerates exactly the committed manifest (the list grows there)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_corpus", BROKEN / "make_corpus.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    names = [c[0] for c in mod.CASES + mod.generated_cases()]
    names += [c[0] for c in mod.CONFIG_CASES + mod.generated_config_cases()]
    assert sorted(n.rsplit(".", 1)[0] for n in IDS) == sorted(names)


# (case, mode): a handful of real processes, for the console entry point end to end
END_TO_END = [("rect_x_nan.json", "--strict"), ("from_name_list.json", "--lenient"),
              ("number_5000_digits.json", "--lenient"), ("utf8_bom_one_line.json", "--strict"),
              ("config_pairwise_one_object.xml", "--strict")]


@pytest.mark.parametrize("name, mode", END_TO_END)
def test_end_to_end_subprocess(name, mode):
    case = next(e for e in MANIFEST if e["file"] == name)
    export, config = _paths(case)
    strict = ["--strict"] if mode == "--strict" else []
    proc = subprocess.run([sys.executable, "-m", "ls_agreement.plugin.cli", "report", export, "--config",
                           config, "--bootstrap", "0", *strict], capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 2) and "Traceback" not in proc.stderr, proc.stderr
    if case["level"] == "tolerated":
        assert proc.returncode == 0 and json.loads(proc.stdout)["n_tasks"] == case["n_tasks"]
    elif strict or case["level"] == "file" or case.get("lenient") == "raise":
        assert proc.returncode == 2 and case["fragment"] in proc.stderr
        assert all(p in proc.stderr for p in _place(case)), proc.stderr
    else:
        assert proc.returncode == 0 and any(case["fragment"] in w for w in json.loads(proc.stdout)["warnings"])

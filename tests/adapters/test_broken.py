"""The broken-export corpus: strict mode names task/annotation/field, lenient mode warns."""
from __future__ import annotations

import json

import pytest

from ls_agreement.adapters.adapt import adapt
from ls_agreement.adapters.config import parse_config
from ls_agreement.adapters.errors import AdapterError
from ls_agreement.adapters.tasks import load_export

from .conftest import BROKEN

MANIFEST = json.loads((BROKEN / "manifest.json").read_text())


def test_corpus_is_large_enough():
    assert len(MANIFEST) >= 40
    assert all((BROKEN / e["file"]).exists() for e in MANIFEST)


@pytest.mark.parametrize("case", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_strict_raises_adapter_error_naming_the_place(case, config_xml):
    path = BROKEN / case["file"]
    with pytest.raises(AdapterError) as info:
        if case["level"] == "config":
            parse_config(path.read_text(), strict=True)
        else:
            adapt(config_xml, load_export(path), strict=True)
    err = info.value
    assert case["fragment"] in str(err)
    assert isinstance(err, ValueError)
    if "task_id" in case:
        assert err.task_id == case["task_id"] and f"task {case['task_id']}" in str(err)
    if "annotation_id" in case:
        assert err.annotation_id == case["annotation_id"]
    if "field" in case:
        assert err.field == case["field"], str(err)


@pytest.mark.parametrize("case", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_lenient_skips_and_warns(case, config_xml):
    path = BROKEN / case["file"]
    if case["level"] == "file" or case.get("lenient") == "raise":
        # an unreadable file or config cannot be skipped: same clear error in both modes
        with pytest.raises(AdapterError, match=None) as info:
            if case["level"] == "config":
                parse_config(path.read_text(), strict=False)
            else:
                load_export(path)
        assert case["fragment"] in str(info.value)
        return
    if case["level"] == "config":
        cfg = parse_config(path.read_text(), strict=False)
        assert any(case["fragment"] in w for w in cfg.warnings)
        return
    out = adapt(config_xml, load_export(path), strict=False)
    hits = [w for w in out.warnings if case["fragment"] in w]
    assert hits, out.warnings
    if case.get("lenient") not in (None, "raise", "warn"):
        assert any(case["lenient"] in w for w in hits)   # value kept, with a warning
    elif "field" in case:
        assert any(case["field"] in w and "(skipped)" in w for w in hits)


def test_lenient_skips_only_the_bad_result(config_xml):
    tasks = load_export(BROKEN / "rect_x_nan.json")
    good = dict(tasks[0]["annotations"][0]["result"][0])
    good["value"] = dict(good["value"], x=1.0)
    tasks[0]["annotations"][0]["result"].append(good)
    out = adapt(config_xml, tasks)
    boxes = out.controls["bbox"].table["value"].tolist()
    assert len(boxes) == 1 and len(boxes[0]) == 1
    assert boxes[0][0].x == pytest.approx(6.4)   # 1 % of 640 px

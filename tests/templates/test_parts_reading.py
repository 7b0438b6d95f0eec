"""Every shipped template's export read in parts side by side (issue 24;
adapters/export_stream.py ``split_export``/``iter_part``, adapters/adapt.py
``read_part``/``adapt_parts``): the joined parts are the one reading of the whole -- the
same tables, warnings, names, texts and ground truth -- for every control tag, the
regions that relations and per-region answers point at, masks, tracks and conversations
included."""
from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from ls_agreement.adapters import export_stream
from ls_agreement.adapters.adapt import adapt, adapt_parts, read_part
from ls_agreement.adapters.config import parse_config
from ls_agreement.adapters.errors import AdapterError
from ls_agreement.adapters.export_stream import iter_export, iter_part, split_export

from .extra_configs import EXTRA_CONFIGS
from .generator import generate_export
from .ls_templates import load_templates, templates_dir

_DIR, _WHY = templates_dir()
_CONFIGS = {t.key: t.config for t in load_templates(_DIR)} if _DIR is not None else {}
_CONFIGS.update(EXTRA_CONFIGS)


def _cut_export(key: str, seed: int, tmp_path, monkeypatch) -> tuple:
    """Template ``key``'s generated export written under ``tmp_path`` and its parts: of
    about a fifth of the file each, so that every template's export is cut."""
    tasks = generate_export(_CONFIGS[key], "careless", seed=seed, n_tasks=24).tasks
    path = tmp_path / "export.json"
    text = json.dumps(tasks, indent=1)
    path.write_text(text, encoding="utf-8")
    monkeypatch.setattr(export_stream, "CHUNK_CHARS", max(len(text) // 6, 64))
    pieces = split_export(path, 4)
    assert pieces is not None and len(pieces) >= 2, key
    return path, pieces


@pytest.mark.parametrize("key", sorted(_CONFIGS))
def test_a_template_export_read_in_parts_is_the_export_read_whole(key, tmp_path, monkeypatch):
    xml = _CONFIGS[key]
    path, pieces = _cut_export(key, 11, tmp_path, monkeypatch)
    try:
        whole = adapt(xml, iter_export(path))
    except AdapterError as exc:          # nothing measurable: the parts say the same
        with pytest.raises(type(exc), match=re.escape(str(exc)[:60])):
            read_part(xml, iter_part(pieces[0]))
        return
    joined = adapt_parts(xml, [read_part(xml, iter_part(p)) for p in pieces])
    assert list(joined.controls) == list(whole.controls) and joined.n_tasks == whole.n_tasks
    assert joined.warnings == whole.warnings
    for n, w in whole.controls.items():
        j = joined.controls[n]
        pd.testing.assert_frame_equal(j.table, w.table, obj=f"{key}: {n}")
        assert (j.texts, j.annotator_names, j.ground_truth, j.warnings) == (w.texts, w.annotator_names,
                                                                           w.ground_truth, w.warnings), n


@pytest.mark.parametrize("key", sorted(_CONFIGS))
def test_a_template_export_built_from_part_files_is_the_export_read_whole(key, tmp_path, monkeypatch):
    """The report's reading of a big export (adapters/part_files.py): each part's cells
    written to files, each control joined and built from them alone -- planned part by
    part, or, where it points at regions, with the controls it points at -- is the one
    reading of the whole, and so are the facts the report takes from the parts."""
    from ls_agreement.adapters.part_files import SpilledParts, write_part
    from ls_agreement.plugin.report.build import tasks_per_annotator

    xml = _CONFIGS[key]
    path, pieces = _cut_export(key, 5, tmp_path, monkeypatch)
    try:
        whole = adapt(xml, iter_export(path))
    except AdapterError:
        return                           # nothing measurable (the test above)
    shown = {a: f"name of {a}" for c in whole.controls.values() for a in map(str, c.table["annotator"].unique())}
    shown["nobody"] = "a name for no annotator"
    cfg = parse_config(xml)
    files = [write_part(cfg, read_part(cfg, iter_part(p)), str(tmp_path), k) for k, p in enumerate(pieces)]
    spilled = SpilledParts(parse_config(xml), files, annotator_names=shown)
    assert list(spilled) == list(whole.controls) and spilled.n_tasks == whole.n_tasks
    assert spilled.warnings == whole.warnings
    assert spilled.tasks_of == tasks_per_annotator(whole.controls.values())
    assert spilled.answers == {n: len(c.table) for n, c in whole.controls.items()}
    names = {}
    for c in whole.controls.values():
        names.update(c.annotator_names)
    names.update({a: n for a, n in shown.items() if a in spilled.tasks_of})
    assert spilled.names == names
    # controls read back in any order, each from its files alone
    for n in reversed(list(whole.controls)):
        w, j = whole.controls[n], spilled[n]
        pd.testing.assert_frame_equal(j.table, w.table, obj=f"{key}: {n}")
        seen = set(w.table["annotator"].astype(str))
        assert j.annotator_names == {**w.annotator_names, **{a: v for a, v in shown.items() if a in seen}}, n
        assert (j.texts, j.ground_truth, j.warnings) == (w.texts, w.ground_truth, w.warnings), n
        del spilled[n]
    assert not [f for f in tmp_path.iterdir() if f.name.startswith("part-")]   # released: files gone

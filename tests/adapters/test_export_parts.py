"""An export read in parts side by side (adapters/export_stream.py ``split_export`` and
``iter_part``, adapters/adapt.py ``read_part`` and ``adapt_parts``; issue 24): the parts
read clean are the whole export read in order, a cut that is no task's start is caught,
and the joined reading is the one reading of the whole. The command's report with worker
processes (which reads in parts) is checked byte for byte against one process in
tests/plugin/test_report_parallel.py."""
from __future__ import annotations

import json
import random

import pandas as pd
import pytest

from ls_agreement.adapters import export_stream
from ls_agreement.adapters.adapt import adapt, adapt_parts, read_part
from ls_agreement.adapters.errors import PartsDiffer
from ls_agreement.adapters.export_stream import iter_export, iter_part, split_export
from ls_agreement.demo.data import ANNOTATORS, DEMO_CONFIG, generate

USERS = {a.email: 10 + k for k, a in enumerate(ANNOTATORS)}


@pytest.fixture
def small_chunks(monkeypatch):
    """Parts of a few kilobytes (a file is cut when each part holds a chunk or more)."""
    monkeypatch.setattr(export_stream, "CHUNK_CHARS", 2048)


def _tasks(n: int, seed: int) -> list[dict]:
    return [{**t, "id": k} for k, t in enumerate(generate(USERS, n_tasks=n, seed=seed).tasks, start=1)]


def _write(path, tasks, indent=None, decoys=False) -> None:
    if decoys:
        # objects inside a task that look like a task's start to the cut: ", {" then an
        # object with "data", followed by a comma
        for t in tasks:
            t["data"]["pages"] = [{"data": "p1", "n": 1}, {"data": "p2", "n": 2}, {"data": "p3"}]
    path.write_text(json.dumps(tasks, indent=indent, ensure_ascii=False), encoding="utf-8")


def _read_parts(path, parts: int) -> list:
    pieces = split_export(path, parts)
    assert pieces is not None and len(pieces) > 1
    return pieces


@pytest.mark.parametrize("indent", [None, 1, 4])
@pytest.mark.parametrize("parts", [2, 3, 7])
def test_parts_read_clean_are_the_whole_export_in_order(tmp_path, small_chunks, indent, parts):
    path = tmp_path / "export.json"
    _write(path, _tasks(40, seed=parts), indent=indent)
    pieces = _read_parts(path, parts)
    assert pieces[0].first and pieces[-1].last and not any(p.first for p in pieces[1:])
    assert all(a.end == b.start for a, b in zip(pieces, pieces[1:]))
    assert [t for p in pieces for t in iter_part(p)] == list(iter_export(path))


def test_a_cut_inside_a_task_is_caught(tmp_path, small_chunks, monkeypatch):
    path = tmp_path / "export.json"
    _write(path, _tasks(40, seed=3), decoys=True)
    whole = list(iter_export(path))
    caught = 0
    for seed in range(30):
        # cuts at the decoys too: every object with "data" followed by a comma passes the guess
        rng = random.Random(seed)
        monkeypatch.setattr(export_stream, "_is_task_at", lambda fh, start: rng.random() < 0.5)
        pieces = split_export(path, 4)
        if pieces is None:
            continue
        try:
            got = [t for p in pieces for t in iter_part(p)]
        except PartsDiffer:
            caught += 1
            continue
        assert got == whole          # a part read clean stands for the whole
    assert caught > 0


def test_what_cannot_be_cut(tmp_path, small_chunks):
    tasks = _tasks(40, seed=1)
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"tasks": tasks}), encoding="utf-8")       # a snapshot-shaped export
    utf16 = tmp_path / "utf16.json"
    utf16.write_text(json.dumps(tasks), encoding="utf-16")
    small = tmp_path / "small.json"                                      # less than a chunk a part
    small.write_text(json.dumps([{"id": 1, "data": {"t": "x"}}, {"id": 2, "data": {"t": "y"}}]), encoding="utf-8")
    assert split_export(one, 3) is None and split_export(utf16, 3) is None and split_export(small, 3) is None
    assert split_export(tmp_path / "missing.json", 3) is None
    bad = tmp_path / "bad.json"
    text = json.dumps(tasks)
    bad.write_text(text[: len(text) * 3 // 4] + "x" + text[len(text) * 3 // 4:], encoding="utf-8")
    pieces = split_export(bad, 2)                 # cut before the broken text: its part says so
    assert pieces is not None
    with pytest.raises(PartsDiffer):
        for p in pieces:
            list(iter_part(p))


def _same_adapted(a, b) -> None:
    assert list(a.controls) == list(b.controls)
    assert a.warnings == b.warnings and a.n_tasks == b.n_tasks
    for n in a.controls:
        x, y = a.controls[n], b.controls[n]
        pd.testing.assert_frame_equal(x.table, y.table)
        assert (x.texts, x.annotator_names, x.ground_truth, x.warnings) == (y.texts, y.annotator_names,
                                                                           y.ground_truth, y.warnings)


def test_the_joined_reading_is_the_reading_of_the_whole(tmp_path, small_chunks):
    tasks = _tasks(60, seed=9)
    # problems the reading reports as warnings, in several parts: their order is the export's
    tasks[5]["annotations"][0]["result"].append({"from_name": "nope", "to_name": "text", "type": "choices",
                                                 "value": {"choices": ["x"]}})
    tasks[50]["annotations"][1]["result"].append({"from_name": "sentiment", "value": "not an object"})
    tasks[31]["annotations"].append({"id": 999, "result": []})                       # nobody's annotation
    path = tmp_path / "export.json"
    _write(path, tasks)
    whole = adapt(DEMO_CONFIG, iter_export(path))
    assert len(whole.warnings) >= 3
    for parts in (2, 3, 5):
        joined = adapt_parts(DEMO_CONFIG, [read_part(DEMO_CONFIG, iter_part(p)) for p in _read_parts(path, parts)])
        _same_adapted(joined, whole)


def test_parts_that_cannot_be_joined(tmp_path, small_chunks):
    tasks = _tasks(60, seed=4)
    tasks[-1]["id"] = tasks[0]["id"]                  # the same task twice, in two parts
    path = tmp_path / "export.json"
    _write(path, tasks)
    reads = [read_part(DEMO_CONFIG, iter_part(p)) for p in _read_parts(path, 3)]
    with pytest.raises(PartsDiffer, match="two parts"):
        adapt_parts(DEMO_CONFIG, reads)
    tasks[-1]["id"] = str(tasks[0]["id"])             # 1 and "1": one task id as text
    _write(path, tasks)
    reads = [read_part(DEMO_CONFIG, iter_part(p)) for p in _read_parts(path, 3)]
    with pytest.raises(PartsDiffer):
        adapt_parts(DEMO_CONFIG, reads)
    tasks[-1]["id"] = None                            # named by its position: tasks[59]
    _write(path, tasks)
    reads = [read_part(DEMO_CONFIG, iter_part(p)) for p in _read_parts(path, 3)]
    with pytest.raises(PartsDiffer):
        adapt_parts(DEMO_CONFIG, reads)


def test_conversations_read_in_parts(tmp_path, small_chunks):
    """A ``<Chat>``'s per-message answers and its note on messages only one annotator has
    (counted over the tasks) come out of the joined parts as out of one reading."""
    from tests.adapters.test_chat_messages import CHAT, CONFIG, _annotation, _task

    tasks = []
    for k in range(1, 80):
        chat = [*CHAT, {"role": "user", "content": f"question {k}"}]
        own = [*chat, {"role": "assistant", "content": f"an answer only one annotator saw {k}"}]
        tasks.append(_task(k, chat, _annotation(1, chat, {0: "good", 4: "bad"}, f"a{k}-"),
                           _annotation(2, own if k % 3 == 0 else chat, {0: "good", 4: "good"}, f"b{k}-")))
    path = tmp_path / "export.json"
    _write(path, tasks, indent=1)
    whole = adapt(CONFIG, iter_export(path))
    assert any("appear in one annotator's conversation only" in w for w in whole.warnings)
    joined = adapt_parts(CONFIG, [read_part(CONFIG, iter_part(p)) for p in _read_parts(path, 3)])
    _same_adapted(joined, whole)


def test_parts_joined_across_processes_keep_markers_and_first_forms(tmp_path, small_chunks):
    """Parts come back from their processes pickled: a skipped answer's marker must still be
    the marker (else it was read as a value, "MISSING"), and equal values of two parts take
    the form the export showed first (one reading keeps 50 before 50.0, 0.0 before -0.0)."""
    import pickle

    xml = ('<View><Text name="text" value="$text"/><Number name="conf" toName="text"/>'
           '<Rating name="stars" toName="text"/></View>')
    tasks = []
    for k in range(1, 121):
        late = k > 60
        conf = [50.0 if late else 50, -0.0 if late else 0.0, 100.0 if late else 100]
        anns = []
        for j, who in enumerate((1, 2, 3)):
            stars = {"from_name": "stars", "to_name": "text", "type": "rating", "value": {"rating": 1 + (k + j) % 5}}
            if k in (7, 90) and j == 1:
                stars = {"from_name": "stars", "to_name": "text", "type": "rating"}     # no value: skipped
            anns.append({"id": 10 * k + j, "completed_by": who, "result": [
                stars, {"from_name": "conf", "to_name": "text", "type": "number",
                        "value": {"number": conf[(k + j) % 3]}}]})
        tasks.append({"id": k, "data": {"text": "t" * 40}, "annotations": anns})
    path = tmp_path / "export.json"
    _write(path, tasks)
    whole = adapt(xml, iter_export(path))
    reads = [pickle.loads(pickle.dumps(read_part(xml, iter_part(p)))) for p in _read_parts(path, 3)]
    joined = adapt_parts(xml, reads)
    _same_adapted(joined, whole)
    assert len(joined.controls["stars"].table) == 3 * 120 - 2
    values = joined.controls["conf"].table["value"]
    assert values.dtype == whole.controls["conf"].table["value"].dtype
    assert [repr(v) for v in values] == [repr(v) for v in whole.controls["conf"].table["value"]]
    # the same parts written to files and each control built from them alone (part_files.py)
    from ls_agreement.adapters.config import parse_config
    from ls_agreement.adapters.part_files import SpilledParts, write_part

    cfg = parse_config(xml)
    spill = tmp_path / "spill"
    spill.mkdir()
    files = [write_part(cfg, read_part(cfg, iter_part(p)), str(spill), k) for k, p in enumerate(_read_parts(path, 3))]
    built = SpilledParts(cfg, files)
    assert built.n_tasks == whole.n_tasks and built.warnings == whole.warnings
    for n, w in whole.controls.items():
        pd.testing.assert_frame_equal(built[n].table, w.table)
    assert [repr(v) for v in built["conf"].table["value"]] == [repr(v) for v in whole.controls["conf"].table["value"]]

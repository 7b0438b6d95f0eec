"""The streaming export reader against the standard library's ``json.loads`` of the whole text.

Chunks of a few characters put every token (strings, escapes, numbers, literals, the
separators between tasks) across a chunk boundary somewhere; the tasks read must equal
``json.loads``'s, and malformed text must be refused at the line and column ``json.loads``
names.
"""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ls_agreement.adapters import export_stream
from ls_agreement.adapters.errors import AdapterError
from ls_agreement.adapters.export_stream import iter_export, load_export

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10 ** 30, 10 ** 30),
                     st.floats(allow_nan=False, allow_infinity=False),
                     st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12))
_json = st.recursive(_scalars, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=5), kids,
                                                                                          max_size=4), max_leaves=12)
_tasks = st.lists(st.dictionaries(st.sampled_from(["id", "data", "annotations", "x", "é"]), _json, max_size=4),
                  max_size=6)


@pytest.fixture
def tiny_chunks(monkeypatch):
    monkeypatch.setattr(export_stream, "CHUNK_CHARS", 5)


def _same(a, b) -> bool:
    """Equal as JSON values (floats by their bits: -0.0 and 0.0 differ in a dump)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tasks=_tasks, indent=st.sampled_from([None, 0, 1, 3]), chunk=st.integers(1, 40),
       encoding=st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-be", "utf-32-le"]),
       ascii_=st.booleans())
def test_equals_json_loads(tmp_path, monkeypatch, tasks, indent, chunk, encoding, ascii_):
    monkeypatch.setattr(export_stream, "CHUNK_CHARS", chunk)
    text = json.dumps(tasks, indent=indent, ensure_ascii=ascii_)
    p = tmp_path / "e.json"
    p.write_bytes(text.encode(encoding))
    assert _same(list(iter_export(p)), json.loads(text))
    wrapped = tmp_path / "w.json"
    wrapped.write_text(json.dumps({"meta": [1, {"a": "]"}], "tasks": tasks, "z": "}"}, indent=indent))
    assert _same(list(iter_export(wrapped)), tasks)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tasks=_tasks.filter(bool), cut=st.integers(0, 10 ** 6), junk=st.sampled_from(["", "}", "]", ",", "x", "\"",
                                                                                    "1e", "tru", "\\u12", ":"]),
       chunk=st.integers(1, 30))
def test_malformed_named_where_json_loads_names_it(tmp_path, monkeypatch, tasks, cut, junk, chunk):
    """Text cut anywhere (and junk added) is refused with json.loads's message, line and column
    (its "Unterminated string starting at" without the doubled "at")."""
    monkeypatch.setattr(export_stream, "CHUNK_CHARS", chunk)
    text = json.dumps(tasks, indent=1)
    text = text[:max(1, cut % len(text))] + junk   # from the '[': no CSV-looking head
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        expected = f"{exc.msg.removesuffix(' at')} at line {exc.lineno} column {exc.colno}"   # never "at at"
    else:
        return   # the cut happened to leave valid JSON
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(AdapterError) as info:
        list(iter_export(p))
    assert f"not valid JSON: {expected}" in str(info.value)


def test_task_longer_than_chunks_and_numbers_across_the_boundary(tmp_path, tiny_chunks):
    tasks = [{"id": k, "data": {"text": "x" * 5000, "n": 12345678901234567890, "f": -1.5e-300,
                                "u": "\u00e9\\\"\ud83d\ude00"}} for k in range(3)]
    p = tmp_path / "e.json"
    text = json.dumps(tasks)
    p.write_text(text)
    assert list(iter_export(p)) == json.loads(text)   # the escaped surrogate pair is one character


def test_messages_of_load_export_kept(tmp_path, tiny_chunks):
    p = tmp_path / "x.json"
    p.write_text('[\n{"id": 1,\n "annotations": [}\n]')
    with pytest.raises(AdapterError, match="line 3 column 18"):
        load_export(p)
    p.write_text('[{"id": 1}]\n[{"id": 2}]')
    with pytest.raises(AdapterError, match="Extra data at line 2 column 1 .*JSON Lines"):
        load_export(p)
    p.write_text('[{"id": 1, "n": ' + "7" * 5000 + "}]")
    with pytest.raises(AdapterError, match="a number of 5,000 digits at line 1 column 17"):
        load_export(p)
    raw = b'[{"id": 1, "t": "caf\xe9"}]'
    with pytest.raises(UnicodeDecodeError) as whole:
        raw.decode("utf-8")
    p.write_bytes(raw)
    with pytest.raises(AdapterError, match=f"not UTF-8 text: {whole.value.reason} at byte {whole.value.start} "):
        load_export(p)
    p.write_text("")
    with pytest.raises(AdapterError, match="Expecting value at line 1 column 1"):
        load_export(p)
    p.write_text("5")
    with pytest.raises(AdapterError, match="expected a list of tasks, got int"):
        load_export(p)
    p.write_text('{"id": 4, "annotations": []}')
    assert load_export(p) == [{"id": 4, "annotations": []}]
    p.write_text('[{"annotator": 3, "annotation_id": 9, "sentiment": "x"}]')
    with pytest.raises(AdapterError, match="JSON_MIN"):
        load_export(p)
    p.write_text('[' + "[" * 100_000 + "]" * 100_000 + "]")
    with pytest.raises(AdapterError, match="nested too deeply"):
        load_export(p)


def test_reads_lazily(tmp_path, monkeypatch):
    """A syntax error at the end comes after the tasks before it were yielded, and the
    reader holds a chunk, not the file."""
    monkeypatch.setattr(export_stream, "CHUNK_CHARS", 1000)
    tasks = [{"id": k, "data": {"text": "y" * 100}} for k in range(2000)]
    p = tmp_path / "e.json"
    p.write_text(json.dumps(tasks)[:-1] + ",}")
    it = iter_export(p)
    assert next(it) == tasks[0]
    gen_frame = it.gi_frame
    src = gen_frame.f_locals["src"]
    assert len(src.buf) < 5000
    got = [next(it) for _ in range(1999)]
    assert got == tasks[1:]
    with pytest.raises(AdapterError, match="line 1"):
        next(it)
    assert math.isfinite(len(got))


def test_lone_surrogates_duplicate_tasks_and_messages(tmp_path, tiny_chunks):
    """What json accepts but is no text (an escaped surrogate that is half of no pair) is
    read as U+FFFD with a warning naming the task and the field; a pair is one character;
    a "tasks" list given twice is refused (json.load would keep the last, the stream has
    read the first); json's own wording is not doubled ("starting at at")."""
    p = tmp_path / "x.json"
    p.write_text('[{"id": 5, "annotations": [{"result": [{"value": {"choices": ["a\\udc00b"]}}],'
                 ' "completed_by": {"email": "\\ud83d\\ude00@x.org"}}]}]')
    with pytest.warns(UserWarning, match=r"task 5: annotations\[0\]\.result\[0\]\.value\.choices\[0\] held a lone"):
        tasks = load_export(p)
    ann = tasks[0]["annotations"][0]
    assert ann["result"][0]["value"]["choices"] == ["a\ufffdb"]
    assert ann["completed_by"]["email"] == "\U0001F600@x.org"
    assert json.dumps(tasks).encode("utf-8")        # every string is text again
    p.write_text('{"tasks": [{"id": 1, "annotations": []}], "tasks": [{"id": 2, "annotations": []}]}')
    with pytest.raises(AdapterError, match='holds "tasks" twice'):
        load_export(p)
    p.write_text('[{"id": 1, "t": "ab\x01"}]')
    with pytest.raises(AdapterError, match="Invalid control character at line 1 column 20$"):
        load_export(p)


def test_lone_surrogates_in_json_text_read_elsewhere() -> None:
    """The service parses webhook bodies and the exports it asks Label Studio for itself:
    the same scan (text or bytes) and the same repair, naming where the text came from."""
    from ls_agreement.adapters.export_stream import may_hold_lone_surrogates, without_lone_surrogates

    body = json.dumps({"id": 3, "annotation": {"result": [{"value": {"choices": ["x\udc00"]}}]}})
    assert may_hold_lone_surrogates(body) and may_hold_lone_surrogates(body.encode())
    assert not may_hold_lone_surrogates(json.dumps({"t": "\U0001F600"}, ensure_ascii=False).encode())
    with pytest.warns(UserWarning, match=r"event 7: task 3: annotation\.result\[0\]\.value\.choices\[0\] held"):
        fixed = without_lone_surrogates(json.loads(body), "event 7")
    assert fixed["annotation"]["result"][0]["value"]["choices"] == ["x\ufffd"]
    paired = json.loads(json.dumps({"id": 4, "t": "\U0001F600"}))      # escaped as a pair: one character
    assert may_hold_lone_surrogates(json.dumps(paired)) and without_lone_surrogates(paired, "x") == paired

"""Server-free checks of the sync's building blocks: merge rules, fingerprints, settings,
state, token detection, the per-annotator CSV."""
from __future__ import annotations

import base64
import csv
import json
import time
from pathlib import Path

import pytest

from ls_agreement.plugin.annotator_report import write_reports
from ls_agreement.plugin.client import AuthError, BadInput, token_kind
from ls_agreement.plugin.pushback import (Desired, current_of, desired_for, fingerprint,
                                          merge, needs_write)
from ls_agreement.plugin.report.model import Report
from ls_agreement.plugin.settings import ReportSettings, load_settings
from ls_agreement.plugin.state import SyncState

REPORT = Report.from_dict({
    "controls": {
        "label": {"distance": "nominal", "items": {
            "7": {"sigma": 0.25, "alpha": -0.1, "mean_distance": 0.66, "n_pairs": 3,
                  "flag": True, "annotators": ["3", "4", "5"]}},
            "annotators": {"3": {"name": "a@x", "sigma": 0.5, "alpha": 0.4,
                                 "mean_distance": 0.3, "n_pairs": 4, "n_items": 2,
                                 "ci": {"sigma": [0.1, 0.9], "alpha": [0.0, 0.8]},
                                 "pairs": {"4": 0.2}}},
            "crowdtruth": {"workers": {"3": {"wqs": 0.77}}}},
        "score": {"distance": "interval", "items": {
            "7": {"sigma": 0.9, "alpha": 0.8, "mean_distance": 0.1, "n_pairs": 1,
                  "flag": False, "annotators": ["3", "4"]}}, "annotators": {}},
    },
    "tasks": {"7": {"sigma": 0.25, "alpha": -0.1, "flag": True, "controls": ["label", "score"]}},
    "annotators": {},
})


def _jwt(claims: dict) -> str:
    enc = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()
    return f"{enc({'alg': 'HS256'})}.{enc(claims)}.c2ln"


def test_token_kind() -> None:
    assert token_kind("0123456789abcdef") == "legacy"
    assert token_kind(_jwt({"token_type": "refresh", "exp": time.time() + 3600})) == "pat"
    assert token_kind(_jwt({"token_type": "access", "exp": time.time() + 60})) == "access"
    with pytest.raises(AuthError, match="expired"):
        token_kind(_jwt({"token_type": "refresh", "exp": time.time() - 10}))


def test_desired_numbers_and_keys() -> None:
    d = desired_for(REPORT, 7, "fp", {"3": "a@x"}, meta=True)
    assert d is not None
    assert d.data["agreement_sigma"] == 0.25
    assert d.data["agreement_alpha"] == -0.1          # worst control
    assert d.data["agreement_flag"] == 1
    assert d.data["agreement_n_annotators"] == 3
    assert d.data["agreement_sigma__score"] == 0.9
    assert d.meta["annotators"] == {"3": "a@x", "4": "4", "5": "5"}
    assert d.meta["controls"]["label"]["sigma"] == 0.25
    assert desired_for(REPORT, 8, "fp") is None


def test_merge_keeps_user_keys_and_replaces_ours() -> None:
    want = desired_for(REPORT, 7, "fp", meta=True)
    task = {"data": {"text": "hi", "agreement_mine": 5, "agreement_sigma__gone": 0.1},
            "meta": {"src": "x", "agreement": {"keys": ["agreement_sigma__gone"]}}}
    data, meta = merge(task, want, 1000.0)
    assert data["text"] == "hi" and data["agreement_mine"] == 5   # user's, even prefixed
    assert "agreement_sigma__gone" not in data                    # ours, no longer wanted
    assert data["agreement_updated"] == 1000 and meta["src"] == "x"
    assert meta["agreement"]["updated"] == 1000
    # what we wrote now reads back as "nothing to do"
    assert not needs_write(want, current_of({"data": data, "meta": meta}))
    changed = Desired(dict(want.data, agreement_sigma=0.3), want.meta)
    assert needs_write(changed, current_of({"data": data, "meta": meta}))
    # removal
    data2, meta2 = merge({"data": data, "meta": meta}, None, 2000.0)
    assert data2 == {"text": "hi", "agreement_mine": 5} and meta2 == {"src": "x"}


def test_fingerprint_tracks_annotation_changes() -> None:
    a = {"annotations": [{"id": 1, "updated_at": "t1", "completed_by": 3,
                          "result": [{"value": {"choices": ["A"]}}]}]}
    b = json.loads(json.dumps(a))
    assert fingerprint(a) == fingerprint(b)
    b["annotations"][0]["result"][0]["value"]["choices"] = ["B"]
    assert fingerprint(a) != fingerprint(b)
    c = json.loads(json.dumps(a))
    c["annotations"][0]["updated_at"] = "t2"
    assert fingerprint(a) != fingerprint(c)


def test_settings_file(tmp_path: Path) -> None:
    p = tmp_path / "s.toml"
    p.write_text("[sync]\nworkers = 2\nviews = false\n")
    s = load_settings(p)
    assert s.sync.workers == 2 and s.sync.views is False and s.report == ReportSettings()
    p.write_text("[sync]\nworkerz = 2\n")
    with pytest.raises(BadInput, match="workerz"):
        load_settings(p)
    p.write_text("[sync\n")
    with pytest.raises(BadInput, match="not valid TOML"):
        load_settings(p)
    with pytest.raises(BadInput, match="not found"):
        load_settings(tmp_path / "missing.toml")


def test_state_roundtrip(tmp_path: Path) -> None:
    with SyncState(tmp_path / "st.sqlite") as st:
        run = st.start_run("u#1")
        st.record_tasks("u#1", [(5, "fp5", {"data": {"agreement_sigma": 0.5}})], run)
        st.finish_run(run, "ok", 1, 1)
    with SyncState(tmp_path / "st.sqlite") as st:
        assert st.task_rows("u#1") == {5: ("fp5", {"data": {"agreement_sigma": 0.5}})}
        assert st.task_rows("u#2") == {}
        assert st.runs("u#1")[0]["status"] == "ok"
    (tmp_path / "bad.sqlite").write_text("not a database" * 100)
    with pytest.raises(ValueError, match="SQLite"):
        SyncState(tmp_path / "bad.sqlite").task_rows("x")


def test_annotator_report_files(tmp_path: Path) -> None:
    paths = write_reports(tmp_path, REPORT, {"project": 1})
    rows = list(csv.DictReader(paths["annotators_csv"].open()))
    assert paths["report_html"].read_text().lstrip().lower().startswith("<!doctype html")
    assert len(rows) == 1
    r = rows[0]
    assert (r["annotator"], r["control"], r["name"]) == ("3", "label", "a@x")
    assert float(r["sigma"]) == 0.5 and float(r["sigma_ci_low"]) == 0.1  # the report's one per-annotator schema
    assert float(r["crowdtruth_wqs"]) == 0.77
    assert json.loads(r["co_annotators"]) == {"4": 0.2}
    js = json.loads(paths["annotators_json"].read_text())
    assert js["project"] == 1 and "3" in js["annotators"]


def test_report_annotators_get_emails():
    from ls_agreement.plugin.sync import name_annotators

    report = Report.from_dict({"annotators": {"3": {"name": "3"}, "model:v1": {"name": "model:v1"}},
                               "controls": {"c": {"annotators": {"3": {"name": "3"}, "4": {"name": "Dr. Who"}}}}})
    name_annotators(report, {"3": "ann@x.org", "4": "four@x.org"})
    assert report.annotators["3"].name == "ann@x.org"
    assert report.annotators["model:v1"].name == "model:v1"
    assert report.controls["c"].annotators["3"].name == "ann@x.org"
    assert report.controls["c"].annotators["4"].name == "Dr. Who"  # a real name is kept


def test_annotator_quality_snapshot_never_forces_a_write():
    from ls_agreement.plugin.pushback import SNAPSHOT_KEY, needs_write

    report = Report.from_dict({"controls": {"c": {"items": {"1": {"sigma": 1.0, "alpha": 1.0, "flag": False,
                                                  "annotators": ["3", "4"]}},
                                 "annotators": {"3": {"sigma": 0.9, "pairs": {"4": 0.1}},
                                                "4": {"sigma": 0.8, "pairs": {"3": 0.1}}},
                                 "crowdtruth": {"workers": {"3": {"wqs": 0.7}}}}},
              "tasks": {"1": {"sigma": 1.0, "flag": False}},
              "annotators": {"3": {"sigma": 0.9, "alpha": 0.5, "n_items": 10},
                             "4": {"sigma": 0.8, "alpha": 0.4, "n_items": 12}}})
    from ls_agreement.plugin.annotator_report import annotator_quality

    want = desired_for(report, 1, "fp", {"3": "a@x.org"}, annotator_quality(report), meta=True)
    q = want.meta[SNAPSHOT_KEY]
    assert set(q) == {"3", "4"} and q["3"]["overall"]["sigma"] == 0.9 and q["4"]["overall"]["n_items"] == 12
    assert q["3"]["controls"]["c"]["crowdtruth_wqs"] == 0.7 and q["3"]["controls"]["c"]["co_annotators"] == {"4": 0.1}
    drifted = Desired(data=dict(want.data), meta={**want.meta, SNAPSHOT_KEY: {"3": {"sigma": 0.1}}})
    assert not needs_write(want, drifted)
    changed = Desired(data={**want.data, "agreement_flag": 1}, meta=want.meta)
    assert needs_write(want, changed)

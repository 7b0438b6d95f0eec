"""The report's annotator × annotator matrices and per-label sections (issue 13, items 1–2)."""
from __future__ import annotations

import csv
import io
import json
from urllib.parse import parse_qs

import pytest

from ls_agreement.adapters.adapt import adapt
from ls_agreement.metrics import agreement
from ls_agreement.metrics.pair_matrix import pairwise_agreement
from ls_agreement.metrics.per_label import per_label_agreement
from ls_agreement.demo import data as demo_data
from ls_agreement.plugin.report.build import build_report
from ls_agreement.plugin.report.model import Report
from ls_agreement.plugin.report.render import render_html, render_labels_csv, render_pairs_csv
from ls_agreement.plugin.report.render_pairs import LABEL_CSV_COLUMNS, PAIR_CSV_COLUMNS
from ls_agreement.plugin.settings import ReportSettings

USER_IDS = {a.email: 10 + k for k, a in enumerate(demo_data.ANNOTATORS)}


@pytest.fixture(scope="module")
def project():
    sample = demo_data.generate(USER_IDS, n_tasks=60, seed=5)
    tasks = [{"id": i + 1, **t} for i, t in enumerate(sample.tasks)]
    settings = ReportSettings(bootstrap=60, seed=2)
    return sample.config, tasks, settings, build_report(sample.config, tasks, settings)


def test_every_measured_control_has_a_matrix_matching_the_metric(project) -> None:
    config, tasks, settings, report = project
    adapted = adapt(config, tasks)
    ctl = adapted.controls["sentiment"]
    e = report.controls["sentiment"]
    res = agreement(ctl.table, e.distance, seed=settings.seed, bootstrap=0)
    ref = pairwise_agreement(ctl.table, e.distance, min_items=e.pair_matrix.min_items, bootstrap=0)
    got = {(p.a, p.b): p for p in e.pair_matrix.pairs}
    assert len(got) == len(ref.table) > 0
    for row in ref.table.itertuples():
        p = got[(row.annotator_a, row.annotator_b)]
        assert p.alpha == pytest.approx(row.alpha) and p.n_items == row.n_items
        assert p.ci[0] is None or p.ci[0] <= p.alpha <= p.ci[1]
    assert e.pair_matrix.d_e == pytest.approx(res.d_e)
    assert all(c.pair_matrix is not None for c in report.controls.values() if c.measured)


def test_label_sections_only_for_label_controls(project) -> None:
    config, tasks, settings, report = project
    with_labels = {n for n, c in report.controls.items() if c.per_label is not None}
    assert with_labels == {"objects", "entities", "sentiment"}
    s = report.controls["sentiment"].per_label
    ref = per_label_agreement(adapt(config, tasks).controls["sentiment"].table, bootstrap=0)
    assert {k: v.alpha for k, v in s.labels.items()} == pytest.approx(dict(zip(ref.table.label, ref.table.alpha)))
    assert s.confusion is not None and s.confusion.labels == sorted(s.labels)
    assert report.controls["objects"].per_label.confusion is None   # not single-choice


def test_project_matrix_is_the_item_weighted_mean(project) -> None:
    report = project[3]
    p = report.pair_matrix.pairs[0]
    parts = [q for c in report.controls.values() if c.measured and c.pair_matrix
             for q in c.pair_matrix.pairs if (q.a, q.b) == (p.a, p.b) and q.alpha is not None]
    assert p.n_controls == len(parts)
    assert p.alpha == pytest.approx(sum(q.alpha * q.n_items for q in parts) / sum(q.n_items for q in parts))


def test_json_round_trip_and_csv(project) -> None:
    report = project[3]
    again = Report.from_dict(json.loads(report.to_json()))
    assert again.to_json() == report.to_json()
    assert again.controls["sentiment"].pair_matrix == report.controls["sentiment"].pair_matrix
    rows = list(csv.DictReader(io.StringIO(render_pairs_csv(report))))
    assert list(rows[0]) == PAIR_CSV_COLUMNS
    n = sum(len(c.pair_matrix.pairs) for c in report.controls.values() if c.pair_matrix) + len(report.pair_matrix.pairs)
    assert len(rows) == n and rows[-1]["control"] == "(project)"
    labels = list(csv.DictReader(io.StringIO(render_labels_csv(report))))
    assert list(labels[0]) == LABEL_CSV_COLUMNS
    assert {r["control"] for r in labels} == {"objects", "entities", "sentiment"}


def test_heatmap_cells_link_to_serve_which_opens_the_data_manager(project) -> None:
    report = project[3]
    page = render_html(report, pair_base="", project_id=7)
    assert "annotator × annotator agreement" in page and "agreement per label" in page
    hrefs = [h.split("'", 1)[0] for h in page.split("href='/projects/7/pair?")[1:]]
    assert hrefs, "no heatmap cell links"
    ids = {str(a) for a in report.annotators}
    for h in hrefs:
        q = parse_qs(h.replace("&amp;", "&"))
        assert set(q) == {"a", "b"} and q["a"][0] != q["b"][0]
        assert {q["a"][0], q["b"][0]} <= ids
    # a page written to a file has no serve behind it: no links, and it says where they are
    static = render_html(report)
    assert "/pair?" not in static and "as <code>ls-agreement serve</code> shows it" in static


def test_an_older_report_without_the_sections_still_reads() -> None:
    data = json.loads(Report().to_json())
    del data["pair_matrix"]
    assert Report.from_dict(data).pair_matrix is None


def test_annotator_cap_pairs_the_most_active_with_a_warning(project, monkeypatch) -> None:
    import ls_agreement.plugin.report.pairs as pairs

    config, tasks, settings, _ = project
    monkeypatch.setattr(pairs, "MAX_PAIR_ANNOTATORS", 3)
    report = build_report(config, tasks, ReportSettings(bootstrap=0))
    pm = report.controls["sentiment"].pair_matrix
    assert len(pm.annotators) == 3 and len(pm.left_out) == 3 and len(pm.pairs) == 3
    assert any("only the 3 most active" in w for w in report.controls["sentiment"].warnings)

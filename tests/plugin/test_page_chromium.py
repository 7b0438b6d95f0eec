"""The quality page in a real headless Chromium (issue 13, item 7).

A realistic report (the demo generator's 60-task project, 50 bootstrap resamples) is
rendered to a file and opened in headless Chromium, driven through the DevTools protocol.
The browser is driven as tests/plugin/browser.py says.

Checked in the browser: no console error or uncaught exception, no request other than the
file itself, every chart drawn (non-zero size, marks with a non-empty bounding box), a
chart tooltip on hover, sorting a table by a header click (numbers numerically, empty cells
last), and the control filter hiding the other controls. Screenshots go to
``tests/artifacts/page_chromium/`` (git-ignored; ``LS_AGREEMENT_ARTIFACTS`` moves it) so a
person can look at the page. ``bash run.sh test`` installs Chromium when it is missing
(apt-get, as root); the test is skipped, with the reason, only when none can be found.
"""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Iterator

import pytest

from ls_agreement.demo import data as demo_data
from ls_agreement.plugin.report.build import build_report
from ls_agreement.plugin.report.render import render_html
from ls_agreement.plugin.report.render_charts import nice_ticks
from ls_agreement.plugin.settings import ReportSettings
from ls_agreement.plugin.sync import name_annotators

from .browser import ARTIFACTS_ENV, CHROMIUM_ENV, DevTools, Page, find_chromium

ROOT = Path(__file__).resolve().parents[2]
@pytest.fixture(scope="module")
def chromium() -> str:
    exe = find_chromium()
    if exe is None:
        pytest.skip("no Chromium found (install the `chromium` package — `bash run.sh test` does so "
                    f"with apt-get when run as root — or set ${CHROMIUM_ENV} to a Chrome/Chromium binary)")
    return exe


@pytest.fixture(scope="module")
def artifacts() -> Path:
    out = Path(os.environ.get(ARTIFACTS_ENV) or ROOT / "tests" / "artifacts") / "page_chromium"
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.fixture(scope="module")
def page_file(artifacts: Path) -> Path:
    """The quality page of the demo project (60 tasks, 50 resamples), as a file."""
    ids = {a.email: 10 + k for k, a in enumerate(demo_data.ANNOTATORS)}
    project = demo_data.generate(ids, n_tasks=60, seed=7)
    for i, task in enumerate(project.tasks, start=1):     # an export's shape: ids everywhere
        task["id"] = i
        for j, ann in enumerate(task["annotations"]):
            ann["id"] = 100 * i + j
    report = build_report(demo_data.DEMO_CONFIG, project.tasks, ReportSettings(bootstrap=50))
    name_annotators(report, {str(uid): email for email, uid in ids.items()})   # as a sync names them
    path = artifacts / "quality.html"
    path.write_text(render_html(report, pair_base="", project_id=1), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def page(chromium: str, page_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    tools = DevTools(chromium, tmp_path_factory.mktemp("chromium") / "profile")
    try:
        tab = Page(tools)
        tab.open(page_file.as_uri())
        yield tab
    finally:
        tools.close()


def test_charts_carry_their_numbers_without_a_browser(page_file: Path) -> None:
    # runs where no Chromium is: the numbers are in the markup (SVG <title>), scripts or not
    html = page_file.read_text(encoding="utf-8")
    assert "data:image/png" not in html and "<script src" not in html and "<link" not in html
    assert "http://" not in html.split("<script>", 1)[1]                 # the script fetches nothing
    assert "observed: density" in html and "same-task pairs" in html
    assert re.search(r"<title>[^<]+: σ \d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]", html)
    assert nice_ticks(0.0, 1.0, 5) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(-0.184, 1.0, 4) == [0.0, 0.5, 1.0]       # round steps inside the range
    assert nice_ticks(0.0, 0.0) == [0.0]


def test_loads_offline_without_errors_and_draws_every_chart(page: Page, page_file: Path,
                                                             artifacts: Path) -> None:
    html = page_file.read_text(encoding="utf-8")
    assert page.js("document.title") == "ls-agreement quality"
    # no request but the file itself: no CDN, no font, no image from anywhere
    assert page.requests() and all(u.startswith(("file:", "data:", "about:")) for u in page.requests()), \
        page.requests()
    n_static = html.count("<svg class='chart")
    assert n_static >= 2 * len(demo_data.DEMO_CONTROLS) - 2     # a distribution and an annotator chart each
    charts = page.js("""[...document.querySelectorAll('svg.chart')].map(svg => {
        const r = svg.getBoundingClientRect();
        const marks = [...svg.querySelectorAll('.mark')].map(m => m.getBBox())
                          .filter(b => b.width > 0 || b.height > 0).length;
        return {w: r.width, h: r.height, marks: marks, hover: svg.querySelectorAll('[data-tip]').length,
                label: svg.getAttribute('aria-label')};
    })""")
    assert len(charts) == n_static
    for c in charts:
        assert c["w"] > 100 and c["h"] > 100 and c["marks"] >= 1 and c["hover"] >= 1, c
    page.screenshot(artifacts / "page-full.png")
    assert page.problems() == []


def test_chart_tooltip_shows_the_numbers(page: Page, artifacts: Path) -> None:
    page.hover("document.querySelector('svg.chart.annotators .hover')")
    tip = page.js("(() => { const t = document.querySelector('.tip'); "
                  "return {hidden: t.hidden, text: t.textContent, w: t.offsetWidth}; })()")
    assert not tip["hidden"] and tip["w"] > 0
    assert "σ" in tip["text"] and any(ch.isdigit() for ch in tip["text"]) and "pairs" in tip["text"], tip
    page.screenshot(artifacts / "tooltip.png", full=False)
    page.hover("document.querySelector('svg.chart.dist .hover')")
    assert "observed: density" in page.js("document.querySelector('.tip').textContent")
    assert page.problems() == []


def _column(page: Page, table_js: str, col: int) -> list[str]:
    return page.js(f"[...{table_js}.rows].slice(1).map(r => r.cells[{col}].textContent.trim())")


def _numbers(values: list[str]) -> list[float | None]:
    out: list[float | None] = []
    for v in values:
        try:
            out.append(float(v.split()[0]))
        except (ValueError, IndexError):
            out.append(None)
    return out


def test_click_on_a_header_sorts_numbers_numerically_empty_last(page: Page, artifacts: Path) -> None:
    # the annotators table: rows come sorted by reliability; sort them by tasks, then reverse
    table = "document.querySelector('table.reliability')"
    header = ("[...%s.rows[0].cells].find(c => c.textContent.trim() === '%s')")
    before = _column(page, table, 1)
    page.click(header % (table, "tasks"))
    asc = _numbers(_column(page, table, 6))
    assert page.js(f"{header % (table, 'tasks')}.getAttribute('aria-sort')") == "ascending"
    assert asc == sorted(asc) and _column(page, table, 1) != before     # the order changed
    page.screenshot(artifacts / "sorted-annotators.png", full=False)
    page.click(header % (table, "tasks"))
    assert _numbers(_column(page, table, 6)) == sorted(asc, reverse=True)
    # a column with empty cells ("–"): numbers in order, the empty ones last, both ways
    found = page.js("""(() => { for (const [ti, t] of [...document.querySelectorAll('table.sortable')].entries()) {
        const ths = [...t.querySelectorAll('th.sortable')];
        for (const [hi, th] of ths.entries()) {
          const col = [...th.parentNode.children].indexOf(th);
          if (th.parentNode !== t.rows[0] || ths.some(h => h.colSpan > 1 || h.rowSpan > 1)) continue;
          const vals = [...t.rows].slice(1).map(r => (r.cells[col] || {}).textContent || '');
          if (vals.some(v => v.trim() === '\u2013') && vals.some(v => /^[-0-9.]/.test(v.trim())))
            return [ti, col];
        } } return null; })()""")
    if found is not None:
        ti, col = found
        t = f"document.querySelectorAll('table.sortable')[{ti}]"
        for _ in range(2):
            page.click(f"{t}.rows[0].cells[{col}]")
            vals = _numbers(_column(page, t, col))
            nums = [v for v in vals if v is not None]
            assert vals == nums + [None] * (len(vals) - len(nums)), vals     # empty last
            assert nums in (sorted(nums), sorted(nums, reverse=True))
    # matrices (heatmaps, confusion) are not sortable: their order is their reading
    assert page.js("document.querySelectorAll('table.heat.sortable').length") == 0
    assert page.problems() == []


def test_control_filter_shows_one_control(page: Page, artifacts: Path) -> None:
    names = page.js("[...document.querySelectorAll('#control-filter option')].map(o => o.value)")
    assert names[0] == "" and set(names[1:]) == set(demo_data.DEMO_CONTROLS)

    def visible() -> list[str]:
        return page.js("[...document.querySelectorAll('section.control')].filter(s => s.offsetParent !== null)"
                       ".map(s => s.querySelector('h2').id.slice(2))")

    assert sorted(visible()) == sorted(demo_data.DEMO_CONTROLS)
    pick = names[2]
    page.js(f"(() => {{ const s = document.getElementById('control-filter'); s.value = {json.dumps(pick)}; "
            "s.dispatchEvent(new Event('change')); })()")
    assert visible() == [pick]
    page.js("window.scrollTo(0, 0)")
    page.screenshot(artifacts / f"filtered-{pick}.png")
    # a link to a hidden control's section shows every control again
    other = names[1]
    page.click(f"document.querySelector(\"a[href='#c-{other}']\")")
    deadline = time.monotonic() + 5
    while len(visible()) == 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sorted(visible()) == sorted(demo_data.DEMO_CONTROLS)
    assert page.js("document.getElementById('control-filter').value") == ""
    assert page.problems() == []


def test_page_leads_with_reliability_and_consensus(page: Page, page_file: Path, artifacts: Path) -> None:
    """Issue 22: the first things on the page, below the title, are the annotators'
    reliability (least reliable first: the demo's careless annotator) and the consensus
    answers (flagged tasks first); the controls' numbers come after."""
    page.open(page_file.as_uri())          # as it loads: earlier tests sorted and filtered it
    page.js("window.scrollTo(0, 0)")
    order = page.js("""[...document.querySelectorAll('h2, h3')].map(h => [h.textContent.trim(),
                        h.getBoundingClientRect().top + window.scrollY])""")
    titles = [t for t, _ in order]
    assert titles[:2] == ["Annotator reliability", "Consensus answers"], titles[:4]
    top = dict(order)
    assert top["Annotator reliability"] < top["Consensus answers"] < top["Controls"]
    # both in the first screenful's reach: the reliability table starts within the viewport
    assert page.js("document.querySelector('table.reliability').getBoundingClientRect().top") < 900
    rows = page.js("""[...document.querySelector('table.reliability').rows].slice(1).map(r =>
                        [...r.cells].map(c => c.textContent.trim()))""")
    careless = next(a.email for a in demo_data.ANNOTATORS if a.careless)
    assert rows[0][2] == careless and rows[0][3] == "departs"          # least reliable first
    rel = _numbers([r[0] for r in rows])
    assert rel == sorted(rel) and all(0.0 <= x <= 1.0 for x in rel)
    # consensus answers: flagged tasks first, each with its posterior and why
    table = "document.querySelector('table.consensus')"
    head = page.js(f"[...{table}.rows[0].cells].map(c => c.textContent.trim())")
    assert head[:2] == ["task", "flag posterior"] and head[-1] == "why"
    assert set(head[2:-1]) == set(demo_data.DEMO_CONTROLS)
    post = _numbers(_column(page, table, 1))
    flagged = [p for p in post if p is not None and p >= 0.5]
    assert flagged and post[:len(flagged)] == flagged                  # flagged tasks lead
    assert all(_column(page, table, len(head) - 1)[:len(flagged)])     # each says why
    page.screenshot(artifacts / "top.png", full=False)
    assert page.problems() == []


def test_heatmap_headers_stay_below_the_paragraph_above(page: Page, artifacts: Path) -> None:
    """Issue 22: the annotator-pair heatmap's rotated headers (long names) overlapped the
    paragraph above the table. The glyphs of every rotated header, measured in the
    browser, now sit below the element before the table and inside their header cell."""
    boxes = page.js("""[...document.querySelectorAll('table.heat')].map(t => {
        const prev = t.previousElementSibling;
        return [...t.querySelectorAll('th.rot')].map(th => {
          const range = document.createRange(); range.selectNodeContents(th.querySelector('div'));
          const g = range.getBoundingClientRect(), c = th.getBoundingClientRect();
          return {glyphTop: g.top, glyphBottom: g.bottom, cellTop: c.top, cellBottom: c.bottom,
                  prevBottom: prev ? prev.getBoundingClientRect().bottom : null, height: g.height};
        });
    })""")
    assert boxes and all(boxes)
    for table in boxes:
        for b in table:
            assert b["height"] > 40                                     # a long name, drawn vertically
            assert b["prevBottom"] is None or b["glyphTop"] >= b["prevBottom"], b
            assert b["cellTop"] - 0.5 <= b["glyphTop"] and b["glyphBottom"] <= b["cellBottom"] + 0.5, b
    page.click("document.querySelector('table.heat')")
    page.screenshot(artifacts / "heatmap.png", full=False)
    assert page.problems() == []

"""Every labeling template the installed Label Studio ships, through ``ls-agreement report``
in three scenarios (issue 21, "Done when").

The templates are read from Label Studio's package at collection time
(:mod:`tests.templates.ls_templates`; installed like the server fixtures do when missing),
never copied here. For each template and scenario, :mod:`tests.templates.generator` writes
a 30-task, 4-annotator export in Label Studio's result format and
:mod:`tests.templates.report_checks` states what the report must show. Configs for tags no
template uses (:mod:`tests.templates.extra_configs`) go through the same checks.

A table of every control across the scenarios (template, control, tag, kind, identical α,
careless annotator's rank by α and σ, random α) is written at the end of the session to
``$LS_AGREEMENT_TEMPLATES_SUMMARY`` (default ``/tmp/ls-agreement-template-coverage.tsv``,
and ``.md`` beside it).

The random scenario runs on the first seed from ``SEED`` whose data has a typical chance
agreement by the ``krippendorff`` package (:mod:`tests.templates.typical`): at 30 tasks and
4 annotators a yes/no question answered at random reaches |α| >= 0.15 in 4 % of draws.

Nothing here is marked xfail: a failure names the template, the scenario and, per control,
what is wrong.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

from .extra_configs import EXTRA_CONFIGS
from .generator import SCENARIOS, Scenario, generate_export
from .ls_templates import load_templates, templates_dir
from .report_checks import Row, check_report, control_rows, run_report
from .summary import write_summary
from .typical import typical_random_seed

pytestmark = pytest.mark.slow

SEED = 21
N_TASKS, N_ANNOTATORS = 30, 4
SUMMARY = Path(os.environ.get("LS_AGREEMENT_TEMPLATES_SUMMARY", "/tmp/ls-agreement-template-coverage.tsv"))

_DIR, _WHY = templates_dir()
_TEMPLATES = load_templates(_DIR) if _DIR is not None else []
if _TEMPLATES:
    _CASES = [pytest.param(t.key, t.config, id=t.key) for t in _TEMPLATES]
else:
    _CASES = [pytest.param(None, None, id="label-studio-templates",
                           marks=pytest.mark.skip(reason=_WHY or "Label Studio ships no templates"))]
_CASES += [pytest.param(key, xml, id=key) for key, xml in EXTRA_CONFIGS.items()]

_ROWS: dict[tuple[str, str], Row] = {}


def _collect(rows: list[Row], scenario: Scenario) -> None:
    for r in rows:
        kept = _ROWS.setdefault((r.template, r.control), r)
        kept.kind = kept.kind or r.kind
        kept.cells[scenario] = r.cells[scenario]


@pytest.fixture(scope="module", autouse=True)
def _summary_table() -> Iterator[None]:
    yield
    if _ROWS:
        write_summary(SUMMARY, list(_ROWS.values()))


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize(("key", "config_xml"), _CASES)
def test_template(key: str, config_xml: str, scenario: Scenario, tmp_path: Path) -> None:
    seed = SEED if scenario != "random" else typical_random_seed(
        config_xml, SEED, n_tasks=N_TASKS, n_annotators=N_ANNOTATORS)
    gen = generate_export(config_xml, scenario, seed=seed, n_tasks=N_TASKS, n_annotators=N_ANNOTATORS)
    run = run_report(config_xml, gen.tasks, tmp_path)
    _collect(control_rows(key, scenario, gen, run), scenario)
    problems = check_report(scenario, gen, run)
    assert not problems, f"{key} [{scenario}]:\n  " + "\n  ".join(problems)

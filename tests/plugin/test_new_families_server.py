"""Issue 21: one shipped template of each new family through a real Label Studio.

For audio, video timeline, video tracking, time series, paragraphs, masks and relations:
the template's config (read from the installed Label Studio's package), tasks with three
annotators' annotations written by :mod:`tests.templates.generator` (the ``careless``
scenario) imported through Label Studio's API, ``ls-agreement sync`` through the CLI, the
agreement fields read back from Label Studio's own export; then ``serve`` is connected
and a fourth annotator's annotation, created through the API, reaches it by Label
Studio's webhook and updates the task.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

from ls_agreement.plugin.cli import main as cli_main
from tests.plugin.test_serve import connect, export, start_service, wait_for  # noqa: F401
from tests.templates.generator import generate_export
from tests.templates.ls_templates import load_templates, templates_dir

# family -> (template, the controls of that family it must measure)
FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "audio": ("audio-speech-processing/automatic-speech-recognition-using-segments",
              ("labels", "transcription")),
    "video timeline": ("videos/video-frame-classification", ("videoLabels",)),
    "video tracking": ("videos/video-object-tracking", ("box",)),
    "time series": ("time-series-analysis/outliers-anomaly-detection", ("label", "region_type")),
    "paragraphs": ("conversational-ai/intent-classification-and-slot-filling", ("entity_slot",)),
    "masks": ("computer-vision/semantic-segmentation-with-masks", ("tag",)),
    "relations": ("natural-language-processing/relation-extraction", ("label", "relations")),
}
N_TASKS = 8
SEED = 21


def _template(key: str) -> str:
    folder, why = templates_dir()
    if folder is None:
        pytest.skip(why)
    found = {t.key: t.config for t in load_templates(folder)}
    assert key in found, f"Label Studio no longer ships {key}"
    return found[key]


def _control(report: dict[str, Any], name: str) -> tuple[str, dict[str, Any]] | None:
    """The report's entry of a control; a nameless <Relations> is found by its tag."""
    controls = report["controls"]
    if name in controls:
        return name, controls[name]
    if name == "relations":
        return next(((n, c) for n, c in controls.items() if str(c.get("tag")).lower() == "relations"), None)
    return None


def _sigma_key(control: str) -> str:
    """The task.data key of a control's σ (README: one per control when there are several;
    characters other than letters, digits, ``_`` and ``-`` become ``_``)."""
    return "agreement_sigma__" + "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in control)


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_family_syncs_and_serves(family: str, ls_server: Any, ls_client: Any,
                                 annotators: list[dict[str, Any]], make_project: Callable[..., int],
                                 start_service: Callable, tmp_path: Path) -> None:
    key, controls = FAMILIES[family]
    config = _template(key)
    users = [a["id"] for a in annotators[:4]]
    gen = generate_export(config, "careless", seed=SEED, n_tasks=N_TASKS, annotator_ids=users)
    tasks = [{"data": {**t["data"], "ext_id": i},
              "annotations": [{"completed_by": a["completed_by"], "result": a["result"],
                               "ground_truth": False} for a in t["annotations"][:3]]}
             for i, t in enumerate(gen.tasks)]
    pid = make_project(config, tasks, title=f"issue 21 {family}")
    imported = export(ls_client, pid)
    assert len(imported) == N_TASKS
    assert all(len(t["annotations"]) == 3 for t in imported.values()), "Label Studio dropped annotations"

    settings = tmp_path / "settings.toml"
    settings.write_text("[report]\nbootstrap = 20\n[sync]\nattempts = 2\nbackoff = 0.1\n")
    out = tmp_path / "out"
    rc = cli_main(["sync", "--url", ls_server.url, "--token", ls_server.token, "--project", str(pid),
                   "--settings", str(settings), "--out", str(out), "--quiet"])
    assert rc == 0, f"sync exited {rc}"
    report = json.loads((out / "report.json").read_text())
    names: dict[str, str] = {}
    for c in controls:
        hit = _control(report, c)
        assert hit is not None, f"{family}: {c} not in the report ({sorted(report['controls'])})"
        assert hit[1]["status"] == "ok", f"{family}: {c} status {hit[1]['status']}: {hit[1].get('reason')}"
        names[c] = hit[0]
    per_control = len(report["controls"]) > 1

    synced = export(ls_client, pid)
    for tid, t in synced.items():
        d = t["data"]
        assert d["agreement_n_annotators"] == 3, (family, tid, d)
        assert _number(d["agreement_sigma"]), (family, tid, d)
        if per_control:
            for c in controls:
                assert _number(d.get(_sigma_key(names[c]))), (family, tid, names[c], d)

    # one event through serve: a 4th annotator's annotation, sent by Label Studio's webhook
    svc = start_service(ls_server.url, ls_server.token)
    assert connect(ls_server, pid, f"{svc.address}/webhook", tmp_path) == 0
    target = next(tid for tid, t in synced.items() if t["data"]["ext_id"] == 0)
    ls_client.annotations.create(id=target, result=gen.tasks[0]["annotations"][3]["result"],
                                 completed_by=users[3])
    after = wait_for(lambda: (lambda ts: ts if ts[target]["data"].get("agreement_n_annotators") == 4
                              else None)(export(ls_client, pid)), 120,
                     f"{family}: the webhook-triggered update of task {target}")
    d = after[target]["data"]
    assert _number(d["agreement_sigma"]), d
    if per_control:
        for c in controls:
            assert _number(d.get(_sigma_key(names[c]))), (family, names[c], d)
    others = [tid for tid in after if tid != target]
    assert all(after[t]["data"]["agreement_n_annotators"] == 3 for t in others)

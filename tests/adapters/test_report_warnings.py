"""Numerical warnings become report warnings; extreme settings give clean numbers."""
from __future__ import annotations

import json
import math
import subprocess
import sys

from ls_agreement.plugin.report.build import build_report as _build_report
from ls_agreement.plugin.settings import ReportSettings
from ls_agreement.metrics.distributional import sigma_threshold

def build_report(*args, **kwargs):
    """The report as its JSON contract (the typed ``Report`` serialised), as these tests read it."""
    return _build_report(*args, **kwargs).to_dict()


CONFIG = """<View><Image name="img" value="$image"/>
<PolygonLabels name="poly" toName="img"><Label value="A"/></PolygonLabels></View>"""


def _bowties() -> list[dict]:
    tasks = []
    for i in range(1, 7):
        anns = []
        for a in (1, 2, 3):
            # annotator 1 draws a self-intersecting "bow tie": shapely repairs it and warns
            pts = [[10, 10], [40, 40], [40, 10], [10, 40]] if a == 1 else \
                [[10 + a, 10], [40, 10], [40, 40], [10, 40]]
            anns.append({"id": i * 10 + a, "completed_by": a, "result": [
                {"from_name": "poly", "to_name": "img", "type": "polygonlabels",
                 "value": {"points": pts, "polygonlabels": ["A"]}}]})
        tasks.append({"id": i, "data": {"image": "x"}, "annotations": anns})
    return tasks


def test_runtime_warnings_become_report_warnings_not_stderr(tmp_path):
    rep = build_report(CONFIG, _bowties(), ReportSettings(bootstrap=20))
    assert any("make_valid" in w and w.startswith("poly: numerical warning") for w in rep["warnings"])
    export, config = tmp_path / "e.json", tmp_path / "c.xml"
    export.write_text(json.dumps(_bowties()))
    config.write_text(CONFIG)
    run = subprocess.run([sys.executable, "-W", "default", "-m", "ls_agreement.plugin.cli", "report",
                          str(export), "--config", str(config), "--bootstrap", "20"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "RuntimeWarning" not in run.stderr and "make_valid" not in run.stderr


def test_extreme_p_gives_a_clean_threshold():
    rng = __import__("numpy").random.default_rng(0)
    e = rng.random(500)
    for p in (1e-300, 1e-30, 1e-12):
        d = sigma_threshold(e, p)
        assert math.isfinite(d) and 0 <= d <= 1
    assert sigma_threshold(e, 1e-300) <= sigma_threshold(e, 1e-12) <= sigma_threshold(e, 0.05)

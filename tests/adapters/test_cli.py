"""`ls-agreement report`: formats, exit codes, messages."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ls_agreement.plugin.cli import main

from .conftest import DATA, EXPORTS

CONFIG = str(DATA / "label_config.xml")
RATING = str(EXPORTS / "by_tag_rating.json")


def run(capsys, *argv):
    code = main(["report", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_to_stdout(capsys):
    code, out, err = run(capsys, RATING, "--config", CONFIG, "--bootstrap", "0",
                         "--distance", "quality=interval", "--distance", "sentiment=nominal")
    assert code == 0
    rep = json.loads(out)
    assert rep["controls"]["quality"]["distance"] == "interval"
    assert rep["settings"]["bootstrap"] == 0


def test_csv_two_files_and_html(tmp_path, capsys):
    out = tmp_path / "r.csv"
    code, _, _ = run(capsys, RATING, "--config", CONFIG, "--bootstrap", "0", "--format", "csv", "--out", str(out))
    assert code == 0
    assert out.read_text().startswith("control,task,")
    assert (tmp_path / "r.annotators.csv").read_text().startswith("control,annotator,")
    page = tmp_path / "q.html"
    code, _, _ = run(capsys, RATING, "--config", CONFIG, "--bootstrap", "0", "--format", "html", "--out", str(page))
    assert code == 0 and page.read_text().startswith("<!DOCTYPE html>")


def test_settings_file(tmp_path, capsys):
    s = tmp_path / "s.toml"
    s.write_text('bootstrap = 0\nflag_below = 0.9\n[distances]\nquality = "ratio"\n')
    code, out, _ = run(capsys, RATING, "--config", CONFIG, "--settings", str(s))
    rep = json.loads(out)
    assert code == 0 and rep["controls"]["quality"]["distance"] == "ratio" and rep["settings"]["flag_below"] == 0.9


@pytest.mark.parametrize("argv, fragment", [
    ([str(EXPORTS / "project_export.csv"), "--config", CONFIG], "CSV"),
    ([str(EXPORTS / "project_export.min.json"), "--config", CONFIG], "JSON_MIN"),
    ([RATING, "--config", "/nonexistent.xml"], "cannot read config"),
    ([RATING, "--config", RATING], "not well-formed XML"),
    ([RATING, "--config", CONFIG, "--distance", "quality"], "FROM_NAME=NAME"),
    ([RATING, "--config", CONFIG, "--distance", "quality=nope"], "unknown distance"),
    ([RATING, "--config", CONFIG, "--settings", "/nonexistent.toml"], "cannot read settings"),
    ([RATING, "--config", CONFIG, "--workers", "-1"], "--workers must be >= 0"),
    ([RATING, "--config", CONFIG, "--memory", "0"], "--memory must be a positive number of GB"),
    ([RATING, "--config", CONFIG, "--memory", "inf"], "--memory must be a positive number of GB"),
])
def test_bad_input_exit_2(capsys, argv, fragment):
    code, out, err = run(capsys, *argv)
    assert code == 2 and fragment in err and "Traceback" not in err and out == ""


def test_a_memory_budget_changes_no_number(capsys):
    code, whole, _ = run(capsys, RATING, "--config", CONFIG, "--bootstrap", "20", "--workers", "1")
    assert code == 0
    # a budget far below any worker's estimate: the controls run one at a time
    code, tight, _ = run(capsys, RATING, "--config", CONFIG, "--bootstrap", "20", "--workers", "2", "--memory", "0.001")
    assert code == 0 and tight == whole


def test_strict_exit_2_names_the_place(capsys):
    from .conftest import BROKEN
    code, _, err = run(capsys, str(BROKEN / "rect_x_nan.json"), "--config", CONFIG, "--strict", "--bootstrap", "0")
    assert code == 2 and "task 1, annotation 10, field 'result[0].value.x'" in err
    code, out, err = run(capsys, str(BROKEN / "rect_x_nan.json"), "--config", CONFIG, "--bootstrap", "0")
    assert code == 0 and "warning" in err
    assert any("result[0].value.x" in w for w in json.loads(out)["warnings"])


def test_internal_error_exit_1(capsys, monkeypatch):
    import ls_agreement.plugin.report.build as report

    def boom(*a, **k):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(report, "build_report", boom)
    code, _, err = run(capsys, RATING, "--config", CONFIG)
    assert code == 1 and "internal error: RuntimeError: kaboom" in err and "Traceback" not in err
    code, _, err = run(capsys, RATING, "--config", CONFIG, "--debug")
    assert code == 1 and "Traceback" in err


@pytest.mark.parametrize("raised, code, text", [
    (ValueError("operands could not be broadcast together"), 1, "internal error: ValueError"),
    (KeyError("oops"), 1, "internal error: KeyError"),
    (None, 2, "error: tokenizer must be one of"),     # a measure's bad argument is the caller's
])
def test_one_exit_code_table(capsys, monkeypatch, raised, code, text):
    """A ValueError from numpy inside the measures is a bug (exit 1), not bad input; a
    measure's bad argument is BadInput (exit 2). cli.main alone decides."""
    import ls_agreement.plugin.report.build as report
    from ls_agreement.metrics.tokens import token_bounds

    def boom(*a, **k):
        if raised is None:
            token_bounds("x", "no-such-tokenizer")
        raise raised

    monkeypatch.setattr(report, "build_report", boom)
    got, out, err = run(capsys, RATING, "--config", CONFIG)
    assert got == code and text in err and "Traceback" not in err and out == ""


@pytest.mark.parametrize("argv", [["sync", "--project", "1"], ["worker"], ["serve", "--url", "x"],
                                  ["connect", "--project", "1"]])
def test_every_command_maps_bad_usage_to_2(capsys, monkeypatch, argv):
    for env in ("LABEL_STUDIO_URL", "LABEL_STUDIO_API_KEY", "LS_AGREEMENT_QUEUE"):
        monkeypatch.delenv(env, raising=False)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err


def test_console_entry_point_help():
    out = subprocess.run([sys.executable, "-m", "ls_agreement.plugin.cli", "report", "--help"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "--distance" in out.stdout and "--strict" in out.stdout


def test_a_run_that_fails_while_writing_leaves_the_previous_output(tmp_path, capsys, monkeypatch):
    """The report replaces --out only once written whole: a failure part-way (here the
    writer itself) leaves the last good report as it was, and no partial file beside it."""
    out = tmp_path / "r.json"
    code, _, _ = run(capsys, RATING, "--config", CONFIG, "--bootstrap", "0", "--out", str(out))
    good = out.read_bytes()
    assert code == 0 and json.loads(good)["controls"]

    from ls_agreement.plugin.report.model import Report

    def cut(self, fh, indent=None):
        fh.write(b'{"n_tasks": ')
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Report, "write_json", cut)
    code, _, err = run(capsys, RATING, "--config", CONFIG, "--bootstrap", "0", "--out", str(out))
    assert code == 2 and "cannot write" in err and "No space left" in err and "Traceback" not in err
    assert out.read_bytes() == good and [p.name for p in tmp_path.iterdir()] == ["r.json"]

"""The wheel installs anywhere: built from this checkout, installed into a fresh virtualenv
outside the repository, and run from a directory that is neither the repository nor
``../shared``.

What a deployment gets is what the wheel holds, so this is the only test that sees a
module missing from ``setup.cfg``, a runtime import of a test-only package, or a read of a
file that lives only in the checkout.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Packages the test extra brings; the installed package must never import them.
TEST_ONLY = ("pytest", "hypothesis", "krippendorff", "statsmodels", "sklearn", "pingouin", "irrCAC",
             "yaml")

pytestmark = pytest.mark.slow


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)} -> {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path]:
    """A fresh virtualenv (no system site-packages) with only the wheel and what it declares."""
    base = tmp_path_factory.mktemp("wheel")
    assert ROOT not in base.parents, "the virtualenv must live outside the repository"
    dist = base / "dist"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
          "--disable-pip-version-check", "-w", str(dist), str(ROOT)], cwd=base, env=env)
    wheels = list(dist.glob("ls_agreement-*.whl"))
    assert len(wheels) == 1, wheels
    target = base / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False, clear=True).create(target)
    py = target / "bin" / "python"
    _run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheels[0])],
         cwd=base, env=env)
    work = base / "elsewhere"
    work.mkdir()
    shutil.copy(ROOT / "tests" / "data" / "mixed_export.json", work / "export.json")
    shutil.copy(ROOT / "tests" / "data" / "mixed_config.xml", work / "config.xml")
    return py, env, work


def test_version_is_the_one_setup_cfg_declares(installed: tuple[Path, dict[str, str], Path]) -> None:
    import configparser

    py, env, work = installed
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    declared = cfg["metadata"]["version"]
    out = _run([str(py.parent / "ls-agreement"), "--version"], cwd=work, env=env).stdout
    assert out.split() == ["ls-agreement", declared]
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## {declared}" in changelog, "CHANGELOG.md has no section for the declared version"


def test_report_runs_from_the_wheel(installed: tuple[Path, dict[str, str], Path]) -> None:
    py, env, work = installed
    out = work / "report.json"
    _run([str(py.parent / "ls-agreement"), "report", "export.json", "--config", "config.xml",
          "--bootstrap", "50", "--out", str(out)], cwd=work, env=env)
    report = json.loads(out.read_text())
    assert report["controls"], "the report measured no control"
    # where the package came from: the virtualenv, never the checkout
    where = _run([str(py), "-c", "import ls_agreement.plugin, sys; print(ls_agreement.plugin.__file__)"],
                 cwd=work, env=env).stdout.strip()
    assert Path(where).is_relative_to(py.parents[1]), where


def test_researcher_api_imports_and_measures(installed: tuple[Path, dict[str, str], Path]) -> None:
    py, env, work = installed
    code = (
        "import pandas as pd, ls_agreement.metrics as m\n"
        "t = pd.DataFrame({'item': [1, 1, 2, 2, 3, 3, 4, 4], 'annotator': list('abababab'),\n"
        "                  'value': ['x', 'x', 'y', 'y', 'x', 'y', 'y', 'y']})\n"
        "r = m.krippendorff_alpha(t, distance='nominal')\n"
        "print(float(r.estimate))\n"
    )
    alpha = float(_run([str(py), "-c", code], cwd=work, env=env).stdout.strip().splitlines()[-1])
    # Krippendorff's nominal alpha of this table by hand: D_o = 2/8 = 0.25 (one disagreeing
    # unit of 2 values: 2 * 1 * 1 / (2 - 1) = 2, over n = 8); D_e: 3 x and 5 y,
    # 2 * 3 * 5 / (8 * 7) = 0.5357...; alpha = 1 - 0.25 / 0.5357 = 0.5333...
    assert alpha == pytest.approx(1 - 0.25 / (30 / 56), abs=1e-9)


def test_installed_package_needs_nothing_from_the_test_extra(installed: tuple[Path, dict[str, str], Path]) -> None:
    """Every module of the installed package imports with only the declared dependencies,
    and none of them pulls in a test-only package."""
    py, env, work = installed
    code = (
        "import importlib, pkgutil, sys, ls_agreement\n"
        "bad = []\n"
        "for m in pkgutil.walk_packages(ls_agreement.__path__, 'ls_agreement.'):\n"
        "    try:\n"
        "        importlib.import_module(m.name)\n"
        "    except Exception as exc:\n"
        "        bad.append(f'{m.name}: {type(exc).__name__}: {exc}')\n"
        f"test_only = sorted(set({TEST_ONLY!r}) & set(sys.modules))\n"
        "print('BAD', bad)\nprint('TESTONLY', test_only)\n"
    )
    out = _run([str(py), "-c", code], cwd=work, env=env).stdout
    assert "BAD []" in out, out
    assert "TESTONLY []" in out, out

"""Every number is reproducible from --seed, whatever the interpreter's hash seed."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"


def _report(hash_seed: str, seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    run = subprocess.run([sys.executable, "-m", "ls_agreement.plugin.cli", "report",
                          str(DATA / "mixed_export.json"), "--config", str(DATA / "mixed_config.xml"),
                          "--bootstrap", "50", "--seed", seed],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_same_seed_same_bytes_across_hash_seeds():
    # spans (span F1's chance term), multiple choice (sets) and boxes in one report
    outs = {_report(h, "3") for h in ("1", "2", "3", "4")}
    assert len(outs) == 1


def test_another_seed_changes_the_intervals():
    assert _report("1", "3") != _report("1", "4")

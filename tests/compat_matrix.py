"""`bash run.sh compat`: the plugin's server tests against several Label Studio releases.

Not part of CI (each release is a 3-4 minute install and the server tests take minutes per
release). Each release runs in its own pytest process with ``LS_AGREEMENT_LS_VERSION`` set,
so the fixtures install that release into its own cached virtualenv and build its own
migrated template; the matrix of passed / failed / skipped per test file is printed as a
Markdown table (the README shows the last one).

    bash run.sh compat                       # the default releases below
    bash run.sh compat 1.20.0 1.23.2         # these only
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_RELEASES = ("1.17.0", "1.20.0", "1.22.0", "1.23.2")
# PostgreSQL runs are a separate axis (their own template dump per release): not in the matrix.
PYTEST_ARGS = ["-m", "server", "tests/plugin", "--ignore=tests/plugin/test_postgres_push.py", "-q",
               "-p", "no:cacheprovider"]


def run_release(version: str, out_dir: Path) -> dict[str, Counter]:
    """Outcome counts per test file for one release."""
    junit = out_dir / f"junit-{version}.xml"
    env = dict(os.environ, LS_AGREEMENT_LS_VERSION=version)
    print(f"== Label Studio {version}", flush=True)
    subprocess.run([sys.executable, "-m", "pytest", *PYTEST_ARGS, f"--junitxml={junit}"],
                   cwd=ROOT, env=env)
    counts: dict[str, Counter] = defaultdict(Counter)
    if not junit.exists():
        counts["(pytest did not run)"]["error"] += 1
        return counts
    for case in ET.parse(junit).getroot().iter("testcase"):
        where = (case.get("classname") or "").replace(".", "/") + ".py"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped":
                outcome = "skipped"
        counts[where][outcome] += 1
    return counts


def matrix(results: dict[str, dict[str, Counter]]) -> str:
    versions = list(results)
    files = sorted({f for r in results.values() for f in r})
    lines = ["| test file | " + " | ".join(versions) + " |",
             "|---|" + "---|" * len(versions)]

    def cell(c: Counter) -> str:
        total = sum(c.values())
        text = f"{c['passed']}/{total}"
        if c["failed"]:
            text += f" ({c['failed']} failed)"
        if c["skipped"]:
            text += f" ({c['skipped']} skipped)"
        return text

    for f in files:
        lines.append(f"| {f} | " + " | ".join(cell(results[v].get(f, Counter())) for v in versions) + " |")
    totals = {v: sum((c for c in results[v].values()), Counter()) for v in versions}
    lines.append("| **all** | " + " | ".join(f"**{cell(totals[v])}**" for v in versions) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    versions = argv or list(DEFAULT_RELEASES)
    out_dir = Path(tempfile.mkdtemp(prefix="ls-agreement-compat-"))
    results = {v: run_release(v, out_dir) for v in versions}
    table = matrix(results)
    print("\n" + table)
    (out_dir / "matrix.md").write_text(table + "\n")
    print(f"\n(junit files and matrix.md in {out_dir})")
    failed = any(c["failed"] for r in results.values() for c in r.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

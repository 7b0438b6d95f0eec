"""`bash run.sh compat`: the plugin's server tests against several Label Studio releases.

Not part of CI: each release is a 2-5 minute install once, then about 20 minutes of server
tests on a shared machine. Each release runs in its own pytest process with
``LS_AGREEMENT_LS_VERSION`` set, so the fixtures install that release into its own cached
virtualenv and build its own migrated template; the matrix of passed / failed / skipped per
test file is printed as a Markdown table with each release's wall time (README "Label Studio
releases and the SDK" shows the last one).

Then ``ls-agreement demo`` runs on each release (a fresh data dir, the server stopped at the
end) and its per-annotator table (the lines from "Per annotator" to "Flagged tasks", i.e.
without the links, whose ports and ids vary) is compared across the releases: the same
sample, imported into a different Label Studio, must give the same table.

    bash run.sh compat                       # the default releases below
    bash run.sh compat 1.20.0 1.23.2         # these only
    bash run.sh compat --demo-only           # the demo tables only (minutes, not an hour)

The tables are compared only when the plugin's code did not change between the demo runs
(a fingerprint of its source files is taken at each run): on a shared checkout, a change
made meanwhile would otherwise pass for a difference between releases.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_RELEASES = ("1.17.0", "1.20.0", "1.22.0", "1.23.2")
# PostgreSQL runs are a separate axis (their own template dump per release): not in the matrix.
PYTEST_ARGS = ["-m", "server", "tests/plugin", "--ignore=tests/plugin/test_postgres_push.py", "-q",
               "-p", "no:cacheprovider"]


# The demo's own first and last table lines (demo/command.py print_summary).
TABLE_START, TABLE_END = "Per annotator", "Flagged tasks:"


def release_env(version: str) -> dict[str, str]:
    return dict(os.environ, LS_AGREEMENT_LS_VERSION=version)


def install_release(version: str) -> float | None:
    """Install the release's venv and template up front, so the wall time of the tests is
    their own; the seconds taken, or None when both were cached."""
    code = ("import sys, tempfile; from ls_agreement.demo.local_server import LocalLabelStudio; "
            "s = LocalLabelStudio(tempfile.mkdtemp()); "
            "cached = s.is_installed() and (s.template_dir / 'label_studio.sqlite3').exists(); "
            "s.ensure_template(); sys.exit(3 if cached else 0)")
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=release_env(version))
    return None if proc.returncode == 3 else time.monotonic() - t0


def run_release(version: str, out_dir: Path) -> dict[str, Counter]:
    """Outcome counts per test file for one release."""
    junit = out_dir / f"junit-{version}.xml"
    print(f"== Label Studio {version}", flush=True)
    subprocess.run([sys.executable, "-m", "pytest", *PYTEST_ARGS, f"--junitxml={junit}"],
                   cwd=ROOT, env=release_env(version))
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


def code_fingerprint() -> str:
    """Hash of the package's source files (what the demo runs), to tell a release's
    difference from a code change made while the matrix ran."""
    h = hashlib.sha1()
    for folder in ("metrics", "adapters", "plugin", "demo"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:12]


def demo_table(version: str, out_dir: Path) -> str:
    """The per-annotator table ``ls-agreement demo`` prints on this release (or the reason
    there is none)."""
    data_dir = out_dir / f"demo-{version}"
    exe = Path(sys.executable).with_name("ls-agreement")
    proc = subprocess.run([str(exe), "demo", "--no-keep-running", "--port", "0",
                           "--data-dir", str(data_dir)],
                          cwd=ROOT, env=release_env(version), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    (out_dir / f"demo-{version}.out").write_text(proc.stdout + "\n--- stderr\n" + proc.stderr)
    if proc.returncode != 0:
        return f"(demo exited {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]})"
    lines = proc.stdout.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith(TABLE_START))
        end = next(i for i, line in enumerate(lines) if line.startswith(TABLE_END))
    except StopIteration:
        return "(demo printed no per-annotator table)"
    return "\n".join(lines[start:end + 1])


def matrix(results: dict[str, dict[str, Counter]], seconds: dict[str, float]) -> str:
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
    lines.append("| wall time | " + " | ".join(f"{seconds[v] / 60:.1f} min" for v in versions) + " |")
    return "\n".join(lines)


def compare_demos(demos: dict[str, tuple[str, str, str]]) -> bool:
    """Print the first release's table and, per other release, whether it is identical;
    ``demos`` maps a release to (table, fingerprint before, fingerprint after)."""
    versions = list(demos)
    reference, _, _ = demos[versions[0]]
    prints = {fp for _, before, after in demos.values() for fp in (before, after)}
    print(f"\nls-agreement demo, per-annotator table on {versions[0]}:\n{reference}")
    same = not reference.startswith("(")
    for v in versions[1:]:
        table = demos[v][0]
        same = same and table == reference
        print(f"  {v}: " + ("identical" if table == reference else f"DIFFERS:\n{table}"))
    if len(prints) > 1:
        print("  (the plugin's code changed while the demos ran: fingerprints "
              f"{', '.join(sorted(prints))}; rerun with --demo-only to compare releases)")
    return same and len(prints) == 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bash run.sh compat", description=__doc__.split("\n")[0])
    parser.add_argument("releases", nargs="*", default=list(DEFAULT_RELEASES))
    parser.add_argument("--demo-only", action="store_true",
                        help="only compare the demo's per-annotator table across the releases")
    args = parser.parse_args(argv)
    versions = args.releases
    out_dir = Path(tempfile.mkdtemp(prefix="ls-agreement-compat-"))
    results: dict[str, dict[str, Counter]] = {}
    seconds: dict[str, float] = {}
    demos: dict[str, tuple[str, str, str]] = {}
    for v in versions:
        installed = install_release(v)
        if installed is not None:
            print(f"(Label Studio {v}: venv and template built in {installed:.0f} s)", flush=True)
        if not args.demo_only:
            t0 = time.monotonic()
            results[v] = run_release(v, out_dir)
            seconds[v] = time.monotonic() - t0
        before = code_fingerprint()
        table = demo_table(v, out_dir)
        demos[v] = (table, before, code_fingerprint())
        (out_dir / f"demo-table-{v}.txt").write_text(f"{table}\n(code {before})\n")
    failed = False
    if results:
        table = matrix(results, seconds)
        print("\n" + table)
        (out_dir / "matrix.md").write_text(table + "\n")
        failed = any(c["failed"] for r in results.values() for c in r.values())
    same = compare_demos(demos)
    print(f"\n(junit files, matrix.md, demo outputs in {out_dir})")
    return 1 if failed or not same else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

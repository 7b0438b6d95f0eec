"""The summary table of the template runs, for the integrator.

One row per (template, control): tag, kind, identical α, the careless annotator's rank by α
and by σ (1 = lowest), random α; a cell holds the status instead when the control was not
measured ``ok``. Runs of a subset (``-k``) update their rows in the existing file rather
than replace it (several sessions may write it; an advisory lock serialises them), so the
file gathers the latest result of every cell. Written as TSV and as Markdown beside it.
"""
from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path
from typing import Iterator

from .generator import SCENARIOS
from .report_checks import Row

__all__ = ["write_summary", "HEAD"]

HEAD = ["template", "control", "tag", "kind", "identical alpha", "careless rank (1=lowest)",
        "random alpha"]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path.with_suffix(".lock"), "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _read(path: Path) -> dict[tuple[str, str], Row]:
    rows: dict[tuple[str, str], Row] = {}
    if not path.exists():
        return rows
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or lines[0].split("\t") != HEAD:
        return rows
    for line in lines[1:]:
        cells = line.split("\t")
        if len(cells) != len(HEAD):
            continue
        row = Row(cells[0], cells[1], cells[2], cells[3])
        row.cells = {s: c for s, c in zip(SCENARIOS, cells[4:]) if c}
        rows[(row.template, row.control)] = row
    return rows


def write_summary(path: Path, rows: list[Row]) -> None:
    """Merge ``rows`` into the table at ``path`` (TSV) and rewrite it and its ``.md``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path):
        table = _read(path)
        for r in rows:
            kept = table.setdefault((r.template, r.control), Row(r.template, r.control, r.tag))
            kept.kind = r.kind or kept.kind
            kept.cells.update(r.cells)
        ordered = sorted(table.values(), key=lambda r: (r.template, r.control))
        tsv = ["\t".join(HEAD)]
        md = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
        for r in ordered:
            cells = [r.template, r.control, r.tag, r.kind, *(r.cells.get(s, "") for s in SCENARIOS)]
            tsv.append("\t".join(cells))
            md.append("| " + " | ".join(cells) + " |")
        path.write_text("\n".join(tsv) + "\n", encoding="utf-8")
        path.with_suffix(".md").write_text("\n".join(md) + "\n", encoding="utf-8")

"""The sync's local state: a small SQLite file.

Holds, per (server, project, task): the fingerprint of the task's annotations and the
values last pushed (and when); per run: start/end, outcome and counts; per project: the
last project-level numbers (Label Studio open source has no project field we could write
them to without clobbering user text, so they live here and in the report files).

A task's row is written only after that task's PATCH succeeded, so an interrupted sync
never records a half-written task as done (docs/design.md, "State and scale").
"""
from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterable, Mapping

from .errors import BadInput

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    project_key TEXT NOT NULL,
    task_id     INTEGER NOT NULL,
    fingerprint TEXT NOT NULL,
    pushed      TEXT NOT NULL,          -- JSON of the data keys + meta payload pushed
    pushed_at   REAL NOT NULL,
    run_id      INTEGER,
    PRIMARY KEY (project_key, task_id)
);
CREATE TABLE IF NOT EXISTS runs (
    run_id      INTEGER PRIMARY KEY AUTOINCREMENT,
    project_key TEXT NOT NULL,
    started_at  REAL NOT NULL,
    finished_at REAL,
    status      TEXT NOT NULL,          -- running | ok | failed
    n_tasks     INTEGER,
    n_written   INTEGER,
    message     TEXT
);
CREATE TABLE IF NOT EXISTS projects (
    project_key TEXT PRIMARY KEY,
    summary     TEXT NOT NULL,          -- JSON: project-level numbers per control
    updated_at  REAL NOT NULL
);
"""


def project_key(url: str, project_id: int) -> str:
    """Stable key of a project on a server: ``<url without trailing slash>#<id>``."""
    return f"{url.strip().rstrip('/')}#{int(project_id)}"


class SyncState:
    """SQLite-backed sync state.

    Parameters
    ----------
    path : Path
        The state file; created with its folder if missing.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(str(self.path), timeout=30)
            self.db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise BadInput(f"state file {self.path} is not a usable SQLite database: "
                             f"{exc}") from exc

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "SyncState":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- tasks ----------------------------------------------------------------------------
    def task_rows(self, key: str) -> dict[int, tuple[str, dict[str, Any]]]:
        """task id -> (fingerprint, pushed payload) for every recorded task."""
        cur = self.db.execute(
            "SELECT task_id, fingerprint, pushed FROM tasks WHERE project_key = ?", (key,))
        return {int(t): (fp, json.loads(p)) for t, fp, p in cur}

    def record_tasks(self, key: str, rows: Iterable[tuple[int, str, Mapping[str, Any]]],
                     run_id: int | None) -> None:
        """Record tasks as pushed (or found already correct on the server)."""
        now = time.time()
        with self.db:
            self.db.executemany(
                "INSERT OR REPLACE INTO tasks VALUES (?, ?, ?, ?, ?, ?)",
                [(key, int(t), fp, json.dumps(p, sort_keys=True), now, run_id)
                 for t, fp, p in rows])

    def forget_tasks(self, key: str, task_ids: Iterable[int]) -> None:
        """Drop rows of tasks that no longer exist or no longer carry our values."""
        with self.db:
            self.db.executemany("DELETE FROM tasks WHERE project_key = ? AND task_id = ?",
                                [(key, int(t)) for t in task_ids])

    # -- runs -----------------------------------------------------------------------------
    def start_run(self, key: str) -> int:
        with self.db:
            cur = self.db.execute(
                "INSERT INTO runs (project_key, started_at, status) VALUES (?, ?, 'running')",
                (key, time.time()))
        return int(cur.lastrowid)

    def finish_run(self, run_id: int, status: str, n_tasks: int | None = None,
                   n_written: int | None = None, message: str = "") -> None:
        with self.db:
            self.db.execute(
                "UPDATE runs SET finished_at = ?, status = ?, n_tasks = ?, n_written = ?, "
                "message = ? WHERE run_id = ?",
                (time.time(), status, n_tasks, n_written, message, run_id))

    def runs(self, key: str) -> list[dict[str, Any]]:
        cur = self.db.execute(
            "SELECT run_id, started_at, finished_at, status, n_tasks, n_written, message "
            "FROM runs WHERE project_key = ? ORDER BY run_id", (key,))
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, r)) for r in cur]

    # -- project numbers ------------------------------------------------------------------
    def save_project(self, key: str, summary: Mapping[str, Any]) -> None:
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO projects VALUES (?, ?, ?)",
                            (key, json.dumps(summary, sort_keys=True, default=str),
                             time.time()))

    def project(self, key: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT summary FROM projects WHERE project_key = ?",
                              (key,)).fetchone()
        return json.loads(row[0]) if row else None

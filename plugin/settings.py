"""The plugin's TOML settings file.

```toml
[report]                 # → ReportSettings.from_mapping (adapters/settings.py)
flag_below = 0.5
bootstrap = 1000
[report.distances]
bbox = "iou"             # from_name -> distance name or "auto"

[sync]                   # → SyncOptions
workers = 8              # concurrent PATCHes
chunk = 100              # tasks re-read together right before their writes
attempts = 4             # tries per request (bounded retries, exponential backoff)
timeout = 60             # seconds per request
views = true             # keep the Data Manager views current
```
Top-level report keys (without a ``[report]`` table) are accepted too.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from .client import BadInput


@dataclass
class SyncOptions:
    """How the sync talks to the server (not what it computes)."""

    workers: int = 8
    chunk: int = 100
    attempts: int = 4
    backoff: float = 0.5
    timeout: float = 60.0
    views: bool = True

    @classmethod
    def from_mapping(cls, d: Mapping[str, Any]) -> "SyncOptions":
        known = {f.name: f.type for f in fields(cls)}
        unknown = sorted(set(d) - set(known))
        if unknown:
            raise BadInput(f"settings [sync]: unknown key(s) {', '.join(unknown)}; "
                           f"known: {', '.join(sorted(known))}")
        out = cls()
        for k, v in d.items():
            default = getattr(out, k)
            if isinstance(default, bool):
                ok = isinstance(v, bool)
            elif isinstance(default, int):
                ok = isinstance(v, int) and not isinstance(v, bool) and v >= 1
            else:
                ok = isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
            if not ok:
                raise BadInput(f"settings [sync].{k}: expected a positive "
                               f"{type(default).__name__}, got {v!r}")
            setattr(out, k, type(default)(v))
        return out


@dataclass
class PluginSettings:
    """Everything a settings file holds: report settings and sync options."""

    report: Any = None                      # ReportSettings (None = adapters' defaults)
    sync: SyncOptions = field(default_factory=SyncOptions)


def _report_settings(d: Mapping[str, Any]) -> Any:
    from ls_agreement.adapters.settings import ReportSettings

    try:
        return ReportSettings.from_mapping(d)
    except (TypeError, ValueError, KeyError) as exc:
        raise BadInput(f"settings [report]: {exc}") from exc


def settings_from_mapping(d: Mapping[str, Any]) -> PluginSettings:
    """Build :class:`PluginSettings` from a parsed TOML document."""
    d = dict(d)
    sync = d.pop("sync", {})
    if not isinstance(sync, Mapping):
        raise BadInput("settings: [sync] must be a table")
    report = d.pop("report", None)
    if report is not None and d:
        raise BadInput(f"settings: key(s) {', '.join(sorted(d))} outside [report]/[sync]")
    report = d if report is None else report
    if not isinstance(report, Mapping):
        raise BadInput("settings: [report] must be a table")
    return PluginSettings(report=_report_settings(report) if report else None,
                          sync=SyncOptions.from_mapping(sync))


def load_settings(path: str | Path | None) -> PluginSettings:
    """Read a TOML settings file (None → defaults).

    Raises
    ------
    BadInput
        Missing file, invalid TOML, unknown keys or bad values (the message names them).
    """
    if path is None:
        return PluginSettings()
    p = Path(path)
    try:
        with p.open("rb") as fh:
            doc = tomllib.load(fh)
    except FileNotFoundError as exc:
        raise BadInput(f"settings file {p} not found") from exc
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"settings file {p} is not valid TOML: {exc}") from exc
    try:
        return settings_from_mapping(doc)
    except BadInput as exc:
        raise BadInput(f"{p}: {exc}") from exc

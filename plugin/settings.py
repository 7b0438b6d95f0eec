"""The one settings model and loader of every command (``report``, ``sync``, ``connect``,
``serve``, ``demo``).

A TOML file with two tables; the same keys mean the same everywhere:

```toml
[report]                 # → ReportSettings: what is computed
flag_level = 0.01        # false-flag rate of an ordinary task (all controls together)
flag_posterior = 0.5     # flag an unreliable annotator's departure from this probability
flag_below = 0           # legacy: also flag a task whose σ on a control is below this (0 = off)
p = 0.05
form = "canonical"       # or "pairwise" (paper 000)
bootstrap = 1000
seed = 0
include_predictions = false
[report.distances]
bbox = "boxes.giou"      # from_name -> registered distance name, or "auto"
[report.groups]
crowd = ["3", "4"]       # annotator pools for κx; they must not overlap
experts = ["5"]

[sync]                   # → SyncOptions: how the sync talks to the server
workers = 8              # most concurrent PATCHes; the sync times 1, 2, 4, ... up to it
                         # on its first PATCHes and keeps the fastest
chunk = 100              # tasks re-read together right before their writes
meta = false             # true: per-control detail in task.meta["agreement"], one PATCH per
                         # task whose detail changed (false: data keys only; with the bulk
                         # action a first sync is then a few requests per key)
bulk = true              # write data keys with the Data Manager action add_data_field
                         # when the server lists it (ff_back_experimental_features=true)
attempts = 4             # tries per request (bounded retries, exponential backoff)
timeout = 60             # seconds per request
views = true             # keep the Data Manager views current
```

A file without tables is read as the ``[report]`` table. Anything else — a key outside
the two tables next to them, an unknown key, a wrong type or range, an unknown distance
name, overlapping pools — is refused up front with :class:`~.errors.BadInput` (exit 2)
naming the key.
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, Mapping

from .errors import BadInput

__all__ = ["ReportSettings", "SyncOptions", "PluginSettings", "check_groups", "settings_from_mapping",
           "load_settings"]


@dataclass
class ReportSettings:
    """What a report computes: distances, σ's p, flag rule, bootstrap, seed, pools."""

    distances: dict[str, str] = field(default_factory=dict)
    flag_below: float = 0.0
    flag_level: float = 0.01
    flag_posterior: float = 0.5
    p: float = 0.05
    form: Literal["canonical", "pairwise"] = "canonical"
    bootstrap: int = 1000
    seed: int = 0
    include_predictions: bool = False
    groups: dict[str, list[str]] = field(default_factory=dict)
    humans_vs_model: bool = False
    strict: bool = False

    def distance_for(self, control: str) -> str:
        """Distance name for a control: its setting, else ``"auto"``."""
        return self.distances.get(control, "auto")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def validate(self) -> "ReportSettings":
        """Check every field as :meth:`from_mapping` does (settings built in code, or
        changed after loading: a negative seed, overlapping annotator pools, ...).

        Raises
        ------
        ValueError
            The first bad field, named.
        """
        for f in fields(self):
            _check(f.name, getattr(self, f.name))
        return self

    @classmethod
    def from_mapping(cls, d: Mapping[str, Any]) -> "ReportSettings":
        """Validated settings from a mapping (TOML table, JSON object, plugin settings).

        Raises
        ------
        ValueError
            Wrong types or ranges, with the key named; unknown scalar keys.
        """
        if not isinstance(d, Mapping):
            raise BadInput(f"settings must be a mapping, got {type(d).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(k for k in d if k not in known)
        if unknown:
            raise BadInput(f"unknown setting(s) {unknown}; known: {sorted(known)}")
        kw = {key: _check(key, value) for key, value in d.items()}
        return cls(**kw)


def _check(key: str, v: Any) -> Any:
    def bad(expected: str) -> BadInput:
        return BadInput(f"setting {key!r} must be {expected}, got {v!r}")

    if key == "distances":
        if not isinstance(v, Mapping) or not all(isinstance(a, str) and isinstance(b, str) and b
                                                 for a, b in v.items()):
            raise bad("a table control name -> distance name")
        from ls_agreement.metrics import available

        known = set(available())
        unknown = sorted({d for d in v.values() if d != "auto" and d not in known})
        if unknown:
            raise BadInput(f"setting 'distances': unknown distance(s) {unknown}; known: auto, "
                             f"{', '.join(sorted(known))}")
        return dict(v)
    if key == "groups":
        if not isinstance(v, Mapping):
            raise bad("a table group name -> list of annotator ids")
        out = {}
        for g, members in v.items():
            if not isinstance(members, (list, tuple)) or not all(
                    isinstance(m, (str, int)) and not isinstance(m, bool) for m in members):
                raise BadInput(f"setting 'groups.{g}' must be a list of annotator ids, got {members!r}")
            out[str(g)] = [str(m) for m in members]
        check_groups(out)
        return out
    if key in ("flag_below", "p", "flag_level", "flag_posterior"):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise bad("a number")
        if key in ("p", "flag_level") and not 0 < v < 1:
            raise bad("in (0, 1)")
        if key == "flag_posterior" and not 0 < v <= 1:
            raise bad("in (0, 1]")
        return float(v)
    if key in ("bootstrap", "seed"):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise bad("a non-negative integer")
        return v
    if key == "form":
        if v not in ("canonical", "pairwise"):
            raise bad('"canonical" or "pairwise"')
        return v
    if not isinstance(v, bool):
        raise bad("true or false")
    return v


def check_groups(groups: Mapping[str, Any]) -> None:
    """Annotator pools of κx must not overlap (paper 001: two independent replications).

    An annotator in two pools would be compared with themself across the pools, which
    has no meaning (it gave a normalized κx with a zero-width interval). Ids compare as
    strings (``2`` and ``"2"`` are the same annotator).

    Raises
    ------
    ValueError
        Naming the annotator and both pools.
    """
    owner: dict[str, str] = {}
    for g, members in groups.items():
        for m in members:
            m = str(m)
            if m in owner and owner[m] != str(g):
                raise BadInput(f"setting 'groups': annotator {m!r} is in both {owner[m]!r} and "
                                 f"{str(g)!r}; annotator pools must not overlap")
            owner[m] = str(g)


@dataclass
class SyncOptions:
    """How the sync talks to the server (not what it computes).

    ``workers`` caps the PATCH concurrency (the level used is measured on the server);
    ``meta`` keeps the per-control detail in ``task.meta`` (off by default: it costs one
    ``PATCH`` per task, where the data keys go in bulk; the detail is in the report files
    either way); ``bulk`` allows the Data Manager bulk action.
    """

    workers: int = 8
    chunk: int = 100
    attempts: int = 4
    backoff: float = 0.5
    timeout: float = 60.0
    views: bool = True
    meta: bool = False
    bulk: bool = True
    # Routing (plugin/routing.py): raise the overlap of each flagged task by one, up to
    # ``route_max_overlap``, so Label Studio hands it to one more annotator; undone when
    # the task is no longer flagged (or routing is switched off).
    route_flagged: bool = False
    route_max_overlap: int = 5
    # The live service (plugin/live) rescores events against a frozen project baseline and
    # makes a new one after this many events (and at every reconcile), never per event; a
    # new baseline is computed beside the event path and republishes what it moved, once.
    rebaseline_events: int = 1000
    # Between baselines the report files (report.json, the quality page) are rewritten at
    # most this often: on a big project writing them costs more than rescoring an event.
    report_every: float = 30.0

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

    report: ReportSettings = field(default_factory=ReportSettings)
    sync: SyncOptions = field(default_factory=SyncOptions)


def _report_settings(d: Mapping[str, Any]) -> ReportSettings:
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
    return PluginSettings(report=_report_settings(report), sync=SyncOptions.from_mapping(sync))


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
        raw = p.read_bytes()
    except FileNotFoundError:
        raise BadInput(f"cannot read settings {str(p)!r}: file not found") from None
    except OSError as exc:
        raise BadInput(f"cannot read settings {str(p)!r}: {exc.strerror or exc}") from None
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BadInput(f"settings file {p} is not valid TOML: {exc}") from None
    try:
        return settings_from_mapping(doc)
    except BadInput as exc:
        raise BadInput(f"{p}: {exc}") from exc

"""The one settings model and loader of every command (``report``, ``sync``, ``connect``,
``serve``, ``demo``).

A TOML file with two tables; the same keys mean the same everywhere:

```toml
[report]                 # → ReportSettings: what is computed
flag_posterior = 0.5     # flag a task from this posterior of a departing answer or an ambiguous control
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

import tomllib
from pathlib import Path
from typing import Any, ClassVar, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import BadInput

__all__ = ["ReportSettings", "SyncOptions", "PluginSettings", "check_groups", "settings_from_mapping",
           "load_settings"]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class _Table(BaseModel):
    """One table of the settings file, validated by pydantic: strict types (a TOML string
    is not a number, ``true`` is not an integer), no unknown key, and assignments checked
    too (the command-line options override the file field by field)."""

    model_config = ConfigDict(extra="forbid", strict=True, validate_assignment=True)
    #: How a key is named in messages: ``setting 'p'`` or ``settings [sync].workers``.
    _where: ClassVar[str] = "setting {key!r}"

    @classmethod
    def from_mapping(cls, d: Mapping[str, Any]) -> Any:
        """Validated settings from a mapping (TOML table, JSON object, plugin settings).

        Raises
        ------
        BadInput
            The first bad key named: a wrong type or range, an unknown key.
        """
        if not isinstance(d, Mapping):
            raise BadInput(f"settings must be a table, got {type(d).__name__}")
        try:
            return cls.model_validate(dict(d))
        except ValidationError as exc:
            raise BadInput(cls._message(exc)) from None

    @classmethod
    def _message(cls, exc: ValidationError) -> str:
        err = exc.errors(include_url=False)[0]
        key = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            return (f"unknown {cls._where.format(key=key)}; known: "
                    f"{', '.join(sorted(cls.model_fields))}")
        msg = err["msg"].removeprefix("Value error, ")
        if not key:                 # a check of the whole table names its keys itself
            return msg
        got = f", got {_shown(err['input'])}" if err["type"] not in ("value_error", "assertion_error") else ""
        return f"{cls._where.format(key=key)}: {msg}{got}"

    def validate(self) -> Any:  # type: ignore[override]  # pydantic's own is a deprecated classmethod
        """Check the settings as a whole again (built in code, or changed after loading:
        overlapping annotator pools, ...); returns them.

        Raises
        ------
        BadInput
            The first bad key, named.
        """
        type(self).from_mapping(self.model_dump())
        return self

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()


class ReportSettings(_Table):
    """What a report computes: distances, σ's p, flag rule, bootstrap, seed, pools."""

    distances: dict[str, str] = Field(default_factory=dict)
    flag_below: float = Field(0.0, allow_inf_nan=False)
    # retired with the old flag rule (issue 22): still read, so that settings files naming it load
    flag_level: float = Field(0.01, gt=0, lt=1)
    flag_posterior: float = Field(0.5, gt=0, le=1)
    p: float = Field(0.05, gt=0, lt=1)
    form: Literal["canonical", "pairwise"] = "canonical"
    bootstrap: int = Field(1000, ge=0)
    seed: int = Field(0, ge=0)
    include_predictions: bool = False
    groups: dict[str, list[str]] = Field(default_factory=dict)
    humans_vs_model: bool = False
    strict: bool = False

    def distance_for(self, control: str) -> str:
        """Distance name for a control: its setting, else ``"auto"``."""
        return self.distances.get(control, "auto")

    @field_validator("distances")
    @classmethod
    def _known_distances(cls, v: dict[str, str]) -> dict[str, str]:
        from ls_agreement.metrics import available

        if not all(v.values()):
            raise ValueError("a distance name is empty")
        known = set(available())
        unknown = sorted({d for d in v.values() if d != "auto" and d not in known})
        if unknown:
            raise ValueError(f"unknown distance(s) {unknown}; known: auto, {', '.join(sorted(known))}")
        return v

    @field_validator("groups", mode="before")
    @classmethod
    def _member_ids(cls, v: Any) -> Any:
        # annotator ids compare as text: 2 and "2" are the same annotator
        if not isinstance(v, Mapping):
            return v
        out = {}
        for g, members in v.items():
            if not isinstance(members, (list, tuple)) or not all(
                    isinstance(m, (str, int)) and not isinstance(m, bool) for m in members):
                raise ValueError(f"groups.{g} must be a list of annotator ids, got {_shown(members)}")
            out[g] = [str(m) for m in members]
        return out

    @model_validator(mode="after")
    def _pools_apart(self) -> "ReportSettings":
        check_groups(self.groups)
        return self


def check_groups(groups: Mapping[str, Any]) -> None:
    """Annotator pools of κx must not overlap (paper 001: two independent replications).

    An annotator in two pools would be compared with themself across the pools, which
    has no meaning (it gave a normalized κx with a zero-width interval). Ids compare as
    strings (``2`` and ``"2"`` are the same annotator).

    Raises
    ------
    BadInput
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


class SyncOptions(_Table):
    """How the sync talks to the server (not what it computes).

    ``workers`` caps the PATCH concurrency (the level used is measured on the server);
    ``meta`` keeps the per-control detail in ``task.meta`` (off by default: it costs one
    ``PATCH`` per task, where the data keys go in bulk; the detail is in the report files
    either way); ``bulk`` allows the Data Manager bulk action.
    """

    _where: ClassVar[str] = "settings [sync].{key}"

    workers: int = Field(8, ge=1)
    chunk: int = Field(100, ge=1)
    attempts: int = Field(4, ge=1)
    backoff: float = Field(0.5, gt=0, allow_inf_nan=False)
    timeout: float = Field(60.0, gt=0, allow_inf_nan=False)
    views: bool = True
    meta: bool = False
    bulk: bool = True
    # Routing (plugin/routing.py): raise the overlap of each flagged task by one, up to
    # ``route_max_overlap``, so Label Studio hands it to one more annotator; undone when
    # the task is no longer flagged (or routing is switched off).
    route_flagged: bool = False
    route_max_overlap: int = Field(5, ge=1)
    # The consensus answer of each task as a Label Studio prediction of model_version
    # "ls-agreement consensus", its posterior as the score (plugin/consensus.py); off, the
    # predictions an earlier run wrote are removed.
    consensus_prediction: bool = False
    # The live service (plugin/live) rescores events against a frozen project baseline and
    # makes a new one after this many events (and at every reconcile), never per event; a
    # new baseline is computed beside the event path and republishes what it moved, once.
    rebaseline_events: int = Field(1000, ge=1)
    # Where a baseline is made: a spawned worker process (the service's own process goes on
    # serving events at their usual speed, and the baseline's peak memory is the worker's),
    # or a thread of the service (no process start, about 3 s of imports per baseline).
    baseline_worker: Literal["process", "thread"] = "process"
    # Between baselines the report files (report.json, the quality page) are rewritten at
    # most this often: on a big project writing them costs more than rescoring an event.
    report_every: float = Field(30.0, gt=0, allow_inf_nan=False)


class PluginSettings(BaseModel):
    """Everything a settings file holds: report settings and sync options."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    report: ReportSettings = Field(default_factory=ReportSettings)
    sync: SyncOptions = Field(default_factory=SyncOptions)


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
    try:
        rep = ReportSettings.from_mapping(report)
    except BadInput as exc:
        raise BadInput(f"settings [report]: {exc}") from None
    return PluginSettings(report=rep, sync=SyncOptions.from_mapping(sync))


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

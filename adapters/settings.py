"""Report settings: distance per control, sigma threshold, p, bootstrap, groups, ...

One mapping (a TOML file, or the plugin's per-project settings) -> :class:`ReportSettings`.
Example TOML::

    flag_below = 0.5
    p = 0.05
    form = "canonical"        # or "pairwise" (paper 000)
    bootstrap = 1000
    seed = 0
    include_predictions = false
    [distances]
    bbox = "boxes.giou"       # or "auto": pick the best by KS
    [groups]
    crowd = ["3", "4"]
    experts = ["5"]

The same keys may sit under a ``[report]`` table (the plugin's settings file).
Unknown top-level *scalar* keys are refused (typos must not pass silently); unknown
*tables* are ignored, so a plugin settings file can hold its own sections.
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

__all__ = ["ReportSettings", "load_settings", "check_groups"]


@dataclass
class ReportSettings:
    """Settings of a report (contract in ``contracts.md``)."""

    distances: dict[str, str] = field(default_factory=dict)
    flag_below: float = 0.5
    p: float = 0.05
    form: str = "canonical"
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
            raise ValueError(f"settings must be a mapping, got {type(d).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(k for k, v in d.items() if k not in known and not isinstance(v, Mapping))
        if unknown:
            raise ValueError(f"unknown setting(s) {unknown}; known: {sorted(known)}")
        kw: dict[str, Any] = {}
        for key, value in d.items():
            if key not in known:
                continue
            kw[key] = _check(key, value)
        return cls(**kw)


def _check(key: str, v: Any) -> Any:
    def bad(expected: str) -> ValueError:
        return ValueError(f"setting {key!r} must be {expected}, got {v!r}")

    if key == "distances":
        if not isinstance(v, Mapping) or not all(isinstance(a, str) and isinstance(b, str) and b
                                                 for a, b in v.items()):
            raise bad("a table control name -> distance name")
        return dict(v)
    if key == "groups":
        if not isinstance(v, Mapping):
            raise bad("a table group name -> list of annotator ids")
        out = {}
        for g, members in v.items():
            if not isinstance(members, (list, tuple)) or not all(
                    isinstance(m, (str, int)) and not isinstance(m, bool) for m in members):
                raise ValueError(f"setting 'groups.{g}' must be a list of annotator ids, got {members!r}")
            out[str(g)] = [str(m) for m in members]
        check_groups(out)
        return out
    if key in ("flag_below", "p"):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise bad("a number")
        if key == "p" and not 0 < v < 1:
            raise bad("in (0, 1)")
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
                raise ValueError(f"setting 'groups': annotator {m!r} is in both {owner[m]!r} and "
                                 f"{str(g)!r}; annotator pools must not overlap")
            owner[m] = str(g)


def load_settings(path: str | Path) -> ReportSettings:
    """Read a TOML settings file.

    Raises
    ------
    ValueError
        Unreadable file, invalid TOML (with the parser's position), invalid settings.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read settings {str(p)!r}: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{p.name} is not valid TOML: {exc}") from None
    # The plugin's settings file keeps these under [report]; a flat file works too.
    if isinstance(data.get("report"), dict):
        data = {**{k: v for k, v in data.items() if not isinstance(v, dict)}, **data["report"]}
    try:
        return ReportSettings.from_mapping(data)
    except ValueError as exc:
        raise ValueError(f"{p.name}: {exc}") from None

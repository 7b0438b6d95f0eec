"""The common annotation model: what one annotator gave for one control tag on one item.

Scalars are plain Python values (str labels, int/float numbers); text is ``str``; a ranking
is a sequence of item ids, best first; a multiple choice or a taxonomy selection is a
(frozen)set of strings. Regions are the small immutable types below; a multi-object value
(all boxes an annotator drew on a task) is a sequence of them, possibly empty.

Coordinates are pixels when the image size is known, else Label Studio's percent units;
a value never mixes the two.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Hashable, Sequence

__all__ = ["Box", "Polygon", "Keypoint", "Span", "Interval", "Relation", "Attributed", "is_region", "REGION_TYPES"]


def _finite(name: str, value: float) -> float:
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return v


@dataclass(frozen=True, slots=True)
class Box:
    """Axis-aligned or rotated rectangle, Label Studio style.

    ``(x, y)`` is the top-left corner, ``rotation`` degrees clockwise about that corner
    (Label Studio's convention, y pointing down).
    """

    x: float
    y: float
    width: float
    height: float
    rotation: float = 0.0
    label: Hashable | None = None

    def __post_init__(self) -> None:
        for name in ("x", "y", "width", "height", "rotation"):
            object.__setattr__(self, name, _finite(name, getattr(self, name)))
        if self.width < 0 or self.height < 0:
            raise ValueError(f"Box width/height must be >= 0, got {self.width}, {self.height}")

    def corners(self) -> tuple[tuple[float, float], ...]:
        """The four corners (top-left first, clockwise on screen) after rotation."""
        t = math.radians(self.rotation)
        c, s = math.cos(t), math.sin(t)
        pts = ((0.0, 0.0), (self.width, 0.0), (self.width, self.height), (0.0, self.height))
        return tuple((self.x + px * c - py * s, self.y + px * s + py * c) for px, py in pts)


@dataclass(frozen=True, slots=True)
class Polygon:
    """A simple polygon given by its vertices (in order, not repeated at the end)."""

    points: tuple[tuple[float, float], ...]
    label: Hashable | None = None

    def __post_init__(self) -> None:
        pts = tuple((_finite("x", p[0]), _finite("y", p[1])) for p in self.points)
        object.__setattr__(self, "points", pts)


@dataclass(frozen=True, slots=True)
class Keypoint:
    """A single labelled point."""

    x: float
    y: float
    label: Hashable | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "x", _finite("x", self.x))
        object.__setattr__(self, "y", _finite("y", self.y))


@dataclass(frozen=True, slots=True)
class Span:
    """A labelled text segment ``[start, end)`` in character or token offsets."""

    start: int
    end: int
    label: Hashable | None = None
    text: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        for name in ("start", "end"):
            v = getattr(self, name)
            if isinstance(v, float) and not math.isfinite(v):
                raise ValueError(f"Span {name} must be finite, got {v!r}")
            object.__setattr__(self, name, int(v))
        if self.end < self.start:
            raise ValueError(f"Span end ({self.end}) is before start ({self.start})")

    def __len__(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class Relation:
    """A relation an annotator drew from one region to another (Label Studio's ``Relations``).

    ``source`` and ``target`` are regions of the same annotation (any region type); a
    ``direction="left"`` relation is stored with its ends swapped, so ``source`` is always
    where the arrow starts; ``directed=False`` for ``direction="bi"`` (the two ends are then
    interchangeable). ``label`` is one relation label, or None for an unlabelled relation.
    """

    source: Any
    target: Any
    label: Hashable | None = None
    directed: bool = True


@dataclass(frozen=True, slots=True)
class Attributed:
    """A per-region answer: the ``value`` a ``perRegion`` control gave to ``region``.

    ``value`` is the control's own common-model value (a choice string, a frozenset of
    choices or taxonomy paths, a number, a text).
    """

    region: Any
    value: Hashable


@dataclass(frozen=True, slots=True)
class Interval:
    """A labelled 1-d region ``[start, end]`` on a time or reading axis; ``end == start``
    is an *instant* (a time-series point event).

    Positions are floats in the control's own unit: seconds (audio), frames (video
    timeline, ``[first - 1, last]`` so a frame counts 1), the time series' x values
    (seconds since the epoch for dates), or a character position in the concatenated
    paragraphs (adapters/intervals.py says which).
    """

    start: float
    end: float
    label: Hashable | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", _finite("start", self.start))
        object.__setattr__(self, "end", _finite("end", self.end))
        if self.end < self.start:
            raise ValueError(f"Interval end ({self.end}) is before start ({self.start})")

    @property
    def instant(self) -> bool:
        return self.end == self.start

    @property
    def length(self) -> float:
        return self.end - self.start


REGION_TYPES = (Box, Polygon, Keypoint, Span, Interval)


def is_region(value: Any) -> bool:
    return isinstance(value, REGION_TYPES)


def as_region_list(value: Any) -> Sequence[Any]:
    """A single region or a sequence of them, as a tuple."""
    if value is None:
        return ()
    if is_region(value):
        return (value,)
    return tuple(value)

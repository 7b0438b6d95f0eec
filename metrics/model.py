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

__all__ = ["Box", "Polygon", "Keypoint", "Span", "is_region", "REGION_TYPES"]


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


REGION_TYPES = (Box, Polygon, Keypoint, Span)


def is_region(value: Any) -> bool:
    return isinstance(value, REGION_TYPES)


def as_region_list(value: Any) -> Sequence[Any]:
    """A single region or a sequence of them, as a tuple."""
    if value is None:
        return ()
    if is_region(value):
        return (value,)
    return tuple(value)

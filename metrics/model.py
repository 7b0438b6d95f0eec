"""The common annotation model: what one annotator gave for one control tag on one item.

Scalars are plain Python values (str labels, int/float numbers); text is ``str``; a ranking
is a sequence of item ids, best first; a multiple choice or a taxonomy selection is a
(frozen)set of strings. Regions are the small immutable types below; a multi-object value
(all boxes an annotator drew on a task) is a sequence of them, possibly empty.

Coordinates are pixels when the image size is known, else Label Studio's percent units;
a value never mixes the two.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
import operator
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Hashable, NamedTuple, Sequence
from .errors import BadInput

__all__ = ["Box", "Polygon", "Keypoint", "Mask", "Ellipse", "Curve", "Span", "Interval", "Relation", "Attributed", "is_region",
           "Keyframe", "Track", "REGION_TYPES", "Message", "message_text", "unchecked_span"]


def _pickled_by_slots(cls: type) -> type:
    """Give a frozen, slotted dataclass a pickle state read and written through its slots.

    ``dataclass(frozen=True, slots=True)`` pickles through ``__getstate__``/``__setstate__``
    that look up ``dataclasses.fields`` for every object; a large project's adapted values
    travel pickled from the process that reads the export (``plugin/report/parallel.py``),
    and unpickling 400,000 box answers took 4.8 s, nearly all of it in those lookups
    (issue 24). The state is the same (the fields' values in their order), so pickles of
    either form read back in the other.
    """
    names = tuple(f.name for f in dataclasses.fields(cls))
    setters = tuple(getattr(cls, n).__set__ for n in names)
    get = operator.attrgetter(*names)

    def __getstate__(self: Any) -> tuple:
        return (get(self),) if len(names) == 1 else get(self)

    def __setstate__(self: Any, state: Sequence[Any]) -> None:
        for put, value in zip(setters, state):
            put(self, value)

    cls.__getstate__ = __getstate__      # type: ignore[attr-defined]
    cls.__setstate__ = __setstate__      # type: ignore[attr-defined]
    return cls


def _finite(name: str, value: float) -> float:
    v = float(value)
    if not math.isfinite(v):
        raise BadInput(f"{name} must be finite, got {value!r}")
    return v


@_pickled_by_slots
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
            raise BadInput(f"Box width/height must be >= 0, got {self.width}, {self.height}")

    def corners(self) -> tuple[tuple[float, float], ...]:
        """The four corners (top-left first, clockwise on screen) after rotation."""
        t = math.radians(self.rotation)
        c, s = math.cos(t), math.sin(t)
        pts = ((0.0, 0.0), (self.width, 0.0), (self.width, self.height), (0.0, self.height))
        return tuple((self.x + px * c - py * s, self.y + px * s + py * c) for px, py in pts)


@_pickled_by_slots
@dataclass(frozen=True, slots=True)
class Polygon:
    """A simple polygon given by its vertices (in order, not repeated at the end)."""

    points: tuple[tuple[float, float], ...]
    label: Hashable | None = None

    def __post_init__(self) -> None:
        pts = tuple((_finite("x", p[0]), _finite("y", p[1])) for p in self.points)
        object.__setattr__(self, "points", pts)


@_pickled_by_slots
@dataclass(frozen=True, slots=True)
class Keypoint:
    """A single labelled point."""

    x: float
    y: float
    label: Hashable | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "x", _finite("x", self.x))
        object.__setattr__(self, "y", _finite("y", self.y))


@_pickled_by_slots
@dataclass(frozen=True, slots=True)
class Mask:
    """A pixel mask on an image of ``height`` × ``width`` pixels (brush, bitmask regions).

    ``runs`` holds the "on" pixels as canonical row runs, uint32 ``(start, length)`` pairs
    of row-major offsets (:mod:`~ls_agreement.metrics.mask_runs`); equal masks have equal
    bytes. Build one from a pixel array with :meth:`from_array`.
    """

    height: int
    width: int
    runs: bytes = b""
    label: Hashable | None = None

    def __post_init__(self) -> None:
        from .mask_runs import check_runs

        for name in ("height", "width"):
            v = getattr(self, name)
            if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < 1:
                raise BadInput(f"Mask {name} must be a positive integer, got {v!r}")
            object.__setattr__(self, name, int(v))
        if not isinstance(self.runs, bytes):
            raise BadInput(f"Mask runs must be bytes, got {type(self.runs).__name__}")
        check_runs(self.runs, self.height, self.width)

    @classmethod
    def from_array(cls, array: Any, label: Hashable | None = None) -> "Mask":
        """The mask of a 2-D array's nonzero pixels, shape (height, width)."""
        import numpy as np

        from .mask_runs import runs_from_array

        a = np.asarray(array)
        return cls(int(a.shape[0]), int(a.shape[1]) if a.ndim > 1 else 0, runs_from_array(a), label)

    def to_array(self) -> Any:
        """The boolean pixel array, shape (height, width)."""
        from .mask_runs import array_from_runs

        return array_from_runs(self.runs, self.height, self.width)

    @property
    def area(self) -> int:
        """Pixels on."""
        from .mask_runs import unpack_runs

        return int(unpack_runs(self.runs)[1].sum())


@_pickled_by_slots
@dataclass(frozen=True, slots=True)
class Ellipse:
    """An ellipse, Label Studio style: centre ``(x, y)``, radii along its own axes, and
    ``rotation`` degrees clockwise on screen (y pointing down) about the centre."""

    x: float
    y: float
    radius_x: float
    radius_y: float
    rotation: float = 0.0
    label: Hashable | None = None

    def __post_init__(self) -> None:
        for name in ("x", "y", "radius_x", "radius_y", "rotation"):
            object.__setattr__(self, name, _finite(name, getattr(self, name)))
        if self.radius_x < 0 or self.radius_y < 0:
            raise BadInput(f"Ellipse radii must be >= 0, got {self.radius_x}, {self.radius_y}")


@_pickled_by_slots
@dataclass(frozen=True, slots=True)
class Curve:
    """A polyline or a branching skeleton (Label Studio's vector regions).

    Its segments join ``points`` along ``edges`` (pairs of point indices); without
    ``edges`` they join consecutive points, and ``closed`` adds the segment from the last
    point back to the first (with three points or more). With ``edges`` given, ``closed``
    only records what the annotator set. Curved (Bézier) parts are given as polylines.
    """

    points: tuple[tuple[float, float], ...]
    closed: bool = False
    label: Hashable | None = None
    edges: tuple[tuple[int, int], ...] | None = None

    def __post_init__(self) -> None:
        pts = tuple((_finite("x", p[0]), _finite("y", p[1])) for p in self.points)
        if not pts:
            raise BadInput("a Curve needs at least one point")
        object.__setattr__(self, "points", pts)
        object.__setattr__(self, "closed", bool(self.closed))
        if self.edges is not None:
            n = len(pts)
            edges = tuple((int(a), int(b)) for a, b in self.edges)
            bad = [e for e in edges if not (0 <= e[0] < n and 0 <= e[1] < n)]
            if bad:
                raise BadInput(f"Curve edge {bad[0]} names a point outside 0..{n - 1}")
            object.__setattr__(self, "edges", edges)

    def segments(self) -> tuple[tuple[int, int], ...]:
        """The point index pairs its segments join."""
        if self.edges is not None:
            return self.edges
        n = len(self.points)
        out = tuple((k, k + 1) for k in range(n - 1))
        return out + ((n - 1, 0),) if self.closed and n >= 3 else out


@_pickled_by_slots
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
                raise BadInput(f"Span {name} must be finite, got {v!r}")
            object.__setattr__(self, name, int(v))
        if self.end < self.start:
            raise BadInput(f"Span end ({self.end}) is before start ({self.start})")

    def __len__(self) -> int:
        return self.end - self.start


_SPAN_SLOTS = tuple(getattr(Span, f).__set__ for f in ("start", "end", "label", "text"))


def unchecked_span(start: int, end: int, label: Hashable | None, text: str | None) -> Span:
    """``Span(start, end, label, text)`` from int bounds the caller has checked (``0 <= start
    <= end``), without the dataclass' re-validation: adapting a large export and mapping its
    spans to tokens build millions, and the checks would cost more than the building."""
    s = object.__new__(Span)
    set_start, set_end, set_label, set_text = _SPAN_SLOTS
    set_start(s, start)
    set_end(s, end)
    set_label(s, label)
    set_text(s, text)
    return s


@_pickled_by_slots
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


@_pickled_by_slots
@dataclass(frozen=True, slots=True)
class Attributed:
    """A per-region answer: the ``value`` a ``perRegion`` control gave to ``region``.

    ``value`` is the control's own common-model value (a choice string, a frozenset of
    choices or taxonomy paths, a number, a text).
    """

    region: Any
    value: Hashable


@_pickled_by_slots
@dataclass(frozen=True, slots=True)
class Message:
    """A message of a conversation (Label Studio Enterprise's ``<Chat>``: one ``chatmessage``
    result ``{"role", "content"}`` per message): the region a per-message answer or a
    relation points at, never a measured value itself.

    ``role`` (``user``, ``assistant``, ``system``, ...) and ``content`` as the result holds
    them. ``nth`` counts the earlier messages of the same conversation with the same
    role and content (0 for the first): a message said twice ("Thanks") is told apart by its
    repetition, not by its position, which shifts as soon as two annotators' conversations
    differ by one message. Two messages are equal when their :attr:`key` is: role and
    content as :func:`message_text` compares them, and ``nth`` (``region_match`` scores
    such a pair 1, any other 0; docs/formulas.md, "Chat messages").

    Not among :data:`REGION_TYPES`: a message has no label and is never a control's value.
    """

    role: str = field(compare=False)
    content: str = field(compare=False)
    nth: int = field(default=0, compare=False)
    key: tuple[str, str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if type(self.role) is not str or type(self.content) is not str:
            raise BadInput(f"a message's role and content must be strings, got {self.role!r:.40}, "
                           f"{self.content!r:.40}")
        if isinstance(self.nth, bool) or not isinstance(self.nth, int) or self.nth < 0:
            raise BadInput(f"Message nth must be a non-negative integer, got {self.nth!r}")
        object.__setattr__(self, "key", (*message_text(self.role, self.content), self.nth))


def message_text(role: str, content: str) -> tuple[str, str]:
    """A message's role and content as compared: Unicode NFC, whitespace runs as one space,
    no leading or trailing space; the role case-folded (``User`` is ``user``). The words, their
    case and punctuation stay: two texts differing there are two messages."""
    text = " ".join(unicodedata.normalize("NFC", content).split())
    return " ".join(role.split()).casefold(), text


@_pickled_by_slots
@dataclass(frozen=True, slots=True)
class Interval:
    """A labelled 1-d region ``[start, end]`` on a time or reading axis; ``end == start``
    is an *instant* (a time-series point event).

    Positions are floats in the control's own unit: a share of the clip (audio), frames
    (video timeline, ``[first - 1, last]`` so a frame counts 1), the time series' x values
    (seconds for dates), or a share of the concatenated paragraphs' characters
    (adapters/intervals.py says which, and when it falls back to seconds or indices).
    """

    start: float
    end: float
    label: Hashable | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", _finite("start", self.start))
        object.__setattr__(self, "end", _finite("end", self.end))
        if self.end < self.start:
            raise BadInput(f"Interval end ({self.end}) is before start ({self.start})")

    @property
    def instant(self) -> bool:
        return self.end == self.start

    @property
    def length(self) -> float:
        return self.end - self.start


class Keyframe(NamedTuple):
    """One keyframe of a video track, as Label Studio keeps it in ``value.sequence``.

    ``frame`` is the frame number (Label Studio counts from 1); ``enabled=False`` hides the
    box after this frame until the next keyframe. The box fields are a :class:`Box`'s.
    """

    frame: int
    enabled: bool
    x: float
    y: float
    width: float
    height: float
    rotation: float = 0.0


@_pickled_by_slots
@dataclass(frozen=True, slots=True)
class Track:
    """One object tracked through a video (``VideoRectangle``): its keyframes, by frame.

    The frames that show the box, and where (Label Studio's editor; mirrored by
    ``ls_agreement.metrics.distances.tracks``, docs/formulas.md "Video tracks"):

    - none before the first keyframe;
    - at a keyframe's own frame, that keyframe's box, enabled or not;
    - between two keyframes, when the earlier is enabled, the box interpolated linearly
      between them (rotation the shorter way round); none when it is disabled;
    - after the last keyframe, when it is enabled, its box up to frame ``end``.

    ``end`` is the video's last frame (Label Studio's ``framesCount``); None: the track
    ends at its last keyframe. Coordinates as :class:`Box`: pixels when the frame size is
    known, else percent of the frame (Label Studio's units; its VideoRectangle results
    carry no frame size, so percent in practice). Keyframes are kept sorted by frame
    (stable: two keyframes on one frame keep their order, as Label Studio reads them).
    """

    keyframes: tuple[Keyframe, ...]
    end: int | None = None
    label: Hashable | None = None

    def __post_init__(self) -> None:
        kfs = []
        for raw in self.keyframes:
            k = raw if isinstance(raw, Keyframe) else Keyframe(*raw)
            frame = _frame("keyframe frame", k.frame)
            x, y, w, h, rot = (_finite(n, getattr(k, n)) for n in ("x", "y", "width", "height", "rotation"))
            if w < 0 or h < 0:
                raise BadInput(f"keyframe width/height must be >= 0, got {w}, {h}")
            kfs.append(Keyframe(frame, bool(k.enabled), x, y, w, h, rot))
        if not kfs:
            raise BadInput("a Track needs at least one keyframe")
        kfs.sort(key=lambda k: k.frame)
        object.__setattr__(self, "keyframes", tuple(kfs))
        if self.end is not None:
            object.__setattr__(self, "end", _frame("Track end", self.end))


def _frame(name: str, value: Any) -> int:
    """A frame number: a non-negative integer (an integral float is accepted)."""
    if isinstance(value, bool):
        v = -1
    elif isinstance(value, numbers.Integral):
        v = int(value)
    elif isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        v = int(value)
    else:
        v = -1
    if v < 0:
        raise BadInput(f"{name} must be a non-negative integer, got {value!r}")
    return v


REGION_TYPES = (Box, Polygon, Keypoint, Span, Interval, Track, Mask, Ellipse, Curve)


def is_region(value: Any) -> bool:
    return isinstance(value, REGION_TYPES)


def as_region_list(value: Any) -> Sequence[Any]:
    """A single region or a sequence of them, as a tuple."""
    if value is None:
        return ()
    if is_region(value):
        return (value,)
    return tuple(value)

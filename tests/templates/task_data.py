"""Task data for the object tags of a config, and what the generator must know about it.

Each object tag gets the ``task.data`` value Label Studio expects for it (a text, an HTML
string, a list of paragraphs, a media URL, a list of items, a chat transcript, ...) and an
:class:`ObjectInfo` with what a region on it may span: the text and its words, paragraph
texts, an image's pixel size, an audio duration, a video's frame count and frame rate, the
time axis of a time series, the ids of a list's items, the chat messages. Media are URLs
(``/data/upload/...``) as in a real export: nothing fetches them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np

from .labeling_config import ObjectTag

__all__ = ["ObjectInfo", "make_object_data", "dynamic_options", "sentence", "WORDS"]

WORDS = ("alpha bright cable delta eager fabric garden harbor island jacket kernel ladder "
         "marble nectar orbit pepper quartz river saddle timber umbrella velvet walnut "
         "yellow zephyr anchor basket candle dragon engine forest glacier hammer insect "
         "jungle kettle lemon meadow nickel oyster parrot quiver rocket silver tunnel "
         "valley window yogurt zipper").split()
_WORD = re.compile(r"\S+")


def sentence(rng: np.random.Generator, n: int) -> str:
    """``n`` words of :data:`WORDS`, space separated."""
    return " ".join(WORDS[i] for i in rng.integers(0, len(WORDS), n))


def _words(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _WORD.finditer(text)]


@dataclass
class ObjectInfo:
    """What regions on one object tag of one task may span (fields by object kind)."""

    tag: str
    name: str
    text: str = ""                                            # text, hypertext (its text content)
    words: list[tuple[int, int]] = field(default_factory=list)
    blocks: list[str] = field(default_factory=list)           # hypertext <p> texts, paragraphs
    image_sizes: list[tuple[int, int]] = field(default_factory=list)   # (width, height) per item
    duration: float = 0.0                                     # audio seconds
    frames: int = 0                                           # video frame count
    framerate: float = 24.0
    ts_start: float = 0.0                                     # time series axis
    ts_end: float = 0.0
    ts_format: str | None = None                              # strftime of the time column
    ts_epoch: datetime | None = None
    items: list[str] = field(default_factory=list)            # List item ids
    messages: list[dict[str, Any]] = field(default_factory=list)   # chat
    pages: int = 0                                            # pdf
    multi: bool = False                                       # <Image valueList=...>

    def ts_value(self, t: float) -> float | str:
        """A time-series position as Label Studio writes it: ``Number`` without a
        ``timeFormat``, else formatted with it (d3 ``utcFormat``; ``%f`` = microseconds,
        as Python's)."""
        if self.ts_format is None:
            return round(float(t), 3)
        assert self.ts_epoch is not None
        return (self.ts_epoch + timedelta(seconds=float(t))).strftime(self.ts_format)


def _html(blocks: list[str]) -> str:
    # no whitespace between elements: the text content is the blocks' texts joined
    return "<div>" + "".join(f"<p>{b}</p>" for b in blocks) + "</div>"


def make_object_data(obj: ObjectTag, task: int, rng: np.random.Generator,
                     media_sizes: list[tuple[int, int]] | None = None) -> tuple[Any, ObjectInfo]:
    """The ``task.data`` value of ``obj`` for task number ``task`` and its :class:`ObjectInfo`.

    ``media_sizes`` are the image sizes to draw from (small ones for configs with masks,
    whose run-length encoding is written pixel by pixel).
    """
    info = ObjectInfo(obj.tag, obj.name, multi=obj.multi)
    a = obj.attrs
    if obj.tag == "text":
        info.text = sentence(rng, int(rng.integers(30, 46)))
        info.words = _words(info.text)
        return info.text, info
    if obj.tag == "hypertext":
        info.blocks = [sentence(rng, int(rng.integers(8, 14))) for _ in range(int(rng.integers(3, 6)))]
        info.text = "".join(info.blocks)
        info.words = _words(info.text)
        return _html(info.blocks), info
    if obj.tag == "paragraphs":
        name_key, text_key = a.get("namekey", "author"), a.get("textkey", "text")
        n = int(rng.integers(4, 8))
        info.blocks = [sentence(rng, int(rng.integers(6, 14))) for _ in range(n)]
        speakers = ["user", "assistant"] if name_key == "role" else ["Mia", "Vincent"]
        data = [{name_key: speakers[i % 2], text_key: b} for i, b in enumerate(info.blocks)]
        if "audiourl" in a:   # timed phrases for a synced audio
            t = 0.0
            for d in data:
                d["start"], d["end"] = round(t, 2), round(t + 2.5, 2)
                t += 3.0
        return data, info
    if obj.tag == "image":
        sizes = media_sizes or [(640, 480), (800, 600), (1024, 768), (500, 375)]
        n = int(rng.integers(2, 4)) if obj.multi else 1
        info.image_sizes = [sizes[int(rng.integers(0, len(sizes)))] for _ in range(n)]
        urls = [f"/data/upload/1/{obj.name}-{task}-{i}.jpg" for i in range(n)]
        return (urls if obj.multi else urls[0]), info
    if obj.tag in ("audio", "audioplus"):
        info.duration = float(rng.integers(20, 61))
        return f"/data/upload/1/{obj.name}-{task}.wav", info
    if obj.tag == "video":
        info.framerate = float(a.get("framerate", "24") or 24)
        info.frames = int(rng.integers(200, 301))
        return f"/data/upload/1/{obj.name}-{task}.mp4", info
    if obj.tag == "timeseries":
        info.ts_start, info.ts_end = 0.0, float(rng.integers(600, 1201))
        info.ts_format = a.get("timeformat")
        if info.ts_format:
            info.ts_epoch = datetime(2024, 1, 1, tzinfo=timezone.utc) + timedelta(days=task)
        if a.get("valuetype", "url").lower() == "url":    # Label Studio's default
            return f"/data/upload/1/{obj.name}-{task}.csv", info
        n = int(info.ts_end) + 1
        time_col = a.get("timecolumn", "time")
        t = np.arange(n, dtype=float)
        data: dict[str, Any] = {time_col: [info.ts_value(x) for x in t] if info.ts_format
                                else t.tolist()}
        data["value"] = np.round(np.sin(t / 25.0) + rng.normal(0, 0.1, n), 3).tolist()
        return data, info
    if obj.tag == "list":
        n = int(rng.integers(3, 7))
        info.items = [f"{obj.name}_{task}_{k}" for k in range(n)]
        return [{"id": i, "title": f"Item {k}", "body": sentence(rng, 8)}
                for k, i in enumerate(info.items)], info
    if obj.tag == "table":
        return {f"key{k}": sentence(rng, 2) for k in range(4)}, info
    if obj.tag == "pdf":
        info.pages = int(rng.integers(1, 4))
        return f"/data/upload/1/{obj.name}-{task}.pdf", info
    if obj.tag == "chat":
        n = 2 * int(rng.integers(2, 4))
        info.messages = [{"role": ("user", "assistant")[i % 2], "content": sentence(rng, 10)}
                         for i in range(n)]
        return info.messages, info
    raise ValueError(f"no task data for object tag <{obj.tag}>")


def dynamic_options(key: str, task: int, rng: np.random.Generator, nested: bool) -> tuple[list[dict], dict[str, dict]]:
    """Options loaded from task data (``value="$key"`` on Choices/Labels): a list of
    ``{"value", "html"}`` dicts whose values are specific to the task and whose number varies
    (2 to 6), as in the asr-hypotheses, text-to-image and visual-genome templates; with
    ``nested`` (Choices ``allowNested``) some options get ``children``. Returns the data
    value and the option tree ``{value: subtree}``.
    """
    n = int(rng.integers(2, 7))
    data: list[dict] = []
    tree: dict[str, dict] = {}
    for k in range(n):
        value = f"{key}_{task}_{k}"
        item: dict[str, Any] = {"value": value, "html": f"<b>{sentence(rng, 3)}</b>"}
        tree[value] = {}
        if nested and rng.random() < 0.5:
            kids = [f"{value}_{j}" for j in range(int(rng.integers(1, 3)))]
            item["children"] = [{"value": c, "html": f"<i>{c}</i>"} for c in kids]
            tree[value] = {c: {} for c in kids}
        data.append(item)
    return data, tree

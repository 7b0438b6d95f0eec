"""Region geometry per drawing tool: drawn at random, moved a little, and written as
Label Studio writes it.

A geometry is a small dict in the tool's own terms (word indices, seconds, frames,
percent of the image, keyframes); :func:`serialize` turns it into the result's top-level
keys and ``value``, following Label Studio 1.23.2's region models
(``web/libs/editor/src/regions/*``, their ``serialize()``):

* text span (``RichTextRegion``): ``start``/``end`` character offsets (end exclusive), ``text``;
* HyperText span: XPaths ``start``/``end`` with ``startOffset``/``endOffset`` and
  ``globalOffsets {start, end}``, ``text``;
* paragraphs (``ParagraphsRegion``): ``start``/``end`` paragraph indices **as strings**
  (``String(idx)`` in ``HtxParagraphs``), ``startOffset``/``endOffset`` in the paragraph, ``text``;
* audio (``AudioRegionModel``): ``start``/``end`` seconds, ``channel``; ``original_length``
  beside ``value``;
* time series (``TimeSeriesRegion``): ``start``/``end`` as ``Number`` or formatted with the
  object's ``timeFormat``, ``instant``;
* video timeline (``TimelineRegion``): ``ranges: [{start, end}]`` (frames);
* video rectangle (``VideoRegion``): ``framesCount``, ``duration``, ``sequence`` of keyframes
  ``{frame, enabled, rotation, x, y, width, height, time}`` (time = frame / framerate);
* image (``Image.createSerializedResult``): ``original_width``, ``original_height``,
  ``image_rotation`` (and ``item_index`` for ``valueList`` images) beside ``value``;
  rectangle ``x, y, width, height, rotation``; polygon ``points, closed``; keypoint
  ``x, y, width``; ellipse ``x, y, radiusX, radiusY, rotation``; brush ``format: "rle", rle``
  (``BrushRegion``; encoded by label-studio-sdk's ``converter.brush.mask2rle``); bitmask
  ``imageDataURL`` (a PNG data URL); vector ``vertices [{id, x, y, prevPointId, isBezier}],
  closed`` -- all in percent of the image;
* OCR box on a PDF (label-studio-sdk ``OcrLabelsValue``): ``x, y, width, height, rotation,
  pageIndex``;
* chat message (label-studio-sdk ``ChatMessageValue``): ``chatmessage {role, content}``.
"""
from __future__ import annotations

import base64
import io
import re
from typing import Any, Literal

import numpy as np

from .task_data import ObjectInfo

__all__ = ["Family", "family_of", "place", "draw", "jitter", "serialize", "rasterize"]

Family = Literal["span", "htmlspan", "paragraph", "audio", "timeseries", "timeline", "box",
                 "ocrbox", "polygon", "keypoint", "ellipse", "brush", "bitmask", "vector",
                 "track", "chatmessage"]

_TOOL_FAMILY = {"rectangle": "box", "rectanglelabels": "box", "polygon": "polygon",
                "polygonlabels": "polygon", "keypoint": "keypoint", "keypointlabels": "keypoint",
                "ellipse": "ellipse", "ellipselabels": "ellipse", "brush": "brush",
                "brushlabels": "brush", "magicwand": "brush", "bitmask": "bitmask",
                "bitmasklabels": "bitmask", "vector": "vector", "vectorlabels": "vector",
                "videorectangle": "track", "timelinelabels": "timeline",
                "timeserieslabels": "timeseries", "ocrlabels": "ocrbox"}
_OBJECT_FAMILY = {"text": "span", "hypertext": "htmlspan", "paragraphs": "paragraph",
                  "audio": "audio", "audioplus": "audio", "timeseries": "timeseries",
                  "video": "timeline", "chat": "chatmessage"}
_WORD = re.compile(r"\S+")


def family_of(tool: str, object_tag: str) -> Family:
    """The geometry family of regions drawn by control ``tool`` on an ``object_tag``."""
    if tool in _TOOL_FAMILY:
        return _TOOL_FAMILY[tool]  # type: ignore[return-value]
    return _OBJECT_FAMILY[object_tag]  # type: ignore[return-value]


def _block_words(block: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _WORD.finditer(block)]


def _extent(fam: Family, info: ObjectInfo) -> tuple[float, float]:
    if fam == "audio":
        return 0.0, info.duration
    if fam == "timeseries":
        return info.ts_start, info.ts_end
    if fam == "timeline":
        return 1.0, float(info.frames)
    raise ValueError(fam)


def _interval_in(fam: Family, lo: float, hi: float, rng: np.random.Generator) -> dict[str, Any]:
    length = (hi - lo) * rng.uniform(0.15, 0.6)
    s = lo + rng.uniform(0, hi - lo - length)
    if fam == "timeline":
        s, e = int(round(s)), int(round(s + length))
        return {"s": s, "e": max(e, s + 1)}
    return {"s": float(s), "e": float(s + length)}


def _span_in(n: int, lo: int, hi: int, rng: np.random.Generator) -> tuple[int, int]:
    """Word indices ``i <= j`` inside ``[lo, hi)``, 1 to 4 words."""
    hi = max(hi, lo + 1)
    i = int(rng.integers(lo, hi))
    j = min(hi - 1, i + int(rng.integers(0, 4)), n - 1)
    return i, j


def place(fam: Family, info: ObjectInfo, k: int, rng: np.random.Generator,
          instants: list[bool] | None = None, whole_paragraphs: bool = False) -> list[dict[str, Any]]:
    """``k`` regions of family ``fam`` on one object: 1-d regions in disjoint slots (so a
    task's true regions do not overlap), 2-d ones anywhere. ``instants[i]`` makes the i-th
    time-series region an instant (``start == end``, ``instant: true``);
    ``whole_paragraphs`` selects whole paragraphs (``granularity="paragraph"``)."""
    out: list[dict[str, Any]] = []
    if fam in ("audio", "timeseries", "timeline"):
        lo, hi = _extent(fam, info)
        edges = np.linspace(lo, hi, k + 1)
        for n_slot, (a, b) in enumerate(zip(edges[:-1], edges[1:])):
            g = _interval_in(fam, a, b, rng)
            if fam == "timeseries" and instants and instants[n_slot]:
                g = {"s": float(round((a + b) / 2 + rng.uniform(-0.2, 0.2) * (b - a))), "instant": True}
                g["e"] = g["s"]
            out.append(g)
        return out
    if fam == "span":
        n = len(info.words)
        edges = np.linspace(0, n, k + 1).astype(int)
        return [dict(zip("ij", _span_in(n, int(a), int(b), rng))) for a, b in zip(edges[:-1], edges[1:])]
    if fam in ("htmlspan", "paragraph"):
        blocks = rng.permutation(len(info.blocks))[:k]
        for b in sorted(int(x) for x in blocks):
            nw = len(_block_words(info.blocks[b]))
            if whole_paragraphs:
                out.append({"b": b, "i": 0, "j": nw - 1, "whole": True})
            else:
                i, j = _span_in(nw, 0, nw, rng)
                out.append({"b": b, "i": i, "j": j})
        return out
    return [draw(fam, info, rng) for _ in range(k)]


def draw(fam: Family, info: ObjectInfo, rng: np.random.Generator) -> dict[str, Any]:
    """One 2-d region (or one video track) at random."""
    item = int(rng.integers(0, max(1, len(info.image_sizes))))
    if fam in ("box", "ocrbox"):
        w, h = rng.uniform(8, 30, 2)
        g = {"x": rng.uniform(0, 100 - w), "y": rng.uniform(0, 100 - h), "w": w, "h": h, "item": item}
        if fam == "ocrbox":
            g["page"] = int(rng.integers(0, max(1, info.pages)))
        return g
    if fam == "polygon":
        n = int(rng.integers(5, 8))
        r = rng.uniform(6, 15)
        cx, cy = rng.uniform(r + 1, 99 - r, 2)
        # angles spread round the centre: a careful redraw (jitter) keeps the polygon simple
        ang = rng.uniform(0, 2 * np.pi) + (np.arange(n) + rng.uniform(-0.3, 0.3, n)) * 2 * np.pi / n
        rad = r * rng.uniform(0.7, 1.0, n)
        return {"pts": np.c_[cx + rad * np.cos(ang), cy + rad * np.sin(ang)].tolist(), "item": item}
    if fam == "keypoint":
        return {"x": rng.uniform(5, 95), "y": rng.uniform(5, 95), "item": item}
    if fam in ("ellipse", "brush", "bitmask"):
        rx, ry = rng.uniform(5, 18, 2)
        return {"x": rng.uniform(rx, 100 - rx), "y": rng.uniform(ry, 100 - ry), "rx": rx, "ry": ry,
                "rot": rng.uniform(0, 180) if fam == "ellipse" else 0.0, "item": item}
    if fam == "vector":
        n = int(rng.integers(3, 6))
        start = rng.uniform(10, 60, 2)
        steps = rng.normal(0, 8, (n - 1, 2))
        pts = np.clip(np.vstack([start, start + np.cumsum(steps, axis=0)]), 0, 100)
        return {"pts": pts.tolist(), "item": item}
    if fam == "track":
        f = info.frames
        f0 = int(rng.integers(1, f // 2))
        f1 = int(rng.integers(f0 + f // 4, f + 1))
        w, h = rng.uniform(8, 25, 2)
        x0, y0 = rng.uniform(0, 100 - w), rng.uniform(0, 100 - h)
        x1, y1 = rng.uniform(0, 100 - w), rng.uniform(0, 100 - h)
        keys = [f0, (f0 + f1) // 2, f1]
        return {"keys": [{"frame": k, "x": x0 + (x1 - x0) * (k - f0) / (f1 - f0),
                          "y": y0 + (y1 - y0) * (k - f0) / (f1 - f0), "w": w, "h": h,
                          "enabled": k != f1} for k in keys]}
    raise ValueError(f"no random 2-d region for family {fam!r}")


def _nudge(v: float, sd: float, rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.clip(v + rng.normal(0, sd), lo, hi))


def jitter(fam: Family, info: ObjectInfo, g: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """``g`` moved a little, as a careful annotator redraws it (about 3 % of its size)."""
    g = dict(g)
    if fam in ("audio", "timeseries", "timeline"):
        lo, hi = _extent(fam, info)
        if g.get("instant"):
            g["s"] = g["e"] = float(round(_nudge(g["s"], 0.004 * (hi - lo), rng, lo, hi)))
            return g
        sd = 0.03 * (g["e"] - g["s"])
        s, e = _nudge(g["s"], sd, rng, lo, hi), _nudge(g["e"], sd, rng, lo, hi)
        if fam == "timeline":
            s, e = int(round(s)), int(round(e))
            e = max(e, s + 1)
        g["s"], g["e"] = min(s, e), max(s, e)
        return g
    if fam in ("span", "htmlspan", "paragraph"):
        if g.get("whole"):
            return g
        n = len(info.words) if fam == "span" else len(_block_words(info.blocks[g["b"]]))
        i, j = g["i"], g["j"]
        if rng.random() < 0.25:
            i = int(np.clip(i + (1 if rng.random() < 0.5 else -1), 0, n - 1))
        if rng.random() < 0.25:
            j = int(np.clip(j + (1 if rng.random() < 0.5 else -1), 0, n - 1))
        g["i"], g["j"] = min(i, j), max(i, j)
        return g
    if fam in ("box", "ocrbox"):
        sd_x, sd_y = 0.03 * g["w"], 0.03 * g["h"]
        g["w"], g["h"] = _nudge(g["w"], sd_x, rng, 1, 100), _nudge(g["h"], sd_y, rng, 1, 100)
        g["x"] = _nudge(g["x"], sd_x, rng, 0, 100 - g["w"])
        g["y"] = _nudge(g["y"], sd_y, rng, 0, 100 - g["h"])
        return g
    if fam in ("polygon", "vector"):
        pts = np.asarray(g["pts"])
        size = max(np.ptp(pts[:, 0]), np.ptp(pts[:, 1]), 1.0)
        g["pts"] = np.clip(pts + rng.normal(0, 0.02 * size, pts.shape), 0, 100).tolist()
        return g
    if fam == "keypoint":
        g["x"], g["y"] = _nudge(g["x"], 0.4, rng, 0, 100), _nudge(g["y"], 0.4, rng, 0, 100)
        return g
    if fam in ("ellipse", "brush", "bitmask"):
        g["rx"], g["ry"] = _nudge(g["rx"], 0.03 * g["rx"], rng, 1, 50), _nudge(g["ry"], 0.03 * g["ry"], rng, 1, 50)
        g["x"] = _nudge(g["x"], 0.03 * g["rx"], rng, 0, 100)
        g["y"] = _nudge(g["y"], 0.03 * g["ry"], rng, 0, 100)
        if fam == "ellipse":
            g["rot"] = float(g["rot"] + rng.normal(0, 1.5))
        return g
    if fam == "track":
        keys = []
        for k in g["keys"]:
            k = dict(k)
            sd_x, sd_y = 0.03 * k["w"], 0.03 * k["h"]
            k["x"], k["y"] = _nudge(k["x"], sd_x, rng, 0, 100 - k["w"]), _nudge(k["y"], sd_y, rng, 0, 100 - k["h"])
            keys.append(k)
        return {"keys": keys}
    if fam == "chatmessage":
        return g
    raise ValueError(fam)


def rasterize(g: dict[str, Any], size: tuple[int, int]) -> np.ndarray:
    """The filled ellipse of a brush/bitmask geometry as a ``(height, width)`` uint8 mask
    (0 or 255) on an image of ``size = (width, height)`` pixels."""
    w, h = size
    yy, xx = np.mgrid[0:h, 0:w]
    cx, cy = g["x"] / 100 * w, g["y"] / 100 * h
    rx, ry = max(g["rx"] / 100 * w, 1.0), max(g["ry"] / 100 * h, 1.0)
    inside = ((xx + 0.5 - cx) / rx) ** 2 + ((yy + 0.5 - cy) / ry) ** 2 <= 1.0
    return np.where(inside, 255, 0).astype(np.uint8)


def _png_data_url(mask: np.ndarray) -> str:
    from PIL import Image

    rgba = np.zeros(mask.shape + (4,), dtype=np.uint8)
    rgba[..., 0] = 255
    rgba[..., 3] = mask
    buf = io.BytesIO()
    Image.fromarray(rgba, "RGBA").save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def serialize(fam: Family, info: ObjectInfo, g: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(top-level keys, value)`` of a region's results (labels and per-region answers
    are added by the caller)."""
    if fam == "span":
        s, e = info.words[g["i"]][0], info.words[g["j"]][1]
        return {}, {"start": s, "end": e, "text": info.text[s:e]}
    if fam == "htmlspan":
        words = _block_words(info.blocks[g["b"]])
        s, e = words[g["i"]][0], words[g["j"]][1]
        base = sum(len(b) for b in info.blocks[:g["b"]])
        xpath = f"/div[1]/p[{g['b'] + 1}]/text()[1]"
        return {}, {"start": xpath, "end": xpath, "startOffset": s, "endOffset": e,
                    "globalOffsets": {"start": base + s, "end": base + e},
                    "text": info.blocks[g["b"]][s:e]}
    if fam == "paragraph":
        words = _block_words(info.blocks[g["b"]])
        s, e = words[g["i"]][0], words[g["j"]][1]
        return {}, {"start": str(g["b"]), "end": str(g["b"]), "startOffset": s, "endOffset": e,
                    "text": info.blocks[g["b"]][s:e]}
    if fam == "audio":
        return ({"original_length": info.duration},
                {"start": round(g["s"], 4), "end": round(g["e"], 4), "channel": 0})
    if fam == "timeseries":
        return {}, {"start": info.ts_value(g["s"]), "end": info.ts_value(g["e"]),
                    "instant": bool(g.get("instant", False))}
    if fam == "timeline":
        return {}, {"ranges": [{"start": int(g["s"]), "end": int(g["e"])}]}
    if fam == "track":
        seq = [{"frame": k["frame"], "enabled": k["enabled"], "rotation": 0,
                "x": k["x"], "y": k["y"], "width": k["w"], "height": k["h"],
                "time": k["frame"] / info.framerate} for k in g["keys"]]
        return {}, {"framesCount": info.frames, "duration": info.frames / info.framerate,
                    "sequence": seq}
    if fam == "chatmessage":
        return {}, {"chatmessage": {"role": g["role"], "content": g["content"]}}
    if fam == "ocrbox":
        return {}, {"x": g["x"], "y": g["y"], "width": g["w"], "height": g["h"], "rotation": 0,
                    "pageIndex": g["page"]}
    # image regions
    size = info.image_sizes[g.get("item", 0)]
    top: dict[str, Any] = {"original_width": size[0], "original_height": size[1], "image_rotation": 0}
    if info.multi:    # Image.createSerializedResult: item_index for valueList images
        top["item_index"] = g.get("item", 0)
    if fam == "box":
        return top, {"x": g["x"], "y": g["y"], "width": g["w"], "height": g["h"], "rotation": 0}
    if fam == "polygon":
        return top, {"points": [list(p) for p in g["pts"]], "closed": True}
    if fam == "keypoint":
        return top, {"x": g["x"], "y": g["y"], "width": 0.5}
    if fam == "ellipse":
        return top, {"x": g["x"], "y": g["y"], "radiusX": g["rx"], "radiusY": g["ry"],
                     "rotation": g["rot"] % 360}
    if fam == "brush":
        from label_studio_sdk.converter.brush import mask2rle

        return top, {"format": "rle", "rle": [int(v) for v in mask2rle(rasterize(g, size))]}
    if fam == "bitmask":
        return top, {"imageDataURL": _png_data_url(rasterize(g, size))}
    if fam == "vector":
        ids = [f"p{k}" for k in range(len(g["pts"]))]
        verts = [{"id": ids[k], "x": p[0], "y": p[1], "isBezier": False,
                  **({"prevPointId": ids[k - 1]} if k else {})} for k, p in enumerate(g["pts"])]
        return top, {"vertices": verts, "closed": False}
    raise ValueError(fam)

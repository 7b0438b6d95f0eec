"""Brush masks: 1,000 tasks x 3 annotators of 1024 x 1024 masks in Label Studio's RLE,
decoded (``adapt``) and compared on the report's path for the control (``control_report``:
auto distance, α, KS, σ, the default 1,000 bootstrap resamples, per-label and pair
sections) must take no more than 30 s.

The export has Label Studio's BrushLabels result shape (adapters/masks.py): per annotation
one result per label, ``value.rle`` the rle-pack stream of the image's RGBA pixels (every
channel the alpha, anti-aliased edges), written here by a vectorized encoder with the
editor's run sizes (3, 4, 8, 16 bits). Annotators paint 1-3 brush strokes (thick
segments of up to ~350 px, 20-60 px wide) near a per-task truth. A subsample is decoded by
label-studio-sdk's ``decode_rle`` too: the masks must be equal, and the ratio of the two
decoders' times is printed. Figures: JSON parse, decode (adapt), compare (the distance of
every observed pair plus the 10,000 sampled chance pairs), the report path, total and masks
per second; wall-clock seconds (the target) with this process's CPU seconds beside them.
Run: ``python -m benchmarks masks`` (``-- --tasks N --sdk-sample K`` for other sizes).
"""
from __future__ import annotations

import argparse
import gc
import json
import time

import numpy as np

from ls_agreement.adapters.adapt import adapt
from ls_agreement.adapters.mask_codecs import decode_rle_mask
from ls_agreement.metrics.distances import get_distance
from ls_agreement.metrics.mask_runs import ragged_arange, runs_from_array
from ls_agreement.metrics.table import code_table, observed_pairs, sample_between_pairs
from ls_agreement.plugin.report.build import control_report
from ls_agreement.plugin.settings import ReportSettings

SIDE = 1024
LABELS = ("Car", "Road", "Sky")
CONFIG = """<View>
  <Image name="image" value="$image"/>
  <BrushLabels name="tag" toName="image"><Label value="Car"/><Label value="Road"/><Label value="Sky"/></BrushLabels>
</View>"""
TARGET_S = 30.0
_SIZES = np.array([3, 4, 8, 16])


def encode_rle(alpha: np.ndarray) -> list[int]:
    """The rle-pack stream of an RGBA image whose four channels all hold ``alpha``
    (shape (h, w), uint8), as Label Studio's editor stores a brush mask: repeat records,
    each with the smallest of the run sizes 3, 4, 8, 16 bits that holds its count."""
    px = alpha.ravel()
    starts = np.concatenate([[0], np.flatnonzero(px[1:] != px[:-1]) + 1])
    lengths = np.diff(np.concatenate([starts, [px.size]])) * 4     # values: 4 per pixel
    values = px[starts].astype(np.int64)
    pieces = -(-lengths // 65536)                                  # runs of more than 2^16 split
    n = np.full(int(pieces.sum()), 65536, dtype=np.int64)
    last = np.cumsum(pieces) - 1
    n[last] = lengths - (pieces - 1) * 65536
    val = np.repeat(values, pieces)
    sel = np.searchsorted(1 << _SIZES, n)                         # smallest size with n <= 2^r
    r = _SIZES[sel]
    width = 3 + r + 8
    record = (np.int64(1) << (width - 1)) | (sel << (r + 8)) | ((n - 1) << 8) | val
    bit = (np.repeat(record, width) >> (np.repeat(width, width) - 1 - ragged_arange(width))) & 1
    header = f"{4 * px.size:032b}{7:05b}" + "".join(f"{s - 1:04b}" for s in _SIZES)
    bits = np.concatenate([np.array(list(header), dtype=np.int64), bit])
    return np.packbits(bits.astype(np.uint8)).tolist()


def _strokes(alpha: np.ndarray, strokes: np.ndarray) -> None:
    """Paint thick segments (x0, y0, x1, y1, radius) into ``alpha`` with a one-pixel soft
    edge, as the editor's round brush does; only each stroke's box is computed."""
    h, w = alpha.shape
    for x0, y0, x1, y1, rad in strokes:
        lo_x, hi_x = int(max(min(x0, x1) - rad - 2, 0)), int(min(max(x0, x1) + rad + 2, w))
        lo_y, hi_y = int(max(min(y0, y1) - rad - 2, 0)), int(min(max(y0, y1) + rad + 2, h))
        if lo_x >= hi_x or lo_y >= hi_y:
            continue
        yy, xx = np.mgrid[lo_y:hi_y, lo_x:hi_x].astype(np.float32)
        dx, dy = x1 - x0, y1 - y0
        t = np.clip(((xx - x0) * dx + (yy - y0) * dy) / max(dx * dx + dy * dy, 1e-9), 0, 1)
        d = np.hypot(xx - x0 - t * dx, yy - y0 - t * dy)
        a = (np.clip(rad + 0.5 - d, 0, 1) * 255).astype(np.uint8)
        np.maximum(alpha[lo_y:hi_y, lo_x:hi_x], a, out=alpha[lo_y:hi_y, lo_x:hi_x])


def make_tasks(n_tasks: int, n_annotators: int = 3, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    tasks = []
    for t in range(n_tasks):
        n_regions = int(rng.integers(1, 3))
        labels = rng.choice(LABELS, n_regions, replace=False)
        truth = []
        for k in rng.integers(1, 4, n_regions):      # strokes of up to ~350 px
            start = rng.uniform(150, SIDE - 150, (k, 2))
            truth.append(np.column_stack([start, start + rng.uniform(-250, 250, (k, 2)), rng.uniform(10, 30, k)]))
        anns = []
        for a in range(n_annotators):
            result = []
            for label, strokes in zip(labels, truth):
                mine = strokes + np.column_stack([rng.normal(0, 4, strokes[:, :4].shape),
                                                  rng.normal(0, 1.5, len(strokes))])
                alpha = np.zeros((SIDE, SIDE), dtype=np.uint8)
                _strokes(alpha, mine)
                result.append({"id": f"t{t}a{a}{label}", "from_name": "tag", "to_name": "image",
                               "type": "brushlabels", "origin": "manual", "original_width": SIDE,
                               "original_height": SIDE, "image_rotation": 0,
                               "value": {"format": "rle", "rle": encode_rle(alpha), "brushlabels": [str(label)]}})
            anns.append({"id": t * 10 + a, "completed_by": a + 1, "result": result})
        tasks.append({"id": t + 1, "data": {"image": f"/data/upload/1/{t}.png"}, "annotations": anns})
    return tasks


def _sdk_ratio(tasks: list[dict], k: int) -> tuple[float, float, int]:
    """CPU seconds per mask of label-studio-sdk's decoder and of ours on the first ``k``
    masks (CPU time: the ratio then holds on a machine shared with other work), after
    checking that both give the same pixels."""
    from label_studio_sdk.converter.brush import decode_rle

    results = [r for t in tasks for a in t["annotations"] for r in a["result"]][:k]
    t0 = time.process_time()
    sdk = [decode_rle(r["value"]["rle"]) for r in results]
    t_sdk = time.process_time() - t0
    t0 = time.process_time()
    ours = [decode_rle_mask(r["value"]["rle"], SIDE, SIDE) for r in results]
    t_ours = time.process_time() - t0
    for s, o in zip(sdk, ours):
        if runs_from_array(s.reshape(SIDE, SIDE, 4)[:, :, 3]) != o:
            raise SystemExit("bench_masks: our decoder and the SDK's disagree on a mask")
    return t_sdk / len(results), t_ours / len(results), len(results)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="bench_masks")
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--sdk-sample", type=int, default=20, help="masks the SDK's decoder also decodes")
    args = ap.parse_args(argv or [])
    t0 = time.perf_counter()
    text = json.dumps(make_tasks(args.tasks))
    print(f"generated {args.tasks:,} tasks x 3 annotators of {SIDE} x {SIDE} brush masks in "
          f"{time.perf_counter() - t0:.1f} s ({len(text) / 1e6:.0f} MB of JSON)")
    gc.collect()

    with _Timer() as t_json:
        tasks = json.loads(text)
    del text
    n_masks = sum(len(a["result"]) for t in tasks for a in t["annotations"])
    with _Timer() as t_decode:
        ad = adapt(CONFIG, tasks)
    ctl = ad.controls["tag"]
    if ad.warnings or len(ctl.table) != 3 * args.tasks:
        raise SystemExit(f"bench_masks: adapt lost values: {ad.warnings[:3]}")

    # the distance's own parts, timed apart (the report below does the same work again)
    dist = get_distance(ctl.default_distance)
    ct = code_table(ctl.table)
    with _Timer() as t_prepare:
        packed = dist.prepare(ct.values)
    oi, oj = observed_pairs(ct)
    ei, ej = sample_between_pairs(ct, 10_000, np.random.default_rng(0))
    i, j = np.concatenate([oi, ei]), np.concatenate([oj, ej])
    with _Timer() as t_compare:
        dist.compute(packed, i, j)

    settings = ReportSettings()
    with _Timer() as t_report:
        entry = control_report(ctl, settings)
    total = t_decode.wall + t_report.wall
    sdk_each, ours_each, k = _sdk_ratio(tasks, args.sdk_sample)

    print(f"JSON parse:               {t_json}")
    print(f"decode (adapt):           {t_decode}: {n_masks:,} masks, {n_masks / t_decode.wall:,.0f} masks/s")
    print(f"pixel sets (prepare):     {t_prepare}")
    print(f"compare:                  {t_compare} for {i.size:,} value pairs ({oi.size:,} observed + "
          f"{ei.size:,} chance): {i.size / t_compare.wall:,.0f} pairs/s")
    print(f"report path:              {t_report} (distance {entry.distance}, bootstrap {settings.bootstrap}, "
          f"alpha {entry.alpha:.3f}, sigma {entry.sigma:.3f})")
    print(f"SDK decode_rle:           {sdk_each * 1e3:8.1f} ms CPU a mask vs ours {ours_each * 1e3:.2f} ms "
          f"({k} masks, same pixels): ours {sdk_each / ours_each:,.0f}x faster; the SDK would take "
          f"{sdk_each * n_masks:,.0f} s CPU to decode these {n_masks:,} masks")
    print(f"total (adapt + report):   {total:7.2f} s wall, {t_decode.cpu + t_report.cpu:.2f} s CPU "
          f"({total + t_json.wall:.2f} s with the JSON parse); target <= {TARGET_S:.0f} s: "
          f"{'met' if total <= TARGET_S else 'MISSED'}")


class _Timer:
    """Wall-clock and this process's CPU seconds of a ``with`` block."""

    def __enter__(self) -> "_Timer":
        self._w, self._c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._w
        self.cpu = time.process_time() - self._c

    def __str__(self) -> str:
        return f"{self.wall:7.2f} s ({self.cpu:.2f} s CPU)"


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])

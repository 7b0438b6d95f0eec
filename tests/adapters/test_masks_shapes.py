"""Brush, MagicWand, Bitmask, Ellipse and Vector results -> the common model, and agreement on them.

References: label-studio-sdk's brush decoder (``decode_rle``) and encoder (``mask2rle``),
Pillow's PNG encoder, an RLE bit writer of our own below (the stream layout as thi.ng's
rle-pack, which Label Studio's editor uses, writes it: records of any size the header
allows, literal runs of many values), the SDK's result validator, and the result shapes
of Label Studio's editor (``regions/BrushRegion.jsx``, ``BitmaskRegion.jsx``,
``EllipseRegion.jsx``, ``VectorRegion.jsx``): values worked out by hand.
"""
from __future__ import annotations

import base64
import io
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from label_studio_sdk.converter.brush import decode_rle, mask2rle
from label_studio_sdk.label_interface import LabelInterface
from PIL import Image

from ls_agreement.adapters.adapt import adapt
from ls_agreement.adapters.config import parse_config
from ls_agreement.adapters.errors import AdapterError
from ls_agreement.adapters.mask_codecs import RleError, decode_png_mask, decode_rle_mask, decode_rle_values
from ls_agreement.metrics import agreement
from ls_agreement.metrics.mask_runs import runs_from_array
from ls_agreement.metrics.model import Curve, Ellipse, Mask

# -- encoders used as references ----------------------------------------------------------


def _bits(value: int, width: int) -> str:
    return format(value, f"0{width}b")


def write_rle(values: np.ndarray, rng: np.random.Generator, word: int = 8) -> list[int]:
    """An rle-pack stream of ``values`` with random run sizes and a random mix of repeat
    records and literal records of several values (what the editor's encoder writes;
    the SDK's encoder only writes single-value literals)."""
    sizes = sorted(int(s) for s in rng.choice(np.arange(1, 17), 4, replace=False))
    out = [_bits(values.size, 32), _bits(word - 1, 5)] + [_bits(s - 1, 4) for s in sizes]
    i = 0
    while i < values.size:
        sel = int(rng.integers(4))
        cap = 1 << sizes[sel]
        j = i + 1
        while j < values.size and values[j] == values[i] and j - i < cap:
            j += 1
        if j - i > 1 and rng.random() < 0.8:      # a repeat record
            n = j - i
            out.append("1" + _bits(sel, 2) + _bits(n - 1, sizes[sel]) + _bits(int(values[i]), word))
        else:                                      # a literal record of up to cap values
            n = int(min(rng.integers(1, cap + 1), values.size - i))
            out.append("0" + _bits(sel, 2) + _bits(n - 1, sizes[sel])
                       + "".join(_bits(int(v), word) for v in values[i: i + n]))
        i += n
    bits = "".join(out)
    bits += "0" * (-len(bits) % 8)
    return [int(bits[k: k + 8], 2) for k in range(0, len(bits), 8)]


def png_url(alpha: np.ndarray) -> str:
    """A PNG data URL of black pixels with this alpha on a transparent background (what
    the editor's bitmask writes)."""
    rgba = np.zeros(alpha.shape + (4,), dtype=np.uint8)
    rgba[..., 3] = alpha
    buf = io.BytesIO()
    Image.fromarray(rgba, "RGBA").save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _random_alpha(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    kind = rng.integers(5)
    if kind == 0:
        return np.zeros((h, w), np.uint8)
    if kind == 1:
        return np.full((h, w), 255, np.uint8)
    if kind == 2:   # noise, partial alpha as anti-aliased edges have
        return (rng.integers(0, 256, (h, w)) * (rng.random((h, w)) < 0.3)).astype(np.uint8)
    yy, xx = np.mgrid[:h, :w]
    cy, cx, r = rng.uniform(0, h), rng.uniform(0, w), rng.uniform(1, max(h, w))
    return (((yy - cy) ** 2 + (xx - cx) ** 2 < r * r) * 255).astype(np.uint8)


# -- the decoders against the SDK's --------------------------------------------------------


def test_rle_decoder_equals_the_sdk_on_random_masks():
    rng = np.random.default_rng(0)
    for _ in range(150):
        h, w = (int(v) for v in rng.integers(1, 70, 2))
        alpha = _random_alpha(rng, h, w)
        rle = mask2rle(alpha)
        ref = decode_rle(rle)
        assert np.array_equal(decode_rle_values(rle), ref)
        assert decode_rle_mask(rle, w, h) == runs_from_array(ref.reshape(h, w, 4)[:, :, 3])


def test_rle_decoder_equals_the_sdk_on_every_record_shape():
    rng = np.random.default_rng(1)
    for _ in range(150):
        h, w = (int(v) for v in rng.integers(1, 25, 2))
        word = int(rng.integers(1, 9))
        # any RGBA content (channels unequal), runs of every length
        values = np.repeat(rng.integers(0, 1 << word, 4 * h * w), rng.integers(1, 40, 4 * h * w))[: 4 * h * w]
        values = np.resize(values, 4 * h * w)
        rle = write_rle(values, rng, word)
        ref = decode_rle(rle)
        assert np.array_equal(ref, values)                 # the writer writes what it says
        assert np.array_equal(decode_rle_values(rle), ref)
        assert decode_rle_mask(rle, w, h) == runs_from_array(ref.reshape(h, w, 4)[:, :, 3])


def test_a_1024_square_mask_as_the_editor_stores_it():
    rng = np.random.default_rng(2)
    yy, xx = np.mgrid[:1024, :1024]
    alpha = ((((yy - 500) / 300) ** 2 + ((xx - 400) / 200) ** 2 < 1) * 255).astype(np.uint8)
    alpha[600:610] = rng.integers(0, 256, (10, 1024))         # a noisy band
    rle = write_rle(np.repeat(alpha.ravel(), 4), rng)
    ref = decode_rle(rle)
    assert decode_rle_mask(rle, 1024, 1024) == runs_from_array(ref.reshape(1024, 1024, 4)[:, :, 3])


@pytest.mark.parametrize("rle, width, height, why", [
    ([0, 0, 0], 1, 1, "shorter than the 53-bit header"),
    (mask2rle(np.full((4, 4), 255, np.uint8))[:8], 4, 4, "runs past the end of the 8 bytes"),
    (mask2rle(np.full((4, 4), 255, np.uint8)), 5, 4, "needs 4 x 5 x 4 = 80"),
    ([0, 0, 300, 1, 2, 3, 4, 5], 1, 1, "item #2 is 300"),
    ([0, "1", 2, 3, 4, 5, 6, 7], 1, 1, "item #1 is not an integer"),
    ([], 1, 1, "empty"),
    ("abc", 1, 1, "expected a list"),
])
def test_malformed_rle_is_named(rle, width, height, why):
    with pytest.raises(RleError, match=why):
        decode_rle_mask(rle, width, height)


def test_png_masks_decode_to_their_alpha():
    rng = np.random.default_rng(3)
    for _ in range(40):
        h, w = (int(v) for v in rng.integers(1, 50, 2))
        alpha = _random_alpha(rng, h, w)
        assert decode_png_mask(png_url(alpha)) == (w, h, runs_from_array(alpha))
    for bad, why in [("data:image/png;base64,!!!", "bad base64"), ("http://x/y.png", "not a base64 data URL"),
                     ("data:image/png;base64,AAAA", "not a readable image"), (5, "expected a data URL")]:
        with pytest.raises(RleError, match=why):
            decode_png_mask(bad)


# -- Label Studio's result shapes -> the common model --------------------------------------

W, H = 80, 60
CONFIG = """<View>
  <Image name="image" value="$image"/>
  <BrushLabels name="brush" toName="image"><Label value="Car"/><Label value="Road"/></BrushLabels>
  <Brush name="plain_brush" toName="image"/>
  <MagicWand name="wand" toName="image"/>
  <BitmaskLabels name="bitmask" toName="image"><Label value="Car"/><Label value="Road"/></BitmaskLabels>
  <EllipseLabels name="ellipse" toName="image"><Label value="Cell"/><Label value="Nucleus"/></EllipseLabels>
  <VectorLabels name="vector" toName="image" closable="true" curves="true" skeleton="true">
    <Label value="Lane"/><Label value="Edge"/></VectorLabels>
</View>"""


def _result(name: str, rtype: str, value: dict, rid: str = "r1", size: bool = True) -> dict:
    out: dict[str, Any] = {"id": rid, "from_name": name, "to_name": "image", "type": rtype, "value": value}
    if size:
        out.update(original_width=W, original_height=H, image_rotation=0)
    return out


def _task(tid: int, results_by_annotator: dict[int, list[dict]]) -> dict:
    return {"id": tid, "data": {"image": "/data/upload/1/img.png"},
            "annotations": [{"id": tid * 100 + a, "completed_by": a, "result": res}
                            for a, res in results_by_annotator.items()]}


def _values(config: str, tasks: list[dict], control: str, **kw) -> tuple[dict, Any]:
    out = adapt(config, tasks, **kw)
    t = out.controls[control].table
    return dict(zip(zip(t["item"], t["annotator"]), t["value"])), out


def test_brush_magicwand_and_bitmask_results_become_masks():
    disc = np.zeros((H, W), np.uint8)
    disc[10:20, 30:45] = 255
    disc[25, 5] = 128                          # an anti-aliased pixel counts (alpha > 0)
    want = disc > 0
    rle = mask2rle(disc)
    results = [
        _result("brush", "brushlabels", {"format": "rle", "rle": rle, "brushlabels": ["Car"]}),
        _result("brush", "brushlabels", {"format": "rle", "rle": mask2rle(np.zeros((H, W), np.uint8)),
                                         "brushlabels": ["Road"]}, rid="r2"),
        _result("plain_brush", "brush", {"format": "rle", "rle": rle}, rid="r3"),
        _result("wand", "magicwand", {"format": "rle", "rle": rle}, rid="r4"),
        _result("bitmask", "bitmasklabels", {"imageDataURL": png_url(disc), "bitmasklabels": ["Road"]}, rid="r5"),
    ]
    tasks = [_task(1, {1: results, 2: []})]
    assert LabelInterface(CONFIG).validate_prediction({"result": results}, return_errors=True) == []
    for control, label in (("brush", "Car"), ("plain_brush", None), ("wand", None), ("bitmask", "Road")):
        vals, out = _values(CONFIG, tasks, control)
        assert out.controls[control].kind == "masks"
        first = vals[(1, "1")][0]
        assert isinstance(first, Mask) and (first.height, first.width, first.label) == (H, W, label)
        assert np.array_equal(first.to_array(), want) and first.area == 151
        assert vals[(1, "2")] == ()             # submitted without masks: nothing to mark
    vals, _ = _values(CONFIG, tasks, "brush")
    assert vals[(1, "1")][1] == Mask(H, W, b"", "Road")


def test_bitmask_size_must_agree_with_the_image_and_rle_needs_a_size():
    small = np.full((3, 3), 255, np.uint8)
    bad = [_result("bitmask", "bitmasklabels", {"imageDataURL": png_url(small), "bitmasklabels": ["Car"]}),
           _result("brush", "brushlabels", {"format": "rle", "rle": mask2rle(small), "brushlabels": ["Car"]},
                   rid="r2", size=False),
           _result("brush", "brushlabels", {"format": "rle", "rle": mask2rle(small), "brushlabels": ["Car"]},
                   rid="r3"),
           _result("brush", "brushlabels", {"format": "png", "rle": mask2rle(small)}, rid="r4")]
    out = adapt(CONFIG, [_task(7, {1: bad})])
    text = "\n".join(out.warnings)
    assert "task 7, annotation 701, field 'result[0].original_width': the mask image is 3 x 3 pixels" in text
    assert "field 'result[1].original_width': a mask needs the image size in pixels" in text
    assert "field 'result[2].value.rle': the stream holds 36 values; an image of 80 x 60 pixels" in text
    assert "field 'result[3].value.format': only Label Studio's 'rle' masks are read" in text
    with pytest.raises(AdapterError, match="result\\[0\\].original_width"):
        adapt(CONFIG, [_task(7, {1: bad})], strict=True)


def test_ellipses_in_pixels_as_the_editor_writes_them():
    results = [_result("ellipse", "ellipselabels", {"x": 50, "y": 25, "radiusX": 10, "radiusY": 20,
                                                    "rotation": 30, "ellipselabels": ["Cell"]})]
    assert LabelInterface(CONFIG).validate_prediction({"result": results}, return_errors=True) == []
    vals, out = _values(CONFIG, [_task(1, {1: results})], "ellipse")
    assert out.controls["ellipse"].kind == "ellipses"
    # centre x 50% of 80, y 25% of 60; radiusX in % of the width, radiusY of the height
    assert vals[(1, "1")] == (Ellipse(40.0, 15.0, 8.0, 12.0, 30.0, "Cell"),)
    del results[0]["original_width"], results[0]["original_height"]
    vals, out = _values(CONFIG, [_task(1, {1: results})], "ellipse")
    assert vals[(1, "1")] == (Ellipse(50.0, 25.0, 10.0, 20.0, 30.0, "Cell"),)
    assert any("percent" in w for w in out.controls["ellipse"].warnings)


def test_vectors_with_bezier_segments_branches_and_closing():
    verts = [
        {"id": "a", "x": 10, "y": 10, "prevPointId": None, "isBezier": False},
        {"id": "b", "x": 50, "y": 10, "prevPointId": "a", "isBezier": True,
         "controlPoint1": {"x": 30, "y": 0}, "controlPoint2": {"x": 60, "y": 20}},
        {"id": "c", "x": 50, "y": 50, "prevPointId": "b", "isBezier": False},
        {"id": "d", "x": 90, "y": 10, "prevPointId": "b", "isBezier": False},     # a branch from b
    ]
    results = [_result("vector", "vectorlabels", {"vertices": verts, "closed": False, "vectorlabels": ["Lane"]}),
               _result("vector", "vectorlabels",
                       {"vertices": [{"id": "p", "x": 0, "y": 0}, {"id": "q", "x": 10, "y": 0},
                                     {"id": "r", "x": 10, "y": 10}],
                        "closed": True, "vectorlabels": ["Edge"]}, rid="r2")]
    assert LabelInterface(CONFIG).validate_prediction({"result": results}, return_errors=True) == []
    vals, out = _values(CONFIG, [_task(1, {1: results})], "vector")
    assert out.controls["vector"].kind == "curves"
    skel, tri = vals[(1, "1")]
    assert isinstance(skel, Curve) and skel.label == "Lane"
    px = [(x * W / 100, y * H / 100) for x, y in [(10, 10), (50, 10), (50, 50), (90, 10)]]
    assert skel.points[:4] == tuple(px)
    # a -> b is a cubic Bezier: a's control point missing, so a third... 0.3 along the chord
    a, b = np.array(px[0]), np.array(px[1])
    q1, q2 = a + 0.3 * (b - a), np.array((30 * W / 100, 0.0))
    t = 0.5
    mid = (1 - t) ** 3 * a + 3 * (1 - t) ** 2 * t * q1 + 3 * (1 - t) * t ** 2 * q2 + t ** 3 * b
    assert np.allclose(skel.points[4 + 7], mid)           # step 8 of 16
    # b -> c starts at b, whose controlPoint2 bends it: 16 pieces too; b -> d likewise
    joined = {(skel.points[i], skel.points[j]) for i, j in skel.segments()}
    assert len(skel.segments()) == 3 * 16
    assert any(p[0] == px[1] for p in joined) and any(p[1] == px[3] for p in joined)
    assert tri.segments() == ((0, 1), (1, 2), (2, 0)) and tri.closed and tri.label == "Edge"


def test_vector_vertices_checked_with_their_field():
    bad = [_result("vector", "vectorlabels", {"vertices": [{"id": "a", "x": 1, "y": "2"}],
                                              "vectorlabels": ["Lane"]}),
           _result("vector", "vectorlabels", {"vertices": [], "vectorlabels": ["Lane"]}, rid="r2"),
           _result("vector", "vectorlabels", {"vertices": [{"id": "a", "x": 1, "y": 2, "isBezier": True,
                                                            "controlPoint1": {"x": 1}}]}, rid="r3"),
           _result("vector", "vectorlabels", {"vertices": [{"id": "a", "x": 1, "y": 2}], "closed": "yes"}, rid="r4")]
    text = "\n".join(adapt(CONFIG, [_task(3, {1: bad})]).warnings)
    assert "field 'result[0].value.vertices[0].y': expected a number" in text
    assert "field 'result[1].value.vertices': a vector needs at least one vertex" in text
    assert "field 'result[2].value.vertices[0].controlPoint1.y': missing" in text
    assert "field 'result[3].value.closed': expected true or false" in text


def test_labels_with_an_image_tool_and_the_installed_template():
    for tool, kind in (("Brush", "masks"), ("MagicWand", "masks"), ("Ellipse", "ellipses"), ("Vector", "curves")):
        xml = (f'<View><Image name="img" value="$image"/><Labels name="lab" toName="img"><Label value="A"/>'
               f'</Labels><{tool} name="tool" toName="img"/></View>')
        cfg = parse_config(xml)
        assert cfg.controls["lab"].kind == kind and cfg.controls["tool"].kind == kind
    # a Labels tag's results on a brush region: type "labels", the mask beside the labels
    xml = ('<View><Image name="image" value="$image"/><Labels name="lab" toName="image"><Label value="A"/>'
           '</Labels><Brush name="tool" toName="image"/></View>')
    disc = np.zeros((H, W), np.uint8)
    disc[5:9, 5:9] = 255
    res = [_result("lab", "labels", {"format": "rle", "rle": mask2rle(disc), "labels": ["A"]}),
           _result("tool", "brush", {"format": "rle", "rle": mask2rle(disc)}, rid="r1")]
    vals, _ = _values(xml, [_task(1, {1: res})], "lab")
    assert vals[(1, "1")] == (Mask.from_array(disc, "A"),)
    path = _template("semantic-segmentation-with-masks")
    cfg = parse_config(path.read_text())
    spec = cfg.controls["tag"]
    assert (spec.tag, spec.kind, spec.labels) == ("BrushLabels", "masks", ["Airplane", "Car"])
    assert not cfg.warnings


def _template(name: str) -> Path:
    import yaml

    root = Path.home() / ".cache/ls-agreement/label-studio-1.23.2/venv/lib/python3.11/site-packages/label_studio"
    found = list((root / "annotation_templates").glob(f"*/{name}/config.yml"))
    if not found:
        pytest.skip("Label Studio 1.23.2 is not installed (tests/plugin fixtures install it)")
    p = Path(f"/tmp/ls_template_{name}.xml")
    p.write_text(yaml.safe_load(found[0].read_text())["config"])
    return p


# -- three scenarios per tag, through adapt and the engine ----------------------------------

LABELS = {"brush": ["Car", "Road"], "bitmask": ["Car", "Road"], "ellipse": ["Cell", "Nucleus"],
          "vector": ["Lane", "Edge"], "plain_brush": [None], "wand": [None]}


def _disc(c: np.ndarray) -> np.ndarray:
    yy, xx = np.mgrid[:H, :W]
    return ((((yy - c[1]) / c[3]) ** 2 + ((xx - c[0]) / c[2]) ** 2 < 1) * 255).astype(np.uint8)


def _shape_result(control: str, c: np.ndarray, label: str | None, rid: str) -> dict:
    """A result of ``control`` for the shape parameters ``c`` (centre x, y, radii, angle in
    pixels/degrees), in Label Studio's format."""
    key = {"brush": "brushlabels", "bitmask": "bitmasklabels", "ellipse": "ellipselabels", "vector": "vectorlabels"}
    rtype = {"plain_brush": "brush", "wand": "magicwand"}.get(control, key.get(control))
    c = np.array([float(v) for v in c])
    if control in ("brush", "plain_brush", "wand"):
        value: dict = {"format": "rle", "rle": mask2rle(_disc(c))}
    elif control == "bitmask":
        value = {"imageDataURL": png_url(_disc(c))}
    elif control == "ellipse":
        value = {"x": float(c[0] / W * 100), "y": float(c[1] / H * 100), "radiusX": float(c[2] / W * 100),
                 "radiusY": float(c[3] / H * 100), "rotation": float(c[4])}
    else:
        t = np.radians(c[4])
        pts = [(c[0] + k * c[2] * math.cos(t), c[1] + k * c[3] * math.sin(t) + 3 * k * k) for k in (-1, 0, 1)]
        value = {"vertices": [{"id": f"{rid}-{k}", "x": float(x / W * 100), "y": float(y / H * 100), "isBezier": False,
                               "prevPointId": f"{rid}-{k - 1}" if k else None} for k, (x, y) in enumerate(pts)],
                 "closed": False}
    if label is not None:
        value[key[control]] = [label]
    return _result(control, rtype, value, rid=rid)


def _random_shape(rng: np.random.Generator) -> np.ndarray:
    return np.array([rng.uniform(10, W - 10), rng.uniform(10, H - 10), rng.uniform(4, 16), rng.uniform(4, 16),
                     rng.uniform(0, 180)])


def scenario_tasks(control: str, scenario: str, n_tasks: int = 30, seed: int = 0) -> list[dict]:
    """identical: every annotator the same; careless: annotators 1-3 near a per-task truth,
    annotator 4 at random; random: everyone at random (one shape each)."""
    rng = np.random.default_rng(seed)
    labels = LABELS[control]
    tasks = []
    for t in range(n_tasks):
        truth, truth_label = _random_shape(rng), labels[rng.integers(len(labels))]
        by = {}
        for a in range(1, 5):
            if scenario == "identical":
                c, lab = truth, truth_label
            elif scenario == "careless" and a < 4:
                jitter = np.array([*rng.normal(0, 0.7, 2), *rng.normal(0, 0.4, 2), rng.normal(0, 3)])
                c, lab = truth + jitter, truth_label
            else:
                c, lab = _random_shape(rng), labels[rng.integers(len(labels))]
            by[a] = [_shape_result(control, c, lab, f"t{t}a{a}")]
        tasks.append(_task(t + 1, by))
    return tasks


def _measure(control: str, tasks: list[dict]) -> Any:
    out = adapt(CONFIG, tasks, strict=True)
    ctl = out.controls[control]
    return agreement(ctl.table, ctl.default_distance, bootstrap=0)


CONTROLS = ["brush", "plain_brush", "wand", "bitmask", "ellipse", "vector"]


@pytest.mark.parametrize("control", CONTROLS)
def test_identical_annotators_agree_fully(control):
    assert _measure(control, scenario_tasks(control, "identical")).alpha == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("control", CONTROLS)
def test_the_careless_annotator_is_lowest_by_alpha_and_sigma(control):
    res = _measure(control, scenario_tasks(control, "careless", seed=1))
    per = res.per_annotator
    others = per.drop(index="4")
    assert (per.loc["4", "alpha"] < others["alpha"]).all(), per
    assert (per.loc["4", "sigma"] < others["sigma"]).all(), per
    assert res.alpha > 0.3


@pytest.mark.parametrize("control", CONTROLS)
def test_random_annotators_have_alpha_near_zero(control):
    res = _measure(control, scenario_tasks(control, "random", seed=2))
    assert abs(res.alpha) < 0.15, res.alpha


def test_report_on_every_mask_and_shape_tag(tmp_path: Path):
    """The whole report (json and html) on a project with every tag: no traceback, no NaN."""
    import json

    from ls_agreement.plugin.cli import main

    tasks = []
    by_task: dict[int, dict[int, list]] = {}
    for control in CONTROLS:
        for task in scenario_tasks(control, "careless", n_tasks=12, seed=5):
            for ann in task["annotations"]:
                by_task.setdefault(task["id"], {}).setdefault(ann["completed_by"], []).extend(ann["result"])
    tasks = [_task(t, by) for t, by in by_task.items()]
    (tmp_path / "c.xml").write_text(CONFIG)
    (tmp_path / "e.json").write_text(json.dumps(tasks))
    for fmt in ("json", "html"):
        out = tmp_path / f"r.{fmt}"
        assert main(["report", str(tmp_path / "e.json"), "--config", str(tmp_path / "c.xml"), "--format", fmt,
                     "--out", str(out), "--bootstrap", "50", "--debug"]) in (0, None)
        text = out.read_text()
        assert "NaN" not in text and "Traceback" not in text
    rep = json.loads((tmp_path / "r.json").read_text())
    for control in CONTROLS:
        entry = rep["controls"][control]
        assert entry["status"] == "ok" and math.isfinite(entry["alpha"]), entry.get("reason")

"""The generator of Label Studio exports, checked against Label Studio's own code.

* Every result of every template and extra config passes label-studio-sdk's validator
  (``LabelInterface.validate_prediction``: types, ``from_name``/``to_name``, values, labels,
  relations), except where the validator and Label Studio's editor disagree, each listed in
  :data:`EDITOR_OVER_SDK` with the editor code that decides.
* Brush masks decode with label-studio-sdk's ``decode_rle`` to the pixels drawn.
* The scenarios: identical annotators write equal results (ids aside); task data does not
  depend on the scenario; per-region results and relations point at their regions.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Any

import numpy as np
import pytest
from label_studio_sdk.converter.brush import decode_rle
from label_studio_sdk.label_interface import LabelInterface

from .extra_configs import EXTRA_CONFIGS
from .generator import SCENARIOS, generate_export
from .answers import VALUE_KEY
from .labeling_config import LABELED_TOOLS, parse
from .ls_templates import load_templates, templates_dir
from .shapes import rasterize

_DIR, _WHY = templates_dir()
_CONFIGS = {t.key: t.config for t in load_templates(_DIR)} if _DIR is not None else {}
_CONFIGS.update(EXTRA_CONFIGS)
_IDS = sorted(_CONFIGS)

# validator messages where Label Studio's editor, not label-studio-sdk's validator, decides
EDITOR_OVER_SDK = [
    # Pairwise.js: createResult(..., self.name) -- to_name is the Pairwise's own name
    re.compile(r"'to_name' '[^']+' not found in configuration.*"),
    # Choice.jsx resultValue: with allowNested every selected value is its path (a list);
    # the SDK's ChoicesValue only knows strings
    re.compile(r"Invalid value for control 'dynamic_choices'.*"),
    # chat_eval: <Chat name="chat" toName="chat"> is read by the SDK as a control of type
    # "chat"; its messages are "chatmessage" results (SDK ChatMessageTag)
    re.compile(r"Type 'chatmessage' does not match expected type 'chat'.*"),
    # core/Tree.tsx extractNames binds a control without toName to the only object tag
    # (chatbot-assessment's Rating); the SDK leaves such a control out
    re.compile(r"'from_name' 'likert_scale' not found in configuration"),
]


def _sdk_problems(key: str, xml: str) -> Counter[str]:
    li = LabelInterface(xml)
    out: Counter[str] = Counter()
    for scenario in SCENARIOS:
        for task in generate_export(xml, scenario, seed=3, n_tasks=6).tasks:
            for ann in task["annotations"]:
                for err in li.validate_prediction({"result": ann["result"]}, return_errors=True):
                    msg = re.sub(r"^(Region|Relation) \d+: ", "", str(err))
                    if not any(p.match(msg) for p in EDITOR_OVER_SDK):
                        out[msg[:240]] += 1
    return out


@pytest.mark.skipif(not _IDS, reason=_WHY)
@pytest.mark.parametrize("key", _IDS)
def test_results_pass_label_studio_sdk_validation(key: str) -> None:
    problems = _sdk_problems(key, _CONFIGS[key])
    assert not problems, f"{key}: " + "; ".join(f"{n}x {m}" for m, n in problems.most_common(5))


def test_editor_over_sdk_exceptions_are_needed() -> None:
    """Each listed exception is met by some template: a stale one would hide nothing."""
    if not _DIR:
        pytest.skip(_WHY)
    hit = [False] * len(EDITOR_OVER_SDK)
    for key in ("generative-ai/human-feedback-collection", "ranking-and-scoring/serp-ranking",
                "chat/chat_eval", "generative-ai/chatbot-assessment"):
        li = LabelInterface(_CONFIGS[key])
        for task in generate_export(_CONFIGS[key], "random", seed=3, n_tasks=3).tasks:
            for ann in task["annotations"]:
                for err in li.validate_prediction({"result": ann["result"]}, return_errors=True):
                    msg = re.sub(r"^(Region|Relation) \d+: ", "", str(err))
                    for i, p in enumerate(EDITOR_OVER_SDK):
                        hit[i] |= bool(p.match(msg))
    assert all(hit), hit


def test_brush_masks_decode_to_the_pixels_drawn() -> None:
    gen = generate_export(EXTRA_CONFIGS["extra/magic-wand"], "careless", seed=5, n_tasks=3)
    n = 0
    for task in gen.tasks:
        for ann in task["annotations"]:
            for r in ann["result"]:
                if r["value"].get("format") != "rle":
                    continue
                w, h = r["original_width"], r["original_height"]
                rgba = decode_rle(r["value"]["rle"]).reshape(h, w, 4)
                assert set(np.unique(rgba[..., 3])) <= {0, 255}
                assert 0 < (rgba[..., 3] > 0).sum() < w * h
                n += 1
    assert n > 0
    # and one geometry end to end: an ellipse of known centre
    mask = rasterize({"x": 50.0, "y": 50.0, "rx": 25.0, "ry": 25.0}, (40, 20))
    assert mask.shape == (20, 40) and mask[10, 20] == 255 and mask[0, 0] == 0


def _strip_ids(results: list[dict[str, Any]]) -> list[Any]:
    return [{k: v for k, v in r.items() if k not in ("id", "from_id", "to_id")} for r in results]


@pytest.mark.skipif(not _IDS, reason=_WHY)
@pytest.mark.parametrize("key", _IDS)
def test_scenarios(key: str) -> None:
    xml = _CONFIGS[key]
    gens = {s: generate_export(xml, s, seed=4, n_tasks=5) for s in SCENARIOS}
    datas = {s: [t["data"] for t in g.tasks] for s, g in gens.items()}
    assert datas["identical"] == datas["careless"] == datas["random"]
    for task in gens["identical"].tasks:
        first = _strip_ids(task["annotations"][0]["result"])
        assert all(_strip_ids(a["result"]) == first for a in task["annotations"][1:])
    assert gens["careless"].careless == gens["careless"].annotators[-1]
    controls = {c.name for c in parse(xml).controls}
    answer_keys = set(VALUE_KEY.values()) | set(LABELED_TOOLS.values()) | {"labels", "brushlabels"}
    for task in gens["careless"].tasks:
        for ann in task["annotations"]:
            by_id: dict[str, list[dict[str, Any]]] = {}
            for r in ann["result"]:
                if r.get("type") != "relation":
                    assert r["from_name"] in controls or r["type"] == "chatmessage", (key, r)
                    by_id.setdefault(r["id"], []).append(r)
            for r in ann["result"]:
                if r.get("type") == "relation":
                    assert r["from_id"] in by_id and r["to_id"] in by_id
            # the results of one region (tool, labels, per-region answers) share its geometry
            for group in by_id.values():
                shapes_ = [{k: v for k, v in r["value"].items() if k not in answer_keys} for r in group]
                assert all(g == shapes_[0] for g in shapes_), (key, group)

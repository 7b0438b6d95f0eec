"""Label Studio JSON exports for any labeling config, in three scenarios.

``generate_export(config_xml, scenario, seed=...)`` enumerates the config's control tags
and writes, per task and annotator, the results exactly as Label Studio 1.23.2's editor
serializes them (``regions/Result.js`` ``serialize``: ``{id, from_name, to_name, type,
origin, value}`` plus the region's own top-level keys):

* every result of one region shares the region's ``id``: the drawing tool's result, the
  result of a ``<Labels>`` labelling it (OCR: Rectangle/Polygon + Labels; MagicWand +
  BrushLabels), and the results of per-region controls, whose ``value`` holds the region's
  geometry beside their own answer (``data = area.serialize()``);
* on a ``<Video>`` the labels of a VideoRectangle go inside its own result
  (``mergeLabelsAndResults``: no separate ``labels`` result);
* relations are ``{from_id, to_id, type: "relation", direction: "right", labels}``
  (``stores/RelationStore.js``);
* a Pairwise result's ``to_name`` is the Pairwise's own name; a Ranker's is its List;
* chat messages (``<Chat>``, Label Studio Enterprise; not in the 1.23.2 open-source
  editor) follow label-studio-sdk's ``ChatMessageValue``: one ``chatmessage`` result per
  message, ``{"chatmessage": {"role", "content"}}``; per-region controls on a message
  share its id and carry its ``chatmessage`` beside their answer, as for any region.

Scenarios (``n_tasks`` tasks, ``n_annotators`` annotators, all annotating every task):

* ``identical`` -- every annotator gives the task's true answer;
* ``careless`` -- all but the last annotator give the truth with small noise
  (:func:`answers.near`, :func:`shapes.jitter`, a region dropped with probability 0.05,
  a label or a per-region answer changed with probability 0.05 / 0.15); the last one
  answers at random;
* ``random`` -- every annotator answers at random, independently of the truth.

Task data and truths depend only on ``seed`` (not on the scenario), so the three exports
of one seed share their tasks.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from . import answers, shapes
from .labeling_config import CLASSIFICATIONS, LABELED_TOOLS, REGION_TOOLS, ControlTag, ObjectTag, ParsedConfig, parse
from .task_data import ObjectInfo, dynamic_options, make_object_data

__all__ = ["Scenario", "SCENARIOS", "Generated", "generate_export"]

Scenario = Literal["identical", "careless", "random"]
SCENARIOS: tuple[Scenario, ...] = ("identical", "careless", "random")

DROP = 0.05          # a careful annotator misses a region with this probability
RELABEL = 0.05       # ... and gives a region another label with this one
# Small images for configs with masks: their run-length encoding is written pixel by pixel.
MASK_SIZES = [(96, 72), (120, 90), (80, 80)]
_MASK_TOOLS = {"brush", "brushlabels", "magicwand", "bitmask", "bitmasklabels"}
_ID = np.array(list("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"))


@dataclass
class RegionGroup:
    """Regions drawn on one object by ``tools`` and labelled by ``labeler`` (None: no
    labels). ``merged``: the labels go inside the tool's own result (Video)."""

    obj: ObjectTag
    tools: list[ControlTag]
    labeler: ControlTag | None
    merged: bool = False


@dataclass
class Region:
    group: int
    tool: ControlTag
    geom: dict[str, Any]
    labels: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Answer:
    """One annotation before serialization."""

    classes: dict[str, Any]
    regions: list[Region]
    relations: list[tuple[int, int, list[str]]]


@dataclass
class Generated:
    """A generated export: ``tasks`` (the JSON export), the annotators' ``completed_by``
    ids, the careless one (``careless`` scenario, else None) and the parsed config."""

    tasks: list[dict[str, Any]]
    annotators: list[int]
    careless: int | None
    config: ParsedConfig


@dataclass
class _Plan:
    config: ParsedConfig
    groups: list[RegionGroup]
    classes: list[ControlTag]          # answered once per task
    per_region: list[ControlTag]       # answered once per region
    relations: ControlTag | None
    chats: list[ObjectTag]
    mask_sizes: bool


def _plan(cfg: ParsedConfig) -> _Plan:
    groups: list[RegionGroup] = []
    for obj in cfg.objects.values():
        on = [c for c in cfg.controls_on(obj.name) if not c.per_region]
        tools = [c for c in on if c.tag in REGION_TOOLS]
        brushlabels = [c for c in on if c.tag == "brushlabels"]
        used: set[int] = set()
        for c in on:
            if c.tag in LABELED_TOOLS:
                groups.append(RegionGroup(obj, [c], c))
            elif c.tag == "labels":
                if obj.tag in ("image", "video"):
                    if tools:
                        groups.append(RegionGroup(obj, tools, c, merged=obj.tag == "video"))
                        used.update(id(t) for t in tools)
                else:
                    groups.append(RegionGroup(obj, [c], c))
        for t in tools:
            if id(t) in used:
                continue
            # the MagicWand's regions take the labels of a BrushLabels (tools/MagicWand.jsx)
            labeler = brushlabels[0] if t.tag == "magicwand" and brushlabels else None
            groups.append(RegionGroup(obj, [t], labeler))
    classes = [c for c in cfg.controls if c.tag in CLASSIFICATIONS and not c.per_region]
    per_region = [c for c in cfg.controls if c.tag in CLASSIFICATIONS and c.per_region]
    relations = next((c for c in cfg.controls if c.tag == "relations"), None)
    chats = [o for o in cfg.objects.values() if o.tag == "chat"]
    mask = any(c.tag in _MASK_TOOLS for c in cfg.controls)
    return _Plan(cfg, groups, classes, per_region, relations, chats, mask)


@dataclass
class _Task:
    """One task: its data, what its objects hold, and each control's options."""

    index: int
    data: dict[str, Any]
    infos: dict[str, ObjectInfo]
    options: dict[int, answers.Options]      # id(control) -> options on this task


def _make_task(plan: _Plan, index: int, seed: int) -> _Task:
    rng = np.random.default_rng([seed, index, 0])
    data: dict[str, Any] = {}
    infos: dict[str, ObjectInfo] = {}
    sizes = MASK_SIZES if plan.mask_sizes else None
    for obj in plan.config.objects.values():
        if obj.data_key is None:
            continue
        value, info = make_object_data(obj, index, rng, sizes)
        infos[obj.name] = info
        data.setdefault(obj.data_key, value)    # two objects may read one key (video + audio)
    options: dict[int, answers.Options] = {}
    for c in plan.config.controls:
        tree = {o: {} for o in c.options} if c.tag not in ("choices", "taxonomy") else dict(c.tree)
        if c.dynamic_key:
            nested = c.attrs.get("allownested", "").lower() == "true"
            value, tree = dynamic_options(c.dynamic_key, index, rng, nested)
            data[c.dynamic_key] = value
        items = infos[c.to_names[0]].items if c.tag == "ranker" and c.to_names and c.to_names[0] in infos else []
        options[id(c)] = answers.Options(tree, items)
    return _Task(index, data, infos, options)


def _visible(c: ControlTag, given: dict[str, Any]) -> bool:
    """Whether an annotator sees (and so answers) control ``c``: Label Studio's
    ``visibleWhen="choice-selected"`` (``-unselected``) on the control itself
    (``Result.canBeSubmitted``) and on the Views around it (``mixins/Visibility.js``): shown
    only when the named control has an answer (one of ``whenChoiceValue`` when given).
    ``given`` maps control names to their answers."""
    return all(_shown(attrs, given) for attrs in [*c.ancestors, c.attrs])


def _shown(attrs: dict[str, str], given: dict[str, Any]) -> bool:
    when = attrs.get("visiblewhen")
    if when not in ("choice-selected", "choice-unselected"):
        return True
    tag, values = attrs.get("whentagname"), attrs.get("whenchoicevalue")
    if tag is None:
        selected = any(v for v in given.values())
    else:
        answer = given.get(tag)
        leaves = [p[-1] if isinstance(p, list) else p for p in (answer or [])]
        selected = bool(answer) and (values is None or bool(set(values.split(",")) & set(leaves)))
    return selected if when == "choice-selected" else not selected


def _applies(p: ControlTag, group: RegionGroup | None, region: Region, role: str | None) -> bool:
    """Whether per-region control ``p`` is answered on ``region`` (``whenTagName``,
    ``whenLabelValue``, the ``whenRole`` of an enclosing View, ``visibleWhen``)."""
    if p.attrs.get("whentagname") and group is not None and p.attrs.get("visiblewhen") is None:
        if group.labeler is None or group.labeler.name != p.attrs["whentagname"]:
            return False
    label = p.attrs.get("whenlabelvalue")
    if label and not set(label.split(",")) & set(region.labels):
        return False
    for view in p.ancestors:
        roles = view.get("whenrole")
        if roles and role not in roles.split(","):
            return False
    return _visible(p, region.attrs)


def _label_set(c: ControlTag, opts: answers.Options, rng: np.random.Generator) -> list[str]:
    values = list(opts.tree)
    if not values:
        return []
    first = values[int(rng.integers(0, len(values)))]
    if c.choice_mode == "multiple" and len(values) > 1 and rng.random() < 0.2:
        second = values[int(rng.integers(0, len(values)))]
        return sorted({first, second}, key=values.index)
    return [first]


def _is_instant(labels: list[str]) -> bool:
    # change points are instants (the change-point-detection template); other time-series
    # regions are intervals
    return bool(labels) and all(lab.lower().startswith("change") for lab in labels)


def _draw_answer(plan: _Plan, task: _Task, rng: np.random.Generator) -> Answer:
    """A whole annotation drawn afresh: a task's truth, or a random annotator's answer."""
    classes: dict[str, Any] = {}
    for c in plan.classes:
        if _visible(c, classes):
            classes[c.name] = answers.truth(c, task.options[id(c)], rng)
    regions: list[Region] = []
    for gi, g in enumerate(plan.groups):
        info = task.infos.get(g.obj.name)
        if info is None:
            continue
        k = int(rng.integers(1, 4))
        labels = [_label_set(g.labeler, task.options[id(g.labeler)], rng) if g.labeler else []
                  for _ in range(k)]
        tools = [g.tools[int(rng.integers(0, len(g.tools)))] for _ in range(k)]
        fam = shapes.family_of(tools[0].tag, g.obj.tag)
        if len(g.tools) == 1:
            whole = g.obj.attrs.get("granularity") == "paragraph"
            instants = [_is_instant(lab) for lab in labels] if fam == "timeseries" else None
            geoms = shapes.place(fam, info, k, rng, instants=instants, whole_paragraphs=whole)
        else:
            geoms = [shapes.draw(shapes.family_of(t.tag, g.obj.tag), info, rng) for t in tools]
        for t, geom, lab in zip(tools, geoms, labels):
            regions.append(Region(gi, t, geom, lab))
    for chat in plan.chats:
        info = task.infos.get(chat.name)
        for m_i, m in enumerate(info.messages if info else []):
            regions.append(Region(-1, ControlTag(chat.name, "chat", [chat.name], {}),
                                  {"role": m["role"], "content": m["content"], "index": m_i}, []))
    for r in regions:
        _answer_attrs(plan, task, r, rng, None)
    relations: list[tuple[int, int, list[str]]] = []
    if plan.relations is not None and len(regions) >= 2:
        rel_labels = plan.relations.options
        for _ in range(int(rng.integers(0, 3))):
            i, j = rng.choice(len(regions), 2, replace=False)
            lab = [rel_labels[int(rng.integers(0, len(rel_labels)))]] if rel_labels else []
            relations.append((int(i), int(j), lab))
    return Answer(classes, regions, relations)


def _object_of(plan: _Plan, r: Region) -> str:
    return plan.groups[r.group].obj.name if r.group >= 0 else r.tool.name


def _answer_attrs(plan: _Plan, task: _Task, r: Region, rng: np.random.Generator,
                  truth: dict[str, Any] | None) -> None:
    """Per-region answers of ``r``: drawn afresh (``truth`` None) or near ``truth``."""
    group = plan.groups[r.group] if r.group >= 0 else None
    role = r.geom.get("role")
    r.attrs = {}
    for p in plan.per_region:
        if _object_of(plan, r) not in p.to_names or not _applies(p, group, r, role):
            continue
        opts = task.options[id(p)]
        if truth is not None and p.name in truth:
            r.attrs[p.name] = answers.near(p, opts, truth[p.name], rng)
        else:
            r.attrs[p.name] = answers.truth(p, opts, rng)


def _near_answer(plan: _Plan, task: _Task, truth: Answer, rng: np.random.Generator) -> Answer:
    """``truth`` as a careful annotator gives it."""
    classes: dict[str, Any] = {}
    for c in plan.classes:
        if c.name in truth.classes and _visible(c, classes):
            classes[c.name] = answers.near(c, task.options[id(c)], truth.classes[c.name], rng)
    kept: dict[int, int] = {}
    regions: list[Region] = []
    for i, r in enumerate(truth.regions):
        if r.group >= 0 and rng.random() < DROP:
            continue
        if r.group >= 0:
            g = plan.groups[r.group]
            geom = shapes.jitter(shapes.family_of(r.tool.tag, g.obj.tag), task.infos[g.obj.name], r.geom, rng)
            labels = list(r.labels)
            if g.labeler is not None and rng.random() < RELABEL:
                labels = _label_set(g.labeler, task.options[id(g.labeler)], rng)
        else:
            geom, labels = dict(r.geom), []
        new = Region(r.group, r.tool, geom, labels)
        _answer_attrs(plan, task, new, rng, r.attrs)
        kept[i] = len(regions)
        regions.append(new)
    relations = [(kept[i], kept[j], lab) for i, j, lab in truth.relations if i in kept and j in kept]
    return Answer(classes, regions, relations)


def _rid(rng: np.random.Generator) -> str:
    return "".join(_ID[rng.integers(0, len(_ID), 10)])


def _serialize(plan: _Plan, task: _Task, ans: Answer, rng: np.random.Generator) -> list[dict[str, Any]]:
    """The ``result`` list of one annotation."""
    out: list[dict[str, Any]] = []
    for c in plan.classes:
        if c.name not in ans.classes:
            continue
        # Pairwise: its own name (Pairwise.js); several toName: the first, the one name
        # label-studio-sdk's validator accepts (LabelInterface._validate_region_logic)
        to_name = c.name if c.tag == "pairwise" else (c.to_names[0] if c.to_names else "")
        out.append({"id": _rid(rng), "from_name": c.name, "to_name": to_name,
                    "type": answers.RESULT_TYPE[c.tag], "origin": "manual",
                    "value": {answers.VALUE_KEY[c.tag]: ans.classes[c.name]}})
    ids: list[str] = []
    for r in ans.regions:
        rid = _rid(rng)
        ids.append(rid)
        if r.group < 0:     # a chat message
            top, value = shapes.serialize("chatmessage", task.infos[r.tool.name], r.geom)
            obj_name = r.tool.name
            out.append({"id": rid, "from_name": obj_name, "to_name": obj_name, "type": "chatmessage",
                        "origin": "manual", "value": value})
        else:
            g = plan.groups[r.group]
            obj_name = g.obj.name
            top, value = shapes.serialize(shapes.family_of(r.tool.tag, g.obj.tag), task.infos[obj_name], r.geom)

            def result(control: ControlTag, rtype: str, extra: dict[str, Any]) -> dict[str, Any]:
                return {"id": rid, "from_name": control.name, "to_name": obj_name, "type": rtype,
                        **top, "origin": "manual", "value": {**value, **extra}}

            if g.labeler is r.tool:                    # a labelled tool or Labels on a span
                rtype = LABELED_TOOLS.get(r.tool.tag, "labels")
                out.append(result(r.tool, rtype, {rtype: r.labels}))
            elif g.merged:                             # VideoRectangle + Labels on a Video
                out.append(result(r.tool, r.tool.tag, {"labels": r.labels} if r.labels else {}))
            else:
                out.append(result(r.tool, r.tool.tag, {}))
                if g.labeler is not None:
                    ltype = g.labeler.tag
                    out.append(result(g.labeler, ltype, {ltype: r.labels}))
        for p in plan.per_region:
            if p.name in r.attrs:
                out.append({"id": rid, "from_name": p.name, "to_name": obj_name,
                            "type": answers.RESULT_TYPE[p.tag], **top, "origin": "manual",
                            "value": {**value, answers.VALUE_KEY[p.tag]: r.attrs[p.name]}})
    for i, j, labels in ans.relations:
        out.append({"from_id": ids[i], "to_id": ids[j], "type": "relation", "direction": "right",
                    "labels": labels})
    return out


def generate_export(config_xml: str, scenario: Scenario, *, seed: int = 0, n_tasks: int = 30,
                    n_annotators: int = 4, annotator_ids: list[int] | None = None,
                    first_task_id: int = 1) -> Generated:
    """A Label Studio JSON export of ``n_tasks`` tasks, each annotated by every annotator.

    Parameters
    ----------
    config_xml : str
        The labeling config.
    scenario : {"identical", "careless", "random"}
        See the module docstring.
    seed : int
        Task data and truths depend on it alone; annotators' noise on it and the scenario.
    annotator_ids : list of int, optional
        ``completed_by`` of each annotator (default 1..n_annotators); the careless one is
        the last.

    Returns
    -------
    Generated
    """
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario must be one of {SCENARIOS}, got {scenario!r}")
    plan = _plan(parse(config_xml))
    ids = list(annotator_ids or range(1, n_annotators + 1))
    if len(ids) != n_annotators:
        raise ValueError("one annotator id per annotator")
    salt = SCENARIOS.index(scenario) + 1
    tasks: list[dict[str, Any]] = []
    ann_id = 0
    for t in range(n_tasks):
        task = _make_task(plan, t, seed)
        truth = _draw_answer(plan, task, np.random.default_rng([seed, t, 1]))
        anns = []
        for a, uid in enumerate(ids):
            rng = np.random.default_rng([seed, t, 2, salt, a])
            if scenario == "identical":
                ans = truth
            elif scenario == "random" or a == n_annotators - 1:
                ans = _draw_answer(plan, task, rng)
            else:
                ans = _near_answer(plan, task, truth, rng)
            ann_id += 1
            stamp = f"2024-03-{1 + t % 28:02d}T{8 + a:02d}:{t % 60:02d}:00.000000Z"
            anns.append({"id": ann_id, "completed_by": uid, "result": _serialize(plan, task, ans, rng),
                         "was_cancelled": False, "ground_truth": False, "created_at": stamp,
                         "updated_at": stamp, "draft_created_at": None, "lead_time": 30.0 + a,
                         "prediction": {}, "result_count": 0, "import_id": None,
                         "last_action": None, "bulk_created": False, "task": first_task_id + t,
                         "project": 1, "updated_by": None, "parent_prediction": None,
                         "parent_annotation": None, "last_created_by": None})
        tasks.append({"id": first_task_id + t, "annotations": anns, "drafts": [], "predictions": [],
                      "data": task.data, "meta": {}, "created_at": "2024-03-01T08:00:00.000000Z",
                      "updated_at": "2024-03-01T08:00:00.000000Z", "inner_id": t + 1,
                      "total_annotations": len(anns), "cancelled_annotations": 0,
                      "total_predictions": 0, "comment_count": 0, "unresolved_comment_count": 0,
                      "last_comment_updated_at": None, "project": 1, "updated_by": None,
                      "comment_authors": []})
    careless = ids[-1] if scenario == "careless" else None
    return Generated(tasks, ids, careless, plan.config)


"""Label Studio labeling configs (XML) -> one :class:`ControlSpec` per control tag.

A *control* tag (has ``name`` and ``toName``: RectangleLabels, Choices, ...) produces
results; an *object* tag (has ``name`` and ``value``: Image, Text, List, ...) shows task
data. The spec records what the adapters need: which object a control annotates, its
closed answer set (labels, choices, taxonomy leaves, buckets) and its options
(single/multiple choice, rating scale, ...). Reference: Label Studio tag docs
(https://labelstud.io/tags/) and ``docs/label-studio.md`` §1.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from typing import Any

from .errors import MAX_WARNINGS, AdapterError, Unmeasured
from .specs import ControlSpec, LabelingConfig, ObjectSpec

__all__ = ["ControlSpec", "ObjectSpec", "LabelingConfig", "parse_config",
           "SUPPORTED_CONTROLS", "UNSUPPORTED_CONTROLS"]

# lower-case tag -> family module that adapts its results
SUPPORTED_CONTROLS: dict[str, str] = {
    "rectanglelabels": "regions", "rectangle": "regions", "ocrlabels": "regions",
    "polygonlabels": "regions", "polygon": "regions",
    "keypointlabels": "regions", "keypoint": "regions",
    "labels": "labels", "hypertextlabels": "spans",
    "textarea": "text",
    "choices": "choices", "taxonomy": "choices",
    "rating": "scalars", "number": "scalars", "datetime": "scalars",
    "ranker": "ranking",
    "pairwise": "pairwise",
    "videorectangle": "tracks",
    "timelinelabels": "intervals", "timeserieslabels": "intervals", "paragraphlabels": "intervals",
    "relations": "relations",
    "brushlabels": "masks", "brush": "masks", "magicwand": "masks",
    "bitmasklabels": "masks", "bitmask": "masks",
    "ellipselabels": "shapes", "ellipse": "shapes", "vectorlabels": "shapes", "vector": "shapes",
}
# Real Label Studio controls this plugin does not measure (yet): skipped with a warning.
UNSUPPORTED_CONTROLS = {
    "relation",
    "matrix", "datetime-range", "smartlabels",
}
# Tags that never carry results (layout, children of controls).
_LAYOUT = {"view", "header", "style", "filter", "collapse", "panel", "label", "choice",
           "bucket", "relation", "shortcut", "hypertext-label", "ranker-bucket"}

_REGION_KIND = {"rectangle": "boxes", "polygon": "polygons", "keypoint": "keypoints"}
# image tools whose regions are masks or shapes: tool -> (family module, value kind)
_IMAGE_TOOLS = {"brush": ("masks", "masks"), "magicwand": ("masks", "masks"), "bitmask": ("masks", "masks"),
                "ellipse": ("shapes", "ellipses"), "vector": ("shapes", "curves")}
# object tag (lower case) -> the axis of the 1-d regions drawn on it (adapters/intervals.py)
_INTERVAL_AXIS = {"audio": "audio", "audioplus": "audio", "video": "timeline", "timeseries": "timeseries",
                  "paragraphs": "paragraphs"}
# the object each 1-d labels control draws on
_INTERVAL_OBJECT = {"timelinelabels": "timeline", "timeserieslabels": "timeseries",
                    "paragraphlabels": "paragraphs"}


_LISTED_SCALE = 100   # Rating answers listed (options) up to this maxRating
# A Taxonomy's paths are listed: its leaves are the control's options, and every inner node
# is an answer too (a selection may stop there). Past this many characters over the paths
# of all its nodes (a tree thousands of levels deep: the path of each node repeats its
# ancestors', so the total grows with the square of the depth) the control is refused: the
# declared structure must not decide how much memory or time a report takes.
TAXONOMY_BUDGET = 20_000_000
_CHOICE_MODES = ("single", "single-radio", "multiple")


class _Skip(Exception):
    """A control the config declares wrongly: an error in strict mode, else skipped."""

    def __init__(self, message: str, where: str) -> None:
        super().__init__(message)
        self.message, self.where = message, where


class _Merged(Exception):
    """A control whose answers Label Studio stores in another control's results (the
    ``Labels`` of a Video with a ``VideoRectangle``): not measured on its own."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _bad(msg: str, field: str = "config") -> AdapterError:
    return AdapterError(f"invalid labeling config: {msg}", field=field)


def _answer(child: ET.Element) -> str | None:
    """What a Choice/Label puts in results: its alias when it has one, else its value."""
    return child.get("alias") or child.get("value")


def _declared(node: ET.Element, child_tag: str, where: str, problem) -> tuple[list[str], set[str]]:
    """The answers a control declares (in config order, each once) and every string that
    stands for one of them in results (aliases and values)."""
    labels: list[str] = []
    known: set[str] = set()
    for child in node.iter():
        if child is node or not isinstance(child.tag, str) or child.tag.lower() != child_tag:
            continue
        ans = _answer(child)
        if not ans:
            problem(f"a {child.tag} without a value", where, "ignored")
            continue
        if ans in known:
            problem(f"{child.tag} {ans[:80]!r} is declared twice", where, "counted once")
            continue
        labels.append(ans)
        known.add(ans)
        value = child.get("value")
        if value:
            known.add(value)
    return labels, known


def _taxonomy(node: ET.Element, where: str, problem) -> tuple[dict, list[str]]:
    """A Taxonomy's tree (name -> subtree) and its leaf paths joined with "/".

    An explicit stack with parent links: a tree nested thousands of levels deep hits no
    recursion limit, and only leaves build their path string (within TAXONOMY_BUDGET).
    """
    tree: dict = {}
    leaves: list[str] = []
    seen: set[str] = set()
    budget = TAXONOMY_BUDGET
    # (element, its subtree, link to its path: (parent link, name) or None, path length)
    stack: list[tuple[ET.Element, dict, Any, int]] = [(node, tree, None, 0)]
    while stack:
        parent, sub, link, length = stack.pop()
        kids = []
        for child in parent:
            if not isinstance(child.tag, str) or child.tag.lower() != "choice":
                continue
            ans = _answer(child)
            if not ans:
                problem(f"a Taxonomy Choice without a value (depth {_depth(link) + 1})", where,
                        "ignored with its branch")
                continue
            if "/" in ans:
                problem(f"Taxonomy Choice {ans[:80]!r} contains '/', which joins the levels of a "
                        "path in the report", where, "its paths may read ambiguously")
            if ans in sub:
                problem(f"Taxonomy Choice {ans[:80]!r} is declared twice at depth "
                        f"{_depth(link) + 1}", where, "its branches are merged")
                child_tree = sub[ans]
            else:
                child_tree = sub[ans] = {}
                value = child.get("value")
                if value and value != ans:
                    sub.setdefault(value, child_tree)
            node_length = length + len(ans) + 1
            budget -= node_length
            if budget < 0:
                raise _Skip(f"Taxonomy too large: the paths of its choices exceed {TAXONOMY_BUDGET:,} "
                            "characters in all (too deep or too wide)", where)
            kids.append((child, child_tree, (link, ans), node_length))
        if not kids and link is not None:
            parts = []
            while link is not None:
                link, part = link
                parts.append(part)
            leaf = "/".join(reversed(parts))
            if leaf not in seen:
                seen.add(leaf)
                leaves.append(leaf)
        stack.extend(reversed(kids))
    return tree, leaves


def _depth(link: Any) -> int:
    n = 0
    while link is not None:
        link, n = link[0], n + 1
    return n


def _children_values(node: ET.Element, child_tag: str) -> list[str]:
    """Answers of a control's child tags (kept for callers outside this module)."""
    return _declared(node, child_tag, "", lambda *a: None)[0]


def parse_config(xml: str, *, strict: bool = False) -> LabelingConfig:
    """Parse a labeling config.

    Parameters
    ----------
    xml : str
        The labeling config as stored in the project (``label_config``).
    strict : bool
        Config mistakes that leave the config usable (an unknown control tag, a control on
        the wrong kind of object, a Pairwise without two objects, a Number range that is
        not numbers, answers declared twice or without a value, ...) raise instead of
        being skipped or ignored with a warning naming the tag and attribute.

    Returns
    -------
    LabelingConfig

    Raises
    ------
    AdapterError
        Not XML, no usable control tag, a control without ``name``/``toName``, duplicate
        names, a ``toName`` naming no object tag, a bad ``maxRating`` (always, whatever
        ``strict``).
    """
    if not isinstance(xml, str) or not xml.strip().lstrip("\ufeff"):
        raise _bad("empty or not a string")
    try:
        root = ET.fromstring(xml.lstrip().lstrip("\ufeff"))   # a byte-order mark is not XML
    except ET.ParseError as exc:
        raise _bad(f"not well-formed XML ({exc})") from None
    objects: dict[str, ObjectSpec] = {}
    raw_controls: list[ET.Element] = []
    conversations: list[str] = []
    warnings: list[str] = []

    dropped = 0

    def problem(msg: str, where: str, consequence: str) -> None:
        nonlocal dropped
        if strict:
            raise _bad(msg, where)
        if len(warnings) < MAX_WARNINGS:
            warnings.append(f"{where}: {msg}; {consequence}")
        else:
            dropped += 1

    for node in root.iter():
        if not isinstance(node.tag, str):
            continue  # comments / processing instructions
        low = node.tag.lower()
        if low in _LAYOUT:
            continue
        # <Image valueList="$pages">: one image per page (multi-page documents)
        shown = node.get("value") if node.get("value") is not None else node.get("valueList")
        if low in _CONVERSATION_OBJECTS and node.get("name") and shown is not None:
            # Chat shows task data and collects the messages annotators write (toName may
            # name itself): an object, whose own messages are not answers (one warning)
            _add_object(objects, node, shown)
            conversations.append(node.get("name", ""))
        elif node.get("toName") is not None or low in SUPPORTED_CONTROLS or low in UNSUPPORTED_CONTROLS:
            raw_controls.append(node)
        elif node.get("name") is not None and shown is not None:
            _add_object(objects, node, shown)

    controls: dict[str, ControlSpec] = {}
    skipped: set[str] = set()
    for node in raw_controls:
        low = node.tag.lower()
        name = node.get("name")
        where = f"config.{node.tag}[name={name}]"
        if low == "relations":   # no toName, and Label Studio accepts it without a name
            rel = _relations_spec(node, root, where, problem)
            if rel.name in controls or rel.name in skipped:
                raise _bad(f"two control tags named {rel.name!r}", where)
            if any(c.family == "relations" for c in controls.values()):
                warnings.append(f"{where}: a second Relations tag; Label Studio reads the first only, "
                                f"so control {rel.name!r} is skipped")
                skipped.add(rel.name)
                continue
            controls[rel.name] = rel
            continue
        if not name:
            raise _bad(f"{node.tag} without a name attribute", f"config.{node.tag}")
        if name in controls or name in skipped:
            raise _bad(f"two control tags named {name!r}", where)
        if low in UNSUPPORTED_CONTROLS:
            warnings.append(f"control {name!r} ({node.tag}) is not supported by ls-agreement; skipped")
            skipped.add(name)
            continue
        if low not in SUPPORTED_CONTROLS:
            msg = f"unknown control tag {node.tag} (name {name!r})"
            if strict:
                raise _bad(msg, where)
            warnings.append(msg + "; skipped")
            skipped.add(name)
            continue
        to_attr = node.get("toName") or ""
        to_name = [t.strip() for t in to_attr.split(",") if t.strip()]
        if node.get("toName") is not None and not to_name:
            # an empty toName names no tag: Label Studio's validator refuses it too
            raise _bad(f"{node.tag} {name!r} has no toName (toName={to_attr!r} names no tag)", where)
        try:
            to_name = _bound_objects(node, name, to_name, objects, root, where)
        except _Skip as exc:
            if strict:
                raise _bad(exc.message, exc.where) from None
            warnings.append(f"{exc.where}: {exc.message}; control {name!r} skipped")
            skipped.add(name)
            continue
        if name in objects:
            problem(f"control {name!r} has the name of an object tag (names must be unique)",
                    where, "kept")
        try:
            spec = _make_spec(node, name, to_name, [objects[t].tag for t in to_name], objects, root,
                              where, problem)
        except _Merged as exc:
            warnings.append(f"{where}: {exc.message}")
            skipped.add(name)
            continue
        except _Skip as exc:
            if strict:
                raise _bad(exc.message, exc.where) from None
            warnings.append(f"{exc.where}: {exc.message}; control {name!r} skipped")
            skipped.add(name)
            continue
        if spec is None:
            warnings.append(f"control {name!r} ({node.tag} on {to_attr or 'no object'}) is not supported; skipped")
            skipped.add(name)
            continue
        _per_region(node, spec)
        controls[name] = spec
    for chat in conversations:
        skipped.add(chat)
        on_it = [(n, s.family == "per_region") for n, s in controls.items() if chat in s.to_name]
        per_message = ", ".join(repr(n) for n, per in on_it if per)
        whole = ", ".join(repr(n) for n, per in on_it if not per)
        measured = "; ".join(
            ([f"the answers given per message by {per_message}, each compared with the other annotators' "
              "answers to the same message (same role and content)"] if per_message else [])
            + ([f"the answers on the whole conversation by {whole}"] if whole else [])) or "nothing on it"
        warnings.append(f"Chat {chat!r} is not measured itself: its 'chatmessage' results are the messages of "
                        "the conversation (read from the task data, or written by the annotator when the Chat is "
                        "editable or has an llm), the thing being judged, not a judgement to compare across "
                        f"annotators. Measured: {measured}")
    if dropped:
        warnings.append(f"... and {dropped} more config warnings")
    if not controls:
        # a config Label Studio accepts, with nothing this plugin measures, is not invalid
        why = "; ".join(w for w in warnings if "skipped" in w or "not measured" in w)[:600]
        raise Unmeasured("no measurable control in the labeling config" + (f" ({why})" if why else ""),
                         field="config")
    return LabelingConfig(controls=controls, objects=objects, warnings=warnings, skipped=skipped)


# object tags that also collect what annotators write (Chat, Label Studio Enterprise)
_CONVERSATION_OBJECTS = {"chat"}
# control families answered once per task, whatever object they are shown beside: measured
# even when they name no object tag
_OBJECTLESS_FAMILIES = {"choices", "scalars", "text"}


def _add_object(objects: dict[str, ObjectSpec], node: ET.Element, shown: str) -> None:
    name = node.get("name", "")
    if name in objects:
        raise _bad(f"two object tags named {name!r}", f"config.{node.tag}[name={name}]")
    objects[name] = ObjectSpec(name=name, tag=node.tag, value=shown)


def _bound_objects(node: ET.Element, name: str, to_name: list[str], objects: dict[str, ObjectSpec],
                   root: ET.Element, where: str) -> list[str]:
    """The object tags a control labels, as Label Studio binds them.

    A control without ``toName`` is bound to the only object tag when there is exactly one
    (the editor's ``Tree.extractNames``); with several, a per-task classification (Choices,
    Rating, TextArea, ...) is still measured, bound to none. A ``toName`` naming another
    control (Choices labelling a Choices) is valid for Label Studio but leaves nothing this
    plugin can tie the answers to: skipped. A name no tag has is refused, as Label Studio's
    validator refuses it.

    Raises
    ------
    AdapterError
        ``toName`` names no tag of the config.
    _Skip
        No object to bind and the control needs one; ``toName`` names a control tag.
    """
    low = node.tag.lower()
    if not to_name:
        if len(objects) == 1:
            return list(objects)
        if SUPPORTED_CONTROLS.get(low) in _OBJECTLESS_FAMILIES:
            return []
        raise _Skip(f"{node.tag} {name!r} has no toName and the config has {len(objects)} object tags, "
                    "so the object it draws on is unknown", f"{where}.toName")
    missing = [t for t in to_name if t not in objects]
    if missing:
        names = {n.get("name") for n in root.iter() if isinstance(n.tag, str) and n.get("name")}
        unknown = [t for t in missing if t not in names]
        if unknown:
            raise _bad(f"{node.tag} {name!r} points to unknown object(s) {unknown}: no tag of the config "
                       "has that name", where)
        raise _Skip(f"{node.tag} {name!r} labels {missing}, which are control tags, not objects showing "
                    "task data", f"{where}.toName")
    return to_name


def _relations_spec(node: ET.Element, root: ET.Element, where: str, problem) -> ControlSpec:
    """The ``Relations`` control: its ``Relation`` labels; named ``"relations"`` (or the first
    free ``relations_<n>``) when the tag has no name, as Label Studio allows."""
    name = node.get("name")
    if not name:
        taken = {n.get("name") for n in root.iter() if isinstance(n.tag, str)}
        name, k = "relations", 1
        while name in taken:
            name, k = f"relations_{k}", k + 1
    spec = ControlSpec(name=name, tag=node.tag, to_name=[], object_tags=[], family="relations",
                       kind="relations", attrs=dict(node.attrib), data_keys=[])
    labels, known = _declared(node, "relation", where, problem)
    spec.labels, spec.known = labels or None, frozenset(known)
    return spec


# control families whose answers Label Studio can attach to each region (PerRegionMixin)
_PER_REGION_FAMILIES = {"choices", "text", "scalars"}


def _per_region(node: ET.Element, spec: ControlSpec) -> None:
    """``perRegion="true"``: one answer per region, family ``per_region``, kind ``attributes``;
    the answer's own family and kind are kept in ``answer_family`` / ``answer_kind``."""
    flag = next((v for k, v in node.attrib.items() if k.lower() == "perregion"), None)
    if flag is None or flag.strip().lower() != "true" or spec.family not in _PER_REGION_FAMILIES:
        return
    spec.answer_family, spec.answer_kind = spec.family, spec.kind
    spec.family, spec.kind = "per_region", "attributes"


def _image_region_of(obj: str, root: ET.Element) -> str | None:
    """Region tool used with a plain Labels tag on an image (Rectangle + Labels)."""
    found = []
    for node in root.iter():
        if not isinstance(node.tag, str):
            continue
        low = node.tag.lower()
        if (low in _REGION_KIND or low in _IMAGE_TOOLS) and obj in (node.get("toName") or "").split(","):
            found.append(low)
    if "polygon" in found and "rectangle" in found:
        # both tools label through it (the OCR template): rectangles are compared as polygons
        return "polygon"
    return found[0] if found else None


def _object_attrs(root: ET.Element, name: str) -> dict[str, str]:
    """The XML attributes of the object tag named ``name``, names lower-cased (Label Studio
    reads tag attributes case-insensitively)."""
    for node in root.iter():
        if (isinstance(node.tag, str) and node.get("name") == name and node.get("value") is not None
                and node.get("toName") is None):
            return {k.lower(): v for k, v in node.attrib.items()}
    return {}


def _track_tools(video: str, root: ET.Element) -> list[str]:
    """Names of the VideoRectangle controls drawing on the Video named ``video``."""
    return [n.get("name") or "" for n in root.iter()
            if isinstance(n.tag, str) and n.tag.lower() == "videorectangle"
            and video in [t.strip() for t in (n.get("toName") or "").split(",")]]


def _track_labels(video: str, root: ET.Element, problem) -> tuple[list[str] | None, frozenset, bool]:
    """The labels of a Video's tracks: those of every ``Labels`` tag on that Video (Label
    Studio puts the selected ones in the VideoRectangle result's ``value.labels``), the
    strings that stand for them, and whether some are loaded from task data."""
    labels: list[str] = []
    known: set[str] = set()
    dynamic = False
    for node in root.iter():
        if (not isinstance(node.tag, str) or node.tag.lower() != "labels"
                or video not in [t.strip() for t in (node.get("toName") or "").split(",")]):
            continue
        dynamic = dynamic or (node.get("value") or "").startswith("$")
        got, stand = _declared(node, "label", f"config.{node.tag}[name={node.get('name')}]", problem)
        labels.extend(x for x in got if x not in labels)
        known |= stand
    return labels or None, frozenset(known), dynamic


def _range_bound(node: ET.Element, key: str, where: str, problem) -> float | None:
    raw = node.get(key)
    if raw is None or raw.strip() == "":
        return None
    try:
        v = float(raw) if len(raw) <= 40 else math.nan
    except ValueError:
        v = math.nan
    if not math.isfinite(v):
        problem(f"{key}={raw[:40]!r} is not a finite number", f"{where}.{key}", "the range is ignored")
        raise _NoRange
    return v


class _NoRange(Exception):
    pass


def _make_spec(node: ET.Element, name: str, to_name: list[str], object_tags: list[str],
               objects: dict[str, ObjectSpec], root: ET.Element, where: str,
               problem) -> ControlSpec | None:
    low = node.tag.lower()
    family = SUPPORTED_CONTROLS[low]
    attrs = dict(node.attrib)
    obj_low = object_tags[0].lower() if object_tags else ""
    for t in to_name:
        if objects[t].data_key == "":
            raise _Skip(f"object {t!r} reads the empty data key '$'", f"config.{objects[t].tag}[name={t}].value")
    spec = ControlSpec(name=name, tag=node.tag, to_name=to_name, object_tags=object_tags,
                       family=family, kind="", attrs=attrs,
                       data_keys=[objects[t].data_key for t in to_name])
    dyn = node.get("value")
    spec.dynamic = bool(dyn) and dyn.startswith("$")   # Labels/Choices loaded from task data
    if low == "taxonomy" and node.get("apiUrl"):
        spec.dynamic = True

    def closed_set(child_tag: str, what: str) -> list[str]:
        labels, known = _declared(node, child_tag, where, problem)
        if not labels and not spec.dynamic:
            problem(f"{node.tag} {name!r} declares no {what}", where, "any value is accepted")
        spec.known = frozenset(known)
        return labels

    if family in ("regions", "masks", "shapes") and obj_low != "image" and not (low == "ocrlabels" and obj_low == "pdf"):
        raise _Skip(f"{node.tag} needs an Image object, but {to_name[0]!r} is a {object_tags[0]}",
                    f"{where}.toName")
    if low == "ocrlabels":
        # labelled boxes on the pages of a PDF (or an image); their ``ocrtext`` is the text
        # under the box, so the box and its labels say it all
        spec.region, spec.kind = "rectangle", "boxes"
        spec.labels = closed_set("label", "labels")
    elif family == "regions":
        region = low.replace("labels", "")
        spec.region, spec.kind = region, _REGION_KIND[region]
        spec.labels = closed_set("label", "labels") if low.endswith("labels") else None
    elif family in ("masks", "shapes"):
        spec.region = low.replace("labels", "")
        spec.kind = _IMAGE_TOOLS[spec.region][1]
        spec.labels = closed_set("label", "labels") if low.endswith("labels") else None
    elif family == "labels":  # Labels: spans on text, regions on images, 1-d regions on media
        if obj_low in ("text", "hypertext"):
            spec.family, spec.kind = "spans", "spans"
        elif obj_low == "image":
            region = _image_region_of(to_name[0], root) or "rectangle"
            spec.family, spec.kind = _IMAGE_TOOLS.get(region, ("regions", _REGION_KIND.get(region)))
            spec.region = region
        elif obj_low in _INTERVAL_AXIS and obj_low != "video":
            # (Labels on a Video label its VideoRectangle regions, not timeline ones)
            spec.family, spec.region, spec.kind = "intervals", _INTERVAL_AXIS[obj_low], "intervals"
            spec.object_attrs = _object_attrs(root, to_name[0])
        elif obj_low == "video" and _track_tools(to_name[0], root):
            tools = ", ".join(map(repr, _track_tools(to_name[0], root)))
            raise _Merged(f"its labels are the labels of the tracks drawn with {tools} (Label Studio "
                          "stores them in the VideoRectangle results), measured there")
        else:
            return None
        spec.labels = closed_set("label", "labels")
    elif family == "intervals":
        axis = _INTERVAL_OBJECT[low]
        if _INTERVAL_AXIS.get(obj_low) != axis:
            wanted = {"timeline": "a Video", "timeseries": "a TimeSeries", "paragraphs": "a Paragraphs"}[axis]
            raise _Skip(f"{node.tag} needs {wanted} object, but {to_name[0]!r} is a {object_tags[0]}",
                        f"{where}.toName")
        spec.region, spec.kind = axis, "intervals"
        spec.object_attrs = _object_attrs(root, to_name[0])
        spec.labels = closed_set("label", "labels")
    elif family == "tracks":
        if obj_low != "video":
            raise _Skip(f"{node.tag} needs a Video object, but {to_name[0]!r} is a {object_tags[0]}",
                        f"{where}.toName")
        spec.kind = "tracks"
        spec.labels, spec.known, spec.dynamic = _track_labels(to_name[0], root, problem)
    elif family == "spans":
        spec.labels, spec.kind = closed_set("label", "labels"), "spans"
    elif family == "text":
        spec.kind = "text"
    elif family == "choices":
        if low == "taxonomy":
            if node.get("value", "").startswith("$"):
                spec.dynamic = True
            tree, leaves = _taxonomy(node, where, problem)
            if not leaves and not spec.dynamic:
                problem(f"Taxonomy {name!r} declares no choices", where, "any path is accepted")
            spec.labels, spec.multiple, spec.kind = leaves, True, "sets"
            spec.taxonomy_tree = tree if leaves and not spec.dynamic else None
        else:
            spec.labels = closed_set("choice", "choices") or None  # dynamic choices: open
            raw = node.get("choice") or "single"
            mode = raw.lower()
            if mode not in _CHOICE_MODES:
                problem(f"choice={raw[:40]!r}; expected one of {', '.join(_CHOICE_MODES)}",
                        f"{where}.choice", "taken as single")
                mode = "single"
            spec.multiple = mode == "multiple"
            spec.kind = "sets" if spec.multiple else "scalars"
    elif family == "scalars":
        spec.kind = "scalars"
        if low == "rating":
            raw = node.get("maxRating", "5")
            try:
                top = int(raw) if len(raw) <= 18 else -1  # no 4,000-digit int parsing either
            except ValueError:
                top = -1
            if top < 1:
                # Label Studio's validator accepts it, and its editor then shows no scale
                raise _Skip(f"Rating {name!r} has maxRating {raw[:40]!r}; expected a positive integer",
                            f"config.Rating[name={name}].maxRating")
            spec.scale = (1, top)   # checks use the range: maxRating may be 10^8
            # the answers are listed only for a scale a person could use
            spec.labels = [str(k) for k in range(1, top + 1)] if top <= _LISTED_SCALE else None
        elif low == "number":
            try:
                lo, hi = _range_bound(node, "min", where, problem), _range_bound(node, "max", where, problem)
            except _NoRange:
                lo = hi = None
            if lo is not None and hi is not None and lo > hi:
                problem(f"min ({lo:g}) is above max ({hi:g})", f"{where}.min", "the range is ignored")
                lo = hi = None
            spec.number_range = (lo, hi)
    elif family == "ranking":
        if obj_low != "list":
            raise _Skip(f"Ranker needs a List object, but {to_name[0]!r} is a {object_tags[0]}",
                        f"{where}.toName")
        spec.kind = "rankings"
        buckets: list[str] = []
        for b in node:
            if not isinstance(b.tag, str) or b.tag.lower() != "bucket":
                continue
            bname = b.get("name") or b.get("value")
            if not bname:
                problem("a Bucket without a name", where, "ignored")
            elif bname == "_":
                problem("a Bucket named '_', the key Label Studio uses for the items left out "
                        "of every bucket", where, "ignored")
            elif bname in buckets:
                problem(f"Bucket {bname[:80]!r} is declared twice", where, "counted once")
            else:
                buckets.append(bname)
        spec.buckets = buckets or None
        spec.labels = buckets or None
    elif family == "pairwise":
        if len(to_name) != 2:
            raise _Skip(f"Pairwise needs exactly two objects in toName, got {len(to_name)}",
                        f"{where}.toName")
        spec.kind, spec.labels = "pairwise", ["left", "right"]
    return spec

"""What the generator reads from a labeling config: object tags and control tags.

Deliberately independent of ``ls_agreement.adapters.config``: the yardstick must not share
the parser it judges. Attribute names are read case-insensitively, as Label Studio does
(``toName`` = ``toname``). Facts follow Label Studio 1.23.2's editor
(``web/libs/editor/src``): a control without ``toName`` is bound to the only object tag
when there is exactly one (``core/Tree.tsx`` ``extractNames``); a ``Choice``/``Label``
puts its ``alias`` in results when it has one, else its ``value``.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["ObjectTag", "ControlTag", "ParsedConfig", "parse", "OBJECT_TAGS", "REGION_TOOLS",
           "LABELED_TOOLS", "CLASSIFICATIONS"]

# object tags (lower case) that show task data
OBJECT_TAGS = {"text", "hypertext", "image", "audio", "audioplus", "video", "paragraphs",
               "timeseries", "list", "table", "pdf", "chat"}
# controls that draw a region and carry its labels themselves: tag -> result type
LABELED_TOOLS = {
    "rectanglelabels": "rectanglelabels", "polygonlabels": "polygonlabels",
    "keypointlabels": "keypointlabels", "ellipselabels": "ellipselabels",
    "brushlabels": "brushlabels", "bitmasklabels": "bitmasklabels",
    "vectorlabels": "vectorlabels", "hypertextlabels": "hypertextlabels",
    "paragraphlabels": "paragraphlabels", "timeserieslabels": "timeserieslabels",
    "timelinelabels": "timelinelabels", "ocrlabels": "ocrlabels",
}
# controls that draw a region without labels (a <Labels> on the same object labels it)
REGION_TOOLS = {"rectangle", "polygon", "keypoint", "ellipse", "brush", "magicwand",
                "bitmask", "vector", "videorectangle"}
# controls answered once per task (or once per region when perRegion="true")
CLASSIFICATIONS = {"choices", "taxonomy", "rating", "number", "datetime", "textarea",
                   "ranker", "pairwise"}

ChoiceMode = Literal["single", "multiple"]


@dataclass
class ObjectTag:
    """An object tag: ``name``, lower-case ``tag``, attributes (lower-case keys) and the
    task-data key it reads (``value="$key"`` or ``valueList="$key"``; None for a literal)."""

    name: str
    tag: str
    attrs: dict[str, str]
    data_key: str | None
    multi: bool = False     # <Image valueList="$pages">: one image per item


@dataclass
class ControlTag:
    """A control tag as the generator needs it.

    ``options`` are the declared answers (Label/Choice values or aliases), ``tree`` the
    nested Choice tree (Taxonomy, nested Choices) as ``{value: subtree}``, ``dynamic_key``
    the task-data key of ``value="$key"`` options, ``buckets`` the Ranker's Bucket names.
    ``ancestors`` holds the attributes of enclosing ``<View>`` tags (``visibleWhen``,
    ``whenRole``), innermost last.
    """

    name: str | None
    tag: str
    to_names: list[str]
    attrs: dict[str, str]
    options: list[str] = field(default_factory=list)
    tree: dict[str, dict] = field(default_factory=dict)
    dynamic_key: str | None = None
    buckets: list[str] = field(default_factory=list)
    ancestors: list[dict[str, str]] = field(default_factory=list)

    @property
    def per_region(self) -> bool:
        return self.attrs.get("perregion", "").lower() == "true"

    @property
    def choice_mode(self) -> ChoiceMode:
        return "multiple" if self.attrs.get("choice", "single").lower() == "multiple" else "single"



@dataclass
class ParsedConfig:
    xml: str
    objects: dict[str, ObjectTag]
    controls: list[ControlTag]

    def controls_on(self, obj: str) -> list[ControlTag]:
        return [c for c in self.controls if obj in c.to_names]


def _lower(attrs: dict[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in attrs.items()}


def _answer(el: ET.Element) -> str | None:
    a = _lower(el.attrib)
    return a.get("alias") or a.get("value")


def _tree(el: ET.Element) -> dict[str, dict]:
    """Nested ``<Choice>`` children as ``{value: subtree}`` (order kept, duplicates merged:
    Label Studio shows a duplicated value once)."""
    out: dict[str, dict] = {}
    for child in el:
        if not isinstance(child.tag, str):
            continue
        if child.tag.lower() == "choice":
            v = _answer(child)
            if v is not None:
                out.setdefault(v, {}).update(_tree(child))
        elif child.tag.lower() == "view":     # Choices may group Choice tags in Views
            out.update(_tree(child))
    return out


def _labels(el: ET.Element) -> list[str]:
    out: list[str] = []
    for child in el.iter():
        if child is el or not isinstance(child.tag, str):
            continue
        if child.tag.lower() in ("label", "relation"):
            v = _answer(child)
            if v is not None and v not in out:
                out.append(v)
    return out


def parse(xml: str) -> ParsedConfig:
    """Object and control tags of a labeling config (``xml``), in document order."""
    root = ET.fromstring(xml)
    objects: dict[str, ObjectTag] = {}
    controls: list[ControlTag] = []

    def walk(el: ET.Element, views: list[dict[str, str]]) -> None:
        tag = el.tag.lower() if isinstance(el.tag, str) else ""
        a = _lower(el.attrib)
        if tag == "view":
            views = views + [a]
        if tag in OBJECT_TAGS and a.get("name"):
            raw = a.get("valuelist") or a.get("value") or ""
            key = raw[1:] if raw.startswith("$") else None
            objects[a["name"]] = ObjectTag(a["name"], tag, a, key, multi="valuelist" in a)
        elif tag in LABELED_TOOLS or tag in REGION_TOOLS or tag in CLASSIFICATIONS \
                or tag in ("labels", "relations"):
            to = [t.strip() for t in a.get("toname", "").split(",") if t.strip()]
            value = a.get("value", "")
            c = ControlTag(a.get("name"), tag, to, a, ancestors=list(views))
            if value.startswith("$") and tag not in ("textarea",):
                c.dynamic_key = value[1:]
            if tag in ("choices", "taxonomy"):
                c.tree = _tree(el)
                c.options = list(c.tree)
            elif tag == "ranker":
                c.buckets = [b.get("name") for b in el.iter()
                             if isinstance(b.tag, str) and b.tag.lower() == "bucket" and b.get("name")]
            else:
                c.options = _labels(el)
            controls.append(c)
            return     # a control's children are its options, not tags of their own
        for child in el:
            walk(child, views)

    walk(root, [])
    # Label Studio binds a control without toName to the only object tag (core/Tree.tsx)
    if len(objects) == 1:
        only = next(iter(objects))
        for c in controls:
            if not c.to_names and c.tag != "relations":
                c.to_names = [only]
    return ParsedConfig(xml, objects, controls)

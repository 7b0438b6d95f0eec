"""Label Studio labeling configs (XML) -> one :class:`ControlSpec` per control tag.

A *control* tag (has ``name`` and ``toName``: RectangleLabels, Choices, ...) produces
results; an *object* tag (has ``name`` and ``value``: Image, Text, List, ...) shows task
data. The spec records what the adapters need: which object a control annotates, its
closed answer set (labels, choices, taxonomy leaves, buckets) and its options
(single/multiple choice, rating scale, ...). Reference: Label Studio tag docs
(https://labelstud.io/tags/) and ``label-studio.md`` of the project specs.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from .errors import AdapterError

__all__ = ["ControlSpec", "ObjectSpec", "LabelingConfig", "parse_config",
           "SUPPORTED_CONTROLS", "UNSUPPORTED_CONTROLS"]

# lower-case tag -> family module that adapts its results
SUPPORTED_CONTROLS: dict[str, str] = {
    "rectanglelabels": "regions", "rectangle": "regions",
    "polygonlabels": "regions", "polygon": "regions",
    "keypointlabels": "regions", "keypoint": "regions",
    "labels": "labels", "hypertextlabels": "spans",
    "textarea": "text",
    "choices": "choices", "taxonomy": "choices",
    "rating": "scalars", "number": "scalars", "datetime": "scalars",
    "ranker": "ranking",
    "pairwise": "pairwise",
}
# Real Label Studio controls this plugin does not measure (yet): skipped with a warning.
UNSUPPORTED_CONTROLS = {
    "brushlabels", "brush", "ellipselabels", "ellipse", "paragraphlabels",
    "timeserieslabels", "videorectangle", "relations", "relation", "magicwand",
    "bitmasklabels", "bitmask", "vectorlabels", "vector", "timelinelabels",
    "matrix", "datetime-range", "smartlabels",
}
# Tags that never carry results (layout, children of controls).
_LAYOUT = {"view", "header", "style", "filter", "collapse", "panel", "label", "choice",
           "bucket", "relation", "shortcut", "hypertext-label", "ranker-bucket"}

_REGION_KIND = {"rectangle": "boxes", "polygon": "polygons", "keypoint": "keypoints"}


@dataclass
class ObjectSpec:
    """An object tag: ``<Image name="image" value="$image"/>``."""

    name: str
    tag: str            # as written, e.g. "Image"
    value: str          # attribute as written ("$image" or a literal)

    @property
    def data_key(self) -> str | None:
        """The task.data key the object reads, or None for a literal value."""
        return self.value[1:] if self.value.startswith("$") else None


@dataclass
class ControlSpec:
    """One control tag of the config, with everything the family adapters need."""

    name: str
    tag: str                          # as written, e.g. "RectangleLabels"
    to_name: list[str]                # object names (Pairwise has two)
    object_tags: list[str]            # their tag types, e.g. ["Image"]
    family: str                       # adapter module: regions|spans|text|choices|scalars|ranking|pairwise
    kind: str                         # value kind of the common model
    labels: list[str] | None = None   # Label values / Choice values / taxonomy leaf paths
    multiple: bool = False            # Choices choice="multiple"; Taxonomy is always multiple
    region: str | None = None         # rectangle|polygon|keypoint for image regions
    buckets: list[str] | None = None  # Ranker Bucket names, in config order
    attrs: dict[str, str] = field(default_factory=dict)   # the raw XML attributes, data only
    data_keys: list[str | None] = field(default_factory=list)  # task.data key per object
    scale: tuple[int, int] | None = None  # Rating: 1..maxRating, never materialized

    @property
    def known_labels(self) -> frozenset[str]:
        """Every answer the config declares; for a Taxonomy every prefix of a leaf too,
        since a selection may stop at an inner node. Computed once, never from attributes."""
        cached = self.__dict__.get("_known")
        if cached is None:
            out: set[str] = set()
            for leaf in self.labels or ():
                if self.lower == "taxonomy":
                    parts = leaf.split("/")
                    out.update("/".join(parts[:k]) for k in range(1, len(parts) + 1))
                else:
                    out.add(leaf)
            cached = self.__dict__["_known"] = frozenset(out)
        return cached

    @property
    def object_name(self) -> str:
        return ",".join(self.to_name)

    @property
    def lower(self) -> str:
        return self.tag.lower()


@dataclass
class LabelingConfig:
    """A parsed labeling config: controls (by name, config order) and objects."""

    controls: dict[str, ControlSpec]
    objects: dict[str, ObjectSpec]
    warnings: list[str]
    skipped: set[str] = field(default_factory=set)   # names of unsupported controls


_LISTED_SCALE = 100   # Rating answers listed (options) up to this maxRating


def _bad(msg: str, field: str = "config") -> AdapterError:
    return AdapterError(f"invalid labeling config: {msg}", field=field)


def _taxonomy_paths(node: ET.Element, prefix: tuple[str, ...]) -> list[str]:
    """Leaf paths of a Taxonomy's nested Choice tree, joined with "/"."""
    # an explicit stack: a config nested thousands of levels deep must not hit the
    # interpreter's recursion limit
    out: list[str] = []
    stack: list[tuple[ET.Element, tuple[str, ...]]] = [(node, prefix)]
    while stack:
        parent, path = stack.pop()
        kids = []
        for child in parent:
            if not isinstance(child.tag, str) or child.tag.lower() != "choice":
                continue
            value = child.get("value") or child.get("alias")
            if value is None:
                raise _bad(f"Taxonomy Choice without value under {'/'.join(path) or 'root'}")
            kids.append((child, path + (value,)))
        if not kids and path != prefix:
            out.append("/".join(path))
        stack.extend(reversed(kids))
    return out


def _children_values(node: ET.Element, child_tag: str) -> list[str]:
    out: list[str] = []
    for child in node.iter():
        if child is not node and child.tag.lower() == child_tag:
            value = child.get("value")
            if value is None:
                value = child.get("alias")
            if value is not None:
                out.append(value)
    return out


def parse_config(xml: str, *, strict: bool = False) -> LabelingConfig:
    """Parse a labeling config.

    Parameters
    ----------
    xml : str
        The labeling config as stored in the project (``label_config``).
    strict : bool
        Unknown control tags raise instead of being skipped with a warning.

    Returns
    -------
    LabelingConfig

    Raises
    ------
    AdapterError
        Not XML, no control tag, a control without ``name``/``toName``, duplicate
        names, or a ``toName`` naming no object tag (always, whatever ``strict``).
    """
    if not isinstance(xml, str) or not xml.strip():
        raise _bad("empty or not a string")
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise _bad(f"not well-formed XML ({exc})") from None
    objects: dict[str, ObjectSpec] = {}
    raw_controls: list[ET.Element] = []
    warnings: list[str] = []
    for node in root.iter():
        if not isinstance(node.tag, str):
            continue  # comments / processing instructions
        low = node.tag.lower()
        if low in _LAYOUT:
            continue
        if node.get("toName") is not None or low in SUPPORTED_CONTROLS or low in UNSUPPORTED_CONTROLS:
            raw_controls.append(node)
        elif node.get("name") is not None and node.get("value") is not None:
            name = node.get("name", "")
            if name in objects:
                raise _bad(f"two object tags named {name!r}", f"config.{node.tag}[name={name}]")
            objects[name] = ObjectSpec(name=name, tag=node.tag, value=node.get("value", ""))

    controls: dict[str, ControlSpec] = {}
    skipped: set[str] = set()
    for node in raw_controls:
        low = node.tag.lower()
        name = node.get("name")
        where = f"config.{node.tag}[name={name}]"
        if not name:
            raise _bad(f"{node.tag} without a name attribute", f"config.{node.tag}")
        if name in controls:
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
        to_attr = node.get("toName")
        if not to_attr:
            raise _bad(f"{node.tag} {name!r} has no toName", where)
        to_name = [t.strip() for t in to_attr.split(",") if t.strip()]
        missing = [t for t in to_name if t not in objects]
        if missing:
            raise _bad(f"{node.tag} {name!r} points to unknown object(s) {missing}", where)
        spec = _make_spec(node, name, to_name, [objects[t].tag for t in to_name], objects, root)
        if spec is None:
            warnings.append(f"control {name!r} ({node.tag} on {to_attr}) is not supported; skipped")
            skipped.add(name)
            continue
        controls[name] = spec
    if not controls:
        raise _bad("no supported control tag")
    return LabelingConfig(controls=controls, objects=objects, warnings=warnings, skipped=skipped)


def _image_region_of(obj: str, root: ET.Element) -> str | None:
    """Region tool used with a plain Labels tag on an image (Rectangle + Labels)."""
    found = []
    for node in root.iter():
        if not isinstance(node.tag, str):
            continue
        low = node.tag.lower()
        if low in _REGION_KIND and obj in (node.get("toName") or "").split(","):
            found.append(low)
    return found[0] if found else None


def _make_spec(node: ET.Element, name: str, to_name: list[str], object_tags: list[str],
               objects: dict[str, ObjectSpec], root: ET.Element) -> ControlSpec | None:
    low = node.tag.lower()
    family = SUPPORTED_CONTROLS[low]
    attrs = dict(node.attrib)
    obj_low = object_tags[0].lower()
    spec = ControlSpec(name=name, tag=node.tag, to_name=to_name, object_tags=object_tags,
                       family=family, kind="", attrs=attrs,
                       data_keys=[objects[t].data_key for t in to_name])
    if family == "regions":
        region = low.replace("labels", "")
        spec.region, spec.kind = region, _REGION_KIND[region]
        spec.labels = _children_values(node, "label") if low.endswith("labels") else None
    elif family == "labels":  # Labels: spans on text, regions on images
        spec.labels = _children_values(node, "label")
        if obj_low in ("text", "hypertext"):
            spec.family, spec.kind = "spans", "spans"
        elif obj_low == "image":
            region = _image_region_of(to_name[0], root) or "rectangle"
            spec.family, spec.region, spec.kind = "regions", region, _REGION_KIND[region]
        else:
            return None
    elif family == "spans":
        spec.labels, spec.kind = _children_values(node, "label"), "spans"
    elif family == "text":
        spec.kind = "text"
    elif family == "choices":
        if low == "taxonomy":
            spec.labels, spec.multiple, spec.kind = _taxonomy_paths(node, ()), True, "set"
        else:
            spec.labels = _children_values(node, "choice") or None  # dynamic choices: open
            spec.multiple = (node.get("choice") or "single").lower() == "multiple"
            spec.kind = "set" if spec.multiple else "scalar"
    elif family == "scalars":
        spec.kind = "scalar"
        if low == "rating":
            raw = node.get("maxRating", "5")
            try:
                top = int(raw) if len(raw) <= 18 else -1  # no 4,000-digit int parsing either
            except ValueError:
                top = -1
            if top < 1:
                raise _bad(f"Rating {name!r} has maxRating {raw[:40]!r}; expected a positive integer",
                           f"config.Rating[name={name}].maxRating")
            spec.scale = (1, top)   # checks use the range: maxRating may be 10^8
            # the answers are listed only for a scale a person could use
            spec.labels = [str(k) for k in range(1, top + 1)] if top <= _LISTED_SCALE else None
    elif family == "ranking":
        spec.kind = "ranking"
        buckets = [b.get("name") or b.get("value") or "" for b in node if isinstance(b.tag, str)
                   and b.tag.lower() == "bucket"]
        spec.buckets = buckets or None
        spec.labels = buckets or None
    elif family == "pairwise":
        spec.kind, spec.labels = "pairwise", ["left", "right"]
    return spec

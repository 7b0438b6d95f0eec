"""What a parsed labeling config says, as typed data: one :class:`ControlSpec` per control
tag, one :class:`ObjectSpec` per object tag, in a :class:`LabelingConfig`
(:func:`~.config.parse_config` builds them)."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

__all__ = ["ControlSpec", "ObjectSpec", "LabelingConfig"]


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
    kind: str                         # value kind of the common model: a registry prefix (metrics KINDS)
    labels: list[str] | None = None   # answers as results hold them (alias or value); taxonomy leaf paths
    multiple: bool = False            # Choices choice="multiple"; Taxonomy is always multiple
    region: str | None = None         # rectangle|polygon|keypoint for image regions; the axis of
                                      # intervals: audio|timeline|timeseries|paragraphs
    buckets: list[str] | None = None  # Ranker Bucket names, in config order
    attrs: dict[str, str] = field(default_factory=dict)   # the raw XML attributes, data only
    # the first object's XML attributes, names lower-cased as Label Studio reads them
    # (timeformat of a TimeSeries, splitchannels of an Audio, textkey of Paragraphs), data only
    object_attrs: dict[str, str] = field(default_factory=dict)
    data_keys: list[str | None] = field(default_factory=list)  # task.data key per object
    scale: tuple[int, int] | None = None  # Rating: 1..maxRating, never materialized
    number_range: tuple[float | None, float | None] = (None, None)  # Number: min, max
    dynamic: bool = False             # answers loaded from task data (value="$..."/apiUrl): open
    # perRegion="true" (family per_region, kind attributes): the answer's own family and kind
    answer_family: str | None = None  # choices|text|scalars
    answer_kind: str | None = None    # scalars|sets|text
    # Every answer the config declares (values and aliases). A Taxonomy keeps a tree
    # instead (``taxonomy_tree``): name -> subtree, so that a path is checked by walking it,
    # never by materializing every prefix of every leaf. Both are filled by parse_config
    # from child tags only: no XML attribute ever reaches these names.
    known: frozenset = field(default_factory=frozenset, repr=False)
    taxonomy_tree: dict | None = field(default=None, repr=False)

    @property
    def known_labels(self) -> frozenset[str]:
        """Every flat answer the config declares (empty when none is declared)."""
        return self.known

    @property
    def closed(self) -> bool:
        """True when answers outside the declared set are mistakes (not dynamic, some declared)."""
        if self.dynamic:
            return False
        return bool(self.taxonomy_tree) if self.lower == "taxonomy" else bool(self.known)

    def unknown_path(self, path: list[str]) -> bool:
        """True when a Taxonomy path does not follow the declared tree (it may stop at an
        inner node: a selection of a whole branch)."""
        node = self.taxonomy_tree
        if node is None:
            return False
        for part in path:
            node = node.get(part)
            if node is None:
                return True
        return False

    @property
    def object_name(self) -> str:
        return ",".join(self.to_name)

    @cached_property
    def lower(self) -> str:
        """The tag lower-cased, as Label Studio reads tag names. Cached on the instance
        (``tag`` is never reassigned): the families read it for every result (issue 24)."""
        return self.tag.lower()


@dataclass
class LabelingConfig:
    """A parsed labeling config: controls (by name, config order) and objects."""

    controls: dict[str, ControlSpec]
    objects: dict[str, ObjectSpec]
    warnings: list[str]
    skipped: set[str] = field(default_factory=set)   # names of unsupported controls

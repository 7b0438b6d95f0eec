"""The report's sections for the quality views of a control: the annotator × annotator
matrix, agreement per label, agreement with references (ground truth, models) and error
types; and the interval type the whole report shares. Re-exported by :mod:`.model`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

Interval = tuple[Union[float, None], Union[float, None]]
_NO_INTERVAL: Interval = (None, None)


@dataclass
class AnnotatorPair:
    """Two annotators on the items both annotated (``a < b``): α read against the control's
    D̂e (docs/formulas.md "Annotator pairs"), its per-pair item-bootstrap interval, their mean
    distance, shared items. In the project matrix α is the item-weighted mean over controls,
    ``n_items`` the shared items summed over controls (no interval, no mean distance)."""

    a: str = ""
    b: str = ""
    alpha: float | None = None
    ci: Interval = _NO_INTERVAL
    mean_distance: float | None = None
    n_items: int = 0
    n_controls: int = 1


@dataclass
class PairMatrix:
    """The annotator × annotator matrix of one control (or of the project): pairs sharing at
    least ``min_items`` items among at most ``max_annotators`` annotators (the most active;
    the others in ``left_out``)."""

    annotators: list[str] = field(default_factory=list)
    pairs: list[AnnotatorPair] = field(default_factory=list)
    expected: str = "project"                  # each pair's α is read against the control's D̂e
    d_e: float | None = None
    min_items: int = 0
    max_annotators: int | None = None
    left_out: list[str] = field(default_factory=list)
    n_below_min: int = 0
    bootstrap: int = 0
    seed: int = 0


@dataclass
class LabelEntry:
    """One label of a label-bearing control: nominal α of "has the label" vs the rest."""

    alpha: float | None = None
    ci: Interval = _NO_INTERVAL
    support: int = 0                           # annotations (annotator × task) carrying it
    n_items: int = 0                           # tasks where anyone gave it


@dataclass
class LabelConfusion:
    """Two labels confused: annotator pairs on one task where one gave ``a`` but not ``b``
    and the other ``b`` but not ``a``."""

    a: str = ""
    b: str = ""
    count: int = 0


@dataclass
class ConfusionMatrix:
    """Symmetric pair counts of labels between two annotators on one task (diagonal: pairs
    agreeing on the label); ``counts[i][j]`` for ``labels[i]``, ``labels[j]``."""

    labels: list[str] = field(default_factory=list)
    counts: list[list[int]] = field(default_factory=list)


@dataclass
class LabelSection:
    """Agreement per label (``metrics/per_label.py``): labels by support, largest first; the
    most confused pairs; the full confusion matrix for single-choice controls."""

    labels: dict[str, LabelEntry] = field(default_factory=dict)
    confusions: list[LabelConfusion] = field(default_factory=list)
    confusion: ConfusionMatrix | None = None
    n_items: int = 0
    form: str = "canonical"
    bootstrap: int = 0
    seed: int = 0


@dataclass
class ReferenceIntervals:
    """Item-bootstrap intervals of an agreement with a reference."""

    similarity: Interval = _NO_INTERVAL
    alpha: Interval = _NO_INTERVAL


@dataclass
class ReferenceAgreement:
    """Agreement of one annotator (or model) with a reference — ground truth, the humans or
    the predictions (``metrics/reference.py``, docs/formulas.md §10): ``similarity`` = 1 −
    mean distance (null for distances not bounded by 1), ``alpha`` = 1 − mean distance /
    the control's D̂e, on ``n_items`` shared items."""

    similarity: float | None = None
    alpha: float | None = None
    mean_distance: float | None = None
    n_items: int = 0
    ci: ReferenceIntervals | None = None


@dataclass
class ModelAgreement:
    """One model version (``model:<version>``): with the humans (every human value on the
    items it predicted, each item once) and with ground truth."""

    humans: ReferenceAgreement | None = None
    ground_truth: ReferenceAgreement | None = None


@dataclass
class ErrorCounts:
    """Matched and unmatched regions (``metrics/error_types.py``, docs/formulas.md §11).
    Per annotator: ``missed``/``extra`` from their side, ``unmatched`` null; per control:
    each pair once, ``unmatched`` = both sides, ``missed``/``extra`` null. ``shares``:
    each disagreement category over their sum (``localization`` is *boundary* for spans)."""

    agreed: int = 0
    localization: int = 0
    label: int = 0
    both: int = 0
    missed: int | None = None
    extra: int | None = None
    unmatched: int | None = None
    disagreement: int = 0
    shares: dict[str, float | None] = field(default_factory=dict)


@dataclass
class ErrorTypesSection:
    """Error types of a region control (boxes, polygons, spans): overall and per annotator."""

    kind: str = ""
    threshold: float = 0.5
    overall: ErrorCounts = field(default_factory=ErrorCounts)
    annotators: dict[str, ErrorCounts] = field(default_factory=dict)

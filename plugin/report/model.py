"""The agreement report as typed data: project → control → task and annotator entries.

One report is built once (:func:`~ls_agreement.plugin.report.build.build_report`) and
read by attribute everywhere: push-back, the per-annotator files, the worker summary, the
quality page, the demo table and the renderers. Project-level derived facts (which tasks
are flagged, a task's σ, an annotator's pair-weighted quality) are computed once, by the
builder (``build.py`` with ``rollup.py``); this module holds data and imports no policy.

:func:`to_jsonable` is the package's one serializer (pydantic's, ``metrics/result.py``:
NaN and ±inf → null, numpy scalars → Python numbers); :func:`from_jsonable` reads a stored
report back into the same types (a pydantic ``TypeAdapter`` of the dataclasses). The JSON keys are the contract documented in ``docs/report.md``.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Iterable, Iterator, Literal, Mapping, TypeVar, Union

from pydantic import TypeAdapter

from ls_agreement.metrics.result import json_text, strict_json as to_jsonable, write_json

__all__ = [
    "REPORT_VERSION", "Interval", "Intervals", "AnnotatorIntervals", "Histogram", "Candidate",
    "Diagnostic", "KappaX", "KappaXIntervals", "CrowdTruthUnit", "SeedMeasures", "SpanF1Scores", "SpanF1Section", "CrowdTruthWorker",
    "CrowdTruthSection", "LabelFit", "DistanceFit", "RatesFit", "AnnotatorFit", "ItemEntry", "ControlAnnotator", "ControlReport", "TaskEntry",
    "ProjectAnnotator", "AnnotatorControl", "BaselineInfo", "Report", "ControlStatus",
    "ReferenceIntervals", "ReferenceAgreement", "ModelAgreement", "ErrorCounts", "ErrorTypesSection",
    "AnnotatorPair", "PairMatrix", "LabelEntry", "LabelConfusion", "ConfusionMatrix", "LabelSection",
    "to_jsonable", "from_jsonable",
]

REPORT_VERSION = 2

T = TypeVar("T")


@functools.cache
def _adapter(tp: Any) -> TypeAdapter[Any]:
    return TypeAdapter(tp)


def chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of at most ``size``."""
    it = iter(items)
    while block := list(itertools.islice(it, size)):
        yield block


def from_jsonable(tp: type[T] | Any, data: Any) -> T:
    """Read ``data`` (parsed JSON) as type ``tp`` (a dataclass of this module, or any type
    pydantic validates), the inverse of :func:`to_jsonable`.

    Raises
    ------
    pydantic.ValidationError (a ValueError)
        ``data`` does not have the shape ``tp`` describes; the message names the path.
    """
    return _adapter(tp).validate_python(data)

#: Why a control carries no agreement numbers ("ok" when it does).
ControlStatus = Literal["ok", "no_variation", "unpairable", "failed"]


# -- the interval every part shares; the quality views' sections of a control: the
# annotator × annotator matrix, agreement per label, agreement with references (ground
# truth, models) and error types ------------------------------------------------------------
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


# -- a control, its tasks and annotators; the project ------------------------------------------



@dataclass
class Intervals:
    """Item-bootstrap intervals of a control's headline numbers."""

    alpha: Interval = _NO_INTERVAL
    ks: Interval = _NO_INTERVAL
    sigma: Interval = _NO_INTERVAL
    bootstrap: int = 0
    seed: int = 0


@dataclass
class AnnotatorIntervals:
    sigma: Interval = _NO_INTERVAL
    alpha: Interval = _NO_INTERVAL


@dataclass
class Histogram:
    """Observed and expected distances on shared bins (``len(edges) == len(observed) + 1``)."""

    edges: list[float]
    observed: list[int]
    expected: list[float]


@dataclass
class Candidate:
    """One distance tried by ``auto``; the winner has the highest KS."""

    distance: str
    alpha: float | None
    ks: float | None
    sigma: float | None
    status: str = "ok"                          # "no_variation": every distance 0 under it


@dataclass
class Diagnostic:
    """A condition that makes the numbers hard to read (codes: :mod:`ls_agreement.metrics.
    diagnostics`); what to do about it is explained in :mod:`.explain`. ``detail`` holds
    its figures, ``message`` the one-line statement."""

    code: str
    message: str
    detail: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, d: Any) -> "Diagnostic":
        """From the engine's :class:`ls_agreement.metrics.diagnostics.Diagnostic`."""
        return cls(code=d.code, message=str(d), detail=dict(d.detail))


@dataclass
class KappaXIntervals:
    kappa_x: Interval = _NO_INTERVAL
    normalized: Interval = _NO_INTERVAL
    bootstrap: int = 0
    seed: int = 0


@dataclass
class KappaX:
    """Cross-replication reliability of two annotator pools, or humans vs a model (paper 001)."""

    kappa_x: float | None = None
    normalized: float | None = None
    irr_x: float | None = None
    irr_y: float | None = None
    d_o: float | None = None
    d_e: float | None = None
    n_items: int = 0
    n_x: int = 0
    n_y: int = 0
    distance: str | None = None
    ci: KappaXIntervals | None = None
    error: str | None = None


@dataclass(slots=True)
class SpanF1Scores:
    observed: float | None = None
    chance: float | None = None
    corrected: float | None = None
    difficulty: float | None = None


@dataclass
class SpanF1Section:
    """Chance-corrected span F1 of Labels on Text (paper 003), micro-averaged."""

    observed: float | None = None
    chance: float | None = None
    corrected: float | None = None
    tp: float = 0.0
    expected_tp: float = 0.0
    l_sum: float = 0.0
    model: str = "non-overlapping"
    annotators: dict[str, SpanF1Scores] = field(default_factory=dict)
    tasks: dict[str, SpanF1Scores] = field(default_factory=dict)
    labels: dict[str, SpanF1Scores] = field(default_factory=dict)
    tokenizer: str = ""
    warnings: list[str] = field(default_factory=list)


@dataclass(slots=True)
class CrowdTruthWorker:
    wqs: float | None = None
    wua: float | None = None
    wwa: float | None = None


@dataclass(slots=True)
class CrowdTruthUnit:
    uqs: float | None = None


@dataclass
class CrowdTruthSection:
    """CrowdTruth 2.0 scores (paper 004)."""

    workers: dict[str, CrowdTruthWorker] = field(default_factory=dict)
    units: dict[str, CrowdTruthUnit] = field(default_factory=dict)
    annotations: dict[str, float | None] = field(default_factory=dict)   # answer → AQS
    n_iter: int = 0
    converged: bool = False
    closed: bool = True


@dataclass
class SeedMeasures:
    """The seed papers' own measures of one control, where they apply."""

    kappa_x: dict[str, KappaX] = field(default_factory=dict)
    span_f1: SpanF1Section | None = None
    crowdtruth: CrowdTruthSection | None = None


@dataclass
class LabelFit:
    """The annotator model of a control of labels (``metrics/annotator_model.py``,
    docs/formulas.md "Flags"), as fitted on the project: what a task is read against, alone,
    on the live path. Per annotator (``annotators`` order): ``sound`` θ (the share of sound
    answers the model uses), ``accuracy`` (their own C_a's diagonal; null: C), ``departing``
    ξ; per class (``classes`` order): ``prior`` π, ``confusion`` C; ``pairs`` ψ over the
    class pairs (0,1), (0,2), …, (1,2), …; ``ambiguity`` ρ; ``even_share`` λ, the share
    of ambiguous tasks whose careful annotators split evenly (the rest by coins)."""

    model: Literal["labels"] = "labels"
    classes: list[Any] = field(default_factory=list)
    prior: list[float] = field(default_factory=list)
    confusion: list[list[float]] = field(default_factory=list)
    annotators: list[str] = field(default_factory=list)
    sound: list[float] = field(default_factory=list)
    accuracy: list[float | None] = field(default_factory=list)
    departing: list[list[float]] = field(default_factory=list)
    ambiguity: float = 0.0
    pairs: list[float] = field(default_factory=list)
    n_answers: list[int] = field(default_factory=list)
    even_share: float = 0.5


@dataclass
class RatesFit:
    """How often each annotator makes one kind of region error (``metrics/region_rates.py``):
    ``careful_rate`` r₀, the rate careful work reaches; per annotator (``annotators`` order)
    ``rate`` r_a as the reading uses it and ``sound`` θ, the share of their answers with no
    departing error; ``share`` π_a where a departing annotator's answers are read as a
    mixture of careful answers and answers off (``rate`` then q_a, an off answer's), 1 where
    by one rate (null: all by one rate)."""

    annotators: list[str] = field(default_factory=list)
    careful_rate: float = 0.0
    rate: list[float] = field(default_factory=list)
    sound: list[float] = field(default_factory=list)
    share: list[float] | None = None


@dataclass
class DistanceFit:
    """The annotator model of any other control (``metrics/consensus.py``): a task's
    consensus is its medoid under ``distance``; the densities of a sound and of a departing
    answer's distance to it on the bins ``edges``; per annotator ``sound`` θ; ``ambiguity`` ρ.
    For regions (``regions`` names their kind): ``moved``, how often each annotator puts a
    region they share with the consensus elsewhere (IoU under the error classes' cut), and
    ``missed``, how often they leave out one the consensus marks; null for other kinds."""

    model: Literal["distances"] = "distances"
    distance: str = ""
    edges: list[float] = field(default_factory=list)
    sound_pdf: list[float] = field(default_factory=list)
    departs_pdf: list[float] = field(default_factory=list)
    annotators: list[str] = field(default_factory=list)
    sound: list[float] = field(default_factory=list)
    ambiguity: float = 0.0
    n_answers: list[int] = field(default_factory=list)
    moved: RatesFit | None = None
    missed: RatesFit | None = None
    regions: str = ""


#: The fitted annotator model of a control (``ControlReport.flags``).
AnnotatorFit = Union[LabelFit, DistanceFit]


# slots: one per task and control, the bulk of a large report (docs/design.md)
@dataclass(slots=True)
class ItemEntry:
    """One task of one control; ``flag``: this control flags the task (``plugin/report/
    flags.py``). The annotator model's reading of it: ``p_flag`` (posterior that it holds a
    departing answer or is ambiguous), ``p_ambiguous``, the ``consensus`` answer (a label;
    null for other kinds, whose consensus is an annotator's answer) and ``consensus_by``
    (an annotator who gave it), its posterior ``consensus_p``, each annotator's posterior of
    departing from it (``departs``, those over 5 %), how the departing ones depart
    (``how``) and the one-line ``reason`` when the control flags the task; ``ambiguity_lr``
    the log likelihood ratio of an ambiguous reading, pooled over the task's controls
    (``metrics/task_ambiguity.py``); on a control of labels, ``departing_lr``: per annotator,
    ``[log likelihood ratio that their answer departs, the share of a departure that would
    show, their prior share of departing answers]``, which the task's flag pools over its
    controls of labels (``plugin/report/flags.py`` ``task_flag``); None where fewer than two
    measured controls are read by a label model (``flags.pools_departures``)."""

    sigma: float | None = None
    alpha: float | None = None
    mean_distance: float | None = None
    n_pairs: int = 0
    flag: bool = False
    annotators: list[str] = field(default_factory=list)
    p_flag: float | None = None
    p_ambiguous: float | None = None
    consensus: Any = None
    consensus_by: str | None = None
    consensus_p: float | None = None
    departs: dict[str, float] = field(default_factory=dict)
    how: dict[str, str] = field(default_factory=dict)
    reason: str | None = None
    ambiguity_lr: float | None = None          # log P(answers | ambiguous) − log P(answers | ordinary)
    departing_lr: dict[str, list[float]] | None = None


@dataclass
class ControlAnnotator:
    """One annotator within one control."""

    name: str = ""
    sigma: float | None = None
    alpha: float | None = None
    mean_distance: float | None = None
    n_pairs: int = 0
    n_items: int = 0
    pairs: dict[str, float | None] = field(default_factory=dict)   # co-annotator → mean distance
    ci: AnnotatorIntervals | None = None
    # the annotator model's share of their answers that are sound (θ̂) and its 95 % interval;
    # ``departs``: the model reads their excess over typical work as departures
    reliability: float | None = None
    reliability_ci: Interval = _NO_INTERVAL
    departs: bool = False


@dataclass
class ControlReport:
    """Agreement of one control tag (its ``from_name``)."""

    tag: str = ""
    kind: str = ""                             # "scalars", "sets", "boxes", ...: a registry prefix
    object: str | None = None
    status: ControlStatus = "ok"
    reason: str | None = None                  # why the numbers are null when status != "ok"
    distance: str | None = None
    default_distance: str | None = None
    form: str = "canonical"
    alpha: float | None = None
    ks: float | None = None
    ks_statistic: float | None = None
    sigma: float | None = None
    threshold: float | None = None             # d*
    d_e: float | None = None                   # D̂e: a task's α is 1 − its mean distance / D̂e
    n_items: int = 0
    n_pairs: int = 0
    n_expected_pairs: int = 0
    n_values: int = 0
    n_annotators: int = 0
    expected_exact: bool = False
    p: float = 0.05
    flag_below: float = 0.0                    # legacy cut: also flag σ below this (0 = off)
    flags: AnnotatorFit | None = None          # the annotator model; null when status != ok
    ci: Intervals = field(default_factory=Intervals)
    options: list[str] = field(default_factory=list)
    n_ground_truth: int = 0
    candidates: list[Candidate] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    histogram: Histogram | None = None
    units: str | None = None
    items: dict[str, ItemEntry] = field(default_factory=dict)
    annotators: dict[str, ControlAnnotator] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    kappa_x: dict[str, KappaX] = field(default_factory=dict)
    span_f1: SpanF1Section | None = None
    crowdtruth: CrowdTruthSection | None = None
    # issue 13: agreement with ground truth / predictions, and error types (docs/report.md)
    ground_truth: dict[str, ReferenceAgreement] = field(default_factory=dict)
    predictions: dict[str, ReferenceAgreement] = field(default_factory=dict)
    models: dict[str, ModelAgreement] = field(default_factory=dict)
    error_types: ErrorTypesSection | None = None
    # issue 13: annotator × annotator agreement, and agreement per label (docs/report.md)
    pair_matrix: PairMatrix | None = None
    per_label: LabelSection | None = None      # label-bearing controls only

    @property
    def n_flagged(self) -> int:
        """Tasks this control flags."""
        return sum(1 for rec in self.items.values() if rec.flag)

    @property
    def measured(self) -> bool:
        """Whether this control takes part in flags, task σ and annotator means."""
        return self.status == "ok"

    def crowdtruth_wqs(self, annotator: str) -> float | None:
        """CrowdTruth worker quality score of ``annotator``, where this control has one."""
        if self.crowdtruth is None:
            return None
        worker = self.crowdtruth.workers.get(annotator)
        return None if worker is None else worker.wqs


@dataclass(slots=True)
class TaskEntry:
    """A task across controls: flagged when any measured control flags it (``reasons``: why,
    per flagging control); its σ and α are the minimum over the measured controls where it
    has pairs (the weakest control decides)."""

    sigma: float | None = None
    alpha: float | None = None
    flag: bool = False
    controls: list[str] = field(default_factory=list)
    flagged_controls: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)
    p_flag: float | None = None                # posterior: a departing answer or an ambiguous control


@dataclass
class AnnotatorControl:
    sigma: float | None = None
    alpha: float | None = None
    n_pairs: int = 0
    reliability: float | None = None


@dataclass
class ProjectAnnotator:
    """An annotator across controls: σ and α are pair-weighted means over measured controls;
    ``reliability`` (and the bounds of its interval) the answer-weighted mean of the
    controls' (the annotator model's share of sound answers)."""

    name: str = ""
    n_items: int = 0
    n_pairs: int = 0
    sigma: float | None = None
    alpha: float | None = None
    controls: dict[str, AnnotatorControl] = field(default_factory=dict)
    reliability: float | None = None
    reliability_ci: Interval = _NO_INTERVAL
    departs: bool = False


@dataclass
class BaselineInfo:
    """Which project baseline (D̂e, d*, distances, annotator quality) the task numbers were
    read against: when it was made, and how many events have been applied since."""

    made_at: float = 0.0
    events_since: int = 0
    reason: str = ""


@dataclass
class Report:
    """A project's agreement report (JSON contract ``version`` 2, see docs/report.md)."""

    n_tasks: int = 0
    controls: dict[str, ControlReport] = field(default_factory=dict)
    tasks: dict[str, TaskEntry] = field(default_factory=dict)
    annotators: dict[str, ProjectAnnotator] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    baseline: BaselineInfo | None = None       # set by the live service (plugin/live)
    ambiguity: float = 0.0                     # ρ_T: share of tasks ambiguous over all their controls
    departing: dict[str, float] = field(default_factory=dict)   # δ per annotator: share of tasks departed on
    pair_matrix: PairMatrix | None = None      # annotator pairs over the measured controls
    version: int = REPORT_VERSION

    @property
    def flagged(self) -> list[str]:
        """Flagged task ids, worst (lowest σ) first."""
        rows = [(t.sigma if t.sigma is not None else math.inf, k) for k, t in self.tasks.items() if t.flag]
        return [k for _, k in sorted(rows)]

    @property
    def n_flagged(self) -> int:
        return sum(1 for t in self.tasks.values() if t.flag)

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable(self)

    # -- the per-task entries apart (a large report travels and is stored in blocks) --------
    def without_entries(self) -> "Report":
        """A shallow copy of everything but the per-task entries (each control's ``items``,
        ``tasks``), which :meth:`entry_blocks` gives and :meth:`add_entries` puts back."""
        return dataclasses.replace(self, tasks={},
                                   controls={n: dataclasses.replace(c, items={}) for n, c in self.controls.items()})

    def entry_blocks(self, size: int) -> Iterator[tuple[str | None, dict[str, Any]]]:
        """The per-task entries, at most ``size`` per block: ``(control, its items)`` for
        each control, then ``(None, task entries)``."""
        for name, ctl in self.controls.items():
            for block in chunks(ctl.items.items(), size):
                yield name, dict(block)
        for block in chunks(self.tasks.items(), size):
            yield None, dict(block)

    def n_entry_blocks(self, size: int) -> int:
        """How many blocks :meth:`entry_blocks` gives."""
        return sum(-(-len(c.items) // size) for c in self.controls.values()) + -(-len(self.tasks) // size)

    def add_entries(self, control: str | None, entries: Mapping[str, Any]) -> None:
        """Put a block of :meth:`entry_blocks` back (KeyError: a control this report has not)."""
        (self.tasks if control is None else self.controls[control].items).update(entries)

    def to_json(self, indent: int | None = None) -> str:
        return json_text(self, indent)

    def write_json(self, out: BinaryIO, indent: int | None = None) -> None:
        """:meth:`to_json`'s bytes written to ``out`` a block of tasks at a time."""
        write_json(self, out, indent)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Report":
        return from_jsonable(cls, data)

    @classmethod
    def from_file(cls, data: Mapping[str, Any]) -> tuple["Report", dict[str, Any]]:
        """A stored ``report.json`` (the report with the run's header keys beside it):
        the report, and the header (project, run id, time, ...)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return (cls.from_dict({k: v for k, v in data.items() if k in names}),
                {k: v for k, v in data.items() if k not in names})

"""Chance-corrected span F1 (paper 003; docs/formulas.md §7).

Token-level F1 between two annotators' segments, ``F1 = 2 TP / (L1 + L2)``, against
its expectation under paper 003's random annotation model (each annotator keeps the
number and lengths of their segments, placed at random):
``chance = 2 E[TP] / (L1 + L2)`` with ``E[TP] = sum_t P1(t) P2(t)`` (Proposition 1) and
``corrected = (F1 - chance) / (1 - chance)``. Several texts and labels are
micro-averaged: ``TP``, ``E[TP]`` and ``L1 + L2`` are summed before the ratios.
The coverage probabilities live in :mod:`.span_chance`; :func:`char_spans_to_tokens`
maps Label Studio's character offsets to tokens.
"""
from __future__ import annotations

import math
from array import array
from itertools import chain
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .model import Span
from .result import Result, strict_json
from .span_chance import coverage, coverage_sorted, observed_coverage
from .tokens import char_spans_to_tokens
from .table import Duplicates, long_table, tabular
from .errors import BadInput

__all__ = ["SpanF1Result", "SpanF1TableResult", "span_f1", "span_f1_table", "char_spans_to_tokens",
           "f1_ratios"]

MODELS = ("non-overlapping", "overlapping")


def f1_ratios(tp: float, expected_tp: float, l_sum: float) -> tuple[float, float, float]:
    """Observed, chance and corrected F1 from summed counts (NaN where undefined).

    Parameters
    ----------
    tp, expected_tp : float
        Sum of tokens marked by both annotators, and its expectation by chance.
    l_sum : float
        Sum of ``L1 + L2`` (tokens marked by each annotator).
    """
    if l_sum <= 0:
        return (math.nan, math.nan, math.nan)
    obs = 2.0 * tp / l_sum
    chance = 2.0 * expected_tp / l_sum
    corr = (obs - chance) / (1.0 - chance) if chance < 1.0 - 1e-12 else math.nan
    return (obs, chance, corr)


@dataclass(frozen=True)
class SpanF1Result(Result):
    """Chance-corrected F1 of two annotators (paper 003).

    Attributes
    ----------
    observed : float
        ``2 TP / (L1 + L2)``.
    chance : float
        ``2 E[TP] / (L1 + L2)``.
    corrected : float
        ``(observed − chance) / (1 − chance)``, the point estimate (also ``estimate``);
        NaN where undefined.
    tp, expected_tp : float
        Observed and expected true-positive tokens.
    l1, l2 : int
        Tokens marked by each annotator.
    model : str
        Random annotation sub-model.
    """

    ESTIMATE = "corrected"

    observed: float
    chance: float
    corrected: float
    tp: float
    expected_tp: float
    l1: int
    l2: int
    model: str = "non-overlapping"

    def to_dict(self) -> dict[str, Any]:
        """Strict-JSON dict (NaN -> None)."""
        return strict_json(self)


def _as_bounds(spans: Iterable[Any], n_tokens: int, who: str) -> tuple[np.ndarray, np.ndarray]:
    starts, ends = [], []
    for sp in spans:
        s, e = (sp.start, sp.end) if isinstance(sp, Span) else (sp[0], sp[1])
        s, e = int(s), int(e)
        if not 0 <= s < e <= n_tokens:
            raise BadInput(f"{who}: segment [{s}, {e}) is empty or outside the text of "
                             f"{n_tokens} tokens")
        starts.append(s)
        ends.append(e)
    order = np.argsort(starts, kind="stable")
    return np.asarray(starts, dtype=np.int64)[order], np.asarray(ends, dtype=np.int64)[order]


def _overlap_at(starts: np.ndarray, ends: np.ndarray) -> int | None:
    """Index ``k`` (in start order) of a segment overlapping segment ``k - 1``, if any."""
    if starts.size < 2:
        return None
    bad = np.flatnonzero(starts[1:] < np.maximum.accumulate(ends[:-1]))
    return int(bad[0]) + 1 if bad.size else None


def _merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of the segments as disjoint segments (sorted input)."""
    if starts.size < 2:
        return starts, ends
    run_end = np.maximum.accumulate(ends)
    new = np.ones(starts.size, dtype=bool)
    new[1:] = starts[1:] >= run_end[:-1]
    return starts[new], np.maximum.reduceat(ends, np.flatnonzero(new))


def _prepare(starts: np.ndarray, ends: np.ndarray, model: str, who: str,
             on_overlap: str) -> tuple[np.ndarray, np.ndarray]:
    if model == "non-overlapping":
        k = _overlap_at(starts, ends)
        if k is not None:
            if on_overlap == "merge":
                return _merge(starts, ends)
            raise BadInput(
                f"{who}: segments [{starts[k - 1]}, {ends[k - 1]}) and [{starts[k]}, {ends[k]}) "
                "overlap; the non-overlapping model needs disjoint segments (use "
                "model='overlapping' or on_overlap='merge')")
    return starts, ends


def span_f1(spans_a: Sequence[Any], spans_b: Sequence[Any], n_tokens: int,
            model: str = "non-overlapping", *, approx_tol: float = 0.0) -> SpanF1Result:
    """Observed, chance and chance-corrected token F1 of two annotators' segments.

    Parameters
    ----------
    spans_a, spans_b : sequence of Span or (start, end), shapes (k1,), (k2,)
        Token offsets, end exclusive, one label (labels are ignored here). In the
        non-overlapping model an annotator's segments must be disjoint.
    n_tokens : int
        ``N``, the text length in tokens.
    model : {"non-overlapping", "overlapping"}
        Paper 003's random annotation sub-model. In the overlapping model TP counts a
        token once per pair of covering segments (the additive form of Proposition 1).
    approx_tol : float
        Use the uniform approximation when its gap is at most this (see
        :func:`ls_agreement.metrics.span_chance.uniform_gap`); 0 = always exact.

    Returns
    -------
    SpanF1Result
        ``observed = 2 TP / (L1 + L2)``, ``chance = 2 E[TP] / (L1 + L2)``,
        ``corrected = (observed - chance) / (1 - chance)``; NaN where undefined
        (no segment at all, or chance = 1). Reference: paper 003 §3, Propositions 1-5.
    """
    if model not in MODELS:
        raise BadInput(f"model must be one of {MODELS}, got {model!r}")
    n = int(n_tokens)
    sa, ea = _prepare(*_as_bounds(spans_a, n, "annotator A"), model, "annotator A", "error")
    sb, eb = _prepare(*_as_bounds(spans_b, n, "annotator B"), model, "annotator B", "error")
    ca, cb = observed_coverage(n, sa, ea), observed_coverage(n, sb, eb)
    pa = coverage(n, (ea - sa).tolist(), model, approx_tol)
    pb = coverage(n, (eb - sb).tolist(), model, approx_tol)
    tp, etp = float(ca @ cb), float(pa @ pb)
    l1, l2 = int((ea - sa).sum()), int((eb - sb).sum())
    obs, chance, corr = f1_ratios(tp, etp, l1 + l2)
    return SpanF1Result(obs, chance, corr, tp, etp, l1, l2, model)


@dataclass(frozen=True)
class SpanF1TableResult(Result):
    """Micro-averaged chance-corrected span F1 of a long table (paper 003 §4, CoNLL).

    Attributes
    ----------
    observed, chance : float
        Micro-averaged observed and chance F1.
    corrected : float
        Chance-corrected F1, the point estimate (also ``estimate``); NaN where undefined.
    tp, expected_tp, l_sum : float
        ``TP``, ``E[TP]`` and ``L1 + L2`` summed over pairs, items and labels.
    model : str
        Random annotation sub-model.
    pairs : DataFrame
        One row per pair of annotators: ``annotator_a, annotator_b, tp, expected_tp,
        l_sum, n_items, observed, chance, corrected`` (empty past ``max_pairs``).
    per_annotator : DataFrame
        Indexed by annotator; the same columns over the pairs it is in.
    per_item : DataFrame
        Indexed by item; plus ``difficulty = 1 − chance``.
    per_label : DataFrame
        Indexed by label.
    records : DataFrame
        ``item, label, annotator_a, annotator_b, tp, expected_tp, l_sum`` (empty past ``max_pairs``).
    """

    ESTIMATE = "corrected"

    observed: float
    chance: float
    corrected: float
    tp: float
    expected_tp: float
    l_sum: float
    model: str
    pairs: pd.DataFrame          # annotator_a, annotator_b, tp, expected_tp, l_sum, n_items, observed, chance, corrected
    per_annotator: pd.DataFrame  # index annotator; same columns over the pairs it is in
    per_item: pd.DataFrame       # index item; + difficulty = 1 - chance
    per_label: pd.DataFrame      # index label
    records: pd.DataFrame        # item, label, annotator_a, annotator_b, tp, expected_tp, l_sum

    def to_dict(self) -> dict[str, Any]:
        """Strict-JSON dict: totals, and ``annotators``/``tasks``/``labels`` rows (NaN -> None)."""
        def rows(df: pd.DataFrame, extra: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
            return df[["observed", "chance", "corrected", *extra]].astype(float).to_dict("index")

        return strict_json({"observed": self.observed, "chance": self.chance, "corrected": self.corrected,
                            "tp": float(self.tp), "expected_tp": float(self.expected_tp),
                            "l_sum": float(self.l_sum), "model": self.model,
                            "annotators": rows(self.per_annotator),
                            "tasks": rows(self.per_item, ("difficulty",)), "labels": rows(self.per_label)})


def _label_keys(label: Any) -> tuple[Hashable, ...]:
    if isinstance(label, (list, tuple, set, frozenset)):
        return tuple(sorted(label, key=str)) or (None,)
    return (label,)


# One annotator's segments of one label on one text: the disjoint (or, in the overlapping
# model, sorted) segments, their chance coverage (shape (N,), cached per lengths), the marked
# length L and the self overlap sum_t c(t)^2 of its observed coverage c.
Profile = tuple[tuple[tuple[int, int], ...], np.ndarray, int, int]


def _profile(segs: list[tuple[int, int]], n: int, model: str, on_overlap: str, approx_tol: float,
             who: Callable[[], str]) -> Profile:
    """The :data:`Profile` of one annotator's segments of one label on one text, ``segs``
    sorted — plain Python on these short lists (numpy per call costs more). The observed
    coverage is never built: every observed count is an exact integer sum of overlaps."""
    prev_end = 0
    merged: list[list[int]] = []
    for s, e in segs:
        if not 0 <= s < e <= n:
            raise BadInput(f"{who()}: segment [{s}, {e}) is empty or outside the text of {n} tokens")
        if merged and s < prev_end and model == "non-overlapping":
            if on_overlap != "merge":
                raise BadInput(f"{who()}: segments [{merged[-1][0]}, {merged[-1][1]}) and [{s}, {e}) "
                                 "overlap; the non-overlapping model needs disjoint segments (use "
                                 "model='overlapping' or on_overlap='merge')")
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
        prev_end = max(prev_end, e)
    segments = tuple((s, e) for s, e in merged)
    lens = tuple(sorted(e - s for s, e in segments))
    length = sum(lens)
    # disjoint segments cover each token at most once: sum_t c(t)^2 = L
    self_dot = length if model == "non-overlapping" else _overlap(segments, segments)
    return segments, coverage_sorted(n, lens, model, approx_tol), length, self_dot


def _overlap(a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]]) -> int:
    """``sum_t c_a(t) c_b(t)`` of two observed coverages (the true positives of a pair):
    the summed overlaps of their segments, an exact integer."""
    return sum(max(0, min(ea, eb) - max(sa, sb)) for sa, ea in a for sb, eb in b)


def _value_profiles(value: Any, n: int, model: str, on_overlap: str, approx_tol: float, item: Any,
                    ann: Any, memo: dict[tuple, Profile]) -> dict[Hashable, Profile]:
    """label -> :data:`Profile` of one annotation on a text of ``n`` tokens.

    ``memo`` maps ``(n, sorted segments)`` to their profile for the whole table: a crowd
    project gives the same few answers on many tasks (a few hundred distinct profiles for
    tens of thousands of annotations); a profile does not depend on its label or task.
    """
    by_label: dict[Hashable, list[tuple[int, int]]] = {}
    for sp in (value if value is not None else ()):
        if not isinstance(sp, Span):
            raise BadInput(f"item {item!r}, annotator {ann!r}: value holds {sp!r}, expected Span")
        lab = sp.label
        for key in ((lab,) if type(lab) is str else _label_keys(lab)):
            segs = by_label.get(key)
            if segs is None:
                segs = by_label[key] = []
            segs.append((sp.start, sp.end))
    out: dict[Hashable, Profile] = {}
    for lab, segs in by_label.items():
        segs.sort()
        key = (n, tuple(segs))
        got = memo.get(key)
        if got is None:
            got = memo[key] = _profile(segs, n, model, on_overlap, approx_tol,
                                       lambda: f"item {item!r}, annotator {ann!r}, label {lab!r}")
        out[lab] = got
    return out


def _summarise(df: pd.DataFrame, by: str | list[str]) -> pd.DataFrame:
    g = df.groupby(by, sort=True)[["tp", "expected_tp", "l_sum"]].sum()
    ratios = [f1_ratios(*r) for r in g.itertuples(index=False, name=None)]
    g[["observed", "chance", "corrected"]] = np.asarray(ratios, dtype=np.float64).reshape(-1, 3)
    return g


class _PairSums:
    """Per (item, label, annotator): TP, E[TP] and L1 + L2 summed over the pairs the annotator
    is in, through the item's sums: ``Σ_{b≠a} x_a·x_b = x_a·(Σ_b x_b − x_a)`` and
    ``Σ_{b≠a} (L_a + L_b) = (m − 2)·L_a + Σ_b L_b``, so m annotators cost m, not m².

    E[TP] is a float dot product per annotator, taken item by item (the same products as
    ever: a batched product would add in another order and move the last bits). A crowd
    project repeats a few answers: the rows of an (item, label) are worked out once per
    distinct tuple of its annotators' profiles (profiles are shared by equal answers and kept
    alive by the caller for the whole table, so their ids name them). TP is an integer: it is
    left for :meth:`frame`, which sums every segment against its (item, label)'s observed
    coverage at once (prefix sums over one flat token axis) instead of one small vector
    product per annotator.
    """

    def __init__(self) -> None:
        # per row and per segment, numbers go to typed arrays, not lists: a 100,000-task
        # span control has about 1.2 million rows, and a list's float objects took four
        # times the bytes (the spans' worker peaked here, issue 24)
        self.item: list = []
        self.label: list = []
        self.ann: list = []
        self.etp = array("d")
        self.l_sum = array("d")
        self.slot = array("q")           # per annotator marking the label: its row
        self.group = array("q")          # ... its (item, label) group
        self.segments: list = []         # ... its segments
        self.self_dot = array("q")       # ... sum_t c(t)^2
        self.group_n = array("q")        # per (item, label): tokens of the text
        self.memo: dict[tuple, tuple] = {}   # ids of a group's profiles -> _rows of them
        self.etp_memo: dict[tuple, dict[int, float]] = {}   # ids of its chance coverages -> E[TP]s

    def _rows(self, ts: list[Profile | None]) -> tuple[list[float], list[float], list[int], list, list[int]]:
        """E[TP] and L1 + L2 of each annotator of an (item, label) (``ts``: their profiles, None
        for one who did not mark the label); the positions, segments and self overlaps of those
        who did."""
        m = len(ts)
        have = [t for t in ts if t is not None]
        # E[TP] of each chance coverage against their sum: the same coverages (cached arrays,
        # alive as long as the profiles) give the same products, computed once
        key = tuple(id(t[1]) for t in have)
        etp_of = self.etp_memo.get(key)
        if etp_of is None:
            chance_sum = np.sum([t[1] for t in have], axis=0)
            etp_of = self.etp_memo[key] = {id(t[1]): float(t[1] @ chance_sum - t[1] @ t[1]) for t in have}
        l_total = sum(t[2] for t in have)
        etp, l_sum, present = [], [], []
        for k, t in enumerate(ts):
            if t is None:
                etp.append(0.0)
                l_sum.append(float(l_total))
                continue
            etp.append(etp_of[id(t[1])])
            l_sum.append(float((m - 2) * t[2] + l_total))
            present.append(k)
        return etp, l_sum, present, [t[0] for t in have], [t[3] for t in have]

    def add(self, item: Any, prof: dict[Any, dict[Hashable, Profile]], n: int) -> None:
        """The rows of one item (``prof``: annotator -> label -> profile)."""
        m = len(prof)
        if m < 2:
            return
        anns, profs = list(prof), list(prof.values())
        for lab in sorted({lab for p in profs for lab in p}, key=repr):
            ts = [p.get(lab) for p in profs]
            key = tuple(map(id, ts))
            rows = self.memo.get(key)
            if rows is None:
                rows = self.memo[key] = self._rows(ts)
            etp, l_sum, present, segments, self_dot = rows
            base, g = len(self.etp), len(self.group_n)
            self.group_n.append(n)
            self.item.extend([item] * m)
            self.label.extend([lab] * m)
            self.ann.extend(anns)
            self.etp.extend(etp)
            self.l_sum.extend(l_sum)
            self.slot.extend([base + k for k in present])
            self.group.extend([g] * len(present))
            self.segments.extend(segments)
            self.self_dot.extend(self_dot)

    def frame(self) -> pd.DataFrame:
        """item, label, annotator, tp, expected_tp, l_sum."""
        return pd.DataFrame({"item": self.item, "label": self.label, "annotator": self.ann, "tp": self._tp(),
                             "expected_tp": np.frombuffer(self.etp, dtype=np.float64).copy(),
                             "l_sum": np.frombuffer(self.l_sum, dtype=np.float64).copy()})

    def _tp(self) -> np.ndarray:
        """TP of every row, shape (rows,) (its own function: the token axis's arrays are
        gone before the frame is built)."""
        tp = np.zeros(len(self.item))
        if not self.slot:
            return tp
        counts = np.fromiter(map(len, self.segments), dtype=np.int64, count=len(self.segments))
        seg = np.fromiter(chain.from_iterable(chain.from_iterable(self.segments)), dtype=np.int64,
                          count=2 * int(counts.sum())).reshape(-1, 2)
        # one flat token axis: group g's tokens at [base[g], base[g] + n_g], one spare slot each
        size = np.frombuffer(self.group_n, dtype=np.int64) + 1
        base = np.cumsum(size) - size
        at = base[np.repeat(np.frombuffer(self.group, dtype=np.int64), counts)]
        start, end = at + seg[:, 0], at + seg[:, 1]
        total = int(size.sum())
        # observed coverage of each group, summed over its annotators (difference array)
        cover = np.cumsum(np.bincount(start, minlength=total) - np.bincount(end, minlength=total))
        upto = np.concatenate(([0], np.cumsum(cover)))   # upto[x] = sum of cover[:x]
        # sum_t c_a(t) S(t) = the summed coverage over a's segments; minus sum_t c_a(t)^2
        own = np.bincount(np.repeat(np.arange(counts.size), counts), weights=upto[end] - upto[start],
                          minlength=counts.size)
        tp[np.frombuffer(self.slot, dtype=np.int64)] = own - np.frombuffer(self.self_dot, dtype=np.int64)
        return tp


@tabular(missing="keep")   # None: an annotation that marked no span
def span_f1_table(table: pd.DataFrame, n_tokens: Mapping[Any, int], model: str = "non-overlapping",
                  *, reference: str | None = None, approx_tol: float = 0.0,
                  on_overlap: str = "error", max_pairs: int = 200_000,
                  duplicates: Duplicates = "error") -> SpanF1TableResult:
    """Chance-corrected span F1 over a long table, micro-averaged (paper 003 §4).

    Parameters
    ----------
    table : DataFrame with columns item, annotator, value
        ``value`` is a sequence of labelled :class:`Span` in token offsets (possibly
        empty; ``None`` counts as empty).
    n_tokens : mapping item -> int
        Text length of every item, in tokens.
    model : {"non-overlapping", "overlapping"}
    reference : str, optional
        Only pair every annotator with this one (system outputs against a gold
        standard); default every pair of annotators on an item.
    approx_tol : float
        Uniform approximation threshold (0 = exact); see :mod:`.span_chance`.
    on_overlap : {"error", "merge"}
        Non-overlapping model: what to do with an annotator's overlapping segments of
        one label (merge = their union).
    max_pairs : int
        Past this many pairs of annotators (summed over items), ``pairs`` and ``records``
        are left empty. The totals, per annotator, item and label do not need them: they
        are sums over pairs written through per-item sums, linear in the annotators.
    duplicates : {"error", "keep", "first", "last"}
        Several annotations of one annotator on one item (:func:`.table.long_table`).

    Returns
    -------
    SpanF1TableResult
        Per pair of annotators, item and label ``TP``, ``E[TP]``, ``L1 + L2`` are
        summed (micro-average), then ``observed``, ``chance``, ``corrected`` are formed
        for the project, per pair, per annotator (pairs it is in), per item (with
        ``difficulty = 1 - chance``, paper 003 "Annotation Difficulty") and per label.
    """
    if model not in MODELS:
        raise BadInput(f"model must be one of {MODELS}, got {model!r}")
    if on_overlap not in ("error", "merge"):
        raise BadInput(f"on_overlap must be 'error' or 'merge', got {on_overlap!r}")
    table = long_table(table, duplicates=duplicates, missing="keep")

    rec_item, rec_label, rec_a, rec_b, rec_tp, rec_etp, rec_l = [], [], [], [], [], [], []
    sums = _PairSums()   # per (item, label, annotator): the sums over the pairs the annotator is in
    profiles: dict[tuple, Profile] = {}   # (n, segments) -> profile, for the whole table
    seen: dict[tuple[int, int], dict[Hashable, Profile]] = {}   # (n, id of a value) -> its profiles
    pair_memo: dict[tuple[int, int], tuple[float, float]] = {}   # (TP, E[TP]) of two profiles
    ann_col, val_col = table["annotator"].tolist(), table["value"].tolist()
    groups = table.groupby("item", sort=False).indices
    n_pair_rows = sum(len(idx) * (len(idx) - 1) // 2 for idx in groups.values())
    keep_pairs = reference is not None or n_pair_rows <= max_pairs
    for item, idx in groups.items():
        item = item.item() if isinstance(item, np.generic) else item
        if item not in n_tokens:
            raise BadInput(f"item {item!r}: no token count in n_tokens")
        n = int(n_tokens[item])
        # per annotator: label -> profile. A crowd project repeats a few answers, and the token
        # table shares one value object between equal answers on a text: each is read once
        # per text length (the values live as long as ``val_col``, so their ids stay distinct)
        prof: dict[Any, dict[Hashable, Profile]] = {}
        for r in idx.tolist():
            ann, value = ann_col[r], val_col[r]
            got = seen.get((n, id(value)))
            if got is None:
                got = seen[(n, id(value))] = _value_profiles(value, n, model, on_overlap, approx_tol, item, ann,
                                                             profiles)
            prof[ann] = got
        if reference is None:
            sums.add(item, prof, n)
        if not keep_pairs:
            continue
        anns = list(prof)
        if reference is not None:
            pairs = [(reference, b) for b in anns if b != reference] if reference in prof else []
        else:
            pairs = [(anns[x], anns[y]) for x in range(len(anns)) for y in range(x + 1, len(anns))]
        for a, b in pairs:
            pa, pb = prof[a], prof[b]
            # a fixed order: float sums must not depend on the hash seed (PYTHONHASHSEED)
            for lab in sorted(set(pa) | set(pb), key=repr):
                ta, tb = pa.get(lab), pb.get(lab)
                if ta is not None and tb is not None:
                    # profiles are shared by equal answers (and kept alive by ``profiles``)
                    got = pair_memo.get((id(ta), id(tb)))
                    if got is None:
                        got = pair_memo[(id(ta), id(tb))] = (float(_overlap(ta[0], tb[0])), float(ta[1] @ tb[1]))
                    tp, etp = got
                else:
                    tp = etp = 0.0
                rec_item.append(item)
                rec_label.append(lab)
                rec_a.append(a)
                rec_b.append(b)
                rec_tp.append(tp)
                rec_etp.append(etp)
                rec_l.append((ta[2] if ta else 0) + (tb[2] if tb else 0))

    records = pd.DataFrame({"item": rec_item, "label": rec_label, "annotator_a": rec_a,
                            "annotator_b": rec_b, "tp": np.asarray(rec_tp, dtype=np.float64),
                            "expected_tp": np.asarray(rec_etp, dtype=np.float64),
                            "l_sum": np.asarray(rec_l, dtype=np.float64)})
    if reference is None:
        # every pair counts once in the totals and once for each of its two annotators
        per_ann_rows = sums.frame()
        del sums        # its lists and arrays: the frame holds the rows now
        halves = per_ann_rows.assign(**{c: per_ann_rows[c] / 2.0 for c in ("tp", "expected_tp", "l_sum")})
        per_ann = _summarise(per_ann_rows, "annotator")
        per_item = _summarise(halves, "item")
        per_label = _summarise(halves.assign(label=halves["label"].map(str)), "label")
        tp, etp, lsum = (float(per_item[c].sum()) for c in ("tp", "expected_tp", "l_sum"))
    else:
        both = pd.concat([records.rename(columns={"annotator_a": "annotator"}),
                          records.rename(columns={"annotator_b": "annotator"})], ignore_index=True)
        per_ann = _summarise(both, "annotator")
        per_item = _summarise(records, "item")
        per_label = _summarise(records.assign(label=records["label"].map(str)), "label")
        tp, etp, lsum = (float(records[c].sum()) for c in ("tp", "expected_tp", "l_sum"))
    obs, chance, corr = f1_ratios(tp, etp, lsum)
    if keep_pairs:
        pair_df = _summarise(records, ["annotator_a", "annotator_b"])
        pair_df["n_items"] = records.groupby(["annotator_a", "annotator_b"])["item"].nunique()
        pair_df = pair_df.reset_index()
    else:
        pair_df = pd.DataFrame(columns=["annotator_a", "annotator_b", "tp", "expected_tp", "l_sum",
                                        "observed", "chance", "corrected", "n_items"])
    per_item["difficulty"] = 1.0 - per_item["chance"]
    return SpanF1TableResult(obs, chance, corr, tp, etp, lsum, model, pair_df, per_ann, per_item,
                             per_label, records)

"""Values of the controls answered once per task or once per region, in Label Studio's
exact ``value`` shape, and the noise of the scenarios.

For each control tag: ``truth`` (a task's answer), ``near`` (the truth with small noise:
what a careful annotator gives) and ``draw`` (an answer at random, independent of the
truth: a careless annotator). Value keys and shapes are Label Studio 1.23.2's editor
(``tags/control/*``: ``valueType`` / ``resultType``): Choices ``{"choices": [..]}`` (paths,
lists of strings, when ``allowNested``), Taxonomy ``{"taxonomy": [[path]]}``, Rating
``{"rating": int}``, Number ``{"number": n}``, DateTime ``{"datetime": str}`` (d3 formats
``%Y-%m-%dT%H:%M``, ``%Y-%m-%d``, ``%H:%M``, or the year), TextArea ``{"text": [str]}``,
Ranker ``{"ranker": {column: [item ids]}}`` (the Ranker's own name without Buckets; each
Bucket and ``_`` with them), Pairwise ``{"selected": "left"|"right"}``.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from .labeling_config import ControlTag
from .task_data import WORDS, sentence

__all__ = ["Options", "VALUE_KEY", "RESULT_TYPE", "truth", "near", "draw"]

# control tag -> key of its answer in `value`
VALUE_KEY = {"choices": "choices", "taxonomy": "taxonomy", "rating": "rating", "number": "number",
             "datetime": "datetime", "textarea": "text", "ranker": "ranker", "pairwise": "selected"}
# control tag -> result `type`
RESULT_TYPE = {t: t for t in VALUE_KEY}

KEEP = 0.85          # a careful annotator keeps a categorical answer with this probability


@dataclass
class Options:
    """What a control offers on one task: the option tree ``{value: subtree}`` (declared in
    the config or read from task data) and, for a Ranker, the ids of its list's items."""

    tree: dict[str, dict]
    items: list[str]

    def paths(self) -> list[list[str]]:
        """Every node of the tree as its path from the root."""
        out: list[list[str]] = []

        def walk(node: dict[str, dict], prefix: list[str]) -> None:
            for k, sub in node.items():
                out.append(prefix + [k])
                walk(sub, prefix + [k])
        walk(self.tree, [])
        return out


def _nested(c: ControlTag) -> bool:
    """Choices with ``allowNested``: every selected value is its path (``Choice.resultValue``
    with ``nestedResults``); without it nested Choice tags cannot be selected."""
    return c.attrs.get("allownested", "").lower() == "true"


def _pick(rng: np.random.Generator, seq: list) -> Any:
    return seq[int(rng.integers(0, len(seq)))]


def _subset(rng: np.random.Generator, n: int, p: float = 0.4) -> list[int]:
    idx = [i for i in range(n) if rng.random() < p]
    return idx or [int(rng.integers(0, n))]


def _dt_format(c: ControlTag) -> str:
    only = c.attrs.get("only", "")
    if c.attrs.get("format"):
        return c.attrs["format"]
    if only == "time":
        return "%H:%M"
    if "year" in only and "date" not in only:
        return "%Y"
    if "date" in only and "time" not in only:
        return "%Y-%m-%d"
    return "%Y-%m-%dT%H:%M"


def _dt(c: ControlTag, minutes: float) -> str:
    return (datetime(2024, 1, 1) + timedelta(minutes=float(minutes))).strftime(_dt_format(c))


def _dt_step(c: ControlTag) -> float:
    fmt = _dt_format(c)
    return 60.0 * 24 * 365 if fmt == "%Y" else (60.0 * 24 if "%H" not in fmt else 30.0)


def _rating_max(c: ControlTag) -> int:
    return int(float(c.attrs.get("maxrating", "5") or 5))


def _number_range(c: ControlTag) -> tuple[int, int]:
    lo = int(float(c.attrs.get("min", "0") or 0))
    hi = int(float(c.attrs.get("max", "100") or 100))
    return lo, max(hi, lo + 1)


def draw(c: ControlTag, opts: Options, rng: np.random.Generator) -> Any:
    """An answer at random for control ``c`` (the value under :data:`VALUE_KEY`)."""
    t = c.tag
    if t == "choices":
        if _nested(c):
            paths = opts.paths()
            if c.choice_mode == "multiple":
                return [paths[i] for i in _subset(rng, len(paths))]
            return [_pick(rng, paths)]
        values = list(opts.tree)
        if c.choice_mode == "multiple":
            return [values[i] for i in _subset(rng, len(values))]
        return [_pick(rng, values)]
    if t == "taxonomy":
        paths = opts.paths()
        return [paths[i] for i in sorted(set(int(j) for j in rng.integers(0, len(paths), int(rng.integers(1, 3)))))]
    if t == "rating":
        return int(rng.integers(1, _rating_max(c) + 1))
    if t == "number":
        lo, hi = _number_range(c)
        return int(rng.integers(lo, hi + 1))
    if t == "datetime":
        step = _dt_step(c)
        span = 730 * 24 * 60 if step < 60 * 24 * 365 else 30 * 365 * 24 * 60
        return _dt(c, step * int(rng.integers(0, span // step)))
    if t == "textarea":
        return [sentence(rng, int(rng.integers(6, 13)))]
    if t == "ranker":
        items = list(opts.items)
        if not c.buckets:
            return {c.name: [items[i] for i in rng.permutation(len(items))]}
        cols = c.buckets + ["_"]
        where = rng.integers(0, len(cols), len(items))
        return {col: [it for it, w in zip(items, where) if w == k] for k, col in enumerate(cols)}
    if t == "pairwise":
        return "left" if rng.random() < 0.5 else "right"
    raise ValueError(f"no answers for <{c.tag}>")


def truth(c: ControlTag, opts: Options, rng: np.random.Generator) -> Any:
    """A task's true answer: drawn like a random one (the truth varies across tasks)."""
    return draw(c, opts, rng)


def near(c: ControlTag, opts: Options, value: Any, rng: np.random.Generator) -> Any:
    """``value`` with the small noise of a careful annotator."""
    t = c.tag
    if t == "choices" and c.choice_mode == "multiple":
        universe = opts.paths() if _nested(c) else list(opts.tree)
        chosen = [u for u in universe if (u in value) != (rng.random() < 0.06)]
        return chosen or list(value)
    if t in ("choices", "taxonomy", "pairwise"):
        return value if rng.random() < KEEP else draw(c, opts, rng)
    if t == "rating":
        if rng.random() < 0.3:
            return int(np.clip(value + (1 if rng.random() < 0.5 else -1), 1, _rating_max(c)))
        return value
    if t == "number":
        lo, hi = _number_range(c)
        return int(np.clip(value + round(rng.normal(0, 0.02 * (hi - lo))), lo, hi))
    if t == "datetime":
        if rng.random() < 0.3:
            fmt = _dt_format(c)
            base = datetime.strptime(value, fmt) if fmt != "%H:%M" else datetime.strptime("2024-01-01 " + value, "%Y-%m-%d %H:%M")
            moved = base + timedelta(minutes=_dt_step(c) * (1 if rng.random() < 0.5 else -1))
            return moved.strftime(fmt)
        return value
    if t == "textarea":
        words = value[0].split()
        if rng.random() < 0.5:
            words[int(rng.integers(0, len(words)))] = _pick(rng, list(WORDS))
        return [" ".join(words)]
    if t == "ranker":
        if not c.buckets:
            order = list(value[c.name])
            if len(order) > 1 and rng.random() < 0.5:
                i = int(rng.integers(0, len(order) - 1))
                order[i], order[i + 1] = order[i + 1], order[i]
            return {c.name: order}
        cols = list(value)
        home = {it: col for col in cols for it in value[col]}
        for it in list(home):
            if rng.random() < 0.1:
                home[it] = _pick(rng, cols)
        return {col: [it for it in opts.items if home.get(it) == col] for col in cols}
    raise ValueError(f"no answers for <{c.tag}>")

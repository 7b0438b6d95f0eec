"""The answers a task offers a control whose options come from its data.

Label Studio loads the options of ``<Choices value="$key">``, ``<Labels value="$key">``
and ``<Taxonomy value="$key">`` from ``task.data[key]`` (the editor's
``DynamicChildrenMixin``): a list of objects, each spread into a Choice/Label, whose result
is its ``alias`` when it has one, else its ``value``; ``children`` nest options (a Choices
with ``allowNested="true"`` then answers with paths, a list from the topmost option down to
the chosen one; without it only the top level can be chosen). A Ranker ranks the items of
its List object (``task.data[key]``: objects with an ``id``).

Each task then offers answers of its own, and chance must come from them:
:func:`offered_answers` gives the task's answers in order, which the adapter puts in the
``options`` column of the control's table (``ls_agreement.metrics.item_options``).
"""
from __future__ import annotations

from typing import Any

from .specs import ControlSpec

__all__ = ["offers_answers", "offered_answers", "path_answer", "PATH_SEPARATOR"]

#: Joins the levels of a nested answer, as for Taxonomy paths (adapters/choices.py)
PATH_SEPARATOR = "/"
# Past this many options a task's list is not read (a hostile export must not decide
# how much memory a report takes); its chance is then pooled with the tasks without options
MAX_OPTIONS = 10_000


def path_answer(path: list[str]) -> str:
    """A nested answer (a path of option values) as one string."""
    return PATH_SEPARATOR.join(path)


def _nested(spec: ControlSpec) -> bool:
    if spec.lower == "taxonomy":
        return True
    flag = next((v for k, v in spec.attrs.items() if k.lower() == "allownested"), "false")
    return flag.strip().lower() == "true"


def offers_answers(spec: ControlSpec) -> bool:
    """True when the control's answers are read from each task's data."""
    if spec.family == "ranking":
        return bool(spec.data_keys and spec.data_keys[0])
    return spec.dynamic and spec.family in ("choices", "spans", "regions", "intervals") \
        and _options_key(spec) is not None


def _options_key(spec: ControlSpec) -> str | None:
    raw = spec.attrs.get("value") or ""
    return raw[1:] if raw.startswith("$") and len(raw) > 1 else None


def _answer(option: Any) -> str | None:
    if type(option) is not dict:
        return None
    alias, value = option.get("alias"), option.get("value")
    ans = alias if type(alias) is str and alias else value
    return ans if type(ans) is str and ans else None


def offered_answers(spec: ControlSpec, data: Any) -> tuple[str, ...] | None:
    """The answers ``data`` offers the control, in the order Label Studio shows them
    (nested ones depth first, each as its path), or None when the data holds no list.

    Parameters
    ----------
    spec : a control for which :func:`offers_answers` is true
    data : the task's ``data`` object
    """
    if type(data) is not dict:
        return None
    if spec.family == "ranking":
        items = data.get(spec.data_keys[0])
        if type(items) is not list or len(items) > MAX_OPTIONS:
            return None
        ids = [str(x["id"]) for x in items if type(x) is dict and type(x.get("id")) in (str, int)]
        return tuple(dict.fromkeys(ids)) or None
    options = data.get(_options_key(spec) or "")
    if type(options) is not list:
        return None
    if len(options) > MAX_OPTIONS:
        return None
    nested = _nested(spec)
    out: dict[str, None] = {}
    # depth first (each option, then its children) with an explicit stack: nesting in task
    # data must hit no recursion limit
    stack: list[tuple[Any, tuple[str, ...]]] = [(opt, ()) for opt in reversed(options)]
    while stack:
        opt, prefix = stack.pop()
        ans = _answer(opt)
        if ans is None:
            continue
        path = prefix + (ans,)
        out[path_answer(list(path))] = None
        if len(out) > MAX_OPTIONS:
            return None
        kids = opt.get("children")
        if nested and type(kids) is list:
            stack.extend((k, path) for k in reversed(kids))
    return tuple(out) or None

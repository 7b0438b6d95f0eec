"""Data Manager views (tabs) the plugin owns: "Agreement" (every task, the agreement
columns shown, worst first), "Low agreement" and one review queue per annotator.

A view is ours when its ``data`` carries the marker ``{"ls_agreement": {"view": <key>}}``;
the title alone is never enough (a user's own tab may share it). Each sync finds its views
by marker, creates missing ones, updates those whose title/filters/ordering drifted, and
deletes marked duplicates (a create whose answer was lost and was retried), so re-running
never duplicates a view. Filter shapes follow docs/label-studio.md §7:
``filter:tasks:data.<key>`` with type Number; ``filter:tasks:annotators`` (type List) holds
user ids. The "Agreement" tab also sets ``hiddenColumns`` (``{"explore": [...],
"labeling": [...]}`` of column ids ``tasks:<id>`` / ``tasks:data.<key>``) so that our
columns are never hidden, and ``columnsDisplayType`` (column id -> ``"Number"``), which
makes Label Studio order by the number rather than its text (data_manager/managers.py
``apply_ordering``); a user's own column choices in that tab are kept.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .client import Connection
from .pushback import CONTROL_KEY, PREFIX, safe_key

MARKER = "ls_agreement"
LOW_TITLE = "Low agreement"
AGREEMENT_TITLE = "Agreement"
AGREEMENT_KEY = "agreement"


@dataclass
class ViewsOutcome:
    views: dict[str, int] = field(default_factory=dict)     # marker key -> view id
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[int] = field(default_factory=list)


def _flag_filter() -> dict[str, Any]:
    return {"filter": f"filter:tasks:data.{PREFIX}flag", "operator": "equal",
            "type": "Number", "value": 1}


def agreement_columns(controls: Sequence[str] = ()) -> list[str]:
    """Data Manager column ids of the values the sync writes (``tasks:data.<key>``).

    The per-control σ columns exist only when the project has more than one control
    (pushback.desired_for writes them only then).
    """
    keys = [PREFIX + k for k in ("sigma", "alpha", "flag", "n_annotators")]
    if len(controls) > 1:
        keys += [f"{CONTROL_KEY}{safe_key(c)}" for c in controls]
    return [f"tasks:data.{k}" for k in keys]


def desired_views(annotators: Mapping[int, str],
                  controls: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """The views' ``data`` payloads, keyed by marker key.

    Parameters
    ----------
    annotators : Mapping[int, str]
        Label Studio user id -> email (or display name) of every human annotator.
    controls : Sequence[str]
        The project's control tag names (per-control σ columns of the "Agreement" tab).

    Returns
    -------
    dict
        ``{"agreement": {...}, "low": {...}, "review:<id>": {...}}``; each value is a
        view ``data`` dict with ``title``, ``filters`` (conjunction ``and``), ``ordering``
        (worst σ first) and the marker; "agreement" also has ``columnsDisplayType``
        (its ``hiddenColumns`` depend on the server's columns: :func:`ensure_views`).
    """
    ordering = [f"tasks:data.{PREFIX}sigma"]  # ascending: lowest sigma = worst first
    out: dict[str, dict[str, Any]] = {
        AGREEMENT_KEY: {"title": AGREEMENT_TITLE, "type": "list", "target": "tasks",
                        "filters": {"conjunction": "and", "items": []},
                        "ordering": ordering,
                        "columnsDisplayType": {c: "Number" for c in agreement_columns(controls)},
                        MARKER: {"view": AGREEMENT_KEY}},
        "low": {"title": LOW_TITLE, "type": "list", "target": "tasks",
                "filters": {"conjunction": "and", "items": [_flag_filter()]},
                "ordering": ordering, MARKER: {"view": "low"}},
    }
    for uid, email in sorted(annotators.items()):
        key = f"review:{int(uid)}"
        out[key] = {
            "title": f"Review: {email or uid}", "type": "list", "target": "tasks",
            "filters": {"conjunction": "and", "items": [
                _flag_filter(),
                {"filter": "filter:tasks:annotators", "operator": "contains",
                 "type": "List", "value": int(uid)}]},
            "ordering": ordering, MARKER: {"view": key},
        }
    return out


def _marker_of(view: Mapping[str, Any]) -> str | None:
    data = view.get("data")
    mark = data.get(MARKER) if isinstance(data, Mapping) else None
    key = mark.get("view") if isinstance(mark, Mapping) else None
    return key if isinstance(key, str) else None


def _same(have: Mapping[str, Any], want: Mapping[str, Any]) -> bool:
    data = have.get("data") if isinstance(have.get("data"), Mapping) else {}
    if not all(data.get(k) == want[k] for k in ("title", "filters", "ordering", MARKER)):
        return False
    if "columnsDisplayType" not in want:
        return True
    # The "Agreement" tab: ours shown and typed; other columns are the user's business.
    shown = list(want["columnsDisplayType"])
    hidden = data.get("hiddenColumns")
    types = data.get("columnsDisplayType")
    return (_valid_hidden(hidden) and not any(c in hidden[m] for m in ("explore", "labeling")
                                              for c in shown)
            and isinstance(types, Mapping)
            and all(types.get(c) == t for c, t in want["columnsDisplayType"].items()))


def _valid_hidden(hidden: Any) -> bool:
    return (isinstance(hidden, Mapping)
            and all(isinstance(hidden.get(m), list) for m in ("explore", "labeling")))


def default_hidden(columns: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """``hiddenColumns`` as the Data Manager starts a new tab: the columns whose
    ``visibility_defaults`` say hidden (``GET /api/dm/columns``), per mode.

    A view with ``hiddenColumns`` shows every column not listed, so listing the defaults
    keeps the tab looking like any other one, plus our columns.
    """
    out: dict[str, list[str]] = {"explore": [], "labeling": []}
    for col in columns:
        cid = col.get("id")
        if not isinstance(cid, str) or col.get("children"):
            continue   # the "data" group column: its children are listed on their own
        full = "tasks:" + ("data." if col.get("parent") == "data" else "") + cid
        vis = col.get("visibility_defaults")
        vis = vis if isinstance(vis, Mapping) else {}
        for mode in ("explore", "labeling"):
            if vis.get(mode) is False:
                out[mode].append(full)
    return out


def _agreement_data(conn: Connection, project_id: int, have: Mapping[str, Any] | None,
                    want: Mapping[str, Any]) -> dict[str, Any]:
    """The "Agreement" tab's full ``data``: the user's settings of an existing tab (column
    widths, hidden columns, ...) kept, ours shown and typed."""
    old = have.get("data") if have is not None and isinstance(have.get("data"), Mapping) else {}
    hidden = old.get("hiddenColumns")
    if not _valid_hidden(hidden):
        hidden = default_hidden(conn.dm_columns(project_id))
    shown = set(want["columnsDisplayType"])
    hidden = {**hidden, **{m: [c for c in hidden[m] if c not in shown]
                           for m in ("explore", "labeling")}}
    types = old.get("columnsDisplayType")
    types = {**(types if isinstance(types, Mapping) else {}), **want["columnsDisplayType"]}
    return {**old, **want, "hiddenColumns": hidden, "columnsDisplayType": types}


def ensure_views(conn: Connection, project_id: int, annotators: Mapping[int, str],
                 controls: Sequence[str] = ()) -> ViewsOutcome:
    """Create or update the plugin's views on a project; never duplicates.

    Parameters
    ----------
    conn : Connection
        Connected client.
    project_id : int
        The project.
    annotators : Mapping[int, str]
        User id -> email of the annotators who get a review queue.
    controls : Sequence[str]
        Control tag names: the "Agreement" tab shows their per-control σ columns.
    """
    out = ViewsOutcome()
    want = desired_views(annotators, controls)
    mine: dict[str, list[dict[str, Any]]] = {}
    for v in conn.list_views(project_id):
        key = _marker_of(v)
        if key is not None:
            mine.setdefault(key, []).append(v)
    for key, data in want.items():
        have = sorted(mine.pop(key, []), key=lambda v: int(v.get("id") or 0))
        for dup in have[1:]:
            conn.delete_view(int(dup["id"]))
            out.deleted.append(int(dup["id"]))
        if not have:
            if key == AGREEMENT_KEY:
                data = _agreement_data(conn, project_id, None, data)
            view = conn.create_view(project_id, data)
            out.created.append(key)
        elif not _same(have[0], data):
            if key == AGREEMENT_KEY:
                data = _agreement_data(conn, project_id, have[0], data)
            view = conn.update_view(int(have[0]["id"]), project_id, data)
            out.updated.append(key)
        else:
            view = have[0]
        out.views[key] = int(view["id"])
    # marked views of annotators who no longer annotate anything are left alone: they
    # are harmless (their filter matches nothing) and may hold a reviewer's column setup.
    return out


# -- annotator-pair views: where the quality page's heatmap cells lead -------------------
PAIR_PREFIX = "pair:"
#: Pair views kept per project; older ones are deleted when a new pair is opened (tabs
#: are shared by every user of the project, so they must not pile up).
MAX_PAIR_VIEWS = 3


def pair_view_data(a: int, b: int, names: Mapping[int, str] | None = None) -> dict[str, Any]:
    """The ``data`` of the view of the tasks annotators ``a`` and ``b`` both annotated.

    Label Studio's Data Manager takes no filters from its URL (1.23: ``?filters=`` is
    ignored, only ``?tab=<view id>`` is read), so a link to "these two annotators' tasks"
    has to be a saved view.
    """
    a, b = sorted((int(a), int(b)))
    names = names or {}
    return {"title": f"Pair: {names.get(a) or a} × {names.get(b) or b}", "type": "list",
            "target": "tasks",
            "filters": {"conjunction": "and", "items": [
                {"filter": "filter:tasks:annotators", "operator": "contains", "type": "List",
                 "value": u} for u in (a, b)]},
            "ordering": [f"tasks:data.{PREFIX}sigma"],
            MARKER: {"view": f"{PAIR_PREFIX}{a}:{b}"}}


def ensure_pair_view(conn: Connection, project_id: int, a: int, b: int,
                     names: Mapping[int, str] | None = None) -> int:
    """The id of the project's view of the tasks annotators ``a`` and ``b`` both
    annotated: the existing one (updated if it drifted) or a new one; the oldest pair
    views beyond :data:`MAX_PAIR_VIEWS` are deleted.

    Parameters
    ----------
    conn : Connection
        Connected client.
    project_id : int
        The project.
    a, b : int
        Label Studio user ids of the two annotators (in either order, not equal).
    names : Mapping[int, str], optional
        User id -> name or email, for the tab's title.
    """
    if int(a) == int(b):
        raise ValueError("a pair needs two different annotators")
    want = pair_view_data(a, b, names)
    key = want[MARKER]["view"]
    pairs = sorted((v for v in conn.list_views(project_id)
                    if (_marker_of(v) or "").startswith(PAIR_PREFIX)),
                   key=lambda v: int(v.get("id") or 0))
    mine = [v for v in pairs if _marker_of(v) == key]
    if mine and _same(mine[0], want):
        view_id = int(mine[0]["id"])
    elif mine:
        view_id = int(conn.update_view(int(mine[0]["id"]), project_id, want)["id"])
    else:
        view_id = int(conn.create_view(project_id, want)["id"])
    for dup in mine[1:]:          # a create whose answer was lost and was retried
        conn.delete_view(int(dup["id"]))
    # keep this one and the newest others: MAX_PAIR_VIEWS in all
    others = [int(v["id"]) for v in pairs if _marker_of(v) != key]
    for old in others[:max(0, len(others) - (MAX_PAIR_VIEWS - 1))]:
        conn.delete_view(old)
    return view_id

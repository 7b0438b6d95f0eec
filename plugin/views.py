"""Data Manager views (tabs) the plugin owns: "Low agreement" and one review queue per
annotator.

A view is ours when its ``data`` carries the marker ``{"ls_agreement": {"view": <key>}}``;
the title alone is never enough (a user's own tab may share it). Each sync finds its views
by marker, creates missing ones, updates those whose title/filters/ordering drifted, and
deletes marked duplicates (a create whose answer was lost and was retried), so re-running
never duplicates a view. Filter shapes follow docs/label-studio.md §7:
``filter:tasks:data.<key>`` with type Number; ``filter:tasks:annotators`` (type List) holds
user ids.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .client import Connection
from .pushback import PREFIX

MARKER = "ls_agreement"
LOW_TITLE = "Low agreement"


@dataclass
class ViewsOutcome:
    views: dict[str, int] = field(default_factory=dict)     # marker key -> view id
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[int] = field(default_factory=list)


def _flag_filter() -> dict[str, Any]:
    return {"filter": f"filter:tasks:data.{PREFIX}flag", "operator": "equal",
            "type": "Number", "value": 1}


def desired_views(annotators: Mapping[int, str]) -> dict[str, dict[str, Any]]:
    """The views' ``data`` payloads, keyed by marker key.

    Parameters
    ----------
    annotators : Mapping[int, str]
        Label Studio user id -> email (or display name) of every human annotator.

    Returns
    -------
    dict
        ``{"low": {...}, "review:<id>": {...}}``; each value is a view ``data`` dict with
        ``title``, ``filters`` (conjunction ``and``), ``ordering`` (worst σ first) and the
        marker.
    """
    ordering = [f"tasks:data.{PREFIX}sigma"]  # ascending: lowest sigma = worst first
    out: dict[str, dict[str, Any]] = {
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
    return all(data.get(k) == want[k] for k in ("title", "filters", "ordering", MARKER))


def ensure_views(conn: Connection, project_id: int,
                 annotators: Mapping[int, str]) -> ViewsOutcome:
    """Create or update the plugin's views on a project; never duplicates.

    Parameters
    ----------
    conn : Connection
        Connected client.
    project_id : int
        The project.
    annotators : Mapping[int, str]
        User id -> email of the annotators who get a review queue.
    """
    out = ViewsOutcome()
    want = desired_views(annotators)
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
            view = conn.create_view(project_id, data)
            out.created.append(key)
        elif not _same(have[0], data):
            view = conn.update_view(int(have[0]["id"]), project_id, data)
            out.updated.append(key)
        else:
            view = have[0]
        out.views[key] = int(view["id"])
    # marked views of annotators who no longer annotate anything are left alone: they
    # are harmless (their filter matches nothing) and may hold a reviewer's column setup.
    return out

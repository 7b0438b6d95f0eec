"""Which top-level shapes of a Label Studio export are read, and the messages for the others.

Accepted (docs/label-studio.md §2): the JSON export and snapshot exports (a list of task
objects with ``annotations``), task dicts from the API (same shape), a ``{"tasks": [...]}``
wrapper, or one task object. JSON_MIN and CSV exports flatten away annotation ids and
annotators' identities, so they are refused with a message asking for the JSON export.
The file reader (:mod:`.export_stream`) applies the same checks to what it streams.
"""
from __future__ import annotations

from typing import Any

from .errors import AdapterError

__all__ = ["USE_JSON", "parse_export", "refuse_json_min"]

USE_JSON = "use Label Studio's JSON export (Export -> JSON) or a snapshot export"


def refuse_json_min(task: Any, source: str) -> None:
    """Raise if ``task``, the export's first task object, is a JSON_MIN row (one flat row per
    annotation, without ``annotations`` or ``data``)."""
    if isinstance(task, dict) and "annotations" not in task and "data" not in task and (
            "annotator" in task or "annotation_id" in task):
        raise AdapterError(f"{source} looks like a JSON_MIN export (one flat row per annotation), "
                           f"which lacks annotation ids and results: {USE_JSON}")


def parse_export(data: Any, *, source: str = "export") -> list[dict]:
    """Check the top-level shape of decoded export data and return the task list.

    Parameters
    ----------
    data : Any
        ``json.load`` of an export, or task dicts from the API.
    source : str
        Name used in error messages.

    Raises
    ------
    AdapterError
        A top level that is neither a list of tasks, a ``tasks`` wrapper nor one task; a
        JSON_MIN export.
    """
    if isinstance(data, dict):
        if isinstance(data.get("tasks"), list):
            data = data["tasks"]
        elif "annotations" in data and "id" in data:
            data = [data]
        else:
            raise AdapterError(f"{source}: expected a list of tasks, got an object with keys "
                               f"{sorted(map(str, data))[:8]}; {USE_JSON}")
    if not isinstance(data, list):
        raise AdapterError(f"{source}: expected a list of tasks, got {type(data).__name__}")
    refuse_json_min(next((t for t in data if isinstance(t, dict)), None), source)
    return data

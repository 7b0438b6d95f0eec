"""Demo-shaped Label Studio JSON exports of any size, written to disk task by task.

The tasks are those of ``ls-agreement demo``'s generator (``demo_data.generate``: five
controls, 3-5 of the six annotators per task, the same draws in the same order), so a
10-task export equals ``generate(n_tasks=10)`` plus the fields Label Studio's JSON export
adds (task and annotation ids, timestamps, ``was_cancelled``, ...). Nothing holds the whole
list: each task is drawn, dumped and dropped, so a 1,000,000-task export (about 8.6 GB)
is written in the memory of one task. Run ``python -m benchmarks.big_export N PATH``.
"""
from __future__ import annotations

import importlib
import json
import random
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

__all__ = ["USER_IDS", "demo_module", "iter_tasks", "write_export", "config_xml"]


def demo_module() -> ModuleType:
    """The demo's generator module (it may live in the plugin or in a dev ``demo`` package)."""
    for name in ("ls_agreement.plugin.demo_data", "ls_agreement.demo.demo_data", "demo.demo_data",
                 "ls_agreement.demo.data", "demo.data"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError("cannot find the demo generator (demo_data) to build exports from")


_demo = demo_module()
#: Label Studio user id of each demo annotator (as ``ls-agreement demo`` would get them).
USER_IDS: dict[str, int] = {a.email: 10 + k for k, a in enumerate(_demo.ANNOTATORS)}
_T0 = datetime(2025, 1, 6, 9, 0, tzinfo=timezone.utc)


def config_xml() -> str:
    """The demo project's labeling config."""
    return _demo.DEMO_CONFIG


def iter_tasks(n_tasks: int, seed: int = 7, ambiguous_rate: float = 0.17) -> Iterator[dict[str, Any]]:
    """Yield the demo's tasks one at a time, in Label Studio's JSON-export shape.

    The draws are those of ``demo_data.generate(USER_IDS, n_tasks, seed)`` (same rng, same
    order), so the data and results are equal to its tasks'; only the export's own fields
    (ids, timestamps, ``task``/``project``) are added.
    """
    d = _demo
    rng = random.Random(seed)
    ambiguous_idx = set(rng.sample(range(n_tasks), round(n_tasks * ambiguous_rate)))
    ann_id = 0
    for i in range(n_tasks):
        truth = d._Truth(rng, i in ambiguous_idx, False)
        quality = {k: d.ANSWERS[pos] for pos, k in enumerate(truth.order)}
        answers = [{"id": f"a{k}", "title": f"Answer {chr(65 + k)}", "body": quality[k]} for k in range(4)]
        who = rng.sample(d.ANNOTATORS, rng.randint(3, 5))
        annotations = []
        for a in who:
            lead_time = round(rng.uniform(20, 120), 1)
            ans = truth.answer(rng, a, None, False)
            result = d._results(ans, truth.text, rng, d.DEMO_CONTROLS)
            ann_id += 1
            stamp = (_T0 + timedelta(seconds=37 * ann_id)).isoformat().replace("+00:00", "Z")
            annotations.append({
                "id": ann_id, "completed_by": USER_IDS[a.email], "result": result,
                "was_cancelled": False, "ground_truth": False, "created_at": stamp, "updated_at": stamp,
                "draft_created_at": None, "lead_time": lead_time, "prediction": {}, "result_count": len(result),
                "unique_id": f"{seed:04x}-{ann_id:012x}", "import_id": None, "last_action": None,
                "bulk_created": False, "task": i + 1, "project": 1, "updated_by": None,
                "parent_prediction": None, "parent_annotation": None, "last_created_by": None})
        yield {"id": i + 1,
               "data": {"sample_id": f"demo-{i + 1:03d}", "image": d._svg(truth.boxes), "text": truth.text,
                        "answers": answers},
               "annotations": annotations, "drafts": [], "predictions": [], "meta": {},
               "created_at": _T0.isoformat().replace("+00:00", "Z"), "updated_at": _T0.isoformat().replace("+00:00", "Z"),
               "inner_id": i + 1, "total_annotations": len(annotations), "cancelled_annotations": 0,
               "total_predictions": 0, "comment_count": 0, "unresolved_comment_count": 0,
               "last_comment_updated_at": None, "project": 1, "updated_by": None, "file_upload": None,
               "comment_authors": []}


def write_export(path: str | Path, n_tasks: int, seed: int = 7) -> int:
    """Write a demo-shaped JSON export of ``n_tasks`` tasks to ``path``, one task at a time
    (as Label Studio writes it: a list, one task after another); return its size in bytes."""
    p = Path(path)
    with p.open("w", encoding="utf-8") as fh:
        fh.write("[")
        for k, task in enumerate(iter_tasks(n_tasks, seed)):
            if k:
                fh.write(",\n")
            fh.write(json.dumps(task, ensure_ascii=False))
        fh.write("]\n")
    return p.stat().st_size


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print("usage: python -m benchmarks.big_export N_TASKS PATH [SEED]", file=sys.stderr)
        return 2
    size = write_export(argv[1], int(argv[0]), int(argv[2]) if len(argv) == 3 else 7)
    print(f"{argv[1]}: {int(argv[0]):,} tasks, {size / 1e6:,.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

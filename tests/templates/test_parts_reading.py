"""Every shipped template's export read in parts side by side (issue 24;
adapters/export_stream.py ``split_export``/``iter_part``, adapters/adapt.py
``read_part``/``adapt_parts``): the joined parts are the one reading of the whole -- the
same tables, warnings, names, texts and ground truth -- for every control tag, the
regions that relations and per-region answers point at, masks, tracks and conversations
included."""
from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from ls_agreement.adapters import export_stream
from ls_agreement.adapters.adapt import adapt, adapt_parts, read_part
from ls_agreement.adapters.errors import AdapterError
from ls_agreement.adapters.export_stream import iter_export, iter_part, split_export

from .extra_configs import EXTRA_CONFIGS
from .generator import generate_export
from .ls_templates import load_templates, templates_dir

_DIR, _WHY = templates_dir()
_CONFIGS = {t.key: t.config for t in load_templates(_DIR)} if _DIR is not None else {}
_CONFIGS.update(EXTRA_CONFIGS)


@pytest.mark.parametrize("key", sorted(_CONFIGS))
def test_a_template_export_read_in_parts_is_the_export_read_whole(key, tmp_path, monkeypatch):
    xml = _CONFIGS[key]
    tasks = generate_export(xml, "careless", seed=11, n_tasks=24).tasks
    path = tmp_path / "export.json"
    text = json.dumps(tasks, indent=1)
    path.write_text(text, encoding="utf-8")
    # parts of about a fifth of the file each: every template's export is cut
    monkeypatch.setattr(export_stream, "CHUNK_CHARS", max(len(text) // 6, 64))
    pieces = split_export(path, 4)
    assert pieces is not None and len(pieces) >= 2, key
    try:
        whole = adapt(xml, iter_export(path))
    except AdapterError as exc:          # nothing measurable: the parts say the same
        with pytest.raises(type(exc), match=re.escape(str(exc)[:60])):
            read_part(xml, iter_part(pieces[0]))
        return
    joined = adapt_parts(xml, [read_part(xml, iter_part(p)) for p in pieces])
    assert list(joined.controls) == list(whole.controls) and joined.n_tasks == whole.n_tasks
    assert joined.warnings == whole.warnings
    for n, w in whole.controls.items():
        j = joined.controls[n]
        pd.testing.assert_frame_equal(j.table, w.table, obj=f"{key}: {n}")
        assert (j.texts, j.annotator_names, j.ground_truth, j.warnings) == (w.texts, w.annotator_names,
                                                                           w.ground_truth, w.warnings), n

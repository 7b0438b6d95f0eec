"""The one settings model and loader: from a mapping and from TOML files (flat or [report]/[sync])."""
from __future__ import annotations

import pytest

from ls_agreement.plugin.errors import BadInput
from ls_agreement.plugin.settings import ReportSettings, SyncOptions, load_settings


def test_defaults_and_mapping():
    s = ReportSettings()
    # flags (issue 13): the σ cut is off by default; the rule's level and posterior instead
    assert (s.flag_below, s.p, s.form, s.bootstrap, s.seed, s.strict) == (0.0, 0.05, "canonical", 1000, 0, False)
    assert (s.flag_level, s.flag_posterior) == (0.01, 0.5)
    s = ReportSettings.from_mapping({"distances": {"bbox": "boxes.giou"}, "p": 0.1, "groups": {"g": [3, "4"]}})
    assert s.distance_for("bbox") == "boxes.giou" and s.distance_for("other") == "auto"
    assert s.groups == {"g": ["3", "4"]} and s.p == 0.1


@pytest.mark.parametrize("bad, key", [
    ({"p": 1.5}, "'p'"), ({"p": "x"}, "'p'"), ({"bootstrap": -1}, "'bootstrap'"), ({"form": "other"}, "'form'"),
    ({"strict": "yes"}, "'strict'"), ({"flag_bellow": 0.3}, "flag_bellow"), ({"distances": {"a": 1}}, "distances"),
    ({"groups": {"g": "3"}}, "groups.g"), ({"seed": True}, "'seed'"), ({"plugin_section": {"x": 1}}, "plugin_section"),
    ({"distances": {"bbox": "boxes.gio"}}, "unknown distance"),
])
def test_bad_settings_name_the_key(bad, key):
    with pytest.raises(BadInput, match=key):
        ReportSettings.from_mapping(bad)


def test_one_style_everywhere_file_code_and_overrides():
    """Both tables are validated by the same rules (strict types, ranges, no unknown key),
    whether read from a file, built in code or changed afterwards."""
    with pytest.raises(BadInput, match=r"\[sync\]\.workers"):
        SyncOptions.from_mapping({"workers": 0})
    with pytest.raises(BadInput, match=r"\[sync\]\.backoff"):
        SyncOptions.from_mapping({"backoff": "1"})          # a TOML string is not a number
    assert SyncOptions.from_mapping({"backoff": 1}).backoff == 1.0
    s = ReportSettings(bootstrap=3)
    s.groups = {"a": ["1"], "b": ["2"]}
    s.groups["b"].append("1")                              # in place: caught by validate()
    with pytest.raises(BadInput, match="both 'a' and 'b'"):
        s.validate()
    with pytest.raises(ValueError):
        ReportSettings().seed = -1                          # an assignment is checked too
    assert ReportSettings.from_mapping(ReportSettings(seed=4).to_dict()) == ReportSettings(seed=4)


def test_toml_flat_and_report_table(tmp_path):
    flat = tmp_path / "a.toml"
    flat.write_text('flag_below = 0.3\n[distances]\nbbox = "boxes.giou"\n')
    s = load_settings(flat).report
    assert s.flag_below == 0.3 and s.distances == {"bbox": "boxes.giou"}
    nested = tmp_path / "b.toml"
    nested.write_text('[report]\nbootstrap = 10\n[report.distances]\nner = "spans.strict"\n[sync]\nworkers = 3\n')
    s = load_settings(nested)
    assert s.report.bootstrap == 10 and s.report.distances == {"ner": "spans.strict"} and s.sync.workers == 3
    for text, key in (('[report]\np = 0.1\n[sync]\nx = 1\n', "x"), ('p = 0.1\n[report]\nseed = 1\n', "outside"),
                      ('[report.distances]\nbbox = "nope"\n', "unknown distance")):
        nested.write_text(text)
        with pytest.raises(ValueError, match=key):  # BadInput is a ValueError: exit 2
            load_settings(nested)
    broken = tmp_path / "c.toml"
    broken.write_text("p = = 1")
    with pytest.raises(ValueError, match="not valid TOML"):
        load_settings(broken)

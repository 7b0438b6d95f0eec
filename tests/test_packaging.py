"""Every package folder installs: a non-editable install (the Dockerfile's ``pip install .``)
takes only the packages setup.cfg lists, so a folder missing there is missing in the image."""
from __future__ import annotations

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_listed_in_setup_cfg() -> None:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    listed = {p.strip() for p in cfg["options"]["packages"].split() if p.strip()}
    found = set()
    for top in ("metrics", "adapters", "plugin"):
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT).parts
            found.add(".".join(("ls_agreement", *rel)))
    assert found - listed == set(), "add these to [options] packages in setup.cfg"
    assert listed - found == set(), "setup.cfg lists packages that do not exist"

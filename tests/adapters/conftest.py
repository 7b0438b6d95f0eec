"""Shared fixtures: the real Label Studio config and exports (data/label-studio)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.shared_data import DATA as SHARED_DATA

DATA = SHARED_DATA / "label-studio"
EXPORTS = DATA / "exports"
BROKEN = Path(__file__).parent / "broken"


@pytest.fixture(scope="session")
def config_xml() -> str:
    return (DATA / "label_config.xml").read_text()


def load(name: str) -> list:
    return json.loads((EXPORTS / name).read_text())


@pytest.fixture(scope="session")
def snapshot_expanded() -> list:
    return load("project_export_snapshot_expanded.json")

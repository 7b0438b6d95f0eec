from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

SHARED = Path(__file__).resolve().parents[3] / "shared"
if not SHARED.exists():  # CI: ../shared beside the clone
    SHARED = Path(__file__).resolve().parents[2].parent / "shared"
DATA = SHARED / "data"


def load_json(name: str):
    return json.loads((DATA / name).read_text())


def matrix_to_long(rd: np.ndarray) -> pd.DataFrame:
    """Reliability matrix (annotators × items, NaN = missing) -> long table."""
    ann, item = np.nonzero(~np.isnan(rd))
    return pd.DataFrame({"item": item, "annotator": ann, "value": rd[ann, item]})


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not DATA.exists():
        pytest.fail(f"shared reference data not found at {DATA}")
    return DATA

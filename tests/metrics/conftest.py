from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.shared_data import DATA


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

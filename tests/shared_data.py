"""Where the project's shared reference data lives: ``../shared/data`` beside the clone.

``LS_AGREEMENT_SHARED`` overrides it (a path to the ``shared`` folder).
"""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("LS_AGREEMENT_SHARED", REPO.parent / "shared"))
DATA = SHARED / "data"
if not DATA.is_dir():
    raise RuntimeError(f"reference data not found at {DATA}: the tests need ../shared beside the "
                       "repository (or LS_AGREEMENT_SHARED=/path/to/shared)")

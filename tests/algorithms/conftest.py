"""Fixtures of the algorithm tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from algo_support import DATASETS


@pytest.fixture(scope="session")
def gnmt_path() -> Path:
    """The Baechi GNMT JSON, or a skip when the shared datasets are absent."""
    path = DATASETS / "baechi-gnmt" / "gnmt_baechi.json"
    if not path.is_file():
        pytest.skip(f"dataset absent: {path} (../shared/datasets is not in a user's clone)")
    return path

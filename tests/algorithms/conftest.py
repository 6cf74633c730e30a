"""Fixtures of the algorithm tests."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from algo_support import DATASETS

from planner.algorithms.listsched import etf


@pytest.fixture
def no_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The move budget alone ends `search`'s and `auto`'s searches, however busy the machine
    (`clock.cap`): a test of what the moves find does not depend on the load (under eight
    CPU hogs a 2 s search was cut after 8,763 of its 9,584 moves)."""
    from planner.algorithms import auto, search

    monkeypatch.setattr(auto, "cap", lambda limit: math.inf)
    monkeypatch.setattr(search, "cap", lambda limit: math.inf)


@pytest.fixture(scope="session")
def gnmt_path() -> Path:
    """The Baechi GNMT JSON, or a skip when the shared datasets are absent."""
    path = DATASETS / "baechi-gnmt" / "gnmt_baechi.json"
    if not path.is_file():
        pytest.skip(f"dataset absent: {path} (../shared/datasets is not in a user's clone)")
    return path


@pytest.fixture(params=["reference", pytest.param("kernel", marks=pytest.mark.slow)])
def list_engine(request: pytest.FixtureRequest, _engines_as_at_start: None) -> Iterator[str]:
    """Each list-scheduling engine in turn, as the only one: "reference" (Python) and
    "kernel" (compiled: the first passes of m-ETF and m-SCT, `etf._kernel_case`; the
    Python engine runs the rest under both). A hand-derived module takes it with
    `pytestmark = pytest.mark.usefixtures("list_engine")`, so that both meet the same
    battery. "kernel" is `slow`: it loads numba, and on a machine that has not compiled
    the engine yet (`python -m planner.algorithms.listsched`) compiles it (about 18 s).
    The root conftest's `_engines_as_at_start` puts the switch back afterwards."""
    if request.param == "kernel":
        pytest.importorskip("numba", reason="numba is not installed: no compiled engine")
        etf.prepare()
    etf.ENGINE = request.param
    yield request.param

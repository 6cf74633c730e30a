"""Fixtures of the `planner compare` tests: the standard sweep's reference rows and two
`solve --html` reports (the plain helpers they use are in helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.compare import SweepResult, run_sweep

from .helpers import ROOT, big_spec, solve_html, standard_sweep


@pytest.fixture(scope="session")
def clean() -> SweepResult:
    """The standard sweep run in-process, with plans kept: the reference rows."""
    return run_sweep(standard_sweep(), executor="inline", keep_plans=True)


@pytest.fixture(scope="session")
def resnet_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The solve report of specs/resnet.plan (177 ops)."""
    out = tmp_path_factory.mktemp("resnet") / "resnet.html"
    solve_html(ROOT / "specs" / "resnet.plan", out, "msct")
    return out


@pytest.fixture(scope="session")
def big_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The solve report of a generated 10,000-op spec."""
    folder = tmp_path_factory.mktemp("big")
    out = folder / "big.html"
    solve_html(big_spec(10_000, folder), out, "heft")
    return out

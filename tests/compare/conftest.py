"""Shared fixtures of the `planner compare` tests: two small specs and one standard grid."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from planner.compare import TIMING_FIELDS, Sweep, SweepResult, plan_sweep, run_sweep

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SPECS = (FIXTURES / "fork.plan", FIXTURES / "chain.plan")
#: 2 specs × 3 bandwidths × 3 memory caps × 3 algorithms = 54 points
GRID: dict[str, str] = {"algorithms": "msct,heft,mtopo", "bandwidths": "1GB/s,5GB/s,50GB/s",
                        "memories": "25%,50%,100%"}


def standard_sweep() -> Sweep:
    """The standard grid on the two fixture specs."""
    return plan_sweep(list(SPECS), GRID["algorithms"], bandwidths=GRID["bandwidths"],
                      memories=GRID["memories"], time_limit_s=2.0)


def stable(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows without the fields that vary between identical runs."""
    return [{k: v for k, v in r.items() if k not in TIMING_FIELDS} for r in rows]


@pytest.fixture(scope="session")
def clean() -> SweepResult:
    """The standard sweep run in-process, with plans kept: the reference rows."""
    return run_sweep(standard_sweep(), executor="inline", keep_plans=True)

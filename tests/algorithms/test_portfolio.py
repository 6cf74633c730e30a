"""`portfolio.rank` on two cores gives exactly what it gives on one."""

from __future__ import annotations

import multiprocessing

import pytest
from algo_support import load_spec

from planner.algorithms import Options, portfolio


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                    reason="forked workers need the fork start method (POSIX)")
@pytest.mark.parametrize("fixture", ["forkjoin", "hetero", "tight"])
def test_two_processes_rank_exactly_as_one(monkeypatch: pytest.MonkeyPatch,
                                           fixture: str) -> None:
    problem = load_spec(fixture)
    alone = portfolio.rank(problem, Options())
    monkeypatch.setattr(portfolio, "PARALLEL_MIN_OPS", 0)
    monkeypatch.setattr(portfolio.os, "cpu_count", lambda: 2)
    pooled = portfolio.rank(problem, Options())
    assert pooled.plans == alone.plans
    assert pooled.candidates == alone.candidates
    assert [e.diagnostics for e in pooled.errors] == [e.diagnostics for e in alone.errors]

"""`portfolio.rank` on two cores gives exactly what it gives on one."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest
from algo_support import load_spec

import planner
from planner.algorithms import Options, portfolio
from planner.bounds import lower_bound
from planner.model import Problem
from planner.simulate import simulate


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


def test_candidates_expected_to_overrun_the_limit_are_skipped_with_a_reason(
        monkeypatch: pytest.MonkeyPatch) -> None:
    problem = load_spec("forkjoin")  # 18 ops and 24 edges: 42 elements
    monkeypatch.setitem(portfolio.SECONDS_PER_ELEMENT, "cpop", 1.0)  # 42 s expected
    ranked = portfolio.rank(problem, Options(), limit_s=10.0)
    assert ranked.skipped == {"cpop": "skipped: expected to take 42 s > the 10 s limit"}
    assert ranked.candidates["cpop"] is None
    assert all(name != "cpop" for name, _, _ in ranked.plans)
    assert portfolio.rank(problem, Options()).candidates["cpop"] is not None  # no limit


@pytest.mark.slow
def test_auto_leaves_the_search_out_when_the_heuristics_take_the_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from planner.algorithms import run

    problem = load_spec("forkjoin")
    for name in portfolio.CANDIDATES:
        monkeypatch.setitem(portfolio.SECONDS_PER_ELEMENT, name, 0.1)  # 4.2 s each
    # m-SCT's LP at its worst comes on top of its 4.2 s: metf is the first of the fastest
    assert 0 < portfolio.estimated_seconds(problem, "msct") - 4.2 < 0.01
    # 30 s: the seven fit, 29.4 s together: no time left to search
    sol = run("auto", problem, Options(time_limit_s=30.0))
    assert sol.info["skipped"] == {}
    assert sol.info["search"] == ("skipped: the heuristics are expected to take 29.4 s of "
                                  "the 30 s limit")
    # 5 s: each fits alone, not two together: the fastest runs, the others are skipped
    sol = run("auto", problem, Options(time_limit_s=5.0))
    assert set(sol.info["skipped"]) == set(portfolio.CANDIDATES) - {"metf"}
    assert sol.info["skipped"]["heft"] == ("skipped: expected to take 4.2 s, more than the "
                                           "0.8 s the 5 s limit leaves after the faster ones")
    # 4 s: each overruns; the fastest runs all the same
    sol = run("auto", problem, Options(time_limit_s=4.0))
    assert set(sol.info["skipped"]) == set(portfolio.CANDIDATES) - {"metf"}
    assert sol.info["skipped"]["heft"] == "skipped: expected to take 4.2 s > the 4 s limit"
    assert [n for n in portfolio.CANDIDATES if sol.info["candidates"][n] is not None] == ["metf"]
    # candidates ten times faster (2.94 s for the seven) and 25 s: the search's share (0.3,
    # CP-SAT follows) is 7.5 s, of which the heuristics' time counts twice (the budgets
    # fill half the limit, `search.LOAD_HEADROOM`): 1.62 s are left, and the search runs
    for name in portfolio.CANDIDATES:
        monkeypatch.setitem(portfolio.SECONDS_PER_ELEMENT, name, 0.01)
    sol = run("auto", problem, Options(time_limit_s=25.0))
    assert not sol.info["search"].startswith("skipped")


def _resnet() -> Problem:
    return planner.load(Path(__file__).resolve().parents[2] / "specs" / "resnet.plan").plan()


def test_where_the_candidates_run_find_no_plan_the_skipped_run_fastest_first() -> None:
    """ResNet-50 on four 8 GiB GPUs at a 1 ms limit: `single`, the fastest expected, is
    the only one under the limit and no GPU holds the graph. Without `until_found` nothing
    is found; with it the skipped run in order of expected time until one finds a plan,
    and the rest stay skipped."""
    problem = _resnet()
    alone = portfolio.rank(problem, Options(), limit_s=0.001)
    assert alone.best is None and set(alone.candidates) - set(alone.skipped) == {"single"}
    ranked = portfolio.rank(problem, Options(), limit_s=0.001, until_found=True)
    assert ranked.best is not None
    name, makespan, plan = ranked.best
    order = sorted(alone.skipped, key=lambda n: portfolio.estimated_seconds(problem, n))
    ran = order[:order.index(name) + 1]
    assert all(ranked.candidates[n] is None for n in ran[:-1])  # none before it found one
    assert set(ranked.skipped) == set(order) - set(ran)
    assert simulate(problem, plan).makespan_s == makespan
    assert makespan >= lower_bound(problem).makespan_s


def test_auto_at_a_tiny_limit_plans_instead_of_calling_the_problem_infeasible() -> None:
    """It said E706 (exit 3: "no single device holds all 177 ops") at 1 ms, where 0 s and
    10 ms give a plan."""
    from planner.algorithms import run

    problem = _resnet()
    sol = run("auto", problem, Options(time_limit_s=0.001))
    assert sol.status != "fallback"
    result = simulate(problem, sol.plan)
    assert result.feasible and result.makespan_s >= lower_bound(problem).makespan_s
    assert sol.info["chosen"] not in sol.info["skipped"]
    assert sol.info["candidates"]["single"] is None
    again = run("auto", problem, Options(time_limit_s=0.001))
    assert again.plan.placement == sol.plan.placement  # by expected time, not the clock
    assert all(reason.startswith("skipped: expected to take 0.0")
               for reason in sol.info["skipped"].values())  # not "0 s > the 0.001 s limit"

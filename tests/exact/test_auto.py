"""`auto`: best simulated heuristic plan, improved by CP-SAT on small graphs."""

from __future__ import annotations

import pytest

from planner.algorithms import Options, run
from planner.algorithms.auto import CANDIDATES, CPSAT_MAX_OPS
from planner.errors import InfeasibleError
from planner.simulate import simulate

from .bruteforce import optimum, valid_placements
from .instances import layered_problem, random_problem


def test_auto_keeps_the_best_simulated_plan_under_the_specs_contention() -> None:
    problem = random_problem(3, 12, 3, contention="link")
    sol = run("auto", problem, Options(time_limit_s=10.0))
    cands = sol.info["candidates"]
    assert set(CANDIDATES) <= set(cands)
    finite = {k: v for k, v in cands.items() if v is not None}
    assert sol.info["chosen"] in finite
    assert sol.info["objective_s"] == min(finite.values())
    sim = simulate(problem, sol.plan)
    assert sim.feasible
    assert sim.makespan_s == sol.info["objective_s"]
    assert sol.info["bound_s"] <= sol.info["objective_s"]
    # the first algorithm (registry order, then the search and CP-SAT phases) among those
    # tied at the best makespan is chosen
    tied = [k for k in (*CANDIDATES, "search", "cpsat") if cands.get(k) == sol.info["objective_s"]]
    assert sol.info["chosen"] == tied[0]


def test_auto_is_optimal_on_a_small_graph_without_contention() -> None:
    problem = random_problem(1, 7, 2)
    opt = optimum(problem)[0]
    sol = run("auto", problem, Options(time_limit_s=20.0, gap=1e-7))
    assert sol.status == "optimal"
    assert sol.info["cpsat"] == "optimal"
    assert sol.info["objective_s"] == pytest.approx(opt, rel=1e-6)


def test_auto_skips_cpsat_on_big_graphs() -> None:
    problem = layered_problem(1, CPSAT_MAX_OPS + 1, 2)
    sol = run("auto", problem, Options(time_limit_s=30.0))
    assert sol.info["cpsat"].startswith("skipped")
    assert "cpsat" not in sol.info["candidates"]
    assert sol.status == "feasible"
    assert sol.info["chosen"] in CANDIDATES


def test_auto_skips_cpsat_when_no_time_is_left() -> None:
    sol = run("auto", random_problem(2, 8, 2), Options(time_limit_s=0.0))
    assert sol.info["cpsat"].startswith("skipped")


def test_auto_raises_infeasible_when_nothing_fits() -> None:
    problem = random_problem(10, 6, 2, memory=0.8, pins=1, colocate=True)
    assert len(valid_placements(problem)) == 0  # the premise: brute force finds no placement
    with pytest.raises(InfeasibleError) as err:
        run("auto", problem, Options(time_limit_s=10.0))
    assert err.value.diagnostics

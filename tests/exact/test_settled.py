"""`ilp` runs no solver when the warm start already meets the lower bound.

GLPK takes no MIP start: on STG 50/rand0015 with P=2, where m-SCT's plan is the optimum
(264 = the bound), `--solver glpk` spent its whole 60 s limit and returned the warm start
as `fallback`. HiGHS and CBC stopped at once (0.1-0.2 s), having nothing to improve.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from planner.algorithms import Options, run
from planner.algorithms.exact import backends
from planner.model import Edge, Problem
from planner.simulate import simulate

from .instances import random_problem, stg_path, stg_problem

STG = Path(__file__).resolve().parents[2] / "../shared/datasets/stg"


def _chain_problem() -> Problem:
    """Four ops on two identical devices, a chain: one device meets the critical path."""
    problem = random_problem(7, 4, 2, identical=True)
    graph = dataclasses.replace(problem.graph, edges=tuple(Edge(i, i + 1, 0) for i in range(3)))
    return dataclasses.replace(problem, graph=graph)


@pytest.mark.parametrize("solver", ["highs", "cbc", "glpk"])
def test_a_warm_start_at_the_bound_is_optimal_without_a_solver(
        monkeypatch: pytest.MonkeyPatch, solver: str) -> None:
    problem = _chain_problem()
    ran: list[object] = []
    monkeypatch.setattr(backends, "solve_pyomo", lambda *a, **k: ran.append(a))
    sol = run("ilp", problem, Options(solver=solver, time_limit_s=60.0))
    assert not ran
    assert sol.status == "optimal" and sol.info["gap"] == 0.0
    assert sol.info["solver_status"] == "skipped" and sol.info["solve_s"] == 0.0
    assert f"{solver} was not run" in sol.info["why"]
    assert simulate(problem, sol.plan).makespan_s == sol.info["bound_s"]
    assert sol.plan.algorithm == "ilp"


def test_emit_still_writes_the_model_when_the_warm_start_is_at_the_bound(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    ran: list[object] = []
    monkeypatch.setattr(backends, "solve_pyomo", lambda *a, **k: ran.append(a))
    path = tmp_path / "model.lp"
    sol = run("ilp", _chain_problem(), Options(time_limit_s=60.0, emit=str(path)))
    assert not ran and sol.status == "optimal" and sol.info["rows"] > 0
    assert "c_l_precedence(" in path.read_text()


def test_glpk_on_an_stg_graph_whose_heuristic_plan_is_optimal() -> None:
    if not backends.available("glpk"):
        pytest.skip("solver `glpk` is not installed (run solvers/install.sh)")
    path = stg_path(STG, "50/rand0015.stg") if (STG / "optimal").is_dir() else None
    if path is None:
        pytest.skip(f"STG dataset not found at {STG.resolve()}")
    problem = stg_problem(path, 2)
    sol = run("ilp", problem, Options(solver="glpk", time_limit_s=5.0))
    # before: 5 s of GLPK, then `fallback` "glpk gave no solution (its time limit ...)"
    assert sol.status == "optimal" and sol.info["solve_s"] == 0.0, sol.info
    assert simulate(problem, sol.plan).makespan_s == 264.0

"""Corner cases: one device, zero-duration ops, progress reports, odd solver names."""

from __future__ import annotations

import pytest

from planner.algorithms import Options, run
from planner.model import Cluster, Device, Edge, Graph, Link, Op, Problem
from planner.simulate import simulate

from .bruteforce import optimum


def _problem(n_dev: int, ops: tuple[Op, ...], edges: tuple[Edge, ...]) -> Problem:
    devices = tuple(Device(f"d{i}", 1 << 40, "gpu") for i in range(n_dev))
    links = tuple(Link(a, b, 1e9, 1e-5) for a in range(n_dev) for b in range(n_dev) if a != b)
    return Problem("p", Graph("g", ops, edges), Cluster("c", devices, links), "static", "none")


@pytest.mark.parametrize("algo", ["cpsat", "ilp"])
def test_zero_duration_ops_never_deadlock(algo: str) -> None:
    # a zero-time fan-in/fan-out around real work: ties at one instant must keep precedence
    ops = (Op("in", time_s=0.0), Op("a", time_s=2e-3), Op("b", time_s=0.0),
           Op("c", time_s=1e-3), Op("out", time_s=0.0))
    edges = (Edge(0, 1, 1000), Edge(0, 2, 1000), Edge(2, 3, 10**6), Edge(1, 4, 1000),
             Edge(3, 4, 1000))
    problem = _problem(2, ops, edges)
    sol = run(algo, problem, Options(time_limit_s=20.0, gap=1e-7))
    sim = simulate(problem, sol.plan)
    assert sim.feasible, sim.violations
    assert sol.status == "optimal"
    assert sim.makespan_s == pytest.approx(optimum(problem)[0], rel=1e-6)


@pytest.mark.parametrize("algo", ["cpsat", "ilp", "auto"])
def test_one_device_and_an_empty_graph(algo: str) -> None:
    ops = (Op("a", time_s=1e-3), Op("b", time_s=2e-3), Op("c", time_s=3e-3))
    problem = _problem(1, ops, (Edge(0, 2, 10),))
    sol = run(algo, problem, Options(time_limit_s=10.0))
    assert simulate(problem, sol.plan).makespan_s == pytest.approx(6e-3)
    if algo != "auto":
        empty = run(algo, _problem(2, (), ()), Options())
        assert empty.status == "optimal" and empty.plan.placement == ()


@pytest.mark.parametrize("algo", ["cpsat", "ilp"])
def test_progress_is_reported_in_order(algo: str) -> None:
    seen: list[tuple[float, str]] = []
    ops = tuple(Op(f"o{i}", time_s=(i % 3 + 1) * 1e-3) for i in range(6))
    problem = _problem(2, ops, (Edge(0, 3, 10**6), Edge(1, 4, 10**6), Edge(2, 5, 10**6)))
    run(algo, problem, Options(time_limit_s=10.0,
                               progress=lambda f, msg: seen.append((f, msg))))
    assert seen
    fractions = [f for f, _ in seen]
    assert all(0.0 <= f <= 1.0 for f in fractions)
    assert fractions == sorted(fractions)


def test_cpsat_is_not_an_ilp_solver() -> None:
    ops = (Op("a", time_s=1e-3), Op("b", time_s=2e-3))
    sol = run("ilp", _problem(2, ops, ()), Options(solver="cpsat", time_limit_s=5.0))
    assert sol.status == "fallback"
    assert "use --algo cpsat" in sol.info["reason"]

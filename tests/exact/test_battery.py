"""Every exact back-end reaches the brute-force optimum on small reference instances.

The reference (`bruteforce.py`) enumerates placements × linear extensions under contention
`none`; it is itself checked against the simulator. Back-ends that are not installed are
skipped with the reason (run solvers/install.sh for cbc and glpk).
"""

from __future__ import annotations

import dataclasses
import math
from functools import cache

import pytest

from planner.algorithms import Options, run
from planner.algorithms.exact import backends
from planner.errors import InfeasibleError
from planner.model import Problem
from planner.plan import Plan
from planner.simulate import simulate

from .bruteforce import optimum
from .instances import random_problem

#: (id, random_problem kwargs, warm start from this algorithm instead of m-SCT)
CASES: list[tuple[str, dict[str, object], str | None]] = [
    ("hetero-6x3", {"seed": 0, "n": 6, "m": 3}, None),
    ("hetero-7x2", {"seed": 1, "n": 7, "m": 2}, "roundrobin"),
    ("hetero-6x3-b", {"seed": 2, "n": 6, "m": 3}, "single"),
    ("memory-pin-colocate", {"seed": 10, "n": 6, "m": 2, "memory": 1.0, "pins": 1,
                             "colocate": True}, None),
    ("memory-3dev", {"seed": 21, "n": 6, "m": 3, "memory": 0.6}, "roundrobin"),
    ("memory-3dev-b", {"seed": 23, "n": 6, "m": 3, "memory": 0.7}, None),
    ("missing-link", {"seed": 11, "n": 6, "m": 3, "missing_link": True}, None),
    ("identical", {"seed": 12, "n": 6, "m": 3, "identical": True}, "roundrobin"),
    ("identical-7", {"seed": 13, "n": 7, "m": 2, "identical": True}, None),
    ("pins-2", {"seed": 14, "n": 7, "m": 3, "pins": 2, "edge_p": 0.5}, None),
    ("colocate-3dev", {"seed": 15, "n": 6, "m": 3, "colocate": True, "edge_p": 0.2}, "single"),
]
BACKENDS = ("cpsat", "highs", "cbc", "glpk")


@cache
def _case(case_id: str) -> tuple[Problem, float, tuple[int, ...] | None, tuple[int, ...] | None,
                                  str | None]:
    for cid, kwargs, warm in CASES:
        if cid == case_id:
            problem = random_problem(**kwargs)  # type: ignore[arg-type]
            opt, placement, order = optimum(problem)
            return problem, opt, placement, order, warm
    raise KeyError(case_id)


def _need(backend: str) -> None:
    if backend != "cpsat" and not backends.available(backend):
        pytest.skip(f"solver `{backend}` is not installed (run solvers/install.sh)")


def _options(problem: Problem, backend: str, warm: str | None) -> Options:
    opts = Options(solver=backend if backend != "cpsat" else "highs", time_limit_s=30.0,
                   gap=1e-7)
    if warm is not None:
        try:
            plan = run(warm, problem).plan
        except InfeasibleError:
            return opts
        opts = dataclasses.replace(opts, warm_start=plan)
    return opts


@pytest.mark.parametrize("case_id", [c[0] for c in CASES])
def test_reference_agrees_with_the_simulator(case_id: str) -> None:
    problem, opt, placement, order, _ = _case(case_id)
    assert math.isfinite(opt) and placement is not None and order is not None
    seqs: list[list[int]] = [[] for _ in problem.cluster.devices]
    for i in order:
        seqs[placement[i]].append(i)
    sim = simulate(problem, Plan(placement, tuple(map(tuple, seqs))))
    assert sim.feasible
    assert sim.makespan_s == pytest.approx(opt, rel=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case_id", [c[0] for c in CASES])
def test_backend_reaches_the_optimum(case_id: str, backend: str) -> None:
    _need(backend)
    problem, opt, _, _, warm = _case(case_id)
    algo = "cpsat" if backend == "cpsat" else "ilp"
    sol = run(algo, problem, _options(problem, backend, warm))
    assert sol.status == "optimal", sol.info
    assert sol.info["objective_s"] == pytest.approx(opt, rel=1e-6)
    assert sol.info["bound_s"] <= opt * (1 + 1e-9)
    sim = simulate(problem, sol.plan)
    assert sim.feasible, sim.violations
    assert sim.makespan_s == pytest.approx(opt, rel=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_infeasible_memory_is_reported_as_infeasible(backend: str) -> None:
    _need(backend)
    problem = random_problem(10, 6, 2, memory=0.8, pins=1, colocate=True)
    assert optimum(problem)[0] == math.inf  # the reference agrees: nothing fits
    algo = "cpsat" if backend == "cpsat" else "ilp"
    with pytest.raises(InfeasibleError) as err:
        run(algo, problem, Options(solver=backend if backend != "cpsat" else "highs",
                                   time_limit_s=30.0))
    assert err.value.exit_code == 3
    assert err.value.diagnostics

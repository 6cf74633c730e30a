"""Property tests: random DAGs with tight memory caps, pins and colocation groups: a feasible
plan or an explained infeasibility, and a plan from every list scheduler whenever m-TOPO
finds one."""

from __future__ import annotations

from types import MappingProxyType

import pytest
from algo_support import HEURISTICS, check_plan
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.algorithms import run
from planner.algorithms.infeasible import diagnose
from planner.errors import InfeasibleError
from planner.model import Cluster, Device, Edge, Graph, Link, Op, Problem

MIB = 1024**2
PROOFS = {"E301", "E302", "E303", "E304", "E305"}
#: the memory-aware list schedulers: they find a plan whenever m-TOPO does
LIST_SCHEDULERS = ("msct", "metf", "heft", "cpop")


@st.composite
def problems(draw: st.DrawFn) -> tuple[Problem, bool]:
    """A random DAG problem, and whether its caps are generous (every device holds all)."""
    n = draw(st.integers(1, 12))
    m = draw(st.integers(1, 4))
    ops = tuple(
        Op(f"o{i}", draw(st.sampled_from([0.0, 1e-4, 1e-3, 5e-3])),
           params_bytes=draw(st.integers(0, 8)) * MIB,
           output_bytes=draw(st.integers(0, 4)) * MIB,
           temp_bytes=draw(st.integers(0, 4)) * MIB)
        for i in range(n))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    chosen = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=2 * n)) if pairs else []
    edges = tuple(Edge(i, j, ops[i].output_bytes) for i, j in sorted(chosen))
    # colocation groups: disjoint pairs
    groups: list[tuple[int, int]] = []
    if n >= 2 and draw(st.booleans()):
        a, b = draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True))
        groups.append((min(a, b), max(a, b)))
    everything = sum(o.params_bytes + 2 * o.output_bytes + o.temp_bytes for o in ops)
    generous = draw(st.booleans())
    if generous:
        caps = [everything + MIB] * m
    else:
        caps = [draw(st.integers(1, 40)) * MIB for _ in range(m)]
    pins: dict[int, int] = {}
    if not generous and draw(st.booleans()):
        i = draw(st.integers(0, n - 1))
        pins[i] = draw(st.integers(0, m - 1))
    devices = tuple(Device(f"d{k}", caps[k], None, draw(st.sampled_from([0.5, 1.0, 2.0])))
                    for k in range(m))
    links = tuple(Link(a, b, draw(st.sampled_from([1e9, 1e10])), 1e-5)
                  for a in range(m) for b in range(m) if a != b)
    graph = Graph("g", ops, edges, tuple(groups))
    problem = Problem("p", graph, Cluster("c", devices, links),
                      draw(st.sampled_from(["static", "liveness"])),
                      draw(st.sampled_from(["none", "link", "device"])),
                      MappingProxyType(pins))
    return problem, generous


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@pytest.mark.slow
@given(problems())
def test_feasible_plan_or_explained_infeasibility(case: tuple[Problem, bool]) -> None:
    problem, generous = case
    proofs = diagnose(problem)
    found_plan = mtopo_found = False
    for algorithm in sorted(HEURISTICS, key=lambda a: a != "mtopo"):
        try:
            solution = run(algorithm, problem)
        except InfeasibleError as err:
            codes = {d.code for d in err.diagnostics}
            assert err.diagnostics
            if proofs:  # a proof of infeasibility is what every algorithm reports
                assert codes <= PROOFS
            # with room for everything everywhere, no memory-aware algorithm gets stuck
            assert not generous, (algorithm, [d.message for d in err.diagnostics])
            # the list schedulers fall back to m-TOPO's placement (m-TOPO runs first)
            assert algorithm not in LIST_SCHEDULERS or not mtopo_found, algorithm
            continue
        check_plan(problem, solution.plan)
        found_plan = True
        if algorithm == "mtopo":
            mtopo_found = True
    if found_plan:
        assert not proofs, [d.message for d in proofs]  # the proofs are sound

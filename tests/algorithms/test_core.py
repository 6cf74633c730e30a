"""The shared core: ranks, m-SCT's LP and favourites, pins and groups in the schedulers."""

from __future__ import annotations

from types import MappingProxyType

import pytest
from algo_dags import MIB, layered_problem
from algo_support import check_plan, load_spec

from planner.algorithms import Options, run
from planner.algorithms.listsched import (
    Instance,
    Placer,
    etf_schedule,
    priority_positions,
    retime,
    upward_rank,
)
from planner.algorithms.msct import favourite_children, lp_relaxation
from planner.errors import InfeasibleError
from planner.model import Cluster, Device, Edge, Graph, Link, Op, Problem

# both list-scheduling engines meet these hand-derived cases (`list_engine`, conftest.py)
pytestmark = pytest.mark.usefixtures("list_engine")


def _triangle(pin_cap_mib: int) -> Problem:
    # o0 -> o1 -> o2 and o0 -> o2; o2 (2 MiB temp) pinned to d1
    ops = (Op("o0", 1e-4), Op("o1", 1e-4), Op("o2", 1e-4, temp_bytes=2 * MIB))
    edges = (Edge(0, 1, 0), Edge(0, 2, 0), Edge(1, 2, 0))
    devs = (Device("d0", 2 * MIB), Device("d1", pin_cap_mib * MIB))
    links = (Link(0, 1, 1e9, 1e-5), Link(1, 0, 1e9, 1e-5))
    return Problem("p", Graph("g", ops, edges), Cluster("c", devs, links),
                   pins=MappingProxyType({2: 1}))


@pytest.mark.parametrize("algorithm", ["msct", "metf", "heft", "cpop"])
def test_a_pinned_favourite_child_stays_on_its_pin(algorithm: str) -> None:
    plan = run(algorithm, _triangle(2)).plan
    assert plan.placement[2] == 1
    check_plan(_triangle(2), plan)
    with pytest.raises(InfeasibleError) as err:  # the pin cannot hold it
        run(algorithm, _triangle(1))
    assert [d.code for d in err.value.diagnostics] == ["E302"]


def test_lp_favourites_respect_the_one_child_one_parent_rule() -> None:
    problem = layered_problem(300, 520, 4, seed=3)
    inst = Instance(problem)
    x, lp_w = lp_relaxation(inst)
    assert x.shape == (len(problem.graph.edges),)
    assert ((x >= -1e-9) & (x <= 1 + 1e-9)).all()
    # the LP relaxes communication away at best: it is at least the longest compute path
    longest = [0.0] * inst.n
    for i in inst.topo:
        longest[i] = inst.mean_compute[i] + max((longest[p] for p, _ in inst.pred[i]),
                                                default=0.0)
    assert lp_w >= max(longest) * (1 - 1e-6)
    fav = favourite_children(inst, x, 0.5)
    children = [f for f in fav if f >= 0]
    assert len(children) == len(set(children))  # one favourite parent per op
    edges = {(e.src, e.dst): k for k, e in enumerate(problem.graph.edges)}
    for i, f in enumerate(fav):
        if f >= 0:
            assert x[edges[(i, f)]] < 0.5
    # a lower threshold can only drop favourites
    assert sum(f >= 0 for f in favourite_children(inst, x, 0.1)) <= len(children)


def test_threshold_option_reaches_msct() -> None:
    problem = layered_problem(120, 200, 3, seed=5)
    none = run("msct", problem, Options(threshold=0.0))
    assert none.info["favourites"] == 0
    # with no favourites m-SCT is ETF with upward-rank ties
    inst = Instance(problem)
    placement, _ = etf_schedule(inst, Placer(inst), priority_positions(inst, upward_rank(inst)))
    assert none.plan.placement == tuple(placement)
    assert run("msct", problem).info["favourites"] > 0


def test_retime_uses_one_copy_per_device_with_the_largest_bytes() -> None:
    problem = load_spec("topcuoglu")
    inst = Instance(problem)
    solution = run("heft", problem)
    seq = sorted(range(inst.n), key=lambda i: (solution.plan.start_s[i], inst.topo_pos[i]))
    start = retime(inst, solution.plan.placement, seq)
    n4 = problem.graph.op_index["n4"]
    assert start[n4] == 23.0  # n1 ends at 9 on p3; its copy to p2 carries 14 B (for n6)


@pytest.mark.parametrize("algorithm", ["msct", "metf", "heft", "cpop", "mtopo", "roundrobin"])
def test_groups_and_pins_on_a_random_dag(algorithm: str) -> None:
    base = layered_problem(200, 350, 4, seed=11, groups=20, cap_bytes=512 * MIB,
                           contention="device")
    pins = {0: 3, 50: 1}
    for members in base.graph.colocations:  # keep pins consistent with the groups
        if any(i in pins for i in members):
            d = next(pins[i] for i in members if i in pins)
            pins.update({i: d for i in members})
    problem = Problem(base.name, base.graph, base.cluster, "static", "device",
                      MappingProxyType(pins))
    plan = run(algorithm, problem).plan
    check_plan(problem, plan)
    for i, d in pins.items():
        assert plan.placement[i] == d


@pytest.mark.parametrize("algorithm", ["msct", "metf", "heft", "cpop", "mtopo"])
def test_a_0_byte_edge_to_an_unlinked_device_is_no_shortcut(algorithm: str) -> None:
    """`d2` has no link (the API and the language refuse that, E244; a Problem built by
    hand does not). Before: the engines timed a 0-byte transfer there as NaN (inf * 0),
    which lost every comparison: `b` on `d2` started at 0, before `a` ended, and the
    simulator found no link (makespan inf). Now it costs inf, as in `cost.transfer_seconds`
    and the simulator."""
    ops = tuple(Op(name, 1e-3) for name in "abcd")
    edges = (Edge(0, 1, 0), Edge(0, 2, 0), Edge(0, 3, 0))
    devs = tuple(Device(f"d{k}", MIB) for k in range(3))
    links = (Link(0, 1, 1e9, 1e-6), Link(1, 0, 1e9, 1e-6))
    problem = Problem("p", Graph("g", ops, edges), Cluster("c", devs, links))
    plan = run(algorithm, problem).plan
    result = check_plan(problem, plan)
    assert 2 not in plan.placement
    assert plan.start_s == result.start_s

"""The shared data of the exact models: timing, ticks, identical devices, windows."""

from __future__ import annotations

import random

import pytest

from planner.algorithms.exact.cpsat_model import choose_tick
from planner.algorithms.exact.instance import Instance
from planner.errors import InfeasibleError
from planner.model import Cluster, Device, Edge, Graph, Link, Op, Problem
from planner.plan import Plan
from planner.simulate import simulate

from .instances import random_problem


def _dgx(pins: dict[int, int] | None = None) -> Problem:
    """8 GPUs in two NVLink islands of 4, bridged slower, plus a slower CPU."""
    devices = tuple(Device(f"gpu{i}", 16 << 30, "v100", 1.0) for i in range(8)) + (
        Device("cpu0", 256 << 30, "cpu", 0.05),)
    links = []
    for a in range(9):
        for b in range(9):
            if a == b:
                continue
            if 8 in (a, b):
                links.append(Link(a, b, 12e9, 10e-6))
            elif (a < 4) == (b < 4):
                links.append(Link(a, b, 50e9, 2e-6))
            else:
                links.append(Link(a, b, 25e9, 4e-6))
    ops = tuple(Op(f"op{i}", time_s=1e-3) for i in range(4))
    graph = Graph("g", ops, (Edge(0, 1, 1 << 20), Edge(1, 2, 1 << 20), Edge(0, 3, 1 << 20)))
    return Problem("p", graph, Cluster("dgx", devices, tuple(links)), "static", "none",
                   pins or {})


def test_identical_devices_are_the_two_nvlink_islands() -> None:
    assert Instance(_dgx()).classes == ((0, 1, 2, 3), (4, 5, 6, 7))
    # a pinned device is named by the spec: it leaves its class
    assert Instance(_dgx({0: 5})).classes == ((0, 1, 2, 3), (4, 6, 7))


def test_canonical_orders_class_devices_by_their_first_unit() -> None:
    inst = Instance(_dgx())
    place = inst.canonical([3, 1, 7, 1])
    # op0 on the first device of its class, op1 on the next one, op2 first of the other
    assert place == [0, 1, 4, 1]
    assert inst.timing(place, list(inst.topo))[1] == inst.timing([3, 1, 7, 1],
                                                                 list(inst.topo))[1]


@pytest.mark.parametrize("seed", range(6))
def test_timing_is_the_simulators_under_contention_none(seed: int) -> None:
    problem = random_problem(seed, 9, 3, edge_p=0.5)
    inst = Instance(problem)
    rng = random.Random(seed)
    for _ in range(5):
        place = [rng.randrange(3) for _ in range(inst.n)]
        if not inst.respects(place):
            continue
        order = inst.priority_order([rng.random() for _ in range(inst.n)])
        seqs: list[list[int]] = [[] for _ in range(3)]
        for i in order:
            seqs[place[i]].append(i)
        sim = simulate(problem, Plan(tuple(place), tuple(map(tuple, seqs))))
        start, makespan = inst.timing(place, order)
        assert makespan == pytest.approx(sim.makespan_s, rel=1e-12)
        assert start == pytest.approx(list(sim.start_s), rel=1e-12, abs=1e-15)


def test_windows_bound_every_schedule() -> None:
    problem = random_problem(5, 9, 3)
    inst = Instance(problem)
    order = list(inst.topo)
    place = [0] * inst.n
    start, makespan = inst.timing(place, order)
    for i in range(inst.n):
        assert inst.head[i] <= start[i] + 1e-12
        assert start[i] + inst.proc[i][0] + inst.tail[i] <= makespan + 1e-12
    assert inst.trivial_bound <= makespan <= inst.horizon


def test_tick_is_exact_on_a_grid_and_fine_enough_otherwise() -> None:
    assert choose_tick([9.0, 4.0, 3.0], 100.0, 200.0, 50, 1e-4) == (1.0, True)
    assert choose_tick([0.009, 0.004], 0.1, 0.2, 50, 1e-4) == (pytest.approx(1e-3), True)
    tick, exact = choose_tick([1 / 3, 2 / 7], 1.0, 2.0, 40, 1e-4)
    assert not exact
    assert 40 * tick <= 1e-4 * 1.0 / 2  # rounding costs at most half the gap


def test_conflicting_pins_in_a_colocation_group_are_infeasible() -> None:
    problem = random_problem(1, 5, 3)
    graph = Graph(problem.graph.name, problem.graph.ops, problem.graph.edges, ((0, 1),))
    bad = Problem("bad", graph, problem.cluster, "static", "none", {0: 0, 1: 2})
    with pytest.raises(InfeasibleError) as err:
        Instance(bad)
    assert err.value.diagnostics[0].code == "E304"
    assert "pinned to several devices" in err.value.diagnostics[0].message

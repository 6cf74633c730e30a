"""Lower bounds: hand-computed values, tightness where known, validity on random plans."""

from __future__ import annotations

import dataclasses

import highspy
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from placed_cases import PROPERTY, Case, simulated

import planner
from planner.bounds import Bounds, lower_bound
from planner.cost import costs
from planner.model import Cluster, Device, Edge, Graph, Link, Op, Problem
from planner.plan import Plan
from planner.simulate import simulate

MS = 1e-3
MB = 1_000_000
#: property tests: no per-example deadline (fixed or random examples: `tests/conftest.py`)


def load(graph: str, plan: str = "", devices: str = "device d[0..2] { memory 1 GB }",
         memory: str = "static") -> Problem:
    """A problem on the given devices, all linked at 1 GB/s (1 MB takes 1 ms)."""
    text = f"""
    cluster c {{
      {devices}
      link d[*] <-> d[*] {{ bandwidth 1 GB/s }}
    }}
    graph g {{
    {graph}
    }}
    plan p {{ graph g cluster c memory {memory}
    {plan}
    }}
    """
    return planner.loads(text).plan()


def test_critical_path_and_work() -> None:
    # a (2 ms) -> b (3 ms), c (1 ms) alone: longest path 5 ms; work 6 ms / 3 devices = 2.
    b = lower_bound(load("op a { time 2 ms }\nop b { time 3 ms }\nop c { time 1 ms }\na -> b"))
    assert b.critical_path_s == pytest.approx(5 * MS)
    assert b.work_s == pytest.approx(2 * MS)
    assert b.makespan_s == pytest.approx(5 * MS)


def test_critical_path_uses_each_ops_fastest_device() -> None:
    # speed 2 halves every time: 2 ms + 3 ms on d1 -> 2.5 ms; work 3 ms / 2 devices.
    b = lower_bound(load("op a { time 2 ms }\nop b { time 3 ms }\nop c { time 1 ms }\na -> b",
                         devices="device d0 { memory 1 GB }\n"
                                 "device d1 { memory 1 GB speed 2 }"))
    assert b.critical_path_s == pytest.approx(2.5 * MS)
    assert b.work_s == pytest.approx(1.5 * MS)


def test_load_bound_on_related_devices_is_tight() -> None:
    # Four independent 3 ms ops on speeds 1 and 3. Fastest times are 1 ms each: work
    # bound 4 / 2 = 2 ms. The LP bound with weights proportional to speed (1/4, 3/4):
    # each op's share is min(1/4 * 3, 3/4 * 1) = 0.75 ms, total 3 ms. Three ops on the
    # fast device and one on the slow one take exactly 3 ms, so 3 ms is optimal.
    p = load("\n".join(f"op o{i} {{ time 3 ms }}" for i in range(4)),
             devices="device d0 { memory 1 GB }\ndevice d1 { memory 1 GB speed 3 }")
    b = lower_bound(p)
    assert b.work_s == pytest.approx(2 * MS)
    assert b.load_s == pytest.approx(3 * MS)
    assert b.makespan_s == pytest.approx(3 * MS)
    assert simulate(p, Plan((0, 1, 1, 1))).makespan_s == pytest.approx(b.makespan_s)


def test_pins_load_one_device() -> None:
    # three 1 ms ops pinned to d0 must run one after another there: 3 ms.
    p = load("op a { time 1 ms }\nop b { time 1 ms }\nop c { time 1 ms }", "pin a, b, c to d0")
    b = lower_bound(p)
    assert (b.critical_path_s, b.work_s) == (pytest.approx(1 * MS), pytest.approx(1 * MS))
    assert b.load_s == pytest.approx(3 * MS)
    assert b.makespan_s == pytest.approx(3 * MS)


def test_colocated_ops_share_one_device() -> None:
    # a colocation group of three independent 1 ms ops runs on one device: 3 ms.
    b = lower_bound(load("op a { time 1 ms }\nop b { time 1 ms }\nop c { time 1 ms }\n"
                         "colocate a, b, c"))
    assert b.work_s == pytest.approx(1 * MS)
    assert b.load_s == pytest.approx(3 * MS)


def test_forced_transfer_lengthens_the_path() -> None:
    # a pinned to d0 and b to d1: the 2 MB tensor must cross (2 ms): 1 + 2 + 1 = 4 ms.
    b = lower_bound(load("op a { time 1 ms output 2 MB }\nop b { time 1 ms }\na -> b",
                         "pin a to d0; pin b to d1"))
    assert b.critical_path_s == pytest.approx(2 * MS)
    assert b.constrained_path_s == pytest.approx(4 * MS)
    assert b.makespan_s == pytest.approx(4 * MS)


def test_an_input_pinned_behind_a_slow_link_delays_what_follows() -> None:
    # `in` (1 ms, 100 MB) is pinned to d0, a CPU 100x slower than the GPUs d1, d2; every
    # link is 1 GB/s, so 100 MB take 100 ms. `a` (10 ms on a GPU) runs on d0 in 1 + 1000 ms
    # or on a GPU in 1 + 100 + 10 = 111 ms. On main the bound was the 11 ms critical path.
    b = lower_bound(load("op in { time 1 ms output 100 MB }\nop a { time 10 ms time[cpu] "
                         "1000 ms }\nin -> a", "pin in to d0",
                         devices="device d0 { kind cpu memory 1 GB }\n"
                                 "device d[1..2] { memory 1 GB }"))
    assert b.critical_path_s == pytest.approx(11 * MS)
    assert b.arrival_path_s == pytest.approx(111 * MS)
    assert b.makespan_s == pytest.approx(111 * MS)


@pytest.mark.parametrize(("n_ops", "memory", "need_mb", "devices"), [
    (3, "static", 10, 3),     # outputs 3 x 3 MB + the largest temp 1 MB; 4 + 4 < 10 <= 12
    (4, "static", 13, 4),     # 13 MB > 12 MB of caps: one more device than the cluster has
    # no params; three sinks whose 3 MB outputs are never freed (no consumer): 9 MB, and
    # 4 + 4 < 9 <= 12 (on main: 4 MB, one op's output + temp, blind to what sinks keep)
    (3, "liveness", 9, 3),
])
def test_memory_bound(n_ops: int, memory: str, need_mb: int, devices: int) -> None:
    ops = "\n".join(f"op o{i} {{ time 1 ms output 3 MB temp 1 MB }}" for i in range(n_ops))
    b = lower_bound(load(ops, devices="device d[0..2] { memory 4 MB }", memory=memory))
    assert b.memory_bytes == need_mb * MB
    assert b.min_devices == devices


def test_empty_graph() -> None:
    p = load("op a { time 1 ms }")
    empty = dataclasses.replace(p, graph=Graph("g", (), ()), pins={}, placement={})
    assert lower_bound(empty) == Bounds(0.0, 0.0, 0.0, 0)


def test_to_json_is_plain_and_ordered() -> None:
    b = lower_bound(load("op a { time 1 ms }"))
    assert list(b.to_json()) == ["makespan_s", "critical_path_s", "work_s", "min_devices",
                                 "constrained_path_s", "load_s", "memory_bytes",
                                 "arrival_path_s", "memory_path_s", "forced_colocation_s",
                                 "ramp_s"]


# -- properties -----------------------------------------------------------------------


@st.composite
def constrained(draw: st.DrawFn) -> Case:
    """A random problem with pins, colocations and related/unrelated speeds, and a
    random placement that respects its pins and colocation groups."""
    n = draw(st.integers(1, 12))
    m = draw(st.integers(1, 4))
    kinds = [draw(st.sampled_from(["x", "y"])) for _ in range(m)]
    ops = []
    for i in range(n):
        by_kind = {"y": draw(st.integers(1, 12)) * 0.25e-3} if draw(st.booleans()) else {}
        ops.append(Op(f"o{i}", time_s=draw(st.integers(1, 12)) * 0.25e-3,
                      time_by_kind=by_kind))
    pairs = draw(st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
                         .filter(lambda t: t[0] < t[1]), max_size=2 * n))
    edges = tuple(Edge(a, b, draw(st.integers(0, 3)) * MB) for a, b in sorted(pairs))
    groups: list[tuple[int, ...]] = []
    free = list(range(n))
    while len(free) >= 2 and draw(st.booleans()):
        size = draw(st.integers(2, min(3, len(free))))
        groups.append(tuple(sorted(free[:size])))
        free = free[size:]
    devices = tuple(Device(f"d{d}", 1 << 30, kinds[d], draw(st.sampled_from([0.5, 1, 2])))
                    for d in range(m))
    links = tuple(Link(a, b, draw(st.sampled_from([0.5e9, 2e9])), draw(st.sampled_from(
        [0.0, 2e-4]))) for a in range(m) for b in range(m) if a != b)
    # one device per colocation group (or lone op), pins follow that choice
    unit = {i: g for g in groups for i in g}
    choice: dict[tuple[int, ...], int] = {}
    placement = []
    for i in range(n):
        key = unit.get(i, (i,))
        if key not in choice:
            choice[key] = draw(st.integers(0, m - 1))
        placement.append(choice[key])
    pins = {i: placement[i] for i in range(n) if draw(st.integers(0, 3)) == 0}
    problem = Problem("p", Graph("g", tuple(ops), edges, tuple(groups)),
                      Cluster("c", devices, links), "static",
                      draw(st.sampled_from(["none", "link", "device"])), pins)
    return problem, tuple(placement)


@pytest.mark.slow
@settings(PROPERTY, max_examples=150)
@given(constrained())
def test_property_every_respecting_plan_is_above_every_bound(case: Case) -> None:
    p, _, r = simulated(case)
    assert r.feasible
    b = lower_bound(p)
    assert b.makespan_s == max(b.critical_path_s, b.work_s, b.constrained_path_s, b.load_s,
                               b.arrival_path_s, b.memory_path_s, b.forced_colocation_s,
                               b.ramp_s)
    assert b.arrival_path_s >= b.constrained_path_s * (1 - 1e-12)
    assert b.constrained_path_s >= b.critical_path_s * (1 - 1e-12)
    assert b.load_s >= b.work_s * (1 - 1e-12)
    assert r.makespan_s >= b.makespan_s * (1 - 1e-9)


def fractional_assignment_optimum(problem: Problem) -> tuple[float, float]:
    """(LP optimum, largest job's fastest time), computed independently with HiGHS.

    LP: min T s.t. sum_d x_jd = 1 and sum_j c_jd x_jd <= T, colocation groups as single
    jobs, pins as the only allowed device.
    """
    comp = np.array(costs(problem).compute)
    n, m = comp.shape
    jobs: list[tuple[int, ...]] = list(problem.graph.colocations)
    grouped = {i for g in jobs for i in g}
    jobs += [(i,) for i in range(n) if i not in grouped]
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    top = h.addVariable(lb=0.0)
    loads = [0.0 * top for _ in range(m)]
    whole = 0.0
    for job in jobs:
        row = comp[list(job)].sum(axis=0)
        pinned = {problem.pins[i] for i in job if i in problem.pins}
        devices = [d for d in range(m) if not pinned or d in pinned]
        whole = max(whole, min(row[d] for d in devices))
        share = [h.addVariable(lb=0.0) for _ in devices]
        h.addConstr(sum(share[1:], share[0]) == 1)
        for x, d in zip(share, devices, strict=True):
            loads[d] = loads[d] + float(row[d]) * x
    for load in loads:
        h.addConstr(load - top <= 0)
    h.minimize(top)
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return h.getInfo().objective_function_value, whole


@settings(PROPERTY, max_examples=60)
@given(constrained())
def test_property_load_bound_is_the_lp_optimum(case: Case) -> None:
    # load_s is max(the LP-dual value found, the largest job whole on its fastest device):
    # never above the LP optimum or that job (valid), and the search reaches the optimum.
    p, _ = case
    lp, whole = fractional_assignment_optimum(p)
    b = lower_bound(p)
    assert b.load_s <= max(lp, whole) * (1 + 1e-9)
    assert b.load_s >= max(lp, whole) * (1 - 1e-6)


# -- transfers forced by memory ----------------------------------------------------------


CHAIN = """
op a { time 1 ms  params 6 MB }
op b { time 1 ms  params 6 MB }
op c { time 1 ms  params 6 MB }
a -> b { bytes 1 MB }
b -> c { bytes 2 MB }
"""


@pytest.mark.parametrize("memory", ["static", "liveness"])
def test_memory_forces_every_cut_of_a_chain(memory: str) -> None:
    # no two ops' params fit one 10 MB device, so the chain crosses at both edges:
    # 3 ms of compute + 1 ms (1 MB) + 2 ms (2 MB) at 1 GB/s = 6 ms, and the plan
    # with one op per device takes exactly that: the bound is tight
    p = load(CHAIN, devices="device d[0..2] { memory 10 MB }", memory=memory)
    b = lower_bound(p)
    assert b.critical_path_s == pytest.approx(3 * MS)
    assert b.memory_path_s == pytest.approx(6 * MS)
    assert b.makespan_s == pytest.approx(6 * MS)
    r = simulate(p, Plan((0, 1, 2)))
    assert r.feasible and r.makespan_s == pytest.approx(6 * MS)


def test_memory_forces_only_the_cheapest_cut() -> None:
    # 13 MB devices hold two ops: one cut, at the cheaper edge a -> b (1 ms)
    b = lower_bound(load(CHAIN, devices="device d[0..1] { memory 13 MB }"))
    assert b.memory_path_s == pytest.approx(4 * MS)


def test_no_memory_forced_cut_when_everything_fits_one_device() -> None:
    b = lower_bound(load(CHAIN, devices="device d[0..1] { memory 18 MB }"))
    assert b.memory_path_s == 0.0
    assert b.makespan_s == pytest.approx(3 * MS)


def test_a_colocation_group_is_never_cut() -> None:
    # with a and b colocated (12 MB, one 13 MB device), the one forced cut must be at
    # b -> c (2 ms), although a -> b (1 ms) is cheaper: 3 + 2 = 5 ms, as the plan takes
    p = load(CHAIN + "colocate a, b", devices="device d[0..1] { memory 13 MB }")
    b = lower_bound(p)
    assert b.memory_path_s == pytest.approx(5 * MS)
    r = simulate(p, Plan((0, 0, 1)))
    assert r.feasible and r.makespan_s == pytest.approx(5 * MS)


@st.composite
def tight(draw: st.DrawFn) -> Case:
    """A random DAG around a chain whose ops carry params close to the devices' caps, and
    a random placement that respects its colocation groups (it may not fit)."""
    n = draw(st.integers(2, 8))
    m = draw(st.integers(2, 4))
    ops = tuple(Op(f"o{i}", time_s=draw(st.integers(1, 8)) * 0.25e-3,
                   params_bytes=draw(st.integers(2, 6)) * MB,
                   output_bytes=draw(st.integers(0, 2)) * MB,
                   temp_bytes=draw(st.integers(0, 2)) * MB) for i in range(n))
    pairs = draw(st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
                         .filter(lambda t: t[0] < t[1]), max_size=n))
    pairs |= {(i, i + 1) for i in range(n - 1)}
    edges = tuple(Edge(a, b, draw(st.integers(0, 3)) * MB) for a, b in sorted(pairs))
    groups = ((0, 1),) if n >= 3 and draw(st.booleans()) else ()
    cap = draw(st.integers(8, 16)) * MB
    devices = tuple(Device(f"d{d}", cap) for d in range(m))
    links = tuple(Link(a, b, 1e9, draw(st.sampled_from([0.0, 1e-4])))
                  for a in range(m) for b in range(m) if a != b)
    placement = [draw(st.integers(0, m - 1)) for _ in range(n)]
    if groups:
        placement[1] = placement[0]
    problem = Problem("p", Graph("g", ops, edges, groups), Cluster("c", devices, links),
                      draw(st.sampled_from(["static", "liveness"])),
                      draw(st.sampled_from(["none", "link", "device"])), {})
    return problem, tuple(placement)


@pytest.mark.slow
@settings(PROPERTY, max_examples=300)
@given(tight())
def test_property_memory_path_is_below_every_plan_that_fits(case: Case) -> None:
    p, _, r = simulated(case)
    if not r.feasible:
        return  # over a cap: not a plan the bound speaks about
    b = lower_bound(p)
    assert r.makespan_s >= b.memory_path_s * (1 - 1e-9)
    assert r.makespan_s >= b.makespan_s * (1 - 1e-9)

"""Hand-checked cases: the HEFT/CPOP example of Topcuoglu et al. 2002, an SCT case where
waiting for the favourite child beats greedy ETF, and m-TOPO's budget rule."""

from __future__ import annotations

import pytest
from algo_dags import MIB
from algo_support import check_plan, load_spec

from planner.algorithms import run
from planner.algorithms.cpop import critical_path
from planner.algorithms.listsched import (
    Instance,
    Placer,
    downward_rank,
    insertion_schedule,
    priority_positions,
    upward_rank,
)
from planner.algorithms.mtopo import budgets
from planner.model import Cluster, Device, Edge, Graph, Link, Op, Problem

# both list-scheduling engines meet these hand-derived cases (`list_engine`, conftest.py)
pytestmark = pytest.mark.usefixtures("list_engine")

# Topcuoglu, Hariri, Wu 2002, Fig. 3(b)/Table: HEFT's schedule (start times, processor);
# p1..p3 are devices 0..2.
HEFT_SCHEDULE = {
    "n1": (0, 2), "n3": (9, 2), "n4": (18, 1), "n2": (27, 0), "n5": (28, 2), "n6": (26, 1),
    "n9": (56, 1), "n7": (38, 2), "n8": (57, 0), "n10": (73, 1),
}
# the paper's upward ranks (rounded to 3 decimals in its Table 2)
HEFT_RANKS = {"n1": 108.0, "n2": 77.0, "n3": 80.0, "n4": 80.0, "n5": 69.0, "n6": 63.333,
              "n7": 42.667, "n8": 35.667, "n9": 44.333, "n10": 14.667}


def test_heft_ranks_match_the_paper() -> None:
    problem = load_spec("topcuoglu")
    rank = upward_rank(Instance(problem))
    for name, want in HEFT_RANKS.items():
        assert rank[problem.graph.op_index[name]] == pytest.approx(want, abs=1e-3)


def test_heft_reproduces_the_published_schedule() -> None:
    problem = load_spec("topcuoglu")
    inst = Instance(problem)
    placement, start = insertion_schedule(
        inst, Placer(inst), priority_positions(inst, upward_rank(inst)))
    got = {op.name: (start[i], placement[i]) for i, op in enumerate(problem.graph.ops)}
    assert got == HEFT_SCHEDULE
    solution = run("heft", problem)
    assert solution.info["estimate_s"] == 80.0
    assert solution.plan.placement == tuple(placement)


def test_heft_textbook_plan_in_the_simulator() -> None:
    # The paper charges each edge its own cost; the cost model sends n1's tensor to p2 once,
    # carrying the larger of its edges there (n1->n4 9 B, n1->n6 14 B). So in the
    # simulator n4 starts at 9 + 14 = 23 (not 18) and ends at 31; n6 runs 31-47; n9 waits
    # for n2 (p1, ends 40, +16 -> 56) and runs 56-68; n8 on p1 waits for n6 (47 + 15 = 62)
    # and runs 62-67; n10 waits for n8 (67 + 11 = 78), n7 (p3: 38-49, +17 = 66) and n9
    # (68, local): it runs 78-85.
    problem = load_spec("topcuoglu")
    result = check_plan(problem, run("heft", problem).plan)
    assert result.makespan_s == 85.0


def test_cpop_reproduces_the_published_schedule() -> None:
    problem = load_spec("topcuoglu")
    inst = Instance(problem)
    up, down = upward_rank(inst), downward_rank(inst)
    path = critical_path(inst, [u + d for u, d in zip(up, down, strict=True)])
    assert [problem.graph.ops[i].name for i in path] == ["n1", "n2", "n9", "n10"]
    solution = run("cpop", problem)
    assert solution.info["estimate_s"] == 86.0  # the paper's CPOP makespan
    assert solution.info["critical_path_device"] == "p2"
    for name in ("n1", "n2", "n9", "n10"):
        assert solution.plan.placement[problem.graph.op_index[name]] == 1
    check_plan(problem, solution.plan)


def test_sct_waits_for_the_favourite_child_and_beats_etf() -> None:
    problem = load_spec("sct")  # the arithmetic is in the fixture's comments
    etf = check_plan(problem, run("metf", problem).plan)
    sct_solution = run("msct", problem)
    sct = check_plan(problem, sct_solution.plan)
    assert etf.makespan_s == 23.0
    assert sct.makespan_s == 22.0
    assert sct_solution.info["lp_makespan_s"] == pytest.approx(17.5)
    names = problem.graph.ops
    order = [[names[i].name for i in seq] for seq in sct_solution.plan.order or ()]
    assert order == [["s", "y", "z"], ["i", "f", "g"]]


def _chain_of_params(n: int, caps: list[int]) -> Problem:
    ops = tuple(Op(f"o{i}", 1e-3, params_bytes=100 * MIB) for i in range(n))
    edges = tuple(Edge(i, i + 1, 0) for i in range(n - 1))
    devs = tuple(Device(f"gpu{d}", c) for d, c in enumerate(caps))
    links = tuple(Link(a, b, 1e9) for a in range(len(caps)) for b in range(len(caps)) if a != b)
    return Problem("chain", Graph("chain", ops, edges), Cluster("c", devs, links))


def test_mtopo_fills_devices_up_to_the_budget() -> None:
    # 600 MiB over 3 devices: budget 600/3 + 100 (largest op) = 300 MiB each
    problem = _chain_of_params(6, [1024 * MIB] * 3)
    assert budgets(Instance(problem)) == [300 * MIB] * 3
    plan = check_plan(problem, run("mtopo", problem).plan)
    assert plan.placement == (0, 0, 0, 1, 1, 1)


def test_mtopo_budget_never_exceeds_the_real_cap() -> None:
    problem = _chain_of_params(6, [250 * MIB] * 3)  # min(250, 300) = 250: two ops each
    assert budgets(Instance(problem)) == [250 * MIB] * 3
    assert run("mtopo", problem).plan.placement == (0, 0, 1, 1, 2, 2)


def test_mtopo_spills_leftovers_to_the_first_device_with_room() -> None:
    # budgets 150, 150, 300: one op, one op, three ops; the sixth spills under the real
    # caps: gpu0 (100 + 100 > 150) and gpu1 are full, gpu2 has 400 - 300 = 100 left
    problem = _chain_of_params(6, [150 * MIB, 150 * MIB, 400 * MIB])
    plan = check_plan(problem, run("mtopo", problem).plan)
    assert plan.placement == (0, 1, 2, 2, 2, 2)

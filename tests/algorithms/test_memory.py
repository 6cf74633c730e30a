"""Memory-tight training graphs: greedy passes that dead-end retry with budgets, and fall back
to m-TOPO's placement, so a plan is found whenever m-TOPO finds one."""

from __future__ import annotations

import dataclasses
import random

import pytest
from algo_dags import MIB, training_problem
from algo_support import check_plan
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.algorithms import Options, run
from planner.algorithms.listsched import (
    Instance,
    Placer,
    Stuck,
    budget_ladder,
    etf_schedule,
    insertion_schedule,
    priority_positions,
    topo_budgets,
    topo_fill,
    upward_rank,
)
from planner.errors import InfeasibleError
from planner.model import Cluster, Device, Edge, Graph, Link, Op, Problem

# both list-scheduling engines meet these hand-derived cases (`list_engine`, conftest.py)
pytestmark = pytest.mark.usefixtures("list_engine")

LIST_SCHEDULERS = ("msct", "metf", "heft", "cpop")


@pytest.mark.parametrize("algorithm", LIST_SCHEDULERS)
@pytest.mark.parametrize(("layers", "seed", "slack"), [(16, 2, 2.0), (16, 3, 1.5)])
def test_training_graphs_that_dead_end_retry_with_a_budget(algorithm: str, layers: int,
                                                           seed: int, slack: float) -> None:
    # the first pass fills devices with forward ops until a backward op, forced onto its
    # forward op's device by their colocation, finds no room for the gradient it receives
    problem = training_problem(layers, 4, seed, slack=slack)
    solution = run(algorithm, problem)
    assert solution.status == "feasible"
    assert solution.info["memory_passes"] > 1
    budget = solution.info["memory_budget_bytes"]
    caps = [d.memory_bytes for d in problem.cluster.devices]
    assert all(b < c for b, c in zip(budget, caps, strict=True))
    result = check_plan(problem, solution.plan)
    assert len(set(solution.plan.placement)) > 1
    assert max(result.memory_peak_bytes) <= caps[0]


@pytest.mark.parametrize("memory", ["static", "liveness"])
@pytest.mark.parametrize("algorithm", ["msct", "cpop"])
def test_memory_passes_counts_every_pass_that_ran(algorithm: str, memory: str) -> None:
    # both dead-end at first and fit under a budget; under liveness the retry without
    # memory checks runs (and fails its simulation) before the budgets, one pass more
    problem = dataclasses.replace(training_problem(16, 4, 2, slack=2.0), memory_model=memory)
    solution = run(algorithm, problem)
    assert solution.status == "feasible" and "memory_check" not in solution.info
    rung = budget_ladder(Instance(problem)).index(list(solution.info["memory_budget_bytes"]))
    first_and_retry = 2 if memory == "liveness" else 1
    assert solution.info["memory_passes"] == first_and_retry + rung + 1
    check_plan(problem, solution.plan)


def test_the_last_resort_is_mtopos_placement() -> None:
    # CPOP dead-ends under every budget here (its critical path fills one device), m-TOPO
    # does not: CPOP returns m-TOPO's placement, in its own order, and says so
    problem = training_problem(12, 4, 1, slack=1.5)
    solution = run("cpop", problem)
    assert solution.status == "fallback"
    assert solution.info["memory_passes"] == len(budget_ladder(Instance(problem))) + 2
    assert "CPOP ran out of memory under every budget" in solution.info["reason"]
    assert solution.plan.placement == run("mtopo", problem).plan.placement
    check_plan(problem, solution.plan)


def test_the_ladder_tightens_towards_an_even_share() -> None:
    problem = training_problem(16, 4, 2, slack=2.0)
    inst = Instance(problem)
    ladder = budget_ladder(inst)
    share = (sum(inst.po) + sum(inst.temp)) // inst.m
    assert [r[0] for r in ladder] == sorted((r[0] for r in ladder), reverse=True)
    assert ladder[0][0] < inst.caps[0]
    assert ladder[-1] == [share] * 4
    assert topo_budgets(inst) in ladder


def _budget_case() -> tuple[Instance, Placer]:
    # o0 (60 MiB) in a group with o2 (30 MiB), o1 (30 MiB) pinned to gpu1, o3 (30 MiB) free
    ops = tuple(Op(f"o{i}", 1e-3, params_bytes=s * MIB) for i, s in enumerate((60, 30, 30, 30)))
    devs = (Device("gpu0", 100 * MIB), Device("gpu1", 100 * MIB))
    links = (Link(0, 1, 1e9), Link(1, 0, 1e9))
    problem = Problem("p", Graph("g", ops, (Edge(0, 2, 0),), ((0, 2),)),
                      Cluster("c", devs, links), pins={1: 1})
    inst = Instance(problem)
    return inst, Placer(inst, budget=[50 * MIB, 50 * MIB])


def test_budgets_bind_free_choices_only() -> None:
    inst, placer = _budget_case()
    assert not placer.fits(0, 0)  # binding the group takes 90 MiB: a choice, over budget
    assert placer.fits(0, 0, inst.caps)
    assert placer.fits(1, 1) and placer.forced(1)  # pinned: judged by the memory (30 MiB)
    placer.spilled[0] = True  # fits under its budget nowhere: may use the whole memory
    assert placer.fits(0, 0)
    placer.commit(0, 0)
    assert placer.forced(2) and placer.fits(2, 0)  # its group is bound: 90 MiB of 100
    assert not placer.fits(3, 0)  # free: 60 + 30 reserved + 30 MiB, over the budget
    placer.commit(1, 1)
    assert not placer.forced(3) and not placer.fits(3, 1)  # 60 MiB, over the 50 MiB budget
    assert placer.fits(3, 1, inst.caps)


def test_fallback_placement_is_a_complete_fill() -> None:
    problem = training_problem(12, 4, 1, slack=1.5)
    inst = Instance(problem)
    placer = Placer(inst)
    topo_fill(inst, placer)
    assert min(placer.device_of) >= 0
    assert all(u <= c for u, c in zip(placer.tracker.used, inst.caps, strict=True))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(4, 14), st.integers(2, 4), st.integers(0, 10_000),
       st.sampled_from([1.3, 1.5, 2.0, 3.0]), st.sampled_from(["none", "device"]))
def test_whenever_mtopo_finds_a_plan_every_list_scheduler_does(
        layers: int, devices: int, seed: int, slack: float, contention: str) -> None:
    problem = training_problem(layers, devices, seed, slack=slack, contention=contention)
    try:
        run("mtopo", problem)
    except InfeasibleError:
        return
    for algorithm in LIST_SCHEDULERS:
        check_plan(problem, run(algorithm, problem).plan)


def _big_source_case(sizes: tuple[tuple[int, int], ...],
                     edges: tuple[tuple[int, int, int], ...]) -> Problem:
    ops = tuple(Op(f"o{i}", 1e-3, params_bytes=p * MIB, output_bytes=o * MIB)
                for i, (p, o) in enumerate(sizes))
    devs = (Device("gpu0", 100 * MIB), Device("gpu1", 100 * MIB))
    links = (Link(0, 1, 1e9), Link(1, 0, 1e9))
    return Problem("p", Graph("g", ops, tuple(Edge(s, d, b * MIB) for s, d, b in edges)),
                   Cluster("c", devs, links))


# o0 (51 MiB) is a source with one consumer, so the schedulers colocate it with that
# consumer: the pair (102 or 101 MiB) fits on neither 100 MiB device, where o0 apart fits
# (fork: o0 and o1, 97 MiB, beside o2 and a 3 MiB copy; chain: o1 and o2, 95 MiB and a copy)
@pytest.mark.parametrize("algorithm", (*LIST_SCHEDULERS, "mtopo"))
@pytest.mark.parametrize(("sizes", "edges"), [
    (((48, 3), (46, 0), (22, 29)), ((0, 2, 3),)),
    (((48, 3), (49, 1), (44, 1)), ((0, 1, 3), (1, 2, 1)))], ids=["fork", "chain"])
def test_a_large_source_need_not_follow_its_consumer(
        algorithm: str, sizes: tuple[tuple[int, int], ...],
        edges: tuple[tuple[int, int, int], ...]) -> None:
    problem = _big_source_case(sizes, edges)
    inst = Instance(problem)
    assert inst.group_of[0] == inst.group_of[edges[0][1]] >= 0  # o0 follows its consumer
    solution = run(algorithm, problem)  # E704 before: the pair fit nowhere, in every pass
    assert solution.info["sources_follow"] is False
    result = check_plan(problem, solution.plan)
    assert solution.plan.placement[0] != solution.plan.placement[edges[0][1]]
    assert max(result.memory_peak_bytes) <= 100 * MIB


@pytest.mark.parametrize("algorithm", (*LIST_SCHEDULERS, "mtopo", "roundrobin"))
def test_retries_keep_room_for_the_ops_pinned_to_a_device(algorithm: str) -> None:
    # o0 -> o1 -> o2 (52, 46 and 52 MiB), o2 pinned to gpu0: the first pass puts o0 and o1
    # on gpu0 (98 of 100 MiB), the budget passes o0 there, m-TOPO's walk both; each left
    # no room for o2 (and m-TOPO's own walk, and roundrobin's deal). The retries now count
    # o2's 52 MiB on gpu0 from the start
    ops = tuple(Op(f"o{i}", 1e-3, params_bytes=s * MIB, output_bytes=s * MIB)
                for i, s in enumerate((26, 23, 26)))
    devs = (Device("gpu0", 100 * MIB), Device("gpu1", 100 * MIB))
    links = (Link(0, 1, 1e9), Link(1, 0, 1e9))
    problem = Problem("p", Graph("g", ops, (Edge(0, 1, 26 * MIB), Edge(1, 2, 23 * MIB))),
                      Cluster("c", devs, links), pins={2: 0})
    solution = run(algorithm, problem)  # E704 before, after every pass
    if algorithm in LIST_SCHEDULERS:
        assert solution.info["memory_passes"] > 1
    else:  # the walks that place first, then order (`fill_and_order`)
        assert solution.info["pins_reserved"] is True
    assert solution.plan.placement == (1, 1, 0)
    result = check_plan(problem, solution.plan)
    assert max(result.memory_peak_bytes) <= 100 * MIB


def test_mtopos_walk_retries_with_budgets() -> None:
    # three forward ops, each colocated with its backward op (groups of 44, 49 and 45 MiB):
    # m-TOPO's walk put f0 and f1 on gpu0 (93 of 98 MiB), and b1 then had no room for the
    # 9 MiB gradient from b2 on gpu1; the even share (69 MiB) keeps f1's group apart
    fwd = ((34, 1, 9), (21, 18, 10), (25, 11, 9))  # params, output, backward output (MiB)
    ops = (*(Op(f"f{i}", 1e-3, params_bytes=p * MIB, output_bytes=o * MIB)
             for i, (p, o, _) in enumerate(fwd)),
           *(Op(f"b{i}", 2e-3, output_bytes=g * MIB) for i, (_, _, g) in enumerate(fwd)))
    edges = ((0, 1, 1), (1, 2, 18), (2, 5, 11), (5, 4, 9), (4, 3, 10), (0, 3, 1), (1, 4, 18))
    devs = (Device("gpu0", 98 * MIB), Device("gpu1", 98 * MIB))
    links = (Link(0, 1, 1e9), Link(1, 0, 1e9))
    problem = Problem("p", Graph("g", ops, tuple(Edge(s, d, b * MIB) for s, d, b in edges),
                                 ((0, 3), (1, 4), (2, 5))), Cluster("c", devs, links))
    solution = run("mtopo", problem)  # E704 before
    assert solution.plan.placement == (0, 1, 1, 0, 1, 1)
    assert solution.info["budget_bytes"] == (69 * MIB, 69 * MIB)  # the even share
    result = check_plan(problem, solution.plan)
    assert max(result.memory_peak_bytes) <= 98 * MIB


def _gib_case(sizes: tuple[tuple[int, int], ...], edges: tuple[tuple[int, int], ...],
              caps: tuple[int, ...], pins: dict[int, int]) -> Problem:
    # ops of (params, output) MiB; each edge carries its producer's output
    ops = tuple(Op(f"o{i}", 1e-3, params_bytes=p * MIB, output_bytes=o * MIB)
                for i, (p, o) in enumerate(sizes))
    devs = tuple(Device(f"gpu{d}", c * MIB) for d, c in enumerate(caps))
    links = tuple(Link(a, b, 25e9) for a in range(len(caps)) for b in range(len(caps)) if a != b)
    return Problem("p", Graph("g", ops, tuple(Edge(s, d, sizes[s][1] * MIB) for s, d in edges)),
                   Cluster("c", devs, links), pins=pins)


@pytest.mark.parametrize("algorithm", (*LIST_SCHEDULERS, "mtopo", "roundrobin"))
def test_retries_keep_room_for_the_copies_a_pinned_op_receives(algorithm: str) -> None:
    # o0 -> o1 -> o2 -> o3 on two 12.3 GiB GPUs, o3 (5,001 MiB) pinned to gpu0 and
    # receiving 4,393 MiB from o2: every pass put o1 (6,001 MiB) on gpu0, where o3's own
    # room was kept but not its copy (o2 then went to gpu1, and o3 was 2.74 GiB short).
    # The only plans put o2 beside o3 on gpu0 (12,394 of 12,595 MiB)
    problem = _gib_case(((0, 1), (6000, 1), (3000, 4393), (5000, 1)),
                        ((0, 1), (1, 2), (2, 3)), (12595, 12595), {3: 0})
    solution = run(algorithm, problem)  # E704 before, after every pass
    assert solution.plan.placement == (1, 1, 0, 0)
    result = check_plan(problem, solution.plan)
    assert max(result.memory_peak_bytes) <= 12595 * MIB


@pytest.mark.parametrize("algorithm", (*LIST_SCHEDULERS, "mtopo", "roundrobin"))
def test_retries_keep_room_for_a_pinned_op_with_its_constant(algorithm: str) -> None:
    # the case above with o3 at 4,000 MiB and a 1,000 MiB constant o4 feeding it: o4
    # follows o3 (a group the schedulers make, pinned with it), whose room was not held;
    # only the retry without that rule planned it, m-SCT with o4 on gpu1 (43.0 ms, not
    # 3.1 ms; roundrobin's walk too, and it kept no room for a pinned group at all). The
    # retries now hold a pinned group's room too
    problem = _gib_case(((0, 1), (6000, 1), (3000, 4393), (4000, 1), (0, 1000)),
                        ((0, 1), (1, 2), (2, 3), (4, 3)), (12595, 12595), {3: 0})
    assert Instance(problem).group_of[4] == Instance(problem).group_of[3] >= 0
    solution = run(algorithm, problem)
    assert "sources_follow" not in solution.info  # planned with o4 following o3
    assert solution.plan.placement == (1, 1, 0, 0, 0)
    result = check_plan(problem, solution.plan)
    assert max(result.memory_peak_bytes) <= 12595 * MIB

@pytest.mark.parametrize("algorithm", (*LIST_SCHEDULERS, "mtopo"))
def test_retries_keep_room_for_an_op_only_one_device_can_hold(algorithm: str) -> None:
    # o0 -> o1 -> o2 (6,113, 5,683 and 5,868 MiB) on devices of 8,428, 8,827 and 8,243
    # MiB: o2 and the 2,662 MiB it receives fit on gpu1 alone, and every pass gave gpu1 to
    # o1 (E704 from all five). The retries now hold gpu1's room for o2 from the start
    problem = _gib_case(((5113, 1000), (3021, 2662), (5867, 1)), ((0, 1), (1, 2)),
                        (8428, 8827, 8243), {})
    solution = run(algorithm, problem)  # E704 before, after every pass
    assert solution.plan.placement == (0, 2, 1)
    result = check_plan(problem, solution.plan)
    caps = [d.memory_bytes for d in problem.cluster.devices]
    assert all(p <= c for p, c in zip(result.memory_peak_bytes, caps, strict=True))


@pytest.mark.parametrize(("algorithm", "seed"),
                         (("roundrobin", 0), *(("random", s) for s in range(1, 7))))
def test_baselines_hold_room_for_an_op_only_one_device_can_hold(algorithm: str, seed: int) -> None:
    # the case above, no pin: roundrobin's deal (and random's draw, seeds 1-6) gave gpu1 to
    # o1 and retried only where some op was pinned (E704, while m-SCT planned it). The
    # retry now holds gpu1's room for o2, which only gpu1 can hold
    problem = _gib_case(((5113, 1000), (3021, 2662), (5867, 1)), ((0, 1), (1, 2)),
                        (8428, 8827, 8243), {})
    solution = run(algorithm, problem, Options(seed=seed))  # E704 before
    assert solution.plan.placement[2] == 1
    assert solution.info["forced_reserved"] is True
    assert "pins_reserved" not in solution.info
    result = check_plan(problem, solution.plan)
    caps = [d.memory_bytes for d in problem.cluster.devices]
    assert all(p <= c for p, c in zip(result.memory_peak_bytes, caps, strict=True))


#: (params, output, temp) MiB per op, edges (src, dst, MiB), device MiB, pins: no rung of
#: the budget ladder (every rung the devices' memory) for the first, its one rung
#: dead-ending for the second
_HELD_AT_FULL_MEMORY = {
    "no-ladder": (((25, 11, 0), (17, 12, 12), (41, 5, 55), (12, 14, 0), (7, 28, 0),
                   (14, 17, 0), (5, 6, 0), (50, 26, 41)),
                  ((0, 1, 4), (1, 2, 1), (0, 2, 7), (2, 3, 0), (1, 3, 12), (1, 4, 2),
                   (3, 5, 12), (1, 6, 12), (0, 6, 2), (1, 7, 7)), (191, 199), {3: 0}),
    "ladder-dead-ends": (((34, 32, 27), (37, 23, 0), (21, 8, 29), (59, 18, 44)),
                         ((0, 1, 23), (1, 2, 21), (0, 2, 8), (1, 3, 6), (2, 3, 6)),
                         (141, 144, 168), {1: 0}),
}


@pytest.mark.parametrize("case", sorted(_HELD_AT_FULL_MEMORY))
@pytest.mark.parametrize("algorithm", LIST_SCHEDULERS)
def test_list_schedulers_hold_room_at_full_memory_too(algorithm: str, case: str) -> None:
    # the list schedulers held the room of the pinned op only under a budget (and in
    # m-TOPO's walks): with no rung, or every rung dead-ending, E704 from all four (and
    # mtopo) where cpsat plans. Their own pass at the devices' memory, that room held, runs
    # last now, as mtopo's and the baselines' does
    sizes, edges, caps, pins = _HELD_AT_FULL_MEMORY[case]
    problem = _small_problem(sizes, edges, caps, pins)
    assert (budget_ladder(Instance(problem)) == []) == (case == "no-ladder")
    solution = run(algorithm, problem)  # E704 before
    assert solution.status == "feasible"
    assert solution.info["pins_reserved"] is True
    assert "memory_budget_bytes" not in solution.info  # the pass at full memory
    ladder = len(budget_ladder(Instance(problem)))
    assert solution.info["memory_passes"] == 1 + ladder + 1 + ladder + 1
    assert all(solution.plan.placement[i] == d for i, d in pins.items())
    result = check_plan(problem, solution.plan)
    caps_bytes = [c * MIB for c in caps]
    assert all(p <= c for p, c in zip(result.memory_peak_bytes, caps_bytes, strict=True))


def _small_problem(sizes: tuple[tuple[int, int, int], ...],
                   edges: tuple[tuple[int, int, int], ...], caps: tuple[int, ...],
                   pins: dict[int, int]) -> Problem:
    # ops of (params, output, temp) MiB, edges (src, dst, MiB), devices of `caps` MiB
    ops = tuple(Op(f"o{i}", 1e-3, params_bytes=p * MIB, output_bytes=o * MIB,
                   temp_bytes=t * MIB) for i, (p, o, t) in enumerate(sizes))
    devs = tuple(Device(f"gpu{d}", c * MIB) for d, c in enumerate(caps))
    links = tuple(Link(a, b, 1e9) for a in range(len(caps)) for b in range(len(caps)) if a != b)
    return Problem("p", Graph("g", ops, tuple(Edge(s, d, b * MIB) for s, d, b in edges)),
                   Cluster("c", devs, links), pins=pins)


#: where m-TOPO's walks dead-end (E704) and a plan exists (cpsat's placement, given), as
#: `_HELD_AT_FULL_MEMORY`'s; "constant": o0 (43 + 7 MiB) feeds o3 only, so it first
#: follows o3 (test_infeasible.py's `_constant_case`)
_FIRST_FIT = {
    **{case: (*args, placed) for (case, args), placed in zip(
        sorted(_HELD_AT_FULL_MEMORY.items()), ((1, 0, 0, 2), (0, 0, 1, 0, 0, 0, 0, 1)),
        strict=True)},
    "constant": (((43, 7, 0), (27, 24, 0), (1, 17, 0), (14, 25, 0)),
                 ((0, 3, 4), (1, 2, 18), (1, 3, 12)), (100, 100), {}, (0, 1, 0, 1)),
}


@pytest.mark.parametrize("case", sorted(_FIRST_FIT))
def test_mtopo_spills_from_its_first_op_where_its_walks_dead_end(case: str) -> None:
    # m-TOPO's walk is next fit: it never goes back to a device it left. In
    # "ladder-dead-ends", at full memory with o1's room held on gpu0, o0 moves it on to
    # gpu1, o2 to gpu2, and o3 then fits nowhere: E704 from every walk (and in the two
    # other cases) where cpsat and the list schedulers plan. Its last retry, the walk
    # spilling from its first op (first fit, that room held), plans all three
    sizes, edges, caps, pins, placed = _FIRST_FIT[case]
    problem = _small_problem(sizes, edges, caps, pins)
    solution = run("mtopo", problem)  # E704 before
    assert solution.status == "fallback"
    assert solution.info["reason"].startswith(
        "m-TOPO's walk ran out of memory in every pass; this is its spill from the first op")
    assert solution.info.get("pins_reserved", False) == bool(pins)
    assert solution.info.get("sources_follow", True) == (case != "constant")
    assert solution.info["budget_bytes"] == tuple(c * MIB for c in caps)  # no share
    assert solution.plan.placement == placed
    result = check_plan(problem, solution.plan)
    assert all(p <= c * MIB for p, c in zip(result.memory_peak_bytes, caps, strict=True))


def _tight_problem(seed: int) -> Problem:
    # 3-9 ops of 0-160 MiB, each fed by one or two earlier ops, on 2-4 devices of 100-200
    # MiB, up to two ops pinned, maybe two colocated: dead ends, and ops only one device
    # can hold, are common
    rng = random.Random(seed)
    n, m = rng.randint(3, 9), rng.randint(2, 4)
    ops = tuple(Op(f"o{i}", rng.choice((5e-4, 1e-3, 2e-3)),
                   params_bytes=rng.randint(0, 100) * MIB, output_bytes=rng.randint(0, 60) * MIB,
                   temp_bytes=rng.choice((0, 0, 10 * MIB))) for i in range(n))
    edges = tuple(Edge(i, j, rng.randint(0, ops[i].output_bytes // MIB) * MIB)
                  for j in range(1, n) for i in rng.sample(range(j), min(j, rng.randint(1, 2))))
    devs = tuple(Device(f"gpu{d}", rng.randint(100, 200) * MIB) for d in range(m))
    links = tuple(Link(a, b, 1e9) for a in range(m) for b in range(m) if a != b)
    pins = {i: rng.randrange(m) for i in rng.sample(range(n), rng.randint(0, 2))}
    pair = tuple(sorted(rng.sample(range(n), 2)))
    groups = (pair,) if rng.random() < 0.5 and len({pins.get(i, -1) for i in pair} - {-1}) < 2 \
        else ()
    return Problem("p", Graph("g", ops, edges, groups), Cluster("c", devs, links), pins=pins)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**6), st.booleans())
def test_held_room_changes_no_pass_that_succeeds_without_it(seed: int, follow: bool) -> None:
    # the room held for pinned ops, ops one device alone can hold and the copies they
    # receive is a condition every plan meets: a pass that succeeds without it runs the same
    # with it (so plans that needed no retry are unchanged), and one that dead-ends without
    # it may succeed, within the caps
    problem = _tight_problem(seed)
    inst = Instance(problem, follow=follow)
    prank = priority_positions(inst, upward_rank(inst))
    drivers = (lambda p: etf_schedule(inst, p, inst.topo_pos)[0],
               lambda p: insertion_schedule(inst, p, prank)[0],
               lambda p: (topo_fill(inst, p), list(p.device_of))[1])
    for budget in (None, *budget_ladder(inst)):
        for drive in drivers:
            held = Placer(inst, budget, reserve_pins=True)
            try:
                before: list[int] | None = drive(Placer(inst, budget))
            except Stuck:
                before = None
            try:
                after: list[int] | None = drive(held)
            except Stuck:
                after = None
            assert after == before or before is None
            if after is not None:
                assert all(u <= c for u, c in zip(held.tracker.used, inst.caps, strict=True))

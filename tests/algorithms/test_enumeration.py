"""Under `memory liveness`, `auto` finds a plan wherever one exists on tiny problems, and
says no plan exists (E819, or a proof of `planner.facts`) only where none does: judged
against the brute force of `tests/test_bounds_brute.py` (every placement × every
per-device order, simulated) on seeded memory-tight problems whose valid plans hold more
than a device by static accounting (before `planner.algorithms.enumeration`, `auto`
raised E818 on 5 of the 150 seeds 0-149 that had a plan, and on seed 36, which has none,
E818 where E819 now proves it). Since a zero-time op holds its buffers at its instant,
seeds 25 and 105 have no plan; the seeds with a plan that m-SCT misses (E704) are 7, 53,
62, 74, 116 and 134 of 0-149 (134 had none while an output read only on other devices
was never freed; no heuristic finds a plan of 53, 74 and 134, and of 62 before that)."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from cli.helpers import invoke
from test_bounds_brute import _best

from planner.algorithms import run, search
from planner.algorithms.base import Options
from planner.algorithms.enumeration import enumerate_plans
from planner.codes import CODES, proves_none
from planner.errors import InfeasibleError, SearchLimitError
from planner.model import Cluster, Device, Edge, Graph, Link, Op, Problem
from planner.simulate import simulate

MS = 1e-3
MIB = 2**20
#: the codes that say no plan exists
#: a seed with a plan that no heuristic finds (m-SCT: E704)
SEED = 74
PROOFS = {"E301", "E302", "E303", "E304", "E305", "E306", "E307", "E819"}


def _tight(seed: int) -> Problem:
    """3-5 ops, each consuming one or two earlier ones, with large outputs and temps, on
    2-3 equal devices whose memory is near the liveness peaks."""
    rng = random.Random(seed)
    n, m = rng.randint(3, 5), rng.randint(2, 3)
    ops = tuple(Op(f"o{i}", rng.randint(0, 4) * 0.5 * MS, None, {},
                   rng.choice((0, 0, 100)) * MIB, rng.choice((100, 200, 400)) * MIB,
                   rng.choice((0, 200, 400)) * MIB) for i in range(n))
    edges = tuple(Edge(a, b, ops[a].output_bytes) for b in range(1, n)
                  for a in sorted(rng.sample(range(b), rng.randint(1, min(2, b)))))
    cap = rng.choice((700, 900, 1100, 1300))
    devices = tuple(Device(f"d{d}", cap * MIB, None, 1.0, None) for d in range(m))
    links = tuple(Link(a, b, rng.choice((1e9, 10e9)), 1e-4)
                  for a in range(m) for b in range(m) if a != b)
    pins = {0: 0} if rng.random() < 0.3 else {}
    return Problem("p", Graph("g", ops, edges, ()), Cluster("c", devices, links),
                   "liveness", rng.choice(("none", "link", "device")), pins)


@pytest.mark.parametrize("seeds", [range(0, 12), range(12, 24), (24, 7, 53, 62, 74, 116)])
def test_auto_finds_a_plan_wherever_the_brute_force_does(seeds: range) -> None:
    for seed in seeds:
        p = _tight(seed)
        best = _best(p)
        try:
            sol = run("auto", p, Options(time_limit_s=1.0))
        except InfeasibleError as error:
            assert not math.isfinite(best), (seed, best, error)
            assert error.diagnostics[0].code in PROOFS, (seed, error)
            continue
        sim = simulate(p, sol.plan)
        assert sim.feasible, (seed, sim.violations)
        assert sim.makespan_s >= best * (1 - 1e-9), seed
        if sol.status == "optimal":  # a true label: no valid plan is faster
            assert sim.makespan_s <= best * (1 + 1e-6), (seed, sim.makespan_s, best)


@pytest.mark.parametrize("seed", [7, 53, 62, 74, 116, 134])
def test_search_starts_from_the_enumeration_where_no_heuristic_found_a_plan(seed: int) -> None:
    p = _tight(seed)  # before: msct's E704, whose hint said "try --algo search"
    plan = run("search", p, Options(time_limit_s=0.5)).plan
    sim = simulate(p, plan)
    assert sim.feasible and sim.makespan_s >= _best(p) * (1 - 1e-9)


def test_the_exact_models_e818_names_the_algorithms_that_may_find_a_plan() -> None:
    with pytest.raises(InfeasibleError) as caught:
        run("cpsat", _tight(SEED), Options(time_limit_s=1.0))
    (error,) = caught.value.diagnostics
    assert error.code == "E818"
    assert any("--algo auto and --algo search" in h for h in error.hints)


def test_the_enumeration_is_the_brute_force_when_its_budget_covers_every_plan() -> None:
    p = _tight(SEED)
    found = enumerate_plans(p, 10_000)
    assert found.complete and found.plan is not None
    assert found.makespan_s == pytest.approx(_best(p), rel=1e-12)
    assert simulate(p, found.plan).makespan_s == found.makespan_s


def test_a_cut_enumeration_says_it_did_not_cover_every_plan() -> None:
    p = _tight(SEED)
    found = enumerate_plans(p, 1)
    assert not found.complete and found.simulations == 1 and not found.cut
    late = enumerate_plans(_chain(60, 4), 10**9, deadline=0.0)  # the clock, not the budget
    assert not late.complete and late.cut and 0 < late.simulations < 10**9


def test_the_enumeration_gets_its_time_when_the_phases_before_used_the_limit_up(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from planner.algorithms import auto

    # auto's deadline already passed as it starts (a busy machine): before, E818 after 0
    # simulations; now the enumeration still gets CAP_MIN_S
    monkeypatch.setattr(auto, "cap", lambda _limit: time.monotonic())
    p = _tight(SEED)
    sol = run("auto", p, Options(time_limit_s=1.0))
    assert sol.info["chosen"] == "enumeration" and simulate(p, sol.plan).feasible


def test_auto_proves_no_plan_exists_only_after_simulating_every_plan() -> None:
    p = _tight(36)  # before: E818, "one may still exist"
    assert not math.isfinite(_best(p))
    with pytest.raises(InfeasibleError) as caught:
        run("auto", p, Options(time_limit_s=1.0))
    assert caught.value.diagnostics[0].code == "E819"


def _chain(n: int, m: int) -> Problem:
    """A chain of `n` 1 ms ops on `m` roomy devices (m**n placements)."""
    ops = tuple(Op(f"o{i}", MS, None, {}, 0, MIB, 0) for i in range(n))
    edges = tuple(Edge(i, i + 1, MIB) for i in range(n - 1))
    links = tuple(Link(a, b, 1e10, 1e-5) for a in range(m) for b in range(m) if a != b)
    return Problem("p", Graph("g", ops, edges, ()), Cluster("c", tuple(
        Device(f"d{d}", 1024 * MIB, None, 1.0, None) for d in range(m)), links), "liveness")


def test_a_large_graph_costs_the_budget_not_its_count_of_plans() -> None:
    p = _chain(60, 4)  # 4**60 placements: the enumeration spends its budget
    found = enumerate_plans(p, 50)
    assert found.simulations == 50 and not found.complete and not found.cut
    assert found.plan is not None and simulate(p, found.plan).feasible


def test_ctrl_c_returns_the_fastest_plan_so_far(monkeypatch: pytest.MonkeyPatch) -> None:
    from planner.algorithms import enumeration
    from planner.algorithms.base import Interrupted

    p, calls = _tight(SEED), []

    def interrupted_later(*args: object) -> object:
        calls.append(1)
        if len(calls) > 12:
            raise KeyboardInterrupt
        return simulate(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(enumeration, "simulate", interrupted_later)
    with pytest.raises(Interrupted) as caught:
        run("auto", p, Options(time_limit_s=1.0))
    solution = caught.value.solution
    assert solution is not None and solution.status == "interrupted"
    assert simulate(p, solution.plan).feasible


@pytest.mark.parametrize(("algorithm", "code"), [("auto", "E818"), ("search", "E704")])
def test_auto_and_search_never_name_themselves_as_what_may_still_find_a_plan(
        algorithm: str, code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # search's E704 (m-SCT's, the enumeration cut short) said "the instance may still be
    # feasible: try --algo search", what just ran (m-TOPO and single ran too)
    import importlib

    module = importlib.import_module(f"planner.algorithms.{algorithm}")
    monkeypatch.setattr(module, "simulation_budget", lambda _p, _s: 1)  # too few to find one
    with pytest.raises(SearchLimitError) as caught:
        run(algorithm, _tight(SEED), Options(time_limit_s=1.0))
    error, cut = caught.value.diagnostics
    assert error.code == code and not any(f"--algo {algorithm}" in h for h in error.hints)
    assert cut.code == "E821" and "after 1 simulated plan(s), not all of them" in cut.message
    if algorithm == "search":
        assert not any("--algo" in h for h in error.hints), error.hints
        assert error.hints[-1].endswith("no other heuristic found a plan either; the "
                                        "instance may still be feasible")


@pytest.mark.parametrize("algorithm", ["auto", "search"])
def test_an_enumeration_the_time_limit_cut_exits_6_not_3(
        algorithm: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # before: m-SCT's E704 (search) or the exact model's E818 (auto), exit 3, "infeasible",
    # though seed 74 has a plan that a longer limit finds; now E821 last, exit 6 as E811
    import importlib

    module = importlib.import_module(f"planner.algorithms.{algorithm}")
    monkeypatch.setattr(module, "simulation_budget", lambda _p, _s: 1)
    p = _tight(SEED)
    assert math.isfinite(_best(p))
    with pytest.raises(SearchLimitError) as caught:
        run(algorithm, p, Options(time_limit_s=1.0))
    assert caught.value.exit_code == CODES["E821"].exit == 6
    last = caught.value.diagnostics[-1]
    assert last.code == "E821" and not proves_none(last.code)
    assert any("a longer --time-limit tries more plans" in h for h in last.hints)


def test_search_after_the_enumeration_plans_its_moves_for_the_rest_of_the_limit() -> None:
    from planner.algorithms.search import move_budget

    p = _tight(SEED)  # no heuristic plan: the enumeration takes half of the 2 s, moves the rest
    sol = run("search", p, Options(time_limit_s=2.0))
    assert sol.info["start"] == "enumeration"
    assert 0 < sol.info["budget_moves"] <= move_budget(p, 1.0)


def test_a_plan_whose_output_is_freed_once_sent_is_found_not_refused() -> None:
    # a (3 MiB out) and d (3 MiB out) pinned to d0, c, a's only reader, to d1 (5 MiB
    # each): a's output is sent over [1,4] ms and freed then; d starts at 5 after c. The
    # simulator held it for good, so d0 needed 6 MiB in every plan: auto said E819 (no
    # plan fits, 2 simulated) and m-SCT E704; now both plan it, d0 at 3 MiB.
    ops = (Op("a", MS, output_bytes=3 * MIB), Op("c", MS), Op("d", MS, output_bytes=3 * MIB),
           Op("e", MS))
    g = Graph("g", ops, (Edge(0, 1, 3 * MIB), Edge(1, 2, 0), Edge(2, 3, 3 * MIB)))
    devs = tuple(Device(f"d{d}", 5 * MIB) for d in range(2))
    p = Problem("p", g, Cluster("c", devs, (Link(0, 1, 1e9), Link(1, 0, 1e9))),
                "liveness", "link", {0: 0, 1: 1, 2: 0})
    for algo in ("auto", "msct"):
        sol = run(algo, p, Options(time_limit_s=1.0))
        r = simulate(p, sol.plan)
        assert r.feasible and r.memory_peak_bytes[0] == 3 * MIB, algo


#: seed 74's graph in the language, beside 10 free ops: 2**15 placements, more than the
#: enumeration examines at `--time-limit 0`; a plan exists (26.572 ms, found at 3 s)
_CUT_SPEC = "\n".join([
    "cluster duo {",
    "  device d[0..1] { memory 1100 MiB }",
    "  link d0 -> d1 { bandwidth 10 GB/s  latency 100 us }",
    "  link d1 -> d0 { bandwidth 1 GB/s  latency 100 us }",
    "}",
    "graph tight {",
    "  op o0 { time 1 ms  output 200 MiB }",
    "  op o1 { time 0.5 ms  output 100 MiB  temp 200 MiB }",
    "  op o2 { time 1.5 ms  params 100 MiB  output 200 MiB  temp 200 MiB }",
    "  op o3 { time 0.5 ms  output 200 MiB  temp 400 MiB }",
    "  op o4 { time 2 ms  output 400 MiB  temp 400 MiB }",
    *(f"  op f{i} {{ time 0.1 ms }}" for i in range(10)),
    "  o0 -> o1 -> o2 -> o3 -> o4",
    "  o1 -> o4",
    "}",
    "plan tight { graph tight  cluster duo  memory liveness  contention none }",
    ""])


def test_solve_says_the_time_limit_cut_the_enumeration_and_exits_6(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # before: E704 alone, exit 3 ("infeasible"), its hint "an enumeration of 200 plan(s)
    # (not all of them) found none either". The budget alone ends it: on a busy machine the
    # 0.5 s wall-clock cap cut it sooner (at load 11 in a run of this file)
    monkeypatch.setattr(search, "cap", lambda limit: math.inf)
    spec = tmp_path / "tight.plan"
    spec.write_text(_CUT_SPEC)
    code, _, err = invoke(["solve", str(spec), "--algo", "search", "--time-limit", "0"],
                          tmp_path, guarded=True)
    assert code == 6, err
    assert "tight.plan:25:6: error[E704]" in err and "tight.plan:25:6: error[E821]" in err
    assert "stopped it after 200 simulated plan(s), not all of them" in err
    assert "a longer --time-limit tries more plans" in err and "Traceback" not in err


@pytest.mark.parametrize("moves_cut", [False, True])
def test_search_says_the_clock_cut_its_enumeration_start(
        moves_cut: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: nothing where the clock cut the enumeration alone, and "after N of M moves"
    where it cut the moves too: the start it searched from, the fastest of fewer plans than
    its budget, was not said to be cut (and could differ from run to run)."""
    import dataclasses
    import time

    def cut(problem: Problem, budget: int, deadline: float = math.inf) -> object:
        return dataclasses.replace(enumerate_plans(problem, budget), cut=True)

    monkeypatch.setattr(search, "enumerate_plans", cut)
    monkeypatch.setattr(search, "cap", (lambda limit: time.monotonic()) if moves_cut
                        else (lambda limit: math.inf))
    info = run("search", _tight(SEED), Options(time_limit_s=0.5)).info
    assert info["start"] == "enumeration"
    assert info["reason"].startswith("the time limit ran out in the enumeration of its start"
                                     + (" and before the first of its" if moves_cut else " ("))
    assert info["reason"].count("the time limit ran out") == 1

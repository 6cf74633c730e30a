"""`search`: feasible, never worse than its start, deterministic, anytime."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest
from algo_support import SPECS, check_plan, load_spec

import planner
from planner.algorithms import Options, auto, run, search
from planner.algorithms.base import Interrupted
from planner.algorithms.clock import CUT
from planner.algorithms.portfolio import rank
from planner.algorithms.search import move_budget, move_levels
from planner.facts import facts
from planner.io.baechi import load_baechi
from planner.model import CONTENTIONS
from planner.simulate import simulate

FIXTURES = sorted(p.stem for p in SPECS.glob("*.plan"))
QUICK = Options(time_limit_s=0.05)


@pytest.mark.parametrize("contention", CONTENTIONS)
@pytest.mark.parametrize("fixture", FIXTURES)
def test_search_is_feasible_and_no_worse_than_the_best_heuristic(
        fixture: str, contention: str) -> None:
    problem = dataclasses.replace(load_spec(fixture), contention=contention)
    best = rank(problem, QUICK).best
    assert best is not None
    sol = run("search", problem, QUICK)
    result = check_plan(problem, sol.plan)  # pins, colocation, memory, bound
    assert result.makespan_s <= best[1] * (1 + 1e-12)
    assert sol.info["start_makespan_s"] == pytest.approx(best[1])
    assert sol.info["moves"] <= sol.info["budget_moves"]


GROUPS = """
cluster c {
  device gpu[0..1] { memory 1 GB }
  link gpu[*] <-> gpu[*] { bandwidth 1 GB/s }
}
graph g {
  op "enc/a" { time 1 ms }  op "enc/b" { time 1 ms }
  op "dec/a" { time 1 ms }  op "dec/b" { time 1 ms }
  op "loss" { time 1 ms }
  "enc/a" -> "enc/b" -> "loss"
  "dec/a" -> "dec/b" -> "loss"
  colocate "dec/b", "loss"
}
plan p { graph g  cluster c  pin "enc/a" to gpu0 }
"""


def test_move_levels_are_name_prefixes_then_units_and_keep_pins_and_groups() -> None:
    problem = planner.loads(GROUPS).plan()
    f = facts(problem)
    names = {u: [problem.graph.ops[i].name for i in members]
             for u, members in enumerate(f.units)}
    levels = move_levels(problem)
    shown = [[sorted(n for u in group for n in names[u]) for group in level]
             for level in levels]
    # depth 1: `enc` (without its pinned `enc/a`) and `dec` (whose unit `dec/b` + `loss`
    # comes along whole); then every movable unit alone; `enc/a` never moves
    assert shown == [[["enc/b"], ["dec/a", "dec/b", "loss"]],
                     [["enc/b"], ["dec/a"], ["dec/b", "loss"]]]


# `n{}.Conv`: ONNX's importer's names, split on `.` but each prefix one op, so that no
# prefix level groups anything (the search moved single ops alone on Inception: at 40% of
# small4's memory `auto --time-limit 2` gave 118.0 ms; with windows 93.8 ms)
@pytest.mark.parametrize("name", ["o{}", "n{}.Conv"])
def test_unstructured_names_move_in_topological_windows(name: str) -> None:
    ops = "\n".join(f'op "{name.format(i)}" {{ time 1 ms }}' for i in range(8))
    chain = " -> ".join(f'"{name.format(i)}"' for i in range(8))
    problem = planner.loads(GROUPS.split("graph")[0] + f"graph g {{ {ops}\n{chain} }}\n"
                            "plan p { graph g cluster c }").plan()
    sizes = [[len(g) for g in level] for level in move_levels(problem)]
    assert sizes == [[4, 4], [2, 2, 2, 2], [1] * 8]


def test_search_is_deterministic_for_a_seed_and_limit() -> None:
    problem = planner.load(SPECS.parent.parent.parent / "specs" / "inception.plan").plan(
        "inception_v2_small4")
    a = run("search", problem, Options(time_limit_s=0.3, seed=3)).plan
    b = run("search", problem, Options(time_limit_s=0.3, seed=3)).plan
    assert a == b
    assert move_budget(problem, 0.3) == move_budget(problem, 0.3) > 20


@pytest.mark.slow
@pytest.mark.usefixtures("no_clock")
def test_search_improves_where_the_heuristics_leave_room() -> None:
    # Inception-v2 on four GPUs: m-ETF's plan simulates at 90.0 ms; moving name-prefix
    # groups finds a faster one (88.3 ms) within the moves of a 2 s budget
    problem = planner.load(SPECS.parent.parent.parent / "specs" / "inception.plan").plan(
        "inception_v2_small4")
    sol = run("search", problem, Options(time_limit_s=2.0))
    result = simulate(problem, sol.plan)
    assert result.feasible, [v.message for v in result.violations]
    assert result.makespan_s < sol.info["start_makespan_s"] * 0.99


@pytest.mark.slow
@pytest.mark.usefixtures("no_clock")
def test_auto_leaves_the_heuristics_memory_trap_by_moving_windows() -> None:
    # At 40% of small4's memory every heuristic fills gpu0 until n15.Conv fits there, whose
    # 294 MiB output then crosses to gpu1 (25.7 ms at 12 GB/s); moving single ops, the only
    # moves ONNX's `n<k>.<Op>` names gave, the search left it only to 118.0 ms (96.25 ms at
    # 35%); windows of the topological order take it to 93.8 ms
    problem = planner.load(SPECS.parent.parent.parent / "specs" / "inception.plan").plan(
        "inception_v2_small4")
    devices = tuple(dataclasses.replace(d, memory_bytes=int(d.memory_bytes * 0.4))
                    for d in problem.cluster.devices)
    tight = dataclasses.replace(
        problem, cluster=dataclasses.replace(problem.cluster, devices=devices))
    sol = run("auto", tight, Options(time_limit_s=2.0))
    result = check_plan(tight, sol.plan)
    assert sol.info["chosen"] == "search"
    assert result.makespan_s < 0.095


def test_ctrl_c_returns_the_best_plan_so_far(monkeypatch: pytest.MonkeyPatch) -> None:
    from planner.algorithms import search

    problem = load_spec("forkjoin")
    calls = {"n": 0}
    real = search.Scorer.score

    def interrupting(self: search.Scorer, placement: list[int]) -> float:
        calls["n"] += 1
        if calls["n"] > 3:
            raise KeyboardInterrupt
        return real(self, placement)

    monkeypatch.setattr(search.Scorer, "score", interrupting)
    with pytest.raises(Interrupted) as err:
        run("search", problem, Options(time_limit_s=5.0))
    sol = err.value.solution
    assert sol is not None and sol.status == "interrupted"
    check_plan(problem, sol.plan)


@pytest.mark.slow
@pytest.mark.usefixtures("no_clock")
def test_search_beats_one_gpu_on_baechis_gnmt(gnmt_path: Path) -> None:
    # every constructive plan is slower than one GPU (116.8 ms) under Baechi's cost model;
    # moving name-prefix groups finds a two-GPU plan below 100 ms within 5,000 moves
    problem = load_baechi(gnmt_path)
    sol = run("search", problem, Options(time_limit_s=10.0))
    result = simulate(problem, sol.plan)
    assert result.feasible, [v.message for v in result.violations]
    assert sol.info["start"] == "single"
    assert result.makespan_s < 0.100 < sol.info["start_makespan_s"]
    assert len(set(sol.plan.placement)) >= 2


def test_a_plan_at_the_lower_bound_is_labelled_optimal_as_auto_labels_it() -> None:
    # a chain of three 1 ms ops: 3 ms on one device is the critical path, so proved optimal
    ops = "op a { time 1 ms output 1 MB }  op b { time 1 ms output 1 MB }  op c { time 1 ms }"
    chain = planner.loads(GROUPS.split("graph")[0] + f"graph g {{ {ops}\n a -> b -> c }}\n"
                          "plan p { graph g  cluster c }").plan()
    sol = run("search", chain, QUICK)
    assert (sol.status, sol.info["gap"]) == ("optimal", 0.0)
    assert run("auto", chain, QUICK).status == "optimal"
    # Inception's plan is 39% above its bound: not proved, so feasible
    problem = planner.load(SPECS.parent.parent.parent / "specs" / "inception.plan").plan(
        "inception_v2_small4")
    sol = run("search", problem, QUICK)
    assert sol.status == "feasible" and sol.info["gap"] > 0.3


def test_cross_groups_gather_a_layer_across_time_steps() -> None:
    # an unrolled RNN: prefixes group the time steps (`rnn/step_k`); the cross level at
    # position 2 groups each layer across steps (`cell_0`, `cell_1`), which no prefix can
    steps = [f'op "rnn/step_{t}/cell_{c}/mul" {{ time 1 ms }}' for t in range(3) for c in range(2)]
    chain = " -> ".join(f'"rnn/step_{t}/cell_{c}/mul"' for t in range(3) for c in range(2))
    problem = planner.loads(GROUPS.split("graph")[0] + "graph g {\n" + "\n".join(steps)
                            + f"\n{chain}\n}}\nplan p {{ graph g cluster c }}").plan()
    f = facts(problem)
    named = [sorted(sorted(problem.graph.ops[i].name for u in group for i in f.units[u])
                    for group in level) for level in move_levels(problem)]
    layers = [[f"rnn/step_{t}/cell_{c}/mul" for t in range(3)] for c in range(2)]
    steps_groups = [[f"rnn/step_{t}/cell_{c}/mul" for c in range(2)] for t in range(3)]
    assert layers in named and steps_groups in named
    assert named.index(layers) < named.index(steps_groups)  # 2 groups before 3: coarse first
    assert len(named[-1]) == 6  # then every op alone


INCEPTION = SPECS.parent.parent.parent / "specs" / "inception.plan"


@pytest.mark.slow
def test_a_longer_search_begins_with_every_move_of_a_shorter_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing a search does depends on its budget (the annealing's cycles have lengths set
    by the problem), so a longer run repeats a shorter one move for move, then goes on:
    more time never gives a worse plan. (A cooling spread over the whole budget, as
    before, made every budget a different trajectory.)"""
    problem = planner.load(INCEPTION).plan("inception_v2_small4")
    ranked = rank(problem, Options())
    scored: list[tuple[int, ...]] = []
    real = search.Scorer.score

    def recording(self: search.Scorer, placement: list[int]) -> float:
        scored.append(tuple(placement))
        return real(self, placement)

    monkeypatch.setattr(search.Scorer, "score", recording)
    runs = []
    cycle = search.anneal_cycle(problem)
    for budget in (cycle + 500, 3 * cycle + 500):  # into the second cycle, and the third
        scored.clear()
        sol = search.improve(problem, ranked, Options(seed=5), budget)
        assert sol.info["moves"] == budget and "reason" not in sol.info
        runs.append((list(scored), sol.info["objective_s"]))
    (short, short_best), (long, long_best) = runs
    assert len(short) > 1000 and long[:len(short)] == short
    assert long_best <= short_best


def test_budgets_grow_with_the_limit_and_fit_it_with_room_for_load() -> None:
    problem = planner.load(INCEPTION).plan("inception_v2_small4")
    for compiled in (True, False):
        budgets = [move_budget(problem, x, compiled=compiled) for x in (1, 5, 10, 20, 40)]
        assert budgets == sorted(budgets)
        # what the budget is assumed to take fills the headroom's share of the limit
        per = search.seconds_per_move(problem, compiled=compiled)
        assert budgets[2] * per == pytest.approx(search.LOAD_HEADROOM * 10, rel=1e-3)
    # the Python simulator is slower: fewer moves for the same limit
    assert move_budget(problem, 10, compiled=False) < move_budget(problem, 10, compiled=True)


def test_the_wall_clock_cuts_a_search_and_says_so() -> None:
    problem = planner.load(INCEPTION).plan("inception_v2_small4")
    ranked = rank(problem, Options())
    sol = search.improve(problem, ranked, Options(), 10**9, deadline=time.monotonic())
    assert sol.info["reason"].startswith(CUT)
    assert "may differ from run to run" in sol.info["reason"]
    assert sol.info["moves"] < 10**9
    check_plan(problem, sol.plan)


def test_auto_says_when_the_clock_cut_its_search(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(auto, "cap", lambda limit: time.monotonic())  # a clock that ran out
    problem = planner.load(INCEPTION).plan("inception_v2_small4")
    sol = run("auto", problem, Options(time_limit_s=5))
    assert sol.info["reason"].startswith(CUT)
    assert sol.info["search"] == sol.info["reason"]


def test_search_starts_from_the_heuristics_its_limit_holds_as_auto_does() -> None:
    """Before, `search` ran every heuristic whatever its limit (44 s of a 106,000-op GNMT's
    planning at `--time-limit 5`); now those expected to take longer are skipped, as in
    `auto`, the fastest always run, and `info["skipped"]` says which."""
    problem = planner.load(Path(__file__).resolve().parents[2] / "specs" / "resnet.plan").plan()
    tight = run("search", problem, Options(time_limit_s=0.0005))
    skipped = tight.info["skipped"]
    assert {"msct", "metf", "heft", "cpop"} <= set(skipped)
    assert all(why.startswith("skipped: expected to take ") for why in skipped.values())
    assert tight.info["start"] not in skipped and not simulate(problem, tight.plan).violations
    assert "skipped" not in run("search", problem, Options(time_limit_s=5)).info

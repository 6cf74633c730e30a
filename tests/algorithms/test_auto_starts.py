"""`auto`'s search phase: a search that stalls with moves left hands them to the next
distinct heuristic plan; the first start's search is the one `auto` ran alone before."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
from algo_support import SPECS, check_plan

import planner
from planner.algorithms import Options, auto, run
from planner.algorithms.base import Interrupted, Solution
from planner.algorithms.clock import CUT
from planner.algorithms.portfolio import rank
from planner.model import Problem

INCEPTION = SPECS.parent.parent.parent / "specs" / "inception.plan"


def _tight(share: float) -> Problem:
    """Inception-v2 on small4 with every device's memory cut to `share` of its cap."""
    problem = planner.load(INCEPTION).plan("inception_v2_small4")
    devices = tuple(dataclasses.replace(d, memory_bytes=int(d.memory_bytes * share))
                    for d in problem.cluster.devices)
    return dataclasses.replace(
        problem, cluster=dataclasses.replace(problem.cluster, devices=devices))


@pytest.mark.slow
@pytest.mark.usefixtures("no_clock")
def test_a_stalled_search_hands_its_moves_to_the_next_start() -> None:
    # At 36% of small4's memory cpop's plan ranks first (121.42 ms) and its search stalls
    # at 121.17 ms after 4379 of 38752 moves; from m-SCT's (124.05 ms, fourth) the moves
    # left reach 92.68 ms
    problem = _tight(0.36)
    sol = run("auto", problem, Options(time_limit_s=10))
    result = check_plan(problem, sol.plan)
    assert sol.info["chosen"] == "search"
    assert result.makespan_s < 0.095
    note = sol.info["search"]
    assert note.startswith("from 5 starts, each until 2000 moves in a row found no better "
                           "plan: cpop 4379 moves, metf 6611, heft 7081, msct 7874, mtopo 6387;")
    assert "the best from msct" in note


@pytest.mark.slow
@pytest.mark.usefixtures("no_clock")
def test_the_first_start_is_kept_when_no_later_start_beats_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # at 2.5 s cpop's search stalls with moves left; a later start from cpop's own plan
    # repeats its moves and ties it: auto returns the plan it returned before later starts
    problem = _tight(0.36)
    monkeypatch.setattr(auto, "_later_starts", lambda ranked: [("again", *ranked.plans[0][1:])])
    sol = run("auto", problem, Options(time_limit_s=2.5))
    assert sol.info["search"] == (
        "from 2 starts, each until 2000 moves in a row found no better plan: cpop 4379 "
        "moves, again 4379; the best from cpop (121.166 ms)")
    monkeypatch.setattr(auto, "_later_starts", lambda ranked: [])
    alone = run("auto", problem, Options(time_limit_s=2.5))
    assert alone.info["search"] == "no better plan in the last 2000 moves"
    assert sol.plan == alone.plan
    assert sol.info["objective_s"] == alone.info["objective_s"]


@pytest.mark.slow
@pytest.mark.usefixtures("no_clock")
def test_no_later_start_while_the_stall_rule_grows_with_the_budget() -> None:
    # at 2 s the budget (under STALL_MAX * STALL_DIVISOR moves) sets a stall of 1895: a
    # larger budget would let the first search stall later and leave a next start fewer
    # moves, so that more time could give a worse plan; the first search runs alone
    problem = _tight(0.36)
    sol = run("auto", problem, Options(time_limit_s=2))
    assert sol.info["search"] == "no better plan in the last 1895 moves"
    assert "search_starts" not in sol.info
    longer = run("auto", problem, Options(time_limit_s=2.5))  # later starts, never worse
    assert longer.info["objective_s"] <= sol.info["objective_s"]


def test_later_starts_are_the_distinct_placements_after_the_best() -> None:
    problem = _tight(0.36)
    ranked = rank(problem, Options())
    twin = dataclasses.replace(ranked, plans=(*ranked.plans, ("copy", 1.0, ranked.plans[1][2])))
    names = [name for name, _, _ in auto._later_starts(twin)]
    assert names == [name for name, _, _ in ranked.plans[1:]]  # the copy is left out
    assert ranked.plans[0][0] not in names


@pytest.mark.slow
@pytest.mark.usefixtures("no_clock")
def test_ctrl_c_in_a_later_start_returns_the_best_plan_of_every_start(
        monkeypatch: pytest.MonkeyPatch) -> None:
    problem = _tight(0.36)
    searches: list[Solution] = []
    real = auto.improve

    def second_interrupted(*args: object, **kwargs: object) -> Solution:
        if searches:  # Ctrl-C before the second start's first move
            raise Interrupted(None)
        searches.append(real(*args, **kwargs))  # type: ignore[arg-type]
        return searches[-1]

    monkeypatch.setattr(auto, "improve", second_interrupted)
    with pytest.raises(Interrupted) as stop:
        run("auto", problem, Options(time_limit_s=10))
    assert stop.value.solution is not None
    assert stop.value.solution.plan == searches[0].plan


#: four ops on two devices: every search's neighbourhood is soon seen
SMALL = """cluster c { device gpu[0..1] { memory 1 GiB }
  link gpu0 <-> gpu1 { bandwidth 10 GB/s  latency 10 us } }
graph g { op a { time 2 ms  output 1 MB }  op b { time 3 ms  output 1 MB }
  op c { time 1 ms  output 1 MB }  op d { time 2 ms  output 1 MB }
  a -> b  a -> c  b -> d  c -> d }
plan p { graph g; cluster c }"""


@pytest.mark.usefixtures("no_clock")
def test_a_later_start_the_clock_cut_is_said_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: "the time limit ran out after 0 of 12835 moves (...) (from roundrobin); from
    2 starts, ...: msct 2019 moves, roundrobin 0 (cut by the clock); ..." (the cut twice,
    and "after 0" where no move was made)."""
    real, calls = auto.improve, []

    def second_cut(*args: Any, **kwargs: Any) -> Solution:
        calls.append(1)
        return real(*args, **{**kwargs, "deadline": 0.0 if len(calls) == 2 else math.inf})

    monkeypatch.setattr(auto, "improve", second_cut)
    note = run("auto", planner.loads(SMALL).plan("p"), Options(time_limit_s=5)).info["reason"]
    assert note.count(CUT) == 1 and "cut by the clock" not in note, note
    assert note.startswith(f"{CUT} before the first of its "), note
    assert ": msct 2019 moves, roundrobin 0; the best from msct" in note, note


@pytest.mark.usefixtures("no_clock")
def test_a_plan_kept_from_a_finished_start_after_ctrl_c_is_labelled_interrupted(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C in the second start's search: the first start's plan is kept, and the run it
    ends is `interrupted`. Before: `feasible`, the finished search's own label (seen on a
    loaded machine, where tests/exact/test_reproducible.py's Ctrl-C at 2 s landed there)."""
    searches: list[Solution] = []
    real = auto.improve

    def second_interrupted(*args: Any, **kwargs: Any) -> Solution:
        if searches:
            raise Interrupted(None)
        searches.append(real(*args, **kwargs))
        return searches[-1]

    monkeypatch.setattr(auto, "improve", second_interrupted)
    with pytest.raises(Interrupted) as stop:
        run("auto", planner.loads(SMALL).plan("p"), Options(time_limit_s=5))
    kept = stop.value.solution
    assert kept is not None and kept.plan == searches[0].plan
    assert kept.status == "interrupted"

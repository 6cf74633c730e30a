"""`auto` and `search` under `objective pipeline` say so where the wall clock, not the
work budget, cut a climb of cut moves: their `reason` (which the text output shows) begins
"the time limit ran out" and says the plan may differ from run to run. Before, only the
`cut_moves` note of pipedp's candidates said so (`--json` alone), and it was lost where
another candidate won (hybrid's, the recomputing split), and the climb from pipedp's split
of one stage per device (`pipecuts.refine_fallback`) said nothing where it found no faster
split: PipeDream's alexnet, `p1f1b`, `--time-limit 2` gave "auto → pipedp, cuts moved"
259.343 ms on an idle machine and "auto → hybrid" 261.169 ms under load, no note either
time. The clocks here are fake: one already run out when the search starts, one that
never runs out (the budget alone ends the work), so nothing depends on this machine's load.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
from cli.helpers import invoke
from pipe_support import chain_text, random_spec

from planner.algorithms import Options, autopipe, pipecuts, pipedp, pipesearch, run
from planner.algorithms.base import Solution
from planner.algorithms.clock import CUT
from planner.model import Problem
from planner.pipeline import splitdp

INTERLEAVED = "interleaved; stages_per_device 2"


def _clock(monkeypatch: pytest.MonkeyPatch, ran_out: bool) -> None:
    """`auto`'s and `search`'s wall-clock cap: already past (every climb is cut at its
    first move), or never (the budget ends every climb)."""
    deadline = (lambda limit: time.monotonic()) if ran_out else (lambda limit: math.inf)
    monkeypatch.setattr(autopipe, "cap", deadline)
    monkeypatch.setattr(pipesearch, "cap", deadline)


# 1f1b: the chosen plans are pipedp's and the recomputing split (whose info had no note);
# interleaved: pipedp's split of one stage per device, hybrid's (the fallback's climb cut)
CASES = [(0, "1f1b"), (1, "1f1b"), (1, INTERLEAVED), (2, INTERLEAVED)]
#: seed 1 under interleaved: memories doubled (the same graph: `random_spec` draws them by
#: index), as with the training receive buffers (2026-12-07) no split of one stage per
#: device fits its devices of 60 and 200 MB within the fallback's share of the cells
DOUBLED = (80, 120, 400)


def _spec(seed: int, schedule: str) -> Problem:
    memories = DOUBLED if (seed, schedule) == (1, INTERLEAVED) else (40, 60, 200)
    return random_spec(seed, 12, 4, training=True, schedule=schedule, memories=memories)


@pytest.mark.parametrize(("seed", "schedule"), CASES)
@pytest.mark.parametrize("algo", ["auto", "search"])
def test_a_climb_the_clock_cut_says_so(seed: int, schedule: str, algo: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    p = _spec(seed, schedule)
    _clock(monkeypatch, ran_out=True)
    reason = run(algo, p, Options(time_limit_s=0.5)).info.get("reason", "")
    assert reason.startswith(CUT), reason
    assert "this plan may differ from run to run" in reason


@pytest.mark.parametrize(("seed", "schedule"), CASES)
@pytest.mark.parametrize("algo", ["auto", "search"])
def test_a_climb_run_to_its_budget_says_nothing_of_the_clock(
        seed: int, schedule: str, algo: str, monkeypatch: pytest.MonkeyPatch) -> None:
    p = _spec(seed, schedule)
    _clock(monkeypatch, ran_out=False)
    info = run(algo, p, Options(time_limit_s=0.5)).info
    assert CUT not in str(info.get("reason", "")) + str(info.get("cut_moves", ""))


def _fallback_start(problem: Problem) -> Solution:
    """pipedp's split of one stage per device, as `auto` plans it at 0.5 s."""
    share = autopipe.FALLBACK_SHARE
    found = pipedp.fallback_split(problem, share * splitdp.cells_for(0.5),
                                  share * pipedp.simulation_budget(0.5))
    assert found is not None
    return found


def test_the_fallbacks_climb_reports_a_cut_where_it_found_no_faster_split() -> None:
    """Before: None either way, the cut not reported."""
    p = _spec(1, INTERLEAVED)
    found = _fallback_start(p)
    cut = pipecuts.refine_fallback(p, found, 0.5, 0.125, deadline=time.monotonic() - 1)
    assert cut == (None, True)
    whole = pipecuts.refine_fallback(p, found, 0.5, 0.125)
    assert whole[1] is False


def test_the_text_output_says_the_clock_cut_auto(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    spec = tmp_path / "chain.plan"
    spec.write_text(chain_text(8, 3, forward_ms=[1, 5, 2, 7, 3, 1, 4, 2],
                               schedule=INTERLEAVED))
    _clock(monkeypatch, ran_out=True)
    code, out, err = invoke(["solve", str(spec), "--plan", "p", "--algo", "auto",
                             "--time-limit", "1"], tmp_path)
    assert code == 0, err
    reason = next(line for line in out.splitlines() if line.startswith("reason"))
    assert CUT in reason
    assert "may differ" in out  # the row wraps: the rest of the sentence follows


@pytest.mark.parametrize(("seed", "schedule"), [(0, "1f1b"), (2, INTERLEAVED)])
def test_search_says_the_clock_cut_once_for_auto_s_climbs_and_its_own(
        seed: int, schedule: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, auto's sentence, then search's: "the time limit ran out in the cut moves from
    pipedp's candidates (a slow or busy machine): this plan may differ from run to run; the
    time limit ran out after 0 of 637 moves (a slow or busy machine): this plan may differ
    from run to run" (and search's cut moves, cut too, unsaid)."""
    p = _spec(seed, schedule)
    _clock(monkeypatch, ran_out=True)
    reason = run("search", p, Options(time_limit_s=0.5)).info["reason"]
    assert reason.count(CUT) == 1, reason
    assert reason.count("this plan may differ from run to run") == 1, reason
    assert "in the cut moves from pipedp's" in reason, reason  # auto's climbs
    assert "in search's cut moves and before the first of search's" in reason


def test_search_the_clock_ended_before_its_first_unit_move_says_so(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: "0 of 0 moves kept (budget 1592)" and "... in search's unit moves after 0 of
    their 1592": none was tried, and the plan they start from is the one kept."""
    p = random_spec(0, 12, 4, training=True)
    _clock(monkeypatch, ran_out=True)
    info = run("search", p, Options(time_limit_s=0.5)).info
    budget = pipesearch.move_budget(p, 0.5)
    assert budget > 0
    assert info["search"] == (f"no unit move tried: the time limit ran out before the first "
                              f"of {budget}; the plan they start from, auto's plan, kept")
    assert info["chosen"].endswith(", no move tried")
    assert f"before the first of search's {budget} unit moves (" in info["reason"]
    assert "after 0" not in info["reason"]

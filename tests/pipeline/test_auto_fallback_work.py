"""`auto` under `interleaved` compares pipedp's split of one stage per device (run as
1F1B) as `--algo pipedp` plans it at the default limit too, beside its own (a quarter of
pipedp's work, its cuts moved), so it is no slower than `--algo pipedp`, which returns that
split where it is faster or where no interleaved split fits. Before, auto's own alone:
PipeDream's Inception-v3 profile on a DGX-1, 8 micro-batches, 2 stages per device, auto
1.563 s, pipedp 1.504 s (now both 1.504 s). Its `why` names the search's split as what it
is, "pipedp's interleaved split", as its candidates do ("pipedp, interleaved")."""

from __future__ import annotations

import pytest
from pipe_support import random_spec
from test_pipedp_fallback import EVEN
from test_pipeilp_runs_as_planned import SPEC

import planner
from planner.algorithms import Options, autopipe, pipedp, run
from planner.errors import InfeasibleError
from planner.model import Problem
from planner.pipeline import schedule
from planner.pipeline.splitdp import MAX_CELLS

pytestmark = pytest.mark.filterwarnings("ignore::planner.errors.PlannerWarning")  # W258

ONE = ("a split of one stage per device fits, run as 1f1b: `--algo auto` compares it with "
       "the other plans (or plan `schedule 1f1b`)")


def _iteration(p: Problem, algo: str, limit: float) -> float:
    assert p.pipeline is not None
    solved = run(algo, p, Options(time_limit_s=limit))
    return schedule.run_planned(p, solved.plan.placement, p.pipeline, solved.info).iteration_s


def test_auto_is_no_slower_than_pipedp_whatever_its_own_share(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # auto's own split for 1F1B starved of work (its cuts thinned to a few): before, auto
    # kept hybrid's plan, 285.9 ms, where `--algo pipedp` returns 271.4 ms. 200 MB devices:
    # at 100 MB, with the receive buffers, that split is one stage (d1 alone, 392 ms)
    monkeypatch.setattr(autopipe, "FALLBACK_SHARE", 1e-6)
    p = random_spec(6, 12, 3, training=True, microbatches=4, schedule="interleaved",
                    memories=(200, 400, 800), settings="; stages_per_device 2")
    theirs = _iteration(p, "pipedp", 60)  # `--algo pipedp`'s default limit
    assert theirs == pytest.approx(0.27141)
    assert _iteration(p, "auto", 10) <= theirs * (1 + 1e-9)


def test_auto_is_no_slower_than_pipedp_on_a_graph_too_small_to_interleave() -> None:
    p = planner.loads(SPEC).plan("p")  # W258: every plan runs as 1F1B
    assert _iteration(p, "auto", 10) <= _iteration(p, "pipedp", 60) * (1 + 1e-9)


def test_the_uniform_splits_why_names_the_interleaved_search_split() -> None:
    # d1 at 150 MB: the uniform split (d0, d1, d2, d0, d1, run in GPipe's order) holds 117 MB
    # there: 53 MB, and receive buffers 4 x ((2 + 13) + 1) MB (stage 1's input and output
    # gradient, stage 4's input)
    p = random_spec(48, 5, 3, training=True, microbatches=4, schedule="interleaved",
                    memories=(150, 300, 600), settings="; stages_per_device 2")
    solved = run("auto", p, Options(time_limit_s=2))
    assert solved.info["chosen"] == "uniform"
    assert solved.info["why"] == (
        "the uniform split fits and runs faster by the simulated iteration (174.400 ms, "
        "pipedp's interleaved split 216.200 ms)")  # before: "pipedp's split"
    assert solved.info["candidates"]["pipedp, interleaved"] == pytest.approx(0.2162)


def _e707_hints(problem: Problem) -> tuple[str, ...]:
    with pytest.raises(InfeasibleError) as err:  # the search's E707, whose words pipeilp's take
        pipedp.search_within(problem, Options(), MAX_CELLS)
    assert [d.code for d in err.value.diagnostics] == ["E707"]
    return err.value.diagnostics[0].hints


def test_e707_names_auto_only_where_auto_compares_the_split_for_1f1b(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # no interleaved split fits at 12 MB; the 1F1B split d0, d1 does (300 ms as it runs; at
    # 10 MB, with its receive buffers, only d0 alone: 480 ms)
    problem = planner.loads(EVEN.replace("memory 4 GiB", "memory 12 MB")).plan("p")
    assert ONE in _e707_hints(problem)
    # a graph whose copies are not simulated: auto does not plan that split (before: the
    # hint said "`--algo auto` compares it")
    monkeypatch.setattr(pipedp, "MAX_SIMULATED_OPS", 1)
    hints = _e707_hints(planner.loads(EVEN.replace("memory 4 GiB", "memory 12 MB")).plan("p"))
    assert not any("--algo auto" in h for h in hints)
    assert "a split of one stage per device fits, run as 1f1b: plan `schedule 1f1b`" in hints


def test_e707_claims_no_split_for_1f1b_that_overfills_a_device_as_it_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # as if the split the DP found for 1F1B held more than the memory as it runs (the
    # simulator's rule): before, the hint said it fits all the same
    monkeypatch.setattr(schedule, "run_fits", lambda *_: (0.3, False))
    hints = _e707_hints(planner.loads(EVEN.replace("memory 4 GiB", "memory 12 MB")).plan("p"))
    assert not any("one stage per device fits" in h for h in hints)

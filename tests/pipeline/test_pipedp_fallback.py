"""pipedp under `interleaved` keeps the split of one stage per device planned for the
schedule's fallback, 1F1B, where it fits and simulates faster as it runs. On a graph too
small to interleave (W258: every plan runs as 1F1B), d0 at 30 MB, its search's best (two
stages on d0) ran 1.64 s an iteration where that split (d0, d0, d1 by unit) runs
1.385 s, as `auto`, `hybrid` and `pipeilp` found; where interleaving is faster, its split
stays, and `hybrid`, which keeps pipedp's plan where faster, is no slower."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli.helpers import invoke
from pipe_support import random_spec
from test_pipeilp_runs_as_planned import SPEC

import planner
from planner.algorithms import Options, run
from planner.errors import InfeasibleError
from planner.pipeline import schedule

pytestmark = pytest.mark.filterwarnings("ignore::planner.errors.PlannerWarning")  # W258

KEPT = ("the best split of one stage per device for 1f1b runs faster than the best "
        "interleaved split: 1.385 s an iteration, against 1.640 s")

# four alike layers on two alike devices, fast links: d0, d1, d0, d1 interleaved (270 ms)
# beats the 1F1B split d0, d1 (300 ms)
EVEN = """\
cluster c {
  device d0 { memory 4 GiB  speed 0.1 }
  device d1 { memory 4 GiB  speed 0.1 }
  link d0 -> d1 { bandwidth 100 GB/s }
  link d1 -> d0 { bandwidth 100 GB/s }
}
graph g {
""" + "".join(f"  op f{i} {{ time 1 ms  output 1 MB  params 1 MB }}\n"
              f"  op b{i} {{ time 2 ms  output 1 MB  backward_of f{i} }}\n"
              for i in range(4)) + """\
  f0 -> f1 -> f2 -> f3 -> b3 -> b2 -> b1 -> b0
  f0 -> b0
  f1 -> b1
  f2 -> b2
}
plan p { graph g  cluster c  objective pipeline  microbatches 4  schedule interleaved
         stages_per_device 2  contention none }
"""


def test_the_faster_split_for_the_fallback_is_kept() -> None:
    problem = planner.loads(SPEC).plan("p")
    result = planner.solve(problem, "pipedp")
    run = result.pipeline
    assert run is not None and result.feasible, result.breaks
    assert run.iteration_s == pytest.approx(1.38522)  # before: 1.64 (everything on d0)
    assert result.placement_by_name["f2"] == "d1" and result.placement_by_name["f1"] == "d0"
    assert result.info["kept"] == KEPT
    assert result.info["iteration_s"] == run.iteration_s
    assert result.info["period_s"] == pytest.approx(0.155)
    assert result.status == "feasible"
    # the memory it fits by is the simulator's, as the plan runs (1F1B)
    caps = [d.memory_bytes for d in problem.cluster.devices]
    assert all(held <= cap for held, cap in zip(run.memory_bytes, caps, strict=True))


def test_an_interleaved_split_that_runs_faster_stays() -> None:
    result = planner.solve(planner.loads(EVEN).plan("p"), "pipedp")
    assert result.pipeline is not None and result.pipeline.schedule == "interleaved"
    assert [result.placement_by_name[f"f{i}"] for i in range(4)] == ["d0", "d1", "d0", "d1"]
    assert result.pipeline.iteration_s == pytest.approx(0.27006)
    assert "kept" not in result.info


def test_solve_says_which_split_it_kept(tmp_path: Path) -> None:
    spec = tmp_path / "p.plan"
    spec.write_text(SPEC)
    code, out, _ = invoke(["solve", str(spec), "--algo", "pipedp"], tmp_path)
    assert code == 0
    assert f"kept {KEPT}" in " ".join(out.split())


def test_hybrid_is_no_slower_than_pipedp_under_interleaved() -> None:
    # hybrid keeps pipedp's plan where faster, now its split for 1F1B: before, both ran
    # 56.0 ms, where that split runs 40.85 ms
    p = random_spec(7, 4, 3, training=True, microbatches=4, schedule="interleaved",
                    memories=(200, 400), settings="; stages_per_device 2")
    assert p.pipeline is not None
    for algo in ("pipedp", "hybrid"):
        solved = run(algo, p, Options(time_limit_s=5))
        ran = schedule.run_planned(p, solved.plan.placement, p.pipeline, solved.info)
        assert ran.schedule == "1f1b", algo
        assert ran.iteration_s == pytest.approx(0.04085), algo


def test_where_no_interleaved_split_fits_the_split_for_the_fallback_is_returned() -> None:
    # at 12 MB no interleaved split fits (d0, d1, d0, d1 needs 25 MB on d0); the 1F1B split
    # d0, d1 does (11 MB on d0: 7 MB and 4 x 1 MB receive buffers of its output's gradient;
    # 10 MB on d1: 6 MB and 4 x 1 MB of its input), and runs 300 ms.
    # Before: E707, its hint naming `--algo auto` (which, like pipeilp, returned that split)
    problem = planner.loads(EVEN.replace("memory 4 GiB", "memory 12 MB")).plan("p")
    result = planner.solve(problem, "pipedp")
    assert result.pipeline is not None and result.feasible, result.breaks
    assert [result.placement_by_name[f"f{i}"] for i in range(4)] == ["d0", "d0", "d1", "d1"]
    assert result.pipeline.schedule == "1f1b"
    assert result.info["iteration_s"] == result.pipeline.iteration_s == pytest.approx(0.30004)
    assert result.info["kept"] == (
        "no interleaved split of 2 stages per device fits; the best split of one stage per "
        "device for 1f1b does: 300.040 ms an iteration")
    assert (result.status, result.period_gap) == ("optimal", 0.0)  # at its period's bound


def test_e707_stands_where_neither_split_fits() -> None:
    problem = planner.loads(EVEN.replace("memory 4 GiB", "memory 6 MB")).plan("p")
    with pytest.raises(InfeasibleError) as err:
        run("pipedp", problem, Options())
    assert [d.code for d in err.value.diagnostics] == ["E707"]
    assert not any("--algo auto" in h for h in err.value.diagnostics[0].hints)


def test_auto_names_its_candidate_of_the_interleaved_search_as_such() -> None:
    # its candidate "pipedp" was the interleaved search's split (1.64 s), which is not what
    # `--algo pipedp` returns (1.385 s, auto's own "pipedp, one stage per device")
    solved = planner.solve(planner.loads(SPEC).plan("p"), "auto")
    assert set(solved.info["candidates"]) >= {"pipedp, interleaved", "hybrid"}
    assert "pipedp" not in solved.info["candidates"]
    assert solved.info["candidates"]["pipedp, interleaved"] == pytest.approx(1.64)
    even = planner.solve(planner.loads(EVEN).plan("p"), "auto")
    assert even.info["chosen"] == "pipedp, interleaved"  # the interleaved split, 270 ms
    assert even.info["candidates"]["pipedp, interleaved"] == pytest.approx(0.27006)
    one = planner.loads(EVEN.replace("schedule interleaved", "schedule 1f1b")
                        .replace("stages_per_device 2", "")).plan("p")
    assert "pipedp" in planner.solve(one, "auto").info["candidates"]  # its plan, as named

"""`--time-limit 0`, one rule for every algorithm (docs/limits.md, "Time limit 0"): no search
and no solver. `auto` gives its heuristics (under `objective pipeline` pipedp's split,
hybrid's plan and the uniform split, none of its own cut moves), `search` its fewest moves
(none under a pipeline), `pipeilp`, `cpsat` and `ilp` their warm start (`fallback`); the
algorithms that take no `--time-limit` in `solve` (pipedp, hybrid, the heuristics) run as
`solve` runs them, in `compare` too. Before, under a pipeline, `auto` and `search` ran the
cut moves with no budget until a 0.5 s wall clock cut them ("this plan may differ from run
to run"), `pipeilp` ran HiGHS, and `compare --time-limit 0` left pipedp's and hybrid's
simulations unbudgeted."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from pipe_support import random_spec
from typer.testing import CliRunner

from planner import algorithms
from planner.algorithms import Options, run
from planner.algorithms.exact import backends
from planner.cli import app
from planner.compare import plan_sweep
from planner.compare.worker import run_point

PIPE = random_spec(3, 8, 3, training=True)
FLAT = dataclasses.replace(PIPE, pipeline=None)
ZERO = Options(time_limit_s=0.0)
NO_SEARCH = "skipped: --time-limit 0 runs no search"
NO_SOLVER = "no solver time left in --time-limit 0 s: a zero limit runs no solver"


def test_auto_under_a_pipeline_compares_its_splits_and_moves_no_cut() -> None:
    # a spec where pipedp's split wins (on PIPE hybrid's plan does, at 190.8 ms against
    # 209.7: its info is hybrid's, which notes no cut moves of auto's)
    pipe = random_spec(1, 8, 3, training=True)
    solution = run("auto", pipe, ZERO)
    assert solution.info["cut_moves"] == NO_SEARCH
    splits = {run(name, pipe, ZERO).plan.placement for name in ("pipedp", "uniform", "hybrid")}
    assert solution.plan.placement in splits
    # with a limit, the cut moves run within their budget, as before
    assert "simulation(s)" in run("auto", pipe, Options(time_limit_s=1.0)).info["cut_moves"]


def test_search_under_a_pipeline_is_autos_plan_at_zero() -> None:
    # search starts from auto's plan at its limit (hybrid's here), pipedp's split before
    solution = run("search", PIPE, ZERO)
    assert solution.info["cut_moves"] == NO_SEARCH
    assert solution.info["search"].startswith("0 of 0 moves kept")
    assert solution.plan.placement == run("auto", PIPE, ZERO).plan.placement
    assert solution.info["chosen"] == "auto's hybrid, no move tried"  # not "improved it"


def test_auto_of_one_pass_runs_no_search_and_says_so() -> None:
    # main said "skipped: no time limit", as if the limit were infinite
    solution = run("auto", FLAT, ZERO)
    assert solution.info["search"] == NO_SEARCH
    assert solution.info["cpsat"].startswith("skipped: a time limit of 0 s")


@pytest.mark.parametrize(("algo", "problem"), [("pipeilp", PIPE), ("cpsat", FLAT),
                                               ("ilp", FLAT)])
def test_an_exact_solver_runs_none_at_zero(monkeypatch: pytest.MonkeyPatch, algo: str,
                                           problem: object) -> None:
    calls: list[object] = []
    monkeypatch.setattr(backends, "solve_pyomo", lambda *a, **k: calls.append(a))
    solution = run(algo, problem, ZERO)  # type: ignore[arg-type]
    assert not calls and solution.status == "fallback"
    assert solution.info["solver_status"] == "skipped"
    # cpsat too (before: "no search time left ...: the estimated preparation uses it up",
    # as if a little more time would have run it)
    assert solution.info["reason"] == NO_SOLVER


def test_pipeilp_emits_its_model_at_zero_and_solves_none(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    calls: list[object] = []
    monkeypatch.setattr(backends, "solve_pyomo", lambda *a, **k: calls.append(a))
    model = tmp_path / "m.lp"
    solution = run("pipeilp", PIPE, Options(time_limit_s=0.0, emit=str(model)))
    assert not calls and solution.status == "fallback" and model.stat().st_size > 0
    assert (solution.info["solver_status"], solution.info["nodes"]) == ("skipped", 0)


@pytest.mark.parametrize("algo", ["pipedp", "hybrid"])
def test_what_takes_no_limit_plans_the_same_at_zero(algo: str) -> None:
    assert run(algo, PIPE, ZERO).plan == run(algo, PIPE).plan


def test_compare_runs_what_takes_no_limit_as_solve_does(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    """main gave pipedp and hybrid compare's `--time-limit` (0: their simulations
    unbudgeted), where `solve`, which refuses `--time-limit` for them, gives its default."""
    given: dict[str, float] = {}
    real = algorithms.run

    def spy(name: str, problem: object, options: Options) -> object:
        given[name] = options.time_limit_s
        return real(name, problem, options)  # type: ignore[arg-type]

    monkeypatch.setattr(algorithms, "run", spy)
    spec = Path(__file__).parents[1] / "compare" / "pipeline_specs" / "tiny.plan"
    sweep = plan_sweep([spec], "auto,pipedp,hybrid", objectives="pipeline", time_limit_s=0)
    rows = [run_point(point).row for point in sweep.points]
    assert {r["status"] for r in rows} <= {"optimal", "feasible"}
    assert {r["time_limit_s"] for r in rows} == {0.0}  # the point's label, as before
    assert given == {"auto": 0.0, "pipedp": Options().time_limit_s,
                     "hybrid": Options().time_limit_s}


def test_the_help_states_the_rule() -> None:
    solve = " ".join(CliRunner().invoke(app, ["solve", "--help"]).stdout.split())
    assert "0 runs no search and no solver" in solve and "take no limit" in solve
    compare = " ".join(CliRunner().invoke(app, ["compare", "--help"]).stdout.split())
    assert "other algorithms run as `solve` runs them" in compare


def test_pipeilp_without_a_warm_start_at_zero_is_e709_no_proof(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from planner.algorithms.pipeilp import solve as pipeilp_solve
    from planner.algorithms.pipeilp.warm import WarmSearch
    from planner.errors import SearchLimitError

    monkeypatch.setattr(pipeilp_solve, "_warm_starts",
                        lambda problem, options: (None, WarmSearch(problem, options)))
    with pytest.raises(SearchLimitError) as raised:
        run("pipeilp", PIPE, ZERO)
    (d,) = raised.value.diagnostics
    assert d.code == "E709" and NO_SOLVER in d.message and "not a proof" in d.message

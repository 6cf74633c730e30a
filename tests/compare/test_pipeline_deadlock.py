"""A plan whose pipeline never finishes is `violated` for that reason, not for memory.

Before: `uniform` on a graph whose first op is colocated with a later one (tied weights)
gave stages that wait on each other; the row said `does not fit as a pipeline: gpu1 holds
less than its stages' activations in flight need` next to `pipeline_fits` true (a few MiB
of 1 GiB), and a bubble of 0.0% for an iteration that never ends."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

import planner
from planner.cli import app
from planner.compare import plan_sweep, run_sweep

#: why such a plan does not run, in every command's words
NEVER_ENDS = ("its simulated iteration never ends (ops that never start: its stages wait on "
              "each other)")
#: a chain of five forward ops and their backward ops on three devices, `a` tied to `d`
FORWARD = {"a": 1, "b": 3, "c": 3, "d": 1, "e": 1}
TIED = ("cluster c { device gpu[0..2] { memory 1 GiB }\n"
        "  link gpu[*] <-> gpu[*] { bandwidth 10 GB/s  latency 5 us } }\ngraph g {\n"
        + "".join(f"  op {n} {{ time {t} ms  output 1 MiB }}\n"
                  f"  op {n}b {{ time {2 * t} ms  backward_of {n} }}\n"
                  for n, t in FORWARD.items())
        + "  a -> b -> c -> d -> e -> eb -> db -> cb -> bb -> ab\n  colocate a, d\n}\n"
        "plan p { graph g  cluster c  objective pipeline  microbatches 4  schedule 1f1b }\n")


def test_a_pipeline_that_never_finishes_says_so(tmp_path: Path) -> None:
    spec = tmp_path / "tied.plan"
    spec.write_text(TIED, encoding="utf-8")
    (row,) = run_sweep(plan_sweep([spec], "uniform"), executor="inline").rows
    assert (row["status"], row["pipeline_fits"], row["iteration_s"]) == ("violated", True, None)
    assert row["reason"].startswith(
        "does not run as a pipeline: its simulated iteration never ends (ops that never "
        "start: its stages wait on each other); its devices are not a chain of stages")
    assert "does not fit" not in row["reason"]
    assert row["bubble_fraction"] is None and row["time_per_microbatch_s"] is None


def test_solve_and_the_api_judge_it_as_compare_does(tmp_path: Path) -> None:
    """Before: `planner solve` printed `status feasible`, `iteration inf s`, `throughput 0
    samples/s` and exited 0 (the API: `feasible` True, no breaks) for the plan compare
    calls `violated`."""
    spec = tmp_path / "tied.plan"
    spec.write_text(TIED, encoding="utf-8")
    result = CliRunner().invoke(app, ["solve", str(spec), "--algo", "uniform", "--json"])
    doc = json.loads(result.stdout)
    assert (result.exit_code, doc["result"]["status"]) == (3, "infeasible")
    (d,) = [d for d in doc["diagnostics"] if d["code"] == "E401"]
    assert d["message"] == f"plan `p` does not run as a pipeline: {NEVER_ENDS}"
    # `feasible` is the pipeline's verdict, as the status and the API's (before: one
    # pass's `true` beside `infeasible` and exit 3, with one pass's gap)
    assert (doc["result"]["feasible"], doc["result"]["one_pass_feasible"],
            doc["result"]["gap"]) == (False, True, None)
    runs = json.loads(CliRunner().invoke(app, ["solve", str(spec), "--algo", "pipedp",
                                               "--json"]).stdout)["result"]
    assert (runs["status"], runs["feasible"], runs["one_pass_feasible"]) == (
        "feasible", True, True)
    plan = planner.solve(planner.load(spec).plan("p"), "uniform")
    assert (plan.feasible, plan.breaks) == (False, (f"the pipeline does not run: {NEVER_ENDS}",))


def test_pipeilp_never_returns_a_pipeline_that_never_finishes() -> None:
    """Before: pipeilp's answer on this spec was such a plan (solve: E401, exit 3), as its
    period model does not see stages that wait on each other; now the answer is checked
    by the simulator and pipedp's warm start, which runs, is kept."""
    from planner.algorithms import Options, run
    from planner.algorithms.exact import backends
    from planner.pipeline.schedule import run_planned

    if not backends.available("highs"):
        pytest.skip("pipeilp needs HiGHS (highspy), which is not installed")
    problem = planner.loads(TIED).plan("p")
    solution = run("pipeilp", problem, Options(time_limit_s=20))
    assert problem.pipeline is not None
    ran = run_planned(problem, solution.plan.placement, problem.pipeline, solution.info)
    assert math.isfinite(ran.iteration_s)
    assert solution.info["note"].endswith("never finishes (its stages wait on each other); "
                                          "it was not used")
    assert solution.status == "feasible" and solution.info["warm_start"] == "pipedp"

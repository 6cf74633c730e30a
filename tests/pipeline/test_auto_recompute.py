"""`auto` under `objective pipeline` where no contiguous split fits without recomputing
activations: it plans the best split that fits with its devices recomputing (what
`pipeilp` starts from), not E707 and exit 3 as if no plan existed, and the plan file it
writes says which devices recompute, so that `simulate --placement` runs it as planned.
`pipedp`, which never recomputes, still says E707, and its hint names the algorithms
that do."""

from __future__ import annotations

import json
import math
from pathlib import Path

from cli.helpers import invoke

import planner
from planner.errors import InfeasibleError

# two devices of 20 MB (a fast and a slow one); GPipe keeps 8 micro-batches' activations,
# which no split holds, while one device recomputing its forward ops holds 11.25 MB (its
# rebuilt 2.25 MB once, the model's 250 KB output per micro-batch)
SPEC = """\
cluster c {
  device fast { memory 20 MB  speed 2 }
  device slow { memory 20 MB  speed 0.5 }
  link fast <-> slow { bandwidth 1 GB/s  latency 10 us }
}
graph g {
  op f0 { time 2 ms  params 3 MB  output 2 MB }
  op b0 { time 4 ms  output 1 MB  backward_of f0 }
  op f1 { time 2 ms  params 3 MB  output 250 KB }
  op b1 { time 4 ms  output 1 MB  backward_of f1 }
  f0 -> f1 -> b1 -> b0
  f0 -> b0
}
plan p {
  graph g
  cluster c
  objective pipeline
  microbatches 8
  schedule gpipe
}
"""


def test_auto_recomputes_where_nothing_else_fits() -> None:
    problem = planner.loads(SPEC).plan("p")
    try:
        planner.solve(problem, "pipedp")
    except InfeasibleError as err:
        assert [d.code for d in err.diagnostics] == ["E707"]
        assert "--algo pipeilp" in " ".join(err.diagnostics[0].hints)
    else:
        raise AssertionError("a split fits without recomputing: the test needs a tighter cap")
    result = planner.solve(problem, "auto", time_limit_s=1)
    assert result.feasible and result.status == "feasible"
    assert result.recompute == ("fast",)
    assert result.info["chosen"] == "recomputing contiguous split"
    assert result.pipeline is not None
    assert math.isfinite(result.pipeline.iteration_s)
    assert result.pipeline.iteration_s == result.info["iteration_s"]
    held = {d.name: d.memory_bytes for d in problem.cluster.devices}
    assert all(b <= held[n] for n, b in result.info["held_bytes"].items())


def test_auto_plan_file_simulates_as_planned(tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(SPEC)
    code, out, err = invoke(["solve", "s.plan", "--out", "p.json", "--json"], tmp_path)
    assert code == 0, err
    solved = json.loads(out)["result"]
    assert json.loads((tmp_path / "p.json").read_text())["recompute"] == ["fast"]
    code, out, err = invoke(["simulate", "s.plan", "--placement", "p.json", "--json"],
                            tmp_path)
    assert code == 0, err
    simulated = json.loads(out)["result"]
    assert simulated["pipeline"]["iteration_s"] == solved["pipeline"]["iteration_s"]
    # and says what solve says of it (before, simulate left the note out)
    assert simulated["pipeline"]["notes"] == solved["pipeline"]["notes"]
    assert solved["pipeline"]["notes"][0].startswith("recomputes activations on fast (+2.000 "
                                                     "ms per micro-batch, holds 10.73 MiB)")


def test_the_plan_file_names_the_algorithm_that_ran(tmp_path: Path) -> None:
    # auto's recomputing contiguous split runs no ILP: before, `--out` and the compared
    # row said "pipeilp"; as where the memory shaped pipedp's split, it is auto's plan
    (tmp_path / "s.plan").write_text(SPEC)
    code, out, err = invoke(["solve", "s.plan", "--out", "p.json", "--json"], tmp_path)
    assert code == 0, err
    assert json.loads((tmp_path / "p.json").read_text())["algorithm"] == "auto"
    (mine,) = [r for r in json.loads(out)["result"]["pipeline"]["compared"]
               if r["plan"] == "this plan"]
    assert mine["algorithm"] == "auto"


def test_where_even_recomputing_fails_no_hint_names_the_algorithm_that_ran() -> None:
    """At 8 MB a device, nothing fits even recomputing: `auto` keeps pipedp's E707 (whose
    hint names `pipeilp`), and `pipeilp` proves it (E708) without telling the user to run
    `pipeilp`, the algorithm that just ran."""
    problem = planner.loads(SPEC.replace("memory 20 MB", "memory 8 MB")).plan("p")
    for algorithm, codes in (("auto", ["E707"]), ("pipeilp", ["E707", "E708"])):
        try:
            planner.solve(problem, algorithm, time_limit_s=2)
        except InfeasibleError as err:
            assert [d.code for d in err.diagnostics] == codes, algorithm
            said = " ".join(h for d in err.diagnostics for h in d.hints)
            assert ("--algo pipeilp" in said) == (algorithm == "auto"), said
        else:
            raise AssertionError(f"{algorithm} found a plan at 8 MB a device")


def test_search_plans_the_recomputing_split_too() -> None:
    """`search` starts from pipedp's split; where none fits without recomputing, it plans
    the recomputing split `auto` plans (its moves judge memory without recomputing)
    rather than E707."""
    problem = planner.loads(SPEC).plan("p")
    result = planner.solve(problem, "search", time_limit_s=1)
    assert result.feasible and result.recompute == ("fast",)
    assert result.info["search"].startswith("skipped")
    auto = planner.solve(problem, "auto", time_limit_s=1)
    assert result.plan.placement == auto.plan.placement
    assert result.pipeline is not None and auto.pipeline is not None
    assert result.pipeline.iteration_s == auto.pipeline.iteration_s

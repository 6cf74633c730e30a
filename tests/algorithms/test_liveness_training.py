"""Training memory (issue 28, item 5): a generated training graph defaults to `memory
liveness`, and under `liveness` every constructive algorithm finds a plan whenever a
contiguous split fits, although static accounting (every tensor held to the end) fits
nowhere; E704's hints name only algorithms that can help."""

from __future__ import annotations

from pathlib import Path

import pytest
from algo_support import check_plan
from typer.testing import CliRunner

import planner
from planner.algorithms import Options, run
from planner.algorithms.infeasible import stuck_error
from planner.cli import app
from planner.cost import static_memory
from planner.errors import InfeasibleError
from planner.model import Problem
from planner.pipeline.split import split_of
from planner.plan import Plan
from planner.simulate import simulate

CONSTRUCTIVE = ("msct", "metf", "heft", "cpop", "mtopo")

CLUSTER = """cluster t4 {
  device gpu[0..3] {
    kind   v100
    memory %s
    flops  15 TFLOPS
  }
  link gpu[0..3] <-> gpu[0..3] { bandwidth 12 GB/s  latency 5 us }
}
"""


@pytest.fixture(scope="module")
def gpt(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A 4-layer GPT training step, generated with the default memory model (its spec text,
    cluster file inlined so the cap can be changed)."""
    folder = tmp_path_factory.mktemp("gpt")
    (folder / "t4.plan").write_text(CLUSTER % "1 GiB")
    out = folder / "gpt.plan"
    result = CliRunner().invoke(app, [
        "generate", "transformer", "--layers", "4", "--hidden", "64", "--heads", "2",
        "--seq", "64", "--batch", "2", "--vocab", "100", "--training", "--name", "tgpt",
        "--cluster", str(folder / "t4.plan"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out.read_text().replace('import "t4.plan"', "")


def _problem(text: str, memory: str) -> Problem:
    return planner.loads(text + CLUSTER % memory).plan()


def test_a_generated_training_graph_defaults_to_liveness(gpt: str) -> None:
    assert "memory     liveness" in gpt
    assert _problem(gpt, "1 GiB").memory_model == "liveness"


def test_an_inference_graph_keeps_static(tmp_path: Path) -> None:
    (tmp_path / "t4.plan").write_text(CLUSTER % "1 GiB")
    out = tmp_path / "inf.plan"
    result = CliRunner().invoke(app, [
        "generate", "transformer", "--layers", "1", "--hidden", "64", "--heads", "2",
        "--seq", "16", "--vocab", "100", "--cluster", str(tmp_path / "t4.plan"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "memory     static" in out.read_text()


def test_memory_given_on_the_command_line_wins(tmp_path: Path) -> None:
    (tmp_path / "t4.plan").write_text(CLUSTER % "1 GiB")
    out = tmp_path / "st.plan"
    result = CliRunner().invoke(app, [
        "generate", "transformer", "--layers", "1", "--hidden", "64", "--heads", "2",
        "--seq", "16", "--vocab", "100", "--training", "--memory", "static",
        "--cluster", str(tmp_path / "t4.plan"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "memory     static" in text
    assert "--memory static" in text.splitlines()[1]


@pytest.mark.parametrize("algo", CONSTRUCTIVE)
def test_a_contiguous_split_is_found_where_static_accounting_fits_nowhere(
        gpt: str, algo: str) -> None:
    problem = _problem(gpt, "2 MiB")
    n, m = len(problem.graph.ops), len(problem.cluster.devices)
    # the premise: by static accounting the four devices together cannot hold the step
    static_total = static_memory(problem.graph, (0,) * n, m)[0]
    assert static_total > m * 2 * 2**20
    solution = run(algo, problem, Options())
    check_plan(problem, solution.plan)  # liveness peaks within 2 MiB each, above the bound
    assert solution.status == "fallback"
    assert "contiguous split" in str(solution.info["reason"])
    used = set(solution.plan.placement)
    assert len(used) > 1
    # contiguous: each device runs one run of layers (backward ops with their forward ops)
    assert split_of(problem, solution.plan.placement).stages == len(used)


def test_below_every_split_the_error_names_only_what_can_help(gpt: str) -> None:
    problem = _problem(gpt, "1.5 MiB")
    n = len(problem.graph.ops)
    # the premise: no single device holds the step, even by liveness
    assert not simulate(problem, Plan((0,) * n)).feasible
    for algo in CONSTRUCTIVE:
        with pytest.raises(InfeasibleError) as err:
            run(algo, problem, Options())
        (diag,) = err.value.diagnostics
        assert diag.code == "E704"
        hint = diag.hints[-1]
        assert "--algo single" not in hint
        assert "--algo mtopo" not in hint  # tried: by m-TOPO itself, or as the retry
        assert "--algo search" in hint
        assert "exact solver" not in hint  # the static model is stricter than liveness


#: a chain of three 1 MiB tensors: 3 MiB on one device by static accounting, a liveness
#: peak of 2 MiB; split in two, it fits either way (so nothing is proved infeasible)
CHAIN = """cluster c {
  device gpu0 { kind gpu  memory 2.5 MiB }
  device gpu1 { kind gpu  memory 2.5 MiB }
  link gpu0 <-> gpu1 { bandwidth 10 GB/s }
}
graph g {
  op a { time 1 ms  output 1 MiB }
  op b { time 1 ms  output 1 MiB }
  op c { time 1 ms  output 1 MiB }
  a -> b -> c
}
plan p { graph g  cluster c  memory %s }
"""


@pytest.mark.parametrize(("memory", "suggested"), [("liveness", True), ("static", False)])
def test_single_is_suggested_only_when_one_device_holds_the_step(
        memory: str, suggested: bool) -> None:
    problem = planner.loads(CHAIN % memory).plan()
    assert simulate(problem, Plan((0, 0, 0))).feasible is suggested  # the premise
    hint = stuck_error(problem, "metf", 1).diagnostics[0].hints[-1]
    assert ("--algo single" in hint) is suggested
    assert "--algo mtopo" in hint  # not tried by m-ETF's first pass
    assert ("exact solver" in hint) is (memory == "static")

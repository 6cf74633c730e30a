"""Where no heuristic found a plan and the exact solver left none either, the exit says
which: E811 (exit 6, `SearchLimitError`) when it ran out of time or was given none, no
proof; E812 (exit 4) when it failed; the heuristics' proof (exit 3) when they hold one."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli.helpers import invoke

from planner.algorithms import Options, run
from planner.codes import CODES
from planner.errors import InfeasibleError, SearchLimitError, SolverError
from planner.model import Cluster, Device, Graph, Link, Op, Problem

MIB = 2**20
# 200 MiB on two 100 MiB devices, no subset making 100 MiB: every heuristic fails (E704);
# only the exact model proves that no plan exists (E813), given the time
_SPEC = "\n".join([
    "cluster two {",
    "  device gpu[0..1] { memory 100 MiB  flops 1 TFLOPS }",
    "  link gpu[*] <-> gpu[*] { bandwidth 1 GB/s }",
    "}",
    "graph bins {",
    *(f"  op o{i} {{ time 1 ms  params {s} MiB }}" for i, s in enumerate((45, 45, 40, 35, 35))),
    "}",
    "plan p { graph bins  cluster two }",
    ""])


def _bins(caps: tuple[int, int] = (100, 100)) -> Problem:
    ops = tuple(Op(f"o{i}", 1e-3, params_bytes=s * MIB)
                for i, s in enumerate((45, 45, 40, 35, 35)))
    devs = tuple(Device(f"gpu{d}", c * MIB) for d, c in enumerate(caps))
    return Problem("p", Graph("g", ops, (), ()), Cluster("c", devs, (
        Link(0, 1, 1e9), Link(1, 0, 1e9))))


@pytest.mark.parametrize("algo", ["cpsat", "ilp"])
def test_out_of_time_after_the_heuristics_exits_6_not_3(algo: str, tmp_path: Path) -> None:
    # before: exit 3, documented as "infeasible", where nothing was proven (pipeilp's E709,
    # the same situation, exits 6); both still located at the plan
    spec = tmp_path / "bins.plan"
    spec.write_text(_SPEC)
    code, _, err = invoke(["solve", str(spec), "--algo", algo, "--time-limit", "0"], tmp_path,
                          guarded=True)
    assert code == 6 == CODES["E811"].exit
    assert "bins.plan:12:6: error[E704]" in err and "bins.plan:12:6: error[E811]" in err
    assert "neither is a proof that no plan exists" in err
    assert "Traceback" not in err


def test_e811_is_a_search_limit_error() -> None:
    with pytest.raises(SearchLimitError) as raised:
        run("cpsat", _bins(), Options(time_limit_s=0))
    assert [d.code for d in raised.value.diagnostics] == ["E704", "E811"]
    assert raised.value.exit_code == 6


def test_a_solver_that_fails_after_the_heuristics_is_e812_exit_4(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # before: E704 then E811, exit 3 ("infeasible") for a crash of the solver
    from ortools.sat.python import cp_model

    def crash(*_: object, **__: object) -> None:
        raise RuntimeError("the solver crashed")

    monkeypatch.setattr(cp_model.CpSolver, "Solve", crash)
    with pytest.raises(SolverError) as raised:
        run("cpsat", _bins(), Options(time_limit_s=5.0))
    assert not isinstance(raised.value, SearchLimitError)
    (d,) = raised.value.diagnostics
    assert d.code == "E812" and "CP-SAT failed: the solver crashed" in d.message
    assert raised.value.exit_code == CODES["E812"].exit == 4
    assert any("ran out of memory" in h for h in d.hints)  # the heuristics' own words


def test_a_proof_stays_a_proof() -> None:
    # 80 MiB ops on 100 MiB devices, 240 MiB of 200: E303 however long the solver runs
    problem = _bins()
    problem = Problem("p", Graph("g", tuple(Op(f"o{i}", 1e-3, params_bytes=80 * MIB)
                                            for i in range(3)), (), ()), problem.cluster)
    with pytest.raises(InfeasibleError) as raised:
        run("cpsat", problem, Options(time_limit_s=0))
    assert raised.value.exit_code == 3
    assert "E811" not in [d.code for d in raised.value.diagnostics]


@pytest.mark.parametrize("algo", ["cpsat", "ilp"])
@pytest.mark.parametrize("rejected_by", ["simulator", "exact check"])
def test_an_answer_that_is_rejected_is_a_failure_e812_exit_4_not_out_of_time(
        algo: str, rejected_by: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # before: E704 then E811, exit 6, "try a longer --time-limit" beside "CP-SAT proved its
    # model optimal; the simulator rejected its plan": more time gives the same answer
    from planner.algorithms.exact import common
    from planner.algorithms.exact.instance import Instance
    from planner.algorithms.exact.verdict import Verdict

    if rejected_by == "simulator":
        monkeypatch.setattr(common, "judge", lambda *_, **__: Verdict(False))
        said = "the simulator rejected its plan"
    else:
        monkeypatch.setattr(Instance, "respects", lambda *_: False)
        said = "its answer broke a constraint when checked exactly"
    problem = _bins((110, 90))  # a plan exists (90 + 110 MiB); every heuristic fails
    with pytest.raises(SolverError) as raised:
        run(algo, problem, Options(time_limit_s=5.0))
    assert not isinstance(raised.value, SearchLimitError)
    (d,) = raised.value.diagnostics
    assert d.code == "E812" and said in d.message
    assert raised.value.exit_code == CODES["E812"].exit == 4
    assert not any("--time-limit" in h for h in d.hints)

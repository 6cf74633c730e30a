"""The public API: load, solve, lower_bound, and the simulator, as a library user sees them."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

import planner
from planner.errors import InfeasibleError, UsageError
from planner.plan import Plan
from planner.simulate import simulate

ROOT = Path(__file__).resolve().parents[1]


def test_load_solve_simulate_round_trip() -> None:
    problem = planner.load(ROOT / "specs" / "resnet.plan").plan()
    solution = planner.solve(problem, "heft")
    result = simulate(problem, solution.plan)
    assert result.feasible
    assert solution.plan.algorithm == "heft"
    assert result.makespan_s >= planner.lower_bound(problem).makespan_s > 0
    # deterministic: the same input gives the same plan
    assert planner.solve(problem, "heft").plan == solution.plan


def test_options_are_passed_through_and_bad_names_are_usage_errors() -> None:
    problem = planner.loads(
        "cluster c { device d[0..1] { memory 1 GB } link d0 <-> d1 { bandwidth 1 GB/s } }"
        " graph g { op a { time 1 ms } op b { time 1 ms } a -> b } plan p { graph g cluster c }"
    ).plan()
    one = planner.solve(problem, "random", seed=1).plan
    assert one == planner.solve(problem, "random", seed=1).plan
    with pytest.raises(UsageError):
        planner.solve(problem, "nope")
    with pytest.raises(UsageError) as err:  # before: a bare TypeError from Options
        planner.solve(problem, "heft", timelimit=1)
    assert err.value.diagnostics[0].code == "E626"
    assert "did you mean `time_limit_s`?" in err.value.diagnostics[0].hints


@pytest.mark.parametrize(("option", "value"), [
    # before: ValueError, OverflowError and TypeError deep in an algorithm; `seed=None`
    # made `random` give another plan on each call; a negative gap was a `fallback`
    ("time_limit_s", float("nan")), ("time_limit_s", float("inf")), ("time_limit_s", "5"),
    ("time_limit_s", -1), ("gap", float("nan")), ("gap", -1), ("seed", "x"), ("seed", None),
    ("seed", -1), ("seed", 2**31), ("seed", True), ("progress", 5), ("solver", 3),
    # were OverflowError in the checks
    pytest.param("gap", 10**400, id="gap-400-digits"),
    pytest.param("threshold", -(10**400), id="threshold-400-digits"),
])
def test_option_values_are_checked_before_any_work(option: str, value: object) -> None:
    problem = planner.load(ROOT / "specs" / "resnet.plan").plan()
    with pytest.raises(UsageError) as err:
        planner.solve(problem, {"gap": "cpsat", "threshold": "auto"}.get(option, "random"),
                      **{option: value})
    (d,) = err.value.diagnostics
    shown = repr(value) if len(repr(value)) < 30 else f"{repr(value)[:18]}...{repr(value)[-19:]}"
    assert d.code == "E626" and d.message.startswith(f"option `{option}`: {shown} is not ")


def test_infeasible_is_an_exception_with_diagnostics() -> None:
    problem = planner.loads(
        "cluster c { device d0 { memory 1 MB } } graph g { op a { time 1 ms output 2 MB } }"
        " plan p { graph g cluster c }"
    ).plan()
    with pytest.raises(InfeasibleError) as err:
        planner.solve(problem, "metf")
    assert err.value.exit_code == 3
    assert any("2 MB" in d.message or "1.91 MiB" in d.message for d in err.value.diagnostics)


@pytest.mark.parametrize(("args", "message"), [
    # before: AttributeError ('NoneType' object has no attribute 'removeprefix')
    ((None,), "`text` must be a str, not NoneType"),
    ((b"graph g { }",), "`text` must be a str, not bytes; decode it"),
    (("graph g { }", None), "`file` must be a str, not NoneType"),
])
def test_loads_takes_text_and_says_so(args: tuple[object, ...], message: str) -> None:
    with pytest.raises(TypeError, match=re.escape(message)):
        planner.loads(*args)  # type: ignore[arg-type]


_SPEC_OF_TWO = ("cluster c { device d0 { memory 1 GB } } graph g { op a { time 1 ms } "
                "op b { time 1 ms } } plan p { graph g cluster c }")


@pytest.mark.parametrize(("call", "message"), [
    # before: pathlib's "expected str, bytes or os.PathLike object, not int"
    (lambda: planner.load(3), "planner.load: `path` must be a str or os.PathLike, not int"),
    (lambda: planner.load(b"graph g { }"), "not bytes: for spec text, planner.loads(text)"),
    (lambda: planner.load("s.plan", root=1), "`root` must be a str or os.PathLike, not int"),
    # before: planned, as plan `3` of cluster `3_cluster`
    (lambda: planner.ProblemBuilder(3), "ProblemBuilder: `name` must be a str, not int"),
    (lambda: planner.ProblemBuilder("p", cluster=2), "`cluster` must be a str, not int"),
    # before: AttributeError ('dict' object has no attribute 'is_directed')
    (lambda: planner.ProblemBuilder.from_networkx({"a": 1}),  # type: ignore[arg-type]
     "`graph` must be a networkx graph (a DiGraph), not a dict"),
    # before: AttributeError ('Spec' object has no attribute 'graph')
    (lambda: simulate(planner.loads(_SPEC_OF_TWO), Plan((0, 0))),  # type: ignore[arg-type]
     "`problem` must be a planner.Problem, not a Spec: pick one of its plans with .plan(NAME)"),
])
def test_a_path_or_a_name_of_another_type_is_a_type_error_that_names_it(
        call: Callable[[], object], message: str) -> None:
    with pytest.raises(TypeError, match=re.escape(message)):
        call()


TIGHT_PIPELINE = """
graph g {
  op f0 { time 1 ms  params 100 MB  output 1 MB }
  op f1 { time 1 ms  params 100 MB  output 1 MB }
  op b1 { time 2 ms  output 1 MB  backward_of f1 }
  op b0 { time 2 ms  output 1 MB  backward_of f0 }
  f0 -> f1 -> b1 -> b0
}
cluster c { device gpu[0..1] { memory 118 MB }  link gpu0 <-> gpu1 { bandwidth 1 GB/s } }
plan p { graph g  cluster c  objective pipeline  microbatches 8  schedule gpipe }
"""


def test_a_pipeline_plan_that_does_not_fit_is_infeasible_in_python_too(tmp_path: Path) -> None:
    """Before: `status` feasible, `feasible` True, `gap` 0.2 (one pass's), for a plan whose
    devices hold 117 MB of a 110 MB cap as the pipeline runs: the CLI's E401, exit 3.
    (Since 2026-12-07's receive buffers 125 MB, of a 118 MB cap: gpu0 fits, gpu1 not.)"""
    result = planner.solve(planner.loads(TIGHT_PIPELINE).plan(), "uniform")
    # GPipe, 8 in flight: params, 8 x (1 MB kept + 1 MB received on gpu1), the 1 MB backward
    # output, and 8 receive buffers: gpu0's of b1's 1 MB gradient, gpu1's of f0's 1 MB output
    assert result.pipeline is not None and result.pipeline.memory_bytes == (
        (100 + 8 * 1 + 1 + 8 * 1) * 1e6, (100 + 8 * (1 + 1) + 1 + 8 * 1) * 1e6)
    assert (result.status, result.feasible, result.gap) == ("infeasible", False, None)
    # the cause named: params fit (95.37 MiB of 112.53), the activations in flight do not
    assert result.breaks == ("device `gpu1` holds 112.53 MiB, less than the 119.21 MiB its "
                             "stages need: params 95.37 MiB, the rest activations in flight, "
                             "receive buffers and workspace",)
    # params alone over the cap: said so, not "activations in flight" (as it was)
    heavy = planner.solve(planner.loads(TIGHT_PIPELINE.replace("params 100 MB", "params 120 MB"))
                          .plan(), "uniform")
    # every device over its cap (before: the first alone)
    assert heavy.breaks == tuple(f"device `gpu{d}` holds 112.53 MiB, less than the params of "
                                 "its stages alone (114.44 MiB)" for d in (0, 1))
    spec = tmp_path / "tight.plan"
    spec.write_text(TIGHT_PIPELINE)
    from typer.testing import CliRunner

    from planner.cli import app

    done = CliRunner().invoke(app, ["solve", str(spec), "--algo", "uniform"])
    assert done.exit_code == 3 and "E401" in done.stderr
    spec.write_text(TIGHT_PIPELINE.replace("params 100 MB", "params 120 MB"))
    done = CliRunner().invoke(app, ["solve", str(spec), "--algo", "uniform"])
    assert done.exit_code == 3 and ("error[E401]: plan `p` does not fit as a pipeline: device "
                                    "`gpu0` holds 112.53 MiB, less than the params of its "
                                    "stages alone (114.44 MiB)") in done.stderr
    roomy = planner.loads(TIGHT_PIPELINE.replace("118 MB", "1 GB")).plan()
    fits = planner.solve(roomy, "uniform")
    # at its period's bound: `optimal`, whatever algorithm made it
    assert (fits.status, fits.feasible, fits.breaks, fits.period_gap) == (
        "optimal", True, (), 0.0)


TWO_PLANS = ("cluster c { device d[0..1] { memory 1 GB } link d0 <-> d1 { bandwidth 1 GB/s } }"
             " graph g { op a { time 1 ms } op b { time 1 ms } a -> b }"
             " plan p { graph g cluster c } plan q { graph g cluster c }")


@pytest.mark.parametrize(("call", "message"), [
    # before: AttributeError: 'Spec' object has no attribute '__dict__' (and 'str', 'NoneType')
    (lambda spec: planner.solve(spec), "`problem` must be a planner.Problem, not a Spec: pick "
     "one of its plans with .plan(NAME) (its plans: 'p', 'q')"),
    (lambda spec: planner.lower_bound("g.plan"), "`problem` must be a planner.Problem, not "
     "str 'g.plan': load a spec first, planner.load(PATH).plan(NAME)"),
    (lambda spec: planner.solve(None), "`problem` must be a planner.Problem, not NoneType"),
    # before: AttributeError: 'Result' object has no attribute 'graph'
    (lambda spec: planner.solve(planner.solve(spec.plan("p"), "heft")),
     "`problem` must be a planner.Problem, not a Result: its problem is .problem"),
])
def test_what_is_no_problem_is_a_type_error_that_says_how_to_get_one(
        call: object, message: str) -> None:
    spec = planner.loads(TWO_PLANS)
    with pytest.raises(TypeError) as err:
        call(spec)  # type: ignore[operator]
    assert str(err.value) == message


def test_an_algorithm_named_by_no_str_is_e601() -> None:
    """Before: TypeError: 'int' object is not iterable, from difflib."""
    with pytest.raises(UsageError) as err:
        planner.solve(planner.loads(TWO_PLANS).plan("p"), 3)  # type: ignore[arg-type]
    (d,) = err.value.diagnostics
    assert d.code == "E601"
    assert d.message == "unknown algorithm 3 (an algorithm is named by a str, not int)"
    assert d.hints[-1].startswith("available: auto, ")


@pytest.mark.parametrize(("algo", "option", "value", "takers"), [
    # before: ignored without a word (the command line: E605, exit 2)
    ("heft", "solver", "cbc", "pipeilp, ilp"),
    ("hybrid", "time_limit_s", 5, "auto, search, pipeilp, cpsat, ilp"),
    ("search", "gap", 0.1, "auto, pipeilp, cpsat, ilp"),
    ("heft", "threshold", 0.3, "msct"),
])
def test_an_option_the_algorithm_does_not_take_is_e605_as_on_the_command_line(
        algo: str, option: str, value: object, takers: str) -> None:
    problem = planner.loads(TWO_PLANS).plan("p")
    with pytest.raises(UsageError) as err:
        planner.solve(problem, algo, **{option: value})
    (d,) = err.value.diagnostics
    assert d.code == "E605"
    assert d.message == f"option `{option}` does not apply to algorithm `{algo}`"
    assert d.hints[0] == f"`{option}` applies to: {takers}"
    assert planner.solve(problem, "random", seed=3).feasible  # every run has a seed
    assert planner.solve(problem, "msct", threshold=0.3).feasible


def test_an_unknown_solver_is_e820_as_on_the_command_line() -> None:
    """Before: a warning and the heuristics' plan as a `fallback`."""
    problem = planner.loads(TWO_PLANS).plan("p")
    with pytest.raises(UsageError) as err:
        planner.solve(problem, "ilp", solver="hihgs")
    (d,) = err.value.diagnostics
    assert d.code == "E820"
    assert d.message.startswith("option `solver`: `hihgs` is not a solver planner knows")
    assert d.hints[0] == "did you mean `highs`?"
    with pytest.raises(UsageError) as err:  # before: the fallback, as `--solver` did
        planner.solve(problem, "ilp", solver="asl:nosuch")
    (d,) = err.value.diagnostics
    assert (d.code, d.message) == ("E820", "option `solver`: `asl:nosuch` is not a solver "
                                   "planner knows (Pyomo runs `asl:NAME` as the program NAME, "
                                   "and there is no program `nosuch` on PATH)")


def test_simulate_given_no_plan_says_what_to_pass() -> None:
    """Before: AttributeError: 'Result' object has no attribute 'placement' (and 'dict')."""
    problem = planner.loads(TWO_PLANS).plan("p")
    result = planner.solve(problem, "heft")
    with pytest.raises(TypeError, match=r"not a Result: its plan is \.plan"):
        simulate(problem, result)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"not a dict: for a placement by names, "
                       r"planner\.read_plan\(problem, "):
        simulate(problem, result.placement_by_name)  # type: ignore[arg-type]
    by_names = planner.read_plan(problem, {"placement": result.placement_by_name})
    assert by_names.makespan_s == simulate(problem, by_names.plan).makespan_s


def test_an_unknown_plan_is_e602_at_the_call_and_still_a_lookup_error() -> None:
    """Before: a bare LookupError, without the code, place, did-you-mean or hint the CLI's
    E602 gives (`solve --plan pp`)."""
    spec = planner.loads(TWO_PLANS)
    with pytest.raises(UsageError) as err:
        spec.plan("pp")
    assert isinstance(err.value, LookupError) and err.value.exit_code == 2
    (d,) = err.value.diagnostics
    assert (d.code, d.message) == ("E602", "no plan named `pp`; the spec defines: p, q")
    assert d.hints == ("did you mean `p`?",)
    assert d.span is not None and d.span.file == __file__
    assert str(err.value).startswith(f"{__file__}:{d.span.line}:") and "error[E602]" in str(
        err.value)
    with pytest.raises(UsageError, match=r"E602.*several plans.*p, q.*spec.plan\('p'\)"):
        spec.plan()
    with pytest.raises(LookupError, match=r"E602.*defines no plan"):
        planner.loads("graph g { op a { time 1 ms } }").plan()
    with pytest.raises(LookupError, match="E602"):
        spec.plan(3)  # type: ignore[arg-type]


def test_numpy_numbers_are_options_as_python_numbers() -> None:
    """Before: `seed=numpy.int64(3)` passed the checks and failed in `random.Random`
    (TypeError: The only supported seed types are: None, int, float, ...)."""
    import numpy as np

    from planner.algorithms import options_of

    problem = planner.loads(TWO_PLANS).plan("p")
    for algo, limit in (("random", {}), ("search", {"time_limit_s": np.float32(0.2)})):
        given = planner.solve(problem, algo, seed=np.int64(3), **limit)
        assert given.plan == planner.solve(problem, algo, seed=3, **limit).plan
    checked = options_of("msct", threshold=np.float32(0.25))
    assert type(checked.threshold) is float and checked.threshold == 0.25


def test_auto_gets_the_command_lines_default_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """`planner.solve(problem)` is `planner solve`: auto at 10 s. Before, 60 s (the
    `Options` default): on an 80-op graph 43 s and another plan (37.65 ms, not 37.59)."""
    import planner.algorithms as algorithms

    seen: list[tuple[str, float]] = []
    real = algorithms.run
    monkeypatch.setattr(algorithms, "run", lambda name, problem, options: (
        seen.append((name, options.time_limit_s)), real("single", problem, options))[1])
    problem = planner.loads(TWO_PLANS).plan("p")
    planner.solve(problem)
    planner.solve(problem, "auto", time_limit_s=2)
    planner.solve(problem, "search")
    assert seen == [("auto", 10.0), ("auto", 2.0), ("search", 60.0)]


def test_read_plan_given_no_plan_file_says_what_to_give(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: JSON text was taken for a path (OSError: File name too long; a short one E001
    "no such file: {...}"), a Result or Plan was E501 "a placement file must be a JSON
    object", and a path too long to exist an OSError."""
    problem = planner.loads(TWO_PLANS).plan("p")
    result = planner.solve(problem, "heft")
    for text in (result.dumps(), '{"placement": {"a": "d0", "b": "d0"}}'):
        with pytest.raises(TypeError, match=r"^planner\.read_plan: `source` is JSON text, not "
                           r"a path: give json\.loads\(text\), or the path of its file$"):
            planner.read_plan(problem, text)
    with pytest.raises(TypeError, match=r"not a Result: give source\.to_json\(\)$"):
        planner.read_plan(problem, result)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"not a Plan: give source\.to_json\(problem\)$"):
        planner.read_plan(problem, result.plan)  # type: ignore[arg-type]
    monkeypatch.chdir(tmp_path)
    result.write("{plan}.json")  # a file whose name starts with `{` is still a path
    assert planner.read_plan(problem, "{plan}.json").plan == result.plan
    for long in ("x" * 300, "x" * 300 + "/plan.json"):
        with pytest.raises(planner.SpecError, match=r"error\[E003\]: cannot read .*: File "
                           "name too long"):
            planner.read_plan(problem, str(tmp_path / long))


def test_an_output_path_that_cannot_be_written_is_e604_before_any_work(tmp_path: Path) -> None:
    """Before: `Result.write` into a folder that does not exist, and `emit=` there (after
    the solver's work, 0.7 s on resnet), raised OutputError E623 "free some space"; the
    command line says E604 before any work, as the API's options promise."""
    problem = planner.loads(TIGHT_PIPELINE.replace(
        "objective pipeline  microbatches 8  schedule gpipe", "")).plan()
    result = planner.solve(problem, "heft")
    missing = tmp_path / "nowhere"
    with pytest.raises(planner.UsageError, match="E604") as err:
        result.write(missing / "plan.json")
    assert "does not exist" in str(err.value) and not missing.exists()
    calls = []
    with pytest.raises(planner.UsageError, match="E604"):
        planner.solve(problem, "cpsat", emit=str(missing / "model.pbtxt"),
                      progress=lambda *a: calls.append(a))
    assert calls == []  # refused before the solver started
    result.write(tmp_path / "plan.json")  # a folder that exists: written
    assert planner.read_plan(problem, tmp_path / "plan.json").makespan_s == result.makespan_s
    # a path ending in `/` names a folder: before, a file `plans` was written
    with pytest.raises(planner.UsageError, match="it ends in `/`, so it names a folder"):
        result.write(f"{tmp_path}/plans/")
    assert not (tmp_path / "plans").exists()

"""The Python API says the warnings the command line prints: `planner.load`, `planner.loads`
and `ProblemBuilder.build` issue each as a `planner.PlannerWarning` (a `UserWarning`
carrying the `Diagnostic`) with `warnings.warn`, at the user's call, so that the standard
filters apply (`-W error::planner.PlannerWarning` makes them errors).

Before: `loads` of a spec with `params 1.5 B` was silent where `planner check` printed
W266 (`load` and `loads` dropped `Loaded.warnings`), and the builder rounded such sizes
without a word."""

from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

import planner
from planner.cli import app

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = """cluster c {{ device d[0..{last}] {{ kind v100  memory 1 GiB }}
  link d[0..{last}] <-> d[0..{last}] {{ bandwidth 1 GB/s }} }}
"""
GRAPH = """graph g {{
  op a {{ time 1 ms{a}  output 1 MB }}
  op b {{ time 1 ms }}
  op a.bwd {{ time 2 ms  backward_of a }}
  op b.bwd {{ time 2 ms  backward_of b }}
  a -> b -> b.bwd -> a.bwd
}}
"""
PLAN = "plan p {{ graph g  cluster c\n{settings}}}\n"

#: (comment, op a's extra attributes, devices, plan settings) -> the W-codes they cause
CASES = [
    ("", "  params 1.5 B", 2, "", {"W266"}),
    ("", "  time[a100] 2 ms", 2, "", {"W256"}),
    ("", "", 2, "  objective pipeline\n  data_parallel 2\n  microbatches 1\n", {"W257"}),
    ("", "", 2, "  objective pipeline\n  schedule interleaved\n  stages_per_device 2\n",
     {"W258"}),
    ("# a hidden \u200b character\n", "", 2, "", {"W265"}),
    ("# \u202e\n", "  params 0.5 KiB  temp 2.5 B  time[cpu] 1 ms", 1,
     "  objective pipeline\n  data_parallel 1\n", {"W256", "W265", "W266"}),
    ("", "", 2, "", set()),
]


def _spec(comment: str, attrs: str, devices: int, settings: str) -> str:
    return (comment + CLUSTER.format(last=devices - 1) + GRAPH.format(a=attrs)
            + PLAN.format(settings=settings))


def _warned(call: object) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()  # type: ignore[operator]
    return caught


@pytest.mark.parametrize(("comment", "attrs", "devices", "settings", "codes"), CASES)
def test_load_and_loads_warn_what_check_prints(tmp_path: Path, comment: str, attrs: str,
                                               devices: int, settings: str,
                                               codes: set[str]) -> None:
    path = tmp_path / "s.plan"
    path.write_text(_spec(comment, attrs, devices, settings), encoding="utf-8")
    result = CliRunner().invoke(app, ["check", str(path), "--json"])
    assert result.exit_code == 0, result.output
    printed = {d["code"] for d in json.loads(result.stdout)["diagnostics"]}
    assert printed == codes
    for call in (lambda: planner.load(path),
                 lambda: planner.loads(path.read_text(encoding="utf-8"), "s.plan")):
        caught = _warned(call)
        assert all(w.category is planner.PlannerWarning for w in caught)
        assert {w.message.code for w in caught} == printed  # type: ignore[union-attr]
        # issued at the user's call (this file), not inside planner
        assert {w.filename for w in caught} <= {__file__}


def test_the_warning_carries_the_diagnostic_and_is_located() -> None:
    text = _spec("", "  params 1.5 B", 2, "")
    caught = _warned(lambda: planner.loads(text, "s.plan"))
    (w,) = caught
    warning = w.message
    assert isinstance(warning, planner.PlannerWarning) and isinstance(warning, UserWarning)
    d = warning.diagnostic
    assert (warning.code, warning.span, warning.hints) == (d.code, d.span, d.hints)
    assert warning.message == "`params` 1.5 B is not a whole number of bytes: read as 2 B"
    assert d.span is not None and (d.span.file, d.span.line, d.span.column) == ("s.plan", 4, 28)
    assert str(warning).startswith("s.plan:4:28: warning[W266]: `params` 1.5 B")
    assert "(hint: sizes are whole bytes" in str(warning)
    again = pickle.loads(pickle.dumps(warning))
    assert again.diagnostic == d and str(again) == str(warning)


def test_a_filter_turns_them_into_errors() -> None:
    text = _spec("", "  params 1.5 B", 2, "")
    with warnings.catch_warnings():
        warnings.simplefilter("error", planner.PlannerWarning)
        with pytest.raises(planner.PlannerWarning) as err:
            planner.loads(text)
    assert err.value.code == "W266"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore", planner.PlannerWarning)
        planner.loads(text)  # no error
    assert caught == []


@pytest.mark.parametrize("option", [[], ["-W", "error::planner.PlannerWarning"]])
def test_the_command_line_filter_names_the_class(option: list[str], tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(_spec("", "  params 1.5 B", 2, ""))
    script = tmp_path / "user.py"
    script.write_text("import planner\n\nspec = planner.load('s.plan')\nprint('loaded')\n")
    run = subprocess.run([sys.executable, *option, str(script)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert "W266" in run.stderr, run.stderr
    if option:  # an exception, raised at the user's line
        assert run.returncode == 1 and "loaded" not in run.stdout, run.stderr
        assert run.stderr.rstrip().splitlines()[-1].startswith(
            "planner.errors.PlannerWarning: s.plan:4:28: warning[W266]"), run.stderr
    else:  # printed once, naming the user's line
        assert run.returncode == 0 and "loaded" in run.stdout, run.stderr
        assert f"{script}:3: PlannerWarning: s.plan:4:28: warning[W266]" in run.stderr


def test_a_spec_that_fails_holds_its_warnings_in_the_error() -> None:
    text = _spec("", "  params 1.5 B", 2, "").replace("op b {", "op b { bad 1 ms")
    with warnings.catch_warnings(record=True) as caught, \
            pytest.raises(planner.SpecError) as err:
        warnings.simplefilter("always")
        planner.loads(text)
    assert caught == []  # said once, in the error
    assert "W266" in {d.code for d in err.value.diagnostics}


#: the builder's form of CASES (without W265: a built problem has no comments)
BUILT = [({"params": "1.5 B"}, 2, None), ({"time_by_kind": {"a100": "2 ms"}}, 2, None),
         ({}, 2, {"microbatches": 1, "data_parallel": 2}),
         ({}, 2, {"microbatches": 1, "schedule": "interleaved", "stages_per_device": 2}),
         None, None, ({}, 2, None)]


def _builder(op_a: dict[str, object], devices: int, pipeline: dict[str, object] | None
             ) -> planner.ProblemBuilder:
    b = planner.ProblemBuilder("p", graph="g", cluster="c")
    names = [f"d{k}" for k in range(devices)]
    for name in names:
        b.device(name, kind="v100", memory="1 GiB")
    b.link(names, names, bandwidth="1 GB/s")
    b.op("a", time="1 ms", output="1 MB", **op_a)  # type: ignore[arg-type]
    b.op("b", time="1 ms")
    b.op("a.bwd", time="2 ms", backward_of="a")
    b.op("b.bwd", time="2 ms", backward_of="b")
    b.chain("a", "b", "b.bwd", "a.bwd")
    if pipeline is not None:
        mb = pipeline.pop("microbatches")
        b.pipeline(mb, **pipeline)  # type: ignore[arg-type]
    return b


@pytest.mark.parametrize(("case", "built"), [(c, b) for c, b in zip(CASES, BUILT, strict=True)
                                             if b is not None])
def test_the_builder_warns_what_the_spec_of_its_problem_warns(
        case: tuple[str, str, int, str, set[str]],
        built: tuple[dict[str, object], int, dict[str, object] | None]) -> None:
    op_a, devices, pipeline = built
    b = _builder(dict(op_a), devices, dict(pipeline) if pipeline else None)
    caught = _warned(b.build)
    assert {w.message.code for w in caught} == case[4]  # type: ignore[union-attr]
    spec_codes = {w.message.code for w in  # type: ignore[union-attr]
                  _warned(lambda: planner.loads(_spec("", *case[1:4])))}
    assert spec_codes == case[4]


def test_the_builder_warns_at_the_build_and_locates_at_the_call() -> None:
    b = _builder({}, 2, None)
    b.op("c", time="1 ms", params=2.5, temp="1.001 KB")  # at: op
    b.edge("b", "c", bytes="0.3 MiB")  # at: edge
    b.pipeline(1, data_parallel=2)  # at: pipeline
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        problem = b.build()  # at: build
    assert [w.lineno for w in caught] == [_line("build")] * 3
    assert [(w.message.code, w.message.span.line)  # type: ignore[union-attr]
            for w in caught] == [("W266", _line("op")), ("W266", _line("edge")),
                                 ("W257", _line("pipeline"))]
    assert [str(w.message).split(": ", 1)[1] for w in caught[:2]] == [
        "warning[W266]: `params` 2.5 is not a whole number of bytes: read as 3 B (hint: sizes "
        "are whole bytes (an op's or an edge's size rounds up, a device's `memory` down); "
        "give params=3 to say so)",
        "warning[W266]: `bytes` '0.3 MiB' is not a whole number of bytes: read as 314573 B "
        "(hint: sizes are whole bytes (an op's or an edge's size rounds up, a device's "
        "`memory` down); give bytes=314573 to say so)"]
    assert problem.graph.ops[4].params_bytes == 3  # rounded as before, and said


@pytest.mark.parametrize(("op_a", "colocate", "code"), [
    ({"params": "1.5 B"}, (), "W266"),
    ({}, ("a",), "W236")])  # before: no W236 at all
def test_a_build_that_fails_holds_the_calls_warnings(op_a: dict[str, object],
                                                     colocate: tuple[str, ...],
                                                     code: str) -> None:
    b = _builder(op_a, 2, None)
    if colocate:
        b.colocate(*colocate)
    b.op("c", time="-1 ms")
    with warnings.catch_warnings(record=True) as caught, \
            pytest.raises(planner.SpecError) as err:
        warnings.simplefilter("always")
        b.build()
    assert caught == []
    assert [d.code for d in err.value.diagnostics] == [code, "E105"]


def _line(mark: str) -> int:
    """The line of this file marked `# at: mark`."""
    lines = Path(__file__).read_text().splitlines()
    return next(k for k, x in enumerate(lines, 1) if x.endswith(f"# at: {mark}"))


def test_the_warning_is_rebuilt_from_its_args() -> None:
    """pytest-xdist rebuilds a worker's warnings as `cls(*args)`: before, with the text as
    its argument, that raised AttributeError inside pytest (an INTERNALERROR)."""
    (w,) = _warned(lambda: planner.loads(_spec("", "  params 1.5 B", 2, "")))
    warning = w.message
    again = type(warning)(*warning.args)
    assert str(again) == str(warning) and again.code == "W266"  # type: ignore[attr-defined]


def _placed(microbatches: int, schedule: str = "1f1b", params: str = "") -> str:
    """Four layers `place`d one per device: 4 stages (`test_honest_words._four_stages`)."""
    return ("cluster c {\n  device d[0..3] { memory 1 TiB }\n"
            "  link d[0..3] <-> d[0..3] { bandwidth 100 GB/s }\n}\ngraph g {\n"
            + "".join(f"  op f{k} {{ time 4 ms; output 1 MB{params} }}\n"
                      f"  op f{k}.bwd {{ time 8 ms; backward_of f{k} }}\n" for k in range(4))
            + "  f0 -> f1 -> f2 -> f3 -> f3.bwd -> f2.bwd -> f1.bwd -> f0.bwd\n}\n"
            f"plan p {{\n  graph g; cluster c; objective pipeline; microbatches {microbatches}"
            f"; schedule {schedule}\n"
            + "".join(f"  place f{k}, f{k}.bwd on d{k}\n" for k in range(4)) + "}\n")


@pytest.mark.parametrize(("text", "algo", "codes"), [
    (_placed(2), "expert", {"W626"}),
    (_placed(2, params="; params 1.5 B"), "expert", {"W266", "W626"}),
    (_placed(2), "uniform", set()),  # capped at M stages: torch runs it
    (_placed(4), "expert", set()),
    (_placed(2, "gpipe"), "expert", set()),
    (_placed(2), "heft", None),  # whatever the CLI prints
])
def test_solve_warns_what_the_command_line_prints(tmp_path: Path, text: str, algo: str,
                                                  codes: set[str] | None) -> None:
    """Before: `planner.solve` of a pipeline plan torch's 1F1B cannot run (4 stages, 2
    micro-batches) was silent, where `planner solve` printed W626."""
    path = tmp_path / "s.plan"
    path.write_text(text, encoding="utf-8")
    res = CliRunner().invoke(app, ["solve", str(path), "--algo", algo])
    assert res.exit_code == 0, res.output
    printed = set(re.findall(r"warning\[(W\d+)\]", res.stderr))
    assert codes is None or printed == codes
    caught = _warned(lambda: planner.solve(planner.loads(text, "s.plan").plan(), algo))
    assert {w.message.code for w in caught} == printed  # type: ignore[union-attr]
    assert {w.filename for w in caught} <= {__file__}


@pytest.mark.parametrize(("names", "codes"), [
    (("a",), {"W236"}), (("b", "b"), {"W236"}), (("a", "b"), set())])
def test_a_builders_colocate_of_one_op_warns_as_the_spec_does(names: tuple[str, ...],
                                                              codes: set[str]) -> None:
    """Before: `colocate("a")` built silently, where the spec's `colocate a` gives W236."""
    b = _builder({}, 2, None)
    b.colocate(*names)  # at: colocate
    caught = _warned(b.build)
    assert {w.message.code for w in caught} == codes  # type: ignore[union-attr]
    text = _spec("", "", 2, "").replace("a -> b", f"colocate {', '.join(names)}\n  a -> b")
    spec = _warned(lambda: planner.loads(text))
    assert {w.message.code for w in spec} == codes  # type: ignore[union-attr]
    for w in caught:  # at the build, located at the colocate
        assert (w.filename, w.message.span.line) == (  # type: ignore[union-attr]
            __file__, _line("colocate"))
        assert f"names only `{names[0]}`, so it does nothing" in str(w.message)



@pytest.mark.parametrize(("text", "codes"), [(_placed(2), {"W626"}), (_placed(4), set())])
def test_read_plan_warns_what_simulate_prints(tmp_path: Path, text: str,
                                              codes: set[str]) -> None:
    """Before: `planner.read_plan` of a plan torch's 1F1B cannot run was silent, where
    `planner simulate --placement` of the same file printed W626."""
    path, saved = tmp_path / "s.plan", tmp_path / "plan.json"
    path.write_text(text, encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        problem = planner.load(path).plan()
        planner.solve(problem, "expert").write(saved)
    res = CliRunner().invoke(app, ["simulate", str(path), "--placement", str(saved)])
    assert res.exit_code == 0, res.output
    printed = set(re.findall(r"warning\[(W\d+)\]", res.stderr))
    assert printed == codes
    caught = _warned(lambda: planner.read_plan(problem, saved))
    assert {w.message.code for w in caught} == printed  # type: ignore[union-attr]
    assert {w.filename for w in caught} <= {__file__}

"""The hybrid settings in the language (issue 39, item 1): `data_parallel auto | N` and
`microbatch_size N` under `objective pipeline`, their located diagnostics, `planner fmt`,
the Python API's checks, the report's JSON and the interchange format."""

from __future__ import annotations

import dataclasses
import json

import pytest

import planner
from planner import loads
from planner.errors import SpecError
from planner.io.interchange import export_spec, parse_json, schema
from planner.model import MAX_DATA_PARALLEL, MAX_MICROBATCH_SIZE, Pipeline
from planner.pipeline import schedule
from planner.pipeline.bound import PipelineBound
from planner.render.pipeline import pipeline_json
from planner.report.views import PipelineRow
from planner.spec.format import format_source

CLUSTER = ("cluster c { device d[0..1] { memory 1 GiB } "
           "link d[0..1] <-> d[0..1] { bandwidth 1 GB/s } }\n"
           "cluster one { device d0 { memory 1 GiB } }\n")
GRAPH = """graph g {
  op a { time 1 ms; output 1 MB }
  op b { time 1 ms; output 1 MB }
  op b.bwd { time 2 ms; output 1 MB; backward_of b }
  op a.bwd { time 2 ms; backward_of a }
  a -> b -> b.bwd -> a.bwd
}
"""


def _plan(settings: str, cluster: str = "c") -> str:
    return CLUSTER + GRAPH + f"plan p {{\n  graph g\n  cluster {cluster}\n{settings}}}\n"


def _first_setting_line() -> int:
    """The line of the plan's first setting after `graph` and `cluster`."""
    return _plan("").count("\n")


@pytest.mark.parametrize(("settings", "expected"), [
    ("  objective pipeline\n", Pipeline(1, "1f1b", 1, 1, 1)),
    ("  objective pipeline\n  data_parallel auto\n", Pipeline(1, "1f1b", 1, "auto", 1)),
    ('  objective pipeline\n  data_parallel "auto"\n', Pipeline(1, "1f1b", 1, "auto", 1)),
    ("  objective pipeline\n  data_parallel 2\n  microbatches 8\n",
     Pipeline(8, "1f1b", 1, 2, 1)),
    ("  objective pipeline\n  data_parallel 1\n  schedule interleaved\n"
     "  stages_per_device 2\n", Pipeline(1, "interleaved", 2, 1, 1)),
    ("  objective pipeline\n  schedule gpipe\n  data_parallel auto\n  microbatch_size 32\n",
     Pipeline(1, "gpipe", 1, "auto", 32)),
    ("  objective pipeline\n  microbatch_size 1_048_576\n",
     Pipeline(1, "1f1b", 1, 1, MAX_MICROBATCH_SIZE)),
])
def test_the_settings_lower_to_the_pipeline(settings: str, expected: Pipeline) -> None:
    assert loads(_plan(settings)).plan("p").pipeline == expected


def test_the_pipeline_defaults_to_one_replica_of_one_sample() -> None:
    pipe = Pipeline()
    assert (pipe.data_parallel, pipe.microbatch_size) == (1, 1)
    assert hash(Pipeline(data_parallel="auto")) != hash(Pipeline(data_parallel=2))


def _value(setting: str, code: str, words: str, hint: str,
           cluster: str = "c") -> tuple[str, str, str, tuple[int, int], str, str]:
    """A row of `BAD` for `setting` written after `objective pipeline`: its diagnostic
    points at the value, on the second line, past `  KEY `."""
    key = setting.split()[0]
    return ("  objective pipeline\n  " + setting + "\n", cluster, code, (2, len(key) + 4),
            words, hint)


# (settings, cluster, code, (line from the first setting, column), words in the message,
# words in a hint)
BAD = [
    ("  data_parallel 2\n", "c", "E256", (1, 3), "`data_parallel` is a pipeline setting",
     "add `objective pipeline`"),
    ("  microbatch_size 8\n", "c", "E256", (1, 3), "`microbatch_size` is a pipeline setting",
     "add `objective pipeline`"),
    _value("data_parallel 0", "E257",
           "`data_parallel` must be `auto` or a whole number from 1 to 1024, not `0`",
           "`data_parallel auto` lets the planner choose each stage's replicas"),
    _value("data_parallel 2.5", "E257", "not `2.5`",
           "`data_parallel 2` runs two identical pipelines"),
    _value("data_parallel 5000", "E257", f"from 1 to {MAX_DATA_PARALLEL}, not `5000`",
           "data_parallel auto"),
    _value("data_parallel atuo", "E257", "not `atuo`", "did you mean `auto`?"),
    _value("data_parallel all", "E257", "not `all`", "data_parallel auto"),
    _value("data_parallel 2 ms", "E214",
           "`data_parallel` expects `auto` or a plain number (no unit)", "`data_parallel 2`"),
    _value("data_parallel 3", "E257", "3 pipelines need at least 3 devices; cluster `c` has 2",
           "set `data_parallel` from 1 to 2, or `data_parallel auto`"),
    _value("data_parallel 2", "E257", "2 pipelines need at least 2 devices; cluster `one` has 1",
           "a one-device cluster runs one pipeline: remove `data_parallel`", cluster="one"),
    ("  objective pipeline\n  schedule interleaved\n  stages_per_device 2\n"
     "  data_parallel 2\n", "c", "E256", (4, 17),
     "`data_parallel 2` replicates stages, and replicated stages run under `schedule 1f1b` "
     "or `gpipe`, not `interleaved`", "write `schedule 1f1b` (or `gpipe`)"),
    ("  objective pipeline\n  schedule interleaved\n  stages_per_device 2\n"
     "  data_parallel auto\n", "c", "E256", (4, 17), "`data_parallel auto` may replicate",
     "or remove `data_parallel`"),
    _value("microbatch_size 0", "E257",
           "`microbatch_size` must be a whole number from 1 to 1048576, not `0`",
           "for example `microbatch_size 8`"),
    _value("microbatch_size 1.5", "E257", "not `1.5`", "microbatch_size 8"),
    _value("microbatch_size 2_000_000", "E257", "from 1 to 1048576", "microbatch_size 8"),
    _value("microbatch_size 8 MB", "E214", "`microbatch_size` expects a plain number",
           "microbatch_size 8"),
    _value("microbatch_size auto", "E221", "`microbatch_size` expects a plain number, not a "
           "name", "microbatch_size 8"),
]


@pytest.mark.parametrize(("settings", "cluster", "code", "where", "words", "hint"), BAD)
def test_bad_settings_are_located(settings: str, cluster: str, code: str,
                                  where: tuple[int, int], words: str, hint: str) -> None:
    with pytest.raises(SpecError) as err:
        loads(_plan(settings, cluster))
    diags = [d for d in err.value.diagnostics if d.code.startswith("E")]  # W258 aside
    assert [d.code for d in diags] == [code], diags  # one diagnostic per mistake
    span = diags[0].span
    assert span is not None
    assert (span.line - _first_setting_line() + 1, span.column) == where
    assert words in diags[0].message
    assert any(hint in h for h in diags[0].hints), diags[0].hints


def test_check_prints_the_location_and_exits_1(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from planner.cli import app

    path = tmp_path / "h.plan"
    path.write_text(_plan("  objective pipeline\n  data_parallel 3\n"), encoding="utf-8")
    res = CliRunner().invoke(app, ["check", str(path)])
    assert res.exit_code == 1, res.output
    line = _first_setting_line() + 1
    assert f"h.plan:{line}:17: error[E257]" in res.output
    assert "3 pipelines need at least 3 devices" in res.output


def test_fmt_keeps_the_settings_and_is_idempotent() -> None:
    text = CLUSTER + GRAPH + ("plan p { graph g; cluster c; objective pipeline; "
                              "data_parallel auto; microbatch_size 32; microbatches 8 }\n"
                              "plan q { graph g; cluster c; objective pipeline; "
                              "data_parallel 2; microbatches 4 }\n")
    once = format_source(text)
    assert "  data_parallel   auto\n  microbatch_size 32\n  microbatches    8\n" in once
    assert "  data_parallel 2\n  microbatches  4\n" in once
    assert format_source(once) == once
    spec = loads(once)
    assert spec.plan("p").pipeline == Pipeline(8, "1f1b", 1, "auto", 32)
    assert spec.plan("q").pipeline == Pipeline(4, "1f1b", 1, 2, 1)


def test_the_api_checks_a_pipeline_built_in_python() -> None:
    problem = loads(_plan("  objective pipeline\n")).plan("p")
    for bad, code, words in (
            (Pipeline(4, "1f1b", 1, 0), "E257", "`data_parallel` must be \"auto\" or a whole"),
            (Pipeline(4, "1f1b", 1, "all"), "E257", "not 'all'"),  # type: ignore[arg-type]
            (Pipeline(4, "1f1b", 1, True), "E257", "not True"),
            (Pipeline(4, "1f1b", 1, 2.0), "E257", "not 2.0"),  # type: ignore[arg-type]
            (Pipeline(4, "1f1b", 1, 3), "E257", "3 pipelines need at least 3 devices; "
             "cluster `c` has 2"),
            (Pipeline(4, "interleaved", 2, 2), "E256", "replicated stages run under"),
            (Pipeline(4, "interleaved", 2, "auto"), "E256", "may replicate"),
            (Pipeline(4, "1f1b", 1, 1, 0), "E257", "`microbatch_size` must be a whole number"),
            (Pipeline(4, "1f1b", 1, 1, 2**21), "E257", "from 1 to 1048576"),
    ):
        with pytest.raises(SpecError) as err:
            planner.solve(dataclasses.replace(problem, pipeline=bad))
        diag = err.value.diagnostics[0]
        assert diag.code == code, err.value.diagnostics
        assert words in diag.message, diag.message
        assert diag.hints or "microbatch_size" not in words


def test_the_api_accepts_what_the_language_accepts() -> None:
    from planner.api.checks import problem_diagnostics

    problem = loads(_plan("  objective pipeline\n")).plan("p")
    for good in (Pipeline(4, "1f1b", 1, "auto", 16), Pipeline(4, "gpipe", 1, 2, 1),
                 Pipeline(4, "interleaved", 2, 1, 8)):
        assert problem_diagnostics(dataclasses.replace(problem, pipeline=good),
                                   lambda path: None) == []


def test_the_api_orders_a_pipelines_mistakes_as_a_spec_does() -> None:
    """Several settings wrong at once: the API's mistakes, all at the `pipeline(...)` call,
    come in the settings' order, as a spec's come by line. Before: the API said E256
    (`data_parallel`) before E259 (`stages_per_device`), and E257 of `microbatch_size`
    first; a spec, E259, E256, E257."""
    text = ("cluster one { device d0 { memory 1 GiB } }\n"
            "graph g { op a { time 1 ms }  op a.bwd { time 1 ms  backward_of a }  a -> a.bwd }\n"
            "plan p { graph g  cluster one\n  objective pipeline\n  microbatches 4\n"
            "  schedule interleaved\n  stages_per_device 2\n  data_parallel 2\n"
            "  microbatch_size 0\n}\n")
    with pytest.raises(SpecError) as err:
        loads(text)
    in_spec = [d.code for d in err.value.diagnostics]
    assert in_spec == ["E259", "E256", "E257"]
    b = planner.ProblemBuilder("p")
    b.device("d0", memory="1 GiB")
    b.op("a", time="1 ms")
    b.op("a.bwd", time="1 ms", backward_of="a")
    b.edge("a", "a.bwd")
    b.pipeline(4, schedule="interleaved", stages_per_device=2, data_parallel=2,
               microbatch_size=0)
    with pytest.raises(SpecError) as err:
        b.build()
    assert [d.code for d in err.value.diagnostics] == in_spec
    assert [d.message.split("`")[1] for d in err.value.diagnostics] == [
        "pipeline.stages_per_device", "pipeline.data_parallel", "pipeline.microbatch_size"]
    plain = loads(text.replace("  schedule interleaved\n  stages_per_device 2\n  data_parallel "
                               "2\n  microbatch_size 0\n", "")).plan()
    with pytest.raises(SpecError) as err:  # a Problem of the model's constructors, too
        planner.solve(dataclasses.replace(plain, pipeline=Pipeline(4, "interleaved", 2, 2, 0)))
    assert [d.code for d in err.value.diagnostics] == in_spec


def test_the_report_json_gives_the_settings() -> None:
    problem = loads(_plan("  objective pipeline\n  data_parallel 2\n  microbatch_size 16\n"
                          "  microbatches 4\n")).plan("p")
    assert problem.pipeline is not None
    run = schedule.run(problem, (0, 1, 1, 0), problem.pipeline)
    data = pipeline_json(problem, [PipelineRow("this plan", "expert", run, True)],
                         PipelineBound(0.0, 0.0, "work"))
    assert (data["data_parallel"], data["microbatch_size"]) == (2, 16)
    assert json.loads(json.dumps(data))["data_parallel"] == 2


@pytest.mark.parametrize("settings", ["data_parallel auto; microbatch_size 4",
                                      "data_parallel 2", ""])
def test_the_interchange_format_round_trips_the_settings(settings: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    text = CLUSTER + GRAPH + f"plan p {{ graph g; cluster c; objective pipeline; {settings} }}\n"
    spec = loads(text)
    data = export_spec(spec, plan="p")
    jsonschema.validate(data, schema())
    assert ("data_parallel" in data["plan"]) == ("data_parallel" in settings)
    assert ("microbatch_size" in data["plan"]) == ("microbatch_size" in settings)
    again = loads(parse_json(json.dumps(data), "x.json").to_spec(), "x.plan").plan()
    assert again.pipeline == spec.plan("p").pipeline


@pytest.mark.parametrize(("value", "words"), [
    # E922 at the value (the interchange's checks, with the language's range)
    ("all", 'x.json:1:1405: error[E922]: `plan.data_parallel` must be a whole number from 1 '
     'to 1024 or "auto", not "all"'), (2.5, "or \"auto\", not 2.5"),
    (True, "or \"auto\", not true"), (0, "from 1 to 1024 or \"auto\", not 0")])
def test_bad_interchange_values_are_spec_errors(value: object, words: str) -> None:
    text = _plan("  objective pipeline\n")
    data = export_spec(loads(text), plan="p")
    data["plan"]["data_parallel"] = value
    with pytest.raises(SpecError) as err:
        loads(parse_json(json.dumps(data), "x.json").to_spec(), "x.plan")
    assert words in str(err.value)


@pytest.mark.parametrize(("settings", "warned"), [
    ("  objective pipeline\n  data_parallel 2\n  microbatches 1\n", True),
    ("  objective pipeline\n  data_parallel 2\n  microbatches 2\n", False),
    ("  objective pipeline\n  data_parallel auto\n  microbatches 1\n", False),
])
def test_pipelines_without_a_micro_batch_are_a_warning(settings: str, warned: bool) -> None:
    """Before: `data_parallel 2` with `microbatches 1` solved without a word, one of the two
    pipelines idle (holding the model, joining the all-reduce, running nothing)."""
    from planner.spec.load import load_text

    found = [d for d in load_text(_plan(settings)).warnings if d.code == "W257"]
    assert bool(found) == warned
    if warned:
        (d,) = found
        line = _first_setting_line() + 1  # the line of `data_parallel`
        assert (d.span.line, d.span.column) == (line, 17)
        assert d.message == ("`data_parallel 2` runs 2 pipelines, and `microbatches 1` feeds "
                             "1 of them: 1 idle, holding the model and joining the all-reduce")
        assert d.hints == ("set `microbatches` to 2 or more (a multiple of 2 keeps the "
                           "pipelines even), or `data_parallel 1`",)

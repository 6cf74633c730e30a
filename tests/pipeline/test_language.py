"""The pipeline settings and `backward_of` in the language (issue 26, item 1)."""

from __future__ import annotations

import pytest

from planner import loads
from planner.errors import SpecError
from planner.model import PIPELINE_COUNTS, Pipeline
from planner.spec.format import format_source

CLUSTER = ("cluster c { device d[0..1] { memory 1 GiB } "
           "link d[0..1] <-> d[0..1] { bandwidth 1 GB/s } }\n")
GRAPH = """graph g {
  op a { time 1 ms; output 1 MB }
  op a.bwd { time 2 ms; backward_of a }
  a -> a.bwd
}
"""


def _plan(settings: str) -> str:
    return CLUSTER + GRAPH + f"plan p {{\n  graph g\n  cluster c\n{settings}}}\n"


@pytest.mark.parametrize(("settings", "expected"), [
    ("", None),
    ("  objective makespan\n", None),
    ("  objective pipeline\n", Pipeline(1, "1f1b", 1)),
    ("  objective pipeline\n  microbatches 8\n  schedule gpipe\n", Pipeline(8, "gpipe", 1)),
    ("  objective pipeline\n  schedule 1f1b\n  microbatches 16\n", Pipeline(16, "1f1b", 1)),
])
def test_settings_lower_to_the_pipeline(settings: str, expected: Pipeline | None) -> None:
    problem = loads(_plan(settings)).plan("p")
    assert problem.pipeline == expected
    assert dict(problem.graph.backward_of) == {1: 0}


def test_interleaved_lowers_with_a_unit_per_stage() -> None:
    # two stages per device need two pipeline units at least (E259 with GRAPH's one)
    two = GRAPH.replace("  a -> a.bwd\n", "  op b { time 1 ms }\n  op b.bwd { time 1 ms; "
                        "backward_of b }\n  a -> b\n  b -> b.bwd\n  b.bwd -> a.bwd\n")
    text = CLUSTER + two + ("plan p { graph g; cluster c; objective pipeline; schedule "
                            "interleaved; stages_per_device 2; microbatches 4 }\n")
    assert loads(text).plan("p").pipeline == Pipeline(4, "interleaved", 2)


@pytest.mark.parametrize(("settings", "code", "where", "words"), [
    ("  microbatches 4\n", "E256", (1, 3), "add `objective pipeline`"),
    ("  objective pipelin\n", "E256", (1, 13), "did you mean `pipeline`"),
    ("  objective pipeline\n  schedule 2f2b\n", "E101", (2, 12), "one of: gpipe | 1f1b"),
    ("  objective pipeline\n  schedule zerobubble\n", "E256", (2, 12), "gpipe | 1f1b"),
    ("  objective pipeline\n  microbatches 2.5\n", "E257", (2, 16), "whole number"),
    ("  objective pipeline\n  microbatches 0\n", "E257", (2, 16), "from 1 to 1024"),
    ("  objective pipeline\n  microbatches 4 ms\n", "E214", (2, 16), "plain number"),
    ("  objective pipeline\n  schedule interleaved\n", "E257", (2, 3), "stages_per_device 2"),
    ("  objective pipeline\n  stages_per_device 2\n", "E256", (2, 3), "schedule interleaved"),
    ("  objective pipeline\n  schedule interleaved\n  stages_per_device 2\n", "E259", (3, 3),
     "1 unit(s) cannot interleave (2 stages on each of two devices need 4): use "
     "`schedule 1f1b`"),
])
def test_bad_settings_are_located(settings: str, code: str, where: tuple[int, int] | None,
                                  words: str) -> None:
    with pytest.raises(SpecError) as err:
        loads(_plan(settings))
    diags = err.value.diagnostics
    assert diags[0].code == code, diags
    if where is not None:
        assert diags[0].span is not None
        first = _plan("").count("\n")  # the line of the plan's first setting
        assert (diags[0].span.line - first + 1, diags[0].span.column) == where
        assert words in str(diags[0])


@pytest.mark.parametrize(("graph", "code", "words"), [
    ("op a { time 1 ms }\n op b { time 1 ms; backward_of nope }", "E203", "unknown op `nope`"),
    ("op a { time 1 ms; backward_of a }", "E234", "its own `backward_of`"),
    ("op a { time 1 ms }\n op b { time 1 ms; backward_of a }\n op c { time 1 ms; "
     "backward_of b }", "E234", "is itself a backward op"),
    ("op a { time 1 ms; backward_of 3 }", "E213", "expects a name"),
])
def test_bad_backward_of_is_located(graph: str, code: str, words: str) -> None:
    with pytest.raises(SpecError) as err:
        loads(CLUSTER + "graph g {\n " + graph + "\n}\n")
    assert err.value.diagnostics[0].code == code
    assert words in str(err.value.diagnostics[0])


def test_fmt_keeps_the_settings_and_is_idempotent() -> None:
    text = CLUSTER + GRAPH + ("plan p { graph g; cluster c; objective pipeline; "
                              "microbatches 8; schedule 1f1b }\n")
    once = format_source(text)
    assert "  schedule     1f1b\n" in once and "  backward_of a" in once
    assert format_source(once) == once
    assert loads(once).plan("p").pipeline == Pipeline(8, "1f1b", 1)


def test_the_training_generator_writes_backward_of(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    out = tmp_path / "t.plan"
    proc = subprocess.run(
        [sys.executable, "-m", "planner", "generate", "transformer", "--layers", "2",
         "--hidden", "64", "--heads", "2", "--seq", "16", "--batch", "1", "--vocab", "100",
         "--training", "--name", "tiny", "-o", str(out)],
        capture_output=True, text=True, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    spec = loads(out.read_text(), str(out))
    graph = spec.graphs["tiny"]
    backward = {graph.ops[b].name: graph.ops[f].name for b, f in graph.backward_of.items()}
    assert backward and all(b == f + ".bwd" for b, f in backward.items())
    assert len(backward) == sum(1 for o in graph.ops if o.name.endswith(".bwd"))


def test_the_api_checks_a_pipeline_built_in_python() -> None:
    import dataclasses
    from types import MappingProxyType

    import planner

    problem = loads(_plan("  objective pipeline\n")).plan("p")
    for bad, code in ((Pipeline(0, "1f1b", 1), "E257"), (Pipeline(4, "zero", 1), "E256"),
                      (Pipeline(4, "interleaved", 1), "E257")):
        with pytest.raises(SpecError) as err:
            planner.solve(dataclasses.replace(problem, pipeline=bad))
        assert err.value.diagnostics[0].code == code
    graph = dataclasses.replace(problem.graph, backward_of=MappingProxyType({1: 1}))
    with pytest.raises(SpecError) as err:
        planner.solve(dataclasses.replace(problem, graph=graph))
    assert err.value.diagnostics[0].code == "E234"


@pytest.mark.parametrize("schedule", ["1f1b", "gpipe"])
def test_stages_per_device_without_virtual_stages_is_e256_in_python_as_in_a_spec(
        schedule: str) -> None:
    """Before: `pipeline(4, schedule="1f1b", stages_per_device=2)` built, and every plan
    ignored the setting; a spec saying the same is E256."""
    import dataclasses

    import planner

    with pytest.raises(SpecError) as spec:
        loads(_plan(f"  objective pipeline\n  schedule {schedule}\n  stages_per_device 2\n"))
    assert [d.code for d in spec.value.diagnostics] == ["E256"]
    b = planner.ProblemBuilder("p")
    b.device("d0", memory="1 GiB")
    b.op("a", time="1 ms")
    b.op("a.bwd", time="2 ms", backward_of="a")
    b.edge("a", "a.bwd")
    b.pipeline(4, schedule=schedule, stages_per_device=2)
    with pytest.raises(SpecError) as built:
        b.build()
    problem = loads(_plan("  objective pipeline\n")).plan("p")
    with pytest.raises(SpecError) as model:
        planner.solve(dataclasses.replace(problem, pipeline=Pipeline(4, schedule, 2)))
    for err in (built, model):
        (d,) = err.value.diagnostics
        assert (d.code, d.message) == ("E256", "`pipeline.stages_per_device`: "
                                       "`stages_per_device` is for `schedule interleaved`, "
                                       f"not `{schedule}`")
        assert d.hints == ('give schedule="interleaved", or leave stages_per_device at 1',)


@pytest.mark.parametrize("key", sorted(PIPELINE_COUNTS))
def test_the_language_and_the_api_share_each_counts_range(key: str) -> None:
    # one table (`PIPELINE_COUNTS`): a value past its end is E257 in a spec and in Python,
    # and both messages name the same range
    import dataclasses

    import planner

    most = PIPELINE_COUNTS[key]
    schedule = "interleaved" if key == "stages_per_device" else "1f1b"
    with pytest.raises(SpecError) as spec:
        loads(_plan(f"  objective pipeline\n  schedule {schedule}\n  {key} {most + 1}\n"))
    problem = loads(_plan("  objective pipeline\n")).plan("p")
    assert problem.pipeline is not None
    for value in (0, most + 1, True):
        bad = dataclasses.replace(problem.pipeline, schedule=schedule, **{key: value})
        with pytest.raises(SpecError) as api:
            planner.solve(dataclasses.replace(problem, pipeline=bad))
        found = [d for d in api.value.diagnostics if d.code == "E257"
                 and d.message.startswith(f"`pipeline.{key}`: `{key}` must be")]
        assert len(found) == 1, api.value.diagnostics
        assert f"from 1 to {most}, not {value!r}" in found[0].message
    found = [d for d in spec.value.diagnostics
             if d.code == "E257" and d.message.startswith(f"`{key}` must be")]
    assert len(found) == 1, spec.value.diagnostics
    assert f"from 1 to {most}, not `{most + 1}`" in found[0].message


def test_the_api_result_carries_the_pipeline() -> None:
    import planner
    from planner.pipeline.schedule import run

    problem = loads(_plan("  objective pipeline\n  microbatches 4\n")).plan("p")
    result = planner.solve(problem)
    assert result.pipeline is not None
    assert result.pipeline == run(problem, result.plan.placement, problem.pipeline)
    assert result.pipeline.iteration_s == pytest.approx(4 * 3e-3)  # one device: 4 x 3 ms
    flat = loads(_plan("")).plan("p")
    assert planner.solve(flat).pipeline is None

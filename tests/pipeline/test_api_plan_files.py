"""Plan files from Python: `Result.write` writes what `planner solve --out` writes (a hybrid
plan's `replicas`, a recomputing plan's `recompute` included) and `planner.read_plan` reads
it back to the same figures. Before, the only writer was `result.plan.dumps(problem)`, which
has neither: a hybrid plan read back iterated 96 ms instead of 48.2 ms, and a recomputing
one held 40 MB on 25 MB devices (34 MB since 2026-12-07: `TIGHT`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pipe_support import tight_text
from typer.testing import CliRunner

import planner
from planner.cli import app

HYBRID = """
cluster c { device d[0..1] { memory 1 GB }
  link d[0..1] <-> d[0..1] { bandwidth 10 GB/s latency 10 us } }
graph g {
  op f0 { time 4 ms; params 1 MB; output 10 MB }
  op f0.bwd { time 8 ms; output 0 B; backward_of f0 }
  op f1 { time 4 ms; params 1 MB; output 10 MB }
  op f1.bwd { time 8 ms; output 0 B; backward_of f1 }
  f0 -> f1 -> f1.bwd -> f0.bwd
  f0 -> f0.bwd
}
plan p { graph g; cluster c; objective pipeline; microbatches 4; schedule 1f1b;
         data_parallel auto }
"""

#: only [f0 f1 | f2 f3] fits, d0 recomputing: 18 MB once, 2 in flight x 3 MB sent and 4 x 1 MB
#: receive buffers (its output's gradient) = 28 MB, d1 18 + 3 MB and 4 x 3 MB buffers (its
#: input) = 33 MB; d0 not recomputing 2 x 18 + 4 = 40 MB, the whole model on one 36 MB
#: (`tight_text`'s 25 MB before 2026-12-07's receive buffers)
TIGHT = tight_text("34 MB")


@pytest.mark.parametrize(("text", "algo", "kept"), [
    (HYBRID, "hybrid", {"replicas": {"d0": ["d0", "d1"]}}),
    (TIGHT, "pipeilp", {"recompute": ["d0"]}),
])
def test_a_plan_file_written_in_python_is_solve_outs_and_reads_back_the_same(
        tmp_path: Path, text: str, algo: str, kept: dict[str, object]) -> None:
    spec = tmp_path / "p.plan"
    spec.write_text(text)
    problem = planner.load(spec).plan()
    result = planner.solve(problem, algo)
    assert result.pipeline is not None and result.feasible
    mine, theirs = tmp_path / "api.json", tmp_path / "cli.json"
    result.write(mine)
    done = CliRunner().invoke(app, ["solve", str(spec), "--algo", algo, "--out", str(theirs)])
    assert done.exit_code == 0, done.output
    assert mine.read_text() == theirs.read_text() == result.dumps()
    data = json.loads(mine.read_text())
    assert {k: data[k] for k in kept} == kept == {k: v for k, v in (
        ("replicas", result.replicas), ("recompute", list(result.recompute))) if v}
    for source in (mine, result.to_json()):
        back = planner.read_plan(problem, source)
        assert back.pipeline is not None
        assert (back.status, back.feasible, back.replicas, back.recompute) == (
            result.status, True, result.replicas, result.recompute)
        assert back.pipeline.iteration_s == result.pipeline.iteration_s
        assert back.pipeline.memory_bytes == result.pipeline.memory_bytes
    shown = CliRunner().invoke(app, ["simulate", str(spec), "--placement", str(mine), "--json"])
    ran = json.loads(shown.stdout)["result"]["pipeline"]
    assert ran["iteration_s"] == result.pipeline.iteration_s


def test_a_file_that_holds_no_plan_is_a_spec_error(tmp_path: Path) -> None:
    problem = planner.loads(HYBRID).plan()
    bad = tmp_path / "bad.json"
    bad.write_text('{"placement": {"f0": "d9"}}')
    with pytest.raises(planner.SpecError) as err:
        planner.read_plan(problem, bad)
    (d,) = err.value.diagnostics
    assert d.code == "E504" and d.span is not None and d.span.file == str(bad)
    bad.write_text("{")
    with pytest.raises(planner.SpecError, match=r"error\[E500\]: invalid JSON"):
        planner.read_plan(problem, bad)


@pytest.mark.parametrize(("text", "algo"), [(HYBRID, "hybrid"), (TIGHT, "pipeilp"),
                                            (tight_text("1 GB"), "pipedp")])
def test_the_period_bound_and_gap_are_solve_jsons(tmp_path: Path, text: str, algo: str) -> None:
    """Before: `Result` had the one-pass `gap` alone; the pipeline's bounds and period gap
    were only in `solve --json`."""
    spec = tmp_path / "p.plan"
    spec.write_text(text)
    result = planner.solve(planner.load(spec).plan(), algo)
    done = CliRunner().invoke(app, ["solve", str(spec), "--algo", algo, "--json"])
    shown = json.loads(done.stdout)["result"]["pipeline"]
    assert result.pipeline_bound is not None and result.period_gap is not None
    assert (result.pipeline_bound.period_s, result.pipeline_bound.iteration_s,
            result.period_gap) == (shown["period_bound_s"], shown["iteration_bound_s"],
                                   shown["period_gap"])


def test_a_plan_that_replicates_stages_under_one_pipeline_is_bounded_as_simulate_bounds_it(
        tmp_path: Path) -> None:
    """One unit (4 + 8 ms) replicated on both devices by a hybrid plan, read under a plan of
    `data_parallel 1`: its bound allows the replicas it runs (6 ms, not the unit's 12 ms,
    which its 6 ms period would pass below), as `simulate --placement` bounds it."""
    text = HYBRID.replace("  op f1 { time 4 ms; params 1 MB; output 10 MB }\n", "").replace(
        "  op f1.bwd { time 8 ms; output 0 B; backward_of f1 }\n", "").replace(
        "f0 -> f1 -> f1.bwd -> f0.bwd", "")
    hybrid = planner.solve(planner.loads(text).plan(), "hybrid")
    assert hybrid.replicas == {"d0": ["d0", "d1"]}
    mine = tmp_path / "hybrid.json"
    hybrid.write(mine)
    spec = tmp_path / "one.plan"
    spec.write_text(text.replace("data_parallel auto", ""))
    back = planner.read_plan(planner.load(spec).plan(), mine)
    done = CliRunner().invoke(app, ["simulate", str(spec), "--placement", str(mine), "--json"])
    shown = json.loads(done.stdout)["result"]["pipeline"]
    assert back.pipeline is not None and back.pipeline_bound is not None
    assert (back.pipeline.period_s, back.pipeline_bound.period_s, back.period_gap) == (
        shown["period_s"], shown["period_bound_s"], shown["period_gap"]) == (0.006, 0.006, 0.0)

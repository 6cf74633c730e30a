"""Each pipeline message names its true cause (issue 38, item 4): the memory note only when
the caps change the plan, the stage-count note otherwise; E707 for memory only; pins that
split a unit (E258), more stages per device than units (E259) and a backward op before its
forward op (E235) located at `check`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import MappingProxyType

import pytest
from pipe_support import chain_spec, layers_text, random_spec
from typer.testing import CliRunner

import planner
from planner import loads
from planner.algorithms import run, serving
from planner.cli import app
from planner.errors import Diagnostic, InfeasibleError, SpecError, UsageError
from planner.model import Pipeline, Problem
from planner.pipeline.runnable import refusal
from planner.pipeline.schedule import run as run_pipeline
from planner.pipeline.splitdp import split_candidates


def _ruled_out_faster(p: Problem, iteration_s: float) -> bool:
    """Whether a candidate split that only the memory caps rule out simulates faster than
    `iteration_s` (pipedp's candidates, with and without the caps)."""
    assert p.pipeline is not None
    kept = {f.split for found in split_candidates(p, p.pipeline).values() for f in found}
    free = split_candidates(p, p.pipeline, capped=False)
    return any(run_pipeline(p, f.split.placement(p), p.pipeline).iteration_s
               < iteration_s * (1 - 1e-9)
               for found in free.values() for f in found if f.split not in kept)


def test_no_memory_note_with_1_tib_devices() -> None:
    # main said "memory shaped this split: without the caps, the period would be 30.000 ms
    # instead of 38.000 ms" here: one stage has the least period, but two simulate faster
    p = chain_spec([2, 4, 4], [8, 4, 8], microbatches=4, activation="10 MB", memory="1 TiB",
                   bandwidth="1 GB/s")
    assert p.pipeline is not None
    sol = run("pipedp", p)
    assert "memory_note" not in sol.info
    found = [f for fs in split_candidates(p, p.pipeline).values() for f in fs]
    least = min(found, key=lambda f: (f.period_s, f.split.stages))
    runs = {f: run_pipeline(p, f.split.placement(p), p.pipeline).iteration_s for f in found}
    if runs[least] > sol.info["iteration_s"] * (1 + 1e-9):
        note = str(sol.info["stages_note"])
        assert note.startswith(f"{least.split.stages} stage(s) would have a shorter period")
        assert note.endswith("the split is chosen by the iteration")
    else:
        assert "stages_note" not in sol.info


# main noted memory where the caps ruled out only splits that simulate slower anyway (0, 6;
# before its candidates per stage count, also 8, 16), and once kept silent where they did
# rule out a faster plan (9, 46); over seeds 0-149, 51 of 146 specs disagreed, now none
@pytest.mark.parametrize("seed", [0, 6, 8, 9, 16, 46, 1, 2])
def test_the_memory_note_appears_exactly_when_the_caps_change_the_plan(seed: int) -> None:
    p = random_spec(seed, 7, 3, training=True)
    try:
        sol = run("pipedp", p)
    except InfeasibleError:
        return
    faster_without_caps = _ruled_out_faster(p, sol.info["iteration_s"])
    assert ("memory_note" in sol.info) == faster_without_caps, sol.info.get("memory_note")
    if faster_without_caps:
        assert "memory shaped this split: without the caps" in sol.info["memory_note"]


CLUSTER = ("cluster c {\n  device d[0..1] { memory 1 TiB }\n"
           "  link d[0..1] <-> d[0..1] { bandwidth 100 GB/s }\n}\n")
TWO_LAYERS = """graph g {
  op a { time 4 ms; output 1 MB }
  op b { time 4 ms; output 1 MB }
  op b.bwd { time 4 ms; backward_of b }
  op a.bwd { time 4 ms; backward_of a }
  a -> b
  b -> b.bwd
  b.bwd -> a.bwd { bytes 1 MB }
}
"""


def _spec(plan_lines: str, graph: str = TWO_LAYERS, settings: str = "schedule 1f1b") -> str:
    return (CLUSTER + graph + "plan p {\n  graph g; cluster c; objective pipeline; "
            f"microbatches 4; {settings}\n{plan_lines}}}\n")


def _error(text: str) -> Diagnostic:
    with pytest.raises(SpecError) as err:
        loads(text, "t.plan")
    (d, *_) = err.value.diagnostics
    return d


def test_pins_that_split_a_forward_backward_pair_are_a_located_spec_error() -> None:
    # main: check passed, pipedp said E707 "does not fit the devices' memory" with 1 TiB
    # devices, pipeilp crashed (E999, `max() arg is an empty sequence`)
    d = _error(_spec("  pin a to d0\n  pin a.bwd to d1\n"))
    assert d.code == "E258"
    assert d.span is not None and (d.span.line, d.span.column) == (17, 3)  # `pin a.bwd`
    assert "`a.bwd` is pinned to `d1` and op `a` to `d0`" in d.message
    assert d.notes and d.notes[0][1].line == 16 and "pin them to one device" in d.hints[0]
    # the same pins under `objective makespan` are fine: one pass has no units
    loads(CLUSTER + TWO_LAYERS + "plan p { graph g; cluster c\n  pin a to d0\n"
           "  pin a.bwd to d1\n}\n")


@pytest.mark.parametrize("algo", ["pipedp", "pipeilp", "auto"])
def test_an_algorithm_given_such_pins_names_them_not_memory(algo: str) -> None:
    p = loads(_spec("")).plan("p")
    index = p.graph.op_index
    pinned = dataclasses.replace(p, pins=MappingProxyType({index["a"]: 0, index["a.bwd"]: 1}))
    with pytest.raises(InfeasibleError) as err:
        run(algo, pinned)
    (d,) = err.value.diagnostics
    assert d.code == "E707" and "memory" not in d.message
    assert "pins split one pipeline unit between devices, `a` to `d0`, `a.bwd` to `d1`" in (
        d.message)


def test_more_stages_per_device_than_units_is_located_at_the_setting() -> None:
    d = _error(_spec("", settings="schedule interleaved; stages_per_device 3"))
    assert d.code == "E259" and "more stages than graph `g` has pipeline units (2)" in d.message
    assert d.span is not None and d.span.line == 15
    # not "set `stages_per_device 2`": 2 on each of two devices need 4 units (W258 said so)
    assert d.hints == ("2 unit(s) cannot interleave (2 stages on each of two devices need 4): "
                       "use `schedule 1f1b`",)
    p = loads(_spec("", settings="schedule interleaved; stages_per_device 2")).plan("p")
    assert p.pipeline is not None
    three = dataclasses.replace(p, pipeline=dataclasses.replace(p.pipeline,
                                                                stages_per_device=3))
    with pytest.raises(InfeasibleError) as err:
        run("pipedp", three)
    assert "`stages_per_device 3` asks each device for more stages than the graph has " \
           "pipeline units (2)" in err.value.diagnostics[0].message


def test_pins_no_chain_follows_say_so_not_memory() -> None:
    graph = TWO_LAYERS.replace("  a -> b\n", "  op c { time 4 ms; output 1 MB }\n"
                               "  op c.bwd { time 4 ms; backward_of c }\n  a -> b\n  b -> c\n"
                               "  c -> c.bwd\n  c.bwd -> b.bwd\n")
    p = loads(_spec("  pin a to d0\n  pin b to d1\n  pin c to d0\n", graph)).plan("p")
    with pytest.raises(InfeasibleError) as err:
        run("pipedp", p)
    (d,) = err.value.diagnostics
    assert d.code == "E707" and "honours the devices its units may use, whatever the " \
        "memory" in d.message and "pipeilp" in d.hints[0]


def test_memory_still_says_memory() -> None:
    p = chain_spec([4, 4], [4, 4], microbatches=8, activation="1 GB", memory="1 GB")
    with pytest.raises(InfeasibleError) as err:
        run("pipedp", p)
    assert "fits the devices' memory" in err.value.diagnostics[0].message


@pytest.mark.parametrize("edge", ["", "  a.bwd -> a\n"])
def test_a_backward_op_before_its_forward_op_is_located_at_check(edge: str) -> None:
    # main: exit 0 and `iteration_s: null` (uniform, with `a.bwd -> a`)
    graph = TWO_LAYERS.replace("  op a.bwd { time 4 ms; backward_of a }\n", "").replace(
        "graph g {\n", "graph g {\n  op a.bwd { time 4 ms; backward_of a }\n").replace(
        "  b.bwd -> a.bwd { bytes 1 MB }\n", edge)
    d = _error(_spec("", graph))
    assert d.code == "E235" and "backward op `a.bwd` comes before its forward op `a`" in (
        d.message)
    assert d.span is not None and (d.span.line, d.span.column) == (6, 6)
    assert "add an edge from `a`" in d.hints[0]
    # the builder's problems are checked alike
    problem = loads(CLUSTER + graph + "plan p { graph g; cluster c }\n").plan("p")
    with pytest.raises(SpecError) as err:
        planner.solve(dataclasses.replace(problem, pipeline=Pipeline(4, "1f1b", 1)))
    assert err.value.diagnostics[0].code == "E235"


def _solve(tmp_path: Path, text: str, *args: str) -> tuple[int, str, str]:
    (tmp_path / "s.plan").write_text(text)
    res = CliRunner().invoke(app, ["solve", str(tmp_path / "s.plan"), *args])
    return res.exit_code, res.stdout, res.stderr


TIGHT = _spec("", settings="schedule gpipe").replace("1 TiB", "700 MB").replace(
    "microbatches 4", "microbatches 8").replace("output 1 MB", "output 100 MB")


@pytest.mark.parametrize(("algo", "objective"), [
    ("cpsat", "pipeline"), ("ilp", "pipeline"), ("pipedp", "makespan"),
    ("pipeilp", "makespan"), ("uniform", "makespan")])
def test_an_algorithm_is_refused_for_an_objective_it_does_not_plan_for(
        tmp_path: Path, algo: str, objective: str) -> None:
    # main: `--algo cpsat` under `objective pipeline` said `optimal` (one pass's optimum) for
    # a 288 ms iteration where pipedp's is 238 ms; pipeilp under makespan, its period's
    text = TIGHT.replace("700 MB", "10 GB")
    if objective == "makespan":
        text = text.replace("objective pipeline; microbatches 8; schedule gpipe", "")
    code, out, err = _solve(tmp_path, text, "--algo", algo)
    assert code == 2 and "error[E625]" in err and not out
    assert f"--algo {algo} plans for `objective " in err
    assert f"and plan `p` has `objective {objective}`" in err
    problem = loads(text).plan("p")
    with pytest.raises(UsageError) as raised:  # the library and `compare` alike
        run(algo, problem)
    assert raised.value.diagnostics[0].code == "E625"


def test_a_one_pass_plan_under_a_pipeline_is_not_called_feasible_before_its_memory(
        tmp_path: Path) -> None:
    # main printed `status feasible`, then E401: the pipeline's activations do not fit
    code, out, err = _solve(tmp_path, TIGHT, "--algo", "heft")
    assert code == 3 and "error[E401]" in err and "does not fit as a pipeline" in err
    status = next(line for line in out.splitlines() if line.startswith("status"))
    assert status.split()[1] == "infeasible"
    assert "feasible (one pass)" in out  # one pass's verdict, labelled as one pass's


def test_a_plan_that_does_not_fit_as_a_pipeline_leaves_out_as_it_was(tmp_path: Path) -> None:
    """Before: E401 (exit 3) and `--out` replaced by the plan that does not fit, with
    nothing in the file to say so; now the file keeps its content and E401 says so."""
    (tmp_path / "p.json").write_text("OLD\n")
    code, _, err = _solve(tmp_path, TIGHT, "--algo", "heft", "--out", str(tmp_path / "p.json"))
    assert code == 3 and "does not fit as a pipeline" in err
    assert (tmp_path / "p.json").read_text() == "OLD\n" and "was left as it was" in err
    assert {"heft", "msct", "single", "auto", "search"} <= set(serving("pipeline"))



def _four_stages(microbatches: int, schedule: str = "1f1b") -> str:
    """`chain_spec`'s text for four layers `place`d one per device."""
    return (CLUSTER.replace("d[0..1]", "d[0..3]") + "graph g {\n"
            + "".join(f"  op f{k} {{ time 4 ms; output 1 MB }}\n"
                      f"  op f{k}.bwd {{ time 8 ms; backward_of f{k} }}\n" for k in range(4))
            + "  f0 -> f1\n  f1 -> f2\n  f2 -> f3\n  f3 -> f3.bwd\n  f3.bwd -> f2.bwd\n"
            "  f2.bwd -> f1.bwd\n  f1.bwd -> f0.bwd\n}\n"
            f"plan p {{\n  graph g; cluster c; objective pipeline; microbatches {microbatches}; "
            f"schedule {schedule}\n"
            + "".join(f"  place f{k}, f{k}.bwd on d{k}\n" for k in range(4)) + "}\n")


def test_more_stages_than_micro_batches_under_1f1b_is_said_before_export(
        tmp_path: Path) -> None:
    # main: check and solve said nothing; `export torch --pipeline` then refused it (E947)
    (tmp_path / "s.plan").write_text(_four_stages(2))
    res = CliRunner().invoke(app, ["check", str(tmp_path / "s.plan")])
    assert res.exit_code == 0 and "warning[W626]" in res.stderr
    assert "plan `p` runs 4 stages with 2 micro-batch(es): torch's Schedule1F1B" in res.stderr
    assert "s.plan:22:6" in res.stderr and "set `microbatches 4` (or more)" in res.stderr
    code, _, err = _solve(tmp_path, _four_stages(2), "--algo", "expert")
    assert code == 0 and "warning[W626]" in err
    code, _, err = _solve(tmp_path, _four_stages(2), "--algo", "uniform")  # capped at M
    assert code == 0 and "W626" not in err
    for fine in (_four_stages(4), _four_stages(2, "gpipe")):
        code, _, err = _solve(tmp_path, fine, "--algo", "expert")
        assert code == 0 and "W626" not in err
        res = CliRunner().invoke(app, ["check", str(tmp_path / "s.plan")])
        assert "W626" not in res.stderr


@pytest.mark.parametrize(("microbatches", "refused"), [(5, True), (4, False), (6, False)])
def test_interleaved_micro_batches_torch_refuses_are_said(microbatches: int,
                                                          refused: bool) -> None:
    text = _four_stages(microbatches, "interleaved; stages_per_device 2")
    text = text.replace("on d2\n", "on d0\n").replace("on d3\n", "on d1\n")
    problem = loads(text).plan("p")
    placement = tuple({**problem.placement}[i] for i in range(len(problem.graph.ops)))
    found = refusal(problem, placement)
    assert (found is not None) == refused
    if found is not None:
        assert "ScheduleInterleaved1F1B needs a multiple of its rounds, max(1, 5 // 2) = 2" in (
            found[0])
        assert found[1] == "set `microbatches` to a multiple of 2"


SPLIT_UNIT = """cluster c { device gpu[0..1] { memory 1 GiB }
  link gpu0 <-> gpu1 { bandwidth 10 GB/s  latency 5 us } }
graph g {
  op a { time 1 ms  output 1 MiB }
  op c { time 3 ms  output 1 MiB }
  op ab { time 2 ms  backward_of a }
  op cb { time 6 ms  backward_of c }
  a -> c -> cb -> ab
}
plan p { graph g  cluster c  objective pipeline  microbatches 4  schedule 1f1b }
"""


@pytest.mark.parametrize("how", ["simulate", "solve"])
def test_a_placement_that_splits_a_unit_is_no_pipeline(tmp_path: Path, how: str) -> None:
    """`c` on gpu1 and its backward op `cb` on gpu0: before, the pipeline ran `cb` nowhere,
    the iteration was `inf s` and the command said `feasible`, exit 0."""
    spec = tmp_path / "s.plan"
    spec.write_text(SPLIT_UNIT)
    placed = tmp_path / "p.json"
    placed.write_text('{"placement": {"a": "gpu0", "ab": "gpu0", "c": "gpu1", "cb": "gpu0"}}')
    args = (["simulate", str(spec), "--placement", str(placed)] if how == "simulate" else
            ["solve", str(spec), "--algo", "expert"])
    if how == "solve":  # the expert's plan is the spec's `place`: the same split
        spec.write_text(SPLIT_UNIT.replace("schedule 1f1b }", "schedule 1f1b\n  place a, ab, "
                                           "cb on gpu0  place c on gpu1 }"))
    result = CliRunner().invoke(app, [*args, "--json"])
    doc = json.loads(result.stdout)
    assert (result.exit_code, doc["exit_code"], doc["ok"]) == (3, 3, False), result.stdout
    (d,) = [d for d in doc["diagnostics"] if d["code"] == "E401"]
    assert d["message"] == ("plan `p` is no pipeline: op `cb` is on `gpu0` and op `c` on "
                            "`gpu1`, but they are one pipeline unit (a forward op, its backward "
                            "ops and their colocation groups run on one stage)")
    if how == "solve":
        assert doc["result"]["status"] == "infeasible"


def test_a_pipelines_optimal_says_it_is_the_periods(tmp_path: Path) -> None:
    """pipeilp's `optimal` is its period T's; beside an iteration 1.8x its bound (14.3 ms,
    bound 8 ms) the terminal and HTML said `optimal` alone (JSON keeps the status and says
    why)."""
    pytest.importorskip("pyomo")
    spec = tmp_path / "p.plan"
    spec.write_text(
        "cluster c { device d[0..3] { memory 1 GB }  link d[*] <-> d[*] { bandwidth 10 GB/s } }\n"
        "graph g { op a { time 2 ms  output 1 MB }  op b { time 2 ms  output 1 MB }\n"
        "  op c { time 2 ms  output 1 MB }  op d { time 2 ms }  a -> b -> c -> d }\n"
        "plan p { graph g  cluster c  objective pipeline  microbatches 4  schedule gpipe }\n")
    html = tmp_path / "p.html"
    done = CliRunner().invoke(app, ["solve", str(spec), "--algo", "pipeilp", "--html",
                                    str(html)])
    assert done.exit_code == 0, done.output
    words = "optimal (the period T; the iteration is not minimised)"
    assert f"status {words} planning time" in " ".join(done.stdout.split())  # wrapped
    assert words in html.read_text(encoding="utf-8")
    shown = json.loads(CliRunner().invoke(app, ["solve", str(spec), "--algo", "pipeilp",
                                                "--json"]).stdout)["result"]
    assert shown["status"] == "optimal" and shown["why"].startswith("the period meets")
    figures = shown["pipeline"]
    assert figures["period_s"] == figures["period_bound_s"]
    assert figures["iteration_s"] > 1.7 * figures["iteration_bound_s"]


def test_one_pass_figures_of_a_pipeline_plan_say_whose_they_are(tmp_path: Path) -> None:
    """Under `objective pipeline` the makespan, its bound and its gap are one pass's, beside
    the pipeline's iteration and period (before: `makespan (simulated)` and `lower bound
    ... at most 3.7% above optimal` in the terminal, `makespan` and `lower bound` cards in
    HTML, read as the plan's)."""
    spec = tmp_path / "p.plan"
    spec.write_text(
        "cluster c { device d[0..3] { memory 1 GB }  link d[*] <-> d[*] { bandwidth 10 GB/s } }\n"
        "graph g { op a { time 2 ms  output 1 MB }  op b { time 2 ms  output 1 MB }\n"
        "  op c { time 2 ms  output 1 MB }  op d { time 2 ms }  a -> b -> c -> d }\n"
        "plan p { graph g  cluster c  objective pipeline  microbatches 4  schedule gpipe }\n"
        "plan one { graph g  cluster c }\n")
    html = tmp_path / "p.html"
    done = CliRunner().invoke(app, ["solve", str(spec), "--plan", "p", "--algo", "pipedp",
                                    "--html", str(html)])
    assert done.exit_code == 0, done.output
    rows = [line.split("  ")[0] for line in done.stdout.splitlines()[:12]]
    assert {"makespan (one pass, simulated)", "lower bound (one pass)",
            "feasible (one pass)"} <= set(rows)
    page = html.read_text(encoding="utf-8")
    for label in ("makespan (one pass)", "lower bound (one pass)", "gap (one pass)",
                  "simulated makespan (one pass)", "Lower bound (one pass)"):
        assert label in page, label
    # one pass's plan keeps its words
    plain = CliRunner().invoke(app, ["solve", str(spec), "--plan", "one", "--algo", "heft"])
    assert "makespan (simulated)" in plain.stdout and "(one pass)" not in plain.stdout


# a graph whose two layers each outgrow every device: E301 proves no pipeline plan exists
NO_PLAN = TIGHT.replace("700 MB", "1 MB")


@pytest.mark.parametrize("algo", ["uniform", "expert"])
def test_a_told_baseline_where_no_plan_fits_claims_no_gap_and_names_the_proof(
        tmp_path: Path, algo: str) -> None:
    """main: `at most 0.0% above the best period` (there is no best period: no plan fits)
    and `the heuristics ... found no plan` where E301 proves none exists."""
    text = NO_PLAN.replace("schedule gpipe\n", "schedule gpipe\n  place a, a.bwd on d0\n"
                           "  place b, b.bwd on d1\n") if algo == "expert" else NO_PLAN
    code, out, err = _solve(tmp_path, text, "--algo", algo)
    assert code == 3 and "error[E401]" in err  # printed, judged infeasible, as before
    flat = " ".join(out.split())
    assert "above the best period" not in flat
    assert ("no gap: no plan fits (E301: the pipeline unit of `a` and `a.bwd` (2 ops) needs "
            "at least") in flat
    assert "found no plan" not in flat
    assert "makespan plan: none, no one-pass plan fits (E301: op `a`" in flat  # one pass's
    code, out, _ = _solve(tmp_path, text, "--algo", algo, "--json")
    pipe = json.loads(out)["result"]["pipeline"]
    assert pipe["period_gap"] is None
    assert pipe["no_plan"].startswith("E301: the pipeline unit of `a`")
    html = tmp_path / "p.html"
    CliRunner().invoke(app, ["solve", str(tmp_path / "s.plan"), "--algo", algo,
                             "--html", str(html)])
    assert "none: no plan fits (E301: the pipeline unit of `a`" in html.read_text(encoding="utf-8")


def test_a_plan_that_fits_keeps_its_gap(tmp_path: Path) -> None:
    code, out, _ = _solve(tmp_path, TIGHT.replace("700 MB", "10 GB"), "--algo", "uniform",
                          "--json")
    pipe = json.loads(out)["result"]["pipeline"]
    assert code == 0 and pipe["period_gap"] is not None and pipe["no_plan"] is None


DP2 = layers_text([(5, 0, 1), (2, 16, 1), (3, 0, 4), (2, 16, 4), (3, 0, 1)],
                  [(500, 1), (150, 2), (300, 0.5), (300, 1)],
                  link="bandwidth 1 GB/s  latency 10 us",
                  plan="objective pipeline  microbatches 3  schedule 1f1b  data_parallel 2")

def test_under_data_parallel_n_the_rows_without_replicas_say_so(tmp_path: Path) -> None:
    """Under `data_parallel 2`, the comparison showed one device at 67.5 ms, `fits yes`,
    beside the plan kept at 113.6 ms with the two replicas a stage the user asked for:
    the other rows run one pipeline, and a note now says so (in the JSON too); under
    `data_parallel auto`, where a plan without replicas is one auto may choose, no note."""
    code, out, _ = _solve(tmp_path, DP2)
    assert code == 0
    flat = " ".join(out.split())
    said = ("one device, the uniform split and the makespan plan run one pipeline, not "
            "`data_parallel 2`'s replicas: what the plan would run without it")
    assert said in flat
    code, out, _ = _solve(tmp_path, DP2, "--json")
    assert said in json.loads(out)["result"]["pipeline"]["notes"]
    code, out, _ = _solve(tmp_path, DP2.replace("data_parallel 2", "data_parallel auto"))
    assert code == 0 and "run one pipeline" not in " ".join(out.split())

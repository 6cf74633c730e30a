"""`planner simulate SPEC --stages FILE`: anyone's pipeline layout (stages of ops on groups
of devices, the first holding the ops and the others replicas) simulated as planner's
plans are; its diagnostics; and a hybrid plan's `replicas` through a plan file
(`solve --out`, then `simulate --placement`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli.helpers import invoke

import planner
from planner.errors import SpecError
from planner.io.stages import parse_stages
from planner.model import Problem
from planner.pipeline.schedule import run
from planner.plan import Plan, load_replicas

#: two layers with their backward ops on four devices; the first layer is 4x the second
SPEC = """
cluster c {
  device d[0..3] { memory 64 GiB }
  link d[0..3] <-> d[0..3] { bandwidth 10 GB/s latency 0 s }
}
graph g {
  op f0 { time 8 ms; output 1 MB; params 4 MB }
  op f1 { time 2 ms; output 1 MB; params 4 MB }
  op f0.bwd { time 16 ms; backward_of f0 }
  op f1.bwd { time 4 ms; backward_of f1 }
  f0 -> f1
  f0 -> f0.bwd
  f1 -> f1.bwd
  f1.bwd -> f0.bwd { bytes 1 MB }
  colocate f0, f0.bwd
  colocate f1, f1.bwd
}
plan p { graph g; cluster c; objective pipeline; microbatches 8; schedule 1f1b }
"""
#: the first stage on d0 with a replica on d1, the second on d2
HYBRID = [{"ops": ["f0"], "devices": ["d0", "d1"]}, {"ops": ["f1"], "devices": ["d2"]}]


def _problem() -> Problem:
    return planner.loads(SPEC).plan("p")


def _invoke(args: list[str], cwd: Path) -> tuple[int, str, str]:
    return invoke(args, cwd, guarded=True)


def _simulate(tmp_path: Path, stages: Any, *more: str) -> tuple[int, dict[str, Any]]:
    (tmp_path / "s.plan").write_text(SPEC)
    (tmp_path / "stages.json").write_text(
        stages if isinstance(stages, str) else json.dumps(stages, indent=2))
    code, out, _ = _invoke(["simulate", "s.plan", "--stages", "stages.json", "--json", *more],
                           tmp_path)
    return code, json.loads(out)


def test_a_replicated_stage_runs_on_its_group(tmp_path: Path) -> None:
    code, doc = _simulate(tmp_path, HYBRID)
    assert code == 0, doc["diagnostics"]
    pipe = doc["result"]["pipeline"]
    problem = _problem()
    assert problem.pipeline is not None
    replicated = run(problem, (0, 2, 0, 2), problem.pipeline, (), {0: (0, 1)})
    straight = run(problem, (0, 2, 0, 2), problem.pipeline)
    assert pipe["iteration_s"] == pytest.approx(replicated.iteration_s, rel=1e-12)
    assert replicated.iteration_s < 0.6 * straight.iteration_s
    assert [s["devices"] for s in pipe["stages"]] == [["d0", "d1"], ["d2"]]
    assert [s["replicas"] for s in pipe["stages"]] == [2, 1]
    assert pipe["allreduce_s"] == pytest.approx(replicated.allreduce_s) and \
        replicated.allreduce_s > 0
    assert pipe["throughput"] == pytest.approx(8 / replicated.iteration_s)
    # the bound of a plan of one pipeline allows the replicas it is given: never above T
    assert pipe["period_bound_s"] <= pipe["period_s"]

    code, alone = _simulate(tmp_path, [{"ops": ["f0"], "devices": ["d0"]},
                                       {"ops": ["f1"], "devices": ["d2"]}])
    assert code == 0
    assert alone["result"]["pipeline"]["iteration_s"] == pytest.approx(straight.iteration_s)


def test_the_terminal_report_names_the_replicas(tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(SPEC)
    (tmp_path / "stages.json").write_text(json.dumps(HYBRID))
    code, out, _ = _invoke(["simulate", "s.plan", "--stages", "stages.json"], tmp_path)
    assert code == 0
    assert "d0 (+1 replica: d1)" in out and "all-reduce" in out
    three = [{"ops": ["f0"], "devices": ["d0", "d1", "d3"]}, {"ops": ["f1"], "devices": ["d2"]}]
    (tmp_path / "stages.json").write_text(json.dumps(three))
    code, out, _ = _invoke(["simulate", "s.plan", "--stages", "stages.json"], tmp_path)
    assert code == 0 and "d0 (+2 replicas: d1, d3)" in out


def test_a_report_reads_back_as_its_stages(tmp_path: Path) -> None:
    """`simulate --json`'s document, its `result` and its `pipeline` all name the stages
    (`pipeline.stages`, their `busy_s`, `replicas`, ... ignored): the same run."""
    code, doc = _simulate(tmp_path, HYBRID)
    assert code == 0
    want = doc["result"]["pipeline"]["iteration_s"]
    for shape in (doc, doc["result"], doc["result"]["pipeline"],
                  doc["result"]["pipeline"]["stages"]):
        code, again = _simulate(tmp_path, shape)
        assert code == 0 and again["result"]["pipeline"]["iteration_s"] == want


def test_solve_json_reads_back_as_its_stages(tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(SPEC)
    code, out, _ = _invoke(["solve", "s.plan", "--algo", "pipedp", "--json"], tmp_path)
    assert code == 0
    (tmp_path / "solved.json").write_text(out)
    solved = json.loads(out)["result"]["pipeline"]
    code, out, _ = _invoke(["simulate", "s.plan", "--stages", "solved.json", "--json"],
                           tmp_path)
    assert code == 0
    assert json.loads(out)["result"]["pipeline"]["iteration_s"] == solved["iteration_s"]


def test_backward_ops_follow_their_forward_op_unless_listed() -> None:
    problem = _problem()
    forward = parse_stages(problem, json.dumps(HYBRID))
    both = parse_stages(problem, json.dumps([
        {"ops": ["f0", "f0.bwd"], "devices": ["d0", "d1"]},
        {"ops": ["f1", "f1.bwd"], "devices": ["d2"]}]))
    assert forward == both
    assert forward.plan.placement == (0, 2, 0, 2) and dict(forward.replicas) == {0: (0, 1)}
    elsewhere = parse_stages(problem, json.dumps([
        {"ops": ["f0"], "devices": ["d0"]}, {"ops": ["f1", "f0.bwd"], "devices": ["d3"]}]))
    assert elsewhere.plan.placement == (0, 3, 3, 3) and not elsewhere.replicas


_NOT_A_STAGE = '[{"ops": ["f0"], "devices": ["d0"]},\n 3]'
DIAGNOSED = [  # (file text, code, line, column, words of the message or a hint)
    ('[{"ops": ["f0"], "devices": ["d0"]},]', "E500", 1, 37, "invalid JSON"),
    ('{"stages": {"ops": ["f0"]}}', "E510", 1, 12, "must be a list of stages"),
    ('{"plan": "p"}', "E510", 1, 1, "must be a list of stages"),
    ('{"result": null}', "E510", 1, 12, "its `result` is null"),  # a failed run's --json
    ('{"result": {"pipeline": {"stages": [{"ops": ["f0", "f1", "f9"], "devices": ["d0"]}]}}}',
     "E503", 1, 58, "unknown op `f9` in stage 0"),
    (_NOT_A_STAGE, "E510", 2, 2, "stage 1 must be an object"),
    ('[{"ops": "f0", "devices": ["d0"]}]', "E510", 1, 10, "a list of op names"),
    ('[{"ops": ["f0", "f1"], "devices": ["d0"]},\n {"ops": ["f11"], "devices": ["d1"]}]',
     "E503", 2, 11, "did you mean `f1`?"),
    ('[{"ops": ["f0", "f1"], "devices": ["d0", "d11"]}]', "E504", 1, 42,
     "did you mean `d1`?"),
    ('[{"ops": ["f0", "f1"], "devices": ["d0"]},\n {"ops": ["f1"], "devices": ["d1"]}]',
     "E511", 2, 11, "listed in stage 0 and again in stage 1"),
    ('[{"ops": ["f0"], "devices": ["d0"]}]', "E505", 1, 1, "`f1` (and 1 backward op"),
    ('[{"ops": ["f0"], "devices": ["d0", "d1"]},\n {"ops": ["f1"], "devices": ["d1"]}]',
     "E512", 2, 30, "device `d1` is listed in stage 0 and again in stage 1"),
    ('[{"ops": ["f0"], "devices": []}, {"ops": ["f1"], "devices": ["d1"]}]', "E513", 1, 29,
     "stage 0 has no device"),
    ('[{"ops": ["f0", "f1"], "devices": ["d0"]}, {"ops": [], "devices": ["d1"]}]', "E513",
     1, 52, "stage 1 has no op"),
]


@pytest.mark.parametrize(("text", "code", "line", "column", "words"), DIAGNOSED,
                         ids=[f"{d[1]}-{k}" for k, d in enumerate(DIAGNOSED)])
def test_a_bad_stages_file_is_diagnosed_in_place(tmp_path: Path, text: str, code: str,
                                                 line: int, column: int, words: str) -> None:
    status, doc = _simulate(tmp_path, text)
    assert status == 1 and doc["exit_code"] == 1 and doc["result"] is None
    first = doc["diagnostics"][0]
    assert (first["code"], first["file"], first["line"], first["column"]) == (
        code, "stages.json", line, column)
    assert words in first["message"] + " ".join(first["hints"])
    assert first["hints"], "every diagnostic says what to do"


def test_the_terminal_shows_the_line_of_the_stages_file(tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(SPEC)
    (tmp_path / "stages.json").write_text('[{"ops": ["f0", "f1"], "devices": ["d0", "d11"]}]')
    code, _, err = _invoke(["simulate", "s.plan", "--stages", "stages.json"], tmp_path)
    assert code == 1 and "Traceback" not in err
    assert "stages.json:1:42: error[E504]: unknown device `d11` in stage 0" in err
    assert '   |                                          ^^^^^' in err  # under "d11"


def test_stages_and_placement_exclude_each_other(tmp_path: Path) -> None:
    (tmp_path / "plan.json").write_text('{"placement": {}}')
    code, doc = _simulate(tmp_path, HYBRID, "--placement", "plan.json")
    assert code == 2 and doc["diagnostics"][0]["code"] == "E640"


def test_stages_need_a_pipeline_plan(tmp_path: Path) -> None:
    flat = SPEC.replace("objective pipeline; microbatches 8; schedule 1f1b ", "")
    (tmp_path / "s.plan").write_text(flat)
    (tmp_path / "stages.json").write_text(json.dumps(HYBRID))
    code, out, _ = _invoke(["simulate", "s.plan", "--stages", "stages.json", "--json"],
                           tmp_path)
    first = json.loads(out)["diagnostics"][0]
    assert code == 2 and first["code"] == "E646"
    line = flat.count("\n", 0, flat.index("plan p")) + 1
    assert (first["file"], first["line"]) == ("s.plan", line)


def _hybrid_solve(tmp_path: Path) -> dict[str, Any]:
    """`solve --algo hybrid --out plan.json --json` of the spec under `data_parallel auto`."""
    (tmp_path / "s.plan").write_text(SPEC.replace("schedule 1f1b", "schedule 1f1b; "
                                                  "data_parallel auto"))
    code, out, _ = _invoke(["solve", "s.plan", "--algo", "hybrid", "--out", "plan.json",
                            "--json"], tmp_path)
    assert code == 0
    result: dict[str, Any] = json.loads(out)["result"]
    return result


def test_a_hybrid_plan_keeps_its_replicas_through_a_plan_file(tmp_path: Path) -> None:
    solved = _hybrid_solve(tmp_path)
    assert solved["replicas"], "the spec's plan is replicated (else the test shows nothing)"
    written = json.loads((tmp_path / "plan.json").read_text())
    assert written["replicas"] == solved["replicas"]
    # the solve report is the replicated run (its own iteration, its groups listed)
    pipe = solved["pipeline"]
    assert pipe["iteration_s"] == pytest.approx(solved["iteration_s"])
    assert sorted(d for s in pipe["stages"] for d in s["devices"]) == \
        sorted(d for g in solved["replicas"].values() for d in g)
    code, out, _ = _invoke(["simulate", "s.plan", "--placement", "plan.json", "--json"],
                           tmp_path)
    assert code == 0
    again = json.loads(out)["result"]["pipeline"]
    assert again["iteration_s"] == pipe["iteration_s"]
    assert again["stages"] == pipe["stages"]
    # the same plan file on a spec of one pipeline (no `data_parallel`) runs its replicas
    (tmp_path / "s.plan").write_text(SPEC)
    code, out, _ = _invoke(["simulate", "s.plan", "--placement", "plan.json", "--json"],
                           tmp_path)
    assert code == 0 and json.loads(out)["result"]["pipeline"]["stages"] == pipe["stages"]


def test_a_hybrid_plan_keeps_its_replicas_through_solve_json(tmp_path: Path) -> None:
    """`solve --json` read back by `simulate --placement` (its `result.placement`, order
    and `replicas`) runs the same replicated pipeline. Before: E501 (no `placement` at
    the top of the document)."""
    solved = _hybrid_solve(tmp_path)
    (tmp_path / "solved.json").write_text(json.dumps(
        {"format_version": 1, "command": "solve", "result": solved}))
    code, out, _ = _invoke(["simulate", "s.plan", "--placement", "solved.json", "--json"],
                           tmp_path)
    assert code == 0, out
    again = json.loads(out)["result"]
    assert again["placement"] == solved["placement"]
    assert again["makespan_s"] == solved["makespan_s"]
    assert again["pipeline"]["iteration_s"] == solved["pipeline"]["iteration_s"]
    assert again["pipeline"]["stages"] == solved["pipeline"]["stages"]


def test_a_plan_without_replicas_is_written_as_before() -> None:
    problem = _problem()
    plan = Plan((0, 1, 0, 1), algorithm="given")
    assert plan.dumps(problem) == plan.dumps(problem, {}) == plan.dumps(problem, {0: (0,)})
    assert "replicas" not in plan.to_json(problem)
    assert plan.to_json(problem, {0: (0, 2)})["replicas"] == {"d0": ["d0", "d2"]}


@pytest.mark.parametrize(("replicas", "code", "words"), [
    ({"d0": ["d0", "d9"]}, "E504", "unknown device `d9` in replicas"),
    ({"d0": ["d0", "d1"], "d2": ["d2", "d1"]}, "E514", "is in the replicas of `d0` and of `d2`"),
    ({"d0": ["d0", "d1", "d1"]}, "E514", "`d1` is listed twice in the replicas of `d0`"),
    ({"d1": ["d1", "d3"]}, "E514", "holds no op of the placement"),
    ({"d0": ["d1", "d0"]}, "E514", "must list it first"),
    ({"d0": ["d0", "d2"]}, "E514", "holds ops of its own"),
    ({"d0": "d1"}, "E514", "must be a list of device names"),
    (["d0"], "E514", "must be an object"),
])
def test_bad_replicas_in_a_plan_file_are_refused(replicas: Any, code: str, words: str) -> None:
    problem = _problem()
    placement = (0, 2, 0, 2)
    data = {**Plan(placement).to_json(problem), "replicas": replicas}
    with pytest.raises(SpecError) as err:
        load_replicas(problem, data, placement, "plan.json")
    assert err.value.diagnostics[0].code == code
    assert words in err.value.diagnostics[0].message


def test_the_help_says_how_stages_are_read(tmp_path: Path) -> None:
    code, out, _ = _invoke(["simulate", "--help"], tmp_path)
    said = " ".join(out.replace("│", " ").split())
    assert code == 0 and "--stages" in said
    assert "first device" in said and "backward op not listed goes to its forward op's" in said


INTERLEAVED = """cluster c {
  device d[0..1] { memory 64 GiB }
  link d[0..1] <-> d[0..1] { bandwidth 10 GB/s latency 0 s }
}
graph g {
  op f0 { time 2 ms; output 1 MB }
  op f1 { time 2 ms; output 1 MB }
  op f2 { time 2 ms; output 1 MB }
  op f3 { time 2 ms; output 1 MB }
  op f0.bwd { time 4 ms; backward_of f0 }
  op f1.bwd { time 4 ms; backward_of f1 }
  op f2.bwd { time 4 ms; backward_of f2 }
  op f3.bwd { time 4 ms; backward_of f3 }
  f0 -> f1 -> f2 -> f3 -> f3.bwd -> f2.bwd -> f1.bwd -> f0.bwd
}
plan p { graph g; cluster c; objective pipeline; microbatches 4; schedule interleaved
  stages_per_device 2 }
"""


def test_an_interleaved_plan_reads_back_as_it_is(tmp_path: Path) -> None:
    """Its devices each run two stages: before, E512 refused `solve --json` read back."""
    (tmp_path / "s.plan").write_text(INTERLEAVED)
    code, out, _ = _invoke(["solve", "s.plan", "--algo", "pipedp", "--json"], tmp_path)
    (tmp_path / "solved.json").write_text(out)
    solved = json.loads(out)["result"]["pipeline"]
    assert code == 0 and len({d for s in solved["stages"] for d in s["devices"]}) < len(
        solved["stages"])  # a device in two stages
    code, out, _ = _invoke(["simulate", "s.plan", "--stages", "solved.json", "--json"],
                           tmp_path)
    assert code == 0, out
    assert json.loads(out)["result"]["pipeline"]["iteration_s"] == solved["iteration_s"]
    twice = [{"ops": ["f0", "f1"], "devices": ["d0", "d1"]}, {"ops": ["f2", "f3"],
                                                             "devices": ["d0"]}]
    (tmp_path / "two.json").write_text(json.dumps(twice))
    code, out, _ = _invoke(["simulate", "s.plan", "--stages", "two.json", "--json"], tmp_path)
    diags = json.loads(out)["diagnostics"]
    assert code == 1 and [d["code"] for d in diags] == ["E512"]
    assert "a replicated stage's devices run it alone" in diags[0]["message"]


def test_a_replicated_stage_under_interleaved_runs_as_a_plan_files_replicas_do(
        tmp_path: Path) -> None:
    """Before: E512 "under `schedule interleaved` a stage runs on one device", where a plan
    file of the same layout (`replicas`) ran as 1F1B, and `simulate --json` of that plan
    file was refused read back as stages."""
    (tmp_path / "s.plan").write_text(INTERLEAVED)
    ops = ["f0", "f1", "f2", "f3", "f0.bwd", "f1.bwd", "f2.bwd", "f3.bwd"]
    (tmp_path / "plan.json").write_text(json.dumps({
        "placement": {op: "d0" for op in ops}, "replicas": {"d0": ["d0", "d1"]}}))
    code, out, _ = _invoke(["simulate", "s.plan", "--placement", "plan.json", "--json"],
                           tmp_path)
    assert code == 0, out
    (tmp_path / "report.json").write_text(out)
    planned = json.loads(out)["result"]["pipeline"]
    (tmp_path / "stages.json").write_text(json.dumps(
        [{"ops": ops[:4], "devices": ["d0", "d1"]}]))
    for given in ("report.json", "stages.json"):
        code, out, _ = _invoke(["simulate", "s.plan", "--stages", given, "--json"], tmp_path)
        assert code == 0, out
        ran = json.loads(out)["result"]["pipeline"]
        assert (ran["iteration_s"], ran["schedule_run"]) == (planned["iteration_s"], "1f1b")


NOT_A_CHAIN = INTERLEAVED.replace("schedule interleaved\n  stages_per_device 2",
                                  "schedule gpipe")


def _report_read_back(tmp_path: Path, on_d0: str, on_d1: str, solved: int
                      ) -> tuple[dict[str, Any], int, dict[str, Any]]:
    """Plan `q` of `NOT_A_CHAIN` with these ops placed on d0 and d1, solved (`--json`,
    exit `solved`), then its report read back as stages: (the report, the exit code and
    the document of that `simulate --stages --json`)."""
    (tmp_path / "s.plan").write_text(NOT_A_CHAIN + (
        "plan q { graph g; cluster c; objective pipeline; microbatches 4; schedule gpipe\n"
        f"  place {on_d0} on d0\n  place {on_d1} on d1 }}\n"))
    code, out, _ = _invoke(["solve", "s.plan", "--plan", "q", "--algo", "expert", "--json"],
                           tmp_path)
    assert code == solved, out
    (tmp_path / "report.json").write_text(out)
    code, again, _ = _invoke(["simulate", "s.plan", "--plan", "q", "--stages", "report.json",
                              "--json"], tmp_path)
    return json.loads(out)["result"], code, json.loads(again)


def test_a_report_whose_devices_run_several_stages_reads_back(tmp_path: Path) -> None:
    """f0 and f2 on d0, f1 and f3 on d1 under GPipe: a plan whose devices form no chain,
    which `solve --json` reports as four stages, d0 and d1 in two each. Before: E512 "device
    `d0` is listed in stage 0 and again in stage 2" of planner's own feasible report."""
    report, code, doc = _report_read_back(tmp_path, "f0, f0.bwd, f2, f2.bwd",
                                          "f1, f1.bwd, f3, f3.bwd", 0)
    assert len(report["pipeline"]["stages"]) == 4
    assert code == 0, doc
    assert doc["result"]["pipeline"]["iteration_s"] == report["pipeline"]["iteration_s"]


def test_a_report_whose_plan_splits_a_unit_is_refused_as_stages(tmp_path: Path) -> None:
    """Its stages put each unit whole on one device, its placement not: before, `--stages`
    ran the stages' plan (feasible) in place of the report's (E401); now E518 at the op."""
    _, code, doc = _report_read_back(tmp_path, "f0, f0.bwd, f1.bwd, f2, f2.bwd",
                                     "f1, f3, f3.bwd", 3)
    diags = doc["diagnostics"]
    assert code == 1 and [d["code"] for d in diags] == ["E518"]
    assert "op `f1.bwd` on `d1`, and the report's placement on `d0`" in diags[0]["message"]
    code, _, _ = _invoke(["simulate", "s.plan", "--plan", "q", "--placement", "report.json"],
                         tmp_path)
    assert code == 3  # as the report said


def test_a_pipeline_plan_in_github_format_logs_its_pipeline(tmp_path: Path) -> None:
    """`--format github`: before, the one-pass report went to the log and the pipeline's
    figures (iteration, period, stages) nowhere."""
    (tmp_path / "s.plan").write_text(SPEC)
    (tmp_path / "p.json").write_text(json.dumps({"placement": {
        "f0": "d0", "f0.bwd": "d0", "f1": "d1", "f1.bwd": "d1"}}))
    code, out, err = _invoke(["simulate", "s.plan", "--placement", "p.json", "--format",
                              "github"], tmp_path)
    assert code == 0 and "makespan" in err
    assert "iteration (simulated)" in err and "period T" in err, err

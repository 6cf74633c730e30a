"""`recompute` of a hybrid plan names stages by their first device: a replicated stage
recomputes on all its replicas or on none (`pipeline.schedule`: `stage.device in
recompute`). Main read `"recompute": ["gpu2", "gpu3"]`, replicas of gpu0's and gpu1's
stages, and ignored it: `simulate` gave the memory of a plan without recomputation, and
`export torch --pipeline` wrote no checkpoint. Now E515 at the name, with a hint naming the
device to write; a replica named beside its stage's device reads as the stage's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pipe_support import chain_text
from typer.testing import CliRunner

import planner
from planner.cli import app
from planner.errors import SpecError
from planner.io.stages import parse_stages

#: 2 stages (gpu0, gpu1), each on 2 devices
REPLICAS = {"gpu0": ["gpu0", "gpu2"], "gpu1": ["gpu1", "gpu3"]}


def _spec(tmp_path: Path) -> Path:
    spec = tmp_path / "h.plan"
    spec.write_text(chain_text(4, 4, outputs_mb=[50] * 4, schedule="gpipe",
                               memory="16 GiB").replace("d[", "gpu["))
    return spec


def _plan_file(tmp_path: Path, recompute: list[str] | None) -> Path:
    placement = {f"f{k}{end}": "gpu0" if k < 2 else "gpu1" for k in range(4)
                 for end in ("", ".bwd")}
    body: dict[str, object] = {"placement": placement, "replicas": REPLICAS}
    if recompute is not None:
        body["recompute"] = recompute
    path = tmp_path / f"plan-{'-'.join(recompute or ['none'])}.json"
    path.write_text(json.dumps(body, indent=2))
    return path


def _simulate(spec: Path, plan: Path) -> tuple[int, str, dict | None]:
    result = CliRunner().invoke(app, ["simulate", str(spec), "--placement", str(plan),
                                      "--json"])
    doc = json.loads(result.stdout)
    return result.exit_code, result.stdout, doc.get("result")


def _memory(result: dict | None) -> list[int]:
    assert result is not None
    return [d["memory_bytes"] for d in result["pipeline"]["devices"]]


def test_recompute_naming_only_replicas_is_a_located_error(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    plan = _plan_file(tmp_path, ["gpu2", "gpu3"])
    code, out, _ = _simulate(spec, plan)
    assert code == 1, out
    errors = json.loads(out)["diagnostics"]
    at = next(k for k, line in enumerate(plan.read_text().splitlines(), 1)
              if '"recompute"' in line)  # the names follow, one a line
    assert [(e["code"], e["file"], e["line"]) for e in errors] == [
        ("E515", str(plan), at + 1), ("E515", str(plan), at + 2)]
    assert "device `gpu2` in recompute holds a replica of the stage of `gpu0`" in (
        errors[0]["message"])
    assert errors[0]["hints"][0].startswith('write "gpu0" for the stage of `gpu2`')
    assert errors[1]["hints"][0].startswith('write "gpu1" for the stage of `gpu3`')
    # the API's reader says the same
    problem = planner.load(spec).plans["p"]
    with pytest.raises(SpecError) as err:
        planner.read_plan(problem, plan)
    assert [d.code for d in err.value.diagnostics] == ["E515", "E515"]


def test_a_replica_named_with_its_stages_device_reads_as_the_stage(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    plain = _memory(_simulate(spec, _plan_file(tmp_path, None))[2])
    stage = _memory(_simulate(spec, _plan_file(tmp_path, ["gpu0"]))[2])
    both = _memory(_simulate(spec, _plan_file(tmp_path, ["gpu0", "gpu2"]))[2])
    assert both == stage and stage[0] < plain[0] and stage[2] < plain[2]  # gpu0's group
    assert stage[1] == plain[1]  # gpu1's stage does not recompute


def test_a_stages_file_says_the_same(tmp_path: Path) -> None:
    problem = planner.load(_spec(tmp_path)).plans["p"]
    stages = {"stages": [{"ops": ["f0", "f1"], "devices": ["gpu0", "gpu2"]},
                         {"ops": ["f2", "f3"], "devices": ["gpu1", "gpu3"]}],
              "recompute": ["gpu3"]}
    with pytest.raises(SpecError) as err:
        parse_stages(problem, json.dumps(stages), "s.json")
    (d,) = err.value.diagnostics
    assert d.code == "E515" and d.hints[0].startswith('write "gpu1"')


def _no_replicas(tmp_path: Path, recompute: list[str]) -> Path:
    path = _plan_file(tmp_path, recompute)
    body = json.loads(path.read_text())
    del body["replicas"]
    path.write_text(json.dumps(body, indent=2))
    return path


def test_recompute_naming_a_device_of_no_stage_is_E515(tmp_path: Path) -> None:
    """gpu3 runs nothing (no stage, no replica): main simulated `"recompute": ["gpu3"]` as
    no recomputation, exit 0. Now E515 at the name, naming the stages' devices."""
    spec = _spec(tmp_path)
    plan = _no_replicas(tmp_path, ["gpu0", "gpu3"])
    code, out, _ = _simulate(spec, plan)
    assert code == 1, out
    (error,) = json.loads(out)["diagnostics"]
    at = next(k for k, line in enumerate(plan.read_text().splitlines(), 1)
              if '"gpu3"' in line)
    assert (error["code"], error["file"], error["line"]) == ("E515", str(plan), at)
    assert "device `gpu3` in recompute runs no stage of the plan" in error["message"]
    assert "the plan's stages run on `gpu0`, `gpu1`" in error["hints"][0]
    problem = planner.load(spec).plans["p"]
    with pytest.raises(SpecError) as err:
        planner.read_plan(problem, plan)
    assert [d.code for d in err.value.diagnostics] == ["E515"]
    # the stages' devices alone read as before; a replica named with its stage too
    assert _simulate(spec, _no_replicas(tmp_path, ["gpu0", "gpu1"]))[0] == 0
    assert _simulate(spec, _plan_file(tmp_path, ["gpu1", "gpu3"]))[0] == 0


def test_a_stages_file_with_a_device_of_no_stage_is_E515(tmp_path: Path) -> None:
    problem = planner.load(_spec(tmp_path)).plans["p"]
    stages = {"stages": [{"ops": ["f0", "f1"], "devices": ["gpu0"]},
                         {"ops": ["f2", "f3"], "devices": ["gpu1"]}],
              "recompute": ["gpu2"]}
    with pytest.raises(SpecError) as err:
        parse_stages(problem, json.dumps(stages), "s.json")
    (d,) = err.value.diagnostics
    assert d.code == "E515" and "`gpu2` in recompute runs no stage" in d.message


def test_recompute_on_an_inference_graph_is_a_located_error(tmp_path: Path) -> None:
    # no backward ops, so nothing to recompute: before, `"recompute": ["d1"]` was read,
    # and the report's figures disagreed (a period of 4 ms against 2.25 ms a micro-batch,
    # 500 B more memory on d1, the iteration unchanged)
    spec = tmp_path / "i.plan"
    spec.write_text(
        "cluster c { device d[0..1] { memory 100 KB }  link d[*] <-> d[*] { bandwidth 1 GB/s } }\n"
        "graph g { op f0 { time 1 ms  params 100 B  output 1000 B }\n"
        "  op f1 { time 1 ms  params 100 B  output 2000 B }\n"
        "  op f2 { time 1 ms  params 100 B  output 500 B }  f0 -> f1 -> f2 }\n"
        "plan p { graph g  cluster c  objective pipeline  microbatches 4  schedule 1f1b }\n")
    plan = tmp_path / "p.json"
    plan.write_text(json.dumps({"placement": {"f0": "d0", "f1": "d1", "f2": "d1"},
                                "recompute": ["d1"]}))
    code, _, _ = _simulate(spec, plan)
    assert code == 1
    with pytest.raises(SpecError) as err:
        planner.read_plan(planner.load(spec).plan(), plan)
    d = err.value.diagnostics[0]
    assert d.code == "E515" and "has no backward ops" in d.message
    assert d.span is not None and d.span.start == plan.read_text().rindex('"d1"')

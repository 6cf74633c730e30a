"""`planner export torch` of a plan that recomputes activations (`recompute` in its file).

The MLP stack of torch_pipeline_models.py, imported with `--training`, planned as a GPipe
pipeline of 4 micro-batches on two GPUs of 50 KiB: no split fits unless a device recomputes,
and pipeilp recomputes on gpu1. The script `export torch --pipeline` writes runs that stage
under torch.utils.checkpoint (its module's forward runs twice per micro-batch: once more in
the backward pass; once on a stage that does not recompute), with the loss and gradients of
the unpipelined model; the export's cost counts the recomputation (it fits); a plan without
`recompute` exports the script it always had. Without --pipeline it is W952. Through the
API: `--ranks` merging stages recomputes on the rank that runs a recomputing device's ops,
every interleaved stage of a recomputing device recomputes, and a hybrid plan's stage is
checkpointed before DDP wraps it (each replica recomputes).

Before: no stage checkpointed (forward once per micro-batch everywhere), the script and
JSON of a recomputing plan were those of the plain one, and the export's cost was the plain
split's, `over a device's memory`.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from torch_support import gpu_spec, load_script, planner_ok, run_jobs
from typer.testing import CliRunner

import planner
from planner.algorithms.exact import backends
from planner.cli import app
from planner.io.torch_export import torch_devices
from planner.io.torch_import import example_inputs, load_target, trace
from planner.io.torch_pipeline import pipeline_export
from planner.io.torch_pipeline_script import pipeline_script

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install "
                            "'planner[torch]')")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not backends.available("highs"),
                                 reason="HiGHS (highspy) is not installed")]

HERE = Path(__file__).resolve().parent
MODEL = f"{HERE / 'torch_pipeline_models.py'}:mlp"
INPUT = "8x16"
MICROBATCHES = 4
#: plan file -> the devices it says recompute (None: pipeilp's own choice, solved)
PLANS: dict[str, list[str] | None] = {"solved": None, "both": ["gpu0", "gpu1"], "plain": []}


@dataclass
class Case:
    """One plan file, exported: its document, script, the step's results."""

    recompute: list[str]
    doc: dict[str, Any]
    script: Path
    save: Path


def _export(root: Path, spec: Path, name: str, *extra: str) -> str:
    return planner_ok("export", "torch", spec, MODEL, "--input", INPUT, "--placement",
                      root / f"{name}.json", "--device-map", "gpu0=cpu,gpu1=cpu", *extra)


def _spec(root: Path, name: str, count: int, memory: str, settings: str) -> Path:
    """ROOT/NAME.plan: the MLP (ROOT/mlp.plan) on `count` GPUs of `memory` on fast links,
    plan `p` a pipeline with `settings`."""
    return gpu_spec(root, "mlp.plan", name, count, memory, settings)


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Case]:
    """The MLP imported, planned by pipeilp, its plan file with other `recompute`s, each
    exported with --pipeline and its step run (forward calls counted) in one set of 2
    processes."""
    root = tmp_path_factory.mktemp("recompute")
    planner_ok("import", "torch", MODEL, "--capture", "fx", "--input", INPUT, "--training",
               "-o", root / "mlp.plan")
    spec = _spec(root, "p", 2, "50 KiB", f"microbatches {MICROBATCHES}  schedule gpipe")
    planner_ok("solve", spec, "--algo", "pipeilp", "--out", root / "solved.json")
    solved = json.loads((root / "solved.json").read_text())
    out = {}
    for name, recompute in PLANS.items():
        if recompute is not None:
            body = {k: v for k, v in solved.items() if k != "recompute"}
            (root / f"{name}.json").write_text(json.dumps(
                {**body, "recompute": recompute} if recompute else body))
        _export(root, spec, name, "--pipeline", "-o", root / f"{name}.pipe.json", "--code",
                root / f"{name}.py")
        (root / name).mkdir()
        out[name] = Case(json.loads((root / f"{name}.json").read_text()).get("recompute", []),
                         json.loads((root / f"{name}.pipe.json").read_text()),
                         root / f"{name}.py", root / name)
    run_jobs(root, [{"script": str(c.script), "ranks": 2, "save": str(c.save), "count": True,
                     "rendezvous": str(root / f"job{k}")} for k, c in enumerate(out.values())])
    out["spec"] = Case([], {}, spec, root)
    return out


def test_pipeilp_recomputes_on_the_second_device(cases: dict[str, Case]) -> None:
    """The plan the rest relies on: without recomputing, no split fits."""
    assert cases["solved"].recompute == ["gpu1"]
    assert not cases["plain"].doc["cost"]["fits"]


@pytest.mark.parametrize("name", list(PLANS))
def test_recomputing_stages_run_their_forward_again_in_backward(
        name: str, cases: dict[str, Case]) -> None:
    case = cases[name]
    doc = case.doc
    redo = {k for k, s in enumerate(doc["stages"]) if s["device"] in case.recompute}
    for rank in range(2):
        calls = json.loads((case.save / f"calls{rank}.json").read_text())
        assert {int(k): v for k, v in calls.items()} == {
            rank: MICROBATCHES * (2 if rank in redo else 1)}
    if redo:
        assert doc["recompute"] == case.recompute
        assert [s["recompute"] for s in doc["stages"]] == [k in redo for k in range(2)]
        assert doc["cost"]["fits"] and doc["plan_cost"] == doc["cost"]
    else:
        assert "recompute" not in doc and all("recompute" not in s for s in doc["stages"])
    # the step equals the unpipelined model's
    script = load_script(case.script)
    results = [torch.load(case.save / f"rank{r}.pt") for r in range(2)]
    expected = script.unpipelined()
    assert script.same(results, expected)
    for result in results:
        for key, grad in result["grads"].items():
            assert torch.allclose(grad, expected["grads"][key], atol=1e-5, rtol=1e-5), key
    assert sum(len(r["grads"]) for r in results) == len(expected["grads"])


def test_the_cost_counts_the_recomputation(cases: dict[str, Case]) -> None:
    """Recomputing costs compute: the period is longer than the plain split's, and fits."""
    solved, plain = cases["solved"].doc, cases["plain"].doc
    assert solved["cost"]["period_s"] > plain["cost"]["period_s"]
    assert solved["cost"]["fits"] and not plain["cost"]["fits"]


def test_recomputation_only_adds_lines_to_the_plain_script(cases: dict[str, Case]) -> None:
    """The script of a plan that recomputes nothing is the one it always was: the recomputing
    plan's only adds lines (the checkpoint and which stages), the plain one has none."""
    plain = cases["plain"].script.read_text()
    assert "checkpoint" not in plain and "RECOMPUTE" not in plain
    for name in ("solved", "both"):
        text = cases[name].script.read_text().replace(f"{name}.py", "plain.py")  # its name
        ops = difflib.SequenceMatcher(None, plain.splitlines(), text.splitlines(),
                                      autojunk=False).get_opcodes()
        assert {tag for tag, *_ in ops} == {"equal", "insert"}, name
        added = "\n".join(line for tag, _, _, j1, j2 in ops if tag == "insert"
                          for line in text.splitlines()[j1:j2])
        stages = [k for k, s in enumerate(cases[name].doc["stages"])
                  if s["device"] in cases[name].recompute]
        assert f"RECOMPUTE = {stages}" in added
        assert "checkpoint(forward, *args, use_reentrant=False, **kwargs)" in added


def test_without_pipeline_the_recomputation_dropped_is_w952(cases: dict[str, Case]) -> None:
    """The placed model and its device_map run no checkpoint: a warning says so."""
    root, spec = cases["spec"].save, cases["spec"].script
    result = CliRunner().invoke(app, ["export", "torch", str(spec), MODEL, "--input", INPUT,
                                      "--placement", str(root / "solved.json"),
                                      "--device-map", "gpu0=cpu,gpu1=cpu"])
    assert result.exit_code == 0, result.output
    assert "warning[W952]" in result.stderr and "gpu1" in result.stderr
    assert "--pipeline" in result.stderr
    plain = CliRunner().invoke(app, ["export", "torch", str(spec), MODEL, "--input", INPUT,
                                     "--placement", str(root / "plain.json"),
                                     "--device-map", "gpu0=cpu,gpu1=cpu"])
    assert plain.exit_code == 0 and "W952" not in plain.stderr


def _four_gpus(root: Path, settings: str) -> tuple[Any, Any, dict[str, str]]:
    """The MLP (its import in `root`) on 4 GPUs under `settings`: the problem, the trace
    and a placement of modules 0-1 (and the input) on gpu0, 2-3 gpu1, 4-5 gpu2, 6-8 gpu3,
    each backward op with its forward op."""
    problem = planner.load(_spec(root, "four", 4, "1 GiB", settings)).plans["p"]
    model, namespace = load_target(MODEL)
    traced = trace(model, example_inputs([INPUT], None, namespace), "fx")
    device = {"input_1": 0, "0": 0, "1": 0, "2": 1, "3": 1, "4": 2, "5": 2, "6": 3, "7": 3,
              "8": 3}
    return problem, traced, {o.name: f"gpu{device[o.name.removesuffix('.bwd')]}"
                             for o in problem.graph.ops}


def test_merged_ranks_recompute_where_a_planned_stage_did(cases: dict[str, Case]) -> None:
    """--ranks 2 merges the 4 stages into 2: the rank running gpu1's ops recomputes (it then
    holds no more activations than planned), the other does not; the cost counts it."""
    problem, traced, placement = _four_gpus(cases["spec"].save,
                                            f"microbatches {MICROBATCHES}  schedule gpipe")
    devices = torch_devices(problem.cluster)
    plain = pipeline_export(problem, traced, placement, devices, ranks=2)
    tp = pipeline_export(problem, traced, placement, devices, ranks=2, recompute=["gpu1"])
    assert plain.recompute == () and len(tp.stages) == 2
    assert tp.recompute == tuple(k for k, s in enumerate(tp.stages) if "2" in s.ops)
    assert tp.cost.period_s > plain.cost.period_s  # its forward ops run twice
    assert tp.plan_cost.period_s > plain.plan_cost.period_s


def test_interleaved_stages_of_a_recomputing_device_all_recompute(
        cases: dict[str, Case]) -> None:
    problem, traced, placement = _four_gpus(
        cases["spec"].save, f"microbatches {MICROBATCHES}  schedule interleaved  "
        "stages_per_device 2")
    looped = {op: "gpu0" if d in ("gpu0", "gpu2") else "gpu1" for op, d in placement.items()}
    tp = pipeline_export(problem, traced, looped, torch_devices(problem.cluster),
                         recompute=["gpu0"])
    assert [s.device for s in tp.stages] == ["gpu0", "gpu1", "gpu0", "gpu1"]
    assert tp.recompute == (0, 2)


def test_a_hybrid_stage_checkpoints_before_ddp_wraps_it(cases: dict[str, Case]) -> None:
    """Each replica of a recomputing stage recomputes: the checkpoint wraps the stage's own
    module, inside DDP."""
    problem, traced, placement = _four_gpus(cases["spec"].save,
                                            f"microbatches {MICROBATCHES}  schedule gpipe")
    two = {op: "gpu0" if d in ("gpu0", "gpu1") else "gpu2" for op, d in placement.items()}
    index = problem.cluster.device_index
    groups = {index["gpu0"]: (index["gpu0"], index["gpu1"]),
              index["gpu2"]: (index["gpu2"], index["gpu3"])}
    tp = pipeline_export(problem, traced, two, torch_devices(problem.cluster), replicas=groups,
                         recompute=["gpu2"])
    assert tp.recompute == (1,) and tp.data_parallel == 2
    text = pipeline_script(tp, traced, MODEL, [INPUT])
    assert "RECOMPUTE = [1]" in text
    assert text.index("checkpointed(stage)") < text.index("StageDDP(stage.submod")

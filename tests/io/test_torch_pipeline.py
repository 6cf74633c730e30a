"""`planner export torch --pipeline`: pipeline plans out to `torch.distributed.pipelining`.

An MLP stack and a small Transformer encoder are imported with `--training`, planned under
`objective pipeline` (4 micro-batches, GPipe or 1F1B) on 2 and 4 devices, solved (`auto` is
`pipedp` there) and exported with `--pipeline`; the scripts it writes run one step on the
CPU with gloo, 2 and 4 processes, and their loss and gradients must equal the unpipelined
model's, each rank holding exactly the parameters of its stage's ops. A stage that begins
at a function is E946, with the nearest split at module boundaries and both costs; plans
torch's schedules cannot run are E947.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from torch_support import command_job, command_result, load_script, planner_ok, run_jobs
from typer.testing import CliRunner

import planner
from planner.cli import app
from planner.errors import SpecError
from planner.io.torch_export import torch_devices
from planner.io.torch_import import Traced, example_inputs, load_target, trace
from planner.io.torch_pipeline import pipeline_error, pipeline_export
from planner.pipeline.schedule import run

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install "
                            "'planner[torch]')")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MODELS = HERE / "torch_pipeline_models.py"
#: per model of torch_pipeline_models.py: the `--input` of one micro-batch
INPUTS = {"mlp": "8x16", "encoder": "2x6x16", "blocks": "2x6x16"}
CONFIGS = [*((model, ranks, schedule) for model in ("mlp", "encoder") for ranks in (2, 4)
             for schedule in ("gpipe", "1f1b")), ("mlp", 2, "interleaved")]
CLASSES = {"gpipe": "ScheduleGPipe", "1f1b": "Schedule1F1B",
           "interleaved": "ScheduleInterleaved1F1B"}


_IMPORTED: dict[str, str] = {}


def _import(root: Path, model: str) -> Path:
    """`planner import torch` of a test model, with its training step (once per model)."""
    spec = root / f"{model}.plan"
    if model not in _IMPORTED:
        planner_ok("import", "torch", f"{MODELS}:{model}", "--capture", "fx", "--input",
                   INPUTS[model], "--training",
                   "-o", spec)
        _IMPORTED[model] = spec.read_text()
    elif not spec.exists():
        spec.write_text(_IMPORTED[model])
    return spec


def _plan(root: Path, model: str, ranks: int, schedule: str,
          settings: str | None = None) -> Path:
    """A spec importing the model's: `ranks` roomy GPUs on fast links, and plan `p` (a
    pipeline of 4 micro-batches under `schedule`, unless `settings` says otherwise)."""
    graph = re.search(r"^graph (\S+) \{", _import(root, model).read_text(), re.M)
    assert graph is not None
    if settings is None:
        settings = f"objective pipeline  microbatches 4  schedule {schedule}" + (
            "  stages_per_device 2" if schedule == "interleaved" else "")
    path = root / f"{model}_{ranks}_{schedule}.plan"
    last = ranks - 1
    path.write_text(
        f'import "{model}.plan"\n'
        f"cluster c {{\n  device gpu[0..{last}] {{ kind gpu  memory 1 GiB  flops 10 TFLOPS }}\n"
        f"  link gpu[0..{last}] <-> gpu[0..{last}] {{ bandwidth 1 TB/s }}\n}}\n"
        f"plan p {{ graph {graph.group(1)}  cluster c  {settings} }}\n")
    return path


@dataclass
class Exported:
    """One configuration, solved and exported."""

    model: str
    ranks: int
    schedule: str
    plan: dict[str, Any]
    doc: dict[str, Any]
    script: Path
    save: Path


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int, str], Exported]:
    """Every configuration imported, planned, solved and exported (in this process)."""
    root = tmp_path_factory.mktemp("pipelines")
    out = {}
    for model, ranks, schedule in CONFIGS:
        spec = _plan(root, model, ranks, schedule)
        name = spec.stem
        planner_ok("solve", spec, "--out", root / f"{name}.json")
        planner_ok("export", "torch", spec, f"{MODELS}:{model}", "--input", INPUTS[model],
                   "--placement", root / f"{name}.json", "--pipeline", "--device-map",
                   ",".join(f"gpu{k}=cpu" for k in range(ranks)), "-o", root / f"{name}.pipe.json",
                   "--code", root / f"{name}.py")
        (root / name).mkdir()
        out[(model, ranks, schedule)] = Exported(
            model, ranks, schedule, json.loads((root / f"{name}.json").read_text()),
            json.loads((root / f"{name}.pipe.json").read_text()), root / f"{name}.py",
            root / name)
    return out


def _other_ranks(root: Path) -> tuple[list[dict[str, Any]], list[Any]]:
    """The MLP planned on 4 devices exported for 2 ranks (merged), its interleaved plan on
    2 devices for 4 ranks (looped): the runner's jobs and the scripts (modules)."""
    model, namespace = load_target(f"{MODELS}:mlp")
    traced = trace(model, example_inputs([INPUTS["mlp"]], None, namespace), "fx")
    jobs, scripts = [], []
    for k, (settings, devices, ranks) in enumerate((
            (None, ["gpu0"] * 3 + ["gpu1"] * 2 + ["gpu2"] * 2 + ["gpu3"] * 3, 2),
            ("objective pipeline  microbatches 4  schedule interleaved  stages_per_device 2",
             ["gpu0"] * 3 + ["gpu1"] * 2 + ["gpu0"] * 2 + ["gpu1"] * 3, 4))):
        spec = _plan(root, "mlp", 4, "1f1b", settings)
        problem = planner.load(spec).plans["p"]
        plan_file = root / f"plan{k}.json"
        plan_file.write_text(json.dumps({"placement": _mlp_placement(problem, traced,
                                                                     devices)}))
        planner_ok("export", "torch", spec, f"{MODELS}:mlp", "--input", INPUTS["mlp"],
                   "--placement", plan_file, "--pipeline", "--ranks", str(ranks), "--device-map",
                   ",".join(f"gpu{d}=cpu" for d in range(4)), "-o", root / f"pipe{k}.json",
                   "--code", root / f"pipe{k}.py")
        (root / f"save{k}").mkdir()
        jobs.append({"script": str(root / f"pipe{k}.py"), "ranks": ranks,
                     "save": str(root / f"save{k}"), "rendezvous": str(root / f"r{k}")})
        scripts.append(load_script(root / f"pipe{k}.py"))
    return jobs, scripts


def _keyword_interleaved(root: Path) -> Path:
    """The MLP given its input as a keyword (`--example "dict(input=...)"`), 4 stages
    looping over 2 ranks: the export's script."""
    example = "dict(input=torch.randn(8, 16))"
    planner_ok("import", "torch", f"{MODELS}:mlp", "--example", example, "--training",
               "--name", "mlp", "-o", root / "mlp.plan")
    spec = _plan(root, "mlp", 2, "interleaved")
    planner_ok("solve", spec, "--out", root / "plan.json")
    planner_ok("export", "torch", spec, f"{MODELS}:mlp", "--example", example, "--placement",
               root / "plan.json", "--pipeline", "--device-map", "gpu0=cpu,gpu1=cpu",
               "-o", root / "pipe.json", "--code", root / "step.py")
    return root / "step.py"


@dataclass
class Ran:
    """The steps run: the other-ranks jobs and scripts; the keyword case's folder and its
    `--spawn --cpu --check`."""

    other_ranks: tuple[list[dict[str, Any]], list[Any]]
    keywords: Path
    keywords_run: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def ran(exported: dict[tuple[str, int, str], Exported],
        tmp_path_factory: pytest.TempPathFactory) -> Ran:
    """Every configuration's step, run by its script, the plans exported at other ranks,
    and the keyword case's command, in one set of 4 processes (torch imported once per
    process, not once per run and rank)."""
    root = tmp_path_factory.mktemp("rendezvous")
    jobs = [{"script": str(e.script), "ranks": e.ranks, "save": str(e.save),
             "rendezvous": str(root / f"job{k}")} for k, e in enumerate(exported.values())]
    other_ranks = _other_ranks(tmp_path_factory.mktemp("other_ranks"))
    keywords = tmp_path_factory.mktemp("keywords")
    command = command_job(root, "keywords", _keyword_interleaved(keywords),
                          ["--spawn", "--cpu", "--check"], keywords)
    run_jobs(root, [*jobs, *other_ranks[0], command])
    return Ran(other_ranks, keywords, command_result(command))


def _params_of(traced: Traced, ops: set[str]) -> set[str]:
    """The parameter names the ops use: a module's own, an attribute read by a function."""
    out = set()
    for n in traced.nodes():
        if traced.names[n.name] not in ops:
            continue
        keys = [a.target for a in n.all_input_nodes if a.op == "get_attr"]
        if n.op == "call_module":
            keys.append(n.target)
        for key in keys:
            out |= {name for name, _ in traced.model.named_parameters()
                    if name == key or name.startswith(key + ".")}
    return out


class _TorchWithoutReturnOutputs:
    """A schedule of torch before `step(return_outputs=...)`: a keyword goes to the model."""

    def step(self, *args: Any, target: Any = None, losses: Any = None, **kwargs: Any) -> None:
        raise AssertionError("not run")


@pytest.mark.slow
@pytest.mark.parametrize("config", CONFIGS, ids=[f"{m}-{r}-{s}" for m, r, s in CONFIGS])
def test_a_pipelined_step_equals_the_unpipelined_model(
        config: tuple[str, int, str], exported: dict[tuple[str, int, str], Exported],
        ran: Ran) -> None:
    e = exported[config]
    doc = e.doc
    # the split is the plan's, at module boundaries; a stage per process (2 under interleaved)
    assert doc["exact"] and doc["schedule"] == e.schedule and doc["microbatches"] == 4
    assert doc["schedule_class"] == CLASSES[e.schedule] and doc["ranks"] == e.ranks
    per_rank = 2 if e.schedule == "interleaved" else 1
    assert [s["rank"] for s in doc["stages"]] == [k % e.ranks for k in range(e.ranks * per_rank)]
    assert doc["placement"] == e.plan["placement"]
    for stage in doc["stages"]:
        assert {e.plan["placement"][op] for op in stage["ops"]} == {stage["device"]}
    assert list(doc["split_spec"]) == [s["begins_at"] for s in doc["stages"][1:]]
    assert set(doc["split_spec"].values()) == {"BEGINNING"}
    # the step: the script's loss and gradients against the model's, in this process
    script = load_script(e.script)
    results = [torch.load(e.save / f"rank{r}.pt") for r in range(e.ranks)]
    expected = script.unpipelined()
    losses = [x for r in results for x in r["losses"]]
    assert len(losses) == 4 and all(not r["losses"] for r in results[:-1])
    # the last stage kept no micro-batch's output (`return_outputs=False`), as the plan
    # counts (those in flight); before, torch kept all 4 and returned them merged
    assert all(r["output"] is None for r in results)
    assert script.without_outputs(_TorchWithoutReturnOutputs()) == {}
    assert torch.allclose(torch.stack(losses).mean(), expected["loss"], atol=1e-5, rtol=1e-5)
    model, namespace = load_target(f"{MODELS}:{e.model}")
    traced = trace(model, example_inputs([INPUTS[e.model]], None, namespace), "fx")
    for rank, result in enumerate(results):
        ops = {op for s in doc["stages"] if s["rank"] == rank for op in s["ops"]}
        assert set(result["grads"]) == _params_of(traced, ops)  # torch split where we said
        for name, grad in result["grads"].items():
            assert torch.allclose(grad, expected["grads"][name], atol=1e-5, rtol=1e-5), name
    assert sum(len(r["grads"]) for r in results) == len(expected["grads"])
    # then the spec's optimizer (import's default, adam) stepped on each rank: its stage's
    # parameters as the unpipelined optimizer's step makes them from its gradients (before:
    # no optimizer step); not always within 1e-5 of the unpipelined model's own step: Adam
    # steps a gradient that is zero but for rounding (an attention key's bias) by up to lr
    assert script.OPTIMIZER == "adam" and expected["step"] == "adam, lr 0.001"
    assert all(r["step"] == expected["step"] for r in results)
    for result in results:
        assert result["params"].keys() == result["grads"].keys()
        for name, param in script.replayed(result, expected).items():
            assert torch.allclose(result["params"][name], param, atol=1e-6, rtol=1e-6), name
            assert not torch.equal(param, expected["initial"][name]), name
    assert script.same(results, expected)
    worse = [dict(r, grads={k: g + 1e-3 for k, g in r["grads"].items()}) for r in results]
    assert not script.same(worse, expected)  # the script's check can fail


def _blocks_case(tmp_path: Path) -> tuple[planner.Problem, Traced, dict[str, str], int, Path]:
    """The hand-written blocks on 2 devices, stage 1 beginning at `x + self.pos` of block 1
    (a function); returns the problem, the trace, that placement, its cut position and the
    spec."""
    spec = _plan(tmp_path, "blocks", 2, "1f1b")
    problem = planner.load(spec).plans["p"]
    model, namespace = load_target(f"{MODELS}:blocks")
    traced = trace(model, example_inputs([INPUTS["blocks"]], None, namespace), "fx")
    names = list(traced.names.values())
    cut = next(k for k, op in enumerate(names) if op.startswith("blocks.1."))
    assert traced.names[next(n.name for n in traced.nodes() if traced.names[n.name]
                             == names[cut])].startswith("blocks.1.add")
    placement = {op: "gpu0" if k < cut else "gpu1" for k, op in enumerate(names)}
    placement.update({o.name: placement[o.name.removesuffix(".bwd")]
                      for o in problem.graph.ops if o.name.endswith(".bwd")})
    return problem, traced, placement, cut, spec


def test_a_stage_beginning_at_a_function_is_E946_with_the_nearest_split(
        tmp_path: Path) -> None:
    problem, traced, placement, cut, _ = _blocks_case(tmp_path)
    names = list(traced.names.values())
    tp = pipeline_export(problem, traced, placement, torch_devices(problem.cluster))
    assert not tp.exact and f"begins at `{names[cut]}`" in tp.reason and "function" in tp.reason
    # nearest: block 1's first module; the shape ops and `x + pos` before it move to stage 0
    ln1 = names.index("blocks.1.ln1")
    assert tp.split_spec == {"blocks.1.ln1": "BEGINNING"}
    assert tp.moved == tuple(names[cut:ln1]) and len(tp.moved) == 5
    assert [(s.device, s.begins_at) for s in tp.stages] == [("gpu0", None),
                                                            ("gpu1", "blocks.1.ln1")]
    nearest = {op: "gpu0" if k < ln1 else "gpu1" for k, op in enumerate(names)}
    nearest.update({o.name: nearest[o.name.removesuffix(".bwd")]
                    for o in problem.graph.ops if o.name.endswith(".bwd")})
    assert dict(tp.placement) == nearest
    # both costs under the plan's model, as the simulator gives them
    index = {d.name: k for k, d in enumerate(problem.cluster.devices)}
    assert problem.pipeline is not None
    for cost, chosen in ((tp.cost, nearest), (tp.plan_cost, placement)):
        r = run(problem, [index[chosen[o.name]] for o in problem.graph.ops], problem.pipeline)
        assert (cost.period_s, cost.iteration_s) == (r.period_s, r.iteration_s)
    assert tp.cost.period_s != tp.plan_cost.period_s
    error = pipeline_error(tp)
    d = error.diagnostics[0]
    assert d.code == "E946" and names[cut] in d.message
    assert "blocks.1.ln1" in d.hints[0] and "--nearest" in d.hints[1]
    assert tp.cost.describe() in d.hints[0] and tp.plan_cost.describe() in d.hints[0]
    # the plan one op later (at block 1's first module) is exact
    tp = pipeline_export(problem, traced, nearest, torch_devices(problem.cluster))
    assert tp.exact and not tp.moved and tp.cost == tp.plan_cost


@pytest.mark.slow
def test_torch_splits_the_nearest_split_where_planner_says(tmp_path: Path) -> None:
    """torch's own `pipeline()` (no process group needed) puts each parameter in the
    stage whose ops use it."""
    from torch.distributed.pipelining import SplitPoint, pipeline

    problem, traced, placement, _, _ = _blocks_case(tmp_path)
    tp = pipeline_export(problem, traced, placement, torch_devices(problem.cluster))
    model, namespace = load_target(f"{MODELS}:blocks")
    pipe = pipeline(model, mb_args=example_inputs([INPUTS["blocks"]], None, namespace).args,
                    split_spec={k: SplitPoint[v] for k, v in tp.split_spec.items()})
    assert pipe.num_stages == len(tp.stages) == 2
    for k, stage in enumerate(tp.stages):
        params = {name for name, _ in pipe.get_stage_module(k).named_parameters()}
        assert params == _params_of(traced, set(stage.ops)), k
    assert "blocks.1.pos" in _params_of(traced, set(tp.stages[0].ops))  # read by `x + pos`


def test_export_pipeline_command_says_E946_or_exports_the_nearest_split(tmp_path: Path) -> None:
    _, _, placement, _, spec = _blocks_case(tmp_path)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps({"placement": placement}))
    out, code = tmp_path / "pipe.json", tmp_path / "pipe.py"
    args = ["export", "torch", str(spec), f"{MODELS}:blocks", "--input", INPUTS["blocks"],
            "--placement", str(plan_file), "--pipeline", "-o", str(out), "--code", str(code)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1 and "E946" in result.output, result.output
    assert "not at module boundaries" in result.output and "plan.json" in result.output
    time = r"[\d.]+ [nu]?s"
    assert re.search(rf"period {time}, iteration {time}, against the plan's period {time}, "
                     rf"iteration {time}", result.output), result.output
    assert not out.exists() and not code.exists()
    result = CliRunner().invoke(app, [*args, "--nearest"])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert not doc["exact"] and doc["split_spec"] == {"blocks.1.ln1": "BEGINNING"}
    assert doc["moved"][0].startswith("blocks.1.add") and len(doc["moved"]) == 5
    assert doc["cost"]["period_s"] != doc["plan_cost"]["period_s"]
    assert doc["plan_stages"][1]["first"] == doc["moved"][0]
    assert "against the plan's" in result.output
    text = code.read_text()
    compile(text, str(code), "exec")
    assert "'blocks.1.ln1': SplitPoint.BEGINNING" in text and "nearest split" in text
    mapped = tmp_path / "mapped.json"  # without --pipeline: the nearest module-level plan
    result = CliRunner().invoke(app, [*args[:-5], "-o", str(mapped), "--nearest"])
    assert result.exit_code == 0, result.output
    doc = json.loads(mapped.read_text())
    assert doc["device_map"] is not None, doc["device_map_note"]


def test_plans_torch_schedules_cannot_run_are_E947(tmp_path: Path) -> None:
    model, namespace = load_target(f"{MODELS}:mlp")
    traced = trace(model, example_inputs([INPUTS["mlp"]], None, namespace), "fx")
    names = list(traced.names.values())

    def export(settings: str, devices: list[str]) -> SpecError:
        problem = planner.load(_plan(tmp_path, "mlp", 3, "x", settings)).plans["p"]
        placement = dict(zip(names, devices, strict=True))
        placement.update({o.name: placement[o.name.removesuffix(".bwd")]
                          for o in problem.graph.ops if o.name.endswith(".bwd")})
        with pytest.raises(SpecError) as err:
            pipeline_export(problem, traced, placement, torch_devices(problem.cluster))
        assert err.value.diagnostics[0].code == "E947"
        return err.value

    # input, 0..8: nine modules of an nn.Sequential
    three = ["gpu0"] * 3 + ["gpu1"] * 4 + ["gpu2"] * 3
    err = export("", three)  # objective makespan (the default)
    assert "objective pipeline" in err.diagnostics[0].hints[0]
    err = export("objective pipeline  microbatches 2  schedule 1f1b", three)
    assert "3 stages for 2 micro-batch" in err.diagnostics[0].message
    back = ["gpu0"] * 3 + ["gpu1"] * 4 + ["gpu0"] * 3  # gpu0 runs stages 0 and 2
    err = export("objective pipeline  microbatches 4  schedule gpipe", back)
    assert "stages 0, 2 on `gpu0`" in err.diagnostics[0].message
    err = export("objective pipeline  microbatches 4  schedule interleaved  stages_per_device 2",
                 ["gpu0"] * 3 + ["gpu1"] * 2 + ["gpu2"] * 2 + ["gpu0"] * 3)
    assert "rank k mod D" in err.diagnostics[0].message


def _mlp_placement(problem: planner.Problem, traced: Traced,
                   devices: list[str]) -> dict[str, str]:
    """The MLP's forward ops on `devices` (input, then its nine modules), backward ops with
    their forward ops."""
    placement = dict(zip(traced.names.values(), devices, strict=True))
    placement.update({o.name: placement[o.name.removesuffix(".bwd")]
                      for o in problem.graph.ops if o.name.endswith(".bwd")})
    return placement


def test_stages_looped_over_fewer_ranks_are_costed_as_the_interleaved_run_torch_gets(
        tmp_path: Path) -> None:
    """8 stages planned 2 per device on 4 GPUs, looped over 2 ranks: the script runs 4 a
    rank under ScheduleInterleaved1F1B, and the cost printed is that run's (`runs_as`).
    Before, the plan's 2 per device: not a repeating chain of 2, so 1F1B, which deadlocks,
    so GPipe's order, and GPipe's memory."""
    model, namespace = load_target(f"{MODELS}:mlp")
    traced = trace(model, example_inputs([INPUTS["mlp"]], None, namespace), "fx")
    looped = planner.load(_plan(tmp_path, "mlp", 4, "x", "objective pipeline  microbatches "
                                "4  schedule interleaved  stages_per_device 2")).plans["p"]
    eight = ["gpu0", "gpu0", "gpu1", "gpu2", "gpu3", "gpu0", "gpu1", "gpu2", "gpu3", "gpu3"]
    placement = _mlp_placement(looped, traced, eight)
    tp = pipeline_export(looped, traced, placement, torch_devices(looped.cluster), ranks=2)
    assert (tp.ranks, len(tp.stages), tp.schedule) == (2, 8, "interleaved")
    assert tp.cost.schedule == "interleaved"  # before: gpipe
    assert tp.cost.note == "its stages are 4 per device in a repeating chain, not 2: run so"
    assert tp.plan_cost.schedule == "interleaved" and tp.plan_cost.note == ""


def test_export_at_other_ranks_merges_or_loops_the_stages_or_says_which_ranks_fit(
        tmp_path: Path) -> None:
    model, namespace = load_target(f"{MODELS}:mlp")
    traced = trace(model, example_inputs([INPUTS["mlp"]], None, namespace), "fx")
    one_per_rank = planner.load(_plan(tmp_path, "mlp", 4, "1f1b")).plans["p"]
    four = ["gpu0"] * 3 + ["gpu1"] * 2 + ["gpu2"] * 2 + ["gpu3"] * 3
    placement = _mlp_placement(one_per_rank, traced, four)
    devices = torch_devices(one_per_rank.cluster)
    tp = pipeline_export(one_per_rank, traced, placement, devices, ranks=2)
    # 1f1b: consecutive stages merge; module 2 (a Linear) costs most: 0-1 | 2-3 is balanced
    assert (tp.ranks, tp.plan_ranks, len(tp.stages)) == (2, 4, 2)
    assert [(s.rank, s.device) for s in tp.stages] == [(0, "gpu0"), (1, "gpu2")]
    assert tp.split_spec == {"4": "BEGINNING"}
    assert "the plan's 4 stages merged into 2 (stages 0-1, 2-3)" in tp.regrouped
    assert {tp.placement[o] for o in [*tp.stages[0].ops, *tp.stages[1].ops]} == {"gpu0",
                                                                                  "gpu2"}
    assert tp.cost != tp.plan_cost and tp.exact
    assert pipeline_export(one_per_rank, traced, placement, devices, ranks=4).regrouped == ""
    with pytest.raises(SpecError) as err:
        pipeline_export(one_per_rank, traced, placement, devices, ranks=5)
    d = err.value.diagnostics[0]
    assert d.code == "E947" and "its split has 4 stage(s)" in d.message
    assert "one stage per rank" in d.message and "--ranks 1 to 4" in d.hints[0]
    # interleaved: stage k on rank k mod N; N must divide the stages, and the cluster has 4
    looped = planner.load(_plan(tmp_path, "mlp", 4, "x", "objective pipeline  microbatches "
                                "4  schedule interleaved  stages_per_device 2")).plans["p"]
    back = _mlp_placement(looped, traced, ["gpu0"] * 3 + ["gpu1"] * 2 + ["gpu0"] * 2
                          + ["gpu1"] * 3)
    tp = pipeline_export(looped, traced, back, devices, ranks=4)
    assert [(s.rank, s.device) for s in tp.stages] == [(k, f"gpu{k}") for k in range(4)]
    assert tp.plan_ranks == 2 and "loop over 4 ranks instead of 2" in tp.regrouped
    for ranks, hint in ((3, "--ranks 2 or 4 runs"), (8, "--ranks 2 or 4 runs")):
        with pytest.raises(SpecError) as err:
            pipeline_export(looped, traced, back, devices, ranks=ranks)
        assert err.value.diagnostics[0].code == "E947" and hint in err.value.diagnostics[0].hints[0]
    # on a cluster of 2 devices, 4 ranks cannot run: the hint offers 2 alone (before: "2 or
    # 4", and --ranks 4 was then E947 "its cluster has 2 device(s)")
    two = planner.load(_plan(tmp_path, "mlp", 2, "x", "objective pipeline  microbatches 4  "
                             "schedule interleaved  stages_per_device 2")).plans["p"]
    with pytest.raises(SpecError) as err:
        pipeline_export(two, traced, back, torch_devices(two.cluster), ranks=3)
    assert err.value.diagnostics[0].hints[0].startswith("--ranks 2 runs this split")
    # one rank: the 4 stages would send to their own rank, which gloo refuses ("Pair is not
    # connected"); before, the script was written and crashed, and E947 suggested --ranks 1
    with pytest.raises(SpecError) as err:
        pipeline_export(looped, traced, back, devices, ranks=1)
    d = err.value.diagnostics[0]
    assert d.code == "E947" and "would run its 4 stages on one rank" in d.message
    assert d.hints == ("`--ranks 2` loops the stages over 2 ranks",)
    # the command: --ranks needs --pipeline
    (tmp_path / "plan.json").write_text(json.dumps({"placement": placement}))
    result = CliRunner().invoke(app, ["export", "torch", str(_plan(tmp_path, "mlp", 4, "1f1b")),
                                      f"{MODELS}:mlp", "--input", INPUTS["mlp"], "--placement",
                                      str(tmp_path / "plan.json"), "--ranks", "2"])
    assert result.exit_code == 2 and "E640" in result.output and "--pipeline" in result.output


def test_an_interleaved_plan_of_one_stage_per_device_exports_torchs_1f1b(
        tmp_path: Path) -> None:
    """Such a split runs as 1F1B (`split.runs_as`): the simulator's iteration and the
    memory the plan counts are 1F1B's. Before, it was exported as
    ScheduleInterleaved1F1B, whose order kept 3 micro-batches in flight on rank 0 where
    1F1B's keeps 2: more memory than the plan's."""
    model, namespace = load_target(f"{MODELS}:mlp")
    traced = trace(model, example_inputs([INPUTS["mlp"]], None, namespace), "fx")
    problem = planner.load(_plan(tmp_path, "mlp", 2, "x", "objective pipeline  microbatches "
                                 "4  schedule interleaved  stages_per_device 2")).plans["p"]
    two = _mlp_placement(problem, traced, ["gpu0"] * 5 + ["gpu1"] * 5)
    tp = pipeline_export(problem, traced, two, torch_devices(problem.cluster))
    assert (tp.schedule, tp.schedule_class) == ("1f1b", "Schedule1F1B")
    assert [s.rank for s in tp.stages] == [0, 1] and tp.plan_cost.schedule == "1f1b"
    # K stages per device in a repeating chain still run interleaved
    four = _mlp_placement(problem, traced, ["gpu0"] * 3 + ["gpu1"] * 2 + ["gpu0"] * 2
                          + ["gpu1"] * 3)
    tp = pipeline_export(problem, traced, four, torch_devices(problem.cluster))
    assert (tp.schedule, tp.schedule_class) == ("interleaved", "ScheduleInterleaved1F1B")


def test_recompute_of_one_device_name_is_that_device_not_its_letters(tmp_path: Path) -> None:
    """`recompute="gpu1"` is one device, as `["gpu1"]`; before, its letters were four
    unknown devices (E504 `g`, `p`, `u`, `1`). What holds no names is a TypeError naming
    the parameter, not E504 for each byte of b"gpu1"."""
    model, namespace = load_target(f"{MODELS}:mlp")
    traced = trace(model, example_inputs([INPUTS["mlp"]], None, namespace), "fx")
    problem = planner.load(_plan(tmp_path, "mlp", 2, "gpipe")).plans["p"]
    placement = _mlp_placement(problem, traced, ["gpu0"] * 5 + ["gpu1"] * 5)
    devices = torch_devices(problem.cluster)
    listed = pipeline_export(problem, traced, placement, devices, recompute=["gpu1"])
    one = pipeline_export(problem, traced, placement, devices, recompute="gpu1")
    assert one.recompute == listed.recompute == (1,) and one.cost == listed.cost
    with pytest.raises(SpecError) as err:
        pipeline_export(problem, traced, placement, devices, recompute="gpu9")
    assert [d.message for d in err.value.diagnostics] == ["unknown device `gpu9` in recompute"]
    for wrong in (b"gpu1", 1, ["gpu1", 1]):
        with pytest.raises(TypeError, match="`recompute` takes device names"):
            pipeline_export(problem, traced, placement, devices, recompute=wrong)  # type: ignore[arg-type]


@pytest.mark.slow
def test_a_plan_exported_at_other_ranks_runs_as_one_process(ran: Ran) -> None:
    """The MLP planned on 4 devices, run on 2 ranks (merged) and its interleaved plan on 2
    devices run on 4 ranks (looped): loss and gradients equal the unpipelined model's."""
    jobs, scripts = ran.other_ranks
    for job, script in zip(jobs, scripts, strict=True):
        assert job["ranks"] == script.RANKS and "not the plan's" in script.__doc__
    for job, script in zip(jobs, scripts, strict=True):
        results = [torch.load(Path(job["save"]) / f"rank{r}.pt") for r in range(job["ranks"])]
        assert all(r["grads"] for r in results)  # every rank holds a stage
        expected = script.unpipelined()
        assert script.differences(results, expected) == [], job["script"]
        losses = torch.stack([x for r in results for x in r["losses"]]).mean()
        assert torch.allclose(losses, expected["loss"], rtol=1e-5, atol=1e-5)


def _readme_commands() -> list[str]:
    text = (ROOT / "docs" / "pytorch.md").read_text(encoding="utf-8")
    start = text.index("\n## Out to torch.distributed.pipelining\n")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end >= 0 else len(text)]
    (block,) = re.findall(r"```bash\n(.*?)```", section, re.DOTALL)
    return block.strip().splitlines()


@pytest.mark.slow
def test_the_readme_pipeline_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    """The commands of docs/pytorch.md as written: planner's in this process, the script's spawn in
    a subprocess, which checks the step against the unpipelined model."""
    shutil.copytree(ROOT / "docs" / "examples", tmp_path / "docs" / "examples")
    (tmp_path / "docs" / "examples" / "mlp_train.plan").unlink()  # the first command's
    monkeypatch.chdir(tmp_path)
    for line in _readme_commands():
        words = shlex.split(line)
        if words[0] == "planner":
            planner_ok(*words[1:])
            continue
        assert words[0] == "python"
        result = subprocess.run([sys.executable, *words[1:]], capture_output=True, text=True,
                                timeout=600, check=False,
                                env={**os.environ, "OMP_NUM_THREADS": "1"})
        assert result.returncode == 0, result.stderr[-4000:]
        assert "loss and gradients equal the unpipelined model's: True" in result.stdout
    doc = json.loads((tmp_path / "pipe.json").read_text())
    assert doc["exact"] and doc["ranks"] == 2 and doc["split_spec"]
    # the shipped spec mlp_pipeline.plan imports is what the first command writes, but for
    # the PyTorch version its header records (and the header's wrapping, which that moves)
    written, shipped = (re.sub(r"\(PyTorch [^)]*\)", "", " ".join(
        path.read_text(encoding="utf-8").replace("#", " ").split())) for path in (
            tmp_path / "docs" / "examples" / "mlp_train.plan",
            ROOT / "docs" / "examples" / "mlp_train.plan"))
    assert written == shipped


@pytest.mark.slow
def test_interleaved_takes_keyword_inputs_on_the_first_stage_alone(ran: Ran) -> None:
    """The MLP given its input as a keyword (`--example "dict(input=...)"`), 4 stages
    looping over 2 ranks: torch's interleaved schedule passes the step's keyword inputs to
    every stage of the first rank, and the script gives them to the first stage alone.
    Before: stage 2 failed, `forward() got an unexpected keyword argument 'input'`."""
    doc = json.loads((ran.keywords / "pipe.json").read_text())
    assert doc["schedule_class"] == "ScheduleInterleaved1F1B"
    assert [s["rank"] for s in doc["stages"]] == [0, 1, 0, 1]
    result = ran.keywords_run
    assert result.returncode == 0, result.stdout + result.stderr[-4000:]
    assert "loss and gradients equal the unpipelined model's: True" in result.stdout


def _usage_error(script: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The script's `main(argv)`, here, which must stop with exit status 2 (argparse's
    usage error): what it said on standard error."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        load_script(script).main(argv)
    said = capsys.readouterr().err
    assert stopped.value.code == 2, said
    return said


@pytest.mark.slow
def test_check_under_torchrun_compares_on_rank_0(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`--check` under torchrun (a process per rank, none to compare in): every rank's
    result goes to rank 0, which compares. Before: `--check` was ignored there (no
    comparison, exit 0). Without torchrun and without --spawn: a usage error, not a
    KeyError traceback (the script's `main` here: a process would import torch again)."""
    spec = _plan(tmp_path, "mlp", 2, "gpipe")
    planner_ok("solve", spec, "--out", tmp_path / "plan.json")
    planner_ok("export", "torch", spec, f"{MODELS}:mlp", "--input", INPUTS["mlp"],
               "--placement", tmp_path / "plan.json", "--pipeline", "--device-map",
               "gpu0=cpu,gpu1=cpu", "-o", tmp_path / "pipe.json", "--code", tmp_path / "step.py")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    env["OMP_NUM_THREADS"] = "1"
    result = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                             "--nproc-per-node", "2", str(tmp_path / "step.py"), "--cpu",
                             "--check"], capture_output=True, text=True, timeout=600,
                            check=False, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stdout + result.stderr[-4000:]
    assert "loss and gradients equal the unpipelined model's: True" in result.stdout
    for name in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    said = _usage_error(tmp_path / "step.py", ["--check"], capsys)
    assert "no rank to run: start the ranks with `torchrun --nproc-per-node 2" in said, said


@pytest.mark.slow
def test_ranks_planned_on_cpu_and_cuda_are_a_usage_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A plan with a stage on the host CPU (`cpu0` -> `cpu`) and one on a GPU (`gpu0` ->
    `cuda:0`): the ranks would pick gloo and nccl, and one process group takes one backend.
    The script says so and how to run it, before any rank starts. Before: each rank chose
    its own backend (here: "Distributed package doesn't have NCCL built in", a traceback;
    on a GPU machine, ranks that never meet). The script's `main` runs here (a process
    would import torch again), where starting a rank fails the test."""
    graph = re.search(r"^graph (\S+) \{", _import(tmp_path, "mlp").read_text(), re.M)
    assert graph is not None
    spec = tmp_path / "mix.plan"
    spec.write_text(
        'import "mlp.plan"\n'
        "cluster c {\n  device gpu0 { kind gpu  memory 1 GiB  flops 10 TFLOPS }\n"
        "  device cpu0 { kind cpu  memory 1 GiB  flops 10 TFLOPS }\n"
        "  link gpu0 <-> cpu0 { bandwidth 100 GB/s }\n}\n"
        f"plan p {{ graph {graph.group(1)}  cluster c  objective pipeline  microbatches 4  "
        "schedule gpipe }\n")
    planner_ok("solve", spec, "--out", tmp_path / "plan.json")
    planner_ok("export", "torch", spec, f"{MODELS}:mlp", "--input", INPUTS["mlp"],
               "--placement", tmp_path / "plan.json", "--pipeline", "-o",
               tmp_path / "pipe.json", "--code", tmp_path / "step.py")
    doc = json.loads((tmp_path / "pipe.json").read_text())
    assert {s["torch_device"] for s in doc["stages"]} == {"cpu", "cuda:0"}

    def spawn(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a rank started")

    monkeypatch.setattr(torch.multiprocessing, "spawn", spawn)
    said = _usage_error(tmp_path / "step.py", ["--spawn"], capsys)
    assert "the ranks are planned on cpu and cuda devices" in said, said
    assert "add --cpu, or export with --device-map" in said

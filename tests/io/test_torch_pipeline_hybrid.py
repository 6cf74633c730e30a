"""`export torch --pipeline` of a hybrid plan: replicated stages on a 2-D DeviceMesh.

A plan whose stages are replicated carries `replicas` (a stage's device -> the devices of
its group, itself first: a solution's `info["replicas"]`). The export writes a script
whose ranks make a 2-D DeviceMesh (pipeline x data): rank = pipeline rank x replicas +
replica; each stage is built on the mesh's "pp" group and wrapped in DDP
over its "dp" group, and each replica pipeline runs its share of the batch. GPT-2 (a small
config, as `test_torch_pipeline_hf.py`) exported as 2 stages x 2 replicas runs under gloo
on 4 CPU processes, and its losses and every gradient equal one process on the whole
batch. Replicas a 2-D mesh cannot run (unequal, micro-batches that do not split evenly,
`--ranks`) are E950, located at the placement file (malformed ones, the plan file's E504 and
E514); a plan without replicas exports as before.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from torch_support import load_script, planner_ok, run_commands
from typer.testing import CliRunner

import planner
from planner.cli import app
from planner.errors import SpecError
from planner.io.torch_export import torch_devices
from planner.io.torch_import import example_inputs, load_target, trace
from planner.io.torch_pipeline import pipeline_export
from planner.plan import load_replicas

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install "
                            "'planner[torch]')")

HERE = Path(__file__).resolve().parent
MODELS = HERE / "torch_pipeline_models.py"
CPU = ",".join(f"gpu{k}=cpu" for k in range(4))
#: 2 stages (gpu0, gpu1), each on 2 devices
TWO_BY_TWO = {"gpu0": ["gpu0", "gpu2"], "gpu1": ["gpu1", "gpu3"]}
#: `--check`'s verdict on the parameters after the spec's optimizer step (import's default)
STEPPED = ("the optimizer step (adam, lr 0.001) on each rank equals the unpipelined "
           "optimizer's on its gradients: True")


def _mlp_spec(root: Path, settings: str = "microbatches 4  schedule 1f1b") -> Path:
    """The MLP of torch_pipeline_models.py (its training step) on 4 fast-linked GPUs."""
    graph = root / "mlp.plan"
    if not graph.exists():
        result = CliRunner().invoke(app, ["import", "torch", f"{MODELS}:mlp", "--capture", "fx",
                                          "--input", "8x16", "--training", "--name", "mlp",
                                          "-o", str(graph)])
        assert result.exit_code == 0, result.output
    spec = root / "p.plan"
    spec.write_text(
        'import "mlp.plan"\n'
        "cluster c {\n  device gpu[0..3] { kind gpu  memory 1 GiB  flops 10 TFLOPS }\n"
        "  link gpu[0..3] <-> gpu[0..3] { bandwidth 1 TB/s }\n}\n"
        f"plan p {{ graph mlp  cluster c  objective pipeline  {settings} }}\n")
    return spec


def _mlp_placement(problem: planner.Problem) -> dict[str, str]:
    """The MLP's modules 0-3 (and the input) on gpu0, 4-8 on gpu1; backward ops with their
    forward ops."""
    forward = [o.name for o in problem.graph.ops if not o.name.endswith(".bwd")]
    cut = forward.index("4")
    return {o.name: "gpu0" if forward.index(o.name.removesuffix(".bwd")) < cut else "gpu1"
            for o in problem.graph.ops}


def _export(root: Path, name: str, placement: dict[str, Any], *extra: str,
            spec: Path | None = None) -> Any:
    """`export torch --pipeline` of the MLP with the placement file `placement`: the result
    of the command (files NAME.json, NAME.py)."""
    (root / f"{name}.plan.json").write_text(json.dumps(placement))
    (root / name).mkdir(exist_ok=True)
    return CliRunner().invoke(app, [
        "export", "torch", str(spec or root / "p.plan"), f"{MODELS}:mlp", "--input", "8x16",
        "--placement", str(root / f"{name}.plan.json"), "--pipeline", "--device-map", CPU,
        "-o", str(root / f"{name}.json"), "--code", str(root / name / "step.py"), *extra])


def test_replicated_stages_export_as_a_2d_mesh(tmp_path: Path) -> None:
    problem = planner.load(_mlp_spec(tmp_path)).plans["p"]
    placement = _mlp_placement(problem)
    result = _export(tmp_path, "hybrid", {"placement": placement, "replicas": TWO_BY_TWO})
    assert result.exit_code == 0, result.output
    assert "2 stage(s) x 2 replicas (a 2 x 2 DeviceMesh, pipeline x data) on 4 rank(s)" \
        in result.output
    doc = json.loads((tmp_path / "hybrid.json").read_text())
    assert (doc["ranks"], doc["data_parallel"]) == (4, 2)
    assert doc["mesh"]["shape"] == [2, 2] and doc["mesh"]["dims"] == ["pp", "dp"]
    assert [(r["rank"], r["pp"], r["dp"], r["device"]) for r in doc["mesh"]["ranks"]] == [
        (0, 0, 0, "gpu0"), (1, 0, 1, "gpu2"), (2, 1, 0, "gpu1"), (3, 1, 1, "gpu3")]
    assert [s["replicas"] for s in doc["stages"]] == [["gpu0", "gpu2"], ["gpu1", "gpu3"]]
    assert [s["rank"] for s in doc["stages"]] == [0, 1] and doc["split_spec"] == {"4": "BEGINNING"}
    script = load_script(tmp_path / "hybrid" / "step.py")
    assert (script.RANKS, script.DATA_PARALLEL, script.MICROBATCHES) == (4, 2, 4)
    assert script.MESH == [(0, 0, "gpu0", "cpu"), (0, 1, "gpu2", "cpu"), (1, 0, "gpu1", "cpu"),
                           (1, 1, "gpu3", "cpu")]
    assert script.STAGES == [(0, "gpu0", "cpu"), (1, "gpu1", "cpu")]
    assert "2-D DeviceMesh" in script.__doc__ and "torchrun --nproc-per-node 4" in script.__doc__
    # the gradients are views into DDP's buckets, as the plan counts a replica's memory: by
    # default DDP keeps a second copy (helper: 8 Linear(4096) layers, 512 MiB of
    # parameters, grew by 1,100 MiB after backward, 590 MiB with the views); the GPT-2 run
    # below (`--check` under gloo) runs with them
    wrap = (tmp_path / "hybrid" / "step.py").read_text().split("StageDDP(stage.submod", 1)[1]
    assert " ".join(wrap.split("\n", 2)[:2]).split() == [
        ',', 'process_group=mesh["dp"].get_group(),', "find_unused_parameters=True,",
        "gradient_as_bucket_view=True)"]
    # the batch over the replicas first (dim 0), then into micro-batches
    batch = torch.arange(32).reshape(32, 1)
    assert torch.equal(script.share(batch, 1), batch[16:])
    assert script.share(False, 1) is False
    # the same through the API: indices in, the rows of the mesh out
    index = problem.cluster.device_index
    model, namespace = load_target(f"{MODELS}:mlp")
    traced = trace(model, example_inputs(["8x16"], None, namespace), "fx")
    chosen = [index[placement[o.name]] for o in problem.graph.ops]
    groups = load_replicas(problem, {"replicas": TWO_BY_TWO}, chosen)
    assert groups == {index["gpu0"]: (index["gpu0"], index["gpu2"]),
                      index["gpu1"]: (index["gpu1"], index["gpu3"])}
    tp = pipeline_export(problem, traced, placement, torch_devices(problem.cluster),
                         replicas=groups)
    assert tp.replicas == (("gpu0", "gpu2"), ("gpu1", "gpu3"))
    assert (tp.data_parallel, tp.pipeline_ranks, tp.ranks) == (2, 2, 4)


def test_without_replicas_the_export_is_the_one_pipeline_script(tmp_path: Path) -> None:
    """No `replicas`, `{}` or groups of one device: the script of one pipeline, the same
    bytes, with no mesh."""
    problem = planner.load(_mlp_spec(tmp_path)).plans["p"]
    placement = _mlp_placement(problem)
    texts = []
    for k, extra in enumerate(({}, {"replicas": {}}, {"replicas": {"gpu0": ["gpu0"]}})):
        result = _export(tmp_path, f"plain{k}", {"placement": placement, **extra})
        assert result.exit_code == 0, result.output
        texts.append(((tmp_path / f"plain{k}" / "step.py").read_bytes(),
                      (tmp_path / f"plain{k}.json").read_bytes()))
        assert "2 stage(s) on 2 rank(s)" in result.output
    assert texts[0] == texts[1] == texts[2]
    script, doc = texts[0][0].decode(), json.loads(texts[0][1])
    assert "DeviceMesh" not in script and "DATA_PARALLEL" not in script
    assert "DistributedDataParallel" not in script and "mesh" not in doc
    assert doc["ranks"] == 2 and "replicas" not in doc["stages"][0]


@pytest.mark.parametrize(("replicas", "settings", "extra", "code", "said", "at"), [
    ({"gpu0": ["gpu0", "gpu2", "gpu3"]}, None, (), "E950",
     "replicates its stages unequally (stage 0 (gpu0) on 3 devices, stage 1 (gpu1) on 1 "
     "device)", None),
    (TWO_BY_TWO, "microbatches 3  schedule gpipe", (), "E950",
     "3 micro-batch(es) do not split evenly over its 2 replicas", None),
    (TWO_BY_TWO, None, ("--ranks", "2"), "E950", "--ranks 2 regroups the stages", None),
    # before: E947 "--ranks 1 or 2 runs this split", then E950 of --ranks 2 (helper)
    (TWO_BY_TWO, None, ("--ranks", "4"), "E950", "--ranks 4 regroups the stages", None),
    ({"gpu0": ["gpu0", "gpu9"]}, None, (), "E504", "unknown device `gpu9` in replicas",
     '"gpu9"'),
    ({"gpu0": ["gpu0", "gpu1"]}, None, (), "E514", "holds ops of its own", '"gpu1"'),
    ({"gpu0": "gpu2"}, None, (), "E514", "must be a list of device names", '"gpu2"'),
], ids=["unequal", "microbatches", "ranks", "ranks-of-the-mesh", "unknown",
        "replica-runs-a-stage", "malformed"])
def test_replicas_no_2d_mesh_runs_are_E950_at_the_placement_file(
        tmp_path: Path, replicas: Any, settings: str | None, extra: tuple[str, ...],
        code: str, said: str, at: str | None) -> None:
    """E950 (the replicas make no 2-D mesh) is about the whole file; a malformed entry of
    `replicas` (E504, E514) points at the entry."""
    spec = _mlp_spec(tmp_path, *(() if settings is None else (settings,)))
    placement = _mlp_placement(planner.load(spec).plans["p"])
    result = _export(tmp_path, "bad", {"placement": placement, "replicas": replicas}, *extra)
    assert result.exit_code == 1, result.output
    text = (tmp_path / "bad.plan.json").read_text()
    column = 1 if at is None else text.index(at, text.index('"replicas"')) + 1
    assert f"error[{code}]" in result.output and f"bad.plan.json:1:{column}:" in result.output
    assert said in result.output, result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "bad.json").exists() and not (tmp_path / "bad" / "step.py").exists()
    if "unequally" in said:
        assert "data_parallel N" in result.output


def test_recompute_naming_only_replicas_is_E515_at_the_name(tmp_path: Path) -> None:
    """A replicated stage recomputes on all its replicas or none, named by its first
    device: main exported gpu2 and gpu3 (replicas) in `recompute` as no recomputation."""
    placement = _mlp_placement(planner.load(_mlp_spec(tmp_path)).plans["p"])
    result = _export(tmp_path, "bad", {"placement": placement, "replicas": TWO_BY_TWO,
                                       "recompute": ["gpu3"]})
    assert result.exit_code == 1, result.output
    text = (tmp_path / "bad.plan.json").read_text()
    column = text.index('"gpu3"', text.index('"recompute"')) + 1
    assert f"bad.plan.json:1:{column}: error[E515]: device `gpu3` in recompute holds a " \
        "replica of the stage of `gpu1`" in result.output
    assert 'write "gpu1"' in result.output and "Traceback" not in result.output
    assert not (tmp_path / "bad.json").exists() and not (tmp_path / "bad" / "step.py").exists()


def test_recompute_naming_a_device_of_no_stage_is_E515_at_the_name(tmp_path: Path) -> None:
    """gpu3 runs no stage and holds no replica: main exported `"recompute": ["gpu3"]` as
    no recomputation (no checkpoint), exit 0."""
    placement = _mlp_placement(planner.load(_mlp_spec(tmp_path)).plans["p"])
    result = _export(tmp_path, "none", {"placement": placement, "recompute": ["gpu3"]})
    assert result.exit_code == 1, result.output
    text = (tmp_path / "none.plan.json").read_text()
    column = text.index('"gpu3"', text.index('"recompute"')) + 1
    assert f"none.plan.json:1:{column}: error[E515]: device `gpu3` in recompute runs no " \
        "stage of the plan" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "none.json").exists()


def test_recompute_the_model_ignores_is_an_error_through_the_api(tmp_path: Path) -> None:
    """`pipeline_export` called with names no plan file checked: main exported a replica
    named without its stage's device, and a device of no stage, as no recomputation, and
    an unknown name raised KeyError."""
    problem = planner.load(_mlp_spec(tmp_path)).plans["p"]
    placement = _mlp_placement(problem)
    model, namespace = load_target(f"{MODELS}:mlp")
    traced = trace(model, example_inputs(["8x16"], None, namespace), "fx")
    index = problem.cluster.device_index
    groups = {index[k]: tuple(index[n] for n in v) for k, v in TWO_BY_TWO.items()}
    for replicas, again, code, said in (
            (groups, ["gpu2"], "E515", "`gpu2` in recompute holds a replica of the stage of "
             "`gpu0`"),
            (None, ["gpu3"], "E515", "`gpu3` in recompute runs no stage of the plan"),
            (None, ["gpu9"], "E504", "unknown device `gpu9` in recompute")):
        with pytest.raises(SpecError) as err:
            pipeline_export(problem, traced, placement, torch_devices(problem.cluster),
                            replicas=replicas, recompute=again)
        d = err.value.diagnostics[0]
        assert d.code == code and said in d.message, d.message
    tp = pipeline_export(problem, traced, placement, torch_devices(problem.cluster),
                         replicas=groups, recompute=["gpu0", "gpu2"])
    assert tp.recompute == (0,)  # a replica named with its stage's device: as before


@pytest.mark.parametrize(("given", "said", "hint"), [
    ("gpu0=cpu,gpu2=cpu", "names `gpu0`, `gpu2` and leaves 2 device(s) the ranks run on to the "
     "default rule (by kind): `gpu1` -> cuda:1, `gpu3` -> cuda:3; the ranks are then on cpu "
     "and cuda devices", "--device-map gpu0=cpu,gpu2=cpu,gpu1=cpu,gpu3=cpu"),
    ("gpu0=cuda:0", "names `gpu0` and leaves 3 device(s) the ranks run on to the default rule "
     "(by kind): `gpu2` -> cuda:2, `gpu1` -> cuda:1, `gpu3` -> cuda:3",
     "--device-map gpu0=cuda:0,gpu2=cuda:2,gpu1=cuda:1,gpu3=cuda:3"),
])
def test_a_device_map_that_leaves_replicas_to_the_default_says_so(
        tmp_path: Path, given: str, said: str, hint: str) -> None:
    """Main mapped the devices a partial --device-map leaves out by kind, silently: with
    `gpu0=cpu,gpu2=cpu` the replicas of gpu1's stage went to cuda:1 and cuda:3, a script
    whose ranks one process group cannot join. W953 names them and where they went."""
    spec = _mlp_spec(tmp_path)
    placement = _mlp_placement(planner.load(spec).plans["p"])
    (tmp_path / "h.plan.json").write_text(json.dumps({"placement": placement,
                                                      "replicas": TWO_BY_TWO}))
    outputs = []
    for device_map in (given, CPU):
        result = CliRunner().invoke(app, [
            "export", "torch", str(spec), f"{MODELS}:mlp", "--input", "8x16", "--placement",
            str(tmp_path / "h.plan.json"), "--pipeline", "--device-map", device_map,
            "-o", str(tmp_path / "h.json")])
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    assert f"warning[W953]: --device-map {said}" in outputs[0], outputs[0]
    assert f"hint: name every device the ranks run on, e.g. {hint}" in outputs[0]
    assert (" and cuda devices" in outputs[0]) == ("cpu" in given)
    assert "W953" not in outputs[1]  # every device named


def test_groups_no_stage_holds_are_E950_through_the_api(tmp_path: Path) -> None:
    """`pipeline_export` called with groups no plan file checked: a group keyed by a device
    that runs no stage, a replica that runs a stage."""
    problem = planner.load(_mlp_spec(tmp_path)).plans["p"]
    placement = _mlp_placement(problem)
    model, namespace = load_target(f"{MODELS}:mlp")
    traced = trace(model, example_inputs(["8x16"], None, namespace), "fx")
    index = problem.cluster.device_index
    for groups, said in (({index["gpu2"]: (index["gpu2"], index["gpu3"])},
                          "gives replicas to `gpu2`, which runs none of its stages"),
                         ({index["gpu0"]: (index["gpu0"], index["gpu1"])},
                          "puts `gpu1` in the replicas of a stage and runs another stage")):
        with pytest.raises(SpecError) as err:
            pipeline_export(problem, traced, placement, torch_devices(problem.cluster),
                            replicas=groups)
        d = err.value.diagnostics[0]
        assert d.code == "E950" and said in d.message, d.message


def test_1f1b_counts_a_replica_pipelines_micro_batches(tmp_path: Path) -> None:
    """4 micro-batches over 2 replicas: 2 per replica pipeline, fewer than 1F1B's 3 stages."""
    problem = planner.load(_mlp_spec(tmp_path)).plans["p"]
    forward = [o.name for o in problem.graph.ops if not o.name.endswith(".bwd")]
    device = {op: "gpu0" if k < 3 else "gpu1" if k < 6 else "gpu2"
              for k, op in enumerate(forward)}
    placement = {o.name: device[o.name.removesuffix(".bwd")] for o in problem.graph.ops}
    model, namespace = load_target(f"{MODELS}:mlp")
    traced = trace(model, example_inputs(["8x16"], None, namespace), "fx")
    index = problem.cluster.device_index
    with pytest.raises(SpecError) as err:
        pipeline_export(problem, traced, placement, torch_devices(problem.cluster),
                        replicas={index["gpu0"]: (index["gpu0"], index["gpu3"])})
    assert err.value.diagnostics[0].code == "E950"  # replicated unequally
    spec = tmp_path / "six.plan"
    spec.write_text(
        'import "mlp.plan"\n'
        "cluster c {\n  device gpu[0..5] { kind gpu  memory 1 GiB  flops 10 TFLOPS }\n"
        "  link gpu[0..5] <-> gpu[0..5] { bandwidth 1 TB/s }\n}\n"
        "plan p { graph mlp  cluster c  objective pipeline  microbatches 4  schedule 1f1b }\n")
    six = planner.load(spec).plans["p"]
    index = six.cluster.device_index
    groups = {index[f"gpu{k}"]: (index[f"gpu{k}"], index[f"gpu{k + 3}"]) for k in range(3)}
    with pytest.raises(SpecError) as err:
        pipeline_export(six, traced, placement, torch_devices(six.cluster), replicas=groups)
    d = err.value.diagnostics[0]
    assert d.code == "E947" and "each of its 2 replica pipelines runs 2" in d.message
    assert "microbatches 6" in d.hints[0]


# ---- 2 stages x 2 replicas under gloo: GPT-2, tied GPT-2, the MLP's inference, interleaved ----


def _hybrid_export(root: Path, models: Path, example: str, *import_args: str) -> Path:
    """GPT-2 (`models`:gpt2) imported with `example`, its 1F1B pipeline of 4 micro-batches
    planned on 2 devices and exported on 4 with each stage's device replicated (TWO_BY_TWO):
    the script."""
    planner_ok("import", "torch", f"{models}:gpt2", "--example", example, *import_args,
               "--training", "--name", "gpt2", "-o", root / "gpt2.plan")
    device = "{ kind gpu  memory 1 GiB  flops 10 TFLOPS }"
    (root / "pipe.plan").write_text(
        'import "gpt2.plan"\n'
        f"cluster two {{\n  device gpu[0..1] {device}\n"
        "  link gpu0 <-> gpu1 { bandwidth 100 GB/s }\n}\n"
        f"cluster four {{\n  device gpu[0..3] {device}\n"
        "  link gpu[0..3] <-> gpu[0..3] { bandwidth 100 GB/s }\n}\n"
        "plan two { graph gpt2  cluster two  objective pipeline  microbatches 4  "
        "schedule 1f1b }\n"
        "plan p { graph gpt2  cluster four  objective pipeline  microbatches 4  "
        "schedule 1f1b }\n")
    planner_ok("solve", root / "pipe.plan", "--plan", "two", "--out", root / "two.json")
    plan = json.loads((root / "two.json").read_text())
    assert set(plan["placement"].values()) == {"gpu0", "gpu1"}
    (root / "hybrid.json").write_text(json.dumps({"placement": plan["placement"],
                                                  "replicas": TWO_BY_TWO}))
    planner_ok("export", "torch", root / "pipe.plan", "--plan", "p", f"{models}:gpt2",
               "--example", example, "--placement", root / "hybrid.json", "--pipeline",
               "--nearest", "--device-map", CPU, "-o", root / "pipe.json", "--code",
               root / "step.py")
    doc = json.loads((root / "pipe.json").read_text())
    assert (doc["ranks"], doc["data_parallel"], len(doc["stages"])) == (4, 2, 2)
    (root / "save").mkdir()
    return root / "step.py"


@dataclass
class Ran:
    """One 2 x 2 export, then its script's `--spawn --cpu --check` (`save`: its --save)."""

    root: Path
    export: Any  # the export command's result, where a test checks it
    command: subprocess.CompletedProcess[str]
    save: Path


def _infer_export(root: Path) -> Any:
    """The MLP without its training step, planned as 1 stage per device under GPipe and
    exported as 2 stages x 2 replicas (infer/step.py)."""
    result = CliRunner().invoke(app, ["import", "torch", f"{MODELS}:mlp", "--capture", "fx",
                                      "--input", "8x16", "--name", "mlp", "-o",
                                      str(root / "mlp.plan")])
    assert result.exit_code == 0, result.output
    problem = planner.load(_mlp_spec(root, "microbatches 4  schedule gpipe")).plans["p"]
    (root / "save").mkdir()
    return _export(root, "infer", {"placement": _mlp_placement(problem),
                                   "replicas": TWO_BY_TWO})


def _looped_export(root: Path) -> Any:
    """The MLP's 4 stages looping over 2 pipeline ranks, each replicated (looped/step.py)."""
    spec = _mlp_spec(root, "microbatches 4  schedule interleaved  stages_per_device 2")
    problem = planner.load(spec).plans["p"]
    forward = [o.name for o in problem.graph.ops if not o.name.endswith(".bwd")]
    # input, 0, 1 | 2, 3 | 4, 5 | 6, 7, 8 on gpu0, gpu1, gpu0, gpu1
    stage = {op: (k >= 3) + (k >= 5) + (k >= 7) for k, op in enumerate(forward)}
    device = {op: f"gpu{s % 2}" for op, s in stage.items()}
    placement = {o.name: device[o.name.removesuffix(".bwd")] for o in problem.graph.ops}
    (root / "save").mkdir()
    return _export(root, "looped", {"placement": placement, "replicas": TWO_BY_TWO})


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    """Each 2 x 2 case exported, then every script's `--spawn --cpu --check --save` run in
    one set of 4 processes (torch imported once per process, not once per case and rank)."""
    exports: dict[str, tuple[Path, Any, Path]] = {}
    if importlib.util.find_spec("transformers") is not None:
        root = tmp_path_factory.mktemp("gpt2")
        exports["gpt2"] = (root, None, _hybrid_export(root, MODELS, "gpt2_tokens()"))
        root = tmp_path_factory.mktemp("tied")
        exports["tied"] = (root, None, _hybrid_export(root, HERE / "tied_models.py",
                                                      "tokens()", "--granularity",
                                                      "module:2"))
    root = tmp_path_factory.mktemp("infer")
    exports["infer"] = (root, _infer_export(root), root / "infer" / "step.py")
    root = tmp_path_factory.mktemp("looped")
    exports["looped"] = (root, _looped_export(root), root / "looped" / "step.py")
    commands = run_commands(tmp_path_factory.mktemp("runs"), {
        name: (script, ["--spawn", "--cpu", "--check", "--save", str(root / "save")], root)
        for name, (root, _, script) in exports.items() if script.exists()})
    return {name: Ran(root, export, commands[name], root / "save")
            for name, (root, export, script) in exports.items() if name in commands}


def _hybrid_step(ran: Ran) -> Any:
    """The GPT-2 case's run, which must pass `--check`: the script (a module) and each
    rank's result."""
    result = ran.command
    assert result.returncode == 0, result.stdout + result.stderr[-4000:]
    assert "loss and gradients equal the unpipelined model's: True" in result.stdout
    assert STEPPED in result.stdout  # each replica's DDP-wrapped stage stepped alike
    results = [torch.load(ran.save / f"rank{r}.pt") for r in range(4)]
    # the last stage's replicas kept no micro-batch's output (`return_outputs=False`)
    assert all(r["output"] is None for r in results)
    return load_script(ran.root / "step.py"), results


@pytest.mark.slow
def test_gpt2_as_2_stages_x_2_replicas_under_gloo_equals_one_process(
        ran: dict[str, Ran]) -> None:
    pytest.importorskip("transformers", reason="transformers is not installed")
    script, results = _hybrid_step(ran["gpt2"])
    # here, within 1e-5: ranks 0, 1 hold stage 0's replicas, ranks 2, 3 stage 1's
    expected = script.unpipelined(mode="eval")
    assert [len(r["losses"]) for r in results] == [0, 0, 2, 2]  # 2 micro-batches a replica
    losses = [x for r in results for x in r["losses"]]
    assert torch.allclose(torch.stack(losses).mean(), expected["loss"], rtol=1e-5, atol=1e-5)
    # the replicas ran different halves of the batch...
    assert not torch.allclose(torch.stack(results[2]["losses"]),
                              torch.stack(results[3]["losses"]))
    grads = [r["grads"] for r in results]
    assert grads[0].keys() == grads[1].keys() and grads[2].keys() == grads[3].keys()
    assert not grads[0].keys() & grads[2].keys()
    assert grads[0].keys() | grads[2].keys() == expected["grads"].keys()
    assert "transformer.wte.weight" in grads[0] and "lm_head.weight" in grads[2]
    # ...and DDP averaged their gradients into the whole batch's, on every replica
    for rank, got in enumerate(grads):
        for name, grad in got.items():
            assert torch.allclose(grad, expected["grads"][name], rtol=1e-5, atol=1e-5), \
                (rank, name)


@pytest.mark.slow
def test_tied_gpt2_as_2_stages_x_2_replicas_sums_the_tie_within_each_pipeline(
        ran: dict[str, Ran]) -> None:
    """GPT-2 with its head tied to its token embedding (tied_models.py): each replica
    pipeline sums the tied gradient over its own stages (the mesh's "pp" group), after DDP
    averaged each copy over its replicas."""
    pytest.importorskip("transformers", reason="transformers is not installed")
    script, results = _hybrid_step(ran["tied"])
    assert [group for group, _, _ in script.TIED] == [["transformer.wte.weight",
                                                       "lm_head.weight"]]
    expected = script.unpipelined(mode="eval")
    tied = expected["grads"]["transformer.wte.weight"]
    for rank, result in enumerate(results):  # every rank holds a copy: the whole gradient
        assert torch.allclose(result["grads"]["transformer.wte.weight"], tied, rtol=1e-5,
                              atol=1e-5), rank


@pytest.mark.slow
def test_an_inference_pipeline_as_2_x_2_returns_the_batchs_outputs(
        ran: dict[str, Ran]) -> None:
    """The MLP without its training step, 2 stages x 2 replicas under gloo: the last
    stage's two replicas each return their half of the batch's outputs, which together
    equal one process's."""
    infer = ran["infer"]
    result, run, save = infer.export, infer.command, infer.save
    assert result.exit_code == 0, result.output
    script_path = infer.root / "infer" / "step.py"
    assert run.returncode == 0, run.stdout + run.stderr[-4000:]
    assert "outputs equal the unpipelined model's: True" in run.stdout
    script = load_script(script_path)
    assert not script.TRAINING
    results = [torch.load(save / f"rank{r}.pt") for r in range(4)]
    outputs = [r["output"] for r in results]
    assert outputs[0] is None and outputs[1] is None
    assert [t.shape for t in outputs[2]] == [t.shape for t in outputs[3]] == [(16, 4)]
    want = script.unpipelined()["output"][0]
    assert torch.allclose(torch.cat([outputs[2][0], outputs[3][0]]), want, atol=1e-5)
    assert script.differences([results[0], results[1], results[2]], {"output": [want]}) == [
        "1 rank(s) returned outputs; the last stage's 2 replicas alone should"]


@pytest.mark.slow
def test_an_interleaved_plan_as_2_x_2_equals_one_process(ran: dict[str, Ran]) -> None:
    """4 stages looping over 2 pipeline ranks (ScheduleInterleaved1F1B), each rank's two
    stages in DDP over its replica: 4 processes, loss and gradients as one process's."""
    looped = ran["looped"]
    result, run, tmp_path = looped.export, looped.command, looped.root
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "looped.json").read_text())
    assert [(s["rank"], s["replicas"]) for s in doc["stages"]] == [
        (0, ["gpu0", "gpu2"]), (1, ["gpu1", "gpu3"]), (0, ["gpu0", "gpu2"]),
        (1, ["gpu1", "gpu3"])]
    assert doc["schedule_class"] == "ScheduleInterleaved1F1B" and doc["ranks"] == 4
    assert run.returncode == 0, run.stdout + run.stderr[-4000:]
    assert "loss and gradients equal the unpipelined model's: True" in run.stdout
    assert STEPPED in run.stdout  # the two stages of each rank, in DDP, stepped

"""Plans applied to PyTorch models, verified on the CPU alone.

For an MLP, a small CNN with BatchNorm and residuals, a Transformer block and an unrolled
LSTM: trace, import, solve on a 2-device spec whose memory forces a split, apply the plan,
and check that the placed model computes what eager mode computes (every device on `cpu`),
that its copies are exactly the plan's cross-device edges, and that a re-trace of it reads
the plan back (devices `cpu` and `meta`, run on fake tensors so that an op given tensors of
two devices fails as it would on real ones), parameters included.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install "
                            "'planner[torch]')")

from torch_models import MODELS
from two_cpus import solve_on_two_cpus

import planner
from planner.errors import SpecError
from planner.io.torch_export import (
    apply_plan,
    check_placement,
    copies_of,
    forward_placement,
    parse_device_map,
    place_parameters,
    placement_of,
    torch_devices,
)
from planner.io.torch_import import Traced, to_workload, trace
from planner.simulate import simulate
from planner.workload import PlanDef
from planner.workload.roofline import PROFILES

FAKE = {"cpu0": "cpu", "cpu1": "meta"}
CPU = {"cpu0": "cpu", "cpu1": "cpu"}


class Case:
    """A model, its trace, its spec on two devices and a solved plan."""

    def __init__(self, name: str) -> None:
        make, inputs = MODELS[name]
        self.model, self.inputs = make(), inputs()
        self.traced: Traced = trace(self.model, self.inputs)
        w = to_workload(self.traced, name, PROFILES["v100"])
        self.groups = w.colocations
        # the least memory that still lets a plan exist
        self.problem, self.solution, _, _ = solve_on_two_cpus(w, name, (0.6, 0.7, 0.8, 0.9),
                                                              "msct")
        self.plan: dict[str, str] = self.solution.plan.to_json(self.problem)["placement"]
        self.makespan_s = simulate(self.problem, self.solution.plan).makespan_s

    def cross_edges(self, placement: dict[str, str]) -> list[tuple[str, str]]:
        """(producer, destination device) per tensor and device, as the cost model counts."""
        graph = self.problem.graph
        by_op = {v: k for k, v in self.traced.names.items()}
        out = {(graph.ops[e.src].name, placement[graph.ops[e.dst].name]) for e in graph.edges
               if placement[graph.ops[e.src].name] != placement[graph.ops[e.dst].name]
               and by_op[graph.ops[e.src].name] in self.traced.tensors}
        return sorted(out)

    def random_placement(self, seed: int) -> dict[str, str]:
        """Any device per op, colocation groups kept together."""
        rng = random.Random(seed)
        out = {op: rng.choice(["cpu0", "cpu1"]) for op in self.traced.names.values()}
        for group in self.groups:
            for op in group:
                out[op] = out[group[0]]
        return out


_CASES: dict[str, Case] = {}


@pytest.fixture(params=list(MODELS), scope="module")
def case(request: pytest.FixtureRequest) -> Case:
    if request.param not in _CASES:
        _CASES[request.param] = Case(request.param)
    return _CASES[request.param]


def _placements(case: Case) -> list[dict[str, str]]:
    return [case.plan, *(case.random_placement(seed) for seed in range(3))]


def test_the_plan_splits_the_model(case: Case) -> None:
    assert set(case.plan.values()) == {"cpu0", "cpu1"}
    assert case.cross_edges(case.plan)
    assert case.makespan_s > 0


def test_placed_models_compute_what_eager_mode_computes(case: Case) -> None:
    with torch.no_grad():
        expected = case.model(*case.inputs)
        for placement in _placements(case):
            placed = apply_plan(case.traced, placement, CPU)
            assert torch.equal(placed.module(*case.inputs), expected)


def test_copies_are_exactly_the_cross_device_edges(case: Case) -> None:
    for placement in _placements(case):
        placed = apply_plan(case.traced, placement, FAKE, move=False)
        assert len(placed.copies) == len(set(placed.copies))
        assert sorted(placed.copies) == case.cross_edges(placement)
        found = copies_of(placed.module, case.traced)  # what the code really does
        assert sorted(found) == sorted((op, FAKE[dev]) for op, dev in placed.copies)


def test_a_retrace_reads_the_plan_back_parameters_included(case: Case) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    for placement in _placements(case):
        placed = apply_plan(case.traced, placement, FAKE, move=False)
        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            place_parameters(placed)
            back = placement_of(placed, case.traced, tuple(mode.from_tensor(x)
                                                            for x in case.inputs))
            where = {}
            for n in case.traced.nodes():
                if n.op == "call_module":
                    sub = placed.module.get_submodule(n.target)
                    where[case.traced.names[n.name]] = {
                        str(t.device) for t in (*sub.parameters(), *sub.buffers())}
        returns_tensors = {case.traced.names[n.name] for n in case.traced.nodes()
                           if n.op != "placeholder" and n.name in case.traced.tensors
                           | case.traced.containers}
        assert set(back) == returns_tensors
        assert back == {op: placement[op] for op in back}
        for op, devices in where.items():
            assert devices <= {FAKE[placement[op]]}, op


def test_an_op_fed_from_two_devices_fails_without_its_copy(case: Case) -> None:
    """The read-back is a real check: drop one copy and the fake run fails."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    placed = apply_plan(case.traced, case.plan, FAKE, move=False)
    graph = placed.module.graph
    copy_node = next(n for n in graph.nodes if "planner_copy" in n.meta)
    copy_node.replace_all_uses_with(copy_node.args[0])
    graph.erase_node(copy_node)
    placed.module.recompile()
    with FakeTensorMode(allow_non_fake_inputs=True) as mode, pytest.raises(Exception,
                                                                            match="device"):
        place_parameters(placed)
        placement_of(placed, case.traced, tuple(mode.from_tensor(x) for x in case.inputs))


def test_device_maps_by_kind_and_by_option() -> None:
    spec = planner.loads("""
cluster c {
  device gpu3 { kind v100  memory 1 GiB }
  device cpu0 { kind cpu  memory 1 GiB }
  device acc { memory 1 GiB }
  link gpu3 <-> cpu0 { bandwidth 1 GB/s }
  link acc <-> gpu3 { bandwidth 1 GB/s }
  link acc <-> cpu0 { bandwidth 1 GB/s }
}""")
    cluster = spec.clusters["c"]
    assert torch_devices(cluster) == {"gpu3": "cuda:3", "cpu0": "cpu", "acc": "cuda:1"}
    assert torch_devices(cluster, parse_device_map("gpu3=cpu, acc=meta"))["gpu3"] == "cpu"
    for bad in ("gpu9=cpu", "gpu3=nowhere:7", "gpu3"):
        with pytest.raises(planner.PlannerError) as err:
            torch_devices(cluster, parse_device_map(bad))
        assert err.value.diagnostics[0].code == "E930"


def test_accelerate_device_map_when_modules_carry_the_placement() -> None:
    case = _CASES.get("mlp") or Case("mlp")
    plan = {op: ("cpu0" if op in ("input_1", "0", "1") else "cpu1")
            for op in case.traced.names.values()}
    placed = apply_plan(case.traced, plan, {"cpu0": "cpu", "cpu1": "cuda:1"}, move=False)
    assert placed.device_map == {"0": "cpu", "1": "cpu", "2": 1, "3": 1, "4": 1}
    case.model.add_module("unused", torch.nn.Linear(2, 2))  # never called: still covered
    try:
        placed = apply_plan(case.traced, plan, {"cpu0": "cpu", "cpu1": "cuda:1"}, move=False)
    finally:
        del case.model.unused
    assert placed.device_map is not None and placed.device_map["unused"] == "cpu"
    cnn = _CASES.get("cnn") or Case("cnn")
    split = {op: ("cpu1" if op == "block1.add" else "cpu0") for op in cnn.traced.names.values()}
    unclean = apply_plan(cnn.traced, split, CPU, move=False)
    assert unclean.device_map is None and "`block1.add` is code outside any module" in \
        unclean.device_map_note


def test_plans_that_do_not_fit_the_model_are_diagnostics() -> None:
    case = _CASES.get("lstm") or Case("lstm")
    with pytest.raises(SpecError) as err:
        apply_plan(case.traced, {**case.plan, "nope": "cpu0"}, CPU)
    assert err.value.diagnostics[0].code == "E945"
    split = dict(case.plan)
    split["cell"], split["cell@1"] = "cpu0", "cpu1"  # one module's calls on two devices
    with pytest.raises(SpecError) as err:
        apply_plan(case.traced, split, CPU)
    assert err.value.diagnostics[0].code == "E945"


def test_a_backward_op_placed_away_from_its_forward_op_is_said_so() -> None:
    """Before: "places 1 op(s) the model lacks (`embed.bwd`...)", did you mean `embed`?"""
    case = _CASES.get("lstm") or Case("lstm")
    plan = {**case.plan, "embed.bwd": "cpu1" if case.plan["embed"] == "cpu0" else "cpu0"}
    with pytest.raises(SpecError) as err:
        check_placement(case.traced, forward_placement(case.traced, plan))
    (d,) = err.value.diagnostics
    assert d.code == "E945" and d.message == (
        f"the plan places backward op `embed.bwd` on `{plan['embed.bwd']}` and its forward op "
        f"`embed` on `{plan['embed']}`: autograd runs a backward op where its forward op ran")
    with_it = {**case.plan, "embed.bwd": case.plan["embed"]}  # with it: no diagnostic
    check_placement(case.traced, forward_placement(case.traced, with_it))


def test_export_torch_command_writes_copies_and_code(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from planner.cli import app

    root = Path(__file__).parent / "torch_models.py"
    spec = tmp_path / "m.plan"
    cluster = tmp_path / "two.plan"
    cluster.write_text("cluster two {\n  device gpu[0..1] { kind gpu  memory 9 KiB }\n"
                       "  link gpu0 <-> gpu1 { bandwidth 10 GB/s }\n}\n")
    runner = CliRunner()
    result = runner.invoke(app, ["import", "torch", f"{root}:mlp", "--example", "mlp_inputs()",
                                 "--cluster", str(cluster), "-o", str(spec)])
    assert result.exit_code == 0, result.output
    plan_file = tmp_path / "plan.json"
    result = runner.invoke(app, ["solve", str(spec), "--algo", "msct", "--out", str(plan_file)])
    assert result.exit_code == 0, result.output
    out, code = tmp_path / "placed.json", tmp_path / "placed.py"
    result = runner.invoke(app, ["export", "torch", str(spec), f"{root}:mlp", "--example",
                                 "mlp_inputs()", "--placement", str(plan_file), "-o", str(out),
                                 "--code", str(code)])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(out.read_text())
    placement = json.loads(plan_file.read_text())["placement"]
    assert doc["devices"] == {"gpu0": "cuda:0", "gpu1": "cuda:1"}
    assert doc["placement"] == placement
    crossing = {(a, placement[b]) for a, b in itertools.pairwise(placement)
                if placement[a] != placement[b]}  # the MLP is a chain
    assert {(c["tensor"], c["to"]) for c in doc["copies"]} == crossing
    assert crossing and code.read_text().count(".to('cuda:") == len(crossing) + 1  # + input
    mapped = ["export", "torch", str(spec), f"{root}:mlp", "--example", "mlp_inputs()",
              "--placement", str(plan_file), "--code", str(code)]
    result = runner.invoke(app, [*mapped, "--device-map", "gpu1=meta"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["devices"] == {"gpu0": "cuda:0", "gpu1": "meta"}
    assert {c["device"] for c in doc["copies"]} == {"meta"}
    assert code.read_text().count(".to('meta')") == len(crossing)
    result = runner.invoke(app, [*mapped, "--device-map", "gpu7=cpu"])
    assert result.exit_code == 2 and "E930" in result.output


@pytest.mark.parametrize("name", ["cnn", "lstm"])
def test_a_training_plan_applies_and_gradients_match_eager(name: str) -> None:
    from planner.io.torch_import import import_torch

    models = Path(__file__).parent / "torch_models.py"
    spec = import_torch(f"{models}:{name}", example=f"{name}_inputs()", training=True)
    totals = spec.workload.totals()
    need = totals["params_bytes"] + totals["output_bytes"]
    spec.plans.append(PlanDef("two", spec.workload.name, "two"))
    cluster = spec.clusters
    for share in (0.75, 0.85, 0.95):  # the least memory that still lets a plan exist
        cluster[:] = [["cluster two {", ("  device cpu[0..1] { kind cpu  memory "
                                         f"{math.ceil(need * share)} B }}"),
                       "  link cpu0 <-> cpu1 { bandwidth 10 GB/s }", "}"]]
        problem = planner.loads(spec.to_spec()).plans["two"]
        try:
            placement = planner.solve(problem, "auto", time_limit_s=5).plan.to_json(
                problem)["placement"]
            break
        except planner.PlannerError:
            continue
    assert any(op.endswith(".bwd") for op in placement) and len(set(placement.values())) == 2
    make, inputs = MODELS[name]
    model, x = make(), inputs()
    placed = apply_plan(trace(model, x), placement, CPU)
    model(*x).square().sum().backward()
    placed.module(*x).square().sum().backward()
    for param_name, p in placed.module.named_parameters():
        assert torch.equal(p.grad, model.get_parameter(param_name).grad), param_name


def test_a_partial_device_map_says_what_it_leaves_to_the_default(tmp_path: Path) -> None:
    """Without --pipeline, main put the plan's devices a partial --device-map leaves out on
    their default device (gpu0 -> cuda:0 beside gpu1=meta) silently; W953 said so only
    with --pipeline. Now it names them here too; the export is unchanged."""
    from typer.testing import CliRunner

    from planner.cli import app

    root = Path(__file__).parent / "torch_models.py"
    spec, plan_file = tmp_path / "m.plan", tmp_path / "plan.json"
    (tmp_path / "two.plan").write_text(
        "cluster two {\n  device gpu[0..1] { kind gpu  memory 9 KiB }\n"
        "  link gpu0 <-> gpu1 { bandwidth 10 GB/s }\n}\n")
    runner = CliRunner()
    for args in (["import", "torch", f"{root}:mlp", "--example", "mlp_inputs()", "--cluster",
                  str(tmp_path / "two.plan"), "-o", str(spec)],
                 ["solve", str(spec), "--algo", "msct", "--out", str(plan_file)]):
        assert runner.invoke(app, args).exit_code == 0
    assert set(json.loads(plan_file.read_text())["placement"].values()) == {"gpu0", "gpu1"}
    export = ["export", "torch", str(spec), f"{root}:mlp", "--example", "mlp_inputs()",
              "--placement", str(plan_file), "--device-map"]
    results = [runner.invoke(app, [*export, given]) for given in
               ("gpu1=meta", "gpu1=cpu", "gpu0=cuda:0,gpu1=meta")]
    assert [r.exit_code for r in results] == [0, 0, 0]
    assert "warning[W953]: --device-map names `gpu1` and leaves 1 device(s) the plan places " \
        "ops on to the default rule (by kind): `gpu0` -> cuda:0" in results[0].stderr
    assert "e.g. --device-map gpu1=meta,gpu0=cuda:0" in results[0].stderr
    assert "e.g. --device-map gpu1=cpu,gpu0=cpu" in results[1].stderr  # all on cpu
    assert "W953" not in results[2].stderr  # every device named
    assert json.loads(results[0].stdout)["devices"] == {"gpu0": "cuda:0", "gpu1": "meta"}

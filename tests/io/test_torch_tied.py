"""Tied weights from PyTorch and back (issue 38): GPT-2's head shares its token embedding,
T5's embeddings and head share `shared`.

`import torch` writes a `tie` (each holder keeps a copy) instead of colocating the holders,
so GPT-2 pipelines; the exported pipeline script sums the tied gradient across the ranks
that hold it (Megatron's embedding group), so a pipelined step equals one process; T5's
plan exports as a `device_map` that accelerate dispatches and that reads back as a
placement (its `shared` key was E949).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from torch_support import planner_ok, run_commands

from planner.spec.load import load_path

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install "
                            "'planner[torch]')")
from planner.io.torch_export import apply_plan
from planner.io.torch_import import to_workload, trace
from planner.workload.roofline import PROFILES

MODELS = Path(__file__).resolve().parent / "tied_models.py"


def _hf() -> object:
    """tied_models, whose models are transformers' (skipped without it)."""
    pytest.importorskip("transformers", reason="transformers is not installed (the `hf` "
                        "extra)")
    import tied_models

    return tied_models


class TinyLM(torch.nn.Module):
    """An embedding, a layer and a head that reads the embedding's table (tied)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.emb = torch.nn.Embedding(50, 8)
        self.blk = torch.nn.Linear(8, 8)
        self.head = torch.nn.Linear(8, 50, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.blk(self.emb(x))))


@pytest.mark.slow
def test_a_module_sharing_a_weight_stays_colocated_under_fx() -> None:
    # fx calls whole modules, and an export moves a module whole: one device for both
    traced = trace(TinyLM(), (torch.arange(12).reshape(2, 6) % 50,), "fx")
    w = to_workload(traced, "tiny", PROFILES["v100"])
    assert w.ties == []
    assert any({"emb", "head"} <= set(g) for g in w.colocations)
    assert {o.name: o for o in w.ops}["head"].params_bytes == 0


@pytest.mark.slow
def test_a_tied_weight_is_a_tie_held_by_each_user_and_runs_apart() -> None:
    model, x = TinyLM(), torch.arange(12).reshape(2, 6) % 50
    traced = trace(model, (x,), "export")
    w = to_workload(traced, "tiny", PROFILES["v100"])
    ops = {o.name: o for o in w.ops}
    table = 50 * 8 * 4
    assert ops["emb"].params_bytes == ops["head"].params_bytes == table
    assert [(names, nbytes) for names, nbytes, _ in w.ties] == [(["emb", "head"], table)]
    assert w.ties[0][2] in ("emb.weight", "head.weight")
    assert not any({"emb", "head"} <= set(g) for g in w.colocations)
    # apart: the head reads a copy of the table; outputs and gradients equal eager mode's
    placement = {op: ("gpu1" if op in ("head", "output") else "gpu0") for op in
                 traced.names.values()}
    placed = apply_plan(traced, placement, {"gpu0": "cpu", "gpu1": "cpu"})
    assert any(t.endswith("weight") and dev == "gpu1" for t, dev in placed.copies)
    out = placed.module(x)
    out = out[0] if isinstance(out, (tuple, list)) else out
    want = model(x)
    assert torch.equal(out, want)
    out.pow(2).mean().backward()
    want.pow(2).mean().backward()
    # one parameter, both uses' gradients summed into it, as in eager mode
    grads = [p.grad for p in placed.module.parameters()
             if p.shape == (50, 8) and p.grad is not None]
    assert len(grads) == 1
    assert torch.allclose(grads[0], model.emb.weight.grad, atol=1e-6)

FOUR_GPUS = """import "gpt2.plan"
cluster four {
  device gpu[0..3] { kind gpu  memory 16 GiB  flops 15.7 TFLOPS }
  link gpu[0..3] <-> gpu[0..3] { bandwidth 25 GB/s  latency 2 us }
}
plan pipe { graph gpt2  cluster four  objective pipeline  microbatches 8  schedule 1f1b }
"""


_IMPORTED: dict[str, str] = {}


def _import_gpt2(tmp_path: Path) -> Path:
    """tied_models.py's GPT-2, imported for training (`--granularity module:2`): gpt2.plan
    (imported once, its text written again for the next test)."""
    _hf()
    spec = tmp_path / "gpt2.plan"
    if "gpt2" not in _IMPORTED:
        planner_ok("import", "torch", f"{MODELS}:gpt2", "--example", "tokens()",
                   "--granularity", "module:2", "--training", "--name", "gpt2", "-o", spec)
        _IMPORTED["gpt2"] = spec.read_text()
    else:
        spec.write_text(_IMPORTED["gpt2"])
    return spec


@pytest.mark.slow
def test_gpt2s_tied_head_is_a_tie_and_gpt2_pipelines(tmp_path: Path) -> None:
    spec = _import_gpt2(tmp_path)
    text = spec.read_text()
    assert "  tie transformer.wte, lm_head { bytes 64 KiB  weight transformer.wte.weight }\n" \
        in text
    assert "  tie transformer.wte.bwd, lm_head.bwd { bytes 192 KiB  weight " in text
    graph = load_path(spec).spec.graphs["gpt2"]
    wte, head = graph.op_index["transformer.wte"], graph.op_index["lm_head"]
    assert graph.ops[head].params_bytes == graph.ops[wte].params_bytes == 64 * 1024
    assert graph.colocation_of[head] == -1 or graph.colocation_of[head] \
        != graph.colocation_of[wte]
    plan = tmp_path / "four.plan"
    plan.write_text(FOUR_GPUS)
    result = json.loads(planner_ok("solve", plan, "--json"))["result"]
    pipe = result["pipeline"]
    one = next(r for r in pipe["compared"] if r["plan"] == "one device")
    assert len(pipe["stages"]) >= 2
    assert pipe["iteration_s"] < one["iteration_s"]
    devices = {d: k for k, s in enumerate(pipe["stages"]) for d in s["devices"]}
    placement = result["placement"]
    assert placement["transformer.wte"] != placement["lm_head"]
    assert devices[placement["transformer.wte"]] == 0
    assert devices[placement["lm_head"]] == len(pipe["stages"]) - 1
    # one all-reduce of the 64 KiB gradient between two devices: 2 latencies + bytes / bw
    assert pipe["allreduce_s"] == pytest.approx(2 * 2e-6 + 64 * 1024 / 25e9)


@pytest.mark.slow
def test_a_pipelined_tied_gpt2_step_equals_one_process(tmp_path: Path) -> None:
    _import_gpt2(tmp_path)  # gpt2.plan, which two.plan imports
    plan = tmp_path / "two.plan"
    plan.write_text(FOUR_GPUS.replace("gpu[0..3]", "gpu[0..1]").replace("microbatches 8",
                                                                        "microbatches 4"))
    planner_ok("solve", plan, "--out", tmp_path / "plan.json")
    script = tmp_path / "step.py"
    planner_ok("export", "torch", plan, f"{MODELS}:gpt2", "--example", "tokens()",
               "--placement", tmp_path / "plan.json", "--pipeline", "--device-map",
               "gpu0=cpu,gpu1=cpu", "-o", tmp_path / "pipe.json", "--code", script)
    text = script.read_text()
    assert "TIED = [(['transformer.wte.weight', 'lm_head.weight'], [256, 64], 'float32')]" \
        in text
    doc = json.loads((tmp_path / "pipe.json").read_text())
    assert len(doc["stages"]) == 2
    # on this process's shared runner (torch and transformers imported once per process);
    # test_torch_pipeline.py's README example runs a script's --spawn in fresh processes
    result = run_commands(tmp_path, {"tied": (script, ["--spawn", "--cpu", "--check"],
                                              tmp_path)})["tied"]
    assert result.returncode == 0, result.stdout + result.stderr[-4000:]
    assert "loss and gradients equal the unpipelined model's: True" in result.stdout
    # the spec's optimizer (`import torch --training`: adam) stepped on each rank, the
    # tied copies summed and stepped alike (before: no optimizer step at all)
    assert ("the optimizer step (adam, lr 0.001) on each rank equals the unpipelined "
            "optimizer's on its gradients: True") in result.stdout


T5_CLUSTER = """import "t5.plan"
cluster two {
  device gpu[0..1] { kind gpu  memory 180 KiB  flops 15.7 TFLOPS }
  link gpu0 <-> gpu1 { bandwidth 25 GB/s  latency 2 us }
}
plan t5p { graph t5  cluster two }
"""


@pytest.mark.slow
def test_t5s_device_map_round_trips(tmp_path: Path) -> None:
    dispatch_model = pytest.importorskip("accelerate").dispatch_model
    tied_models: Any = _hf()
    spec = tmp_path / "t5.plan"
    planner_ok("import", "torch", f"{MODELS}:t5", "--example", "t5_tokens()", "--granularity",
               "module:2", "--name", "t5", "-o", spec)
    assert "  tie encoder.embed_tokens, decoder.embed_tokens, lm_head { bytes 16 KiB  " \
        "weight shared.weight }" in spec.read_text()
    plan = tmp_path / "two.plan"
    plan.write_text(T5_CLUSTER)
    planner_ok("solve", plan, "--out", tmp_path / "plan.json")
    placement = json.loads((tmp_path / "plan.json").read_text())["placement"]
    assert len(set(placement.values())) == 2  # 180 KiB each: the model must split
    planner_ok("export", "torch", plan, f"{MODELS}:t5", "--example", "t5_tokens()",
               "--placement", tmp_path / "plan.json", "-o", tmp_path / "placed.json")
    device_map = json.loads((tmp_path / "placed.json").read_text())["device_map"]
    assert device_map is not None and "shared" in device_map
    assert len(set(device_map.values())) == 2
    # back as a placement: `shared` places the tied weight, no op (E949 before)
    (tmp_path / "map.json").write_text(json.dumps(device_map))
    planner_ok("simulate", plan, "--placement", tmp_path / "map.json")
    # accelerate runs it (every device on the CPU here) with eager mode's outputs
    model, inputs = tied_models.t5(), tied_models.t5_tokens()
    with torch.no_grad():
        eager = model(**inputs).logits
        dispatched = dispatch_model(tied_models.t5(), {k: "cpu" for k in device_map},
                                    force_hooks=True)
        assert torch.equal(dispatched(**inputs).logits, eager)

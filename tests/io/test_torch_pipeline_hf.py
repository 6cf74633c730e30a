"""`export torch --pipeline` of a Hugging Face model: GPT-2 pipelined under gloo.

transformers' GPT2LMHeadModel (a small config, random weights, untied embeddings, in train
mode as built) is imported with its keyword inputs (`--example`, input_ids and
attention_mask) and `--training`, planned as a pipeline on 2 fast-linked devices (two
stages), exported with `--pipeline` (the nearest split at module boundaries) and run by
the script it writes on 2 CPU processes (gloo). The script passes the keyword inputs and
the importer's `use_cache=False`, rebuilds the ModelOutput for the loss (cross-entropy of
its logits), and `--check` compares the loss and every gradient with one process (in eval
mode, within 1e-5); in train mode it says that dropout makes them differ, and by how much.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from torch_support import load_script, planner_ok, run_commands

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install "
                            "'planner[torch]')")
pytest.importorskip("transformers", reason="transformers is not installed")

HERE = Path(__file__).resolve().parent
MODELS = HERE / "torch_pipeline_models.py"
EXAMPLE = "gpt2_tokens()"


@dataclass
class Exported:
    """GPT-2 imported, planned, solved and exported; the script as a module."""

    doc: dict[str, Any]
    path: Path
    script: Any
    root: Path


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Exported:
    root = tmp_path_factory.mktemp("gpt2")
    planner_ok("import", "torch", f"{MODELS}:gpt2", "--example", EXAMPLE, "--training",
               "--name", "gpt2", "-o", root / "gpt2.plan")
    # compute-bound (tiny activations on a fast link): the plan takes both devices
    (root / "pipe.plan").write_text(
        'import "gpt2.plan"\n'
        "cluster c {\n  device gpu[0..1] { kind gpu  memory 1 GiB  flops 10 TFLOPS }\n"
        "  link gpu0 <-> gpu1 { bandwidth 100 GB/s }\n}\n"
        "plan p { graph gpt2  cluster c  objective pipeline  microbatches 4  schedule gpipe }\n")
    planner_ok("solve", root / "pipe.plan", "--out", root / "plan.json")
    planner_ok("export", "torch", root / "pipe.plan", f"{MODELS}:gpt2", "--example", EXAMPLE,
               "--placement", root / "plan.json", "--pipeline", "--nearest", "--device-map",
               "gpu0=cpu,gpu1=cpu", "-o", root / "pipe.json", "--code", root / "step.py")
    return Exported(json.loads((root / "pipe.json").read_text()), root / "step.py",
                    load_script(root / "step.py"), root)


def _looped(root: Path, graph: str, target: str, example: str) -> Exported:
    """The graph `graph` (ROOT/GRAPH.plan) planned as 4 stages looping over 2 ranks
    (ScheduleInterleaved1F1B), exported with the nearest split (looped_step.py)."""
    (root / "looped.plan").write_text(
        f'import "{graph}.plan"\n'
        "cluster c {\n  device gpu[0..1] { kind gpu  memory 1 GiB  flops 10 TFLOPS }\n"
        "  link gpu0 <-> gpu1 { bandwidth 100 GB/s }\n}\n"
        f"plan p {{ graph {graph}  cluster c  objective pipeline  microbatches 4  "
        "schedule interleaved  stages_per_device 2 }\n")
    planner_ok("solve", root / "looped.plan", "--out", root / "looped.json")
    planner_ok("export", "torch", root / "looped.plan", target, "--example", example,
               "--placement", root / "looped.json", "--pipeline", "--nearest",
               "--device-map", "gpu0=cpu,gpu1=cpu", "-o", root / "looped_pipe.json",
               "--code", root / "looped_step.py")
    doc = json.loads((root / "looped_pipe.json").read_text())
    assert doc["schedule_class"] == "ScheduleInterleaved1F1B"
    assert [s["rank"] for s in doc["stages"]] == [0, 1, 0, 1]
    return Exported(doc, root / "looped_step.py", load_script(root / "looped_step.py"), root)


@pytest.fixture(scope="module")
def ran(exported: Exported, tmp_path_factory: pytest.TempPathFactory
        ) -> dict[str, tuple[Exported, subprocess.CompletedProcess[str]]]:
    """The scripts' `--spawn --cpu` runs, in one set of 2 processes (torch and transformers
    imported once per process, not once per run and rank): GPT-2's step checked in eval
    mode (saved) and in train mode, GPT-2 and T5 as 4 stages looping over 2 ranks."""
    (exported.root / "eval").mkdir()
    t5 = tmp_path_factory.mktemp("t5")
    models = HERE / "tied_models.py"
    planner_ok("import", "torch", f"{models}:t5", "--example", "t5_tokens()", "--training",
               "--name", "t5", "-o", t5 / "t5.plan")
    cases = {
        "eval": (exported, ["--check", "--save", str(exported.root / "eval")]),
        "train": (exported, ["--check", "--mode", "train"]),
        "gpt2_looped": (_looped(exported.root, "gpt2", f"{MODELS}:gpt2", EXAMPLE), ["--check"]),
        "t5_looped": (_looped(t5, "t5", f"{models}:t5", "t5_tokens()"), ["--check"])}
    runs = run_commands(tmp_path_factory.mktemp("runs"), {
        name: (e.path, ["--spawn", "--cpu", *args], e.root)
        for name, (e, args) in cases.items()})
    return {name: (e, runs[name]) for name, (e, _) in cases.items()}


def test_the_script_takes_the_models_keywords_capture_settings_and_output(
        exported: Exported) -> None:
    script = exported.script
    assert exported.doc["ranks"] == 2 and len(exported.doc["stages"]) == 2
    assert script.CAPTURE_KWARGS == {"use_cache": False}  # as the importer captured it
    args, kwargs, target = script.make_batch({"gpt2_tokens": lambda: {
        "input_ids": torch.zeros(2, 16, dtype=torch.long),
        "attention_mask": torch.ones(2, 16, dtype=torch.long)}})
    assert args == () and kwargs["use_cache"] is False
    assert kwargs["input_ids"].shape == (8, 16)  # 4 micro-batches of 2 sequences
    # the loss's target: a label per token (the logits' last dimension is the vocabulary)
    assert script.OUTPUT_SHAPES == [[2, 16, 128]] and script.LOGITS == 0
    assert target is not None and target.dtype == torch.long and target.shape == (8, 16)
    # the last stage returns the logits tensor; the loss gets the model's ModelOutput
    output = script.model_output(torch.zeros(2, 16, 128))
    assert type(output).__name__ == "CausalLMOutputWithCrossAttentions"
    assert torch.equal(output.logits, torch.zeros(2, 16, 128))
    labels = torch.zeros(2, 16, dtype=torch.long)
    assert torch.allclose(script.loss_fn(output, labels), torch.log(torch.tensor(128.0)))
    mine = script.the_loss(f"{MODELS}:gpt2_loss")  # --loss: a user's function, by path
    assert torch.allclose(mine(output, labels), script.loss_fn(output, labels) * 0.5)


@pytest.mark.slow
def test_gpt2_pipelined_under_gloo_equals_one_process(
        exported: Exported, ran: dict[str, tuple[Exported, Any]]) -> None:
    save = exported.root / "eval"
    result = ran["eval"][1]
    assert result.returncode == 0, result.stdout + result.stderr[-4000:]
    assert "compared in eval mode (dropout off" in result.stdout
    assert "loss and gradients equal the unpipelined model's: True" in result.stdout
    # the same comparison here, within 1e-5: each rank holds its stage's gradients
    script = exported.script
    results = [torch.load(save / f"rank{r}.pt") for r in range(2)]
    expected = script.unpipelined(mode="eval")
    losses = [x for r in results for x in r["losses"]]
    assert len(losses) == 4 and not results[0]["losses"]
    assert torch.allclose(torch.stack(losses).mean(), expected["loss"], rtol=1e-5, atol=1e-5)
    grads = [r["grads"] for r in results]
    assert grads[0] and grads[1] and not grads[0].keys() & grads[1].keys()
    assert grads[0].keys() | grads[1].keys() == expected["grads"].keys()
    assert "transformer.wte.weight" in grads[0] and "lm_head.weight" in grads[1]
    for name, want in expected["grads"].items():
        got = grads[0].get(name, grads[1].get(name))
        assert torch.allclose(got, want, rtol=1e-5, atol=1e-5), name
    # in train mode, as built: dropout draws other numbers on each rank; --check says so
    result = ran["train"][1]
    assert result.returncode == 1, result.stdout + result.stderr[-4000:]
    out = result.stdout
    assert "compared in train mode" in out and "equal the unpipelined model's: False" in out
    assert re.search(r"loss [\d.]+ against [\d.]+ \(by [\d.e-]+\)", out), out
    assert re.search(r"\d+ of \d+ gradients differ, the most: \S+ by [\d.e-]+", out), out
    assert "13 module(s) in train mode" in out and "transformer.drop" in out
    assert "--mode eval" in out


def _looped_ran(ran: dict[str, tuple[Exported, Any]], name: str) -> Exported:
    """The looped case `name`, whose step run by the script under gloo must equal one
    process."""
    looped, result = ran[name]
    assert result.returncode == 0, result.stdout + result.stderr[-4000:]
    assert "loss and gradients equal the unpipelined model's: True" in result.stdout
    return looped


@pytest.mark.slow
def test_gpt2_interleaved_relays_the_mask_its_blocks_share(
        ran: dict[str, tuple[Exported, Any]]) -> None:
    """4 stages looping over 2 ranks (ScheduleInterleaved1F1B), which sends between
    adjacent stages only: the attention mask that the first stage computes and every block
    reads is relayed by the stages between. Before: the step failed, "PipelineScheduleMulti
    only supports adjacent-stage communication, but stage 0 has forward send stages [1, 2,
    3]"; now its loss and gradients equal one process's."""
    looped = _looped_ran(ran, "gpt2_looped")
    # in this process: after the relay, every stage takes its tensors from the one before
    script = looped.script
    model, namespace = script.load_model(mode="eval")
    args, kwargs, _ = script.make_batch(namespace)
    pipe = script.pipeline(model, mb_args=tuple(script._first(a) for a in args),
                           mb_kwargs={k: script._first(v) for k, v in kwargs.items()},
                           split_spec=script.SPLIT_SPEC)
    calls = [n for n in pipe.split_gm.graph.nodes if n.op == "call_module"]

    def sources() -> list[set[int]]:
        return [{script._stage_of(a, calls) for a in c.args} - {None} for c in calls]

    assert sources()[2] == {0, 1}  # the mask skips stage 1
    script.relay_skips(pipe)
    assert sources() == [set(), {0}, {1}, {2}]


@pytest.mark.slow
def test_t5_interleaved_relays_in_the_order_torch_sends(
        ran: dict[str, tuple[Exported, Any]]) -> None:
    """T5 (tied_models.py: its `shared` embedding tied, the encoder's output read by every
    decoder block) as 4 stages on 2 ranks: the stages between relay several tensors, and
    each stage takes its inputs in the order the stage before returns them, as torch pairs
    sends and receives. Before: gloo's "Received data size doesn't match expected size"
    (1024 vs 64 bytes: a relayed tensor received as another)."""
    _looped_ran(ran, "t5_looped")

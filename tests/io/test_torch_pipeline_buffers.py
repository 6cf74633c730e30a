"""A training stage's receive buffers, counted as torch holds them, measured on the step.

torch 2.13's pipeline stage makes, at its first step, a receive buffer per micro-batch for
its input (every stage but the first: `args_recv_info`) and one for the gradient of its
output (every stage but the last: `grad_recv_info`), and keeps them for its life, beside
the inputs of the micro-batches in flight (`hybrid.buffer_copies`). The model `wide`
(torch_pipeline_models.py: 16 -> 16384 -> x2 -> 16 on 64x16 inputs, 4 MiB boundaries),
imported with `--training`, one stage per GPU, is planned by pipedp, exported with
`--pipeline`, and its step run on three CPU ranks, each measuring the storages alive during
`schedule.step` plus its stage's parameters (`torch_pipeline_runner.measuring`).

Before, the plan counted the inputs of the micro-batches in flight alone: the middle rank
held 54,525,952 B at 4 micro-batches (1F1B) and 88,080,384 B at 8, where the plan said
20,971,520 B at either; the first and last ranks 32,718,848 and 28,364,996 B at 4, planned
14,823,424 and 10,489,984. Now the middle rank is planned to the byte under 1F1B, every
other rank within one boundary tensor and one stage's weight gradient. What torch holds
besides (docs/pipelines.md, logged storage by storage): a micro-batch's weight gradient
until it is added to the accumulated one, and under 1F1B, once M exceeds a stage's
warm-up of two or more, the output of the warm-up's last fired send (`Schedule1F1B` keeps
its `send_work` until the cool-down); its in-flight inputs are the buffers themselves,
which the plan counts twice. On the middle rank these offset.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from torch_support import planner_ok, run_jobs

pytest.importorskip("torch", reason="PyTorch is not installed (pip install 'planner[torch]')")
pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
MODEL = f"{HERE / 'torch_pipeline_models.py'}:wide"
MIB = 2**20
#: (micro-batches, schedule) of each plan measured
CASES = [(4, "1f1b"), (8, "1f1b"), (4, "gpipe")]
#: what torch holds besides the plan's figure, at most: one 4 MiB boundary tensor and the
#: first stage's weight gradient (1088 KiB), with the caller's batch (8 x 4 KiB)
SLACK = 4 * MIB + 1088 * 2**10 + 8 * 4 * 2**10


def _spec(root: Path, microbatches: int, schedule: str) -> Path:
    graph = re.search(r"^graph (\S+) \{", (root / "wide.plan").read_text(), re.M)
    assert graph is not None
    spec = root / f"p{microbatches}{schedule}.plan"
    spec.write_text(
        'import "wide.plan"\ncluster c {\n'
        "  device gpu[0..2] { kind gpu  memory 4 GiB  flops 10 TFLOPS }\n"
        "  link gpu[0..2] <-> gpu[0..2] { bandwidth 1 TB/s }\n}\n"
        f"plan p {{ graph {graph.group(1)}  cluster c  objective pipeline\n"
        f"  microbatches {microbatches}  schedule {schedule}\n"
        '  pin input_1, "0" to gpu0  pin "1" to gpu1  pin "2" to gpu2 }\n')
    return spec


@pytest.fixture(scope="module")
def held(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[int, str], Any]:
    """Per case: (the plan's bytes per device, torch's per rank)."""
    root = tmp_path_factory.mktemp("buffers")
    # sgd: its state is the gradients alone, which the step makes (Adam's, the optimizer's
    # step after it, which the measure does not see)
    planner_ok("import", "torch", MODEL, "--capture", "fx", "--input", "64x16", "--training",
               "--optimizer", "sgd", "-o", root / "wide.plan")
    planned, jobs = {}, []
    for m, schedule in CASES:
        name = f"{m}{schedule}"
        spec = _spec(root, m, schedule)
        doc = json.loads(planner_ok("solve", spec, "--algo", "pipedp", "--json",
                                    "--out", root / f"{name}.json"))
        planned[m, schedule] = [d["memory_bytes"]
                                for d in doc["result"]["pipeline"]["devices"]]
        planner_ok("export", "torch", spec, MODEL, "--input", "64x16", "--placement",
                   root / f"{name}.json", "--device-map", "gpu0=cpu,gpu1=cpu,gpu2=cpu",
                   "--pipeline", "-o", root / f"{name}.pipe.json", "--code", root / f"{name}.py")
        (root / name).mkdir()
        jobs.append({"script": str(root / f"{name}.py"), "ranks": 3, "save": str(root / name),
                     "memory": True, "rendezvous": str(root / f"rendezvous{name}")})
    run_jobs(root, jobs)
    return {case: (planned[case], [json.loads((root / f"{case[0]}{case[1]}" / f"held{r}.json")
                                              .read_text())["bytes"] for r in range(3)])
            for case in CASES}


@pytest.mark.parametrize("microbatches", [4, 8])
def test_the_middle_stage_is_planned_as_torch_holds_it(
        held: dict[tuple[int, str], Any], microbatches: int) -> None:
    """It receives its input and its output's gradient (4 MiB each) into a buffer per
    micro-batch: 2 in flight x 8 MiB, M x 8 MiB of buffers, a 4 MiB gradient."""
    planned, measured = held[microbatches, "1f1b"]
    assert planned[1] == measured[1] == (2 * 8 + microbatches * 8 + 4) * MIB


@pytest.mark.parametrize("case", CASES, ids=[f"{m}-{s}" for m, s in CASES])
def test_every_rank_is_planned_within_what_torch_holds_besides(
        held: dict[tuple[int, str], Any], case: tuple[int, str]) -> None:
    planned, measured = held[case]
    for rank in range(3):
        assert measured[rank] - SLACK <= planned[rank], (rank, planned, measured)
        assert planned[rank] <= measured[rank] + SLACK, (rank, planned, measured)
    # the buffers grow with the micro-batches: M x 4 MiB on the ends, M x 8 MiB between
    if case == (8, "1f1b"):
        fewer, _ = held[4, "1f1b"]
        assert [a - b for a, b in zip(planned, fewer, strict=True)] == [
            16 * MIB, 32 * MIB, 16 * MIB]

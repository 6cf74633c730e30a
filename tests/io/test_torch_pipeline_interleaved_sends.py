"""An interleaved training stage's sends, counted as torch holds them, measured on the step.

torch 2.13's `ScheduleInterleaved1F1B` (its runtime, `_PipelineScheduleRuntime`) waits on
the sends it fires only when the step ends (`send_ops`), so a stage holds each
micro-batch's output and its input's gradient from that micro-batch's backward task to the
step's end, beside its receive buffers (`Schedule.keeps_sends`; `split.stage_bytes` walks
the device's order). The model `long` (torch_pipeline_models.py: 16 -> 8192, seven
parameter-free layers, 8192 -> 16; 2 MiB boundaries on 64x16 inputs), imported with
`--training`, is pinned as four stages on two GPUs (two each), exported with `--pipeline`,
and its step run on two CPU ranks, each measuring the storages alive during
`schedule.step` plus its stages' parameters (`torch_pipeline_runner.measuring`).

Before 2026-12-07 the sends were not counted, and the plan said less than torch held
once the micro-batches outnumbered the warm-up: rank 0 at 57.06 MiB at 4 micro-batches
(torch 57.08), 81.06 at 8 (torch 105.09), 129.06 at 16 (torch 201.12); rank 1 45.01, 69.01
and 117.01 MiB (torch 51.05, 99.09, 195.19). The plan still counts the inputs of the
micro-batches in flight besides their receive buffers, which torch's stage receives them
into (as under 1F1B: docs/pipelines.md), so it says more than torch holds by at most that.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from torch_support import gpu_spec, planner_ok, run_jobs

pytest.importorskip("torch", reason="PyTorch is not installed (pip install 'planner[torch]')")
pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
MODEL = f"{HERE / 'torch_pipeline_models.py'}:long"
MIB = 2**20
MICROBATCHES = (4, 8)
#: the stages' first ops, forward: gpu0, gpu1, gpu0, gpu1
STAGES = [('input_1', '"0"', '"1"'), ('"2"', '"3"'), ('"4"', '"5"'), ('"6"', '"7"', '"8"')]
#: what torch holds besides the plan's figure, at most: a micro-batch's weight gradient
#: until it is added to the accumulated one (1 MiB) and the caller's batch (16 x 4 KiB)
SLACK = MIB + 16 * 4 * 2**10
#: the in-flight inputs the plan counts besides their receive buffers, at most: Megatron's
#: warm-up plus one (rank 0: 2 + 2 + 1 = 5), one 2 MiB input each
TWICE = 5 * 2 * MIB


def _spec(root: Path, microbatches: int) -> Path:
    pins = "  ".join(f"pin {', '.join(ops)} to gpu{k % 2}" for k, ops in enumerate(STAGES))
    return gpu_spec(root, "long.plan", f"p{microbatches}", 2, "4 GiB",
                    f"microbatches {microbatches}  schedule interleaved  stages_per_device 2"
                    f"  {pins}")


@pytest.fixture(scope="module")
def held(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Any]:
    """Per micro-batch count: (the plan's bytes per device, torch's per rank)."""
    root = tmp_path_factory.mktemp("sends")
    planner_ok("import", "torch", MODEL, "--capture", "fx", "--input", "64x16", "--training",
               "--optimizer", "sgd", "-o", root / "long.plan")
    planned, jobs = {}, []
    for m in MICROBATCHES:
        spec = _spec(root, m)
        doc = json.loads(planner_ok("solve", spec, "--algo", "pipedp", "--json",
                                    "--out", root / f"{m}.json"))
        pipeline = doc["result"]["pipeline"]
        assert [s["devices"] for s in pipeline["stages"]] == [["gpu0"], ["gpu1"]] * 2
        assert pipeline["schedule_run"] == "interleaved"
        planned[m] = [d["memory_bytes"] for d in pipeline["devices"]]
        planner_ok("export", "torch", spec, MODEL, "--input", "64x16", "--placement",
                   root / f"{m}.json", "--device-map", "gpu0=cpu,gpu1=cpu", "--pipeline",
                   "-o", root / f"{m}.pipe.json", "--code", root / f"{m}.py")
        (root / str(m)).mkdir()
        jobs.append({"script": str(root / f"{m}.py"), "ranks": 2, "save": str(root / str(m)),
                     "memory": True, "rendezvous": str(root / f"rendezvous{m}")})
    run_jobs(root, jobs)
    return {m: (planned[m], [json.loads((root / str(m) / f"held{r}.json").read_text())["bytes"]
                             for r in range(2)]) for m in MICROBATCHES}


@pytest.mark.parametrize("microbatches", MICROBATCHES)
def test_no_rank_holds_more_than_planned(held: dict[int, Any], microbatches: int) -> None:
    planned, measured = held[microbatches]
    for rank in range(2):
        assert measured[rank] - SLACK <= planned[rank], (rank, planned, measured)
        assert planned[rank] <= measured[rank] + TWICE + SLACK, (rank, planned, measured)


def test_the_sends_grow_with_the_micro_batches_as_torch_holds_them(
        held: dict[int, Any]) -> None:
    """Four micro-batches more: on each rank 4 x 6 MiB of receive buffers (rank 0: stage 0's
    output gradient, stage 2's input and output gradient) and 4 x 6 MiB of sends (stage 0's
    output, stage 2's output and input gradient), 48 MiB; before, the buffers alone."""
    (fewer, fewer_held), (more, more_held) = held[4], held[8]
    assert [b - a for a, b in zip(fewer, more, strict=True)] == [48 * MIB, 48 * MIB]
    for rank in range(2):
        grown = more_held[rank] - fewer_held[rank]
        assert abs(grown - 48 * MIB) <= SLACK, (rank, grown / MIB)

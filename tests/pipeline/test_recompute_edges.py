"""A recomputing stage at the model's edges and under `interleaved` (`split.stage_bytes`).

torch's PipelineStage keeps each micro-batch's inputs and outputs in `fwd_cache` from its
forward to its backward (torch 2.13.0, torch/distributed/pipelining/stage.py:913, popped at
:966): on the first stage the inputs are the model's own (the micro-batch's chunk of the
batch, `composite_args = args`), on the last its outputs are the model's (the loss's
input). The exported script of the MLP below (GPipe, 4 micro-batches, every stage
recomputing), its `forward_one_chunk` instrumented, held at 4 micro-batches: stage 0 2048 B
of inputs and 4096 B of outputs, stage 2 4096 B of inputs and 512 B of outputs. planner
counted the model's input (512 B) and output (128 B) once, not per micro-batch in flight.

Under `interleaved` a rank runs one stage's backward at a time
(`_PipelineScheduleRuntime._step_microbatches`: one action after another), and each stage
is checkpointed on its own, so a backward rebuilds one stage's activations: planner counted
all of a device's stages' at once, and refused plans that fit.

Since 2026-12-07 every stage also holds, per micro-batch, a receive buffer of its input and
one of its output's gradient (`hybrid.buffer_copies`; 0 at the model's ends): the figures
below add them, and the caps sit between the rule's figure and the older counts'.

The MLP of tests/pipeline/fixtures/mlp_fx_training.plan (`planner import torch
tests/io/torch_pipeline_models.py:mlp --capture fx --input 8x16 --training`), three GPUs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from planner import load
from planner.algorithms import Options, run
from planner.cli import app
from planner.errors import InfeasibleError
from planner.model import Problem
from planner.pipeline.split import Split, stage_bytes
from planner.pipeline.units import units

FIXTURE = Path(__file__).with_name("fixtures") / "mlp_fx_training.plan"
#: units: input_1 | 0 | 1 | ... | 8 (each forward op with its backward op)
GPIPE = Split((0, 4, 6, 10), (0, 1, 2))
#: under `interleaved`, 2 stages per device: [input_1 0 1 | 2 3 | 4 5 | 6 7 8] on gpu0, gpu1
LOOPED = Split((0, 3, 5, 7, 10), (0, 1, 0, 1))


def _spec(tmp_path: Path, memory: str, settings: str) -> Path:
    (tmp_path / "mlp.plan").write_text(FIXTURE.read_text())
    spec = tmp_path / "p.plan"
    spec.write_text('import "mlp.plan"\ncluster c {\n'
                    f"  device gpu[0..2] {{ kind gpu  memory {memory}  flops 10 TFLOPS }}\n"
                    "  link gpu[0..2] <-> gpu[0..2] { bandwidth 1 TB/s }\n}\n"
                    f"plan p {{ graph Sequential  cluster c  objective pipeline  {settings} }}\n")
    return spec


def _problem(tmp_path: Path, settings: str, memory: str = "1 GiB") -> Problem:
    spec = _spec(tmp_path, memory, settings)
    return load(spec, root=spec.parent).plans["p"]


@pytest.fixture
def gpipe(tmp_path: Path) -> Problem:
    return _problem(tmp_path, "microbatches 4  schedule gpipe")


def test_the_data_input_and_the_output_are_known(gpipe: Problem) -> None:
    u = units(gpipe)
    assert list(u.input_prefix) == [0.0] + [512.0] * 10  # input_1's 8x16 float32
    assert list(u.output_prefix) == [0.0] * 10 + [128.0]  # op 8's 8x4


def test_a_recomputing_first_stage_holds_the_input_per_micro_batch(gpipe: Problem) -> None:
    assert gpipe.pipeline is not None
    held = stage_bytes(gpipe, GPIPE, gpipe.pipeline, [0, 1, 2])
    # params 25600 B; activations rebuilt once, the input aside, 3072 B; largest transient
    # 1024 B; per micro-batch (GPipe: 4) the 1 KiB it sends and the 512 B input: torch's
    # 4096 + 2048 B (before: 34304 B, the input once); and 4 receive buffers of the 1 KiB
    # gradient of what it sends (none for its input, the model's)
    assert held[0] == 25600 + 3072 + 1024 + 4 * (1024 + 512) + 4 * (0 + 1024) == 39936


def test_a_recomputing_last_stage_holds_the_output_per_micro_batch(gpipe: Problem) -> None:
    assert gpipe.pipeline is not None
    held = stage_bytes(gpipe, GPIPE, gpipe.pipeline, [0, 1, 2])
    # params 19008 B; activations rebuilt once 3200 B; transient 1024 B; per micro-batch the
    # 1 KiB it receives and the 128 B output: torch's 4096 + 512 B (before: 27328 B); and 4
    # receive buffers of its 1 KiB input (none for its output's gradient, the loss's)
    assert held[2] == 19008 + 3200 + 1024 + 4 * (1024 + 128) + 4 * (1024 + 0) == 31936
    # a stage between them is as it was (28160 B), plus its receive buffers: input and
    # output gradient, 1 KiB each, per micro-batch
    assert held[1] == 28160 + 4 * (1024 + 1024) == 36352


def _simulate(tmp_path: Path, memory: str, settings: str, stages: list[tuple[str, ...]],
              devices: list[str], recompute: list[str]) -> Result:
    """`simulate` of the MLP on GPUs of `memory` under `settings`, the ops of `stages` (by
    forward op, each backward op with its) on `devices`, those of `recompute` recomputing."""
    spec = _spec(tmp_path, memory, settings)
    problem = load(spec, root=spec.parent).plans["p"]
    device = {op: devices[k] for k, ops in enumerate(stages) for op in ops}
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({
        "format": "planner.plan", "version": 1, "plan": "p", "recompute": recompute,
        "placement": {o.name: device[o.name.removesuffix(".bwd")]
                      for o in problem.graph.ops}}))
    return CliRunner().invoke(app, ["simulate", str(spec), "--placement", str(plan), "--root",
                                    str(tmp_path)], env={"COLUMNS": "300"})


def test_simulate_no_longer_says_a_first_stage_over_its_memory_fits(tmp_path: Path) -> None:
    # gpu0 needs 39936 B (above); counting the input once it needed 38400 B, which fits
    # 39000 B (before 2026-12-07, without receive buffers: 35000 B, "holds 33.50 KiB")
    result = _simulate(tmp_path, "39000 B", "microbatches 4  schedule gpipe",
                       [("input_1", "0", "1", "2"), ("3", "4"), ("5", "6", "7", "8")],
                       ["gpu0", "gpu1", "gpu2"], ["gpu0", "gpu2"])
    assert result.exit_code == 3, result.output  # before: exit 0, fits
    assert "gpu0 (+14 ns per micro-batch, holds 39.00 KiB)" in result.stdout
    assert "error[E401]" in result.stderr


def test_an_interleaved_device_rebuilds_one_stage_at_a_time(tmp_path: Path) -> None:
    p = _problem(tmp_path, "microbatches 4  schedule interleaved  stages_per_device 2")
    assert p.pipeline is not None
    held = stage_bytes(p, LOOPED, p.pipeline, [0, 1])
    # gpu0, rank 0 of 2: 5 micro-batches in flight of its larger stage's 1 KiB received and
    # 1 KiB sent; params 25600 B; transient 1024 B plus one stage's activations rebuilt
    # (2048 B each, stage 0's input aside), where it counted both stages' 2560 + 2048 B;
    # 4 receive buffers of stage 0's 1 KiB output gradient and stage 2's 1 KiB input and
    # 1 KiB output gradient; and what its backward tasks before its last forward task sent
    # (torch keeps every send to the step's end): stage 2's output and input gradient
    # twice, stage 0's output once
    assert held[0] == (25600 + 1024 + 2048 + 5 * 2048 + 4 * (0 + 1024 + 1024 + 1024)
                       + 2 * 2048 + 1024) == 56320  # before: 41472 + 12288, then 51200
    assert held[0] < stage_bytes(p, LOOPED, p.pipeline)[0] == 41984 + 4 * 3072 + 5120


def test_nor_does_auto_plan_it(tmp_path: Path) -> None:
    """pipeilp's recomputing contiguous DP (auto's plan where pipedp finds none) counts it
    too: before, at 35000 B it planned gpu0 and gpu2 recomputing, "34304 B", which fits.
    With receive buffers (4 x 1 KiB more on gpu0) the input counted once is 38400 B, under
    39000 B; counted per micro-batch, 39936 B."""
    problem = _problem(tmp_path, "microbatches 4  schedule gpipe", "39000 B")
    with pytest.raises(InfeasibleError) as err:
        run("auto", problem, Options(time_limit_s=1))
    assert [d.code for d in err.value.diagnostics] == ["E707"]
    roomier = _problem(tmp_path, "microbatches 4  schedule gpipe", "40000 B")
    solution = run("auto", roomier, Options(time_limit_s=1))
    assert solution.info["recompute"] == ["gpu0", "gpu2"]
    # gpu1, not recomputing, 30208 B before receive buffers: + 4 x (1 KiB + 1 KiB)
    assert dict(solution.info["held_bytes"]) == {"gpu0": 39936, "gpu1": 30208 + 8192,
                                                 "gpu2": 31936}


def test_simulate_runs_an_interleaved_recomputing_plan_that_fits(tmp_path: Path) -> None:
    result = _simulate(tmp_path, "64 KiB",
                       "microbatches 4  schedule interleaved  stages_per_device 2",
                       [("input_1", "0", "1"), ("2", "3"), ("4", "5"), ("6", "7", "8")],
                       ["gpu0", "gpu1", "gpu0", "gpu1"], ["gpu0", "gpu1"])
    # gpu1 holds 45248 B + 4 receive buffers of stage 1's input and output gradient and
    # stage 3's input (1 KiB each) + what its backward tasks before its last forward task
    # sent (7 KiB: stage 1's output and input gradient and stage 3's input gradient, 1 KiB
    # each, kept to the step's end) = 64704 B of its 65536 (counting both stages'
    # activations rebuilt at once: 2048 B more, 66752 B, E401 and exit 3); before the
    # sends counted, 57536 B
    assert result.exit_code == 0, result.output
    assert "gpu1 (+20 ns per micro-batch, holds 63.19 KiB)" in result.stdout

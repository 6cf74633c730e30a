"""A recomputing stage holds, per micro-batch in flight, what it sends as well as what it
receives: torch's PipelineStage keeps each micro-batch's outputs beside its inputs in
`fwd_cache` from its forward until its backward (torch/distributed/pipelining/stage.py:
`self.fwd_cache[fwd_chunk_id] = (output_tuple, flatten_input_tensors)` in the forward,
`self.fwd_cache.pop(bwd_chunk_id)` in the backward).

The MLP of tests/io/test_torch_pipeline_recompute.py (fixtures/mlp_fx_training.plan, its
`import torch --capture fx --input 8x16 --training`) on three GPUs of 34 KiB, 1F1B, 4
micro-batches. Before: `auto` planned [input 0 1 2 | 3 4 | 5 6 7 8] recomputing on gpu0 at
29.50 KiB (30208 B), "fits", where the exported script's stage 0 keeps 3 micro-batches'
1 KiB outputs besides: 32.50 KiB (33280 B); and 3 micro-batches' 512 B inputs, the
model's, where it counted one (test_recompute_edges.py): 33.50 KiB (34304 B). Since
2026-12-07 stage 0 also holds 4 receive buffers of its output's 1 KiB gradient (b3ce029),
4 KiB more on each figure: 33.50 KiB (34304 B) would fit the 34 KiB cap (30 KiB before
the buffers), 37.50 KiB (38400 B) does not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner import load
from planner.algorithms import Options, run
from planner.cli import app
from planner.errors import InfeasibleError
from planner.model import Problem
from planner.pipeline.split import split_of, stage_bytes

FIXTURE = Path(__file__).with_name("fixtures") / "mlp_fx_training.plan"
#: the stages of the plan `auto` made before, by op (backward ops with their forward op)
STAGES = {"gpu0": ("input_1", "0", "1", "2"), "gpu1": ("3", "4"),
          "gpu2": ("5", "6", "7", "8")}


def _spec(tmp_path: Path) -> Path:
    (tmp_path / "mlp.plan").write_text(FIXTURE.read_text())
    spec = tmp_path / "p.plan"
    spec.write_text('import "mlp.plan"\ncluster c {\n'
                    "  device gpu[0..2] { kind gpu  memory 34 KiB  flops 10 TFLOPS }\n"
                    "  link gpu[0..2] <-> gpu[0..2] { bandwidth 1 TB/s }\n}\n"
                    "plan p { graph Sequential  cluster c  objective pipeline  "
                    "microbatches 4  schedule 1f1b }\n")
    return spec


def _placement(problem: Problem) -> dict[str, str]:
    device = {op: d for d, ops in STAGES.items() for op in ops}
    return {o.name: device[o.name.removesuffix(".bwd")] for o in problem.graph.ops}


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    return _spec(tmp_path)


def test_the_recomputing_stage_counts_the_outputs_it_keeps(spec: Path) -> None:
    problem = load(spec, root=spec.parent).plans["p"]
    assert problem.pipeline is not None
    index = problem.cluster.device_index
    placement = _placement(problem)
    split = split_of(problem, [index[placement[o.name]] for o in problem.graph.ops])
    assert split.bounds == (0, 4, 6, 10)
    # params 25600 B, its activations once 3072 B (3584 B but the model's 512 B input),
    # its largest transient 1024 B, and per micro-batch in flight (3 on stage 0 of 3) the
    # 1 KiB it sends (before: nothing) and the input (before: once, among its activations);
    # and a receive buffer per micro-batch (4) of the 1 KiB gradient of what it sends
    assert stage_bytes(problem, split, problem.pipeline, [index["gpu0"]])[0] == (
        25600 + 3072 + 1024 + 3 * (1024 + 512) + 4 * 1024) == 38400


def test_that_plan_is_no_longer_said_to_fit(spec: Path) -> None:
    problem = load(spec, root=spec.parent).plans["p"]
    plan = spec.parent / "plan.json"
    plan.write_text(json.dumps({"format": "planner.plan", "version": 1, "plan": "p",
                                "placement": _placement(problem), "recompute": ["gpu0"]}))
    result = CliRunner().invoke(app, ["simulate", str(spec), "--placement", str(plan),
                                      "--root", str(spec.parent)])
    assert result.exit_code == 3, result.output
    assert "holds 37.50 KiB" in result.stdout  # before: "holds 29.50 KiB" (+ 4 KiB), it fit
    assert "error[E401]" in result.stderr and "37.50 KiB its stages need" in result.stderr
    # nor planned: no contiguous split fits, even recomputing
    with pytest.raises(InfeasibleError) as err:
        run("auto", problem, Options(time_limit_s=1))
    assert [d.code for d in err.value.diagnostics] == ["E707"]

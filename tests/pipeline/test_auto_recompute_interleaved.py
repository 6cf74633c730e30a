"""`auto` under `interleaved` where no split fits but pipedp's split of one stage per device
does, recomputing, run as 1F1B (the fallback it runs without recomputing where that fits):
it plans that split, which `simulate` reads back as planned. Before, E707, exit 3, where
`--algo pipeilp` plans it (a 2-layer GPT on two 2.1 MiB GPUs, 4 micro-batches, 2 stages
per device: 56.5 us, pipeilp 55.5 us; this chain: 144.3 ms). Since 2026-12-07 a training
stage holds a receive buffer per micro-batch of its input and of its output's gradient
(b3ce029): the chain's large activations grew from 4 to 6 MB and its devices from 7 to
12 MB, so that the whole model on one device (13 MB) still does not fit."""

from __future__ import annotations

from pipe_support import two_device_text

import planner

# two 12 MB devices: a stage of two units keeps 6.5 MB a micro-batch and sends 500 KB on,
# and per micro-batch (4) holds receive buffers of its input and of its output's 1 MB
# gradient; 4 stages (2 per device) or 2 without recomputing hold too much (d0: 2 x 6.5
# + 4 x 1 = 17 MB), 2 with d0 recomputing fit: d0 6.5 + 2 x 0.5 (sent, 2 in flight) + 4 x 1
# = 11.5 MB, d1 6.5 + 0.5 (received) + 4 x 0.5 = 9 MB; the whole model on d0 is 13 MB
SPEC = two_device_text("12 MB", [6, 0.5, 6, 0.5],
                       "microbatches 4; schedule interleaved; stages_per_device 2")


def test_auto_plans_the_recomputing_split_of_one_stage_per_device() -> None:
    problem = planner.loads(SPEC).plan("p")
    result = planner.solve(problem, "auto", time_limit_s=1)
    assert result.feasible and result.recompute == ("d0",)
    assert result.info["chosen"] == "recomputing contiguous split"
    assert result.info["why"].endswith("its split of one stage per device fits recomputing "
                                       "activations; it runs as 1f1b: its stages are not 2 "
                                       "per device in a repeating chain")
    assert result.pipeline is not None and result.pipeline.schedule == "1f1b"
    assert result.pipeline.iteration_s == result.info["iteration_s"]
    back = planner.read_plan(problem, result.to_json())  # `simulate --placement` of its file
    assert back.feasible and back.recompute == ("d0",)
    assert back.pipeline is not None
    assert back.pipeline.iteration_s == result.pipeline.iteration_s
    assert back.pipeline.memory_bytes == result.pipeline.memory_bytes
    assert result.pipeline.memory_bytes == (11.5e6, 9e6)
    assert max(result.pipeline.memory_bytes) <= 12e6

"""`auto` under `interleaved` where no split fits but pipedp's split of one stage per device
does, recomputing, run as 1F1B (the fallback it runs without recomputing where that fits):
it plans that split, which `simulate` reads back as planned. Before, E707, exit 3, where
`--algo pipeilp` plans it (a 2-layer GPT on two 2.1 MiB GPUs, 4 micro-batches, 2 stages
per device: 56.5 us, pipeilp 55.5 us; this chain: 38.04 ms)."""

from __future__ import annotations

import planner

# two 10 MB devices: a stage keeps 4 MB per unit pair and sends 500 KB on; 4 stages (2 per
# device) or 2 without recomputing hold too much, 2 stages with d0 recomputing fit
SPEC = """\
cluster c {
  device d[0..1] { memory 10 MB }
  link d0 <-> d1 { bandwidth 1 GB/s  latency 10 us }
}
graph g {
  op f0 { time 1 ms  params 1 MB  output 4 MB }
  op f1 { time 1 ms  params 1 MB  output 500 KB }
  op f2 { time 1 ms  params 1 MB  output 4 MB }
  op f3 { time 1 ms  params 1 MB  output 500 KB }
  op b3 { time 2 ms  output 500 KB  backward_of f3 }
  op b2 { time 2 ms  output 500 KB  backward_of f2 }
  op b1 { time 2 ms  output 500 KB  backward_of f1 }
  op b0 { time 2 ms  output 500 KB  backward_of f0 }
  f0 -> f1 -> f2 -> f3 -> b3 -> b2 -> b1 -> b0
  f0 -> b0
  f1 -> b1
  f2 -> b2
}
plan p {
  graph g  cluster c  objective pipeline
  microbatches 4  schedule interleaved  stages_per_device 2
}
"""


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
    assert max(result.pipeline.memory_bytes) <= 10e6

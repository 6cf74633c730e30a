"""`pipeilp` under `data_parallel N` plans one of N identical pipelines over the first
device of each block of N and replicates each stage over its block
(`pipehybrid.identical_pipelines`). Every device of a block holds a replica, so the
block's least memory caps its stages: with the first device's memory alone, a 16 GiB
device whose replica is a 1 GiB one got the whole model, and the plan overflowed the
replica (E401, exit 3, where `hybrid` plans one that fits)."""

from __future__ import annotations

import pytest

import planner
from planner.algorithms.exact import backends

pytestmark = pytest.mark.skipif(not backends.available("highs"),
                                reason="HiGHS (highspy) is not installed")

# two blocks of a big fast device and a small one; the slow links make one stage the
# fastest layout, which a 1 GiB replica cannot hold (1.2 GiB of params)
MIXED = """\
cluster c {
  device big0   { memory 16 GiB  speed 2 }
  device small0 { memory 1 GiB }
  device big1   { memory 16 GiB  speed 2 }
  device small1 { memory 1 GiB }
  link big[*], small[*] <-> big[*], small[*] { bandwidth 0.1 GB/s  latency 10 us }
}
graph g {
  op embed      { time 3 ms  params 600 MiB  output 20 MiB }
  op embed.bwd  { time 5 ms  output 10 MiB  backward_of embed }
  op head       { time 1 ms  params 600 MiB  output 20 MiB }
  op head.bwd   { time 3 ms  output 10 MiB  backward_of head }
  embed -> head -> head.bwd -> embed.bwd
}
plan p {
  graph g
  cluster c
  objective pipeline
  microbatches 4
  schedule 1f1b
  data_parallel 2
}
"""


def test_a_block_is_capped_by_its_smallest_replica() -> None:
    problem = planner.loads(MIXED).plan("p")
    result = planner.solve(problem, "pipeilp", time_limit_s=5)
    assert result.feasible, result.breaks
    assert result.status == "feasible"
    assert result.replicas == {"big0": ["big0", "small0"], "big1": ["big1", "small1"]}
    run = result.pipeline
    assert run is not None
    caps = [d.memory_bytes for d in problem.cluster.devices]
    assert all(held <= cap for held, cap in zip(run.memory_bytes, caps, strict=True))

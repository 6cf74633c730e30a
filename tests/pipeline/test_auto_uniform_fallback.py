"""`auto` under `objective pipeline` where pipedp finds no split: it compares the uniform
split when that fits and keeps the pins, as it does beside pipedp's plan, instead of E707
and exit 3 (and a recomputing split that runs faster: below). Three layers on two
devices under `interleaved` (2 stages a device): pipedp searches stages that repeat one
chain and none fits; the uniform split, d0, d1, d0, runs
as 1F1B and fits (its last layer on d0, where it is pinned): 32 MB on d0, 27 MB and its
receive buffers, one micro-batch's 4 MB gradient of embed's output and 1 MB input of head.
d0's 32 MB do not hold all three layers (33 MB, mid's params 6 MB: at 3 MB the uniform
split needed more of d0 than they do), the one split of one stage per device that keeps the
pin and does not cross the slow link forward (with 33 MB `auto` keeps that split: 18.0 ms,
against 516.2 ms)."""

from __future__ import annotations

import pytest

import planner
from planner.errors import InfeasibleError

SPEC = """\
cluster c {
  device d0 { memory 32 MB }
  device d1 { memory 30 MB  speed 2 }
  link d0 -> d1 { bandwidth 10 GB/s }
  link d1 -> d0 { bandwidth 0.01 GB/s  latency 100 us }
}
graph g {
  op embed     { params 8 MB  time 5 ms  output 4 MB }
  op mid       { params 6 MB  time 1 ms  output 1 MB }
  op head      { params 8 MB  time 2 ms  output 2 MB }
  op head_bwd  { backward_of head   time 2 ms  output 1 MB }
  op mid_bwd   { backward_of mid    time 4 ms  output 4 MB }
  op embed_bwd { backward_of embed  time 4 ms  output 4 MB }
  embed -> mid -> head -> head_bwd -> mid_bwd -> embed_bwd
  embed -> embed_bwd
  mid -> mid_bwd
}
plan p {
  graph g
  cluster c
  objective pipeline
  microbatches 1
  schedule interleaved
  stages_per_device 2
  pin head to d0
}
"""


def test_auto_plans_where_pipedp_finds_none_the_uniform_split_among_its_candidates(
        ) -> None:
    problem = planner.loads(SPEC).plan("p")
    with pytest.raises(InfeasibleError) as pipedp:  # else the test shows no fallback
        planner.solve(problem, "pipedp")
    assert [d.code for d in pipedp.value.diagnostics] == ["E707"]
    uniform = planner.solve(problem, "uniform")
    assert uniform.feasible and uniform.pipeline is not None
    result = planner.solve(problem, "auto", time_limit_s=1)  # before: E707, exit 3
    assert result.feasible and result.pipeline is not None
    assert result.info["candidates"]["uniform"] == uniform.pipeline.iteration_s == 0.5162
    assert result.info["iteration_s"] == result.pipeline.iteration_s
    # the recomputing DP under the counts of GPipe's order (its split, d1, d0, d1, is no
    # chain of stages: it runs so) finds 111.2 ms; before, auto kept the uniform split
    assert result.info["chosen"] == "recomputing contiguous split"
    assert result.pipeline.iteration_s == pytest.approx(0.1112)
    assert result.plan.placement[problem.graph.op_index["head"]] == 0  # its pin kept

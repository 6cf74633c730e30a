"""pipeilp keeps only an answer that runs as planned: the period model's memory is the
schedule's own in-flight count, but devices that form no chain of stages (d1, d0, d1
under `interleaved`) run in GPipe's order, every micro-batch in flight, and the answer
that overflowed its small device so was returned (E401, exit 3) where a plan that fits
exists. It is now set aside, with the reason in `info["note"]`: by pipeilp's exact check,
which counts the memory of the order that runs (`split.runs`)."""

from __future__ import annotations

import pytest

import planner
from planner.algorithms.exact import backends

pytestmark = pytest.mark.skipif(not backends.available("highs"),
                                reason="HiGHS (highspy) is not installed")

# a 30 MB device and a 4 GiB one, links much faster one way than the other; three
# layers, two stages a device (the graph has too few units to interleave: W258). (20 MB
# before a recomputing stage held what it sends, 25 MB before it held the model's output
# per micro-batch in flight: highs's answer then fit as it runs)
SPEC = """\
cluster c {
  device d0 { memory 30 MB  speed 0.1 }
  device d1 { memory 4 GiB  speed 0.1 }
  link d0 -> d1 { bandwidth 0.01 GB/s }
  link d1 -> d0 { bandwidth 100 GB/s  latency 100 us }
}
graph g {
  op f0 { time 0.5 ms  output 1 MB  params 8 MB }
  op b0 { time 4 ms  output 1 MB  backward_of f0 }
  op f1 { time 1 ms  output 1 MB  params 1 MB }
  op b1 { time 10 ms  output 4 MB  backward_of f1 }
  op f2 { time 1 ms  output 2 MB  params 1 MB }
  op b2 { time 4 ms  output 1 MB  backward_of f2 }
  f0 -> f1 -> f2 -> b2 -> b1 -> b0
  f0 -> b0
  f1 -> b1
}
plan p {
  graph g
  cluster c
  objective pipeline
  microbatches 8
  schedule interleaved
  stages_per_device 2
  contention none
}
"""


def test_an_answer_that_overflows_as_it_runs_is_not_returned() -> None:
    problem = planner.loads(SPEC).plan("p")
    result = planner.solve(problem, "pipeilp", time_limit_s=5)
    assert result.feasible, result.breaks  # before: d0 held more than its memory
    assert result.status != "infeasible"
    run = result.pipeline
    assert run is not None
    caps = [d.memory_bytes for d in problem.cluster.devices]
    assert all(held <= cap for held, cap in zip(run.memory_bytes, caps, strict=True))
    # the exact check counts the memory of the order that runs (`split.runs`: GPipe's,
    # as d1, d0, d1 deadlock under 1F1B), so it sets the answer aside itself (before:
    # only the simulation did, `a pipeline that does not fit as it runs (... gpipe's order)`)
    note = result.info.get("note", "")
    assert note == ("highs's answer broke a constraint when checked exactly (its memory, "
                    "counted in gpipe's order as it runs, every micro-batch in flight: "
                    "1f1b's would deadlock); it was not used")

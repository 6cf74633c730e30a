"""`pipeilp` under `data_parallel N` plans one of N identical pipelines over the first
device of each block of N and replicates each stage over its block
(`pipeblocks.identical_pipelines`). Every device of a block holds a replica, so the
block's least memory caps its stages: with the first device's memory alone, a 16 GiB
device whose replica is a 1 GiB one got the whole model, and the plan overflowed the
replica (E401, exit 3, where `hybrid` plans one that fits).

Each replica also holds one DDP bucket, at most its stage's gradients: charging every
replica a full 25 MiB bucket made pipeilp "prove" (E708, exit 3) that nothing fits where
`hybrid` plans two identical pipelines that do. The bucket charged is now every gradient
at most, and where nothing fits so, the model without a bucket (a relaxation) decides: its
proof stands, its plan is kept where it fits, else E709 (exit 6: no proof)."""

from __future__ import annotations

import pytest

import planner
from planner.algorithms.exact import backends
from planner.errors import InfeasibleError, SearchLimitError

pytestmark = pytest.mark.skipif(not backends.available("highs"),
                                reason="HiGHS (highspy) is not installed")

PLAN = """\
plan p {
  graph g
  cluster c
  objective pipeline
  microbatches 4
  schedule 1f1b
  data_parallel 2
}
"""

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
""" + PLAN


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


# four alike devices of MEM MB, two layers of 5 MB params: 2 identical pipelines of 2 stages
ALIKE = """\
cluster c {
  device gpu[0..3] { memory MEM MB }
  link gpu[*] <-> gpu[*] { bandwidth 10 GB/s  latency 10 us }
}
graph g {
  op l0     { params 5 MB  time 2 ms  output 1 MB }
  op l1     { params 5 MB  time 2 ms  output 1 MB }
  op l1.bwd { backward_of l1  time 4 ms  output 1 MB }
  op l0.bwd { backward_of l0  time 4 ms  output 1 MB }
  l0 -> l1 -> l1.bwd -> l0.bwd
}
""" + PLAN


def _alike(mb: int) -> planner.Problem:
    return planner.loads(ALIKE.replace("MEM", str(mb))).plan("p")


def test_no_false_proof_where_identical_pipelines_fit() -> None:
    problem = _alike(20)
    assert planner.solve(problem, "hybrid").feasible  # two identical pipelines fit
    result = planner.solve(problem, "pipeilp", time_limit_s=5)  # before: E707, E708
    assert result.feasible and (result.status, result.period_gap) == ("optimal", 0.0)
    assert result.replicas == {"gpu0": ["gpu0", "gpu1"], "gpu2": ["gpu2", "gpu3"]}


@pytest.mark.parametrize(("mb", "error", "code"), [(10, SearchLimitError, "E709"),
                                                   (4, InfeasibleError, "E301")])
def test_a_proof_only_where_the_relaxation_gives_one(mb: int, error: type, code: str) -> None:
    """At 10 MB a device no layout fits with its buckets, but one fits without them: no
    proof (E709, exit 6). At 4 MB none fits even without: the proof stands (E301, a 5 MB
    layer no 4 MB device holds under the pipeline's own rule, `planner.stagefacts`)."""
    with pytest.raises(error) as caught:
        planner.solve(_alike(mb), "pipeilp", time_limit_s=5)
    assert [d.code for d in caught.value.diagnostics][-1] == code
    assert caught.value.exit_code == (6 if code == "E709" else 3)

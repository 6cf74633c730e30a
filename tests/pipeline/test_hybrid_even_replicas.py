"""`hybrid` under `data_parallel auto` on alike devices also searches the DP's layouts of
each even replica count (`pipehybrid.even_replicas`: r replicas a stage, r dividing the
devices), as a group of its own whose best has its cuts moved too: the DP's best layout per
device count is the least DP cost's, which need not simulate fastest. Four layers (1 ms
forward, 2 ms backward) on four alike GPUs, 8 micro-batches, 1F1B."""

from __future__ import annotations

import pytest

from planner import loads
from planner.algorithms import Options, pipehybrid, run
from planner.pipeline import schedule

SPEC = """graph g {
  op f0 { time 1.0 ms  params PARAMS  output OUTPUT }
  op f1 { time 1.0 ms  params PARAMS  output OUTPUT }
  op f2 { time 1.0 ms  params PARAMS  output OUTPUT }
  op f3 { time 1.0 ms  params PARAMS  output OUTPUT }
  op b3 { time 2.0 ms  params PARAMS  output OUTPUT  backward_of f3 }
  op b2 { time 2.0 ms  params PARAMS  output OUTPUT  backward_of f2 }
  op b1 { time 2.0 ms  params PARAMS  output OUTPUT  backward_of f1 }
  op b0 { time 2.0 ms  params PARAMS  output OUTPUT  backward_of f0 }
  f0 -> f1 -> f2 -> f3 -> b3 -> b2 -> b1 -> b0
  f0 -> b0
  f1 -> b1
  f2 -> b2
}
cluster c {
  device gpu[0..3] { memory 16 GiB }
  link gpu[*] <-> gpu[*] { bandwidth BANDWIDTH  latency 0 us }
}
plan p { graph g  cluster c  objective pipeline  microbatches 8  schedule 1f1b
  data_parallel auto }
"""


def _spec(params: str, output: str, bandwidth: str) -> str:
    return SPEC.replace("PARAMS", params).replace("OUTPUT", output).replace("BANDWIDTH",
                                                                            bandwidth)


@pytest.mark.parametrize(("params", "output", "bandwidth", "before", "now"), [
    # before: one stage on 4 replicas (its all-reduce of 400 MB of gradients)
    ("50 MB", "10 MB", "10 GB/s", 0.048, 0.042),
    # before: a pipeline of 4 stages
    ("5 MB", "1 MB", "1 GB/s", 0.049, 0.044),
])
def test_two_stages_of_two_replicas_are_found(params: str, output: str, bandwidth: str,
                                              before: float, now: float) -> None:
    p = loads(_spec(params, output, bandwidth)).plan("p")
    assert p.pipeline is not None
    found = run("hybrid", p, Options())
    assert found.info["layout"] == [2, 2]
    assert found.info["iteration_s"] == pytest.approx(now)
    assert now < before
    ran = schedule.run_planned(p, found.plan.placement, p.pipeline, found.info)
    assert ran.iteration_s == pytest.approx(now)
    assert run("auto", p, Options(time_limit_s=5)).info["iteration_s"] <= now + 1e-12
    assert pipehybrid.even_replicas(p, p.pipeline) == [2, 4]


def test_no_even_replicas_where_the_data_parallel_count_is_fixed_or_devices_differ() -> None:
    fixed = loads(_spec("5 MB", "1 MB", "1 GB/s")
                  .replace("data_parallel auto", "data_parallel 2")).plan("p")
    assert fixed.pipeline is not None
    assert pipehybrid.even_replicas(fixed, fixed.pipeline) == []
    mixed = loads(_spec("5 MB", "1 MB", "1 GB/s")
                  .replace("device gpu[0..3] { memory 16 GiB }",
                           "device gpu[0..2] { memory 16 GiB }\n  device gpu3 { memory 8 GiB }")
                  ).plan("p")
    assert mixed.pipeline is not None
    assert pipehybrid.even_replicas(mixed, mixed.pipeline) == []

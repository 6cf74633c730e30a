"""`hybrid` under pins tries the cluster's device order rotated to start at each pinned
device and just after its block (`pipehybrid.device_orders`): the stages take consecutive
blocks of an order, and the cluster's alone left a pinned layer's block where the pin
forced a degenerate layout. The MLP of docs/examples (imported for training) on four GPUs,
`data_parallel 2`, 4 micro-batches, 1F1B."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner import load
from planner.algorithms import Options, pipehybrid, run
from planner.model import Problem
from planner.pipeline import schedule

ROOT = Path(__file__).resolve().parents[2]
SPEC = """import "mlp_train.plan"
cluster four {
  device gpu[0..3] { kind gpu  memory 64 MiB  flops 15.7 TFLOPS }
  link gpu[*] <-> gpu[*] { bandwidth 25 GB/s  latency 2 us }
}
plan p { graph mlp  cluster four  objective pipeline  microbatches 4  schedule 1f1b
  data_parallel 2  PIN }
"""


def _problem(tmp_path: Path, pin: str) -> Problem:
    (tmp_path / "mlp_train.plan").write_text(
        (ROOT / "docs" / "examples" / "mlp_train.plan").read_text())
    (tmp_path / "p.plan").write_text(SPEC.replace("PIN", pin))
    return load(tmp_path / "p.plan", root=tmp_path).plans["p"]


@pytest.mark.parametrize(("pin", "before"), [
    # the first layer on gpu2: before, the input placeholder alone took gpu0 and gpu1
    ('pin "0" to gpu2', 301.9e-6),
    # the last layer on gpu0: before, the whole model on gpu0 and gpu1
    ('pin "4" to gpu0', 299.6e-6),
])
def test_a_pinned_block_may_come_first_or_last(tmp_path: Path, pin: str, before: float) -> None:
    p = _problem(tmp_path, pin)
    assert p.pipeline is not None
    found = run("hybrid", p, Options(time_limit_s=5))
    ran = schedule.run_planned(p, found.plan.placement, p.pipeline, found.info)
    assert found.info["iteration_s"] == pytest.approx(254.4355e-6, rel=1e-6)
    assert found.info["iteration_s"] < before
    assert ran.iteration_s == found.info["iteration_s"]
    # gpu2 and gpu3 run the first stage, gpu0 and gpu1 the second, each pair replicas
    assert found.info["replicas"] == {"gpu2": ["gpu2", "gpu3"], "gpu0": ["gpu0", "gpu1"]}
    names = [d.name for d in p.cluster.devices]
    first = [o for o, d in zip(p.graph.ops, found.plan.placement, strict=True)
             if names[d] == "gpu2"]
    assert "input_1" in {o.name for o in first}
    assert run("auto", p, Options(time_limit_s=5)).info["iteration_s"] <= found.info[
        "iteration_s"]


def test_the_orders_tried(tmp_path: Path) -> None:
    p = _problem(tmp_path, 'pin "0" to gpu2')
    assert p.pipeline is not None
    # the cluster's, then from gpu2 and from just after its block of 2 (gpu0: the cluster's)
    assert pipehybrid.device_orders(p, p.pipeline) == [(0, 1, 2, 3), (2, 3, 0, 1)]
    free = _problem(tmp_path, "")
    assert free.pipeline is not None
    assert pipehybrid.device_orders(free, free.pipeline) == [(0, 1, 2, 3)]

"""A zero-time op keeps its place in the plan's order (issue 12, item 3)."""

from __future__ import annotations

import pytest

import planner
from planner.algorithms import run
from planner.simulate import simulate

# both list-scheduling engines meet these hand-derived cases (`list_engine`, conftest.py)
pytestmark = pytest.mark.usefixtures("list_engine")

SPEC = """
cluster c {
  device gpu[0..1] { memory 1 GB }
  link gpu[*] <-> gpu[*] { bandwidth 1 GB/s }
}
graph g {
  op y { time 25 ms }
  op z { time 0 ms  output 1 MB }
  op c { time 30 ms }
  z -> c
}
plan p { graph g  cluster c  contention none  pin y, z to gpu0  pin c to gpu1 }
"""


@pytest.mark.parametrize("algorithm", ["msct", "heft"])
def test_a_zero_time_op_run_first_is_not_queued_behind_a_long_one(algorithm: str) -> None:
    # By upward rank z (0 ms, then 1 ms of transfer and c's 30 ms) goes before y (25 ms):
    # both start at 0 on gpu0, z first. Ordered by start then topological position (y is
    # first in the graph), the plan queued z behind y: 25 + 1 + 30 = 56 ms instead of
    # z at 0, its 1 MB over 1 GB/s (1 ms), c from 1 to 31 ms.
    problem = planner.loads(SPEC).plan()
    sol = run(algorithm, problem)
    assert sol.plan.order is not None and sol.plan.order[0] == (1, 0)  # z, then y
    assert simulate(problem, sol.plan).makespan_s == pytest.approx(31e-3)
    assert sol.info["estimate_s"] == pytest.approx(31e-3)

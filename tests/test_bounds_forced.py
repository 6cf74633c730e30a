"""The forced-colocation bound (`planner.bounds.forced`, issue 28 item 4): hand-derived
cases (never above an optimum CP-SAT proves: `test_bounds_optima.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

import planner
from planner.algorithms import Options, run
from planner.bounds import lower_bound
from planner.bounds.forced import jackson_preemptive
from planner.simulate import simulate

MS = 1e-3
SPECS = Path(__file__).resolve().parents[1] / "specs"
FORK = """cluster c {
  device gpu[0..1] { memory %s }
  link gpu0 <-> gpu1 { bandwidth 1 GB/s }
}
graph g {
  op a { time 2 ms  params 600 MB  output 1 GB }
  op b { time 2 ms  params 600 MB }
  op c { time 2 ms }
  a -> b  a -> c
}
plan p { graph g  cluster c  contention none }
"""


def test_a_tensor_too_large_to_cross_keeps_a_fork_on_one_device() -> None:
    # b and c could run side by side (4 ms), but a's 1 GB takes 1 s to cross: the three
    # run one after another on one device, 6 ms, which the paths and the load miss
    b = lower_bound(planner.loads(FORK % "4 GiB").plan())
    assert b.forced_colocation_s == pytest.approx(6 * MS)
    assert b.makespan_s == b.forced_colocation_s
    assert max(b.critical_path_s, b.work_s, b.load_s, b.arrival_path_s) == pytest.approx(4 * MS)


def test_when_the_glued_ops_do_not_fit_one_device_the_crossing_is_paid() -> None:
    # a and b hold 1.2 GB of weights: no 1 GiB device holds both (a's output too), so some
    # edge crosses; the bound is then the cheapest path through a crossing: 1002+ ms
    b = lower_bound(planner.loads(FORK % "1 GiB").plan())
    assert b.forced_colocation_s >= 1.0


@pytest.mark.parametrize(("jobs", "value"), [
    # one job: release + length + tail
    ([(2.0, 3.0, 1.0)], 6.0),
    # the whole set gives 0 + 8.1 + 0, the pair a, c gives 0 + 8 + 6 = 14: Jackson finds it
    ([(0.0, 4.0, 6.0), (2.0, 4.0, 6.0), (0.0, 0.1, 0.0)], 14.0),
    # preemption: b (tail 9) arrives at 1 and interrupts a (tail 0): b ends at 3, a at 5
    ([(0.0, 3.0, 0.0), (1.0, 2.0, 9.0)], 12.0),
    # an idle gap before a late release
    ([(0.0, 1.0, 0.0), (5.0, 1.0, 1.0)], 7.0),
])
def test_jacksons_preemptive_schedule(jobs: list[tuple[float, float, float]],
                                      value: float) -> None:
    assert jackson_preemptive(jobs) == pytest.approx(value)


def test_resnet50_on_small4_gets_the_bound_of_its_glued_chain() -> None:
    # ResNet-50's glued run needs two devices' memory; Jackson's schedule of the glued ops
    # (heads and tails from the rest of the graph) lifts the bound from 79.51 ms (the run's
    # earliest head + serial time + least tail) to 80.41 ms
    problem = planner.load(SPECS / "resnet.plan").plan("resnet50_small4")
    b = lower_bound(problem)
    assert b.forced_colocation_s >= 80.4 * MS
    assert b.makespan_s == b.forced_colocation_s
    # and no plan beats it: the best heuristic plan is above
    plan = run("metf", problem, Options()).plan
    assert simulate(problem, plan).makespan_s >= b.makespan_s


@pytest.mark.parametrize("devices", [63, 64, 300])
def test_a_transfer_pins_force_counts_on_clusters_of_64_devices_and_more(devices: int) -> None:
    """The constrained path's forced transfers kept each op's allowed devices as an int64
    bit mask: from 64 devices every solve, simulate and compare row ended in E999
    (OverflowError) (helper). a on gpu0 and b on the last GPU: 1 + 1 (1 MB at 1 GB/s) + 1 ms."""
    last = devices - 1
    text = (f"cluster c {{ device gpu[0..{last}] {{ memory 1 GiB }}\n"
            f"  link gpu[*] <-> gpu[*] {{ bandwidth 1 GB/s }} }}\n"
            "graph g { op a { time 1 ms  output 1 MB }  op b { time 1 ms }  a -> b }\n"
            f"plan p {{ graph g  cluster c  contention none  pin a to gpu0  pin b to gpu{last} }}")
    problem = planner.loads(text).plan()
    bounds = lower_bound(problem)
    assert bounds.constrained_path_s == pytest.approx(3 * MS)
    solution = run("heft", problem, Options())
    assert simulate(problem, solution.plan).makespan_s == pytest.approx(bounds.makespan_s)

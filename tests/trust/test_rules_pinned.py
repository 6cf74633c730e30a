"""Rules pinned by hand-derived cases, in every engine that implements them (issue 28, item
7). Each case fails on a one-character change to its rule that the rest of the suite let
through, or caught only by comparing an engine with its twin:

- device contention: a transfer needs the receiver's channel as well as the sender's (two
  senders, one receiver);
- an op that exactly fills a gap is inserted into it (HEFT, CPOP);
- an op that exactly fills a device's memory fits, in both m-ETF engines;
- the arrival bound never lets a colocated edge cross, in both bound engines.
"""

from __future__ import annotations

import dataclasses

import pytest

import planner
from planner import bounds
from planner.algorithms import Options, run
from planner.algorithms.listsched import Instance, etf
from planner.algorithms.listsched.insertion import _device_gaps
from planner.algorithms.listsched.placer import Placer
from planner.fastsim import Evaluator, numba_available
from planner.plan import Plan
from planner.simulate import simulate

MS = 1e-3
RECEIVER = """cluster c {
  device d[0..2] { memory 1 GB }
  link d[0..2] <-> d[0..2] { bandwidth 1 GB/s }
}
graph g {
  op a { time 1 ms  output 2 MB }
  op b { time 1 ms  output 2 MB }
  op z { time 1 ms }
  a -> z
  b -> z
}
plan p { graph g  cluster c  contention %s }
"""
BACKENDS = ["reference", *(["numba"] if numba_available() else [])]


@pytest.mark.parametrize(("contention", "makespan_ms"), [("none", 4), ("link", 4),
                                                          ("device", 6)])
def test_two_senders_and_one_receiver(contention: str, makespan_ms: float) -> None:
    # a on d0 and b on d1 run [0, 1]; both 2 MB tensors (2 ms) go to z on d2.
    # none, link: two links, both [1, 3]; z [3, 4].
    # device: both need d2's channel: a's [1, 3] (first in topological order), b's [3, 5];
    #   z [5, 6]. (Reserving the sender's channel alone gave 4.)
    problem = planner.loads(RECEIVER % contention).plan()
    plan = Plan((0, 1, 2))
    assert simulate(problem, plan).makespan_s == pytest.approx(makespan_ms * MS)
    for backend in BACKENDS:
        ev = Evaluator(problem, backend=backend)  # type: ignore[arg-type]
        assert ev.makespan((0, 1, 2)) == pytest.approx(makespan_ms * MS), backend


GAP = """cluster c {
  device d0 { memory 1 GB }
}
graph g {
  op a { time 1 ms }
  op b { time 1 ms }
  op x { time 2 ms }
}
plan p { graph g  cluster c }
"""


def test_an_op_exactly_as_long_as_a_gap_goes_into_it() -> None:
    inst = Instance(planner.loads(GAP).plan())
    placer = Placer(inst)
    start, end, vend = [0.0] * 3, [0.0] * 3, [0.0] * 3
    slot, occupy = _device_gaps(inst, placer, start, end, vend)
    occupy(0, 0, 0.0, -1)        # a [0, 1]
    occupy(1, 0, 3 * MS, -1)     # b [3, 4]: a gap [1, 3] of exactly x's 2 ms
    assert slot(2, 0) == (pytest.approx(1 * MS), 0)  # into the gap, not after b


EXACT = """cluster c {
  device d0 { memory %d B }
}
graph g {
  op a { time 1 ms  params 300 B  output 200 B }
  op b { time 1 ms  params 100 B  output 50 B  temp 70 B }
  a -> b
}
plan p { graph g  cluster c }
"""


@pytest.mark.parametrize("engine", ["reference", "kernel"])
def test_an_op_that_exactly_fills_a_device_fits(engine: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(etf, "ENGINE", engine)
    need = 300 + 200 + 100 + 50 + 70  # params and outputs, and the largest temp
    problem = planner.loads(EXACT % need).plan()
    sol = run("metf", problem, Options())
    assert sol.status != "fallback" and sol.plan.placement == (0, 0)
    assert simulate(problem, sol.plan).feasible
    with pytest.raises(planner.InfeasibleError):  # one byte less: it does not
        run("metf", planner.loads(EXACT % (need - 1)).plan(), Options())


COLOCATED = """cluster c {
  device d[0..1] { memory 1 GB }
  link d0 <-> d1 { bandwidth 1 GB/s }
}
graph g {
  op a { time 1 ms  output 10 MB }
  op x { time 1 ms  output 10 MB }
  op b { time 1 ms }
  op c { time 1 ms }
  a -> b  x -> c  b -> c { bytes 0 B }
  colocate b, c
}
plan p { graph g  cluster c  contention none  pin a to d0  pin x to d1 }
"""


@pytest.mark.parametrize("engine", ["reference", "kernel"])
def test_the_arrival_bound_keeps_a_colocated_edge_on_one_device(
        engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # b and c share a device. On d0: b [1, 2], c waits for x's 10 ms tensor: ends at 12.
    # On d1: b waits for a's tensor, [11, 12], c [12, 13]. So 12 ms; a bound that let
    # b -> c cross would put b on d0 and c on d1 and say 3 ms.
    monkeypatch.setattr(bounds, "ENGINE", engine)
    problem = planner.loads(COLOCATED).plan()
    b = bounds.lower_bound(dataclasses.replace(problem))
    assert b.arrival_path_s == pytest.approx(12 * MS)
    assert run("cpsat", problem, Options()).plan is not None
    assert simulate(problem, Plan((0, 1, 0, 0))).makespan_s == pytest.approx(12 * MS)

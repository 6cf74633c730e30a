"""The ramp bound (`planner.bounds.ramp`): hand-derived cases, never above the Standard
Task Graph Set's published optima, and what it raises on a shipped spec (never above an
optimum CP-SAT proves: `test_bounds_optima.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from exact.instances import stg_optima, stg_path, stg_problem

import planner
from planner.algorithms import Options, run
from planner.bounds import lower_bound
from planner.bounds.ramp import ramp_bound
from planner.simulate import simulate

MS = 1e-3
ROOT = Path(__file__).resolve().parents[1]
STG = ROOT.parent / "shared" / "datasets" / "stg"
FORK = """cluster c {
  device gpu[0..1] { memory 1 GB }
  link gpu0 <-> gpu1 { bandwidth 1 TB/s }
}
graph g {
  op s { time 1 ms }
  op x1 { time 1 ms }  op x2 { time 1 ms }  op x3 { time 1 ms }  op x4 { time 1 ms }
  op t { time 1 ms }
  s -> x1 -> t  s -> x2 -> t  s -> x3 -> t  s -> x4 -> t
}
plan p { graph g  cluster c  contention none }
"""


def _others(b: planner.Bounds) -> float:
    return max(b.critical_path_s, b.work_s, b.constrained_path_s, b.load_s,
               b.arrival_path_s, b.memory_path_s, b.forced_colocation_s)


def test_a_fork_idles_a_device_while_it_fills_and_drains() -> None:
    # the path is 3 ms and the work 6 ms on 2 devices, 3 ms; but nothing runs beside `s`
    # before 1 ms, so the 5 ms of work from then on need 2.5 ms more: 3.5 ms (and the same
    # mirrored, with `t`). The best plan takes 4 ms
    problem = planner.loads(FORK).plan()
    b = lower_bound(problem)
    assert _others(b) == pytest.approx(3 * MS)
    assert b.ramp_s == pytest.approx(3.5 * MS)
    assert b.makespan_s == b.ramp_s
    plan = run("heft", problem, Options()).plan
    assert simulate(problem, plan).makespan_s == pytest.approx(4 * MS)


@pytest.mark.parametrize(("head", "tail", "w", "m", "value"), [
    # no edges: the work, or the longest op
    ([0.0, 0.0], [0.0, 0.0], [4.0, 2.0], 2, 4.0),
    ([0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0], 2, 1.5),
    # a chain: its length, whatever the devices
    ([0.0, 1.0, 3.0], [5.0, 3.0, 0.0], [1.0, 2.0, 3.0], 4, 6.0),
    # two ops wait 1 behind a third: at a = 1, the 4 units left over 2 devices
    ([0.0, 1.0, 1.0], [2.0, 0.0, 0.0], [1.0, 2.0, 2.0], 2, 3.0),
    # mirrored: the tail side gives it
    ([2.0, 0.0, 0.0], [0.0, 1.0, 1.0], [1.0, 2.0, 2.0], 2, 3.0),
])
def test_ramp_values(head: list[float], tail: list[float], w: list[float], m: int,
                     value: float) -> None:
    assert ramp_bound(head, tail, w, m) == pytest.approx(value)


@pytest.fixture(scope="module")
def optima() -> dict[tuple[str, int], float]:
    if not (STG / "optimal").is_dir():
        pytest.skip(f"STG dataset not found at {STG.resolve()} (../shared is not in a "
                    "user's clone)")
    return stg_optima(STG)


def test_never_above_the_stg_optima(optima: dict[tuple[str, int], float]) -> None:
    # every graph of the copy with its proven optimum, on 2 to 16 identical processors
    checked = raised = reached = 0
    for (graph, p), optimum in sorted(optima.items()):
        path = stg_path(STG, graph)
        if path is None:
            continue
        b = lower_bound(stg_problem(path, p))
        checked += 1
        assert b.makespan_s <= optimum * (1 + 1e-12), (graph, p, b, optimum)
        raised += b.ramp_s > _others(b) * (1 + 1e-12)
        reached += _others(b) < optimum and b.makespan_s >= optimum * (1 - 1e-12)
    # the copy has 160 pairs: the ramp raised 17 of them, 6 to their optimum
    assert checked >= 100 and raised >= 10 and reached >= 5, (checked, raised, reached)


def test_rand0075_on_two_processors_meets_its_optimum(
        optima: dict[tuple[str, int], float]) -> None:
    # an STG graph whose optimum (315) is far above the path and the work (297)
    path = stg_path(STG, "50/rand0075.stg")
    if path is None or ("50/rand0075.stg", 2) not in optima:
        pytest.skip("50/rand0075.stg with P=2 is not in this copy of the dataset")
    b = lower_bound(stg_problem(path, 2))
    assert _others(b) == 297
    assert b.makespan_s == b.ramp_s == optima[("50/rand0075.stg", 2)] == 315


def test_gnmt8_on_small4_waits_for_its_wavefront() -> None:
    # the unrolled LSTM's wavefront reaches all four devices only after a while: the bound
    # rises from the work (156.41 ms) to 168.65 ms, and the best plans stay above it
    problem = planner.load(ROOT / "specs" / "gnmt.plan").plan("gnmt8_small4")
    b = lower_bound(problem)
    assert _others(b) == pytest.approx(156.41 * MS, abs=0.01 * MS)
    assert b.ramp_s == pytest.approx(168.65 * MS, abs=0.01 * MS)
    assert b.makespan_s == b.ramp_s
    plan = run("heft", problem, Options()).plan
    assert simulate(problem, plan).makespan_s >= b.makespan_s

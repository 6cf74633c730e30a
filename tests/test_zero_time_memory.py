"""Under `memory liveness` a zero-time op holds its temp, its output and its inputs at its
instant, in the simulator (and its compiled twin), in the bounds and so in every
algorithm's verdict.

Before: a buffer allocated and freed at one instant never counted, so a zero-time op's
`temp 100 MB` (and its inputs beside its output) vanished from the peak: on one 150 MB
device whose plan holds 162 MB while `z` runs, `simulate` and all twelve algorithms said
feasible at a peak of 61 MB, and `check` proved nothing of an op whose temp alone is
200 MB."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import planner
from planner import fastsim
from planner.cli import app
from planner.model import Cluster, Device, Edge, Graph, Link, Op, Problem
from planner.plan import Plan
from planner.simulate import simulate

MB = 1_000_000
#: `a`'s output lives until `b`, past `z`, whose temp takes the device over its cap
CHAIN = """cluster c {{ device d0 {{ memory 150 MB }} }}
graph g {{
  op a {{ time 1 ms  output 60 MB }}
  op s {{ time 1 ms  output 1 MB }}
  op z {{ time 0 ms  temp {temp}  output 1 MB }}
  op b {{ time 1 ms }}
  a -> s -> z -> b
  a -> b
}}
plan p {{ graph g  cluster c  memory liveness }}
"""


def _problem(text: str) -> Problem:
    return planner.loads(text).plan("p")


def _peaks(problem: Problem, place: list[int]) -> list[int]:
    """The reference's peaks, checked against the compiled twin where it is there."""
    ref = simulate(problem, Plan(tuple(place)))
    if fastsim.numba_available():
        fast = fastsim.Evaluator(problem, backend="numba").run(np.array(place, np.int64))
        assert fast.memory_peak_bytes.tolist() == list(ref.memory_peak_bytes)
    return list(ref.memory_peak_bytes)


def test_simulate_counts_the_temp_of_a_zero_time_op_beside_what_lives_then() -> None:
    problem = _problem(CHAIN.format(temp="100 MB"))
    result = simulate(problem, Plan((0, 0, 0, 0)))
    # while z runs: a's output (until b) 60 + s's output (z reads it) 1 + z's temp 100 and
    # output 1
    assert result.memory_peak_bytes == (162 * MB,)
    assert not result.feasible
    (v,) = result.violations
    assert v.kind == "memory" and v.ops == (0, 1, 2)  # a, s, z: not b, which starts after
    assert result.memory_peak_bytes[0] <= result.memory_static_bytes[0]
    assert _peaks(problem, [0, 0, 0, 0]) == [162 * MB]


ALGOS = ["auto", "msct", "metf", "mtopo", "heft", "cpop", "search", "single", "roundrobin",
         "random", "cpsat"]


@pytest.mark.parametrize("algo", ALGOS)
def test_no_algorithm_calls_a_plan_over_its_cap_feasible(algo: str) -> None:
    """Every order of the chain holds 162 MB on the 150 MB device (no proof sees it)."""
    with pytest.raises(planner.InfeasibleError) as err:
        planner.solve(_problem(CHAIN.format(temp="100 MB")), algo)
    assert err.value.diagnostics[0].code in {"E704", "E706", "E818", "E819"}


def test_check_proves_a_zero_time_op_larger_than_its_device(tmp_path: Path) -> None:
    spec = tmp_path / "s.plan"
    spec.write_text(CHAIN.format(temp="200 MB"))
    result = CliRunner().invoke(app, ["check", str(spec)])
    assert result.exit_code == 1
    assert "error[E301]: op `z` needs at least" in result.output


def _op(name: str, time_s: float, output: int = 0, temp: int = 0) -> Op:
    return Op(name, time_s=time_s, output_bytes=output * MB, temp_bytes=temp * MB)


def _one_device(ops: tuple[Op, ...], edges: tuple[tuple[int, int], ...]) -> Problem:
    graph = Graph("g", ops, tuple(Edge(a, b, ops[a].output_bytes) for a, b in edges))
    return Problem("p", graph, Cluster("c", (Device("d0", 10**12),), ()), "liveness",
                   "link")


def test_a_zero_time_op_holds_its_input_and_its_output_together() -> None:
    """x -> r -> y, r taking no time: while r runs, x's output (its input) and r's output
    are both held: 200 MB (before: 100 MB, x's output freed as r's is allocated)."""
    problem = _one_device((_op("x", 1e-3, 100), _op("r", 0.0, 100), _op("y", 1e-3)),
                          ((0, 1), (1, 2)))
    assert _peaks(problem, [0, 0, 0]) == [200 * MB]


def test_the_temp_of_the_op_after_a_zero_time_one_is_not_counted_with_its_temp() -> None:
    """a (temp 50) -> z (zero time, temp 30) -> b (temp 70), outputs 10 MB: during a 60,
    during z 10 + 10 + 30 = 50, during b 10 + 70 + 10 = 90: the peak is 90, not z's temp
    on top of b's buffers (120)."""
    problem = _one_device((_op("a", 1e-3, 10, 50), _op("z", 0.0, 10, 30),
                           _op("b", 1e-3, 10, 70)), ((0, 1), (1, 2)))
    assert _peaks(problem, [0, 0, 0]) == [90 * MB]


def test_a_received_copy_read_by_a_zero_time_op_counts_at_its_instant() -> None:
    """x on d0 sends 100 MB to z (zero time, temp 50 MB) on d1: while z runs d1 holds
    the copy and the temp (before: 0 B, the copy freed as z ends)."""
    ops = (_op("x", 1e-3, 100), _op("z", 0.0, 0, 50))
    graph = Graph("g", ops, (Edge(0, 1, 100 * MB),))
    devices = (Device("d0", 10**12), Device("d1", 10**12))
    links = (Link(0, 1, 1e9, 0.0), Link(1, 0, 1e9, 0.0))
    problem = Problem("p", graph, Cluster("c", devices, links), "liveness", "link")
    assert _peaks(problem, [0, 1]) == [100 * MB, 150 * MB]


@pytest.mark.parametrize("seed", range(4))
def test_the_static_figure_still_bounds_the_liveness_peak(seed: int) -> None:
    """Static accounting bounds the liveness peak from above (the exact solvers' and the
    heuristics' memory checks rely on it), zero-time ops and all."""
    rng = random.Random(seed)
    for _ in range(40):
        n, m = rng.randint(2, 12), rng.randint(1, 3)
        ops = tuple(_op(f"o{i}", rng.choice([0.0, 0.0, 1e-3, 2e-3]), rng.choice([0, 1, 5]),
                        rng.choice([0, 2, 7])) for i in range(n))
        edges = tuple(Edge(a, b, rng.choice([0, MB, 3 * MB]))
                      for a in range(n) for b in range(a + 1, n) if rng.random() < 0.3)
        devices = tuple(Device(f"d{d}", 10**12) for d in range(m))
        links = tuple(Link(a, b, 1e9, 0.0) for a in range(m) for b in range(m) if a != b)
        problem = Problem("p", Graph("g", ops, edges), Cluster("c", devices, links),
                          "liveness", rng.choice(["none", "link", "device"]))
        place = [rng.randrange(m) for _ in range(n)]
        live = _peaks(problem, place)
        static = simulate(dataclasses.replace(problem, memory_model="static"),
                          Plan(tuple(place))).memory_peak_bytes
        assert all(a <= b for a, b in zip(live, static, strict=True)), (live, static)

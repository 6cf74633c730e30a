"""cost.py formulas and incremental memory; plan.py JSON form and placement files."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import planner
from planner.cost import StaticMemoryTracker, compute_time, costs, static_memory
from planner.errors import SpecError
from planner.model import Device, Edge, Graph, Op
from planner.plan import Plan, load_plan

SPEC = """
cluster c {
  device gpu[0..1] { kind v100 memory 1 GiB flops 10 TFLOPS }
  device cpu0 { kind cpu memory 8 GiB flops 1 TFLOPS speed 0.5 }
  link gpu0 <-> gpu1 { bandwidth 10 GB/s latency 5 us }
  link cpu0 <-> gpu[*] { bandwidth 1 GB/s latency 10 us }
}
graph g {
  op a { time 1 ms output 1 MB }
  op b { flops 20 GFLOP params 2 MB output 3 MB temp 4 MB }
  op c { time 2 ms time[cpu] 9 ms output 5 MB temp 1 MB }
  op d { time 1 ms }
  a -> b -> d
  a -> c
  c -> d { bytes 7 MB }
}
plan p { graph g cluster c }
"""


@pytest.fixture(scope="module")
def problem() -> planner.Problem:
    return planner.loads(SPEC).plan()


def test_compute_time_rules(problem: planner.Problem) -> None:
    g, devs = problem.graph, problem.cluster.devices
    a, b, c = (g.ops[g.op_index[n]] for n in "abc")
    assert compute_time(a, devs[0]) == pytest.approx(1e-3)
    assert compute_time(a, devs[2]) == pytest.approx(1e-3 / 0.5)  # time / speed
    assert compute_time(b, devs[0]) == pytest.approx(20e9 / 10e12)  # flops / rate
    assert compute_time(b, devs[2]) == pytest.approx(20e9 / 1e12)  # speed ignores flops
    assert compute_time(c, devs[2]) == pytest.approx(9e-3)  # time[kind] wins
    assert compute_time(Op("x", flops=1.0), Device("d", 1)) == float("inf")


def test_transfer_time(problem: planner.Problem) -> None:
    k = costs(problem)
    assert k.transfer_time(1e6, 0, 1) == pytest.approx(5e-6 + 1e6 / 10e9)
    assert k.transfer_time(1e6, 2, 0) == pytest.approx(10e-6 + 1e6 / 1e9)
    assert k.transfer_time(1e6, 1, 1) == 0.0


def test_static_memory_counts_each_received_tensor_once(problem: planner.Problem) -> None:
    # a on gpu0; b, c, d on gpu1: gpu1 receives a's tensor once (1 MB, both edges 1 MB).
    # gpu0: a.output 1 MB.  gpu1: b 2+3 MB, c 5 MB, d 0, received 1 MB, max temp 4 MB = 15 MB.
    mem = static_memory(problem.graph, [0, 1, 1, 1], 3)
    assert mem == [1_000_000, 15_000_000, 0]
    # d alone on gpu0 with a: receives b (3 MB) and c (edge bytes 7 MB): 1 + 3 + 7 = 11 MB.
    mem = static_memory(problem.graph, [0, 1, 1, 0], 3)
    assert mem[0] == 11_000_000
    assert mem[1] == 2_000_000 + 3_000_000 + 5_000_000 + 1_000_000 + 4_000_000


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=2, max_value=30),
       st.integers(min_value=1, max_value=4))
def test_incremental_tracker_matches_static_memory(seed: int, n: int, n_dev: int) -> None:
    rng = random.Random(seed)
    ops = tuple(Op(f"o{i}", time_s=1.0, params_bytes=rng.randrange(5),
                   output_bytes=rng.randrange(9), temp_bytes=rng.randrange(7)) for i in range(n))
    edges = tuple({(i, j): Edge(i, j, rng.randrange(12)) for i in range(n) for j in range(i + 1, n)
                   if rng.random() < 0.2}.values())
    g = Graph("g", ops, edges)
    placement = [rng.randrange(n_dev) for _ in range(n)]
    tracker = StaticMemoryTracker(g, n_dev)
    order = list(range(n))
    rng.shuffle(order)  # out of topological order too
    for i in order:
        before = list(tracker.used)
        extra = tracker.extra(i, placement[i])
        tracker.place(i, placement[i])
        # extra() is exactly the growth of the op's own device (copies of its output for
        # consumers placed earlier are charged to their devices, never to this one)
        assert tracker.used[placement[i]] - before[placement[i]] == extra
    assert tracker.used == static_memory(g, placement, n_dev)


def test_plan_json_is_deterministic_and_round_trips(problem: planner.Problem,
                                                    tmp_path: Path) -> None:
    plan = Plan.from_schedule([0, 1, 0, 1], [0.0, 1e-3, 1e-3, 5e-3], 3, "test")
    text = plan.dumps(problem)
    assert text == plan.dumps(problem)
    data = json.loads(text)
    assert list(data) == ["format", "version", "plan", "algorithm", "placement", "order", "start_s"]
    assert data["placement"] == {"a": "gpu0", "b": "gpu1", "c": "gpu0", "d": "gpu1"}
    assert data["order"] == {"gpu0": ["a", "c"], "gpu1": ["b", "d"], "cpu0": []}
    assert load_plan(problem, data) == plan
    out = tmp_path / "plan.json"
    plan.write(problem, str(out))
    assert out.read_text() == text
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]  # no temp file left


def test_bare_placement_file_and_its_errors(problem: planner.Problem) -> None:
    plan = load_plan(problem, {"placement": {"a": "cpu0", "b": "gpu0", "c": "gpu0", "d": "gpu1"}})
    assert plan.placement == (2, 0, 0, 1) and plan.order is None
    with pytest.raises(SpecError) as err:
        load_plan(problem, {"placement": {"a": "gpu9", "bb": "gpu0"}})
    msgs = [(d.code, d.message, d.hints) for d in err.value.diagnostics]
    assert ("E504", "op `a` is placed on unknown device `gpu9`", ("did you mean `gpu0`?",)) in msgs
    assert any(code == "E503" and "`bb`" in m for code, m, _ in msgs)
    with pytest.raises(SpecError) as err:
        load_plan(problem, {"placement": {"a": "gpu0"}})
    assert "leaves 3 op(s) unplaced: `b`, `c`, `d`" in err.value.diagnostics[0].message
    with pytest.raises(SpecError):
        load_plan(problem, {"nope": 1})

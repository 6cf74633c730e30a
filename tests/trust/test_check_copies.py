"""`check` counts the copies a device must receive (issue 28, item 6): E306, a unit that no
device holds with the inputs it must hold, and E307, units that cannot share a device two
by two outnumbering the devices that take them. Hand-derived cases, and soundness against
brute force: on random memory-tight problems every proof is of a problem no placement
fits, and the proofs find most of those the earlier ones missed."""

from __future__ import annotations

import dataclasses
import itertools
import random

import planner
from planner.cost import static_memory
from planner.facts import facts, proofs
from planner.model import Cluster, Device, Edge, Graph, Link, Op, Problem
from planner.plan import Plan
from planner.simulate import simulate
from planner.spec.checks import memory_diagnostics

MB = 2**20
PAIR = """cluster c {
  device gpu[0..1] { memory 1 GiB }
  link gpu0 <-> gpu1 { bandwidth 10 GB/s }
}
graph g {
  op a { time 1 ms  output 600 MB }
  op b { time 1 ms  params 600 MB }
  a -> b
}
plan p { graph g  cluster c }
"""


def test_a_unit_with_the_copy_it_must_receive_fits_no_device() -> None:
    # a (600 MB out) and b (600 MB of weights) each fit a 1 GiB device, but together they
    # need 1.2 GB, and apart b's device holds b and a copy of a's 600 MB tensor
    problem = planner.loads(PAIR).plan()
    found = memory_diagnostics(problem)
    assert [d.code for d in found] == ["E306"], found
    assert "op `b` needs at least 1.12 GiB (1200000000 B) with the inputs" in found[0].message
    assert _fits_somewhere(problem) is False


def test_units_that_cannot_share_a_device_outnumber_the_devices() -> None:
    # three 600 MB ops, no edges: no two share a 1 GiB device, and there are two devices
    text = PAIR.replace("  a -> b\n", "  op c { time 1 ms  params 600 MB }\n").replace(
        "op a { time 1 ms  output 600 MB }", "op a { time 1 ms  params 600 MB }")
    problem = planner.loads(text).plan()
    assert [d.code for d in memory_diagnostics(problem)] == ["E307"]
    assert _fits_somewhere(problem) is False
    three = planner.loads(text.replace("gpu[0..1]", "gpu[0..2]").replace(
        "link gpu0 <-> gpu1", "link gpu[*] <-> gpu[*]")).plan()
    assert memory_diagnostics(three) == [] and _fits_somewhere(three) is True


def test_under_liveness_the_copy_or_the_producer_is_held_when_the_consumer_starts() -> None:
    # issue 40, finding 7: `check` said ok (the copy proofs were `static` only) and every
    # algorithm found no plan. Apart, b's device holds its 600 MB of weights and the copy
    # of a's 600 MB output; together, a's output is alive until b ends
    problem = planner.loads(PAIR.replace("cluster c }", "cluster c  memory liveness }")).plan()
    found = memory_diagnostics(problem)
    assert [d.code for d in found] == ["E306"], found
    assert "op `b` needs at least 1.12 GiB (1200000000 B) with the inputs it must hold " \
        "when it starts" in found[0].message
    assert _simulates_somewhere(problem) is False
    roomy = planner.loads(PAIR.replace("cluster c }", "cluster c  memory liveness }")
                          .replace("params 600 MB", "params 400 MB")).plan()
    assert memory_diagnostics(roomy) == [] and _simulates_somewhere(roomy) is True


def test_under_liveness_the_hint_says_a_received_copy_is_freed_as_the_simulator_does() -> None:
    # E306's hint said "a tensor received from another device is kept"; the simulator frees
    # the copy when its last consumer there ends (docs/cost-model.md)
    problem = planner.loads(PAIR.replace("cluster c }", "cluster c  memory liveness }")).plan()
    hints = memory_diagnostics(problem)[0].hints
    assert not any("is kept" in h for h in hints), hints
    assert ("a tensor received from another device is held until its last consumer there "
            "ends") in hints[0]
    # what the hint says: b's copy of a's 600 MB is freed when b ends, so c's 600 MB of temp
    # fits on gpu1 after it (were the copy kept, gpu1 would need 1.2 GB)
    freed = planner.loads(PAIR.replace("cluster c }", "cluster c  memory liveness }").replace(
        "op b { time 1 ms  params 600 MB }", "op b { time 1 ms  output 1 MB }\n"
        "  op c { time 1 ms  temp 600 MB }").replace("a -> b", "a -> b -> c")).plan()
    assert simulate(freed, Plan((0, 1, 1))).feasible


def test_under_liveness_outputs_never_freed_crowd_the_devices() -> None:
    # three sinks of 600 MB: never freed, so no two share a 1 GiB device (E307)
    text = PAIR.replace("  a -> b\n", "  op c { time 1 ms  output 600 MB }\n").replace(
        "op b { time 1 ms  params 600 MB }", "op b { time 1 ms  output 600 MB }").replace(
        "cluster c }", "cluster c  memory liveness }")
    problem = planner.loads(text).plan()
    assert [d.code for d in memory_diagnostics(problem)] == ["E307"]
    assert _simulates_somewhere(problem) is False


def _simulates_somewhere(problem: Problem) -> bool:
    """Whether some placement (in the simulator's own order) is valid."""
    f = facts(problem)
    n = len(problem.graph.ops)
    for choice in itertools.product(*f.unit_allowed):
        place = [0] * n
        for u, d in enumerate(choice):
            for i in f.units[u]:
                place[i] = d
        if simulate(problem, Plan(tuple(place))).feasible:
            return True
    return False


def test_every_liveness_proof_is_of_a_problem_nothing_fits() -> None:
    # soundness against the simulator (the judge), on random memory-tight problems under
    # `liveness`, some with ops that take no time
    rng = random.Random(40)
    proved = 0
    for _ in range(150):
        problem = _tight(rng)
        ops = tuple(dataclasses.replace(op, time_s=rng.choice((1e-3, 1e-3, 0.0)))
                    for op in problem.graph.ops)
        problem = dataclasses.replace(problem, memory_model="liveness",
                                      graph=dataclasses.replace(problem.graph, ops=ops))
        codes = {p.code for p in proofs(problem)}
        if codes & {"E306", "E307"}:
            proved += 1
            assert not _simulates_somewhere(problem), (codes, problem)
    assert proved >= 10, proved


def _fits_somewhere(problem: Problem) -> bool:
    f = facts(problem)
    n, m = len(problem.graph.ops), len(problem.cluster.devices)
    for choice in itertools.product(*f.unit_allowed):
        place = [0] * n
        for u, d in enumerate(choice):
            for i in f.units[u]:
                place[i] = d
        mem = static_memory(problem.graph, place, m)
        if all(mem[d] <= problem.cluster.devices[d].memory_bytes for d in range(m)):
            return True
    return False


def _tight(rng: random.Random) -> Problem:
    n, m = rng.randint(3, 6), rng.randint(2, 3)
    ops = tuple(Op(f"o{i}", 1e-3, params_bytes=rng.choice((0, 100, 300, 500)) * MB,
                   output_bytes=rng.choice((10, 100, 300, 600)) * MB,
                   temp_bytes=rng.choice((0, 0, 100)) * MB) for i in range(n))
    pairs = sorted({tuple(sorted(rng.sample(range(n), 2))) for _ in range(rng.randint(1, 2 * n))})
    edges = tuple(Edge(a, b, ops[a].output_bytes) for a, b in pairs)
    groups = ((0, 1),) if rng.random() < 0.2 else ()
    devices = tuple(Device(f"d{d}", rng.choice((600, 800, 1000, 1200)) * MB) for d in range(m))
    links = tuple(Link(a, b, 10e9, 0.0) for a in range(m) for b in range(m) if a != b)
    return Problem("p", Graph("g", ops, edges, groups), Cluster("c", devices, links))


def test_every_proof_is_of_a_problem_nothing_fits() -> None:
    rng = random.Random(28)
    new = missed = 0
    for _ in range(300):
        problem = _tight(rng)
        codes = {p.code for p in proofs(problem)}
        fits = _fits_somewhere(problem)
        assert not (codes and fits), (codes, problem)
        new += bool(codes & {"E306", "E307"})
        missed += not codes and not fits
    # measured: the new proofs take 53 of 300; 6 infeasible ones stay unproved
    assert new >= 45 and missed <= 10, (new, missed)

"""The simulator: hand-computed schedules, every violation kind, and properties.

Unless a test says otherwise the cluster is three devices `d0..d2`, all linked at 1 GB/s
with no latency, so 1 MB takes 1 ms to cross a link.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import random

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from placed_cases import PROPERTY, Case, simulated

import planner
from planner.bounds import lower_bound
from planner.cost import costs, static_memory
from planner.model import Cluster, Device, Edge, Graph, Link, Op, Problem
from planner.plan import Plan
from planner.render.report import report_json
from planner.simulate import SimResult, default_order, simulate, upward_rank

MS = 1e-3
MB = 1_000_000
#: property tests: no per-example deadline (fixed or random examples: `tests/conftest.py`)

CLUSTER = """
cluster c {
  device d[0..2] { memory 1 GB }
  link d[0..2] <-> d[0..2] { bandwidth 1 GB/s }
}
"""


def load(graph: str, plan: str = "", cluster: str = CLUSTER) -> Problem:
    """A problem from graph text and plan lines (the cluster above by default)."""
    text = f"{cluster}\ngraph g {{\n{graph}\n}}\nplan p {{ graph g cluster c\n{plan}\n}}\n"
    return planner.loads(text).plan()


def given_placement(problem: Problem) -> tuple[int, ...]:
    """The spec's pins and `place` statements as a full placement."""
    return tuple(problem.pins.get(i, problem.placement.get(i, -1))
                 for i in range(len(problem.graph.ops)))


def run(problem: Problem, order: list[list[str]] | None = None, **changes: str) -> SimResult:
    """Simulate the spec's placement, with an optional order by op names."""
    if changes:
        problem = dataclasses.replace(problem, **changes)
    idx = problem.graph.op_index
    seqs = None if order is None else tuple(tuple(idx[x] for x in s) for s in order)
    return simulate(problem, Plan(given_placement(problem), seqs))


def times(problem: Problem, result: SimResult, name: str) -> tuple[float, float]:
    """(start, end) of op `name` in ms."""
    i = problem.graph.op_index[name]
    return result.start_s[i] / MS, result.end_s[i] / MS


def kinds(result: SimResult) -> list[str]:
    """The kinds of the violations found, in report order."""
    return [v.kind for v in result.violations]


# -- hand-computed schedules ------------------------------------------------------------

TWO_SENDERS = """
op a { time 1 ms output 2 MB }
op b { time 1 ms output 2 MB }
op x { time 1 ms }
op y { time 1 ms }
a -> x
b -> y
"""
TWO_SENDERS_PLAN = "place a on d0; place x on d1; place b on d2; place y on d0"


@pytest.mark.parametrize(("contention", "makespan_ms"), [("none", 4), ("link", 4),
                                                          ("device", 6)])
def test_link_and_device_contention_differ(contention: str, makespan_ms: float) -> None:
    # a runs [0,1] on d0 and b [0,1] on d2; both tensors (2 MB = 2 ms) are ready at 1.
    # none/link: a->d1 uses link d0->d1 and b->d0 uses d2->d0: both [1,3];
    #   x [3,4] on d1, y [3,4] on d0: makespan 4.
    # device: both transfers need d0's single channel. a comes first in topological
    #   order, so a->d1 takes [1,3] and b->d0 waits for d0's channel: [3,5]; y [5,6].
    p = load(TWO_SENDERS, TWO_SENDERS_PLAN + f"\ncontention {contention}")
    r = run(p)
    assert r.makespan_s == pytest.approx(makespan_ms * MS)
    spans = [(t.src_op, t.dst_device, t.start_s / MS, t.end_s / MS) for t in r.transfers]
    second = 3 if contention == "device" else 1
    assert spans == [(0, 1, pytest.approx(1), pytest.approx(3)),
                     (1, 0, pytest.approx(second), pytest.approx(second + 2))]
    assert times(p, r, "y") == pytest.approx((second + 2, second + 3))
    assert r.feasible


SHARED_LINK = """
op a { time 1 ms output 2 MB }
op b { time 1 ms output 2 MB }
op z { time 1 ms }
a -> z
b -> z
"""


@pytest.mark.parametrize(("contention", "makespan_ms"), [("none", 5), ("link", 6),
                                                          ("device", 6)])
def test_one_link_carries_one_transfer_at_a_time(contention: str, makespan_ms: float) -> None:
    # a [0,1] then b [1,2] on d0 (same ready time 0, same rank; a has the smaller index).
    # none: a->d1 [1,3], b->d1 [2,4]; z [4,5].
    # link and device: b->d1 waits for the link (channel) until 3: [3,5]; z [5,6].
    p = load(SHARED_LINK, f"place a, b on d0; place z on d1\ncontention {contention}")
    r = run(p)
    assert times(p, r, "a") == pytest.approx((0, 1))
    assert times(p, r, "b") == pytest.approx((1, 2))
    assert r.makespan_s == pytest.approx(makespan_ms * MS)
    assert r.busy_s == pytest.approx((2 * MS, 1 * MS, 0.0))


CACHED = """
op a { time 1 ms }
op x { time 1 ms }
op y { time 1 ms }
op w { time 1 ms }
a -> x { bytes 2 MB }
a -> y { bytes 1 MB }
x -> w { bytes 3 MB }
"""


def test_a_tensor_is_sent_to_a_device_once() -> None:
    # a [0,1] on d0; x and y on d1 share one copy of a's tensor with the larger size,
    # 2 MB: [1,3]. Both are ready at 3; x has the larger upward rank (it feeds w), so
    # x [3,4], y [4,5]. Sending the 1 MB again would have cost another 1 ms on the link.
    # w is on d1 too: x's tensor never travels. Static memory of d1 counts the copy once.
    p = load(CACHED, "place a on d0; place x, y, w on d1")
    r = run(p)
    assert [(t.src_op, t.dst_device, t.bytes) for t in r.transfers] == [(0, 1, 2 * MB)]
    assert times(p, r, "x") == pytest.approx((3, 4))
    assert times(p, r, "y") == pytest.approx((4, 5))
    assert times(p, r, "w") == pytest.approx((5, 6))
    assert r.memory_static_bytes == (0, 2 * MB, 0)


def test_latency_and_bandwidth_use_the_cost_model() -> None:
    # 3 MB over 2 GB/s with 0.5 ms latency: 0.5 + 1.5 = 2 ms; a [0,1], b [3,4].
    cluster = """
    cluster c {
      device d[0..1] { memory 1 GB speed 2 }
      link d0 <-> d1 { bandwidth 2 GB/s latency 0.5 ms }
    }"""
    p = load("op a { time 2 ms output 3 MB }\nop b { time 2 ms }\na -> b",
             "place a on d0; place b on d1", cluster)
    r = run(p)
    assert times(p, r, "b") == pytest.approx((3, 4))  # speed 2 halves `time`
    assert r.transfers[0].end_s - r.transfers[0].start_s == pytest.approx(
        costs(p).transfer_time(3 * MB, 0, 1))


PRIORITY = """
op s { time 1 ms output 1 MB }
op a { time 1 ms }
op b { time 1 ms }
op c { time 1 ms }
op late { time 1 ms }
s -> late
b -> c
"""


def test_dynamic_dispatch_earliest_ready_then_upward_rank_then_index() -> None:
    # On d0: a, b ready at 0 and `late` ready at 2 (s [0,1] on d1, its tensor [1,2]).
    # At 0, a and b tie on ready time; b has the larger upward rank (it feeds c): b [0,1].
    # At 1 a is the only ready op: a [1,2]. At 2 c (ready 1) beats late (ready 2): c [2,3],
    # then late [3,4].
    p = load(PRIORITY, "place a, b, c, late on d0; place s on d1")
    r = run(p)
    idx = p.graph.op_index
    assert r.order[0] == tuple(idx[x] for x in ("b", "a", "c", "late"))
    assert times(p, r, "late") == pytest.approx((3, 4))
    rank = upward_rank(p)
    assert rank[idx["b"]] > rank[idx["a"]]
    assert default_order(p, r.placement) == r.order


def test_given_order_is_followed_and_replays_dynamic_exactly() -> None:
    # Forcing late first on d0: it waits for its input until 2: late [2,3], then b [3,4],
    # a [4,5], c [5,6].
    p = load(PRIORITY, "place a, b, c, late on d0; place s on d1")
    r = run(p, [["late", "b", "a", "c"], ["s"], []])
    assert times(p, r, "late") == pytest.approx((2, 3))
    assert r.makespan_s == pytest.approx(6 * MS)
    dyn = run(p)
    replay = simulate(p, Plan(dyn.placement, dyn.order))
    assert (replay.start_s, replay.end_s, replay.order) == (dyn.start_s, dyn.end_s, dyn.order)


# -- memory -------------------------------------------------------------------------------

CHAIN = """
op a { time 1 ms params 1 MB output 4 MB temp 2 MB }
op b { time 1 ms output 4 MB temp 2 MB }
op c { time 1 ms output 1 MB }
a -> b -> c
"""


def test_static_memory() -> None:
    # params 1 + outputs 4 + 4 + 1 + the largest temp 2 = 12 MB; flat timeline.
    p = load(CHAIN, "place a, b, c on d0")
    r = run(p)
    assert r.memory_static_bytes[0] == r.memory_peak_bytes[0] == 12 * MB
    assert r.memory_timeline[0] == ((0.0, 12 * MB),)
    assert list(r.memory_static_bytes) == static_memory(p.graph, r.placement, 3)


def test_liveness_frees_before_allocations_at_one_instant() -> None:
    # t=0: params 1, a starts: +4 output +2 temp                    -> 7
    # t=1: free a's temp (-2) first, then b starts (+4 +2)           -> 11 (13 if allocs
    #      came first)
    # t=2: free b's temp and a's output (b, its last consumer, ends) -> 5, c starts +1 -> 6
    # t=3: c ends: b's output freed -> 2; c's output has no consumer: never freed.
    p = load(CHAIN, "place a, b, c on d0\nmemory liveness")
    r = run(p)
    assert r.memory_timeline[0] == (
        (0.0, 7 * MB), (pytest.approx(1 * MS), 11 * MB), (pytest.approx(2 * MS), 6 * MB),
        (pytest.approx(3 * MS), 2 * MB))
    assert r.memory_peak_bytes[0] == 11 * MB
    assert r.memory_static_bytes[0] == 12 * MB


def test_zero_duration_op_and_zero_lifetime_buffers() -> None:
    # a [0,1]; z takes no time: [1,1]; b [1,2]. While z runs at 1 it holds its input
    # (a's output, freed as z ends), its 5 MB temp and its output: 7 MB, a step of no
    # width (before: its buffers' intervals are empty or ended there, so never counted).
    # After 1: a's output freed, z's output allocated: net 0. z's output is freed when b
    # ends at 2.
    p = load("op a { time 1 ms output 1 MB }\nop z { time 0 ms output 1 MB temp 5 MB }\n"
             "op b { time 1 ms }\na -> z -> b", "place a, z, b on d0\nmemory liveness")
    r = run(p)
    assert r.order[0] == (0, 1, 2)
    assert times(p, r, "z") == pytest.approx((1, 1)) and times(p, r, "b") == pytest.approx((1, 2))
    assert r.memory_timeline[0] == ((0.0, 1 * MB), (pytest.approx(MS), 7 * MB),
                                    (pytest.approx(MS), 1 * MB), (pytest.approx(2 * MS), 0))
    assert r.memory_peak_bytes[0] == 7 * MB and r.memory_static_bytes[0] == 7 * MB


def test_memory_cap_is_checked_under_the_plans_model() -> None:
    cluster = CLUSTER.replace("1 GB", "11 MB")
    static = run(load(CHAIN, "place a, b, c on d0", cluster))
    assert kinds(static) == ["memory"]
    v = static.violations[0]
    assert v.devices == (0,) and v.ops == (0, 1, 2)
    assert "d0" in v.message and "static" in v.message
    live = run(load(CHAIN, "place a, b, c on d0\nmemory liveness", cluster))
    assert live.feasible  # peak 11 MB is not above the 11 MB cap


def test_liveness_received_copy_lives_from_transfer_start_to_last_consumer() -> None:
    # a [0,1] on d0; its 2 MB tensor crosses [1,3] and is held on d1 from 1; x [3,4] and
    # y [4,5] use it (x feeds w, so x first); it is freed when y ends at 5.
    p = load("op a { time 1 ms output 2 MB }\nop x { time 1 ms }\nop y { time 1 ms }\n"
             "op w { time 1 ms }\na -> x\na -> y\nx -> w",
             "place a on d0; place x, y on d1; place w on d2\nmemory liveness")
    r = run(p)
    assert r.memory_timeline[1] == ((0.0, 0), (pytest.approx(1 * MS), 2 * MB),
                                    (pytest.approx(5 * MS), 0))
    # a's output is allocated at 0 and freed when its transfer, its last read, ends at 3
    assert r.memory_timeline[0] == ((0.0, 2 * MB), (pytest.approx(3 * MS), 0))


SENT_WHILE_FREED = ("op a { time 1 ms output 3 MB }\nop b { time 1 ms }\nop c { time 1 ms }\n"
                    "op d { time 1 ms output 3 MB }\nop e { time 1 ms }\n"
                    "a -> b -> d -> e\na -> c")


def test_liveness_holds_an_output_until_its_transfer_ends() -> None:
    # a [0,1] on d0; its 3 MB cross to d1 on [1,4] while b [1,2], its last consumer on
    # d0, has ended: the transfer still reads a's output, so it is freed at 4, not 2.
    # d [2,3] allocates 3 MB beside it: 6 MB on d0 over [2,4) (it read 3 MB before).
    cluster = CLUSTER.replace("1 GB }", "5 MB }")
    p = load(SENT_WHILE_FREED, "place a, b, d, e on d0; place c on d1\nmemory liveness",
             cluster)
    r = run(p)
    assert times(p, r, "c") == pytest.approx((4, 5))
    assert r.memory_timeline[0] == ((0.0, 3 * MB), (pytest.approx(2 * MS), 6 * MB),
                                    (pytest.approx(4 * MS), 0))
    assert r.memory_peak_bytes[0] == 6 * MB
    assert kinds(r) == ["memory"] and not r.feasible  # d0 holds 5 MB


SENT_ONLY = ("op a { time 1 ms output 3 MB }\nop c { time 1 ms }\n"
             "op d { time 1 ms output 3 MB }\nop e { time 1 ms }\na -> c -> d -> e")


def test_liveness_frees_an_output_read_only_elsewhere_when_its_transfer_ends() -> None:
    # a [0,1] on d0, its 3 MB read only by c on d1: sent over [1,4], then freed (it was
    # held forever). c [4,5] sends d nothing (0 B at 5); d [5,6] allocates 3 MB on d0:
    # 3 MB at most there, within a 5 MB cap (6 MB and a memory violation before).
    cluster = CLUSTER.replace("1 GB }", "5 MB }")
    p = load(SENT_ONLY, "place a, d, e on d0; place c on d1\nmemory liveness", cluster)
    r = run(p)
    assert times(p, r, "d") == pytest.approx((5, 6))
    assert r.memory_timeline[0] == ((0.0, 3 * MB), (pytest.approx(4 * MS), 0),
                                    (pytest.approx(5 * MS), 3 * MB), (pytest.approx(7 * MS), 0))
    assert r.memory_timeline[1] == ((0.0, 0), (pytest.approx(1 * MS), 3 * MB),
                                    (pytest.approx(5 * MS), 0))
    assert r.memory_peak_bytes == (3 * MB, 3 * MB, 0) and r.feasible


def test_liveness_keeps_an_output_whose_transfer_never_happens() -> None:
    # a feeds c on d1 (sent over [1,4]) and x on d2, which no link reaches: x never runs,
    # so a's output, still owed to d2, is never freed; d [5,6] on d0 adds its 3 MB to it.
    # (the language rejects clusters with unlinked pairs; a hand-built problem can have one)
    p = load(SENT_ONLY + "\nop x { time 1 ms }\na -> x",
             "place a, d, e on d0; place c on d1; place x on d2\nmemory liveness")
    kept = tuple(lk for lk in p.cluster.links if {lk.src, lk.dst} != {0, 2})
    r = run(p, cluster=dataclasses.replace(p.cluster, links=kept))
    assert kinds(r) == ["no_link"]
    assert r.memory_timeline[0] == ((0.0, 3 * MB), (pytest.approx(5 * MS), 6 * MB),
                                    (pytest.approx(7 * MS), 3 * MB))


# -- violations -----------------------------------------------------------------------


def test_unplaced_and_nonexistent_devices() -> None:
    p = load("op a { time 1 ms }\nop b { time 1 ms }\nop c { time 1 ms }\na -> b")
    r = simulate(p, Plan((-1, 7, 0)))
    assert kinds(r) == ["unplaced", "unplaced"]
    assert [v.ops for v in r.violations] == [(0,), (1,)]
    assert "does not exist" in r.violations[1].message
    assert math.isinf(r.makespan_s) and math.isinf(r.start_s[1])
    assert r.end_s[2] == pytest.approx(1 * MS)  # c is independent and still runs


def test_pin_and_colocation() -> None:
    p = load("op a { time 1 ms }\nop b { time 1 ms }\ncolocate a, b", "pin a to d1")
    r = simulate(p, Plan((0, 2)))
    assert kinds(r) == ["pin", "colocation"]
    pin, colo = r.violations
    assert pin.ops == (0,) and pin.devices == (1, 0)
    assert "pinned to `d1` but placed on `d0`" in pin.message
    assert colo.ops == (0, 1) and colo.devices == (0, 2)


def test_unrunnable_op() -> None:
    p = load("op a { flops 1 GFLOP }\nop b { time 1 ms }\na -> b",
             cluster=CLUSTER.replace("memory 1 GB", "memory 1 GB flops 1 TFLOPS"))
    devices = list(p.cluster.devices)
    devices[2] = dataclasses.replace(devices[2], flop_rate=None)  # d2 cannot run `flops`
    p = dataclasses.replace(p, cluster=dataclasses.replace(p.cluster,
                                                           devices=tuple(devices)))
    r = simulate(p, Plan((2, 0)))
    assert kinds(r) == ["unrunnable"]
    assert r.violations[0].ops == (0,) and r.violations[0].devices == (2,)
    assert math.isinf(r.makespan_s) and math.isinf(r.start_s[1])
    # on d1: 1 GFLOP at 1 TFLOPS = 1 ms, a 0-byte tensor (no latency), then b 1 ms
    assert simulate(p, Plan((1, 0))).makespan_s == pytest.approx(2 * MS)


def test_transfer_without_a_link() -> None:
    # the language rejects clusters with unlinked pairs; a hand-built problem can have one
    p = load("op a { time 1 ms output 1 MB }\nop b { time 1 ms }\nop c { time 1 ms }\n"
             "a -> b\na -> c", "place a on d0; place b on d1; place c on d2")
    kept = tuple(lk for lk in p.cluster.links if {lk.src, lk.dst} != {0, 2})
    p = dataclasses.replace(p, cluster=dataclasses.replace(p.cluster, links=kept))
    r = run(p)
    assert kinds(r) == ["no_link"]
    assert r.violations[0].ops == (0,) and r.violations[0].devices == (0, 2)
    assert [t.dst_device for t in r.transfers] == [1]  # the impossible one never starts
    assert times(p, r, "b") == pytest.approx((2, 3))
    assert math.isinf(r.start_s[2]) and math.isinf(r.makespan_s)


def test_deadlocked_order_is_reported_not_hung() -> None:
    # d0 runs `b` before `a`, but b needs a: nothing on d0 can start. d1's op `c` is fine.
    p = load("op a { time 1 ms }\nop b { time 1 ms }\nop c { time 1 ms }\na -> b",
             "place a, b on d0; place c on d1")
    r = run(p, [["b", "a"], ["c"], []])
    assert kinds(r) == ["order"]
    v = r.violations[0]
    assert "deadlock" in v.message and "`b` on `d0` waits for `a`" in v.message
    assert v.ops == (1,) and v.devices == (0,)
    assert math.isinf(r.start_s[0]) and math.isinf(r.end_s[1])
    assert r.end_s[2] == pytest.approx(1 * MS)
    assert math.isinf(r.makespan_s) and not r.feasible
    assert r.order == ((), (2,), ())


def test_cross_device_deadlock() -> None:
    # d0: [q, a], d1: [b, p]; a -> b and p -> q: q waits for p behind b, b waits for a.
    p = load("op a { time 1 ms }\nop b { time 1 ms }\nop p { time 1 ms }\n"
             "op q { time 1 ms }\na -> b\np -> q", "place a, q on d0; place b, p on d1")
    r = run(p, [["q", "a"], ["b", "p"], []])
    assert kinds(r) == ["order"]
    assert r.violations[0].devices == (0, 1)
    assert all(math.isinf(t) for t in r.start_s)


def test_malformed_order() -> None:
    # `b` is listed on d1 but placed on d0 and is left out of d0's order: it runs last.
    p = load("op a { time 1 ms }\nop b { time 1 ms }", "place a, b on d0")
    r = run(p, [["a"], ["b"], []])
    assert kinds(r) == ["order", "order"]
    assert "placed on `d0`" in r.violations[0].message
    assert "leaves out `b`" in r.violations[1].message
    assert r.order[0] == (0, 1) and r.makespan_s == pytest.approx(2 * MS)


def test_intended_start_times_checked_for_precedence_and_overlap() -> None:
    # a [0,1] on d0 and its 1 MB tensor needs 1 ms to reach b on d1, so b cannot start
    # before 2; c is meant to start at 0.5 on d0 while a runs until 1.
    p = load("op a { time 1 ms output 1 MB }\nop b { time 1 ms }\nop c { time 1 ms }\n"
             "a -> b", "place a, c on d0; place b on d1")
    bad = Plan(given_placement(p), None, (0.0, 1.5 * MS, 0.5 * MS))
    r = simulate(p, bad)
    assert kinds(r) == ["precedence", "overlap"]
    prec, over = r.violations
    assert prec.ops == (0, 1) and prec.devices == (0, 1)
    assert "before its input from `a` can arrive at 2.000 ms" in prec.message
    assert over.ops == (0, 2) and over.devices == (0,)
    good = Plan(given_placement(p), None, (0.0, 2 * MS, 1 * MS))
    assert simulate(p, good).feasible


def test_every_violation_is_reported() -> None:
    p = load("op a { time 1 ms }\nop b { time 1 ms }\nop c { time 1 ms }\nop d { time 1 ms }\n"
             "colocate a, b", "pin c to d2")
    r = simulate(p, Plan((0, 1, 0, 9), None, (0.0, 0.0, 0.5 * MS, 0.0)))
    assert kinds(r) == ["unplaced", "pin", "colocation", "overlap"]
    assert [v.ops for v in r.violations] == [(3,), (2,), (0, 1), (0, 2)]


# -- JSON report ----------------------------------------------------------------------


def test_report_json_shape_and_determinism() -> None:
    p = load(TWO_SENDERS, TWO_SENDERS_PLAN)
    r = run(p)
    b = lower_bound(p)
    obj = report_json(p, r, b)
    assert list(obj)[:8] == ["plan", "memory_model", "contention", "makespan_s",
                             "lower_bound_s", "ratio", "feasible", "bounds"]
    assert obj["makespan_s"] == pytest.approx(4 * MS)
    assert obj["ratio"] == pytest.approx(r.makespan_s / b.makespan_s)
    assert obj["placement"] == {"a": "d0", "b": "d2", "x": "d1", "y": "d0"}
    # d0 holds a's 2 MB output and the 2 MB copy of b's
    assert obj["devices"][0] == {"name": "d0", "ops": ["a", "y"], "busy_s": 2 * MS,
                                 "memory_static_bytes": 4 * MB, "memory_peak_bytes": 4 * MB,
                                 "memory_cap_bytes": 1_000_000_000}
    assert obj["schedule"][0] == {"op": "a", "device": "d0", "start_s": 0.0, "end_s": 1 * MS}
    assert obj["transfers"][1]["src_op"] == "b" and obj["transfers"][1]["bytes"] == 2 * MB
    text = json.dumps(obj)
    assert text == json.dumps(report_json(p, run(p), lower_bound(p)))


def test_report_json_infeasible_uses_null_for_never() -> None:
    p = load("op a { time 1 ms }\nop b { time 1 ms }\na -> b", "place a, b on d0")
    r = run(p, [["b", "a"], [], []])
    obj = report_json(p, r, lower_bound(p))
    assert obj["feasible"] is False and obj["makespan_s"] is None and obj["ratio"] is None
    assert obj["violations"][0]["kind"] == "order"
    assert obj["violations"][0]["ops"] == ["b"] and obj["violations"][0]["devices"] == ["d0"]
    json.dumps(obj, allow_nan=False)  # strict JSON: no Infinity


# -- properties -----------------------------------------------------------------------


@st.composite
def problems(draw: st.DrawFn, max_devices: int = 4) -> Case:
    """A random DAG on a random all-to-all cluster, and a random placement."""
    n = draw(st.integers(1, 14))
    m = draw(st.integers(1, max_devices))
    ms = st.integers(1, 20).map(lambda k: k * 0.25e-3)
    size = st.integers(0, 4).map(lambda k: k * MB)
    ops = tuple(Op(f"o{i}", time_s=draw(ms), params_bytes=draw(size),
                   output_bytes=draw(size), temp_bytes=draw(size)) for i in range(n))
    pairs = draw(st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
                         .filter(lambda t: t[0] < t[1]), max_size=3 * n))
    edges = tuple(Edge(a, b, draw(size)) for a, b in sorted(pairs))
    devices = tuple(Device(f"d{d}", 64 * MB, None, draw(st.sampled_from([0.5, 1.0, 2.0])))
                    for d in range(m))
    links = tuple(Link(a, b, draw(st.sampled_from([0.5e9, 1e9, 4e9])),
                       draw(st.sampled_from([0.0, 1e-4])))
                  for a in range(m) for b in range(m) if a != b)
    problem = Problem("p", Graph("g", ops, edges), Cluster("c", devices, links),
                      draw(st.sampled_from(["static", "liveness"])),
                      draw(st.sampled_from(["none", "link", "device"])))
    placement = tuple(draw(st.integers(0, m - 1)) for _ in range(n))
    return problem, placement


def check_schedule(p: Problem, r: SimResult) -> None:
    """Precedence with transfer arrival, no overlap, exact start times, resource use."""
    c = costs(p)
    place = r.placement
    tol = 1e-12
    arrival = {(t.src_op, t.dst_device): t for t in r.transfers}
    assert len(arrival) == len(r.transfers)  # at most once per (tensor, device)
    for i in range(len(p.graph.ops)):
        assert r.end_s[i] == pytest.approx(r.start_s[i] + c.compute[i][place[i]])
    ready = [0.0] * len(p.graph.ops)
    for e in p.graph.edges:
        if place[e.src] == place[e.dst]:
            ready[e.dst] = max(ready[e.dst], r.end_s[e.src])
        else:
            t = arrival[(e.src, place[e.dst])]
            assert t.start_s >= r.end_s[e.src] - tol
            assert t.bytes >= e.bytes
            assert t.end_s - t.start_s == pytest.approx(
                c.transfer_time(t.bytes, t.src_device, t.dst_device))
            ready[e.dst] = max(ready[e.dst], t.end_s)
    for seq in r.order:
        prev = 0.0
        for i in seq:
            # no overlap, and never idle when the op could start: start = max(free, ready)
            assert r.start_s[i] == pytest.approx(max(prev, ready[i]), abs=tol)
            prev = r.end_s[i]
    if p.contention != "none":
        for a in r.transfers:
            for b in r.transfers:
                if a is b:
                    continue
                if p.contention == "link":
                    shared = (a.src_device, a.dst_device) == (b.src_device, b.dst_device)
                else:
                    shared = bool({a.src_device, a.dst_device} & {b.src_device, b.dst_device})
                if shared:
                    assert a.end_s <= b.start_s + tol or b.end_s <= a.start_s + tol


@pytest.mark.slow
@settings(PROPERTY, max_examples=150)
@given(problems())
def test_property_schedule_is_valid_and_above_the_lower_bound(case: Case) -> None:
    p, placement, r = simulated(case)
    assert r.feasible or kinds(r) == ["memory"] * len(r.violations)
    check_schedule(p, r)
    bounds = lower_bound(p)
    assert r.makespan_s >= bounds.makespan_s * (1 - 1e-9)
    assert sum(r.memory_peak_bytes) >= bounds.memory_bytes
    assert all(live <= static for live, static in
               zip(r.memory_peak_bytes, r.memory_static_bytes, strict=True))
    replay = simulate(p, Plan(placement, r.order))
    assert replay.start_s == r.start_s and replay.transfers == r.transfers
    assert simulate(p, Plan(placement)) == r  # deterministic


@pytest.mark.slow
@settings(PROPERTY, max_examples=100)
@given(problems(), st.randoms(use_true_random=False))
def test_property_any_order_runs_or_reports_its_deadlock(case: Case, rnd: random.Random) -> None:
    # A given order deadlocks exactly when edges plus each device's order form a cycle.
    p, placement = case
    seqs = [[i for i in range(len(placement)) if placement[i] == d]
            for d in range(len(p.cluster.devices))]
    for seq in seqs:
        rnd.shuffle(seq)
    r = simulate(p, Plan(placement, tuple(map(tuple, seqs))))
    chains = nx.DiGraph()
    chains.add_nodes_from(range(len(placement)))
    chains.add_edges_from((e.src, e.dst) for e in p.graph.edges)
    chains.add_edges_from(pair for seq in seqs for pair in itertools.pairwise(seq))
    if nx.is_directed_acyclic_graph(chains):
        assert r.feasible or kinds(r) == ["memory"] * len(r.violations)
        assert r.order == tuple(map(tuple, seqs))
        check_schedule(p, r)
    else:
        assert "order" in kinds(r) and math.isinf(r.makespan_s)
        stuck = [v for v in r.violations if v.kind == "order"]
        assert len(stuck) == 1 and "deadlock" in stuck[0].message
        ran = {i for seq in r.order for i in seq}
        assert all(math.isinf(r.start_s[i]) == (i not in ran) for i in range(len(placement)))


@settings(PROPERTY, max_examples=60)
@given(problems())
def test_property_one_device_runs_the_sum_of_compute_times(case: Case) -> None:
    p, _ = case
    r = simulate(p, Plan((0,) * len(p.graph.ops)))
    assert r.transfers == ()
    assert r.makespan_s == pytest.approx(sum(row[0] for row in costs(p).compute))


@pytest.mark.slow
@settings(PROPERTY, max_examples=100)
@given(problems())
def test_property_contention_never_beats_none_for_a_fixed_order(case: Case) -> None:
    # With each device's order fixed, start times are monotone in arrival times, and a
    # contended transfer never arrives before the uncontended one: none <= link, device.
    # (link vs device, and any model under dynamic dispatch, can go either way.)
    p, placement = case
    order = simulate(p, Plan(placement)).order
    plan = Plan(placement, order)
    free = simulate(dataclasses.replace(p, contention="none"), plan)
    for mode in ("link", "device"):
        r = simulate(dataclasses.replace(p, contention=mode), plan)
        assert all(a <= b + 1e-12 for a, b in zip(free.end_s, r.end_s, strict=True))
        assert free.makespan_s <= r.makespan_s + 1e-12

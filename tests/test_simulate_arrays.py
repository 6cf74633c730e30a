"""The simulator's array paths against plain loops over the model's objects.

`cost.static_memory` sums with numpy from `VECTOR_MIN_OPS` ops on, and the simulator checks
a plan's intended start times with numpy; both must give exactly what a loop over the ops
and edges gives: the same integers, the same violations in the same order with the same
messages. Static memory is compared with its own loop (below `VECTOR_MIN_OPS`); the start
time checks with the loop below, their definition written as plainly as possible.
"""

from __future__ import annotations

import itertools
import math
import random

import pytest

import planner.simulate.checks as checks_module
from planner import cost
from planner.cost import INF, columns, costs, static_memory
from planner.model import Cluster, Device, Edge, Graph, Link, Op, Problem
from planner.plan import Plan
from planner.simulate import KINDS, Violation, simulate
from planner.simulate.checks import REL_TOL, check_start_times
from planner.units import format_seconds

MB = 1_000_000


def random_problem(rng: random.Random, n: int, kinds: tuple[str, ...] = ("gpu", "cpu")
                   ) -> Problem:
    """A random DAG: zero-time and gpu-only ops, edges of equal bytes, missing links."""
    sizes = [0, 0, MB, 2 * MB, 5 * MB]

    def op(i: int) -> Op:
        common = {"params_bytes": rng.choice(sizes), "output_bytes": rng.choice(sizes),
                  "temp_bytes": rng.choice(sizes)}
        r = rng.random()
        if r < 0.15:
            return Op(f"o{i}", time_s=0.0, **common)
        if r < 0.22:
            return Op(f"o{i}", time_by_kind={"gpu": rng.choice([1e-3, 2e-3])}, **common)
        return Op(f"o{i}", time_s=rng.choice([0.25e-3, 1e-3, 3e-3]), **common)

    ops = tuple(op(i) for i in range(n))
    edges = tuple(Edge(a, b, rng.choice([0, MB, MB, 3 * MB]))
                  for b in range(1, n) for a in rng.sample(range(max(0, b - 6), b),
                                                           min(b, rng.randint(0, 3))))
    m = rng.randint(1, 4)
    devices = tuple(Device(f"d{d}", 1 << 40, rng.choice(kinds),
                           rng.choice([0.5, 1.0, 2.0])) for d in range(m))
    links = tuple(Link(a, b, rng.choice([0.5e9, 1e9]), rng.choice([0.0, 1e-4]))
                  for a in range(m) for b in range(m) if a != b and rng.random() < 0.8)
    return Problem("p", Graph("g", ops, edges), Cluster("c", devices, links))


# -- the definitions, as loops ----------------------------------------------------------


def start_time_violations(problem: Problem, start: list[float], place: list[int],
                          dur: list[float]) -> list[Violation]:
    """Overlaps (per device, by start, end, op) then precedence (by edge), as the module
    doc of `planner.simulate` defines them."""
    g, devs, c = problem.graph, problem.cluster.devices, costs(problem)
    ops = g.ops
    end = [s + t for s, t in zip(start, dur, strict=True)]

    def early(t: float, limit: float) -> bool:
        return math.isfinite(limit) and t < limit - REL_TOL * max(1.0, abs(limit))

    out: list[Violation] = []
    for d, dev in enumerate(devs):
        seq = sorted((i for i in range(len(ops)) if place[i] == d and math.isfinite(start[i])),
                     key=lambda i: (start[i], end[i], i))
        for a, b in itertools.pairwise(seq):
            if early(start[b], end[a]):
                out.append(Violation(
                    "overlap", f"ops `{ops[a].name}` and `{ops[b].name}` overlap on "
                    f"`{dev.name}`: `{ops[b].name}` is meant to start at "
                    f"{format_seconds(start[b])}, before `{ops[a].name}` ends at "
                    f"{format_seconds(end[a])}", (a, b), (d,)))
    largest: dict[tuple[int, int], int] = {}
    for e in g.edges:
        key = (e.src, place[e.dst])
        largest[key] = max(largest.get(key, 0), e.bytes)
    for e in g.edges:
        i, j = e.src, e.dst
        di, dj = place[i], place[j]
        if di < 0 or dj < 0 or not math.isfinite(end[i]):
            continue
        arrive = end[i] + c.transfer_time(largest[(i, dj)], di, dj)
        if early(start[j], arrive):
            out.append(Violation(
                "precedence", f"op `{ops[j].name}` is meant to start at "
                f"{format_seconds(start[j])}, before its input from `{ops[i].name}` "
                f"{'ends' if di == dj else 'can arrive'} at {format_seconds(arrive)}",
                (i, j), (di,) if di == dj else (di, dj)))
    return out


# -- the tests --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(30))
def test_static_memory_with_arrays_is_the_loop(seed: int, monkeypatch: pytest.MonkeyPatch
                                                ) -> None:
    rng = random.Random(seed)
    p = random_problem(rng, rng.randint(1, 60))
    m = len(p.cluster.devices)
    for _ in range(5):
        place = [rng.randrange(m) for _ in p.graph.ops]
        monkeypatch.setattr(cost, "VECTOR_MIN_OPS", 10**9)  # the loop
        want = static_memory(p.graph, place, m)
        monkeypatch.setattr(cost, "VECTOR_MIN_OPS", 0)  # the arrays
        got = static_memory(p.graph, place, m)
        assert got == want and all(type(x) is int for x in got)
        assert static_memory(p.graph, tuple(place), m) == want


def test_static_memory_falls_back_to_the_loop_where_arrays_cannot_be_exact(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Sizes beyond 2**53 whose sum passes 2**63, a float size, a device index out of
    range: the Python integers of the loop (or its IndexError), never a rounded float or
    a wrapped int64."""
    monkeypatch.setattr(cost, "VECTOR_MIN_OPS", 0)
    huge = Graph("g", (Op("a", 1.0, params_bytes=2**62), Op("b", 1.0, params_bytes=2**62)),
                 (Edge(0, 1, 2**61),))
    assert not columns(huge).integral and not columns(huge).exact  # beyond 2**53
    assert static_memory(huge, [0, 0], 1) == [2**63]
    assert static_memory(huge, [0, 1], 2) == [2**62, 2**62 + 2**61]
    many = Graph("g", tuple(Op(f"o{i}", 1.0, params_bytes=2**52) for i in range(2100)), ())
    assert columns(many).integral and not columns(many).exact  # 2100 * 2**52 > 2**63
    assert static_memory(many, [0] * 2100, 1) == [2100 * 2**52]
    floats = Graph("g", (Op("a", 1.0, output_bytes=1.5),), ())
    assert not columns(floats).integral
    assert static_memory(floats, [0], 1) == [1.5]
    with pytest.raises(IndexError):
        static_memory(huge, [0, 5], 2)


@pytest.mark.parametrize("seed", range(40))
def test_start_time_checks_are_the_loop(seed: int) -> None:
    """Intended starts from a real run, then shifted: some earlier (precedence, overlap),
    some exactly at the limit (no violation), some later; unplaced and gpu-only ops on
    cpus (never end) and missing links included."""
    rng = random.Random(1000 + seed)
    p = random_problem(rng, rng.randint(1, 80))
    n, m = len(p.graph.ops), len(p.cluster.devices)
    place = [rng.randrange(m) if rng.random() > 0.05 else -1 for _ in range(n)]
    ref = simulate(p, Plan(tuple(d if d >= 0 else None for d in place)))  # type: ignore[misc]
    start = []
    for s in ref.start_s:
        r = rng.random()
        start.append(INF if not math.isfinite(s) else s if r < 0.4
                     else max(0.0, s - rng.choice([1e-4, 5e-4, 2e-3])) if r < 0.8
                     else s + rng.choice([1e-4, 1e-3]))
    c = costs(p)
    dur = [c.compute[i][d] if d >= 0 else INF for i, d in enumerate(place)]
    found: dict[str, list[Violation]] = {k: [] for k in KINDS}
    check_start_times(p, start, place, dur, found)
    got = found["overlap"] + found["precedence"]
    assert got == start_time_violations(p, start, place, dur)
    assert not any(found[k] for k in KINDS if k not in ("overlap", "precedence"))


def test_start_time_checks_find_violations_on_a_large_plan() -> None:
    """A plan of 3,000 ops (on gpus: every op ends) whose starts move earlier by up to a
    fifth breaks precedence and overlap many times: the checks find exactly the loop's
    violations, in its order."""
    rng = random.Random(7)
    p = random_problem(rng, 3000, kinds=("gpu",))
    m = len(p.cluster.devices)
    place = [rng.randrange(m) for _ in p.graph.ops]
    ref = simulate(p, Plan(tuple(place)))
    start = [s * rng.uniform(0.8, 1.0) for s in ref.start_s]
    c = costs(p)
    dur = [c.compute[i][d] for i, d in enumerate(place)]
    found: dict[str, list[Violation]] = {k: [] for k in KINDS}
    check_start_times(p, start, place, dur, found)
    want = start_time_violations(p, start, place, dur)
    assert len(found["precedence"]) > 100 and len(found["overlap"]) > 100
    assert found["overlap"] + found["precedence"] == want


@pytest.mark.parametrize("seed", range(40))
def test_an_order_checked_at_once_is_the_order_checked_entry_by_entry(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """`_whole_order` takes a complete, consistent order at once; any other order goes
    entry by entry. Both must give the same per-device sequences and violations."""
    rng = random.Random(2000 + seed)
    p = random_problem(rng, rng.randint(0, 30))
    n, m = len(p.graph.ops), len(p.cluster.devices)
    place = [rng.randrange(m) if rng.random() > 0.1 else -1 for _ in range(n)]
    order: list[list[object]] = [[] for _ in range(m)]
    for i in rng.sample(range(n), n):
        if place[i] >= 0:
            order[place[i]].append(i)
    how = rng.randrange(8)
    if how == 1 and n:  # an op on the wrong device, or listed twice
        order[rng.randrange(m)].append(rng.randrange(n))
    elif how == 2 and any(order):  # an op left out
        rng.choice([s for s in order if s]).pop()
    elif how == 3:  # entries that are not ops
        order[0].append(rng.choice([n, -1, 2**70, "x", 1.0, None]))
    elif how == 4:  # a device that does not exist, with or without entries
        order.append(rng.choice([[], [0] if n else []]))
    elif how == 5 and n:  # an unplaced op listed
        order[0].append(next((i for i in range(n) if place[i] < 0), 0))

    def normalized() -> tuple[list[list[int]], list[Violation]]:
        out: list[Violation] = []
        return checks_module.normalize_order(p, order, place, out), out  # type: ignore[arg-type]

    fast = normalized()
    monkeypatch.setattr(checks_module, "_whole_order", lambda *a: None)
    slow = normalized()
    assert fast == slow
    if how == 0:
        monkeypatch.undo()
        assert checks_module._whole_order(order, place, n, m) == slow[0] and not slow[1]

"""Every makespan bound (`planner.bounds`) stays at or below the best plan the simulator
finds by brute force: every placement, and on each every per-device order that some
topological order gives (together every schedule the simulator can run: for fixed orders
it starts each op as early as it can), on small random problems under `memory liveness`
and `static`, `contention none`, `link` and `device`, with pins, a colocation group, a
tie, device kinds, speeds and flop rates, missing links and caps that rule plans out."""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import fields

import pytest

from planner.bounds import Bounds, lower_bound
from planner.model import Cluster, Device, Edge, Graph, Link, Op, Problem, Tie
from planner.plan import Plan
from planner.simulate import simulate

MS = 1e-3
MIB = 2**20
#: the makespan bounds of `Bounds`, their largest included
BOUNDS_S = [f.name for f in fields(Bounds) if f.name.endswith("_s")]
#: violations no order of the placement can mend
PLACEMENT_KINDS = {"pin", "colocation", "unrunnable", "no_link"}


def _op(rng: random.Random, i: int, kinds: bool, flops: bool) -> Op:
    by_kind = {"y": rng.randint(0, 8) * 0.5 * MS} if kinds and rng.random() < 0.4 else {}
    params, output, temp = (rng.choice((0, 100, 400)) * MIB,
                            rng.choice((0, 1, 50, 500)) * MIB, rng.choice((0, 0, 100)) * MIB)
    if flops and rng.random() < 0.5:
        return Op(f"o{i}", None, rng.randint(1, 8) * 1e9, by_kind, params, output, temp)
    return Op(f"o{i}", rng.randint(0, 8) * 0.5 * MS, None, by_kind, params, output, temp)


def _problem(rng: random.Random, memory: str, contention: str) -> Problem:
    n, m = rng.randint(3, 4), rng.randint(2, 3)
    kinds, flops = rng.random() < 0.4, rng.random() < 0.2
    ops = tuple(_op(rng, i, kinds, flops) for i in range(n))
    pairs = sorted({tuple(sorted(rng.sample(range(n), 2))) for _ in range(rng.randint(0, 2 * n))})
    edges = tuple(Edge(a, b, rng.choice((ops[a].output_bytes, rng.randint(0, 600) * MIB)))
                  for a, b in pairs)
    groups = (tuple(sorted(rng.sample(range(n), 2))),) if rng.random() < 0.25 else ()
    ties = (Tie(tuple(sorted(rng.sample(range(n), 2))), 100 * MIB),) \
        if rng.random() < 0.2 else ()
    cap = rng.choice((300, 600, 1000, 2000, 8000))
    devices = tuple(Device(f"d{d}", rng.choice((cap, cap, cap // 2)) * MIB,
                           rng.choice(("x", "y")) if kinds else None,
                           rng.choice((0.5, 1.0, 2.0)),
                           rng.choice((1e12, 2e12, 4e12)) if flops else None)
                    for d in range(m))
    links = tuple(Link(a, b, rng.choice((1e9, 10e9, 100e9)), rng.choice((0.0, 1e-4, 1e-3)))
                  for a in range(m) for b in range(m) if a != b and rng.random() > 0.1)
    pins = {rng.randrange(n): rng.randrange(m)} if rng.random() < 0.3 else {}
    return Problem("p", Graph("g", ops, edges, groups, ties=ties), Cluster("c", devices, links),
                   memory, contention, pins)  # type: ignore[arg-type]


def _best(p: Problem) -> float:
    """The least simulated makespan of a valid plan of `p` (inf when none is valid)."""
    n, m = len(p.graph.ops), len(p.cluster.devices)
    preds = [{e.src for e in p.graph.edges if e.dst == j} for j in range(n)]
    orders = [o for o in itertools.permutations(range(n))
              if all(preds[j] <= set(o[:k]) for k, j in enumerate(o))]
    best = math.inf
    for placement in itertools.product(range(m), repeat=n):
        runs = {tuple(tuple(i for i in o if placement[i] == d) for d in range(m))
                for o in orders}
        for run in sorted(runs):
            r = simulate(p, Plan(placement, run))
            if r.feasible:
                best = min(best, r.makespan_s)
            elif any(v.kind in PLACEMENT_KINDS for v in r.violations):
                break
    return best


@pytest.mark.parametrize(("memory", "contention", "seed"), [
    ("static", "none", 1), ("static", "link", 2), ("static", "device", 3),
    ("liveness", "none", 4), ("liveness", "link", 5), ("liveness", "device", 6),
])
def test_no_plan_beats_a_bound(memory: str, contention: str, seed: int) -> None:
    rng = random.Random(seed)
    solved = 0
    for _ in range(30):
        p = _problem(rng, memory, contention)
        best = _best(p)
        if not math.isfinite(best):
            continue
        solved += 1
        b = lower_bound(p)
        for name in BOUNDS_S:
            assert getattr(b, name) <= best * (1 + 1e-9), (name, p, b, best)
    assert solved >= 12

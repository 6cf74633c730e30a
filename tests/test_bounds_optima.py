"""Every makespan bound stays at or below the optimum that CP-SAT proves, without being told
any of planner's bounds (it takes `lower_bound_s` as a cut, so a bound too high would make it
"prove" that bound), on random small problems of the shapes where each bound rises above
the others."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import fields

import pytest

import planner
from planner.algorithms import Options, run
from planner.algorithms.exact import common, cpsat
from planner.bounds import Bounds, lower_bound
from planner.model import Cluster, Device, Edge, Graph, Link, Op, Problem

MS = 1e-3
#: the fields of `Bounds` that are makespan bounds, `makespan_s` (their largest) aside
BOUNDS_S = [f.name for f in fields(Bounds) if f.name.endswith("_s") and f.name != "makespan_s"]


def _check_against_optima(monkeypatch: pytest.MonkeyPatch, bound: str,
                          make: Callable[[random.Random], Problem], seed: int,
                          count: int) -> tuple[int, int]:
    """Of `count` problems `make` draws, solve each with CP-SAT (20 s), and where it proves
    an optimum assert that neither `bound` (a field of `Bounds`) nor the largest bound is
    above it. Returns how many were proved, and in how many `bound` was above every other
    bound. A problem without a valid plan, or without a proof in time, is left out."""
    monkeypatch.setattr(common, "lower_bound_s", lambda inst: inst.trivial_bound)
    monkeypatch.setattr(cpsat, "lower_bound_s", lambda inst: inst.trivial_bound)
    rng = random.Random(seed)
    proved = above_others = 0
    for _ in range(count):
        problem = make(rng)
        b = lower_bound(problem)
        try:
            sol = run("cpsat", problem, Options(time_limit_s=20))
        except planner.PlannerError:  # no valid plan: no optimum to compare with
            continue
        if sol.info.get("solver_status") != "optimal":
            continue
        proved += 1
        optimum = sol.info["objective_s"]
        value = getattr(b, bound)
        assert value <= optimum * (1 + 1e-9), (problem, b, optimum)
        assert b.makespan_s <= optimum * (1 + 1e-9)
        others = max(getattr(b, name) for name in BOUNDS_S if name != bound)
        above_others += value > others * (1 + 1e-9)
    return proved, above_others


def _large_tensors(rng: random.Random) -> Problem:
    """Large tensors, slow links, memory caps, pins and colocation groups: where edges
    too costly to cross glue ops onto one device (`forced_colocation_s`)."""
    n, m = rng.randint(2, 7), rng.randint(2, 3)
    ops = tuple(Op(f"o{i}", rng.randint(1, 8) * 0.5 * MS,
                   params_bytes=rng.choice((0, 0, 200, 400)) * 2**20,
                   output_bytes=rng.choice((1, 50, 500, 2000)) * 2**20) for i in range(n))
    pairs = sorted({(a, b) for a, b in (sorted(rng.sample(range(n), 2))
                                        for _ in range(rng.randint(1, 2 * n)))})
    edges = tuple(Edge(a, b, ops[a].output_bytes) for a, b in pairs)
    groups = ((0, 1),) if n > 3 and rng.random() < 0.3 else ()
    caps = rng.choice((1, 2, 8)) * 2**30
    devices = tuple(Device(f"d{d}", caps, None, rng.choice((0.5, 1.0, 2.0)))
                    for d in range(m))
    links = tuple(Link(a, b, rng.choice((1e9, 10e9, 100e9)), rng.choice((0.0, 1e-4)))
                  for a in range(m) for b in range(m) if a != b)
    pins = {n - 1: 0} if rng.random() < 0.3 else {}
    return Problem("p", Graph("g", ops, edges, groups), Cluster("c", devices, links),
                   "static", "none", pins)


def _fanning_out(rng: random.Random) -> Problem:
    """A small graph that fans out from its first ops and often joins into its last (the
    shapes the ramp is for), light tensors, devices of different speeds (an op's run
    stretches: the proof's rate below 1), ops that run faster on some devices, and
    sometimes a pin."""
    n, m = rng.randint(4, 9), rng.randint(2, 3)
    ops = tuple(Op(f"o{i}", rng.randint(1, 8) * 0.5 * MS, time_by_kind=(
        {"y": rng.randint(1, 8) * 0.5 * MS} if rng.random() < 0.3 else {}))
        for i in range(n))
    pairs = {(rng.randrange(0, min(j, 2)) if rng.random() < 0.7 else rng.randrange(0, j), j)
             for j in range(1, n)}
    if rng.random() < 0.5:
        pairs |= {(i, n - 1) for i in range(1, n - 1) if rng.random() < 0.6}
    edges = tuple(Edge(a, b, rng.choice((0, 1000, 10**6))) for a, b in sorted(pairs))
    devices = tuple(Device(f"d{d}", 1 << 30, rng.choice(("x", "y")),
                           rng.choice((0.5, 1.0, 2.0))) for d in range(m))
    links = tuple(Link(a, b, 10e9, rng.choice((0.0, 1e-4)))
                  for a in range(m) for b in range(m) if a != b)
    pins = {n - 1: 0} if rng.random() < 0.2 else {}
    return Problem("p", Graph("g", ops, edges), Cluster("c", devices, links), "static",
                   "none", pins)


@pytest.mark.slow
@pytest.mark.parametrize(("bound", "make", "seed", "count"), [
    ("forced_colocation_s", _large_tensors, 2028, 200),
    ("ramp_s", _fanning_out, 2029, 150),
])
def test_never_above_an_optimum_proved_without_planners_bounds(
        monkeypatch: pytest.MonkeyPatch, bound: str, make: Callable[[random.Random], Problem],
        seed: int, count: int) -> None:
    proved, above_others = _check_against_optima(monkeypatch, bound, make, seed, count)
    assert proved >= 100 and above_others >= 10, (proved, above_others)

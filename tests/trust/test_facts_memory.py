"""The least-memory facts against their definition, `Facts.least_bytes`, on random graphs:
the total over all ops and each lone op's unit, in both memory models (`_derive` computes
them in one pass over the ops, not by calling it per op)."""

from __future__ import annotations

import dataclasses
import random

import pytest

from planner.facts import facts
from planner.model import Cluster, Device, Edge, Graph, Link, Op, Problem

MB = 1_000_000


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("memory", ["static", "liveness"])
def test_least_bytes_facts_are_their_definition(seed: int, memory: str) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 40)
    sizes = [0, MB, 3 * MB, 7 * MB]
    ops = tuple(Op(f"o{i}", rng.choice([0.0, 1e-3]), params_bytes=rng.choice(sizes),
                   output_bytes=rng.choice(sizes), temp_bytes=rng.choice(sizes))
                for i in range(n))
    edges = tuple(Edge(a, b, MB) for b in range(1, n) for a in range(b) if rng.random() < 0.1)
    groups = (tuple(sorted(rng.sample(range(n), 2))),) if n >= 4 and rng.random() < 0.5 else ()
    cluster = Cluster("c", (Device("d0", 1 << 40), Device("d1", 1 << 40)),
                      (Link(0, 1, 1e9), Link(1, 0, 1e9)))
    problem = dataclasses.replace(
        Problem("p", Graph("g", ops, edges, groups), cluster), memory_model=memory)
    f = facts(problem)
    assert f.least_total_bytes == f.least_bytes(problem, range(n))
    for u, members in enumerate(f.units):
        assert f.unit_bytes[u] == f.least_bytes(problem, members)
    if memory == "static":  # the definition itself, spelt out
        assert f.least_total_bytes == (sum(o.params_bytes + o.output_bytes for o in ops)
                                       + max(o.temp_bytes for o in ops))

"""The least-memory facts against their definition, `Facts.least_bytes`, on random graphs:
the total over all ops and each lone op's unit, in both memory models (`_derive` computes
them in one pass over the ops, not by calling it per op)."""

from __future__ import annotations

import dataclasses
import random

import pytest

from planner.facts import facts, proofs
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


def unlinked_edges(problem: Problem) -> list[tuple[int, int]]:
    """E305's definition: (consumer, producer) of each edge whose ends' allowed device sets
    are non-empty and disjoint, in different units, with no link from the one to the
    other; one per pair of sets, in edge order."""
    f = facts(problem)
    links = {(lk.src, lk.dst) for lk in problem.cluster.links}
    seen, out = set(), []
    for e in problem.graph.edges:
        a, b = f.allowed[e.src], f.allowed[e.dst]
        if a and b and f.unit_of[e.src] != f.unit_of[e.dst] and not set(a) & set(b) \
                and not any((x, y) in links for x in a for y in b) and (a, b) not in seen:
            seen.add((a, b))
            out.append((e.dst, e.src))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_unlinked_edges_are_found_whether_or_not_any_can_be(seed: int) -> None:
    """E305 on random pins and partial links: the proofs are the definition's, both when a
    pair of disjoint allowed sets exists and when none does (checked without the edges)."""
    rng = random.Random(100 + seed)
    n, m = rng.randint(2, 30), rng.randint(2, 4)
    ops = tuple(Op(f"o{i}", 1e-3) if rng.random() < 0.8
                else Op(f"o{i}", time_by_kind={"gpu": 1e-3}) for i in range(n))
    edges = tuple(Edge(a, b, MB) for b in range(1, n) for a in range(b) if rng.random() < 0.2)
    devices = tuple(Device(f"d{d}", 1 << 40, rng.choice(["gpu", "cpu"])) for d in range(m))
    links = tuple(Link(a, b, 1e9) for a in range(m) for b in range(m)
                  if a != b and rng.random() < 0.5)
    pins = {i: rng.randrange(m) for i in range(n) if rng.random() < 0.3}
    problem = Problem("p", Graph("g", ops, edges), Cluster("c", devices, links), pins=pins)
    got = [p.ops for p in proofs(problem) if p.code == "E305"]
    assert got == unlinked_edges(problem)

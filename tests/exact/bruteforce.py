"""The exhaustive reference: every placement × every order, under contention `none`.

Written apart from the models, from the cost model's rules alone: an op runs for its
compute time on its device; each device runs its ops one at a time in some order; a
producer's output goes to another device once, carrying the largest `bytes` of its edges
to consumers there, arriving `latency + bytes / bandwidth` after the producer ends, and
every consumer there waits for it. Placements must keep pins, colocation groups, runnable
devices, existing links and static memory (`cost.static_memory`) within the caps.

For a fixed placement and per-device orders, earliest start times are optimal, and every
deadlock-free combination of per-device orders is the restriction of some linear extension
of the DAG, so min over (placements × linear extensions) of the earliest-start makespan is
the optimum. Placements are evaluated together with numpy, one linear extension at a time.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from planner.cost import costs, static_memory
from planner.model import Problem


def linear_extensions(n: int, preds: list[set[int]]) -> list[tuple[int, ...]]:
    """Every topological order of ops 0..n-1 given each op's predecessors."""
    out: list[tuple[int, ...]] = []
    order: list[int] = []
    done = [False] * n

    def rec() -> None:
        if len(order) == n:
            out.append(tuple(order))
            return
        for i in range(n):
            if not done[i] and preds[i] <= set(order):
                done[i] = True
                order.append(i)
                rec()
                order.pop()
                done[i] = False

    rec()
    return out


def valid_placements(problem: Problem) -> np.ndarray:
    """All placements (rows) that respect pins, colocation, runnable devices, links, memory."""
    g = problem.graph
    n, m = len(g.ops), len(problem.cluster.devices)
    c = costs(problem)
    caps = [d.memory_bytes for d in problem.cluster.devices]
    rows = []
    for pl in itertools.product(range(m), repeat=n):
        if any(pl[i] != d for i, d in problem.pins.items()):
            continue
        if any(len({pl[i] for i in grp}) > 1 for grp in g.colocations):
            continue
        if any(math.isinf(c.compute[i][pl[i]]) for i in range(n)):
            continue
        if any(pl[e.src] != pl[e.dst] and math.isinf(c.latency[pl[e.src]][pl[e.dst]])
               for e in g.edges):
            continue
        if any(u > cap for u, cap in zip(static_memory(g, pl, m), caps, strict=True)):
            continue
        rows.append(pl)
    return np.array(rows, dtype=np.int64).reshape(len(rows), n)


def optimum(problem: Problem) -> tuple[float, tuple[int, ...] | None, tuple[int, ...] | None]:
    """(optimal makespan, a best placement, a best global order); inf when infeasible."""
    g = problem.graph
    n, m = len(g.ops), len(problem.cluster.devices)
    c = costs(problem)
    pls = valid_placements(problem)
    if len(pls) == 0:
        return math.inf, None, None
    P = len(pls)
    comp = np.array(c.compute, dtype=float)  # (n, m)
    lat = np.array(c.latency, dtype=float)
    inv = np.array(c.inv_bandwidth, dtype=float)
    rows = np.arange(P)
    # bytes of the one copy of p's output sent to device b (0 when none goes there)
    copy = np.zeros((n, m, P))
    for e in g.edges:
        for b in range(m):
            goes = (pls[:, e.dst] == b) & (pls[:, e.src] != b)
            copy[e.src, b] = np.where(goes, np.maximum(copy[e.src, b], e.bytes), copy[e.src, b])
    preds: list[set[int]] = [set() for _ in range(n)]
    delay: dict[tuple[int, int], np.ndarray] = {}
    for e in g.edges:
        if e.src == e.dst:
            continue
        preds[e.dst].add(e.src)
        a, b = pls[:, e.src], pls[:, e.dst]
        t = np.where(a == b, 0.0, lat[a, b] + copy[e.src, b, rows] * inv[a, b])
        key = (e.src, e.dst)
        delay[key] = np.maximum(delay[key], t) if key in delay else t
    dur = comp[np.arange(n)[None, :], pls]  # (P, n)
    best = np.full(P, math.inf)
    best_order = np.full(P, -1)
    exts = linear_extensions(n, preds)
    for k, order in enumerate(exts):
        free = np.zeros((P, m))
        finish = np.zeros((P, n))
        for i in order:
            d = pls[:, i]
            t = free[rows, d]
            for p in preds[i]:
                t = np.maximum(t, finish[:, p] + delay[(p, i)])
            finish[:, i] = t + dur[:, i]
            free[rows, d] = finish[:, i]
        mk = finish.max(axis=1)
        better = mk < best
        best = np.where(better, mk, best)
        best_order = np.where(better, k, best_order)
    j = int(np.argmin(best))
    return float(best[j]), tuple(int(d) for d in pls[j]), exts[int(best_order[j])]

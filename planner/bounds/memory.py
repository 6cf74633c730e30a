"""What memory forces: the fewest devices a plan needs (`min_devices`) and the transfers
it forces onto a path (`memory_path_s`).

`min_devices` (`memory_bound`): the fewest devices whose caps sum to at least the least
total bytes a plan must hold (`planner.facts`), the largest caps first.

`memory_path_s`: transfers forced by memory on a path. Take a path `v_1 -> ... -> v_k`
and any valid plan; cut the path into maximal runs of consecutive ops on one device. A
run lies on one device with the whole placement unit of each of its ops, so the least
bytes of those units together (`planner.facts`, under the plan's memory model) are at
most the largest device cap; and the tensor of the path edge between two runs crosses
devices, so the second run starts at least the edge's least transfer time (over the
distinct, linked device pairs its ends may use; no cut inside a unit) after the first
ends. So the path takes at least the sum of its ops' fastest times plus the cheapest
set of cuts that leaves every run within the largest cap (`_cheapest_cuts`, a sliding
window over the path, O(k log k)). It is evaluated on two paths: the critical path and
the path holding the most bytes; it exceeds `critical_path_s` only when memory forces a
path apart, e.g. a ResNet chain whose weights fill more than one device.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Any

import numpy as np

from ..cost import INF, costs, transfer_seconds
from ..facts import Facts, facts
from ..model import Problem


def path_bytes(problem: Problem) -> list[float] | None:
    """The op weights of the memory path's path of most bytes (what an op's unit holds
    for the whole step under the memory model); None when the whole graph fits on one
    device, so that no cut is forced and `memory_path_s` is 0."""
    f = facts(problem)
    if f.least_total_bytes <= max(d.memory_bytes for d in problem.cluster.devices):
        return None
    ops = problem.graph.ops
    if problem.memory_model == "liveness":
        return [float(o.params_bytes) for o in ops]
    return [float(o.params_bytes + o.output_bytes) for o in ops]


def memory_path(problem: Problem, fastest: list[float],
                 paths: tuple[list[int], list[int]]) -> float:
    """`memory_path_s` (module docstring): the critical path and the path of most bytes
    (`paths`: `heaviest_path` of `fastest` and of `path_bytes`), each with the cheapest
    cuts that memory forces on it."""
    f = facts(problem)
    cap = max(d.memory_bytes for d in problem.cluster.devices)
    best = 0.0
    parts = _unit_parts(problem, f)
    for path in paths:
        cuts = _cheapest_cuts(problem, path, cap, parts)
        if cuts < INF:
            best = max(best, math.fsum(fastest[i] for i in path) + cuts)
    return best


def heaviest_path(g: Any, weight: list[float]) -> list[int]:
    """The ops of a path of largest total `weight` (ties: the first found), in order."""
    edges, pred = g.edges, g.predecessors
    total = [0.0] * len(g.ops)
    back = [-1] * len(g.ops)
    for j in g.topological_order:
        best, arg = 0.0, -1
        for k in pred[j]:
            i = edges[k].src
            if total[i] > best or arg < 0:
                best, arg = total[i], i
        total[j], back[j] = best + weight[j], arg
    return back_path(np.array(total), np.array(back, dtype=np.int64))


def _cheapest_cuts(problem: Problem, path: list[int], cap: int,
                   part: list[tuple[int, int, int]]) -> float:
    """Least total transfer time of cuts that split `path` into runs whose units fit `cap`
    together (INF when a single op's units do not: no plan exists, `facts.proofs` says why);
    `part`: `_unit_parts`.

    `best[j]`: the cheapest cuts of `path[:j + 1]` with a run ending at `j`; a run may
    start at `i` when the units of `path[i..j]` fit, and the smallest such `i` only grows
    with `j`, so a sliding window (units counted in and out) and a monotone deque of
    `start[i]` (the cost of having cut before `i`) give every `best[j]` in one pass.
    """
    f = facts(problem)
    between = _cut_costs(problem, f, path)
    count: dict[int, int] = {}
    window = _Window(problem.memory_model)
    start: list[float] = []
    best: list[float] = []
    lo = 0
    deque: list[int] = []  # positions i in [lo, j], start[i] increasing
    head = 0
    for j, op in enumerate(path):
        start.append(0.0 if j == 0 else best[j - 1] + between[j - 1])
        while head < len(deque) and start[deque[-1]] >= start[j]:
            deque.pop()
        deque.append(j)
        u = f.unit_of[op]
        count[u] = count.get(u, 0) + 1
        if count[u] == 1:
            window.add(u, part[u])
        while lo < j and window.need() > cap:
            v = f.unit_of[path[lo]]
            count[v] -= 1
            if count[v] == 0:
                window.remove(v, part[v])
            lo += 1
        if window.need() > cap:
            return INF  # one op's units alone do not fit
        while deque[head] < lo:
            head += 1
        best.append(start[deque[head]])
    return best[-1] if best else 0.0


def _cut_costs(problem: Problem, f: Facts, path: list[int]) -> list[float]:
    """The path's edges: the cheapest transfer across each (INF where no cut is possible:
    both ends in one unit)."""
    c = costs(problem)
    g = problem.graph
    between: list[float] = []
    # per pair of allowed sets, the distinct (latency, s/B) of their linked device pairs:
    # the same minimum as `transfer_time` over every pair, without D² calls per edge
    links: dict[tuple[tuple[int, ...], tuple[int, ...]], list[tuple[float, float]]] = {}
    for a, b in itertools.pairwise(path):
        if f.unit_of[a] == f.unit_of[b]:
            between.append(INF)
            continue
        nbytes = min((g.edges[k].bytes for k in g.predecessors[b] if g.edges[k].src == a),
                     default=0)
        key = (f.allowed[a], f.allowed[b])
        pairs = links.get(key)
        if pairs is None:
            pairs = links[key] = sorted({(c.latency[x][y], c.inv_bandwidth[x][y])
                                         for x in key[0] for y in key[1]
                                         if x != y and c.latency[x][y] < INF})
        between.append(min((transfer_seconds(lat, inv, nbytes) for lat, inv in pairs),
                           default=INF))
    return between


def _unit_parts(problem: Problem, f: Any) -> list[tuple[int, int, int]]:
    """Per unit, what it adds to a device's least bytes (`facts._least_bytes`): (summed
    part, its largest single buffer, its sinks' outputs); static memory has no sink part."""
    ops, succ = problem.graph.ops, problem.graph.successors
    liveness = problem.memory_model == "liveness"
    parts = []
    for members in f.units:
        summed = peak = sinks = 0
        for i in members:
            o = ops[i]
            if liveness:
                summed += o.params_bytes
                peak = max(peak, o.output_bytes + o.temp_bytes)
                if not succ[i]:
                    sinks += o.output_bytes
            else:
                summed += o.params_bytes + o.output_bytes
                peak = max(peak, o.temp_bytes)
        parts.append((summed, peak, sinks))
    return parts


class _Window:
    """The least bytes of a changing set of units: sums kept as totals, the largest buffer
    by a heap whose entries of removed units are skipped."""

    def __init__(self, memory_model: str) -> None:
        self.summed = self.sinks = 0
        self.heap: list[tuple[int, int]] = []
        self.present: set[int] = set()
        self.liveness = memory_model == "liveness"

    def add(self, u: int, part: tuple[int, int, int]) -> None:
        self.summed += part[0]
        self.sinks += part[2]
        self.present.add(u)
        heapq.heappush(self.heap, (-part[1], u))

    def remove(self, u: int, part: tuple[int, int, int]) -> None:
        self.summed -= part[0]
        self.sinks -= part[2]
        self.present.discard(u)

    def need(self) -> int:
        while self.heap and self.heap[0][1] not in self.present:
            heapq.heappop(self.heap)
        peak = -self.heap[0][0] if self.heap else 0
        if self.liveness:
            return self.summed + max(peak, self.sinks)
        return self.summed + peak


def back_path(total: np.ndarray, back: np.ndarray) -> list[int]:
    """The path ending at the first op of largest `total`, following `back`, in order."""
    if not len(total):
        return []
    j = int(np.argmax(total))
    path = []
    while j >= 0:
        path.append(j)
        j = int(back[j])
    return path[::-1]


def memory_bound(problem: Problem) -> tuple[int, int]:
    """(least total bytes under the memory model, fewest devices whose caps could hold them)."""
    need = facts(problem).least_total_bytes
    caps = sorted((d.memory_bytes for d in problem.cluster.devices), reverse=True)
    held = 0
    for k, cap in enumerate(caps, 1):
        held += cap
        if held >= need:
            return need, k if problem.graph.ops else 0
    return need, len(caps) + 1

"""The graph as the event loop reads it, and the upward rank dynamic dispatch breaks ties
by; both cached (on the graph, on the problem): neither depends on the placement."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..cost import columns, costs, transfer_seconds
from ..model import Graph, Problem, derived

__all__ = ["GraphTables", "graph_tables", "upward_rank"]


def upward_rank(problem: Problem) -> tuple[float, ...]:
    """Per op, its upward rank under mean costs (HEFT; Topcuoglu et al., 2002).

    `rank(i) = mean_compute(i) + max over edges i->j of (mean_transfer(bytes) + rank(j))`,
    with the means of `cost.Costs` (mean transfer is linear in bytes, so it is computed as
    mean latency + bytes * mean seconds per byte). Cached on the problem: it does not
    depend on the placement.
    """
    return derived(problem, "_upward_rank", lambda: _upward_rank(problem))


def _upward_rank(problem: Problem) -> tuple[float, ...]:
    g = problem.graph
    c = costs(problem)
    lat = c.mean_latency
    inv = c.mean_inv_bandwidth
    t = graph_tables(g)
    e_dst, e_bytes = t.e_dst, t.e_bytes
    succ = g.successors
    mean = c.mean_compute
    rank = [0.0] * len(g.ops)
    for i in reversed(t.topo):
        best = 0.0
        for k in succ[i]:
            v = transfer_seconds(lat, inv, e_bytes[k]) + rank[e_dst[k]]
            if v > best:  # noqa: PLR1730 (hot loop: a call to max() costs more)
                best = v
        rank[i] = mean(i) + best
    return tuple(rank)


@dataclass(frozen=True)
class GraphTables:
    """Per-graph lists the event loop indexes (cached on the graph), made from the graph's
    `cost.Columns` with `tolist()`, which lays out new ints side by side: the model's own
    (an edge's `dst`, the topological order's) are spread over memory, and at 100,000 ops
    reading them costs more per op than at 10,000."""

    #: per edge, its consumer and bytes
    e_dst: list[int]
    e_bytes: list[int]
    #: the ops in `Graph.topological_order`, and each op's position in it
    topo: list[int]
    pos: list[int]


def graph_tables(graph: Graph) -> GraphTables:
    return derived(graph, "_sim_tables", lambda: _build_tables(graph))


def _build_tables(graph: Graph) -> GraphTables:
    cols = columns(graph)
    n = len(graph.ops)
    e_bytes = (cols.nbytes.tolist() if cols.integral
               else [e.bytes for e in graph.edges])  # a float or huge size stays as given
    topo = np.array(graph.topological_order, dtype=np.int64)
    pos = np.empty(n, dtype=np.int64)
    pos[topo] = np.arange(n)
    return GraphTables(cols.dst.tolist(), e_bytes, topo.tolist(), pos.tolist())

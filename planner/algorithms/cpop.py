"""CPOP: Critical Path On a Processor, with memory caps.

Topcuoglu, Hariri and Wu, "Performance-effective and low-complexity task scheduling for
heterogeneous computing", IEEE TPDS 13(3), 2002.

Priority = upward rank + downward rank (mean costs). The critical path starts at the entry
op of highest priority and follows, from each op, the successor of highest priority (ties by
topological position) to an exit. The critical-path device is the one with the smallest
total compute time of the critical-path ops (ties by smaller index). Ready ops go in
decreasing priority: a critical-path op to the critical-path device when it may go there and
fits in memory, every other op to the device of earliest finish with insertion (as in HEFT,
data arriving under the plan's contention model). See `listsched` for the shared rules
(colocation groups are bound by their first data-carrying member; after a memory dead end,
retries with budgets, then m-TOPO's placement: `listsched.memory_passes`).

Time: O(V log V + E·D + V·D·g), as HEFT.
"""

from __future__ import annotations

from ..cost import INF
from ..model import Problem
from .base import Options, Solution
from .listsched import (
    Instance,
    downward_rank,
    insertion_schedule,
    memory_passes,
    priority_positions,
    solution,
    upward_rank,
)


def critical_path(inst: Instance, priority: list[float]) -> list[int]:
    """The critical path: from the best entry op, always the best successor, to an exit."""
    if inst.n == 0:
        return []
    pos = inst.topo_pos
    entries = [i for i in range(inst.n) if not inst.pred[i]]
    i = min(entries, key=lambda k: (-priority[k], pos[k]))
    path = [i]
    while inst.succ[i]:
        i = min((j for j, _ in inst.succ[i]), key=lambda k: (-priority[k], pos[k]))
        path.append(i)
    return path


def place(problem: Problem, options: Options) -> Solution:
    """Place and order `problem`'s ops with CPOP; raises `InfeasibleError` when stuck."""
    inst = Instance.of(problem)
    up, down = upward_rank(inst), downward_rank(inst)
    priority = [u + d for u, d in zip(up, down, strict=True)]
    path = critical_path(inst, priority)
    cp_device = -1
    if path:
        totals = [sum(inst.compute[i][d] for i in path) for d in range(inst.m)]
        cp_device = min(range(inst.m), key=lambda d: (totals[d], d))
        if totals[cp_device] == INF:
            cp_device = -1
    on_path = [False] * inst.n
    for i in path:
        on_path[i] = True
    prank = priority_positions(inst, priority)
    placement, start, status, info = memory_passes(
        inst, "cpop", lambda placer: insertion_schedule(
            placer.inst, placer, prank, preferred=lambda i: cp_device if on_path[i] else -1))
    return solution(inst, placement, start, "cpop", status, **info, critical_path_ops=len(path),
                    critical_path_device=problem.cluster.devices[cp_device].name
                    if cp_device >= 0 else None)

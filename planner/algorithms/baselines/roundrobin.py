"""`roundrobin`: ops in topological order dealt to the devices in turn.

A baseline, not from a paper. Op by op in topological order (ties by op index), the next
device in turn that may run the op and has room for it (static memory) takes it; pinned ops
and later members of a colocation group go where they must. The order is dynamic dispatch
(`listsched.schedule_fixed`).

Time: O(V·D) placement (a memory check per device tried) plus O((V + E)·log V).
"""

from __future__ import annotations

from ...model import Problem
from ..base import Options, Solution
from ..listsched import Instance, Placer, Stuck, fill_and_order, solution


def place(problem: Problem, options: Options) -> Solution:
    """Deal the ops to the devices in turn, skipping devices without room."""
    inst = Instance.of(problem)

    def deal(placer: Placer) -> None:
        turn = 0
        for i in inst.topo:
            allowed = placer.allowed(i)
            ring = sorted(allowed, key=lambda d: (d - turn) % inst.m)
            d = next((d for d in ring if placer.fits(i, d)), -1)
            if d < 0:
                raise Stuck(i)
            placer.commit(i, d)
            if len(allowed) > 1:
                turn = (d + 1) % inst.m

    placement, start, info = fill_and_order(inst, "roundrobin", deal)
    return solution(inst, placement, start, "roundrobin", **info)

"""m-TOPO: fill devices in topological order up to a balanced memory budget.

Baechi's m-TOPO (Jeon et al., "Baechi: fast device placement of machine learning graphs",
ACM SoCC 2020).

Walk the ops in topological order (ties by op index) and fill device after device: an op
goes to the current device while the device's static memory stays within its budget,
`min(device memory, total static memory / number of devices + largest unit)`, where the
total counts every op's params, output and temp, and the largest unit is the largest op or
colocation group. When an op does not fit, the walk moves on to the next device (never
back). A colocation group goes where its first op goes, whole (its memory reserved); pinned
ops go to their pins. If the walk runs past the last device, the remaining ops (still in
topological order) spill to the first device where they fit within the real memory cap
(budgets balance the load; they are not what makes a plan fail); an op that fits nowhere
raises `InfeasibleError` with the diagnosis. The placement is then ordered by dynamic dispatch
(`listsched.schedule_fixed`).

Time: O(V + E) for the walk (each op tries the current device, or O(D) devices in the
spill), plus O((V + E)·log V) for the ordering.
"""

from __future__ import annotations

from ..model import Problem
from .base import AlgorithmInfo, Options, Solution
from .listsched import Instance, Placer, explain_stuck, schedule_fixed, solution


def budgets(inst: Instance) -> list[int]:
    """Per device: min(its memory, total static memory // devices + largest unit)."""
    total = sum(inst.po) + sum(inst.temp)
    largest = max((p + t for p, t in zip(inst.po, inst.temp)), default=0)
    for members in inst.groups:
        largest = max(largest, sum(inst.po[i] for i in members) + max(inst.temp[i] for i in members))
    share = total // max(inst.m, 1) + largest
    return [min(cap, share) for cap in inst.caps]


def place(problem: Problem, options: Options) -> Solution:
    """Place `problem`'s ops with m-TOPO and order them; raises `InfeasibleError` if stuck."""
    inst = Instance(problem)
    placer = Placer(inst)
    budget = budgets(inst)
    current = 0
    for i in inst.topo:
        allowed = placer.allowed(i)
        forced = len(allowed) == 1 and (inst.pin[i] >= 0 or (
            inst.group_of[i] >= 0 and placer.group_dev[inst.group_of[i]] >= 0))
        if forced:
            d = allowed[0]
            if not placer.fits(i, d):
                raise explain_stuck(placer, "mtopo", i)
            placer.commit(i, d)
            continue
        chosen = -1
        while current < inst.m:
            if current in allowed:
                if placer.fits(i, current, budget):
                    chosen = current
                    break
                current += 1  # the current device is full
                continue
            # the op cannot run here: a later device, without giving this one up
            chosen = next((d for d in allowed if d > current and placer.fits(i, d, budget)), -1)
            break
        if chosen < 0:  # spill: first device with room under its real cap
            chosen = next((d for d in allowed if placer.fits(i, d)), -1)
            if chosen < 0:
                raise explain_stuck(placer, "mtopo", i)
        placer.commit(i, chosen)
    placement = list(placer.device_of)
    _, start = schedule_fixed(inst, placement)
    return solution(inst, placement, start, "mtopo", budget_bytes=tuple(budget))


INFO = AlgorithmInfo(
    name="mtopo",
    place=place,
    summary="memory-balanced topological fill (Baechi's m-TOPO)",
    memory_aware=True,
    citation="Jeon et al., Baechi, SoCC 2020",
)

"""m-TOPO's memory-balanced walk, shared by m-TOPO and by every list scheduler's last
retry (`retry.memory_passes`): `topo_budgets` (the per-device budget) and `topo_fill`.
"""

from __future__ import annotations

from .instance import Instance
from .placer import Placer, Stuck

__all__ = ["topo_budgets", "topo_fill"]


def topo_budgets(inst: Instance) -> list[int]:
    """m-TOPO's budget per device: min(its memory, total static memory // devices + largest
    unit), where the total counts every op's params, output and temp, and the largest unit
    is the largest op or colocation group."""
    total = sum(inst.po) + sum(inst.temp)
    largest = max((p + t for p, t in zip(inst.po, inst.temp, strict=True)), default=0)
    for members in inst.model_groups:
        largest = max(largest, sum(inst.po[i] for i in members)
                      + max(inst.temp[i] for i in members))
    share = total // max(inst.m, 1) + largest
    return [min(cap, share) for cap in inst.caps]


def topo_fill(inst: Instance, placer: Placer, *, share: bool = True) -> None:
    """m-TOPO's walk (see `mtopo`): ops in topological order fill device after device up to
    `topo_budgets` (or the placer's budget: a retry's, `fill_and_order`), then spill to the
    first device with room under its real cap. Without `share` (`mtopo`'s last retry) the
    walk spills from its first op: each op, in topological order, goes to the first device
    with room under its real cap (first fit, where the walk is next fit: it never goes back
    to a device it left, so a large op that moved it on left the ops after it no way back
    to the room before it).

    Places every op through `placer`; raises `Stuck` for an op that fits nowhere. O(V + E),
    plus O(D) devices tried per op in the spill.
    """
    budget = topo_budgets(inst) if placer.budget is None else placer.budget
    current = 0 if share else inst.m  # past the last device: every op spills
    for i in inst.topo:
        allowed = placer.allowed(i)
        forced = len(allowed) == 1 and (inst.pin[i] >= 0 or (
            inst.group_of[i] >= 0 and placer.group_dev[inst.group_of[i]] >= 0))
        if forced:
            d = allowed[0]
            if not placer.fits(i, d, inst.caps):
                raise Stuck(i)
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
            chosen = next((d for d in allowed if placer.fits(i, d, inst.caps)), -1)
            if chosen < 0:
                raise Stuck(i)
        placer.commit(i, chosen)

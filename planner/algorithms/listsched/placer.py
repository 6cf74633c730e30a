"""`Placer`: the constraints of a partial placement, and `Stuck`, a driver's dead end.

Which devices an op may still go to (runnable, pins, its colocation group's device) and
whether it fits in memory there (`planner.cost.StaticMemoryTracker`, plus reservations for
colocation groups); the memory budget of a retry (`budget`, `spill`: see `retry`).

Twin: `planner.algorithms.listsched._engine_kernel` repeats `need`, `fits` and `commit` for
a placer without budget; the hand-derived battery (`tests/algorithms`, with the
`list_engine` fixture) and `tests/algorithms/test_engine_kernel.py` run over both.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...cost import StaticMemoryTracker
from .instance import Instance
from .room import HeldRoom

__all__ = ["Placer", "Stuck"]


class Stuck(Exception):
    """A list scheduler found no device for op `op` (memory or constraints); see infeasible.py."""

    def __init__(self, op: int) -> None:
        super().__init__(op)
        self.op = op


class Placer:
    """Pins, colocation and memory of a partial placement (see `listsched`'s rules).

    `need(i, d)` only grows as more ops are placed (reservations turn into real use), so an
    op that does not fit on a device never fits there later.

    `budget` (bytes per device, see `memory_passes`) limits the ops whose device is still a
    choice; an op whose device is forced (pinned, or its colocation group bound) may use the
    device's whole memory, so room kept back by the budget serves the forced ops. With
    `placement` every op's device is given (a placement found by another rule), and only
    that device is allowed. With `reserve_pins` the room of the ops that must go to a device
    (pinned there, or fitting nowhere else) and of the copies they receive is held there
    until they are placed (`room.HeldRoom`): an op fits only where it leaves that room, a
    condition every plan meets, so a pass that succeeds without it runs the same with it.
    """

    def __init__(self, inst: Instance, budget: Sequence[int] | None = None,
                 placement: Sequence[int] | None = None, *, unbounded: bool = False,
                 reserve_pins: bool = False) -> None:
        self.inst = inst
        self.budget = budget
        self.placement = placement
        #: memory is not checked here (`liveness_pass` checks the whole plan by simulation)
        self.unbounded = unbounded
        #: per op: fits under its budget on no device, so it may use the whole memory
        self.spilled = [False] * inst.n
        self.tracker = StaticMemoryTracker(inst.problem.graph, inst.m)
        self.device_of: list[int] = self.tracker.device_of
        self.group_dev = [-1] * len(inst.groups)
        self.group_po_left = [sum(inst.po[i] for i in g) for g in inst.groups]
        # reservations per device: params+outputs of unplaced members of bound groups, and
        # per bound group the largest temp among its unplaced members
        self.res_po = [0] * inst.m
        self.res_temp: list[dict[int, int]] = [{} for _ in range(inst.m)]
        #: with `reserve_pins` (the retries of `memory_passes`), the room held on each
        #: device for the ops that must go there and the copies they receive (`room`): no
        #: op may take it (`fits`)
        self.room = HeldRoom(inst, self.tracker) if reserve_pins else None

    def allowed(self, i: int) -> tuple[int, ...]:
        """The devices op `i` may go to now."""
        inst = self.inst
        if self.placement is not None:
            return (self.placement[i],)
        g = inst.group_of[i]
        if g >= 0 and self.group_dev[g] >= 0:
            d = self.group_dev[g]
            return (d,) if d in inst.allowed[i] else ()
        return inst.allowed[i]

    def _unplaced_temp(self, g: int, without: int) -> int:
        """Largest temp among group `g`'s unplaced members other than op `without`."""
        temp, dev = self.inst.temp, self.device_of
        return max((temp[j] for j in self.inst.groups[g] if dev[j] < 0 and j != without),
                   default=0)

    def need(self, i: int, d: int) -> int:
        """Bytes device `d` would hold, reservations included, after placing op `i` there."""
        inst = self.inst
        tr = self.tracker
        total = tr.used[d] + tr.extra(i, d) + self.res_po[d]
        g = inst.group_of[i]
        res = self.res_temp[d]
        rest_temp = max((t for gg, t in res.items() if gg != g), default=0)
        if g >= 0:
            if self.group_dev[g] < 0:  # first member: reserve the rest of the group
                total += self.group_po_left[g]
            total -= inst.po[i]
            rest_temp = max(rest_temp, self._unplaced_temp(g, i))
        new_temp = max(tr.temp[d], inst.temp[i])
        if rest_temp > new_temp:
            total += rest_temp - new_temp
        return total

    def fits(self, i: int, d: int, caps: Sequence[int] | None = None) -> bool:
        """Whether op `i` fits on device `d` (within `caps`; by default the devices' memory,
        or the budget when op `i`'s device is still a choice)."""
        if self.unbounded:
            return True
        need = self.need(i, d)
        # the room held for the ops that must go to `d`: a plan needs it there
        if self.room is not None and need + self.room.left(i, d) > self.inst.caps[d]:
            return False
        if caps is None:
            caps = self.inst.caps
            if self.budget is not None and not self.spilled[i] and not self.forced(i):
                caps = self.budget
        return need <= caps[d]

    def spill(self, i: int) -> bool:
        """Let op `i`, over its budget on every device it may use, use the whole memory (as
        m-TOPO's walk spills); False when it was not held to a budget (no budget, spilled
        already, or its device is forced)."""
        if self.budget is None or self.spilled[i] or self.forced(i):
            return False
        self.spilled[i] = True
        return True

    def forced(self, i: int) -> bool:
        """Whether op `i`'s device is no longer a choice (pinned, or its group bound)."""
        g = self.inst.group_of[i]
        return self.inst.pin[i] >= 0 or (g >= 0 and self.group_dev[g] >= 0)

    def commit(self, i: int, d: int) -> None:
        """Place op `i` on device `d` (charging memory, binding its colocation group)."""
        inst = self.inst
        self.tracker.place(i, d)
        g = inst.group_of[i]
        if self.room is not None:
            self.room.commit(i, d)
        if g < 0:
            return
        if self.group_dev[g] < 0:
            self.group_dev[g] = d
            self.res_po[d] += self.group_po_left[g]
        self.res_po[d] -= inst.po[i]
        self.group_po_left[g] -= inst.po[i]
        if any(self.device_of[j] < 0 for j in inst.groups[g]):
            self.res_temp[d][g] = self._unplaced_temp(g, i)
        else:
            self.res_temp[d].pop(g, None)

"""`HeldRoom`: the memory the retries of `memory_passes` keep on a device for the ops that
must go there (`Placer(reserve_pins=True)`), and `memory_forced`, the ops only one device
can hold.

An op *held* on device `d` is pinned to `d`, or a lone op whose least footprint fits on `d`
alone (`memory_forced`). Held on `d` until it is placed (a colocation group's members until
the first binds it: `Placer` then reserves the rest): its params and output, and the copy
of each input it receives from a producer not pinned to `d` (while that producer is
unplaced, the least of the copy and the producer's own params and output, one of which `d`
will hold; once it is placed elsewhere, the copy less what `d` already holds of it; nothing
once it is placed on `d`). So an op fits on `d` only where it leaves that room, a condition
every plan meets: each figure held is at most what `d` holds in the end. Why the copies: an
op pinned to gpu0 and receiving 4.29 GiB from its producer found gpu0 filled by the ops
before it in every retry, though the room for its own params was kept (two 12.3 GiB GPUs).
With a 1 GiB constant following it (one group), not even its own room was kept. Why
`memory_forced`: a packing dead end, no pin in sight: ops of 5.97, 5.55 and 5.73 GiB in a
chain on devices of 8.23, 8.62 and 8.05 GiB, where the last, with the 2.6 GiB it receives,
fits on the 8.62 GiB device only; every pass gave that device to the second op, which
fitted anywhere. Its room held there, the second op goes to the 8.05 GiB device. This is no
packing search: an op that two devices could hold is not held, so a dead end between such
ops stays one.

Every figure changes only when an op is placed, by O(its edges + the held consumers of its
producers), so a pass costs what it did plus that; `memory_forced` runs once per instance,
in O(V·D + E), and only once a first pass has dead-ended.
"""

from __future__ import annotations

from ...cost import StaticMemoryTracker
from .instance import Instance

__all__ = ["HeldRoom", "memory_forced"]

Key = tuple[int, int]  # (producer, device)


def memory_forced(inst: Instance) -> list[int]:
    """Per op, the one device that can hold it, else -1: a lone, unpinned op whose least
    footprint (params, output, temp, and per producer the least of the copy it receives
    and the producer's own params and output) fits on one of its devices only. O(V·D + E),
    once per instance."""
    if inst.forced_by_memory is not None:
        return inst.forced_by_memory
    out = [-1] * inst.n
    po, caps = inst.po, inst.caps
    for i in range(inst.n):
        if inst.group_of[i] >= 0 or inst.pin[i] >= 0:
            continue
        inputs: dict[int, int] = {}
        for p, b in inst.pred[i]:
            inputs[p] = max(inputs.get(p, 0), b)
        least = po[i] + inst.temp[i] + sum(min(b, po[p]) for p, b in inputs.items())
        room = [d for d in inst.allowed[i] if least <= caps[d]]
        if len(room) == 1:
            out[i] = room[0]
    inst.forced_by_memory = out
    return out


class HeldRoom:
    """Bytes held per device (`total`) for the ops held there (see the module docstring),
    kept as ops are placed (`commit`); `left(i, d)`, what stays held if op `i` goes to
    `d`."""

    def __init__(self, inst: Instance, tracker: StaticMemoryTracker) -> None:
        self.inst = inst
        self.tracker = tracker
        held = list(inst.pin)
        for i, d in enumerate(memory_forced(inst)):
            if d >= 0:
                held[i] = d
        #: per op, the device it is held on, or -1
        self.held = held
        self.total = [0] * inst.m
        #: per lone op, whether its params and output are held; per colocation group, the
        #: params and outputs of its members held (until its first member binds it, when
        #: `Placer`'s reservation of the group takes over)
        self.po_held = [d >= 0 and g < 0 for d, g in zip(held, inst.group_of, strict=True)]
        self.group_held = [0] * len(inst.groups)
        self.group_on = [-1] * len(inst.groups)  # the device a group's room is held on
        #: per (producer, device): the held consumers there not placed yet, with bytes
        self.waiting: dict[Key, dict[int, int]] = {}
        self.value: dict[Key, int] = {}  # per (producer, device): bytes held now
        self.devices_of: dict[int, list[int]] = {}  # producer -> devices it is held on
        for i, d in enumerate(held):
            if d < 0:
                continue
            self.total[d] += inst.po[i]
            if inst.group_of[i] >= 0:
                self.group_held[inst.group_of[i]] += inst.po[i]
                self.group_on[inst.group_of[i]] = d
            for p, b in inst.pred[i]:
                if b > 0 and inst.pin[p] != d and held[p] != d:
                    waiting = self.waiting.setdefault((p, d), {})
                    waiting[i] = max(waiting.get(i, 0), b)
        for key in self.waiting:
            self.devices_of.setdefault(key[0], []).append(key[1])
            self.value[key] = v = self._value(key)
            self.total[key[1]] += v

    def _value(self, key: Key, without: int = -1, landed: int = 0) -> int:
        """Bytes held for producer `key[0]`'s copy on device `key[1]`: without consumer
        `without`, and with `landed` bytes of it on the device (what a placement would
        copy)."""
        p, d = key
        need = max((b for c, b in self.waiting[key].items() if c != without), default=0)
        where = self.tracker.device_of[p]
        if where == d:
            return 0
        if where < 0:
            return min(need, self.inst.po[p])
        return max(0, need - max(self.tracker.copies.get(key, 0), landed))

    def left(self, i: int, d: int) -> int:
        """Bytes that stay held on `d` for other ops if op `i` goes there (what `i` brings
        there is counted by the tracker)."""
        left = self.total[d]
        if not left:
            return 0
        inst, value, waiting = self.inst, self.value, self.waiting
        held = self.held[i] == d
        if held:  # what `Placer.need` counts: its own, or its unbound group's
            g = inst.group_of[i]
            left -= self.group_held[g] if g >= 0 else inst.po[i] if self.po_held[i] else 0
        if (i, d) in value:  # its output lands on d: no copy
            left -= value[(i, d)]
        inputs: dict[int, int] = {}
        for p, b in inst.pred[i]:
            if (p, d) in waiting:
                inputs[p] = max(inputs.get(p, 0), b)
        for p, b in inputs.items():
            key = (p, d)
            left -= value[key] - self._value(key, i if held else -1, b)
        return left

    def commit(self, i: int, d: int) -> None:
        """Update what is held once op `i` is placed on `d` (after the tracker placed it)."""
        inst = self.inst
        h = self.held[i]
        keys = [(i, e) for e in self.devices_of.get(i, ())]
        for p, _ in inst.pred[i]:
            keys.append((p, d))
            if h >= 0:
                keys.append((p, h))
                self.waiting.get((p, h), {}).pop(i, None)
        g = inst.group_of[i]
        if g >= 0 and self.group_held[g]:  # binds its group: `Placer` reserves the rest
            self.total[self.group_on[g]] -= self.group_held[g]
            self.group_held[g] = 0
        elif self.po_held[i]:
            self.total[h] -= inst.po[i]
            self.po_held[i] = False
        for key in keys:
            if key in self.waiting:
                new = self._value(key)
                self.total[key[1]] += new - self.value[key]
                self.value[key] = new

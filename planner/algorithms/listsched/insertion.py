"""The insertion driver behind HEFT and CPOP: ops in priority order, each on the device of
earliest finish, inserted into the earliest idle gap that holds it (`insertion_schedule`).

Parts: the per-device idle gaps (`_device_gaps`: a slot query and a commit), the device
choice with CPOP's preferred device and the budget's spill (`_device_choice`), and the
priority loop; floating colocation members plug in through `floating.insertion_policy`.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Callable, Sequence

from .floating import insertion_policy
from .instance import Instance
from .placer import Placer, Stuck

__all__ = ["GAPS_SCANNED", "insertion_schedule"]

Slot = Callable[[int, int], tuple[float, int]]
Occupy = Callable[[int, int, float, int], None]

#: gaps of a channel a crossing may go into, from its ready time (then after the last)
GAPS_SCANNED = 4


def insertion_schedule(
    inst: Instance,
    placer: Placer,
    prank: Sequence[int],
    preferred: Callable[[int], int] | None = None,
) -> tuple[list[int], list[float]]:
    """Ops in priority order (smaller `prank` first among ready ops); each goes to the device
    where it finishes earliest, inserted into the earliest idle gap that holds it.

    Devices where the op does not fit in memory are skipped; ties by smaller device index.
    `preferred(i)` may name a device to use whenever the op may go there and fits (CPOP's
    critical-path device), or -1. Floating members of unbound colocation groups wait, as in
    `etf.etf_schedule`, and are inserted on their group's device, before the member that binds
    it. Raises `Stuck` when no device takes an op.
    Each device keeps its idle gaps (sorted, found from the op's data-ready time by
    bisection) and the time it is last free. Time: O(V log V + E·D) plus the gap search,
    O(V·D·g) with g the gaps scanned per query (few in practice; O(V) at worst).
    """
    n = inst.n
    pred, succ, group_of = inst.pred, inst.succ, inst.group_of
    start = [0.0] * n
    end = [0.0] * n
    inputs_done = [0.0] * n
    slot, occupy = _device_gaps(inst, placer, start, end, inputs_done)
    choose = _device_choice(inst, placer, slot, preferred)
    wait, land = insertion_policy(inst, placer, end, inputs_done, slot, occupy)
    floating = inst.floating
    missing = [len(inputs) for inputs in pred]
    heap = [(prank[i], i) for i in range(n) if missing[i] == 0]
    heapq.heapify(heap)
    while heap:
        _, i = heapq.heappop(heap)
        if not (floating[i] and wait(i)):  # a floating op waits until its group binds
            d, t, k = choose(i)
            group = group_of[i]
            if group >= 0 and land(group, d):  # i binds its group: its members went first
                t, k = slot(i, d)
            occupy(i, d, t, k)
        for j, _ in succ[i]:
            missing[j] -= 1
            if missing[j] == 0:
                heapq.heappush(heap, (prank[j], j))
    return list(placer.device_of), start


def _device_gaps(inst: Instance, placer: Placer, start: list[float], end: list[float],
                 inputs_done: list[float]) -> tuple[Slot, Occupy]:
    """Per device, its idle gaps before its last op (sorted, disjoint) and when it is last
    free: (`slot(i, d)`, op `i`'s earliest start on `d` and the gap it goes in, -1 after
    the last op; `occupy(i, d, t, k)`, commit op `i` on `d` from `t` in gap `k`). Data
    arrives as `_Transfers` reckons it."""
    m = inst.m
    comp = inst.compute
    transfers = _Transfers(inst, placer, end, inputs_done)
    gap_s: list[list[float]] = [[] for _ in range(m)]
    gap_e: list[list[float]] = [[] for _ in range(m)]
    tail = [0.0] * m

    def slot(i: int, d: int) -> tuple[float, int]:
        ready = transfers.ready(i, d)
        dur = comp[i][d]
        starts, ends = gap_s[d], gap_e[d]
        k = bisect_right(ends, ready)
        n_gaps = len(starts)
        while k < n_gaps:
            t = max(ready, starts[k])
            if t + dur <= ends[k]:
                return t, k
            k += 1
        return max(ready, tail[d]), -1

    def occupy(i: int, d: int, t: float, k: int) -> None:
        finish = t + comp[i][d]
        transfers.ready(i, d, commit=True)
        placer.commit(i, d)
        starts, ends = gap_s[d], gap_e[d]
        if k < 0:  # after the last op, maybe leaving a gap
            if t > tail[d]:
                starts.append(tail[d])
                ends.append(t)
            tail[d] = finish
        else:  # split gap k around [t, finish]
            gap_start, gap_end = starts[k], ends[k]
            parts = [(a, z) for a, z in ((gap_start, t), (finish, gap_end)) if z > a]
            starts[k:k + 1] = [a for a, _ in parts]
            ends[k:k + 1] = [z for _, z in parts]
        start[i] = t
        end[i] = finish

    return slot, occupy


class _Transfers:
    """When op `i`'s inputs reach device `d`, under the plan's contention model.

    Under `none`, each input crosses as soon as its producer ends (`latency + bytes /
    bandwidth`), as in Topcuoglu et al. Under `link` (each directed link) and `device`
    (both endpoints' channels), a crossing also needs its channels free: it takes the
    earliest idle gap of its channels from its producer's end that holds it (the inputs of
    one op in order of their producers' ends; ops are placed out of time order, so a
    channel's gaps are kept as a device's are), and a tensor already sent to `d` for an
    earlier consumer is not sent again, as the simulator does. Without channels, HEFT put
    both towers of a two-tower model behind one link: 21.3 ms for a 16.0 ms optimum.
    """

    def __init__(self, inst: Instance, placer: Placer, end: list[float],
                 inputs_done: list[float]) -> None:
        self.inst, self.end, self.inputs_done = inst, end, inputs_done
        self.dev_of = placer.device_of
        self.contention = inst.problem.contention
        #: per channel (a directed link (a, b), or a device), its busy intervals
        self.busy: dict[object, _Intervals] = {}
        #: per (producer, device), when its tensor's copy arrives there
        self.copies: dict[tuple[int, int], float] = {}
        #: per (sender, receiver), the channels a crossing between them needs
        self.pairs: dict[tuple[int, int], tuple[_Intervals, ...]] = {}

    def _channels(self, sender: int, receiver: int) -> tuple[_Intervals, ...]:
        found = self.pairs.get((sender, receiver))
        if found is None:
            keys: tuple[object, ...] = (((sender, receiver),) if self.contention == "link"
                                        else (sender, receiver))
            found = self.pairs[sender, receiver] = tuple(
                self.busy.setdefault(k, _Intervals()) for k in keys)
        return found

    # complex: an input's arrival per case (floating, local, no contention, copy sent, crossing),
    # then the crossings' search for free channels, one loop shared by the query and the commit
    def ready(self, i: int, d: int, commit: bool = False) -> float:
        """When op `i`'s last input reaches device `d`; with `commit`, reserve the
        channels and record the copies."""
        inst, end, dev_of = self.inst, self.end, self.dev_of
        lat, inv = inst.lat, inst.inv
        ready = 0.0
        crossing: list[tuple[float, int, int]] = []  # (producer's end, producer, bytes)
        for p, nbytes in inst.pred[i]:
            src = dev_of[p]
            if src < 0:  # a floating member of i's group: local wherever the group goes
                there = self.inputs_done[p]
            elif src == d:
                there = end[p]
            elif self.contention == "none":
                there = end[p] + lat[src][d] + nbytes * inv[src][d]
            else:
                sent = self.copies.get((p, d))
                if sent is None:
                    crossing.append((end[p], p, nbytes))
                    continue
                there = sent
            ready = max(ready, there)
        if len(crossing) > 1:
            crossing.sort()
        # a query (no commit) keeps its own crossings aside, per channel: the later ones
        # of the same op queue behind them
        mine: dict[int, list[tuple[float, float]]] = {}
        for t, p, nbytes in crossing:
            src = dev_of[p]
            chans = self._channels(src, d)
            dur = lat[src][d] + nbytes * inv[src][d]
            begin = t
            while True:  # the earliest instant every channel is free for `dur`
                later = begin
                for c in chans:
                    ends = c.ends
                    if ends and later < ends[-1]:  # else past its last crossing: free
                        later = c.earliest(later, dur)
                    if mine:
                        for busy_from, busy_to in mine.get(id(c), ()):
                            if busy_from < later + dur and later < busy_to:
                                later = busy_to
                if later == begin:
                    break
                begin = later
            for c in chans:
                if commit:
                    c.add(begin, begin + dur)
                elif len(crossing) > 1:
                    mine.setdefault(id(c), []).append((begin, begin + dur))
            if commit:
                self.copies[p, d] = begin + dur
            ready = max(ready, begin + dur)
        return ready


class _Intervals:
    """Busy intervals of one channel, sorted and disjoint (touching ones merged): the
    earliest gap that holds a transfer, by bisection from its ready time, among the next
    `GAPS_SCANNED` gaps; past them, after the last interval (a bound on the scan: on a
    100,000-op graph a device's channel holds tens of thousands of small gaps)."""

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []

    def earliest(self, t: float, dur: float) -> float:
        """The earliest start >= `t` of `dur` seconds that overlaps no interval, in one of
        the next `GAPS_SCANNED` gaps, else after the last interval."""
        starts, ends = self.starts, self.ends
        k = bisect_right(ends, t)  # intervals ending at or before t are behind
        last = min(len(starts), k + GAPS_SCANNED)
        while k < last:
            if t + dur <= starts[k]:
                return t
            t = max(t, ends[k])
            k += 1
        return max(t, ends[-1]) if k < len(starts) else t

    def add(self, a: float, z: float) -> None:
        starts, ends = self.starts, self.ends
        k = bisect_right(starts, a)
        if k and ends[k - 1] == a:  # touches the one before: extend it
            ends[k - 1] = z
            if k < len(starts) and starts[k] == z:  # and the one after: merge
                ends[k - 1] = ends[k]
                del starts[k], ends[k]
        elif k < len(starts) and starts[k] == z:
            starts[k] = a
        else:
            starts.insert(k, a)
            ends.insert(k, z)


def _device_choice(inst: Instance, placer: Placer, slot: Slot,
                   preferred: Callable[[int], int] | None
                   ) -> Callable[[int], tuple[int, float, int]]:
    """`choose(i)`: op `i`'s device, start and gap: the earliest finish among the devices
    where it fits (of its whole colocation group, which goes where `i` goes:
    `Instance.unit_time`) (the preferred device first, if any); over its budget everywhere, it
    spills (`Placer.spill`) and is judged by the devices' memory. Raises `Stuck` when none
    fits."""
    unit_time, allowed, fits = inst.unit_time, placer.allowed, placer.fits

    def choose(i: int) -> tuple[int, float, int]:
        cands: list[tuple[float, int, float, int]] = []
        for d in allowed(i):
            t, k = slot(i, d)
            cands.append((t + unit_time[i][d], d, t, k))
        cands.sort()
        pref = preferred(i) if preferred is not None else -1
        if pref >= 0:
            cands.sort(key=lambda c: c[1] != pref)  # stable: the preferred device first
        for _, d, t, k in cands:
            if fits(i, d):
                return d, t, k
        if not placer.spill(i):
            raise Stuck(i)
        for _, d, t, k in cands:  # over its budget everywhere: may use the memory
            if fits(i, d):
                return d, t, k
        raise Stuck(i)

    return choose

"""The event-driven engine behind m-ETF and m-SCT (and the ordering of a given placement).

Three parts, each built once per run as a closure over the run's lists (`EtfRun`):

- the **ready set** (`ready_set`): an op whose inputs are done enters, per device it may
  use, one of two heaps: `arrived` (its inputs are there by the time the device is free)
  or `pending` (they arrive later);
- the **candidate choice** (`device_choice`): each device's best (ready op, start) pair,
  cached until the device commits, gets a new ready op, or loses the pair's op;
- the **commit loop** (`_commit_loop`): commit the best pair over all devices, and make the
  op's consumers ready.

Policies plug into these parts through hooks: the SCT reservation (`sct.reservation`,
with `favourite=`: when an op becomes ready, the choice on a reserved device, after a
commit), floating colocation members (`floating.etf_policy`: when an op's inputs are done,
when a group binds) and memory budgets (`Placer.budget`: a dropped pair spills, `_drop`; a
group that binds forgets its drops, `_bind`; the passes themselves are
`retry.memory_passes`'). With `fixed=` a placement made by another rule is ordered: no
policy and no memory check.

Why closures, not methods: the engine is the hot path of m-ETF, m-SCT, m-TOPO and the
baselines; a closure reads the run's lists as cell variables, cheaper in CPython than an
object's attributes, and calls no bound methods. Split so, the engine runs as fast as the
single function it replaced (Baechi's GNMT: within the machine's noise, about 2%).

The compiled twin: a first pass (no `fixed`, a placer without budget or given placement)
runs on `_engine_kernel`, numba's copy of this engine (the same placements and start
times to the bit, the same dead ends; m-SCT's pass on Baechi's GNMT in 7 ms instead of
68), when it is loaded in the process or the graph is large enough that loading it pays
(`ENGINE`, `KERNEL_MIN_OPS`, `prepare`). This module stays the reference, and runs every
other case.

Twin: `planner.algorithms.listsched._engine_kernel` (see above); the hand-derived battery
(`tests/algorithms`, with the `list_engine` fixture) and
`tests/algorithms/test_engine_kernel.py` run over both.
"""

from __future__ import annotations

import heapq
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from ... import compiled
from ...cost import INF
from ...signals import shielded
from . import floating
from .instance import Instance
from .placer import Placer, Stuck
from .run import EtfRun, Pair
from .sct import reservation

__all__ = ["ENGINE", "KERNEL_MIN_OPS", "device_choice", "etf_schedule", "prepare", "ready_set"]

#: which engine runs the cases the compiled one covers (`_kernel_case`): "auto" (compiled
#: when loaded already, or when loading it pays, `KERNEL_MIN_OPS`, and numba's cache holds
#: it: a command never compiles it, `planner.compiled`), "kernel" (compiled, compiling it
#: if need be) or "reference" (Python); the environment variable
#: PLANNER_ETF_ENGINE sets it at import, tests set it directly
ENGINE = os.environ.get("PLANNER_ETF_ENGINE", "auto")
#: the size from which a process that has not loaded the compiled engine loads it for an
#: m-ETF run. Loading takes 0.45-0.55 s in a process without numba (0.2-0.25 s with numba
#: imported, 0.03-0.04 s once numba has run, e.g. `fastsim`), when the Python engine takes
#: 25-33 us per op for m-ETF and 45-60 us for m-SCT (8 devices; generated graphs of 2k to
#: 20k ops; GNMT on 4: 18 and 27) and the compiled one 2.5-5.5 us, the arrays included:
#: the break-even is ~18k ops for m-ETF, half that for m-SCT and half again with numba
#: imported (`_min_ops`)
KERNEL_MIN_OPS = 18_000
_kernel: Any = None  # `_engine_kernel.schedule` once prepared


def etf_schedule(
    inst: Instance,
    placer: Placer | None,
    prank: Sequence[int],
    *,
    fixed: Sequence[int] | None = None,
    favourite: Sequence[int] | None = None,
) -> tuple[list[int], list[float]]:
    """Earliest Task First: repeatedly commit the (ready op, device) pair that starts first.

    A pair's start is `max(device free, inputs arrived)`; pairs are compared by start plus
    the op's *slowdown* on that device (its time there minus its time on its fastest allowed
    device; for a member of a colocation group, the whole group's: the group goes where its
    first member goes, `Instance.unit_time`). Ties: smaller `prank` (higher priority), then
    earlier finish, then smaller device index. Why the slowdown: ETF (and Baechi's m-ETF and
    m-SCT) were defined for identical devices, where it is 0 and this is exactly their
    earliest-start rule. On devices of different speeds, earliest start alone commits an op
    to whichever device is idle, however slow: the README's `tiny.plan` put every op on a
    CPU 20x slower than the GPUs (33.0 ms against 2.887 ms). For one op, start + slowdown
    orders its devices by finish time (earliest finish, as HEFT); across ops it is the start
    the op would have on its fastest device, so an op is never preferred for being slow.
    With `fixed` the device is given and the slowdown is not used. A pair whose op does not
    fit in memory (checked only when the pair is chosen) is dropped for good: static memory
    only grows, so it never fits later. With `fixed`, each op's device is given (no memory
    check): this orders a placement made by another algorithm (dynamic dispatch).

    Floating members of unbound colocation groups wait and run on their group's device when
    it binds (`floating`); their compute time is not in the binding member's start
    estimate (it starts after them). With a budget (`Placer.budget`), a pair over the budget
    is dropped like one that does not fit, until the limit changes: when a group binds to
    `d`, its members' drops on `d` are forgotten (forced, they may use the whole memory);
    an op over its budget on every device it may use spills (may use the whole memory) and
    is made ready again.

    With `favourite` (m-SCT), a device that has just run op `i` is reserved for `i`'s
    favourite child (`sct.reservation`).

    Returns (device per op, start time per op). Raises `Stuck` when a ready op has no device
    left. Time: each ready op enters one arrival heap per allowed device, so O((V·D + E·D)
    log V) for V ops, E edges, D devices, plus O(D) work per committed op (O(D²) with
    reservations).
    """
    if placer is None:
        placer = Placer(inst)
    if fixed is None and _kernel_case(inst, placer, prank, favourite):
        # a stop waits for the call: one during its return was an E999 (`signals`)
        return shielded(_kernel, inst, placer, prank, favourite)  # type: ignore[no-any-return]
    run = EtfRun(inst, placer, prank, fixed)
    if favourite is not None:
        sct = reservation(run, favourite)
        make_ready = ready_set(run, sct.on_ready)
        candidate, on_commit = device_choice(run, sct.reserve), sct.on_commit
    else:
        make_ready, candidate, on_commit = ready_set(run, None), device_choice(run, None), None
    settle, land = floating.etf_policy(run, make_ready)
    for i in [i for i in inst.topo if not inst.pred[i]]:
        settle(i)
    _commit_loop(run, candidate, make_ready, settle, land, on_commit)
    return list(placer.device_of), run.start


def prepare() -> float:
    """Import numba and load the compiled engine (`_engine_kernel`) from numba's cache, or
    compile it (about 18 s, once per machine: `python -m planner.algorithms.listsched`
    does it ahead); return the seconds, 0.0 when it is loaded already. For processes that
    plan repeatedly (benchmarks, `compare`, `auto`): from then on every run of the cases it
    covers uses it, whatever the graph's size."""
    global _kernel
    if _kernel is not None:
        return 0.0
    t0 = time.perf_counter()
    from . import _engine_kernel  # lazy: numba (heavy to import): only when it pays

    _engine_kernel.warm_up()
    _kernel = _engine_kernel.schedule
    return time.perf_counter() - t0


def _kernel_case(inst: Instance, placer: Placer, prank: Sequence[int],
                 favourite: Sequence[int] | None) -> bool:
    """Whether `etf_schedule` (without `fixed`) runs on the compiled engine: a fresh placer
    without budget or given placement (the cases the kernel twins), int64-sized byte sums,
    arguments the kernel can index without checks (the Python engine raises IndexError on
    the others), and the kernel loaded, or worth loading (`ENGINE`, `KERNEL_MIN_OPS`);
    loads it then."""
    # the kernel keeps no budget, given placement or held room (`reserve_pins`: a room
    # empty at the start can fill as producers are placed, so its presence decides)
    if ENGINE == "reference" or placer.budget is not None or placer.placement is not None \
            or placer.room is not None:
        return False
    if _kernel is None:
        if ENGINE != "kernel" and inst.n < _min_ops(favourite is not None):
            return False
        if not compiled.numba_available():
            return False
    n = inst.n
    if placer.inst is not inst or inst.m == 0 or placer.device_of.count(-1) != n \
            or len(prank) != n or (favourite is not None and (
                len(favourite) != n or max(favourite, default=-1) >= n)) \
            or inst.engine_arrays() is None:
        return False
    if ENGINE == "kernel":
        prepare()  # asked for by name: compile it if need be
        return True
    # in one piece: a Ctrl-C inside numba's loading left llvmlite objects half-built
    return shielded(_load_cached)


def _load_cached() -> bool:
    """Load the compiled engine if numba's cache holds it; never compile on a command's
    clock: otherwise the background build starts (`planner.compiled`) and this says
    False."""
    return compiled.load_kernel("planner.algorithms.listsched._engine_kernel",
                                "schedule_arrays", prepare, "the ETF engine")


def _min_ops(sct: bool) -> int:
    """The graph size from which loading the compiled engine pays (`KERNEL_MIN_OPS`)."""
    n = KERNEL_MIN_OPS // 2 if sct else KERNEL_MIN_OPS
    return n // 2 if "numba" in sys.modules else n


def ready_set(run: EtfRun, on_ready: Callable[[int, tuple[int, ...], list[float]], None] | None
              ) -> Callable[[int], None]:
    """`make_ready(i)`: op `i`'s inputs are done: record when they arrive on each device it
    may use (`run.arrivals[i]`) and enter it in that device's `arrived` or `pending` heap.

    Inputs from floating members (not yet placed, in `i`'s group) are local wherever the
    group goes: they are done at `run.inputs_done`. `on_ready(i, devices, arrivals)` is a policy's
    hook (the SCT reservation's).
    """
    inst, placer, fixed, priority = run.inst, run.placer, run.fixed, run.priority
    floating = run.floating
    unit_time, unit_best = run.unit_time, run.unit_best
    m = inst.m
    lat, inv, pred, group_of = inst.lat, inst.inv, inst.pred, inst.group_of
    dev_of = placer.device_of
    end, avail, inputs_done, arrivals = run.end, run.avail, run.inputs_done, run.arrivals
    arrived, pending, dirty = run.arrived, run.pending, run.dirty
    heappush = heapq.heappush

    def make_ready(i: int) -> None:
        devices = (fixed[i],) if fixed is not None else placer.allowed(i)
        arrival = [INF] * m
        inputs = [(end[p], dev_of[p], nbytes) for p, nbytes in pred[i]]
        base = 0.0
        if floating is not None and group_of[i] >= 0:
            # floating inputs are in i's group, so local wherever it goes
            base = max((inputs_done[p] for p, _ in pred[i] if dev_of[p] < 0), default=0.0)
            inputs = [x for x in inputs if x[1] >= 0]
        rank = priority[i]
        for d in devices:
            t = base
            for there, src, nbytes in inputs:
                if src != d:
                    there += lat[src][d] + nbytes * inv[src][d]
                if there > t:  # noqa: PLR1730 (hot loop: a call to max() costs more)
                    t = there
            arrival[d] = t
            slow = 0.0 if fixed is not None else unit_time[i][d] - unit_best[i]
            if t <= avail[d]:
                heappush(arrived[d], (slow, rank, i))
            else:
                heappush(pending[d], (t + slow, rank, i, t))
            dirty[d] = True
        arrivals[i] = arrival
        if on_ready is not None:
            on_ready(i, devices, arrival)

    return make_ready


def device_choice(run: EtfRun, reserve: Callable[[int, Pair | None], Pair | None] | None
                  ) -> Callable[[int], Pair | None]:
    """`candidate(d)`: device `d`'s best pair (`Pair`), or None.

    Ops of `pending` whose inputs are there by the time `d` is free move to `arrived`;
    invalid ops leave both heaps' tops. The best arrived op starts when `d` is free; a
    pending op of smaller (arrival + slowdown, priority) beats it (it is faster on `d`).
    While a policy holds `d` for an op (`run.reserved[d] >= 0`), its hook
    `reserve(d, pair)` makes the choice (`sct`).
    """
    comp = run.inst.compute
    avail, arrived, pending, valid = run.avail, run.arrived, run.pending, run.valid
    reserved = run.reserved
    heappush, heappop = heapq.heappush, heapq.heappop

    def candidate(d: int) -> Pair | None:
        free_at = avail[d]
        waiting = pending[d]
        here = arrived[d]
        while waiting and waiting[0][3] <= free_at:
            key, rank, i, t = heappop(waiting)
            heappush(here, (key - t, rank, i))
        while here and not valid(here[0][2], d):
            heappop(here)
        while waiting and not valid(waiting[0][2], d):
            heappop(waiting)
        i = -1
        if here:
            slow, rank, i = here[0]
            key, begin = free_at + slow, free_at
        if waiting and (i < 0 or (waiting[0][0], waiting[0][1]) < (key, rank)):
            key, rank, i, begin = waiting[0]  # a faster device's op beats the arrived ones
        pair = None if i < 0 else (key, rank, begin + comp[i][d], d, i, begin)
        if reserved[d] >= 0 and reserve is not None:
            return reserve(d, pair)
        return pair

    return candidate


# complex: refresh the cached pairs, pick, drop, bind, commit, release the consumers: the steps
# the numba twin `_engine_kernel._commit_loop` takes step for step, so the two read alike
def _commit_loop(
    run: EtfRun,
    candidate: Callable[[int], Pair | None],
    make_ready: Callable[[int], None],
    settle: Callable[[int], None],
    land: Callable[[int, int], None],
    on_commit: Callable[[int, int], None] | None,
) -> None:
    """Commit the best pair over all devices until every op is placed (`etf_schedule`).

    A pair whose op does not fit is dropped (`_drop`); an op that binds its colocation group
    lands the group's floating members first (`_bind`); after a commit the op's consumers
    whose inputs are all done are settled (floating members) or made ready.
    """
    inst, placer = run.inst, run.placer
    n, m, comp, succ, group_of = inst.n, inst.m, inst.compute, inst.succ, inst.group_of
    group_dev = placer.group_dev
    start, end, avail, missing, best_pair, dirty = (run.start, run.end, run.avail, run.missing,
                                                    run.best_pair, run.dirty)
    floating, valid = run.floating, run.valid
    check = run.fixed is None  # a given placement is not checked: its maker chose it
    placed = 0
    while placed < n:
        best: Pair | None = None
        for d in range(m):
            pair = best_pair[d]
            # a cached pair stays best for its device until the device commits, gets a new
            # ready op, or the pair's op is taken, forbidden or bound elsewhere (an inactive
            # reservation is re-checked after every commit, see `sct`)
            if dirty[d] or (pair is not None and not valid(pair[4], d)):
                pair = best_pair[d] = candidate(d)
                dirty[d] = False
            if pair is not None and (best is None or pair < best):
                best = pair
        if best is None:
            raise _stuck(run)
        _, _, finish, d, i, begin = best
        if check and not placer.fits(i, d):
            _drop(run, i, d, make_ready)
            continue
        group = group_of[i]
        if group >= 0 and group_dev[group] < 0:  # i binds its group to d
            landed = _bind(run, group, d, land)
            if landed:  # its floating members ran first
                placed += landed
                if avail[d] > begin:
                    begin, finish = avail[d], avail[d] + comp[i][d]
        placer.commit(i, d)
        start[i] = begin
        end[i] = finish
        avail[d] = finish
        dirty[d] = True
        placed += 1
        if on_commit is not None:
            on_commit(i, d)
        for j, _ in succ[i]:
            missing[j] -= 1
            if missing[j] == 0:
                if floating is not None and floating[j]:
                    settle(j)
                else:
                    make_ready(j)


def _bind(run: EtfRun, g: int, d: int, land: Callable[[int, int], None]) -> int:
    """An op is about to bind group `g` to device `d`: land the group's floating members
    there (`floating.etf_policy`) and return how many; under a budget, forget the members'
    drops on `d` (forced there now, they are judged by the device's memory)."""
    landed = len(run.waiting[g])
    if landed:
        land(g, d)
    if run.placer.budget is not None:
        forb = run.unfit_mask
        for j in run.inst.groups[g]:
            forb[j] &= ~(1 << d)
    return landed


def _drop(run: EtfRun, i: int, d: int, make_ready: Callable[[int], None]) -> None:
    """Op `i` does not fit on device `d`: drop the pair for good (static memory only grows).
    Over its budget on every device it may use, it spills (`Placer.spill`: it may use the
    whole memory, as m-TOPO spills) and is made ready again."""
    forb, placer = run.unfit_mask, run.placer
    forb[i] |= 1 << d
    if placer.budget is not None and all((forb[i] >> e) & 1 for e in placer.allowed(i)) \
            and placer.spill(i):
        forb[i] = 0
        make_ready(i)


def _stuck(run: EtfRun) -> Stuck:
    """The dead end when no device has a pair left: a ready op, else any unplaced op."""
    dev_of, arr_of = run.placer.device_of, run.arrivals
    for i in range(run.inst.n):
        if dev_of[i] < 0 and arr_of[i] is not None:
            return Stuck(i)
    return Stuck(next(i for i in range(run.inst.n) if dev_of[i] < 0))  # pragma: no cover

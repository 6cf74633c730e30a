"""The SCT reservation: m-SCT's policy in the ETF engine (`etf.etf_schedule(favourite=)`).

After device `d` runs op `i`, `d` is reserved for `i`'s favourite child `f` (from the LP
relaxation, `msct.favourite_children`) while `f` is unplaced, all of `f`'s inputs are
placed, and `d` is among the devices where `f` can start earliest. A reserved device runs
only `f` or an *urgent* op, one whose inputs have arrived on every device it may run on:
waiting can no longer save it any communication. (Baechi also waits for every device to be
free; that needs a re-check of each ready op whenever a device gets busier, 3x slower on
GNMT, and made no consistent difference to the plans.) Urgent ops go first at equal times.

Twin: `planner.algorithms.listsched._engine_kernel` repeats the reservation inside its
commit loop; the hand-derived battery (`tests/algorithms`, with the `list_engine` fixture)
and `tests/algorithms/test_engine_kernel.py` run over both.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from ...cost import INF
from .run import EtfRun, Pair, Reservation

__all__ = ["reservation"]


def reservation(run: EtfRun, favourite: Sequence[int]) -> Reservation:
    """The SCT reservation of one engine run (module docstring); `favourite[i]` is op `i`'s
    favourite child or -1.

    Per device: `run.reserved` (the favourite it waits for, or -1), `res_active` (whether
    the reservation held at its last candidate choice; read only while it is reserved) and
    `urgent_h`, its ready ops by when their inputs have arrived everywhere (then priority).
    O(D) per ready op and per commit.
    """
    m = run.inst.m
    comp, prank, unit_time, best = run.inst.compute, run.priority, run.unit_time, run.unit_best
    dev_of = run.placer.device_of
    avail, arr_of, dirty, valid = run.avail, run.arrivals, run.dirty, run.valid
    reserved = run.reserved
    res_active = [False] * m
    urgent_h: list[list[tuple[float, int, int]]] = [[] for _ in range(m)]
    heappush, heappop = heapq.heappush, heapq.heappop

    def on_ready(i: int, devices: tuple[int, ...], a: list[float]) -> None:
        urgent = 0.0  # when its inputs have arrived on every device it may use
        for d in devices:
            if a[d] > urgent:  # noqa: PLR1730 (hot loop: a call to max() costs more)
                urgent = a[d]
        pr = prank[i]
        for d in devices:
            heappush(urgent_h[d], (urgent, pr, i))
        for d in range(m):
            if reserved[d] == i:  # its reservation may become active
                dirty[d] = True

    def reserve(d: int, c: Pair | None) -> Pair | None:
        """Device `d`'s pair while it is reserved for `f`: `f` or an urgent op while the
        reservation holds, else `c`."""
        f = reserved[d]
        res_active[d] = False
        af = arr_of[f]
        if dev_of[f] >= 0 or (af is not None and (af[d] == INF or not valid(f, d))):
            reserved[d] = -1  # f is placed, or can never come here: void for good
            return c
        if af is None:
            return c
        # f is ready: is d among its earliest devices?
        av = avail[d]
        est_f = max(av, af[d])
        key_f = est_f + unit_time[f][d] - best[f]
        if not all(key_f <= max(avail[e], af[e]) + unit_time[f][e] - best[f]
                   for e in range(m) if e != d and af[e] < INF and valid(f, e)):
            return c
        res_active[d] = True
        uh = urgent_h[d]
        while uh and not valid(uh[0][2], d):
            heappop(uh)
        u = uh[0][2] if uh else -1
        if u >= 0 and max(av, uh[0][0]) + unit_time[u][d] - best[u] <= key_f:
            est = max(av, uh[0][0])
            return (est + unit_time[u][d] - best[u], uh[0][1], est + comp[u][d], d, u, est)
        return (key_f, prank[f], est_f + comp[f][d], d, f, est_f)

    def on_commit(i: int, d: int) -> None:
        f = favourite[i]
        reserved[d] = f if f >= 0 and dev_of[f] < 0 else -1
        # another device got busier: a ready favourite may now start earliest on a
        # device that waits for it (active reservations only stay active)
        for dd in range(m):
            ff = reserved[dd]
            if ff >= 0 and not res_active[dd] and arr_of[ff] is not None:
                dirty[dd] = True

    return Reservation(on_ready, reserve, on_commit)

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
    comp, priority = run.inst.compute, run.priority
    unit_time, unit_best = run.unit_time, run.unit_best
    dev_of = run.placer.device_of
    avail, arrivals, dirty, valid = run.avail, run.arrivals, run.dirty, run.valid
    reserved = run.reserved
    res_active = [False] * m
    urgent_h: list[list[tuple[float, int, int]]] = [[] for _ in range(m)]
    heappush, heappop = heapq.heappush, heapq.heappop

    def on_ready(i: int, devices: tuple[int, ...], arrival: list[float]) -> None:
        urgent = 0.0  # when its inputs have arrived on every device it may use
        for d in devices:
            if arrival[d] > urgent:  # noqa: PLR1730 (hot loop: a call to max() costs more)
                urgent = arrival[d]
        rank = priority[i]
        for d in devices:
            heappush(urgent_h[d], (urgent, rank, i))
        for d in range(m):
            if reserved[d] == i:  # its reservation may become active
                dirty[d] = True

    def reserve(d: int, pair: Pair | None) -> Pair | None:
        """Device `d`'s pair while it is reserved for `fav`: `fav` or an urgent op while
        the reservation holds, else `pair`."""
        fav = reserved[d]
        res_active[d] = False
        fav_arrival = arrivals[fav]
        if dev_of[fav] >= 0 or (fav_arrival is not None and (
                fav_arrival[d] == INF or not valid(fav, d))):
            reserved[d] = -1  # fav is placed, or can never come here: void for good
            return pair
        if fav_arrival is None:
            return pair
        # fav is ready: is d among its earliest devices?
        free_at = avail[d]
        fav_start = max(free_at, fav_arrival[d])
        fav_key = fav_start + unit_time[fav][d] - unit_best[fav]
        if not all(fav_key <= max(avail[e], fav_arrival[e]) + unit_time[fav][e] - unit_best[fav]
                   for e in range(m) if e != d and fav_arrival[e] < INF and valid(fav, e)):
            return pair
        res_active[d] = True
        urgent = urgent_h[d]
        while urgent and not valid(urgent[0][2], d):
            heappop(urgent)
        u = urgent[0][2] if urgent else -1
        if u >= 0 and max(free_at, urgent[0][0]) + unit_time[u][d] - unit_best[u] <= fav_key:
            begin = max(free_at, urgent[0][0])
            return (begin + unit_time[u][d] - unit_best[u], urgent[0][1], begin + comp[u][d],
                    d, u, begin)
        return (fav_key, priority[fav], fav_start + comp[fav][d], d, fav, fav_start)

    def on_commit(i: int, d: int) -> None:
        fav = favourite[i]
        reserved[d] = fav if fav >= 0 and dev_of[fav] < 0 else -1
        # another device got busier: a ready favourite may now start earliest on a
        # device that waits for it (active reservations only stay active)
        for other in range(m):
            waits_for = reserved[other]
            if waits_for >= 0 and not res_active[other] and arrivals[waits_for] is not None:
                dirty[other] = True

    return Reservation(on_ready, reserve, on_commit)
